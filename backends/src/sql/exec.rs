//! Executing one kernel [`Command`] on a connection, with the meaning the kernel's
//! [`MemoryTable`](baton_kernel::MemoryTable) gives it. The statements per command are listed
//! in the `sql` module docs; their text is in `dialect.rs`.
//!
//! The `SELECT` after an unapplied conditional only tells the kernel who is in the way; it is
//! informational and may be a moment newer than the conditional itself.
//!
//! Stamps: every command that writes gets one stamp, taken from the process's generator
//! ([`next_stamp`]) just before its first statement is sent (a [`Command::DeleteVersion`] uses
//! its own); a batch's writes all carry the same stamp, as in the reference table.

use std::collections::HashMap;
use std::time::Duration;

use baton_kernel::{Cell, ColumnFilter, Command, Reply, Write};

use super::conn::{Arg, Kind, Sealed, Val};
use super::dialect::Statements;
use crate::stamps::{next_stamp, next_stamp_after};
use baton_kernel::model::prefix_end;

/// The longest row or column name the SQL lock table holds, in bytes.
pub(crate) const MAX_KEY_BYTES: usize = 255;

/// TTLs longer than this (about a century) are stored without expiry: rounding a TTL up is
/// allowed, and every database's timestamp range is then safe.
const MAX_TTL_MS: i64 = 100 * 366 * 24 * 3_600 * 1_000;

/// Why a command did not run: a database error, or an argument the table cannot hold.
pub(crate) enum ExecError {
    Sql(sqlx::Error),
    Invalid(String),
}

impl From<sqlx::Error> for ExecError {
    fn from(e: sqlx::Error) -> Self {
        ExecError::Sql(e)
    }
}

/// Runs `command` on `conn`, with `given` as its write stamp, or a fresh one from
/// [`next_stamp`] when `None` (always, but in tests that play a write arriving late).
pub(crate) async fn execute<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    command: &Command,
    given: Option<u64>,
) -> Result<Reply, ExecError> {
    check_keys(command)?;
    let stamp = || sql_stamp(given.unwrap_or_else(next_stamp));
    match command {
        Command::Read { row, filter, .. } => Ok(Reply::Cells(read(conn, st, row, filter).await?)),
        Command::Put {
            row,
            column,
            value,
            ttl,
            ..
        } => {
            let args = [
                Arg::Text(row),
                Arg::Text(column),
                Arg::Text(value),
                Arg::Int(ttl_ms(*ttl)),
                Arg::Int(Some(stamp())),
            ];
            conn.run(&st.put, &args).await?;
            Ok(Reply::Written)
        }
        Command::Delete { row, column, .. } => {
            let args = [Arg::Text(row), Arg::Text(column), Arg::Int(Some(stamp()))];
            conn.run(&st.delete, &args).await?;
            Ok(Reply::Written)
        }
        Command::DeleteVersion {
            row,
            column,
            stamp: version,
            ..
        } => {
            let args = [
                Arg::Text(row),
                Arg::Text(column),
                Arg::Int(Some(sql_stamp(*version))),
            ];
            conn.run(&st.delete, &args).await?;
            Ok(Reply::Written)
        }
        Command::InsertIfAbsent {
            row,
            column,
            value,
            ttl,
            ..
        } => {
            let args = [
                Arg::Text(row),
                Arg::Text(column),
                Arg::Text(value),
                Arg::Int(ttl_ms(*ttl)),
                Arg::Int(Some(stamp())),
            ];
            let done = conn.run(&st.insert_if_absent, &args).await?;
            conditional(conn, st, row, column, st.applied(done.rows, done.insert_id)).await
        }
        Command::CompareAndSet {
            row,
            column,
            expected,
            new,
            ttl,
            ..
        } => {
            let done = match new {
                Some(new) => {
                    let args = [
                        Arg::Text(new),
                        Arg::Int(ttl_ms(*ttl)),
                        Arg::Int(Some(stamp())),
                        Arg::Text(row),
                        Arg::Text(column),
                        Arg::Text(expected),
                    ];
                    conn.run(&st.cas_update, &args).await?
                }
                None => {
                    let args = [Arg::Text(row), Arg::Text(column), Arg::Text(expected)];
                    conn.run(&st.cas_delete, &args).await?
                }
            };
            conditional(conn, st, row, column, done.rows > 0).await
        }
        Command::Batch {
            row, writes, after, ..
        } => {
            // One stamp for every write, above the newest stamp the writer saw (`after`),
            // applied in order: a put after a delete of the same cell recreates it, a second put
            // of a cell the batch already wrote changes nothing (its stamp is not newer), exactly
            // as in the reference table.
            let stamp = Some(sql_stamp(
                given
                    .map(|g| g.max(after.saturating_add(1)))
                    .unwrap_or_else(|| next_stamp_after(*after)),
            ));
            let ttls: Vec<Option<i64>> = writes
                .iter()
                .map(|w| match w {
                    Write::Put { ttl, .. } => ttl_ms(*ttl),
                    Write::Delete { .. } => None,
                })
                .collect();
            let statements: Vec<_> = writes
                .iter()
                .zip(&ttls)
                .map(|(w, ttl)| match w {
                    Write::Put { column, value, .. } => (
                        &st.put,
                        vec![
                            Arg::Text(row),
                            Arg::Text(column),
                            Arg::Text(value),
                            Arg::Int(*ttl),
                            Arg::Int(stamp),
                        ],
                    ),
                    Write::Delete { column } => (
                        &st.delete,
                        vec![Arg::Text(row), Arg::Text(column), Arg::Int(stamp)],
                    ),
                })
                .collect();
            if !statements.is_empty() {
                conn.batch(&statements).await?;
            }
            Ok(Reply::Written)
        }
        Command::Purge { row } => {
            let kinds = [Kind::Text, Kind::Text];
            let rows = match row {
                Some(row) => conn.fetch(&st.purge_row, &[Arg::Text(row)], &kinds).await?,
                None => conn.fetch(&st.purge_all, &[], &kinds).await?,
            };
            let mut removed: Vec<(String, String)> = rows
                .into_iter()
                .map(|r| {
                    let mut r = r.into_iter().map(Val::into_text);
                    (r.next().unwrap_or_default(), r.next().unwrap_or_default())
                })
                .collect();
            removed.sort();
            Ok(Reply::Purged(removed))
        }
        Command::Scan { after, limit, .. } => {
            Ok(Reply::Rows(scan(conn, st, after.as_deref(), *limit).await?))
        }
        other => Err(ExecError::Invalid(format!(
            "the SQL store does not know the command {other:?}"
        ))),
    }
}

/// The reply to a conditional command: applied, or not with the live value now in the way.
async fn conditional<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    row: &str,
    column: &str,
    applied: bool,
) -> Result<Reply, ExecError> {
    if applied {
        return Ok(Reply::Conditional {
            applied: true,
            current: None,
        });
    }
    let rows = conn
        .fetch(
            &st.current,
            &[Arg::Text(row), Arg::Text(column)],
            &[Kind::Text],
        )
        .await?;
    let current = rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next())
        .map(Val::into_text);
    Ok(Reply::Conditional {
        applied: false,
        current,
    })
}

async fn read<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    row: &str,
    filter: &ColumnFilter,
) -> Result<Vec<Cell>, ExecError> {
    let kinds = [Kind::Text, Kind::Text, Kind::Int, Kind::Int];
    let rows = match filter {
        ColumnFilter::All => conn.fetch(&st.read_all, &[Arg::Text(row)], &kinds).await?,
        ColumnFilter::Exact(c) => {
            let args = [Arg::Text(row), Arg::Text(c)];
            conn.fetch(&st.read_exact, &args, &kinds).await?
        }
        ColumnFilter::Prefix(p) => match prefix_end(p) {
            Some(end) => {
                let args = [Arg::Text(row), Arg::Text(p), Arg::Text(&end)];
                conn.fetch(&st.read_range, &args, &kinds).await?
            }
            None => {
                let args = [Arg::Text(row), Arg::Text(p)];
                conn.fetch(&st.read_from, &args, &kinds).await?
            }
        },
    };
    Ok(rows.into_iter().map(cell).collect())
}

/// A cell from `(cell, value, ms left, stamp)` (`(row, …)` rows have the row removed first).
fn cell(row: Vec<Val>) -> Cell {
    let mut vals = row.into_iter();
    let column = vals.next().map(Val::into_text).unwrap_or_default();
    let value = vals.next().map(Val::into_text).unwrap_or_default();
    let ttl_remaining = vals
        .next()
        .and_then(|v| v.int())
        .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
    let stamp = vals
        .next()
        .and_then(|v| v.int())
        .map_or(0, |s| u64::try_from(s).unwrap_or(0));
    Cell {
        column,
        value,
        ttl_remaining,
        stamp,
    }
}

/// Up to `limit` live rows after `after`, with their live cells. A row whose cells all expired
/// between the two statements is left out, and the page is topped up from after it, so that a
/// short page still means the end of the table.
async fn scan<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<(String, Vec<Cell>)>, ExecError> {
    let limit = limit.max(1);
    let mut out: Vec<(String, Vec<Cell>)> = Vec::new();
    let mut after = after.map(str::to_owned);
    while out.len() < limit as usize {
        let want = i64::from(limit) - out.len() as i64;
        let names: Vec<String> = match &after {
            Some(a) => {
                let args = [Arg::Text(a), Arg::Int(Some(want))];
                conn.fetch(&st.scan_after, &args, &[Kind::Text]).await?
            }
            None => {
                conn.fetch(&st.scan_first, &[Arg::Int(Some(want))], &[Kind::Text])
                    .await?
            }
        }
        .into_iter()
        .filter_map(|r| r.into_iter().next().map(Val::into_text))
        .collect();
        let (Some(first), Some(last)) = (names.first(), names.last()) else {
            break;
        };
        let kinds = [Kind::Text, Kind::Text, Kind::Text, Kind::Int, Kind::Int];
        let args = [Arg::Text(first), Arg::Text(last)];
        let rows = conn.fetch(&st.scan_cells, &args, &kinds).await?;
        let mut by_name: HashMap<String, Vec<Cell>> = HashMap::new();
        for r in rows {
            let mut vals = r.into_iter();
            let name = vals.next().map(Val::into_text).unwrap_or_default();
            by_name.entry(name).or_default().push(cell(vals.collect()));
        }
        for name in &names {
            if let Some(cells) = by_name.remove(name) {
                out.push((name.clone(), cells));
            }
        }
        if (names.len() as i64) < want {
            break;
        }
        after = names.last().cloned();
    }
    Ok(out)
}

/// A TTL in whole milliseconds, rounded up; `None` for no TTL or one past [`MAX_TTL_MS`].
pub(crate) fn ttl_ms(ttl: Option<Duration>) -> Option<i64> {
    let ttl = ttl?;
    let ms = ttl.as_millis() + u128::from(ttl.subsec_nanos() % 1_000_000 != 0);
    i64::try_from(ms).ok().filter(|ms| *ms <= MAX_TTL_MS)
}

/// A stamp as the `stamp` column's signed 64-bit integer. Every stamp the generator gives fits
/// (microseconds since 1970 reach 2^63 in the year 294 247); a larger one, which only a
/// [`Command::DeleteVersion`] could carry, means "every version" and becomes `i64::MAX`.
fn sql_stamp(stamp: u64) -> i64 {
    i64::try_from(stamp).unwrap_or(i64::MAX)
}

/// Rejects rows and columns longer than the table's key columns hold.
fn check_keys(command: &Command) -> Result<(), ExecError> {
    let mut keys: Vec<&str> = command.row().into_iter().collect();
    match command {
        Command::Put { column, .. }
        | Command::Delete { column, .. }
        | Command::DeleteVersion { column, .. }
        | Command::InsertIfAbsent { column, .. }
        | Command::CompareAndSet { column, .. } => keys.push(column),
        Command::Read {
            filter: ColumnFilter::Exact(c) | ColumnFilter::Prefix(c),
            ..
        } => keys.push(c),
        Command::Batch { writes, .. } => keys.extend(writes.iter().map(|w| match w {
            Write::Put { column, .. } | Write::Delete { column } => column.as_str(),
        })),
        _ => {}
    }
    match keys.into_iter().find(|k| k.len() > MAX_KEY_BYTES) {
        Some(k) => Err(ExecError::Invalid(format!(
            "a SQL lock table holds row and column names of up to {MAX_KEY_BYTES} bytes; got one of {} bytes",
            k.len()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_milliseconds() {
        assert_eq!(ttl_ms(None), None);
        assert_eq!(ttl_ms(Some(Duration::from_millis(5))), Some(5));
        assert_eq!(ttl_ms(Some(Duration::from_micros(5_001))), Some(6));
        assert_eq!(ttl_ms(Some(Duration::from_nanos(1))), Some(1));
        assert_eq!(ttl_ms(Some(Duration::MAX)), None);
    }

    #[test]
    fn long_keys_are_refused() {
        let read = |filter| Command::Read {
            row: "r".into(),
            filter,
            consistency: baton_kernel::ReadConsistency::Plain(Default::default()),
        };
        assert!(check_keys(&read(ColumnFilter::Prefix("x".repeat(255)))).is_ok());
        assert!(check_keys(&read(ColumnFilter::Prefix("x".repeat(256)))).is_err());
    }
}
