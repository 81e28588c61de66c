//! Executing one kernel command: binding the prepared statement, setting its consistency, and
//! turning the result into a [`Reply`].
//!
//! Stamps: a plain write (put, delete, batch) is bound with a fresh stamp from the process's
//! generator as its `USING TIMESTAMP`, taken when the statement is built, just before it is
//! sent; a delete-version with its own stamp. Reads return each cell's `WRITETIME`.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_kernel::{
    Cell, ColumnFilter, Command, Consistency, Failure, ReadConsistency, Reply, SerialConsistency,
    Write,
};
use scylla::client::session::Session;
use scylla::errors::ExecutionError;
use scylla::response::query_result::QueryResult;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::bound::BoundStatement;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency as Cl, SerialConsistency as Scl};
use scylla::value::CqlValue;

use super::errors::failure;
use super::statements::Statements;
use crate::stamps::{next_stamp, next_stamp_after};
use baton_kernel::model::prefix_end;
use baton_statements::cql::ttl_seconds;

/// Levels that override the commands' own (the URL's `consistency=` and `serial=`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Overrides {
    pub consistency: Option<Consistency>,
    pub serial: Option<SerialConsistency>,
}

impl Overrides {
    fn plain(&self, c: Consistency) -> Cl {
        cl(self.consistency.unwrap_or(c))
    }
    fn serial(&self, s: SerialConsistency) -> Scl {
        match self.serial.unwrap_or(s) {
            SerialConsistency::Serial => Scl::Serial,
            SerialConsistency::LocalSerial => Scl::LocalSerial,
        }
    }
}

fn cl(c: Consistency) -> Cl {
    match c {
        Consistency::One => Cl::One,
        Consistency::Quorum => Cl::Quorum,
        Consistency::LocalQuorum => Cl::LocalQuorum,
        Consistency::EachQuorum => Cl::EachQuorum,
        Consistency::All => Cl::All,
    }
}

/// Rows per page of a scan.
const SCAN_PAGE: i32 = 1000;

/// What a command becomes on the wire: one bound statement, a batch, or nothing.
pub(crate) enum Plan {
    /// One statement.
    One(BoundStatement),
    /// A logged batch with its values.
    Batch(Batch, Vec<Vec<CqlValue>>),
    /// No statement (purge).
    Nothing,
    /// A scan (paged, so executed separately).
    Scan,
}

fn text(s: &str) -> CqlValue {
    CqlValue::Text(s.to_owned())
}

fn bind(p: &PreparedStatement, values: Vec<CqlValue>) -> Result<BoundStatement, Failure> {
    p.clone()
        .bind(&values)
        .map_err(|e| Failure::Rejected(format!("cannot bind the statement's values: {e}")))
}

/// The statement(s) of `command`, with consistency set, and with `given` as the timestamp of
/// a plain write, or a fresh stamp from [`next_stamp`] when `None` (always, but in tests that
/// play a write arriving late).
pub(crate) fn plan(
    st: &Statements,
    o: &Overrides,
    command: &Command,
    given: Option<u64>,
) -> Result<Plan, Failure> {
    let stamp = || cql_stamp(given.unwrap_or_else(next_stamp));
    let plan = match command {
        Command::Read {
            row,
            filter,
            consistency,
        } => {
            let mut bound = match filter {
                ColumnFilter::All => bind(&st.read_all, vec![text(row)])?,
                ColumnFilter::Exact(c) => bind(&st.read_exact, vec![text(row), text(c)])?,
                ColumnFilter::Prefix(p) => match prefix_end(p) {
                    Some(end) => bind(&st.read_range, vec![text(row), text(p), text(&end)])?,
                    None => bind(&st.read_from, vec![text(row), text(p)])?,
                },
            };
            bound.set_consistency(match consistency {
                ReadConsistency::Plain(c) => o.plain(*c),
                ReadConsistency::Serial(s) => match o.serial(*s) {
                    Scl::LocalSerial => Cl::LocalSerial,
                    _ => Cl::Serial,
                },
            });
            Plan::One(bound)
        }
        Command::Put {
            row,
            column,
            value,
            ttl,
            consistency,
        } => {
            let mut bound = bind(&st.put, stamped_put(stamp(), row, column, value, *ttl))?;
            bound.set_consistency(o.plain(*consistency));
            Plan::One(bound)
        }
        Command::Delete {
            row,
            column,
            consistency,
        } => {
            let mut bound = bind(&st.delete, stamped_delete(stamp(), row, column))?;
            bound.set_consistency(o.plain(*consistency));
            Plan::One(bound)
        }
        Command::DeleteVersion {
            row,
            column,
            stamp: version,
            consistency,
        } => {
            // A tombstone at the version's timestamp shadows that version and every older one
            // (a tie goes to the tombstone), never a newer write.
            let values = stamped_delete(cql_stamp(*version), row, column);
            let mut bound = bind(&st.delete, values)?;
            bound.set_consistency(o.plain(*consistency));
            Plan::One(bound)
        }
        Command::InsertIfAbsent {
            row,
            column,
            value,
            ttl,
            serial,
            consistency,
        } => {
            let mut bound = bind(&st.insert_if_absent, put_values(row, column, value, *ttl))?;
            bound.set_consistency(o.plain(*consistency));
            bound.set_serial_consistency(Some(o.serial(*serial)));
            Plan::One(bound)
        }
        Command::CompareAndSet {
            row,
            column,
            expected,
            new,
            ttl,
            serial,
            consistency,
        } => {
            let mut bound = match new {
                Some(value) => {
                    let mut values = put_values(row, column, value, *ttl);
                    values.push(text(expected));
                    bind(&st.compare_and_set, values)?
                }
                None => bind(
                    &st.compare_and_delete,
                    vec![text(row), text(column), text(expected)],
                )?,
            };
            bound.set_consistency(o.plain(*consistency));
            bound.set_serial_consistency(Some(o.serial(*serial)));
            Plan::One(bound)
        }
        Command::Batch {
            row,
            writes,
            consistency,
            after,
        } => {
            let mut batch = Batch::new(BatchType::Logged);
            let mut values = Vec::new();
            // Above the newest stamp the writer saw in the row (see `Command::Batch`).
            let stamp = cql_stamp(
                given
                    .map(|g| g.max(after.saturating_add(1)))
                    .unwrap_or_else(|| next_stamp_after(*after)),
            );
            for write in effective_writes(writes) {
                match write {
                    Write::Put { column, value, ttl } => {
                        batch.append_statement(st.put.clone());
                        values.push(stamped_put(stamp, row, column, value, *ttl));
                    }
                    Write::Delete { column } => {
                        batch.append_statement(st.delete.clone());
                        values.push(stamped_delete(stamp, row, column));
                    }
                }
            }
            if values.is_empty() {
                return Ok(Plan::Nothing);
            }
            batch.set_consistency(o.plain(*consistency));
            batch.set_is_idempotent(true);
            Plan::Batch(batch, values)
        }
        Command::Purge { .. } => Plan::Nothing,
        Command::Scan { .. } => Plan::Scan,
        other => {
            return Err(Failure::Rejected(format!(
                "the Cassandra store does not know the command {other:?}"
            )))
        }
    };
    Ok(plan)
}

/// A stamp as CQL's `bigint` timestamp. Every stamp the generator gives fits; a larger one,
/// which only a [`Command::DeleteVersion`] could carry, means "every version" and becomes
/// `i64::MAX`.
fn cql_stamp(stamp: u64) -> i64 {
    i64::try_from(stamp).unwrap_or(i64::MAX)
}

/// The values of a conditional write: `TTL ?`, `value = ?`, the key.
fn put_values(row: &str, column: &str, value: &str, ttl: Option<Duration>) -> Vec<CqlValue> {
    vec![
        CqlValue::Int(ttl_seconds(ttl)),
        text(value),
        text(row),
        text(column),
    ]
}

/// The values of a plain put: `USING TIMESTAMP ? AND TTL ?`, `value = ?`, the key.
fn stamped_put(
    stamp: i64,
    row: &str,
    column: &str,
    value: &str,
    ttl: Option<Duration>,
) -> Vec<CqlValue> {
    let mut values = vec![CqlValue::BigInt(stamp)];
    values.extend(put_values(row, column, value, ttl));
    values
}

/// The values of a plain delete: `USING TIMESTAMP ?`, the key.
fn stamped_delete(stamp: i64, row: &str, column: &str) -> Vec<CqlValue> {
    vec![CqlValue::BigInt(stamp), text(row), text(column)]
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
fn effective_writes(writes: &[Write]) -> Vec<&Write> {
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

/// Executes `command` on `session`, with `stamp` as the timestamp of a plain write (a fresh
/// one when `None`). Returns the reply.
pub(crate) async fn execute(
    session: &Session,
    st: &Statements,
    overrides: &Overrides,
    command: &Command,
    stamp: Option<u64>,
) -> Reply {
    match run_stamped(session, st, overrides, command, false, stamp).await {
        Ok((reply, _)) => reply,
        Err(f) => Reply::Failed(f),
    }
}

/// Executes `command`, optionally traced; also returns the driver's result (for tracing ids).
pub(crate) async fn run(
    session: &Session,
    st: &Statements,
    overrides: &Overrides,
    command: &Command,
    trace: bool,
) -> Result<(Reply, Option<QueryResult>), Failure> {
    run_stamped(session, st, overrides, command, trace, None).await
}

/// [`run`], with `given` as the timestamp of a plain write instead of a fresh stamp.
pub(crate) async fn run_stamped(
    session: &Session,
    st: &Statements,
    overrides: &Overrides,
    command: &Command,
    trace: bool,
    given: Option<u64>,
) -> Result<(Reply, Option<QueryResult>), Failure> {
    match plan(st, overrides, command, given)? {
        Plan::Nothing => Ok((nothing_reply(command), None)),
        Plan::Scan => {
            let Command::Scan {
                after,
                limit,
                consistency,
            } = command
            else {
                return Err(Failure::Rejected("internal error: scan plan".into()));
            };
            let rows = scan(
                session,
                st,
                after.as_deref(),
                *limit,
                overrides.plain(*consistency),
            )
            .await?;
            Ok((Reply::Rows(rows), None))
        }
        Plan::Batch(batch, values) => {
            let result = session
                .batch(&batch, values)
                .await
                .map_err(|e| failure(&e))?;
            Ok((Reply::Written, Some(result)))
        }
        Plan::One(mut bound) => {
            bound.set_tracing(trace);
            let result = session
                .execute_bound_unpaged(&bound)
                .await
                .map_err(|e| failure(&e))?;
            let reply = decode(command, result.clone())?;
            Ok((reply, Some(result)))
        }
    }
}

/// Executes the statement of `command` and returns the driver's raw result, undecoded: the
/// floor the benchmark compares the full path against.
pub(crate) async fn execute_raw(
    session: &Session,
    st: &Statements,
    overrides: &Overrides,
    command: &Command,
) -> Result<Option<QueryResult>, ExecutionError> {
    match plan(st, overrides, command, None) {
        Ok(Plan::One(bound)) => session.execute_bound_unpaged(&bound).await.map(Some),
        Ok(Plan::Batch(batch, values)) => session.batch(&batch, values).await.map(Some),
        _ => Ok(None),
    }
}

fn nothing_reply(command: &Command) -> Reply {
    match command {
        // Expired cells vanish by themselves in Cassandra (TTL): there is nothing to purge.
        Command::Purge { .. } => Reply::Purged(Vec::new()),
        _ => Reply::Written,
    }
}

fn bad_result(e: impl std::fmt::Display) -> Failure {
    Failure::Rejected(format!("unexpected result from Cassandra: {e}"))
}

fn decode(command: &Command, result: QueryResult) -> Result<Reply, Failure> {
    match command {
        Command::Read { .. } => {
            let rows = result.into_rows_result().map_err(bad_result)?;
            let mut cells = Vec::new();
            for row in rows
                .rows::<(String, Option<String>, Option<i32>, Option<i64>)>()
                .map_err(bad_result)?
            {
                let (column, value, ttl, written) = row.map_err(bad_result)?;
                if let Some(value) = value {
                    cells.push(cell(column, value, ttl, written));
                }
            }
            Ok(Reply::Cells(cells))
        }
        Command::InsertIfAbsent { .. } | Command::CompareAndSet { .. } => {
            let rows = result.into_rows_result().map_err(bad_result)?;
            let specs = rows.column_specs();
            let applied_at = specs
                .get_by_name("[applied]")
                .map(|(i, _)| i)
                .ok_or_else(|| bad_result("a conditional statement without [applied]"))?;
            let value_at = specs.get_by_name("value").map(|(i, _)| i);
            let row = rows
                .rows::<scylla::value::Row>()
                .map_err(bad_result)?
                .next()
                .ok_or_else(|| bad_result("a conditional statement without a result row"))?
                .map_err(bad_result)?;
            let column = |i: usize| row.columns.get(i).cloned().flatten();
            let applied = matches!(column(applied_at), Some(CqlValue::Boolean(true)));
            let current = if applied {
                None
            } else {
                match value_at.and_then(column) {
                    Some(CqlValue::Text(s)) | Some(CqlValue::Ascii(s)) => Some(s),
                    _ => None,
                }
            };
            Ok(Reply::Conditional { applied, current })
        }
        _ => Ok(Reply::Written),
    }
}

/// A cell from its column, value, `TTL(value)` (seconds) and `WRITETIME(value)` (microseconds:
/// the stamp of a plain write, the ballot's time for a conditional one).
fn cell(column: String, value: String, ttl: Option<i32>, written: Option<i64>) -> Cell {
    Cell {
        column,
        value,
        ttl_remaining: ttl
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs),
        stamp: written.map_or(0, |w| u64::try_from(w).unwrap_or(0)),
    }
}

/// Lists up to `limit` partitions after `after` in token order, each with its live cells.
async fn scan(
    session: &Session,
    st: &Statements,
    after: Option<&str>,
    limit: u32,
    consistency: Cl,
) -> Result<Vec<(String, Vec<Cell>)>, Failure> {
    let limit = usize::try_from(limit.max(1)).unwrap_or(usize::MAX);
    let mut statement = match after {
        Some(_) => st.scan_after.clone(),
        None => st.scan_first.clone(),
    };
    statement.set_consistency(consistency);
    statement.set_page_size(SCAN_PAGE);
    let values: Vec<CqlValue> = after.map(text).into_iter().collect();
    let mut out: Vec<(String, Vec<Cell>)> = Vec::new();
    let mut paging = PagingState::start();
    loop {
        let (result, next) = session
            .execute_single_page(&statement, &values, paging)
            .await
            .map_err(|e| failure(&e))?;
        let rows = result.into_rows_result().map_err(bad_result)?;
        for row in rows
            .rows::<(String, String, Option<String>, Option<i32>, Option<i64>)>()
            .map_err(bad_result)?
        {
            let (name, column, value, ttl, written) = row.map_err(bad_result)?;
            let Some(value) = value else { continue };
            let cell = cell(column, value, ttl, written);
            match out.last_mut() {
                Some((last, cells)) if *last == name => cells.push(cell),
                _ => {
                    if out.len() == limit {
                        return Ok(out);
                    }
                    out.push((name, vec![cell]));
                }
            }
        }
        match next {
            PagingStateResponse::HasMorePages { state } => paging = state,
            PagingStateResponse::NoMorePages => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
