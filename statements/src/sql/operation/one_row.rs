//! The commands a one-row table ([`Layout::OneRow`](crate::sql::Layout)) cannot hold: it keeps
//! each name's fencing counter `_LOCK_` in the columns of its `lock` row, without a TTL, and
//! claims, and guards changes of, only unique insert's pair of cells (a statement each, which
//! a general one would slow: PostgreSQL prepares every branch of a statement on every call). The kernel sends none of these (the counter has
//! no TTL and is never removed, `kernel/src/reserved.rs`); a store answers them
//! [`Failure::Rejected`](baton_kernel::Failure::Rejected) rather than store something else.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baton_kernel::strategy::unique::LOCK_COLUMN;
use baton_kernel::strategy::COUNTER_COLUMN;
use baton_kernel::{Command, ObjectGuard, Write};

use super::{Param, Step};
use crate::sql::{one_row_mysql, one_row_sqlite, Dialect, Statement};

/// Why `command` cannot run on a one-row table, if it cannot.
pub(super) fn one_row_refusal(command: &Command) -> Option<String> {
    let counter = |c: &str| c == COUNTER_COLUMN;
    let with_ttl = match command {
        Command::Put { column, ttl, .. }
        | Command::InsertIfAbsent { column, ttl, .. }
        | Command::CompareAndSet {
            column,
            ttl,
            new: Some(_),
            ..
        } => counter(column) && ttl.is_some(),
        Command::Batch { writes, .. } => writes
            .iter()
            .any(|w| matches!(w, Write::Put { column, ttl: Some(_), .. } if counter(column))),
        _ => false,
    };
    if with_ttl {
        return Some(format!(
            "the one-row lock table keeps the fencing counter {COUNTER_COLUMN:?} without a TTL; a write of it with one is refused"
        ));
    }
    let removed = match command {
        Command::Delete { column, .. }
        | Command::DeleteVersion { column, .. }
        | Command::CompareAndSet {
            column, new: None, ..
        }
        | Command::GuardedSet { column, .. }
        | Command::Vacate { column, .. } => counter(column),
        Command::Batch { writes, .. } => writes
            .iter()
            .any(|w| matches!(w, Write::Delete { column } if counter(column))),
        _ => false,
    };
    if removed {
        return Some(format!(
            "the one-row lock table never removes or guards a change of the fencing counter {COUNTER_COLUMN:?}"
        ));
    }
    match command {
        Command::Claim {
            column, counter, ..
        } if column != LOCK_COLUMN || counter != COUNTER_COLUMN => Some(format!(
            "the one-row lock table claims only the cells {LOCK_COLUMN:?} and {COUNTER_COLUMN:?}, not {column:?} and {counter:?}"
        )),
        Command::GuardedSet { column, guard, .. }
            if column != LOCK_COLUMN || guard != COUNTER_COLUMN =>
        {
            Some(format!(
                "the one-row lock table guards only a change of {LOCK_COLUMN:?} by {COUNTER_COLUMN:?}, not of {column:?} by {guard:?}"
            ))
        }
        // An object write's cells are rows of their own, but its counter is `fence`.
        Command::SetObject { column, guard, .. } => {
            let (lock, guard_counter) = match guard {
                ObjectGuard::Held {
                    column, counter, ..
                } => (column, Some(counter)),
                ObjectGuard::Free { column } => (column, None),
            };
            if counter(column) || counter(lock) {
                Some(format!(
                    "the one-row lock table keeps the fencing counter {COUNTER_COLUMN:?} in the columns of the {LOCK_COLUMN:?} row: an object write may not write it, nor guard by it as a lock cell"
                ))
            } else if guard_counter.is_some_and(|c| !counter(c)) {
                Some(format!(
                    "the one-row lock table guards an object write only by the fencing counter {COUNTER_COLUMN:?}, not by {:?}",
                    guard_counter.map(String::as_str).unwrap_or_default()
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `step` with its parameters as `dialect`'s one-row statement takes them (MariaDB's or
/// SQLite's): in the order of its placeholders, a parameter repeated where the statement uses
/// it twice (`one_row_mysql::binds`, `one_row_sqlite::binds`).
pub(super) fn bound(dialect: Dialect, step: Step<'_>) -> Step<'_> {
    let binds = match dialect {
        Dialect::MySql => one_row_mysql::binds,
        Dialect::Sqlite => one_row_sqlite::binds,
        Dialect::Postgres => return step,
    };
    let reorder = |statement: Statement, params| in_order(binds(statement), params);
    match step {
        Step::Execute { statement, params } => Step::Execute {
            statement,
            params: reorder(statement, params),
        },
        Step::Fetch {
            statement,
            params,
            columns,
        } => Step::Fetch {
            statement,
            params: reorder(statement, params),
            columns,
        },
        Step::Transaction(statements) => Step::Transaction(
            statements
                .into_iter()
                .map(|(statement, params)| (statement, reorder(statement, params)))
                .collect(),
        ),
        reply @ Step::Reply(_) => reply,
    }
}

/// `params` in the order `order` gives (the statement's placeholders), or as they are.
fn in_order<'c>(order: Option<&'static [u8]>, params: Vec<Param<'c>>) -> Vec<Param<'c>> {
    match order {
        Some(order) => order
            .iter()
            .map(|&n| {
                usize::from(n)
                    .checked_sub(1)
                    .and_then(|i| params.get(i))
                    .cloned()
                    .unwrap_or(Param::Int(None))
            })
            .collect(),
        None => params,
    }
}
