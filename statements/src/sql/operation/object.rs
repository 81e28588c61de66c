//! Object writes ([`Command::SetObject`]): one conditional statement, then, only when it wrote
//! nothing, the read of what was in the way.

use alloc::borrow::Cow;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use baton_kernel::model::prefix_end;
use baton_kernel::{Command, Failure, ObjectGuard, Reply};

use super::params::{execute, fetch, internal, present, text};
use super::{Operation, Param, State, Step, Val};
use crate::sql::{Dialect, Kind, Statement, MYSQL_MAX_VALUE_BYTES};

/// The columns of `object_current`: `(object, lock, counter)`.
const OBJECT_CURRENT: &[Kind] = &[Kind::Text, Kind::Text, Kind::Text];

/// Refuses an object value the table cannot hold whole: MariaDB's `value` column is `TEXT`
/// (65,535 bytes). Never truncated: refused before any statement.
pub(super) fn check_value(dialect: Dialect, command: &Command) -> Result<(), Failure> {
    match command {
        Command::SetObject { value, .. }
            if dialect == Dialect::MySql && value.len() > MYSQL_MAX_VALUE_BYTES =>
        {
            Err(Failure::Rejected(format!(
                "the MariaDB lock table holds cell values of up to {MYSQL_MAX_VALUE_BYTES} bytes (its value column is TEXT); this object cell is {} bytes, so it was not written (objects of up to {} bytes fit)",
                value.len(),
                crate::object_limit(Some(Dialect::MySql))
            )))
        }
        _ => Ok(()),
    }
}

/// The reply of an object write that applied: the value written, and the guard's cells as
/// it found them (the held guard's values; none for a free lock).
fn applied(value: &str, guard: &ObjectGuard) -> Reply {
    let (lock, counter) = match guard {
        ObjectGuard::Held {
            value,
            counter_value,
            ..
        } => (Some(value.clone()), Some(counter_value.clone())),
        ObjectGuard::Free { .. } => (None, None),
    };
    Reply::Object {
        applied: true,
        current: Some(value.into()),
        lock,
        counter,
    }
}

impl<'c> Operation<'c> {
    /// The object write's one statement.
    pub(super) fn object(&mut self, stamp: Param<'c>) -> Step<'c> {
        let Command::SetObject {
            row,
            column,
            expected,
            value,
            guard,
            ..
        } = self.command
        else {
            self.unexpected();
            return self.next();
        };
        let guard_params = match guard {
            ObjectGuard::Held {
                column: lock,
                value: lock_value,
                counter,
                counter_value,
            } => vec![
                text(row),
                text(lock),
                text(lock_value),
                text(row),
                text(counter),
                text(counter_value),
            ],
            ObjectGuard::Free { column: lock } => vec![text(row), text(lock)],
        };
        let held = matches!(guard, ObjectGuard::Held { .. });
        self.state = State::Object;
        let Some(prefix) = expected else {
            let statement = if held {
                Statement::ObjectInsertHeld
            } else {
                Statement::ObjectInsertFree
            };
            let mut params = vec![text(row), text(column), text(value), stamp];
            params.extend(guard_params);
            return execute(statement, params);
        };
        let end = prefix_end(prefix);
        let statement = match (held, end.is_some()) {
            (true, true) => Statement::ObjectUpdateHeld,
            (true, false) => Statement::ObjectUpdateHeldFrom,
            (false, true) => Statement::ObjectUpdateFree,
            (false, false) => Statement::ObjectUpdateFreeFrom,
        };
        let mut object = vec![text(value), stamp, text(row), text(column), text(prefix)];
        object.extend(end.map(|e| Param::Text(Cow::Owned(e))));
        let params = if self.dialect == Dialect::MySql && !held {
            // MariaDB's free update names the lock row in its join, before the assignments.
            let mut params = guard_params;
            params.extend(object);
            params
        } else {
            object.extend(guard_params);
            object
        };
        execute(statement, params)
    }

    /// What an object write's statement reported: applied, or the read of what is there next.
    pub(super) fn object_written(&mut self, applied_now: bool) {
        match self.command {
            Command::SetObject { value, guard, .. } if applied_now => {
                self.reply = Some(applied(value, guard));
            }
            // Not applied: the next step reads the cells.
            Command::SetObject { .. } => {}
            _ => self.unexpected(),
        }
    }

    /// The read of the object's, the lock's and the counter's values after an object write
    /// that was not applied.
    pub(super) fn object_current(&mut self) -> Step<'c> {
        let Command::SetObject {
            row, column, guard, ..
        } = self.command
        else {
            self.unexpected();
            return self.next();
        };
        let (lock, counter) = match guard {
            ObjectGuard::Held {
                column: lock,
                counter,
                ..
            } => (lock, counter),
            // No counter: its column is read again, and its value not used.
            ObjectGuard::Free { column: lock } => (lock, lock),
        };
        self.state = State::ObjectCurrent;
        fetch(
            Statement::ObjectCurrent,
            vec![
                text(row),
                text(column),
                text(row),
                text(lock),
                text(row),
                text(counter),
            ],
            OBJECT_CURRENT,
        )
    }

    /// The reply of an object write that was not applied, from `object_current`'s row.
    pub(super) fn object_found(&self, rows: Vec<Vec<Val>>) -> Reply {
        let Command::SetObject { guard, .. } = self.command else {
            return internal("an object's cells read for another command");
        };
        let mut vals = rows.into_iter().next().unwrap_or_default().into_iter();
        let current = present(vals.next());
        let lock = present(vals.next());
        let counter = match guard {
            ObjectGuard::Held { .. } => present(vals.next()),
            ObjectGuard::Free { .. } => None,
        };
        Reply::Object {
            applied: false,
            current,
            lock,
            counter,
        }
    }
}
