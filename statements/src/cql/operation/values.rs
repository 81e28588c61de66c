//! The values of the operation's statements.

use alloc::borrow::Cow;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use baton_kernel::{Failure, Reply, SerialConsistency};

use super::{Level, Step, Value};
use crate::cql::{ttl_seconds, Statement};

pub(super) fn internal(what: &str) -> Reply {
    Reply::Failed(Failure::Rejected(format!(
        "internal error in a Cassandra operation: {what}"
    )))
}

pub(super) fn text(s: &str) -> Value<'_> {
    Value::Text(Cow::Borrowed(s))
}

pub(super) fn execute<'c>(
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
/// gives fits; a larger one, which only a
/// [`Command::DeleteVersion`](baton_kernel::Command::DeleteVersion) could carry, means "every
/// version" and becomes `i64::MAX`.
pub(super) fn cql_stamp(stamp: u64) -> i64 {
    i64::try_from(stamp).unwrap_or(i64::MAX)
}

/// The values of a conditional write: `TTL ?`, `value = ?`, the key.
pub(super) fn put_values<'c>(
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
pub(super) fn stamped_put<'c>(
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
