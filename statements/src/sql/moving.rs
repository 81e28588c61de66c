//! A table `baton migrate` is moving (`docs/one-row-claim.md`, "Phase 2, revised"): it has the
//! `fence` columns and no layout flag yet, so some names keep their counter in a row of its
//! own and others, moved, in their `lock` row, with a marker ([`MARKER`]) left in the counter
//! row. A host that knows it ([`is_moving`]) runs each command as [`moving_route`] says, and
//! an [`Operation`](super::Operation) told so (`moving()`) does the rest: a command that
//! writes or guards by the counter is tried with the two-row statements and, when its reply
//! shows the marker ([`shows_marker`]), run again with the one-row ones; every other command
//! runs with the moving set ([`Statements::moving`](super::Statements::moving)), right for
//! both kinds of name.

use alloc::format;
use alloc::string::String;

use baton_kernel::strategy::COUNTER_COLUMN;
use baton_kernel::{Command, ObjectGuard, Reply, Write};

use super::layout::{MARKER, ONE_ROW_COLUMNS};

/// How a command runs on a table being moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// The two-row statements, then the one-row ones if the reply shows the marker.
    TwoRowsFirst,
    /// The moving set.
    Moving,
    /// Not run: a plain write of the counter (only an earlier build's blind write sends one),
    /// which answers without showing a marker and would set one back.
    Refused(String),
}

/// The route of `command` on a table being moved.
pub fn moving_route(command: &Command) -> Route {
    let counter = |c: &str| c == COUNTER_COLUMN;
    let refused = || {
        Route::Refused(format!(
            "the lock table is being moved to one row (baton migrate): a plain write of the fencing counter {COUNTER_COLUMN:?} is refused"
        ))
    };
    match command {
        Command::Claim { .. } | Command::GuardedSet { .. } => Route::TwoRowsFirst,
        Command::CompareAndSet { column, .. } | Command::InsertIfAbsent { column, .. }
            if counter(column) =>
        {
            Route::TwoRowsFirst
        }
        Command::SetObject {
            guard: ObjectGuard::Held { .. },
            ..
        } => Route::TwoRowsFirst,
        Command::Put { column, .. }
        | Command::Delete { column, .. }
        | Command::DeleteVersion { column, .. }
            if counter(column) =>
        {
            refused()
        }
        Command::Batch { writes, .. }
            if writes.iter().any(|w| match w {
                Write::Put { column, .. } | Write::Delete { column } => counter(column),
            }) =>
        {
            refused()
        }
        _ => Route::Moving,
    }
}

/// Whether a table with layout flag `flag` and columns `columns` is being moved: no flag, and
/// both `fence` columns (which only `migrate` adds to a two-row table).
pub fn is_moving(flag: Option<&str>, columns: &[String]) -> bool {
    flag.is_none()
        && ONE_ROW_COLUMNS
            .iter()
            .all(|c| columns.iter().any(|p| p.eq_ignore_ascii_case(c)))
}

/// Whether `reply` to `command` carries the marker as a counter's value: the counter as a claim, a guarded
/// set or an object write found it, the current value of a conditional of the counter, a
/// counter cell read.
pub fn shows_marker(command: &Command, reply: &Reply) -> bool {
    let marker = |v: &Option<String>| v.as_deref() == Some(MARKER);
    match reply {
        Reply::Guarded { guard, .. } => marker(guard),
        // A conditional's current value is the counter's only when the command is of it (a
        // user's cell may hold any text).
        Reply::Conditional { current, .. } => match command {
            Command::CompareAndSet { column, .. } | Command::InsertIfAbsent { column, .. } => {
                column == COUNTER_COLUMN && marker(current)
            }
            _ => false,
        },
        Reply::Object { counter, .. } => marker(counter),
        Reply::Cells(cells) => cells
            .iter()
            .any(|c| c.column == COUNTER_COLUMN && c.value == MARKER),
        Reply::Rows(rows) => rows.iter().any(|(_, cells)| {
            cells
                .iter()
                .any(|c| c.column == COUNTER_COLUMN && c.value == MARKER)
        }),
        _ => false,
    }
}
