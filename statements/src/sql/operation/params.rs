//! Statement parameters, steps and decoded cells shared by the operation's steps.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use baton_kernel::model::prefix_end;
use baton_kernel::strategy::COUNTER_COLUMN;
use baton_kernel::{Cell, ColumnFilter, Command, Failure, ObjectGuard, Reply, Write};

use super::{Kind, Param, Step, Val, CELL, MAX_KEY_BYTES, MAX_TTL_MS};
use crate::sql::Statement;

/// A text column where `''` means "no cell".
pub(super) fn present(v: Option<Val>) -> Option<String> {
    v.map(Val::into_text).filter(|s| !s.is_empty())
}

pub(super) fn internal(what: &str) -> Reply {
    Reply::Failed(Failure::Rejected(format!(
        "internal error in a SQL operation: {what}"
    )))
}

pub(super) fn text(s: &str) -> Param<'_> {
    Param::Text(Cow::Borrowed(s))
}

pub(super) fn owned<'c>(s: &str) -> Param<'c> {
    Param::Text(Cow::Owned(String::from(s)))
}

pub(super) fn execute(statement: Statement, params: Vec<Param<'_>>) -> Step<'_> {
    Step::Execute { statement, params }
}

pub(super) fn fetch<'c>(
    statement: Statement,
    params: Vec<Param<'c>>,
    columns: &'static [Kind],
) -> Step<'c> {
    Step::Fetch {
        statement,
        params,
        columns,
    }
}

/// The parameters of `put` and `insert_if_absent`: `(row, cell, value, ttl_ms, stamp)`.
pub(super) fn put<'c>(
    row: &'c str,
    column: &'c str,
    value: &'c str,
    ttl: Option<Duration>,
    stamp: Param<'c>,
) -> Vec<Param<'c>> {
    vec![
        text(row),
        text(column),
        text(value),
        Param::Int(ttl_ms(ttl)),
        stamp,
    ]
}

/// The read of `filter`'s cells of `row`.
pub(super) fn read_step<'c>(row: &'c str, filter: &'c ColumnFilter) -> Step<'c> {
    match filter {
        ColumnFilter::All => fetch(Statement::ReadAll, vec![text(row)], CELL),
        ColumnFilter::Exact(c) => fetch(Statement::ReadExact, vec![text(row), text(c)], CELL),
        ColumnFilter::Prefix(p) => match prefix_end(p) {
            Some(end) => fetch(
                Statement::ReadRange,
                vec![text(row), text(p), Param::Text(Cow::Owned(end))],
                CELL,
            ),
            None => fetch(Statement::ReadFrom, vec![text(row), text(p)], CELL),
        },
    }
}

/// A cell from `(cell, value, ms left, stamp)`.
pub(super) fn cell(row: Vec<Val>) -> Cell {
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

/// The cells of a MariaDB one-row read of many cells, whose table rows are `(cell, value,
/// ms left, stamp, own, counter, counter stamp)`: a row's own cell when `own` is true, and
/// the counter `_LOCK_` (its value `counter`, no TTL) when `counter stamp` is not NULL; in the
/// order of their names' bytes, as the table's binary collation sorts them.
pub(super) fn split_cells(rows: Vec<Vec<Val>>) -> Vec<Cell> {
    let mut cells = Vec::with_capacity(rows.len() + 1);
    for row in rows {
        let mut vals = row.into_iter();
        let own: Vec<Val> = vals.by_ref().take(4).collect();
        let is_own = vals.next().and_then(|v| v.int()).is_some_and(|v| v != 0);
        let counter = vals.next().map(Val::into_text).unwrap_or_default();
        if let Some(stamp) = vals.next().and_then(|v| v.int()) {
            cells.push(Cell {
                column: String::from(COUNTER_COLUMN),
                value: counter,
                ttl_remaining: None,
                stamp: u64::try_from(stamp).unwrap_or(0),
            });
        }
        if is_own {
            cells.push(cell(own));
        }
    }
    cells.sort_by(|a, b| a.column.as_bytes().cmp(b.column.as_bytes()));
    cells
}

/// A TTL in whole milliseconds, rounded up; `None` for no TTL or one past a century.
pub fn ttl_ms(ttl: Option<Duration>) -> Option<i64> {
    let ttl = ttl?;
    let ms = ttl.as_millis() + u128::from(ttl.subsec_nanos() % 1_000_000 != 0);
    i64::try_from(ms).ok().filter(|ms| *ms <= MAX_TTL_MS)
}

/// A stamp as the `stamp` column's signed 64-bit integer. Every stamp a generator of wall-clock
/// microseconds gives fits (they reach 2^63 in the year 294 247); a larger one, which only a
/// [`Command::DeleteVersion`] could carry, means "every version" and becomes `i64::MAX`.
pub(super) fn sql_stamp(stamp: u64) -> i64 {
    i64::try_from(stamp).unwrap_or(i64::MAX)
}

/// Rejects rows and columns longer than the table's key columns hold.
pub(super) fn check_keys(command: &Command) -> Result<(), Failure> {
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
        Command::SetObject { column, guard, .. } => {
            keys.push(column);
            match guard {
                ObjectGuard::Held {
                    column: lock,
                    counter,
                    ..
                } => keys.extend([lock.as_str(), counter.as_str()]),
                ObjectGuard::Free { column: lock } => keys.push(lock),
            }
        }
        _ => {}
    }
    match keys.into_iter().find(|k| k.len() > MAX_KEY_BYTES) {
        Some(k) => Err(Failure::Rejected(format!(
            "a SQL lock table holds row and column names of up to {MAX_KEY_BYTES} bytes; got one of {} bytes",
            k.len()
        ))),
        None => Ok(()),
    }
}
