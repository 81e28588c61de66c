//! Object writes ([`Command::SetObject`]): one conditional batch on the row's partition.

use alloc::borrow::Cow;
use alloc::vec;

use baton_kernel::model::prefix_end;
use baton_kernel::{Command, Failure, ObjectGuard, Reply};

use super::values::{internal, put_values, text};
use super::{Operation, Step, Value};
use crate::cql::Statement;

impl<'c> Operation<'c> {
    /// The batch of an object write: the object's cell, conditional on its value, and a probe
    /// of each guard cell, conditional on its value, that writes only the `probe` column.
    pub(super) fn object(&mut self) -> Step<'c> {
        let Command::SetObject {
            row,
            column,
            expected,
            value,
            guard,
            serial,
            consistency,
        } = self.command
        else {
            return Step::Reply(internal("an object write for another command"));
        };
        if let Some(why) = self.probe_refusal.take() {
            self.finished = true;
            return Step::Reply(Reply::Failed(Failure::Rejected(why)));
        }
        let object = match expected {
            // No TTL: insert-if-absent with TTL 0.
            None => (
                Statement::InsertIfAbsent,
                put_values(row, column, value, None),
            ),
            Some(prefix) => {
                let mut values = vec![text(value), text(row), text(column), text(prefix)];
                match prefix_end(prefix) {
                    Some(end) => {
                        values.push(Value::Text(Cow::Owned(end)));
                        (Statement::ObjectUpdate, values)
                    }
                    None => (Statement::ObjectUpdateFrom, values),
                }
            }
        };
        let mut statements = vec![object];
        match guard {
            ObjectGuard::Held {
                column: lock,
                value: lock_value,
                counter,
                counter_value,
            } => {
                statements.push((
                    Statement::ProbeValue,
                    vec![text(row), text(lock), text(lock_value)],
                ));
                statements.push((
                    Statement::ProbeValue,
                    vec![text(row), text(counter), text(counter_value)],
                ));
            }
            ObjectGuard::Free { column: lock } => {
                statements.push((Statement::ProbeAbsent, vec![text(row), text(lock)]));
            }
        }
        Step::Batch {
            statements,
            consistency: self.levels.plain(*consistency),
            serial: Some(self.levels.serial(*serial)),
        }
    }
}
