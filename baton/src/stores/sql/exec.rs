//! Executing one kernel [`Command`] on a connection: the driver-free
//! [`Operation`](baton_statements::sql::Operation) decides every statement, its parameters and
//! what the rows mean; this loop only runs its steps through sqlx.
//!
//! Stamps: every command that writes gets one stamp, taken from the process's generator
//! ([`next_stamp_after`]) just before its first statement is sent (a [`Command::DeleteVersion`]
//! uses its own); a batch's writes all carry the same stamp, as in the reference table.

use baton_kernel::{Command, Failure, Reply};
use baton_statements::sql::{Done, Operation, Step};

use super::conn::Sealed;
use super::dialect::Statements;
use crate::stores::stamps::next_stamp_after;

/// Why a command did not run: a database error, or a command the table cannot hold.
pub(crate) enum ExecError {
    Sql(sqlx::Error),
    Invalid(Failure),
}

impl From<sqlx::Error> for ExecError {
    fn from(e: sqlx::Error) -> Self {
        ExecError::Sql(e)
    }
}

/// Runs `command` on `conn`, with `given` as its write stamp, or a fresh one from the
/// process's generator when `None` (always, but in tests that play a write arriving late).
/// `own`: `conn` is the store's own, each statement its own transaction (not a caller's).
pub(crate) async fn execute<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    command: &Command,
    given: Option<u64>,
    own: bool,
) -> Result<Reply, ExecError> {
    let stamp = |floor: u64| match given {
        None => next_stamp_after(floor),
        Some(g) if floor == 0 => g,
        Some(g) => g.max(floor.saturating_add(1)),
    };
    let mut op = Operation::new(st.dialect, command, stamp)
        .map_err(ExecError::Invalid)?
        .in_layout(st.layout);
    if own {
        op = op.on_own_connection();
    }
    loop {
        match op.step() {
            Step::Execute { statement, params } => {
                let done = conn.run(st.get(statement), &params).await?;
                op.executed(done);
            }
            Step::Fetch {
                statement,
                params,
                columns,
            } => {
                let rows = conn.fetch(st.get(statement), &params, columns).await?;
                op.fetched(rows);
            }
            Step::Transaction(statements) => {
                let statements: Vec<_> = statements
                    .into_iter()
                    .map(|(statement, params)| (st.get(statement), params))
                    .collect();
                conn.batch(&statements).await?;
                op.executed(Done::default());
            }
            Step::Reply(reply) => return Ok(reply),
        }
    }
}
