//! What the fuzz targets share: a driver that runs the kernel's operations and lock lives
//! against a lock table, answering each command truthfully (the reference table's reply) or
//! with a reply the fuzzer makes up, and checks what every host relies on:
//!
//! - nothing panics;
//! - every error has a message, and none is [`ErrorKind::Internal`] (the kernel's word for its
//!   own bugs);
//! - every operation ends: no wait forever with nothing outstanding, and a result within a
//!   bounded number of polls;
//! - a conditional write expects exactly a value the kernel read or wrote, byte for byte: a
//!   value decoded and encoded again would never match a cell that a person, or a later version
//!   of baton, wrote differently (an unknown field, another spacing), and the lock would be
//!   stuck for good.
//!
//! The lock table of a target can be given as text ([`parse_table`]), one cell a line, so
//! that a seed corpus is a readable list of real cell values.
//!
//! No unsafe code, as in the kernel and the statements: the long runs of the targets that use
//! only these crates go without AddressSanitizer (`scripts/fuzz`, `plain_target`).
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::time::Duration;

use baton_kernel::{
    AfterObject, Cell, Command, Consistency, Error, ErrorKind, Failure, ForceRelease, Inspect,
    Instant, LifeEvent, LifePoll, ListLocks, LockLife, LockName, LockOptions, MemoryTable, Mode,
    ObjectGuard, ObjectOp, ObjectRequest, Operation, OwnerId, Poll, Purge, Reply, Strategy, Turn,
    Wait, Write, MAX_OBJECT_BYTES,
};
use libfuzzer_sys::arbitrary::Unstructured;

/// The lock every scenario takes (flat names) or the root of its paths.
pub const NAME: &str = "job";
/// The path a scenario with paths takes.
pub const PATH: &str = "job.x";

/// The most polls one operation or one step of a life may take before the driver calls it a
/// hang. A lock waits at most a second of simulated time here, a few hundred polls at most.
const MAX_POLLS: usize = 20_000;

/// The owner the scenarios act as.
pub fn me() -> OwnerId {
    OwnerId::new("fuzz-me", 7, 0x00f0_0d00).expect("a valid owner id")
}

/// One cell of a table given as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextCell {
    /// The row (the lock's name).
    pub row: String,
    /// The column.
    pub column: String,
    /// The value, as a store holds it.
    pub value: String,
    /// Its time to live, in milliseconds, if any.
    pub ttl_ms: Option<u64>,
}

/// Reads a lock table written as text: one cell a line, `row<TAB>column<TAB>value`, with an
/// optional fourth field, the cell's TTL in milliseconds. Lines starting with `#`, and lines
/// with fewer than three fields, are skipped. Invalid UTF-8 is replaced (U+FFFD), as a driver
/// that reads text columns lossily would.
pub fn parse_table(data: &[u8]) -> Vec<TextCell> {
    let text = String::from_utf8_lossy(data);
    text.split('\n')
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.splitn(4, '\t');
            let (row, column, value) = (fields.next()?, fields.next()?, fields.next()?);
            Some(TextCell {
                row: row.to_owned(),
                column: column.to_owned(),
                value: value.to_owned(),
                ttl_ms: fields.next().and_then(|t| t.trim().parse().ok()),
            })
        })
        .take(64)
        .collect()
}

/// A reference table holding `cells`, written at instant `now`.
pub fn table_of(cells: &[TextCell], now: Instant) -> MemoryTable {
    let mut table = MemoryTable::new();
    for cell in cells {
        let _ = table.apply(
            &Command::Put {
                row: cell.row.clone(),
                column: cell.column.clone(),
                value: cell.value.clone(),
                ttl: cell.ttl_ms.map(Duration::from_millis),
                consistency: Consistency::Quorum,
            },
            now,
        );
    }
    table
}

/// Checks an error a host would show: a message, and not a kernel bug.
pub fn check_error(e: &Error) {
    assert!(!e.message().is_empty(), "an error without a message: {e:?}");
    assert_ne!(
        e.kind(),
        ErrorKind::Internal,
        "the kernel reports a bug of its own: {e}"
    );
}

/// Runs operations and lives against a table, answering from it or from the fuzzer's bytes.
pub struct Driver<'a> {
    /// The store.
    pub table: MemoryTable,
    /// The clock of the client and of the store (one clock: no drift here).
    pub now: Instant,
    /// Where made-up replies come from; `None`: every reply is the table's.
    tamper: Option<Unstructured<'a>>,
    /// Every value the kernel read or wrote, so far.
    seen: BTreeSet<String>,
}

impl<'a> Driver<'a> {
    /// A driver over `table` at `now`, answering truthfully, or from `tamper` when given.
    pub fn new(table: MemoryTable, now: Instant, tamper: Option<Unstructured<'a>>) -> Self {
        Driver {
            table,
            now,
            tamper,
            seen: BTreeSet::new(),
        }
    }

    /// Executes `command` and returns the reply the kernel is given.
    pub fn exchange(&mut self, command: &Command) -> Reply {
        self.check_expectations(command);
        self.note_writes(command);
        let reply = match self.tamper.as_mut() {
            None => self.table.apply(command, self.now),
            Some(u) => {
                // Made up or not; applied to the table or not (a timeout after the write).
                let made_up = u.ratio(1, 3).unwrap_or(false);
                if !made_up {
                    self.table.apply(command, self.now)
                } else {
                    if u.arbitrary().unwrap_or(false) {
                        let _ = self.table.apply(command, self.now);
                    }
                    made_up_reply(u)
                }
            }
        };
        self.note_reply(&reply);
        reply
    }

    /// Lets simulated time pass by `ms` milliseconds.
    pub fn pass(&mut self, ms: u64) {
        self.now = self.now.saturating_add(Duration::from_millis(ms));
    }

    /// A number from the fuzzer's bytes, or `default` on a truthful driver.
    pub fn choose(&mut self, range: std::ops::RangeInclusive<u64>, default: u64) -> u64 {
        match self.tamper.as_mut() {
            Some(u) => u.int_in_range(range).unwrap_or(default),
            None => default,
        }
    }

    fn check_expectations(&self, command: &Command) {
        let expected: Vec<&str> = match command {
            Command::CompareAndSet { expected, .. } => vec![expected],
            Command::Claim {
                counter_expected: Some(expected),
                ..
            } => vec![expected],
            Command::GuardedSet {
                expected,
                guard_value,
                ..
            } => vec![expected, guard_value],
            Command::SetObject {
                guard:
                    ObjectGuard::Held {
                        value,
                        counter_value,
                        ..
                    },
                ..
            } => vec![value, counter_value],
            _ => vec![],
        };
        for value in expected {
            assert!(
                self.seen.contains(value),
                "a conditional write expects {value:?}, which it never read nor wrote: {command:?}\nseen: {:?}",
                self.seen
            );
        }
    }

    fn note_writes(&mut self, command: &Command) {
        let written: Vec<&String> = match command {
            Command::Put { value, .. } | Command::InsertIfAbsent { value, .. } => vec![value],
            Command::CompareAndSet { new: Some(new), .. }
            | Command::GuardedSet { new: Some(new), .. } => vec![new],
            Command::Claim {
                value,
                counter_next,
                ..
            } => vec![value, counter_next],
            Command::SetObject { value, .. } => vec![value],
            Command::Batch { writes, .. } => writes
                .iter()
                .filter_map(|w| match w {
                    Write::Put { value, .. } => Some(value),
                    Write::Delete { .. } => None,
                })
                .collect(),
            _ => vec![],
        };
        for value in written {
            self.seen.insert(value.clone());
        }
    }

    fn note_reply(&mut self, reply: &Reply) {
        let mut note = |v: &Option<String>| {
            if let Some(v) = v {
                self.seen.insert(v.clone());
            }
        };
        match reply {
            Reply::Cells(cells) => {
                for c in cells {
                    self.seen.insert(c.value.clone());
                }
            }
            Reply::Rows(rows) => {
                for (_, cells) in rows {
                    for c in cells {
                        self.seen.insert(c.value.clone());
                    }
                }
            }
            Reply::Conditional { current, .. } => note(current),
            Reply::Guarded { current, guard, .. } => {
                note(current);
                note(guard);
            }
            Reply::Object {
                current,
                lock,
                counter,
                ..
            } => {
                note(current);
                note(lock);
                note(counter);
            }
            _ => {}
        }
    }

    /// Drives `op` to its result, checking on the way that it never waits forever with
    /// nothing outstanding and ends within a bounded number of polls.
    pub fn run<O: Operation>(&mut self, mut op: O) -> Result<O::Output, Error> {
        for _ in 0..MAX_POLLS {
            match op.poll(self.now) {
                Poll::Execute(id, command) => {
                    let reply = self.exchange(&command);
                    let jitter = self.choose(0..=50, 0);
                    self.pass(jitter);
                    op.handle(id, reply);
                }
                Poll::WaitUntil(until) => {
                    assert_ne!(
                        until,
                        Instant::MAX,
                        "an operation waits forever with nothing outstanding"
                    );
                    self.now = until.max(self.now.saturating_add(Duration::from_micros(1)));
                }
                Poll::Ready(result) => {
                    if let Err(e) = &result {
                        check_error(e);
                    }
                    return result;
                }
            }
        }
        panic!("an operation did not end in {MAX_POLLS} polls");
    }

    /// Drives `life` until `until` says an event ends this step, the life is done, or it waits
    /// for its holder. Returns the events given.
    pub fn drive(
        &mut self,
        life: &mut LockLife,
        until: impl Fn(&LifeEvent) -> bool,
    ) -> Vec<LifeEvent> {
        let mut events = Vec::new();
        for _ in 0..MAX_POLLS {
            match life.poll(self.now) {
                LifePoll::Execute(id, command) => {
                    let reply = self.exchange(&command);
                    let jitter = self.choose(0..=50, 0);
                    self.pass(jitter);
                    life.handle(id, reply);
                }
                LifePoll::Event(event) => {
                    check_event(&event);
                    let end = until(&event);
                    events.push(event);
                    if end {
                        return events;
                    }
                }
                LifePoll::WaitUntil(until) => {
                    if until == Instant::MAX {
                        // Idle until its holder asks for something.
                        return events;
                    }
                    self.now = until.max(self.now.saturating_add(Duration::from_micros(1)));
                }
                LifePoll::Done => return events,
            }
        }
        panic!("a lock's life did not settle in {MAX_POLLS} polls");
    }
}

fn check_event(event: &LifeEvent) {
    match event {
        LifeEvent::Failed(e)
        | LifeEvent::GaveUp(e)
        | LifeEvent::RenewalFailed(e)
        | LifeEvent::Lost(e)
        | LifeEvent::Released(Err(e))
        | LifeEvent::Object(Err(e)) => check_error(e),
        LifeEvent::ReleaseElsewhere { lost: Some(e), .. } => check_error(e),
        _ => {}
    }
}

/// A string the fuzzer makes: mostly shaped like the values a lock table holds (records,
/// counters, tickets, object cells, owner ids), with numbers and owners of its choosing, so
/// that decoding goes past the first field; sometimes any text at all.
pub fn made_up_value(u: &mut Unstructured<'_>) -> String {
    let owners = [
        "fuzz-me:7:0000000000f00d00",
        "web-1:4242:00000000deadbeef",
        "#3@db:1:0000000000000001",
        "forced-release",
    ];
    let owner = *u.choose(&owners).unwrap_or(&owners[0]);
    let n: u64 = match u.int_in_range(0..=3).unwrap_or(0) {
        0 => u.int_in_range(0..=20).unwrap_or(0),
        1 => u64::MAX - u.int_in_range(0..=2).unwrap_or(0),
        _ => u.arbitrary().unwrap_or(0),
    };
    let extra: &str = u.arbitrary().unwrap_or("");
    match u.int_in_range(0..=7).unwrap_or(0) {
        0 => format!("token={n} owner={owner}{extra}"),
        1 => format!("owner={owner} ttl_ms={n} cell_ttl_ms={n} created_ms={n} acq={n:x}{extra}"),
        2 => format!("ticket={n} created_ms={n}{extra}"),
        3 => format!("entering created_ms={n}{extra}"),
        4 => format!("{n:020};{n:x}.1;{extra}"),
        5 => format!("{n:020}~{n:x}.1;-"),
        6 => format!("token={n} owner={owner} forced={n} x={n} fb={owner}{extra}"),
        _ => extra.to_owned(),
    }
}

fn made_up_cells(u: &mut Unstructured<'_>) -> Vec<Cell> {
    let columns = [
        "lock",
        "_LOCK_",
        "_OBJECT_",
        "ticket/fuzz-me:7:0000000000f00d00",
        "_LOCK_fuzz-me:7:0000000000f00d00",
        "ticket/web-1:4242:00000000deadbeef",
        "_LOCK_web-1:4242:00000000deadbeef",
        "_LOCK_x.y|web-1:4242:00000000deadbeef",
        "data",
    ];
    let count = u.int_in_range(0..=4).unwrap_or(0);
    (0..count)
        .map(|_| Cell {
            column: if u.ratio(1, 8).unwrap_or(false) {
                u.arbitrary::<String>().unwrap_or_default()
            } else {
                (*u.choose(&columns).unwrap_or(&"lock")).to_owned()
            },
            value: made_up_value(u),
            ttl_remaining: u
                .arbitrary::<Option<u32>>()
                .unwrap_or(None)
                .map(|ms| Duration::from_millis(u64::from(ms))),
            stamp: u.arbitrary().unwrap_or(0),
        })
        .collect()
}

fn maybe_value(u: &mut Unstructured<'_>) -> Option<String> {
    if u.arbitrary().unwrap_or(false) {
        Some(made_up_value(u))
    } else {
        None
    }
}

/// Any reply at all, whatever the command was: a store that answers nonsense must get an error
/// from the kernel, never a panic.
pub fn made_up_reply(u: &mut Unstructured<'_>) -> Reply {
    let message: String = u.arbitrary().unwrap_or_default();
    match u.int_in_range(0..=11).unwrap_or(0) {
        0 => Reply::Failed(Failure::Unavailable(message)),
        1 => Reply::Failed(Failure::Timeout(message)),
        2 => Reply::Failed(Failure::Rejected(message)),
        3 => Reply::Failed(Failure::NotApplied(message)),
        4 | 5 => Reply::Cells(made_up_cells(u)),
        6 => Reply::Written,
        7 => Reply::Conditional {
            applied: u.arbitrary().unwrap_or(false),
            current: maybe_value(u),
        },
        8 => Reply::Guarded {
            applied: u.arbitrary().unwrap_or(false),
            current: maybe_value(u),
            guard: maybe_value(u),
        },
        9 => Reply::Object {
            applied: u.arbitrary().unwrap_or(false),
            current: maybe_value(u),
            lock: maybe_value(u),
            counter: maybe_value(u),
        },
        10 => Reply::Purged(vec![(NAME.to_owned(), message)]),
        _ => {
            let cells = made_up_cells(u);
            Reply::Rows(vec![(NAME.to_owned(), cells)])
        }
    }
}

/// How a scenario locks.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The strategy.
    pub strategy: Strategy,
    /// The mode asked for.
    pub mode: Mode,
    /// Names are paths.
    pub paths: bool,
    /// The lease renews itself.
    pub keep_alive: bool,
    /// The acquisition waits (up to a second) rather than trying once.
    pub wait: bool,
}

impl Setup {
    /// The options of this setup, valid ones.
    pub fn options(&self) -> LockOptions {
        let mut o = LockOptions {
            strategy: self.strategy,
            ttl: Duration::from_secs(10),
            wait: if self.wait {
                Wait::Timeout(Duration::from_secs(1))
            } else {
                Wait::TryOnce
            },
            mode: self.mode,
            paths: self.paths,
            created_unix_ms: 1_763_700_000_000,
            seed: 42,
            acquisition: 0x5f0e_1d2c_3b4a_6979,
            // A waiting unique insert reserves turns (its retries look, and may write the
            // `_NEXT_` cell), as on Cassandra.
            turns: Some(self.strategy == Strategy::UniqueInsert && self.wait),
            ..LockOptions::default()
        };
        if o.strategy == Strategy::UniqueInsert {
            o.mode = Mode::Exclusive;
            o.paths = false;
        }
        o
    }

    /// The name this setup locks.
    pub fn name(&self) -> LockName {
        let text = if self.paths && self.strategy != Strategy::UniqueInsert {
            PATH
        } else {
            NAME
        };
        LockName::new(text).expect("a valid name")
    }
}

/// Every operation a host runs on one lock, in turn, against `driver`'s table: an inspection,
/// a listing, the lock's whole life (acquired, renewed, its object read and written, released),
/// an object read and write from outside the lock, a purge and a forced release.
pub fn scenario(driver: &mut Driver<'_>, setup: Setup) {
    let opts = setup.options();
    let name = setup.name();
    let _ = driver.run(Inspect::new(name.clone(), &opts));
    let _ = driver.run(ListLocks::new(&opts));
    life(driver, setup, &opts, &name);
    if !opts.paths {
        match ObjectOp::new(
            name.clone(),
            me(),
            opts.clone(),
            ObjectRequest::Get,
            MAX_OBJECT_BYTES,
        ) {
            Ok(op) => drop(driver.run(op)),
            Err(e) => check_error(&e),
        }
        let mut unlocked = opts.clone();
        unlocked.wait = Wait::TryOnce;
        unlocked.acquisition = 0x77;
        let update = ObjectRequest::Update {
            value: b"v2".to_vec(),
            version: None,
        };
        match ObjectOp::new(name.clone(), me(), unlocked, update, MAX_OBJECT_BYTES) {
            Ok(op) => drop(driver.run(op)),
            Err(e) => check_error(&e),
        }
    }
    let _ = driver.run(Purge::new(Some(name.clone()), &opts));
    let force = ForceRelease::new(name.clone(), &opts);
    let force = if driver.choose(0..=1, 0) == 1 {
        force.holder("web-1:4242:00000000deadbeef")
    } else {
        force
    };
    let _ = driver.run(force);
}

fn life(driver: &mut Driver<'_>, setup: Setup, opts: &LockOptions, name: &LockName) {
    let acquire = match baton_kernel::Acquire::new(name.clone(), me(), opts.clone()) {
        Ok(acquire) => acquire,
        Err(e) => return check_error(&e),
    };
    let mut life = LockLife::new(acquire, setup.keep_alive);
    let events = driver.drive(&mut life, LifeEvent::ends_acquisition);
    if !matches!(events.last(), Some(LifeEvent::Granted(_))) {
        driver.drive(&mut life, |_| false);
        return;
    }
    let step_ends = |e: &LifeEvent| {
        matches!(
            e,
            LifeEvent::Renewed(_)
                | LifeEvent::RenewalFailed(_)
                | LifeEvent::Lost(_)
                | LifeEvent::Object(_)
                | LifeEvent::Released(_)
        )
    };
    if life.renew_now().is_ok() {
        driver.drive(&mut life, step_ends);
    }
    let exclusive = opts.mode == Mode::Exclusive && !opts.paths;
    if exclusive && life.object(ObjectRequest::Get, AfterObject::Keep).is_ok() {
        driver.drive(&mut life, step_ends);
    }
    let pause = driver.choose(0..=20_000, 0);
    driver.pass(pause);
    if exclusive
        && life
            .object(
                ObjectRequest::Update {
                    value: b"v1".to_vec(),
                    version: None,
                },
                AfterObject::Renew,
            )
            .is_ok()
    {
        driver.drive(&mut life, step_ends);
    }
    if life.release(Vec::new()).is_ok() {
        driver.drive(&mut life, |_| false);
    } else {
        life.cancel();
        driver.drive(&mut life, |_| false);
    }
}

/// A name (row or column) the fuzzer picks: mostly the ones baton uses, sometimes any text
/// (long ones included: the SQL table holds at most 255 bytes).
pub fn made_up_key(u: &mut Unstructured<'_>) -> String {
    let keys = [
        NAME,
        "lock",
        "_LOCK_",
        "_OBJECT_",
        "ticket/web-1:4242:00000000deadbeef",
        "_LOCK_web-1:4242:00000000deadbeef",
        "data",
    ];
    if u.ratio(1, 4).unwrap_or(false) {
        u.arbitrary::<String>().unwrap_or_default()
    } else {
        (*u.choose(&keys).unwrap_or(&NAME)).to_owned()
    }
}

fn made_up_ttl(u: &mut Unstructured<'_>) -> Option<Duration> {
    match u.int_in_range(0..=3).unwrap_or(0) {
        0 => None,
        1 => Some(Duration::from_millis(
            u.int_in_range(0..=100_000).unwrap_or(0),
        )),
        2 => Some(Duration::MAX),
        _ => Some(Duration::new(
            u.arbitrary().unwrap_or(0),
            u.int_in_range(0..=999_999_999).unwrap_or(0),
        )),
    }
}

/// Any storage command, with names, values, TTLs and stamps of the fuzzer's choosing.
pub fn made_up_command(u: &mut Unstructured<'_>) -> Command {
    use baton_kernel::{ColumnFilter, ReadConsistency, SerialConsistency};
    let row = made_up_key(u);
    let column = made_up_key(u);
    let consistency = *u
        .choose(&[
            Consistency::One,
            Consistency::Quorum,
            Consistency::LocalQuorum,
            Consistency::EachQuorum,
            Consistency::All,
        ])
        .unwrap_or(&Consistency::Quorum);
    let serial = if u.arbitrary().unwrap_or(false) {
        SerialConsistency::LocalSerial
    } else {
        SerialConsistency::Serial
    };
    let filter = match u.int_in_range(0..=2).unwrap_or(0) {
        0 => ColumnFilter::All,
        1 => ColumnFilter::Prefix(made_up_key(u)),
        _ => ColumnFilter::Exact(made_up_key(u)),
    };
    let value = made_up_value(u);
    let ttl = made_up_ttl(u);
    match u.int_in_range(0..=12).unwrap_or(0) {
        0 => Command::Read {
            row,
            filter,
            consistency: if u.arbitrary().unwrap_or(false) {
                ReadConsistency::Serial(serial)
            } else {
                ReadConsistency::Plain(consistency)
            },
        },
        1 => Command::Put {
            row,
            column,
            value,
            ttl,
            consistency,
        },
        2 => Command::Delete {
            row,
            column,
            consistency,
        },
        3 => Command::Vacate {
            row,
            column,
            read: filter,
            consistency,
        },
        4 => Command::DeleteVersion {
            row,
            column,
            stamp: u.arbitrary().unwrap_or(0),
            consistency,
        },
        5 => Command::InsertIfAbsent {
            row,
            column,
            value,
            ttl,
            serial,
            consistency,
        },
        6 => Command::CompareAndSet {
            row,
            column,
            expected: made_up_value(u),
            new: maybe_value(u),
            ttl,
            serial,
            consistency,
        },
        7 => Command::Claim {
            row,
            column,
            value,
            ttl,
            counter: made_up_key(u),
            counter_expected: maybe_value(u),
            counter_next: made_up_value(u),
            turn: match u.int_in_range(0..=2).unwrap_or(0) {
                0 => None,
                1 => Some(Turn::Free),
                _ => Some(Turn::Ours(made_up_value(u))),
            },
            serial,
            consistency,
        },
        8 => Command::GuardedSet {
            row,
            column,
            expected: made_up_value(u),
            new: maybe_value(u),
            ttl,
            guard: made_up_key(u),
            guard_value: made_up_value(u),
            serial,
            consistency,
        },
        9 => {
            let count = u.int_in_range(0..=4).unwrap_or(0);
            let writes = (0..count)
                .map(|_| {
                    if u.arbitrary().unwrap_or(false) {
                        Write::Put {
                            column: made_up_key(u),
                            value: made_up_value(u),
                            ttl: made_up_ttl(u),
                        }
                    } else {
                        Write::Delete {
                            column: made_up_key(u),
                        }
                    }
                })
                .collect();
            Command::Batch {
                row,
                writes,
                consistency,
                after: u.arbitrary().unwrap_or(0),
            }
        }
        10 => Command::SetObject {
            row,
            column,
            expected: maybe_value(u),
            value,
            guard: if u.arbitrary().unwrap_or(false) {
                ObjectGuard::Held {
                    column: made_up_key(u),
                    value: made_up_value(u),
                    counter: made_up_key(u),
                    counter_value: made_up_value(u),
                }
            } else {
                ObjectGuard::Free {
                    column: made_up_key(u),
                }
            },
            serial,
            consistency,
        },
        11 => Command::Purge {
            row: if u.arbitrary().unwrap_or(false) {
                Some(row)
            } else {
                None
            },
        },
        _ => Command::Scan {
            after: if u.arbitrary().unwrap_or(false) {
                Some(row)
            } else {
                None
            },
            limit: u.arbitrary().unwrap_or(0),
            consistency,
        },
    }
}

/// Checks a reply a statement layer gives the kernel: a failure has a message.
pub fn check_reply(reply: &Reply) {
    if let Reply::Failed(f) = reply {
        assert!(
            !f.message().is_empty(),
            "a failure without a message: {f:?}"
        );
    }
}
