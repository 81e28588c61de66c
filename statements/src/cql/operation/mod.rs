//! One kernel [`Command`] on a Cassandra lock table, as a sans-IO exchange: the [`Operation`]
//! says which prepared statement to run, with which values, at which consistency ([`Step`]);
//! the host runs it and feeds back the rows ([`Operation::rows`], [`Operation::page`]), until
//! the operation answers with the command's [`Reply`]. The native store runs the steps through
//! scylla; another host through its own driver, with the same statements, values, levels and
//! decoding.
//!
//! Cost: no I/O; each step allocates its value list (texts borrowed from the command), and
//! decoding allocates the reply.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use baton_kernel::model::prefix_end;
use baton_kernel::strategy::unique::TURN_COLUMN;
use baton_kernel::{
    Cell, ColumnFilter, Command, Consistency, Failure, ReadConsistency, Reply, SerialConsistency,
    Turn, Write,
};

use super::Statement;
pub use batch::effective_writes;
use decode::{conditional, decode_cells, guarded, object};
use values::{cql_stamp, execute, internal, put_values, stamped_put, text};

/// Rows (cells) per page of a scan, at most.
pub const SCAN_PAGE: i32 = 1000;

/// The driver's page of a scan of `limit` partitions: four cells a partition (a unique-insert
/// lock has two, a bakery ticket or a column-prefix entry one each), between 16 and
/// [`SCAN_PAGE`], so that a scan asked for fewer partitions after a failure (the kernel halves
/// it) also asks the servers for fewer rows at a time.
pub fn scan_page_size(limit: u32) -> i32 {
    i32::try_from(u64::from(limit) * 4)
        .unwrap_or(SCAN_PAGE)
        .clamp(16, SCAN_PAGE)
}

/// A bound value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<'c> {
    /// CQL `text`.
    Text(Cow<'c, str>),
    /// CQL `int` (a TTL in seconds).
    Int(i32),
    /// CQL `bigint` (a write timestamp in microseconds).
    BigInt(i64),
}

/// A value of a result column, as the host decoded it (`None` for NULL is the row's business).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    /// `text`, `varchar` or `ascii`.
    Text(String),
    /// `int`.
    Int(i32),
    /// `bigint`.
    BigInt(i64),
    /// `boolean`.
    Boolean(bool),
    /// A value of another type (never expected).
    Other,
}

/// A statement's result, as the host decoded it: the column names and each row's values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// The result's column names, in order (`[applied]` first for a conditional statement).
    pub columns: Vec<String>,
    /// The rows, each with one value per column (`None` for NULL).
    pub rows: Vec<Vec<Option<Val>>>,
}

/// A consistency level, as the driver sets it on a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// `ONE`.
    One,
    /// `QUORUM`.
    Quorum,
    /// `LOCAL_QUORUM`.
    LocalQuorum,
    /// `EACH_QUORUM`.
    EachQuorum,
    /// `ALL`.
    All,
    /// `SERIAL`: a linearizable read.
    Serial,
    /// `LOCAL_SERIAL`: a linearizable read within the data centre.
    LocalSerial,
}

/// Levels that override the commands' own (a store's `consistency=` and `serial=` options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    /// Replaces every plain level.
    pub consistency: Option<Consistency>,
    /// Replaces every serial level.
    pub serial: Option<SerialConsistency>,
}

impl Levels {
    /// The level of a plain statement at `c`.
    pub fn plain(&self, c: Consistency) -> Level {
        match self.consistency.unwrap_or(c) {
            Consistency::One => Level::One,
            Consistency::Quorum => Level::Quorum,
            Consistency::LocalQuorum => Level::LocalQuorum,
            Consistency::EachQuorum => Level::EachQuorum,
            Consistency::All => Level::All,
        }
    }

    /// The serial level of a conditional statement at `s`.
    pub fn serial(&self, s: SerialConsistency) -> SerialConsistency {
        self.serial.unwrap_or(s)
    }

    fn read(&self, r: ReadConsistency) -> Level {
        match r {
            ReadConsistency::Plain(c) => self.plain(c),
            ReadConsistency::Serial(s) => match self.serial(s) {
                SerialConsistency::Serial => Level::Serial,
                SerialConsistency::LocalSerial => Level::LocalSerial,
            },
        }
    }
}

/// What the host does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step<'c> {
    /// Execute `statement` (unpaged) with `values`, then call [`Operation::rows`] with its
    /// result (no rows for a write).
    Execute {
        /// Which prepared statement.
        statement: Statement,
        /// Its values, in marker order.
        values: Vec<Value<'c>>,
        /// Its consistency level.
        consistency: Level,
        /// Its serial consistency (conditional statements only).
        serial: Option<SerialConsistency>,
    },
    /// Execute these statements as one logged batch at `consistency`, then call
    /// [`Operation::rows`] with its result. A batch of plain writes (`serial` is `None`) is
    /// idempotent (every statement carries its timestamp) and has no rows. A conditional batch
    /// (`serial` set: its Paxos consistency) is not idempotent, and its result has `[applied]`
    /// and, when not applied, the `cell` and `value` of the rows its conditions found.
    Batch {
        /// The statements and their values.
        statements: Vec<(Statement, Vec<Value<'c>>)>,
        /// The batch's consistency level.
        consistency: Level,
        /// The serial consistency of a conditional batch.
        serial: Option<SerialConsistency>,
    },
    /// Execute `statement` with `values`, paged by `page_size` rows, and call
    /// [`Operation::page`] with each page until the operation stops asking.
    Scan {
        /// Which prepared statement.
        statement: Statement,
        /// Its values.
        values: Vec<Value<'c>>,
        /// Its consistency level.
        consistency: Level,
        /// Rows per page.
        page_size: i32,
    },
    /// Fetch the next page of the scan (if the result has no more, call
    /// [`Operation::page`] with no rows and `last` set).
    NextPage,
    /// The command is done: this is its reply.
    Reply(Reply),
}

/// One command's exchange with a Cassandra lock table. A driver error ends it (the host
/// reports it, classified by [`failure`](super::failure)).
#[derive(Debug)]
pub struct Operation<'c> {
    command: &'c Command,
    levels: Levels,
    /// The timestamp of a plain write (`USING TIMESTAMP`), 0 for other commands.
    stamp: i64,
    /// The first step was given.
    started: bool,
    /// A scan's rows so far.
    scanned: Vec<(String, Vec<Cell>)>,
    /// A release ([`Command::Vacate`]): the cells its read found, until its delete is done.
    vacated: Option<Vec<Cell>>,
    /// The reply, until the host takes it.
    reply: Option<Reply>,
    /// The reply was taken.
    finished: bool,
    /// Why an object write cannot run on this table (it has no `probe` column), if it cannot.
    probe_refusal: Option<String>,
}

impl<'c> Operation<'c> {
    /// Starts `command` with `levels` overriding its consistency. `stamp` gives the timestamp of
    /// a plain write: called once, with the floor it must exceed (a batch's
    /// [`after`](baton_kernel::Command::Batch), 0 otherwise); the native store passes its
    /// process-wide generator. Fails with [`Failure::Rejected`] for a command the Cassandra
    /// store does not know.
    pub fn new(
        command: &'c Command,
        levels: Levels,
        stamp: impl FnOnce(u64) -> u64,
    ) -> Result<Operation<'c>, Failure> {
        let stamp = match command {
            Command::Put { .. } | Command::Delete { .. } | Command::Vacate { .. } => {
                cql_stamp(stamp(0))
            }
            Command::Batch { after, .. } => cql_stamp(stamp(*after)),
            // A tombstone at the version's timestamp shadows that version and every older one
            // (a tie goes to the tombstone), never a newer write.
            Command::DeleteVersion { stamp, .. } => cql_stamp(*stamp),
            Command::Read { .. }
            | Command::InsertIfAbsent { .. }
            | Command::CompareAndSet { .. }
            | Command::Claim { .. }
            | Command::GuardedSet { .. }
            | Command::SetObject { .. }
            | Command::Purge { .. }
            | Command::Scan { .. } => 0,
            other => {
                return Err(Failure::Rejected(format!(
                    "the Cassandra store does not know the command {other:?}"
                )))
            }
        };
        Ok(Operation {
            command,
            levels,
            stamp,
            started: false,
            scanned: Vec::new(),
            vacated: None,
            reply: None,
            finished: false,
            probe_refusal: None,
        })
    }

    /// Says that the table has no `probe` column ([`PROBE_COLUMN`](super::PROBE_COLUMN)), for
    /// the reason `why` ([`SchemaSetup::probe_refusal`](super::SchemaSetup::probe_refusal)):
    /// an object write is then answered with [`Failure::Rejected`] before any statement, and
    /// a claim leaves out the probe of an absent turn (a condition the store may ignore, see
    /// [`Turn`]). Other commands run as before.
    pub fn without_probe(mut self, why: &str) -> Self {
        if matches!(
            self.command,
            Command::SetObject { .. } | Command::Claim { .. }
        ) {
            self.probe_refusal = Some(String::from(why));
        }
        self
    }

    /// What to do next, until it gives the reply (once: stepping again after that is a bug in
    /// the host, answered by an internal error).
    pub fn step(&mut self) -> Step<'c> {
        if let Some(reply) = self.reply.take() {
            self.finished = true;
            return Step::Reply(reply);
        }
        if self.finished {
            return Step::Reply(internal("stepped after its reply"));
        }
        if core::mem::replace(&mut self.started, true) {
            return match self.command {
                Command::Scan { .. } => Step::NextPage,
                // A release's read is in: its delete next.
                Command::Vacate {
                    row,
                    column,
                    consistency,
                    ..
                } if self.vacated.is_some() => execute(
                    Statement::Delete,
                    vec![Value::BigInt(self.stamp), text(row), text(column)],
                    self.levels.plain(*consistency),
                    None,
                ),
                _ => Step::Reply(internal("stepped before its result was fed")),
            };
        }
        self.first()
    }

    /// The result of an [`Step::Execute`] or [`Step::Batch`].
    pub fn rows(&mut self, result: Rows) {
        self.reply = Some(match self.command {
            Command::Read { .. } => decode_cells(&result, false)
                .map_or_else(Reply::Failed, |cells| {
                    Reply::Cells(cells.into_iter().map(|(_, c)| c).collect())
                }),
            Command::InsertIfAbsent { .. } | Command::CompareAndSet { .. } => {
                conditional(&result).unwrap_or_else(Reply::Failed)
            }
            // The read: keep its cells for the reply, and go on to the delete.
            Command::Vacate { .. } if self.vacated.is_none() => {
                match decode_cells(&result, false) {
                    Ok(cells) => {
                        self.vacated = Some(cells.into_iter().map(|(_, c)| c).collect());
                        return;
                    }
                    Err(f) => Reply::Failed(f),
                }
            }
            Command::Vacate { .. } => Reply::Cells(self.vacated.take().unwrap_or_default()),
            Command::Claim { .. } | Command::GuardedSet { .. } => {
                guarded(&result, self.command).unwrap_or_else(Reply::Failed)
            }
            Command::SetObject { .. } => {
                object(&result, self.command).unwrap_or_else(Reply::Failed)
            }
            Command::Scan { .. } => internal("a scan's rows came unpaged"),
            _ => Reply::Written,
        });
    }

    /// One page of a [`Step::Scan`]; `last` when the result has no more pages.
    pub fn page(&mut self, result: Rows, last: bool) {
        let Command::Scan { limit, .. } = self.command else {
            self.reply = Some(internal("a page fed to a command that is not a scan"));
            return;
        };
        let limit = usize::try_from((*limit).max(1)).unwrap_or(usize::MAX);
        let cells = match decode_cells(&result, true) {
            Ok(cells) => cells,
            Err(f) => {
                self.reply = Some(Reply::Failed(f));
                return;
            }
        };
        for (name, cell) in cells {
            match self.scanned.last_mut() {
                Some((last, cells)) if *last == name => cells.push(cell),
                _ => {
                    if self.scanned.len() == limit {
                        self.reply = Some(Reply::Rows(core::mem::take(&mut self.scanned)));
                        return;
                    }
                    self.scanned.push((name, vec![cell]));
                }
            }
        }
        if last {
            self.reply = Some(Reply::Rows(core::mem::take(&mut self.scanned)));
        }
    }

    fn first(&mut self) -> Step<'c> {
        let levels = self.levels;
        let stamp = Value::BigInt(self.stamp);
        match self.command {
            Command::Read { row, filter, .. }
            | Command::Vacate {
                row, read: filter, ..
            } => {
                let consistency = match self.command {
                    Command::Read { consistency, .. } => *consistency,
                    Command::Vacate { consistency, .. } => ReadConsistency::Plain(*consistency),
                    _ => ReadConsistency::Plain(Consistency::Quorum),
                };
                let (statement, values) = match filter {
                    ColumnFilter::All => (Statement::ReadAll, vec![text(row)]),
                    ColumnFilter::Exact(c) => (Statement::ReadExact, vec![text(row), text(c)]),
                    ColumnFilter::Prefix(p) => match prefix_end(p) {
                        Some(end) => (
                            Statement::ReadRange,
                            vec![text(row), text(p), Value::Text(Cow::Owned(end))],
                        ),
                        None => (Statement::ReadFrom, vec![text(row), text(p)]),
                    },
                };
                execute(statement, values, levels.read(consistency), None)
            }
            Command::Put {
                row,
                column,
                value,
                ttl,
                consistency,
            } => execute(
                Statement::Put,
                stamped_put(stamp, row, column, value, *ttl),
                levels.plain(*consistency),
                None,
            ),
            Command::Delete {
                row,
                column,
                consistency,
            }
            | Command::DeleteVersion {
                row,
                column,
                consistency,
                ..
            } => execute(
                Statement::Delete,
                vec![stamp, text(row), text(column)],
                levels.plain(*consistency),
                None,
            ),
            Command::InsertIfAbsent {
                row,
                column,
                value,
                ttl,
                serial,
                consistency,
            } => execute(
                Statement::InsertIfAbsent,
                put_values(row, column, value, *ttl),
                levels.plain(*consistency),
                Some(levels.serial(*serial)),
            ),
            Command::CompareAndSet {
                row,
                column,
                expected,
                new,
                ttl,
                serial,
                consistency,
            } => {
                let (statement, values) = match new {
                    Some(value) => {
                        let mut values = put_values(row, column, value, *ttl);
                        values.push(text(expected));
                        (Statement::CompareAndSet, values)
                    }
                    None => (
                        Statement::CompareAndDelete,
                        vec![text(row), text(column), text(expected)],
                    ),
                };
                execute(
                    statement,
                    values,
                    levels.plain(*consistency),
                    Some(levels.serial(*serial)),
                )
            }
            Command::Batch {
                row,
                writes,
                consistency,
                ..
            } => {
                let mut statements: Vec<_> = effective_writes(writes)
                    .into_iter()
                    .map(|write| match write {
                        Write::Put { column, value, ttl } => (
                            Statement::Put,
                            stamped_put(stamp.clone(), row, column, value, *ttl),
                        ),
                        Write::Delete { column } => (
                            Statement::Delete,
                            vec![stamp.clone(), text(row), text(column)],
                        ),
                    })
                    .collect();
                if statements.len() == 1 {
                    // One write is one statement (a release), with the batch's timestamp: a
                    // logged batch of one would only add the batch log's writes.
                    let Some((statement, values)) = statements.pop() else {
                        return Step::Reply(internal("a batch of one write without it"));
                    };
                    return execute(statement, values, levels.plain(*consistency), None);
                }
                if statements.is_empty() {
                    self.finished = true;
                    return Step::Reply(Reply::Written);
                }
                Step::Batch {
                    statements,
                    consistency: levels.plain(*consistency),
                    serial: None,
                }
            }
            Command::Claim {
                row,
                column,
                value,
                ttl,
                counter,
                counter_expected,
                counter_next,
                turn,
                serial,
                consistency,
            } => {
                let counter = match counter_expected {
                    None => (
                        Statement::InsertIfAbsent,
                        put_values(row, counter, counter_next, None),
                    ),
                    Some(expected) => {
                        let mut values = put_values(row, counter, counter_next, None);
                        values.push(text(expected));
                        (Statement::CompareAndSet, values)
                    }
                };
                let mut statements = vec![
                    (
                        Statement::InsertIfAbsent,
                        put_values(row, column, value, *ttl),
                    ),
                    counter,
                ];
                // The turn: a probe of its cell (nobody's), or the delete of ours. A table
                // without the probe column cannot take the probe: a claim then goes in
                // whoever's turn it is, which costs fairness only (`Turn`'s contract); the
                // delete of ours needs no probe.
                match turn {
                    None => {}
                    Some(Turn::Free) if self.probe_refusal.is_some() => {}
                    Some(Turn::Free) => statements
                        .push((Statement::ProbeAbsent, vec![text(row), text(TURN_COLUMN)])),
                    Some(Turn::Ours(ours)) => statements.push((
                        Statement::CompareAndDelete,
                        vec![text(row), text(TURN_COLUMN), text(ours)],
                    )),
                }
                Step::Batch {
                    statements,
                    consistency: levels.plain(*consistency),
                    serial: Some(levels.serial(*serial)),
                }
            }
            Command::GuardedSet {
                row,
                column,
                expected,
                new,
                ttl,
                guard,
                guard_value,
                serial,
                consistency,
            } => {
                let change = match new {
                    Some(value) => {
                        let mut values = put_values(row, column, value, *ttl);
                        values.push(text(expected));
                        (Statement::CompareAndSet, values)
                    }
                    None => (
                        Statement::CompareAndDelete,
                        vec![text(row), text(column), text(expected)],
                    ),
                };
                // The guard is a condition of the batch: it is written again with its own
                // value (a Paxos write, as every write of it is).
                let mut check = put_values(row, guard, guard_value, None);
                check.push(text(guard_value));
                Step::Batch {
                    statements: vec![change, (Statement::CompareAndSet, check)],
                    consistency: levels.plain(*consistency),
                    serial: Some(levels.serial(*serial)),
                }
            }
            Command::SetObject { .. } => self.object(),
            // Expired cells vanish by themselves in Cassandra (TTL): there is nothing to purge.
            Command::Purge { .. } => {
                self.finished = true;
                Step::Reply(Reply::Purged(Vec::new()))
            }
            Command::Scan {
                after,
                consistency,
                limit,
            } => {
                let (statement, values) = match after {
                    Some(after) => (Statement::ScanAfter, vec![text(after)]),
                    None => (Statement::ScanFirst, Vec::new()),
                };
                Step::Scan {
                    statement,
                    values,
                    consistency: levels.plain(*consistency),
                    page_size: scan_page_size(*limit),
                }
            }
            // `new` refused every other command.
            _ => Step::Reply(internal("an unknown command was started")),
        }
    }
}

mod batch;
mod decode;
mod object;
#[cfg(test)]
mod tests;
mod values;
