//! Decoding Cassandra's results into the kernel's replies.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use baton_kernel::{Cell, Command, Failure, ObjectGuard, Reply};

use super::{Rows, Val};

pub(super) fn bad_result(what: &str) -> Failure {
    Failure::Rejected(format!("unexpected result from Cassandra: {what}"))
}

/// The live cells of a read (`cell, value, TTL(value), WRITETIME(value)`) or a scan (the same
/// after `lock_name`), each with its row name (empty for a read).
pub(super) fn decode_cells(result: &Rows, scan: bool) -> Result<Vec<(String, Cell)>, Failure> {
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
pub(super) fn conditional(result: &Rows) -> Result<Reply, Failure> {
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
pub(super) fn guarded(result: &Rows, command: &Command) -> Result<Reply, Failure> {
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

/// The reply of an object write's batch ([`Command::SetObject`]): applied, the value written
/// and the guard's values; otherwise the `value` of each conditioned row as the batch found
/// it (a row the result does not name, or names with a NULL value, has no live cell).
pub(super) fn object(result: &Rows, command: &Command) -> Result<Reply, Failure> {
    let Command::SetObject {
        column,
        value,
        guard,
        ..
    } = command
    else {
        return Err(bad_result("an object write's batch for another command"));
    };
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
    let (lock_column, counter_column) = match guard {
        ObjectGuard::Held {
            column, counter, ..
        } => (column, Some(counter)),
        ObjectGuard::Free { column } => (column, None),
    };
    if applied {
        let (lock, counter) = match guard {
            ObjectGuard::Held {
                value,
                counter_value,
                ..
            } => (Some(value.clone()), Some(counter_value.clone())),
            ObjectGuard::Free { .. } => (None, None),
        };
        return Ok(Reply::Object {
            applied,
            current: Some(value.clone()),
            lock,
            counter,
        });
    }
    let (Some(cell_at), Some(value_at)) = (at("cell"), at("value")) else {
        return Ok(Reply::Object {
            applied,
            current: None,
            lock: None,
            counter: None,
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
    Ok(Reply::Object {
        applied,
        current: value_of(column),
        lock: value_of(lock_column),
        counter: counter_column.and_then(|c| value_of(c)),
    })
}
