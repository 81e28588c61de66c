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
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use baton_kernel::model::prefix_end;
use baton_kernel::{
    Cell, ColumnFilter, Command, Consistency, Failure, ReadConsistency, Reply, SerialConsistency,
    Write,
};

use super::{ttl_seconds, Statement};

/// Rows per page of a scan.
pub const SCAN_PAGE: i32 = 1000;

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
        })
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
                Step::Batch {
                    statements: vec![
                        (
                            Statement::InsertIfAbsent,
                            put_values(row, column, value, *ttl),
                        ),
                        counter,
                    ],
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
            // Expired cells vanish by themselves in Cassandra (TTL): there is nothing to purge.
            Command::Purge { .. } => {
                self.finished = true;
                Step::Reply(Reply::Purged(Vec::new()))
            }
            Command::Scan {
                after, consistency, ..
            } => {
                let (statement, values) = match after {
                    Some(after) => (Statement::ScanAfter, vec![text(after)]),
                    None => (Statement::ScanFirst, Vec::new()),
                };
                Step::Scan {
                    statement,
                    values,
                    consistency: levels.plain(*consistency),
                    page_size: SCAN_PAGE,
                }
            }
            // `new` refused every other command.
            _ => Step::Reply(internal("an unknown command was started")),
        }
    }
}

fn internal(what: &str) -> Reply {
    Reply::Failed(Failure::Rejected(format!(
        "internal error in a Cassandra operation: {what}"
    )))
}

fn text(s: &str) -> Value<'_> {
    Value::Text(Cow::Borrowed(s))
}

fn execute<'c>(
    statement: Statement,
    values: Vec<Value<'c>>,
    consistency: Level,
    serial: Option<SerialConsistency>,
) -> Step<'c> {
    Step::Execute {
        statement,
        values,
        consistency,
        serial,
    }
}

/// A stamp as CQL's `bigint` timestamp. Every stamp a generator of wall-clock microseconds
/// gives fits; a larger one, which only a [`Command::DeleteVersion`] could carry, means "every
/// version" and becomes `i64::MAX`.
fn cql_stamp(stamp: u64) -> i64 {
    i64::try_from(stamp).unwrap_or(i64::MAX)
}

/// The values of a conditional write: `TTL ?`, `value = ?`, the key.
fn put_values<'c>(
    row: &'c str,
    column: &'c str,
    value: &'c str,
    ttl: Option<Duration>,
) -> Vec<Value<'c>> {
    vec![
        Value::Int(ttl_seconds(ttl)),
        text(value),
        text(row),
        text(column),
    ]
}

/// The values of a plain put: `USING TIMESTAMP ? AND TTL ?`, `value = ?`, the key.
fn stamped_put<'c>(
    stamp: Value<'c>,
    row: &'c str,
    column: &'c str,
    value: &'c str,
    ttl: Option<Duration>,
) -> Vec<Value<'c>> {
    let mut values = vec![stamp];
    values.extend(put_values(row, column, value, ttl));
    values
}

fn bad_result(what: &str) -> Failure {
    Failure::Rejected(format!("unexpected result from Cassandra: {what}"))
}

/// The live cells of a read (`cell, value, TTL(value), WRITETIME(value)`) or a scan (the same
/// after `lock_name`), each with its row name (empty for a read).
fn decode_cells(result: &Rows, scan: bool) -> Result<Vec<(String, Cell)>, Failure> {
    let mut out = Vec::with_capacity(result.rows.len());
    for row in &result.rows {
        let (name, rest) = if scan {
            match row.split_first() {
                Some((Some(Val::Text(name)), rest)) => (name.clone(), rest),
                _ => return Err(bad_result("a scanned row without its lock_name")),
            }
        } else {
            (String::new(), row.as_slice())
        };
        let [column, value, ttl, written] = rest else {
            return Err(bad_result("a cell row without its four columns"));
        };
        let Some(Val::Text(column)) = column else {
            return Err(bad_result("a cell row without its cell name"));
        };
        let value = match value {
            Some(Val::Text(v)) => v.clone(),
            // A clustering row without a live value (a scan of a partition with tombstones).
            None => continue,
            Some(_) => return Err(bad_result("a cell value that is not text")),
        };
        let ttl_remaining = match ttl {
            Some(Val::Int(s)) => u64::try_from(*s).ok().map(Duration::from_secs),
            None => None,
            Some(_) => return Err(bad_result("a TTL that is not an int")),
        };
        let stamp = match written {
            Some(Val::BigInt(w)) => u64::try_from(*w).unwrap_or(0),
            None => 0,
            Some(_) => return Err(bad_result("a WRITETIME that is not a bigint")),
        };
        out.push((
            name,
            Cell {
                column: column.clone(),
                value,
                ttl_remaining,
                stamp,
            },
        ));
    }
    Ok(out)
}

/// The reply of a conditional statement: `[applied]`, and when not applied the `value` in the
/// way (absent or NULL: no live cell).
fn conditional(result: &Rows) -> Result<Reply, Failure> {
    let at = |name: &str| result.columns.iter().position(|c| c == name);
    let applied_at =
        at("[applied]").ok_or_else(|| bad_result("a conditional statement without [applied]"))?;
    let row = result
        .rows
        .first()
        .ok_or_else(|| bad_result("a conditional statement without a result row"))?;
    let column = |i: usize| row.get(i).cloned().flatten();
    let applied = matches!(column(applied_at), Some(Val::Boolean(true)));
    let current = if applied {
        None
    } else {
        match at("value").and_then(column) {
            Some(Val::Text(s)) => Some(s),
            _ => None,
        }
    };
    Ok(Reply::Conditional { applied, current })
}

/// The reply of a conditional batch ([`Command::Claim`], [`Command::GuardedSet`]): applied, the
/// cells as the command left them; otherwise the `value` of each row the result names by
/// `cell` (a row it does not name, or names with a NULL value, has no live cell).
fn guarded(result: &Rows, command: &Command) -> Result<Reply, Failure> {
    let at = |name: &str| result.columns.iter().position(|c| c == name);
    let applied_at =
        at("[applied]").ok_or_else(|| bad_result("a conditional batch without [applied]"))?;
    let first = result
        .rows
        .first()
        .ok_or_else(|| bad_result("a conditional batch without a result row"))?;
    let applied = matches!(
        first.get(applied_at).cloned().flatten(),
        Some(Val::Boolean(true))
    );
    let (column, other) = match command {
        Command::Claim {
            column,
            counter,
            value,
            counter_next,
            ..
        } if applied => {
            return Ok(Reply::Guarded {
                applied,
                current: Some(value.clone()),
                guard: Some(counter_next.clone()),
            })
        }
        Command::GuardedSet {
            new, guard_value, ..
        } if applied => {
            return Ok(Reply::Guarded {
                applied,
                current: new.clone(),
                guard: Some(guard_value.clone()),
            })
        }
        Command::Claim {
            column, counter, ..
        } => (column, counter),
        Command::GuardedSet { column, guard, .. } => (column, guard),
        _ => return Err(bad_result("a conditional batch for another command")),
    };
    let (Some(cell_at), Some(value_at)) = (at("cell"), at("value")) else {
        return Ok(Reply::Guarded {
            applied,
            current: None,
            guard: None,
        });
    };
    let value_of = |wanted: &str| {
        result.rows.iter().find_map(|row| {
            match (
                row.get(cell_at).cloned().flatten(),
                row.get(value_at).cloned().flatten(),
            ) {
                (Some(Val::Text(c)), Some(Val::Text(v))) if c == wanted => Some(v),
                _ => None,
            }
        })
    };
    Ok(Reply::Guarded {
        applied,
        current: value_of(column),
        guard: value_of(other),
    })
}

/// The writes of a batch that matter, at most one per column, in the batch's order: the first
/// put after the column's last delete, or that delete if no put follows it.
///
/// Every statement of a Cassandra batch carries the batch's one timestamp, and at one timestamp
/// the statements of a column do not apply in order (a delete wins a tie, and of two puts the
/// greater value). The kernel's reference table applies the writes in order, each under the
/// rules of its stamp, the same for all of them: a delete removes whatever the batch wrote
/// before it (its version is not newer), and a put applies only over an older version, so
/// after a put of the column, later puts change nothing until a delete. Sending only the write
/// that decides the outcome gives Cassandra the same result, whatever the cell held before.
pub fn effective_writes(writes: &[Write]) -> Vec<&Write> {
    let column = |w: &Write| match w {
        Write::Put { column, .. } | Write::Delete { column } => column.clone(),
    };
    let mut decisive: BTreeMap<String, usize> = BTreeMap::new();
    for (i, w) in writes.iter().enumerate() {
        match w {
            Write::Delete { .. } => {
                decisive.insert(column(w), i);
            }
            Write::Put { .. } => {
                let slot = decisive.entry(column(w)).or_insert(i);
                if matches!(writes[*slot], Write::Delete { .. }) {
                    *slot = i;
                }
            }
        }
    }
    writes
        .iter()
        .enumerate()
        .filter(|(i, w)| decisive.get(&column(w)) == Some(i))
        .map(|(_, w)| w)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use alloc::string::ToString;
    use baton_kernel::{Instant, MemoryTable};

    fn put(c: &str, v: &str) -> Write {
        Write::Put {
            column: c.into(),
            value: v.into(),
            ttl: None,
        }
    }

    fn del(c: &str) -> Write {
        Write::Delete { column: c.into() }
    }

    #[test]
    fn batches_keep_the_write_that_decides_each_column() {
        let writes = vec![
            put("a", "1"),
            del("b"),
            del("a"),
            put("b", "2"),
            put("c", "3"),
            put("c", "4"),
            put("b", "5"),
            del("d"),
            put("d", "6"),
            del("d"),
        ];
        let kept: Vec<&Write> = effective_writes(&writes);
        assert_eq!(kept, vec![&writes[2], &writes[3], &writes[4], &writes[9]]);
    }

    /// The kept writes, applied as Cassandra applies one batch (one timestamp: a delete wins a
    /// tie with a put), leave the table as the reference table leaves it after the whole batch.
    #[test]
    fn batches_match_the_reference_table() {
        let now = Instant::from_nanos(0);
        let columns = ["a", "b"];
        let mut scripts: Vec<Vec<Write>> = vec![vec![]];
        for _ in 0..4 {
            let mut longer = Vec::new();
            for script in &scripts {
                for (i, c) in columns.iter().enumerate() {
                    for w in [put(c, &format!("v{i}{}", script.len())), del(c)] {
                        let mut s = script.clone();
                        s.push(w);
                        longer.push(s);
                    }
                }
            }
            scripts.extend(longer);
        }
        for start in [None, Some("old")] {
            for script in &scripts {
                let mut reference = MemoryTable::new();
                let mut cassandra = MemoryTable::new();
                if let Some(v) = start {
                    for table in [&mut reference, &mut cassandra] {
                        for c in columns {
                            let before = Command::Put {
                                row: "r".into(),
                                column: c.into(),
                                value: v.into(),
                                ttl: None,
                                consistency: Consistency::Quorum,
                            };
                            table.apply_stamped(&before, now, 1);
                        }
                    }
                }
                let batch = |writes: Vec<Write>| Command::Batch {
                    row: "r".into(),
                    writes,
                    consistency: Consistency::Quorum,
                    after: 0,
                };
                reference.apply_stamped(&batch(script.clone()), now, 2);
                // One write per column: no ties within the batch, so order is irrelevant.
                let kept = effective_writes(script).into_iter().cloned().collect();
                cassandra.apply_stamped(&batch(kept), now, 2);
                assert_eq!(
                    cassandra.read("r", &ColumnFilter::All, now),
                    reference.read("r", &ColumnFilter::All, now),
                    "{script:?} over {start:?}"
                );
            }
        }
    }

    #[test]
    fn serial_reads_and_overrides() {
        let read = Command::Read {
            row: "r".into(),
            filter: ColumnFilter::Prefix("p".into()),
            consistency: ReadConsistency::Serial(SerialConsistency::Serial),
        };
        let levels = Levels {
            consistency: Some(Consistency::One),
            serial: Some(SerialConsistency::LocalSerial),
        };
        let mut op = Operation::new(&read, levels, |_| unreachable!()).expect("valid");
        assert_eq!(
            op.step(),
            execute(
                Statement::ReadRange,
                vec![text("r"), text("p"), Value::Text("q".into())],
                Level::LocalSerial,
                None
            )
        );
        op.rows(Rows {
            columns: ["cell", "value", "ttl(value)", "writetime(value)"]
                .map(String::from)
                .to_vec(),
            rows: vec![vec![
                Some(Val::Text("p1".to_string())),
                Some(Val::Text("v".to_string())),
                Some(Val::Int(3)),
                Some(Val::BigInt(9)),
            ]],
        });
        let Step::Reply(Reply::Cells(cells)) = op.step() else {
            panic!("a read answers with cells");
        };
        assert_eq!(cells[0].ttl_remaining, Some(Duration::from_secs(3)));
        assert_eq!(cells[0].stamp, 9);
    }

    #[test]
    fn an_unapplied_conditional_names_the_value_in_the_way() {
        let cas = Command::CompareAndSet {
            row: "r".into(),
            column: "c".into(),
            expected: "mine".into(),
            new: None,
            ttl: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        };
        let mut op = Operation::new(&cas, Levels::default(), |_| unreachable!()).expect("valid");
        let Step::Execute {
            statement, serial, ..
        } = op.step()
        else {
            panic!("one statement");
        };
        assert_eq!(statement, Statement::CompareAndDelete);
        assert_eq!(serial, Some(SerialConsistency::Serial));
        op.rows(Rows {
            columns: vec!["[applied]".to_string(), "value".to_string()],
            rows: vec![vec![
                Some(Val::Boolean(false)),
                Some(Val::Text("theirs".to_string())),
            ]],
        });
        assert_eq!(
            op.step(),
            Step::Reply(Reply::Conditional {
                applied: false,
                current: Some("theirs".to_string())
            })
        );
    }

    #[test]
    fn a_scan_stops_at_its_limit_across_pages() {
        let scan = Command::Scan {
            after: None,
            limit: 2,
            consistency: Consistency::One,
        };
        let mut op = Operation::new(&scan, Levels::default(), |_| 0).expect("valid");
        assert!(matches!(
            op.step(),
            Step::Scan {
                page_size: SCAN_PAGE,
                ..
            }
        ));
        let row = |name: &str, cell: &str| {
            vec![
                Some(Val::Text(name.to_string())),
                Some(Val::Text(cell.to_string())),
                Some(Val::Text("v".to_string())),
                None,
                Some(Val::BigInt(1)),
            ]
        };
        let columns = ["lock_name", "cell", "value", "ttl", "writetime"]
            .map(String::from)
            .to_vec();
        op.page(
            Rows {
                columns: columns.clone(),
                rows: vec![row("a", "1"), row("a", "2")],
            },
            false,
        );
        assert_eq!(op.step(), Step::NextPage);
        op.page(
            Rows {
                columns,
                rows: vec![row("b", "1"), row("c", "1")],
            },
            false,
        );
        let Step::Reply(Reply::Rows(rows)) = op.step() else {
            panic!("the page is full");
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1.len(), 2);
    }
}
