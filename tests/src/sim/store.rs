//! Simulated stores: one copy with the server's clock deciding expiry (SQL's model), and three
//! replicas written and read at QUORUM with client-side timestamps and per-replica clocks
//! (Cassandra's model).
//!
//! Both apply plain writes by their stamps (see `Command::stamped`), as the real stores do: a
//! write that arrives late never undoes a newer write of the same owner. The stamp comes with
//! the command, set by the simulated client when it sent it (its own wall clock, skewed), or,
//! under the deliberately broken `ArrivalOrderStamps`, by the store when the command arrives.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_kernel::{
    Cell, ColumnFilter, Command, Failure, Instant, MemoryTable, ObjectGuard, ReadConsistency,
    Reply, SplitMix64, Write, OBJECT_COLUMN,
};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// What the network and the store do to one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fate {
    /// Applied, answered.
    Normal,
    /// Applied, but the reply is lost: the client sees a timeout.
    LostReply,
    /// Never reaches the store (or, replicated, reaches fewer replicas than a quorum):
    /// the client sees a timeout.
    Dropped,
    /// Refused before doing anything: the client sees "unavailable".
    Unavailable,
    /// Held up (a pooler's queue, a socket buffer, a coordinator's queue): the client sees a
    /// timeout, and the store applies the command later, up to one TTL after that timeout,
    /// typically after the client's read-back.
    Late,
    /// Applied and answered, and applied once more later (a retransmission).
    Duplicated,
    /// Replicated store, conditional commands: the Paxos proposal is accepted by one replica
    /// only; the client sees a timeout or `Unavailable`; the next Paxos round on the partition
    /// either completes it or supersedes it.
    Minority,
}

/// A change of an object cell ([`OBJECT_COLUMN`]) in a store's history, for the object
/// checker ([`super::objects`]): every object write the store applied, and every object cell a
/// server crash took back.
#[derive(Clone, Debug)]
pub struct ObjectChange {
    /// The row.
    pub row: String,
    /// Simulated time (ns) of the conditional step that decided the write: when the store
    /// checked its guard (for a Paxos proposal accepted by a minority and completed by a later
    /// round, the step that accepted it, its linearization point).
    pub decided: u64,
    /// Simulated time (ns) the cell changed.
    pub at: u64,
    /// The object cell before (`None`: no cell).
    pub before: Option<String>,
    /// The object cell after.
    pub after: Option<String>,
    /// The row's live cells as the deciding step saw them (lock cells, the fencing counter):
    /// what the checker judges the writer's lock by. Empty for a crash.
    pub cells: Vec<(String, String)>,
    /// Whether a write made it (`false`: a server crash took the cell back or replayed it).
    pub write: bool,
}

/// A simulated store. `at` is the simulated time (ns) the command reaches the store, `stamp`
/// its write stamp; the result is the reply and the simulated time it is ready to leave.
pub trait SimStore {
    /// The object cell changes since the last call, oldest first.
    fn take_object_changes(&mut self) -> Vec<ObjectChange>;

    /// Executes `command` with `fate`.
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        stamp: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64);

    /// The next stamp when the store stamps writes itself (arrival order).
    fn arrival_stamp(&mut self) -> u64;

    /// How many times the store's clock stepped.
    fn clock_steps(&self) -> u64 {
        0
    }

    /// Claims applied in two steps that left the counter (see [`split_claim`]).
    fn split_claims(&self) -> u64 {
        0
    }

    /// Server crashes, and the commits they lost (see [`flushes`]).
    fn server_crashes(&self) -> (u64, u64) {
        (0, 0)
    }
}

fn timeout() -> Reply {
    Reply::Failed(Failure::Timeout("simulated timeout".into()))
}

fn unavailable() -> Reply {
    Reply::Failed(Failure::Unavailable("simulated outage".into()))
}

/// A store clock that steps: the store's reading is simulated time plus an offset that jumps
/// now and then (NTP stepping a database server's wall clock).
#[derive(Clone, Debug, Default)]
pub struct SteppingClock {
    offset: i64,
    /// Largest step, ns, either way.
    pub max_step: u64,
    /// Steps so far.
    pub steps: u64,
}

impl SteppingClock {
    /// A clock that steps by up to `max_step` ns either way.
    pub fn new(max_step: u64) -> Self {
        SteppingClock {
            max_step,
            ..SteppingClock::default()
        }
    }

    /// The store's time at simulated time `t` (after maybe stepping, with probability `p`).
    pub fn read(&mut self, t: u64, p: f64, rng: &mut SplitMix64) -> u64 {
        if self.max_step > 0 && chance(rng, p) {
            let step = rng.below(2 * self.max_step + 1) as i64 - self.max_step as i64;
            self.offset += step;
            // Keep the total within the same bound: a clock kept in sync steps back again.
            let bound = self.max_step as i64;
            self.offset = self.offset.clamp(-bound, bound);
            self.steps += 1;
        }
        shift(t, self.offset)
    }
}

fn shift(t: u64, offset: i64) -> u64 {
    u64::try_from(i128::from(t) + i128::from(offset)).unwrap_or(0)
}

fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    p > 0.0 && (rng.next_u64() as f64 / u64::MAX as f64) < p
}

/// One copy (SQL's model): the kernel's reference table, applied at the store's own clock.
#[derive(Default)]
pub struct SingleCopy {
    table: MemoryTable,
    /// The server's clock.
    pub clock: SteppingClock,
    /// Probability of a clock step per command.
    pub step_chance: f64,
    /// Probability that a claim is applied in two steps, the lock cell and then the counter
    /// (see [`split_claim`]), rather than both or neither.
    pub split_chance: f64,
    /// Claims applied in two steps that inserted the lock cell and left the counter.
    pub split_claims: u64,
    /// Probability, per command, that the server crashed and came back just before it,
    /// losing every commit since the last one that waited for the disk (see [`flushes`]).
    pub crash_chance: f64,
    /// The broken `UnflushedGrants`: no commit waits for the disk, not even a grant's.
    pub unflushed_grants: bool,
    /// Server crashes so far.
    pub crashes: u64,
    /// Commits lost in them.
    pub lost_commits: u64,
    /// The table as the last commit that waited for the disk left it, and the commits since,
    /// which have not: what a crash goes back to, and what it may keep a first part of.
    unflushed: Option<(MemoryTable, Vec<Commit>)>,
    arrivals: u64,
    /// Simulated time of the command being executed.
    at: u64,
    /// Rows that have had an object write, watched across crashes.
    object_rows: Vec<String>,
    /// Object cell changes not yet taken.
    changes: Vec<ObjectChange>,
}

impl SingleCopy {
    /// A store whose clock steps by up to `max_step` ns either way, with probability
    /// `step_chance` per command.
    pub fn new(max_step: u64, step_chance: f64) -> Self {
        SingleCopy {
            clock: SteppingClock::new(max_step),
            step_chance,
            split_chance: 0.25,
            ..SingleCopy::default()
        }
    }
}

/// A commit that did not wait for the disk, as applied: replayed as it was when a crash keeps it.
struct Commit {
    command: Command,
    now: Instant,
    stamp: u64,
    split: bool,
}

impl SingleCopy {
    /// Applies `command`, as one commit: with server crashes on, first maybe crashes, and
    /// afterwards remembers whether the commit reached the disk.
    fn apply(
        &mut self,
        command: &Command,
        now: Instant,
        stamp: u64,
        rng: &mut SplitMix64,
    ) -> Reply {
        let split = matches!(command, Command::Claim { .. }) && chance(rng, self.split_chance);
        if self.crash_chance <= 0.0 {
            return self.commit_watched(command, now, stamp, split);
        }
        if chance(rng, self.crash_chance) {
            self.crash(now, rng);
        }
        // Whether a claim's lock cell holds its value already (an earlier copy of the claim
        // inserted it): this one then inserts nothing.
        let had = match command {
            Command::Claim {
                row, column, value, ..
            } => self
                .table
                .read(row, &ColumnFilter::Exact(column.clone()), now)
                .iter()
                .any(|c| &c.value == value),
            _ => false,
        };
        let before = self.unflushed.is_none().then(|| self.table.clone());
        let reply = self.commit_watched(command, now, stamp, split);
        match flushes(command, &reply, had) {
            // Nothing to lose.
            None => {}
            Some(true) if !self.unflushed_grants => self.unflushed = None,
            Some(_) => {
                let commit = Commit {
                    command: command.clone(),
                    now,
                    stamp,
                    split,
                };
                match (&mut self.unflushed, before) {
                    (Some((_, tail)), _) => tail.push(commit),
                    (None, Some(table)) => self.unflushed = Some((table, vec![commit])),
                    (None, None) => {}
                }
            }
        }
        reply
    }

    /// The server crashes and comes back: the commits that had not reached the disk are lost,
    /// all but a first part of them that the WAL writer had flushed in the meantime (as many as
    /// the seed draws, from none to all).
    fn crash(&mut self, now: Instant, rng: &mut SplitMix64) {
        self.crashes += 1;
        let Some((table, tail)) = self.unflushed.take() else {
            return;
        };
        let objects_before: Vec<Option<String>> = self
            .object_rows
            .iter()
            .map(|row| object_cell(&self.table, row, now))
            .collect();
        let kept = rng.below(tail.len() as u64 + 1) as usize;
        self.lost_commits += (tail.len() - kept) as u64;
        self.table = table;
        // Replayed, not new: the split claims among them were counted when first applied.
        let split_claims = self.split_claims;
        for c in &tail[..kept] {
            let _ = self.commit(&c.command, c.now, c.stamp, c.split);
        }
        self.split_claims = split_claims;
        // An object write that had not reached the disk (only under the broken
        // `UnflushedGrants`: object writes wait for it) is taken back.
        for (row, before) in self.object_rows.iter().zip(objects_before) {
            let after = object_cell(&self.table, row, now);
            if after != before {
                self.changes.push(ObjectChange {
                    row: row.clone(),
                    decided: self.at,
                    at: self.at,
                    before,
                    after,
                    cells: Vec::new(),
                    write: false,
                });
            }
        }
    }

    /// [`SingleCopy::commit`], noting an object write that applied, with the row as its step
    /// saw it.
    fn commit_watched(
        &mut self,
        command: &Command,
        now: Instant,
        stamp: u64,
        split: bool,
    ) -> Reply {
        let Command::SetObject { row, .. } = command else {
            return self.commit(command, now, stamp, split);
        };
        let cells = self.table.read(row, &ColumnFilter::All, now);
        let before = cells
            .iter()
            .find(|c| c.column == OBJECT_COLUMN)
            .map(|c| c.value.clone());
        let reply = self.commit(command, now, stamp, split);
        if let Reply::Object {
            applied: true,
            current,
            ..
        } = &reply
        {
            if !self.object_rows.contains(row) {
                self.object_rows.push(row.clone());
            }
            self.changes.push(ObjectChange {
                row: row.clone(),
                decided: self.at,
                at: self.at,
                before,
                after: current.clone(),
                cells: cells.into_iter().map(|c| (c.column, c.value)).collect(),
                write: true,
            });
        }
        reply
    }

    fn commit(&mut self, command: &Command, now: Instant, stamp: u64, split: bool) -> Reply {
        if split {
            let reply = split_claim(&mut self.table, command, now, stamp);
            if matches!(&reply, Reply::Guarded { applied: false, current: Some(v), .. } if matches!(command, Command::Claim { value, .. } if value == v))
            {
                self.split_claims += 1;
            }
            return reply;
        }
        self.table.apply_stamped(command, now, stamp)
    }
}

/// Whether PostgreSQL's store, on its own connections, makes `command`'s commit wait for the
/// disk (`None`: a read, or a claim that inserted nothing: nothing a crash could lose). `had`:
/// the claim's lock cell held its value before (an earlier copy of it inserted it).
///
/// Releases (`Vacate`, a guarded or compare-and-delete, a batch of deletes), an acquisition's
/// removal of its own or a stale cell (`Delete`, `DeleteVersion`) and a claim that inserted
/// nothing do not wait: a crash can lose them, and it loses with them every later commit until
/// one that waits. Everything that writes a cell waits, and with it everything before it in
/// the log. (Some of these are flushed by the real store, a compare-and-delete or a batch of
/// several deletes: counted as unflushed here, they only lose more deletes.)
pub fn flushes(command: &Command, reply: &Reply, had: bool) -> Option<bool> {
    Some(match command {
        Command::Read { .. } | Command::Scan { .. } => return None,
        Command::Vacate { .. } | Command::Delete { .. } | Command::DeleteVersion { .. } => false,
        Command::CompareAndSet { new, .. } | Command::GuardedSet { new, .. } => new.is_some(),
        Command::Batch { writes, .. } => writes.iter().any(|w| !matches!(w, Write::Delete { .. })),
        // The lock cell was inserted when the reply shows it holds the claim's value; one that
        // inserted nothing has nothing to lose.
        Command::Claim { value, .. } => {
            if had || !matches!(reply, Reply::Guarded { current: Some(v), .. } if v == value) {
                return None;
            }
            true
        }
        // An object write waits for the disk when it wrote; a refused one wrote nothing.
        Command::SetObject { .. } => {
            if !matches!(reply, Reply::Object { applied: true, .. }) {
                return None;
            }
            true
        }
        // Put, InsertIfAbsent, Purge, and any command added later until it is placed here.
        _ => true,
    })
}

/// The weakest claim the kernel accepts from a store (`Command::Claim`'s partial outcome):
/// the lock cell's insert-if-absent, whatever the counter holds, then the counter's
/// compare-and-set only if the insert was applied; the reply says which parts were.
/// PostgreSQL's one statement is stronger (it checks the counter before inserting), so a
/// kernel safe against this is safe against it.
pub fn split_claim(table: &mut MemoryTable, command: &Command, now: Instant, stamp: u64) -> Reply {
    let Command::Claim {
        row,
        column,
        value,
        ttl,
        counter,
        counter_expected,
        counter_next,
        serial,
        consistency,
    } = command
    else {
        return table.apply_stamped(command, now, stamp);
    };
    let insert = Command::InsertIfAbsent {
        row: row.clone(),
        column: column.clone(),
        value: value.clone(),
        ttl: *ttl,
        serial: *serial,
        consistency: *consistency,
    };
    let inserted = matches!(
        table.apply_stamped(&insert, now, stamp),
        Reply::Conditional { applied: true, .. }
    );
    let bump = match counter_expected {
        None => Command::InsertIfAbsent {
            row: row.clone(),
            column: counter.clone(),
            value: counter_next.clone(),
            ttl: None,
            serial: *serial,
            consistency: *consistency,
        },
        Some(expected) => Command::CompareAndSet {
            row: row.clone(),
            column: counter.clone(),
            expected: expected.clone(),
            new: Some(counter_next.clone()),
            ttl: None,
            serial: *serial,
            consistency: *consistency,
        },
    };
    let bumped = inserted
        && matches!(
            table.apply_stamped(&bump, now, stamp),
            Reply::Conditional { applied: true, .. }
        );
    let value_of = |c: &str| {
        table
            .read(row, &ColumnFilter::Exact(c.to_string()), now)
            .into_iter()
            .next()
            .map(|cell| cell.value)
    };
    Reply::Guarded {
        applied: inserted && bumped,
        current: value_of(column),
        guard: value_of(counter),
    }
}

/// The object cell of `row` in `table` (object cells have no TTL).
fn object_cell(table: &MemoryTable, row: &str, now: Instant) -> Option<String> {
    table
        .read(row, &ColumnFilter::Exact(OBJECT_COLUMN.to_string()), now)
        .into_iter()
        .next()
        .map(|c| c.value)
}

impl SimStore for SingleCopy {
    fn take_object_changes(&mut self) -> Vec<ObjectChange> {
        std::mem::take(&mut self.changes)
    }

    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        stamp: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        let now = Instant::from_nanos(self.clock.read(at, self.step_chance, rng));
        self.at = at;
        match fate {
            Fate::Unavailable => (unavailable(), at),
            Fate::Dropped | Fate::Late => (timeout(), at),
            Fate::Normal | Fate::Duplicated | Fate::Minority => {
                (self.apply(command, now, stamp, rng), at)
            }
            Fate::LostReply => {
                let _ = self.apply(command, now, stamp, rng);
                (timeout(), at)
            }
        }
    }

    fn arrival_stamp(&mut self) -> u64 {
        self.arrivals += 1;
        self.arrivals
    }

    fn clock_steps(&self) -> u64 {
        self.clock.steps
    }

    fn split_claims(&self) -> u64 {
        self.split_claims
    }

    fn server_crashes(&self) -> (u64, u64) {
        (self.crashes, self.lost_commits)
    }
}

/// A cell version on one replica: last write wins by timestamp (a tombstone wins a tie), and
/// expiry is an absolute time on the writing coordinator's clock in whole seconds.
#[derive(Clone, Debug)]
struct Version {
    ts: u64,
    value: Option<String>,
    /// Expiry, ns of the coordinator's clock, already truncated to whole seconds.
    expires: Option<u64>,
}

impl Version {
    fn beats(&self, old: &Version) -> bool {
        self.ts > old.ts || (self.ts == old.ts && self.value.is_none())
    }
}

#[derive(Default)]
struct Replica {
    cells: BTreeMap<(String, String), Version>,
    /// Writes on their way to this replica: (apply time, key, version).
    pending: Vec<(u64, (String, String), Version)>,
}

impl Replica {
    /// The versions of `row`'s cells this replica has at `at`, without catching up (the
    /// writes due by then applied to a copy).
    fn view(&self, row: &str, at: u64) -> BTreeMap<String, Version> {
        let mut view: BTreeMap<String, Version> = BTreeMap::new();
        for ((rw, col), v) in self.cells.range((row.to_string(), String::new())..) {
            if rw != row {
                break;
            }
            view.insert(col.clone(), v.clone());
        }
        for (t, (rw, col), v) in &self.pending {
            if *t <= at && rw == row && view.get(col).is_none_or(|old| v.beats(old)) {
                view.insert(col.clone(), v.clone());
            }
        }
        view
    }

    fn catch_up(&mut self, now: u64) {
        let (due, later): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|(t, _, _)| *t <= now);
        self.pending = later;
        for (_, key, v) in due {
            if self.cells.get(&key).is_none_or(|old| v.beats(old)) {
                self.cells.insert(key, v);
            }
        }
    }
}

/// The TTL the Cassandra store sends for `ttl`, in whole seconds, and the expiry a node
/// computes from it: the coordinator's clock truncated to whole seconds, plus that many
/// seconds. Mirrors `baton_statements::cql::ttl_seconds`, which rounds up and
/// adds one second for the truncation.
pub fn cql_expiry(coordinator_now: u64, ttl: Duration) -> u64 {
    let ttl_ns = u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX);
    let seconds = ttl_ns.div_ceil(SEC) + 1;
    (coordinator_now / SEC) * SEC + seconds * SEC
}

/// `command` with its TTL replaced by what Cassandra keeps when a coordinator whose clock reads
/// `now` writes it (see [`cql_expiry`]).
fn whole_second_ttl(command: &Command, now: u64) -> Command {
    let mut command = command.clone();
    if let Command::InsertIfAbsent { ttl, .. }
    | Command::CompareAndSet { ttl, .. }
    | Command::Claim { ttl, .. }
    | Command::GuardedSet { ttl, .. } = &mut command
    {
        if let Some(t) = ttl {
            *t = Duration::from_nanos(cql_expiry(now, *t) - now);
        }
    }
    command
}

/// A Paxos proposal accepted by a minority, which the next round on its row completes or
/// supersedes.
enum Proposal {
    /// A conditional command, whose condition the completing round checks again.
    Command(Command),
    /// An object write whose conditions held when it was proposed: Cassandra commits the
    /// accepted mutation as it was decided (a later round checks nothing again), and the
    /// object cell cannot have moved since (every object write is a Paxos round on the row,
    /// which would have completed or superseded it first).
    Object {
        /// The write, with its conditions already met (the object cell exactly as found, a
        /// guard that holds).
        write: Command,
        /// The change it makes, as decided.
        change: ObjectChange,
    },
}

/// Three replicas of the plain cells, written and read at QUORUM, with client-side timestamps
/// and one replica lagging behind by up to `lag`. Each node has its own clock offset, and
/// expiry is decided in whole seconds on the coordinator's clock, as Cassandra does.
/// Conditional cells live in a linearizable Paxos register (a [`MemoryTable`]), as Cassandra's
/// lightweight transactions give; they are never written with plain commands. A proposal
/// accepted by a minority waits in `proposal` until the next Paxos operation on its row
/// completes or supersedes it.
pub struct Replicated {
    replicas: [Replica; 3],
    paxos: MemoryTable,
    /// A conditional command accepted by one replica only: (row, what it does, stamp).
    proposal: Option<(String, Proposal, u64)>,
    /// Object cell changes not yet taken.
    changes: Vec<ObjectChange>,
    lagging: usize,
    lag: u64,
    /// Each node's clock offset from simulated time, ns.
    offsets: [i64; 3],
    arrivals: u64,
    /// Minority proposals completed by a later round.
    pub completed: u64,
}

impl Replicated {
    /// A store whose replica `lagging` applies writes up to `lag` late, with node clock offsets
    /// drawn up to `max_offset` ns either way.
    pub fn new(lagging: usize, lag: Duration, max_offset: u64, rng: &mut SplitMix64) -> Self {
        let mut offsets = [0i64; 3];
        for o in &mut offsets {
            *o = rng.below(2 * max_offset + 1) as i64 - max_offset as i64;
        }
        Replicated {
            replicas: Default::default(),
            paxos: MemoryTable::new(),
            proposal: None,
            changes: Vec::new(),
            lagging: lagging % 3,
            lag: u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX),
            offsets,
            arrivals: 0,
            completed: 0,
        }
    }

    fn delay(&self, replica: usize, rng: &mut SplitMix64) -> u64 {
        if replica == self.lagging {
            rng.below(self.lag.max(1))
        } else {
            rng.below(2_000_000)
        }
    }

    fn node_now(&self, node: usize, at: u64) -> u64 {
        shift(at, self.offsets[node])
    }

    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        row: &str,
        writes: &[(String, Option<String>, Option<Duration>)],
        at: u64,
        ts: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        let coordinator = rng.below(3) as usize;
        let now = self.node_now(coordinator, at);
        // Which replicas get it: all, or (dropped) at most one, which is less than a quorum.
        let reach: Vec<usize> = match fate {
            Fate::Dropped => (0..3).filter(|_| rng.below(3) == 0).take(1).collect(),
            _ => (0..3).collect(),
        };
        let mut acks: Vec<u64> = Vec::new();
        for &r in &reach {
            let when = at + self.delay(r, rng);
            acks.push(when);
            for (column, value, ttl) in writes {
                let v = Version {
                    ts,
                    value: value.clone(),
                    expires: ttl.filter(|_| value.is_some()).map(|t| cql_expiry(now, t)),
                };
                self.replicas[r]
                    .pending
                    .push((when, (row.to_string(), column.clone()), v));
            }
        }
        acks.sort_unstable();
        match fate {
            Fate::Normal | Fate::Duplicated => (Reply::Written, acks[1]),
            Fate::LostReply => (timeout(), acks[1]),
            Fate::Dropped | Fate::Late | Fate::Minority => (timeout(), at),
            Fate::Unavailable => (unavailable(), at),
        }
    }

    fn read(
        &mut self,
        row: &str,
        filter: &ColumnFilter,
        at: u64,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        let coordinator = rng.below(3) as usize;
        let now = self.node_now(coordinator, at);
        let skip = usize::try_from(rng.below(3)).unwrap_or(0);
        let mut merged: BTreeMap<String, Version> = BTreeMap::new();
        let mut done = at;
        for r in (0..3).filter(|r| *r != skip) {
            let when = at + self.delay(r, rng) / 4;
            done = done.max(when);
            let replica = &mut self.replicas[r];
            replica.catch_up(when);
            for ((rw, col), v) in replica.cells.range((row.to_string(), String::new())..) {
                if rw != row {
                    break;
                }
                if filter.matches(col) && merged.get(col).is_none_or(|old| v.beats(old)) {
                    merged.insert(col.clone(), v.clone());
                }
            }
        }
        let mut cells: Vec<Cell> = merged
            .into_iter()
            .filter_map(|(column, v)| {
                let live = v.expires.is_none_or(|e| now < e);
                let value = v.value.filter(|_| live)?;
                Some(Cell {
                    column,
                    value,
                    // CQL's TTL() is the expiry in whole seconds minus the coordinator's
                    // clock in whole seconds.
                    ttl_remaining: v
                        .expires
                        .map(|e| Duration::from_secs((e / SEC).saturating_sub(now / SEC))),
                    stamp: v.ts,
                })
            })
            .collect();
        cells.extend(self.paxos.read(row, filter, Instant::from_nanos(now)));
        cells.sort_by(|a, b| a.column.cmp(&b.column));
        (Reply::Cells(cells), done)
    }

    /// Before a Paxos operation on `row`: a proposal accepted by a minority is completed (its
    /// acceptor is in this round's quorum) or superseded.
    fn settle_proposal(&mut self, row: Option<&str>, at: u64, rng: &mut SplitMix64) {
        let Some((prow, _, _)) = &self.proposal else {
            return;
        };
        if row.is_some_and(|r| r != prow) {
            return;
        }
        if let Some((_, proposal, stamp)) = self.proposal.take() {
            if rng.below(2) == 0 {
                let now = self.node_now(rng.below(3) as usize, at);
                match proposal {
                    Proposal::Command(command) => {
                        let command = whole_second_ttl(&command, now);
                        let _ = self
                            .paxos
                            .apply_stamped(&command, Instant::from_nanos(now), stamp);
                    }
                    Proposal::Object { write, mut change } => {
                        let _ = self
                            .paxos
                            .apply_stamped(&write, Instant::from_nanos(now), stamp);
                        change.at = at;
                        self.changes.push(change);
                    }
                }
                self.completed += 1;
            }
        }
    }

    /// The live cells of `row` as a quorum (every replica but `skip`) has them at `at`, merged
    /// by timestamp, with expiry judged by a coordinator whose clock reads `now`: what a Paxos
    /// round reads of the plain cells. Catches no replica up.
    fn plain_cells(&self, row: &str, skip: usize, at: u64, now: u64) -> Vec<Cell> {
        let mut merged: BTreeMap<String, Version> = BTreeMap::new();
        for (r, replica) in self.replicas.iter().enumerate() {
            if r == skip {
                continue;
            }
            for (col, v) in replica.view(row, at) {
                if merged.get(&col).is_none_or(|old| v.beats(old)) {
                    merged.insert(col, v);
                }
            }
        }
        merged
            .into_iter()
            .filter_map(|(column, v)| {
                let live = v.expires.is_none_or(|e| now < e);
                let value = v.value.filter(|_| live)?;
                Some(Cell {
                    column,
                    value,
                    ttl_remaining: v
                        .expires
                        .map(|e| Duration::from_secs((e / SEC).saturating_sub(now / SEC))),
                    stamp: v.ts,
                })
            })
            .collect()
    }

    /// An object write's conditional step ([`Command::SetObject`], Cassandra's conditional
    /// batch on the partition): the object cell and the counter from the Paxos state, the lock
    /// cell from it too when it is conditional (unique insert's), from a quorum of replicas
    /// when it is a plain cell (bakery's tickets, column prefix's entries). Returns the reply,
    /// and, when the conditions hold, the write to commit and the change it makes.
    fn object_step(
        &self,
        command: &Command,
        at: u64,
        now: u64,
        skip: usize,
    ) -> (Reply, Option<(Command, ObjectChange)>) {
        let Command::SetObject {
            row,
            column,
            expected,
            value,
            guard,
            serial,
            consistency,
        } = command
        else {
            return (timeout(), None);
        };
        let mut cells = self.plain_cells(row, skip, at, now);
        for c in self
            .paxos
            .read(row, &ColumnFilter::All, Instant::from_nanos(now))
        {
            cells.retain(|p| p.column != c.column);
            cells.push(c);
        }
        let value_of = |col: &str| {
            cells
                .iter()
                .find(|c| c.column == col)
                .map(|c| c.value.clone())
        };
        let current = value_of(column);
        let (lock, counter, holds) = match guard {
            ObjectGuard::Held {
                column: lock_column,
                value: lock_value,
                counter,
                counter_value,
            } => {
                let lock = value_of(lock_column);
                let found = value_of(counter);
                let holds = lock.as_deref() == Some(lock_value.as_str())
                    && found.as_deref() == Some(counter_value.as_str());
                (lock, found, holds)
            }
            ObjectGuard::Free {
                column: lock_column,
            } => {
                let lock = value_of(lock_column);
                let free = lock.is_none();
                (lock, None, free)
            }
        };
        let object_ok = match (expected, &current) {
            (None, None) => true,
            (Some(prefix), Some(v)) => v.starts_with(prefix.as_str()),
            _ => false,
        };
        if !(object_ok && holds) {
            let reply = Reply::Object {
                applied: false,
                current,
                lock,
                counter,
            };
            return (reply, None);
        }
        // The conditions are met: the write as Paxos commits it (the object cell exactly as
        // found; a guard on a column nothing writes, which always holds).
        let write = Command::SetObject {
            row: row.clone(),
            column: column.clone(),
            expected: current.clone(),
            value: value.clone(),
            guard: ObjectGuard::Free {
                column: String::from("\u{0}paxos-decided"),
            },
            serial: *serial,
            consistency: *consistency,
        };
        let change = ObjectChange {
            row: row.clone(),
            decided: at,
            at,
            before: current,
            after: Some(value.clone()),
            cells: cells.into_iter().map(|c| (c.column, c.value)).collect(),
            write: true,
        };
        let reply = Reply::Object {
            applied: true,
            current: Some(value.clone()),
            lock,
            counter,
        };
        (reply, Some((write, change)))
    }
}

impl SimStore for Replicated {
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        stamp: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        if fate == Fate::Unavailable {
            return (unavailable(), at);
        }
        match command {
            Command::Put {
                row,
                column,
                value,
                ttl,
                ..
            } => {
                let w = [(column.clone(), Some(value.clone()), *ttl)];
                self.write(row, &w, at, stamp, fate, rng)
            }
            Command::Delete { row, column, .. } => {
                self.write(row, &[(column.clone(), None, None)], at, stamp, fate, rng)
            }
            // Cassandra runs a release as a quorum read, then the delete: two requests, the
            // delete's fate deciding what the client hears.
            Command::Vacate {
                row, column, read, ..
            } => {
                let (cells, done) = self.read(row, read, at, rng);
                let (written, done) =
                    self.write(row, &[(column.clone(), None, None)], done, stamp, fate, rng);
                match written {
                    Reply::Written => (cells, done),
                    failed => (failed, done),
                }
            }
            Command::DeleteVersion {
                row,
                column,
                stamp: version,
                ..
            } => self.write(
                row,
                &[(column.clone(), None, None)],
                at,
                *version,
                fate,
                rng,
            ),
            Command::Batch {
                row, writes, after, ..
            } => {
                let stamp = stamp.max(after.saturating_add(1));
                let w: Vec<_> = writes
                    .iter()
                    .map(|w| match w {
                        Write::Put { column, value, ttl } => {
                            (column.clone(), Some(value.clone()), *ttl)
                        }
                        Write::Delete { column } => (column.clone(), None, None),
                    })
                    .collect();
                self.write(row, &w, at, stamp, fate, rng)
            }
            Command::Read {
                row,
                filter,
                consistency: ReadConsistency::Plain(_),
            } => {
                if matches!(fate, Fate::Dropped | Fate::Late) {
                    return (timeout(), at);
                }
                let (reply, done) = self.read(row, filter, at, rng);
                let reply = if fate == Fate::LostReply {
                    timeout()
                } else {
                    reply
                };
                (reply, done)
            }
            // An object write: a conditional batch on the partition (Paxos), whose guard may
            // read plain cells.
            Command::SetObject { row, .. } => {
                self.settle_proposal(Some(row), at, rng);
                if matches!(fate, Fate::Dropped | Fate::Late) {
                    return (timeout(), at);
                }
                let done = at + MS + rng.below(4 * MS);
                let now = self.node_now(rng.below(3) as usize, at);
                let skip = rng.below(3) as usize;
                let (reply, write) = self.object_step(command, at, now, skip);
                let Some((write, change)) = write else {
                    // Nothing to propose: the conditions did not hold.
                    let reply = if fate == Fate::LostReply {
                        timeout()
                    } else {
                        reply
                    };
                    return (reply, done);
                };
                if fate == Fate::Minority {
                    self.proposal = Some((row.clone(), Proposal::Object { write, change }, stamp));
                    let reply = if rng.below(2) == 0 {
                        timeout()
                    } else {
                        unavailable()
                    };
                    return (reply, done);
                }
                let _ = self
                    .paxos
                    .apply_stamped(&write, Instant::from_nanos(now), stamp);
                self.changes.push(change);
                let reply = if fate == Fate::LostReply {
                    timeout()
                } else {
                    reply
                };
                (reply, done)
            }
            // Serial reads, conditional commands and purges go through Paxos.
            _ => {
                self.settle_proposal(command.row(), at, rng);
                if matches!(fate, Fate::Dropped | Fate::Late) {
                    return (timeout(), at);
                }
                let done = at + MS + rng.below(4 * MS);
                if fate == Fate::Minority && command.is_conditional() {
                    let row = command.row().unwrap_or_default().to_string();
                    self.proposal = Some((row, Proposal::Command(command.clone()), stamp));
                    let reply = if rng.below(2) == 0 {
                        timeout()
                    } else {
                        unavailable()
                    };
                    return (reply, done);
                }
                let coordinator = rng.below(3) as usize;
                let now = self.node_now(coordinator, at);
                let command = whole_second_ttl(command, now);
                let mut reply = self
                    .paxos
                    .apply_stamped(&command, Instant::from_nanos(now), stamp);
                // A serial read of a whole row reads the plain cells too (a Paxos round reads
                // the partition from a quorum): what an object write's read-back judges its
                // guard by.
                if let (
                    Command::Read {
                        row,
                        filter: ColumnFilter::All,
                        consistency: ReadConsistency::Serial(_),
                    },
                    Reply::Cells(cells),
                ) = (&command, &mut reply)
                {
                    let skip = usize::try_from(at % 3).unwrap_or(0);
                    for plain in self.plain_cells(row, skip, at, now) {
                        if !cells.iter().any(|c| c.column == plain.column) {
                            cells.push(plain);
                        }
                    }
                    cells.sort_by(|a, b| a.column.cmp(&b.column));
                }
                let reply = if fate == Fate::LostReply {
                    timeout()
                } else {
                    reply
                };
                (reply, done)
            }
        }
    }

    fn take_object_changes(&mut self) -> Vec<ObjectChange> {
        std::mem::take(&mut self.changes)
    }

    fn arrival_stamp(&mut self) -> u64 {
        self.arrivals += 1;
        self.arrivals
    }
}
