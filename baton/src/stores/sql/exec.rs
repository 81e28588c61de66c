//! Executing one kernel [`Command`] on a connection: the driver-free
//! [`Operation`](baton_statements::sql::Operation) decides every statement, its parameters and
//! what the rows mean; this loop only runs its steps through sqlx.
//!
//! Stamps: every command that writes gets one stamp, taken from the process's generator
//! ([`next_stamp_after`]) just before its first statement is sent (a [`Command::DeleteVersion`]
//! uses its own); a batch's writes all carry the same stamp, as in the reference table.

use std::time::Instant;

use baton_kernel::{Command, Failure, Reply};
pub(crate) use baton_statements::sql::TableState;
use baton_statements::sql::{
    names_a_migrate_guard, Done, Layout, Next, Operation, Outcome, StatementSet, Step,
};

use super::conn::Sealed;
use super::dialect::StatementSets;
use crate::stores::stamps::next_stamp_after;

/// How a command runs: the store's statement sets, its table, and the table's layout as last
/// read ([`TableState`]).
pub(crate) struct Plan<'a> {
    pub sets: &'a StatementSets,
    pub table: &'a str,
    pub state: &'a TableState,
}

/// Milliseconds of a clock that does not go back, for [`TableState::take_refresh`].
pub(crate) fn now_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
}

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
    plan: &Plan<'_>,
    command: &Command,
    given: Option<u64>,
    own: bool,
) -> Result<Reply, ExecError> {
    let stamp = |floor: u64| match given {
        None => next_stamp_after(floor),
        Some(g) if floor == 0 => g,
        Some(g) => g.max(floor.saturating_add(1)),
    };
    let ran = plan.state.get();
    let first = run(conn, plan, command, &stamp, own, ran).await;
    // The table may have changed under the store (`migrate` moved a name, or finished): what
    // to do is decided once for every host ([`TableState::after_run`]).
    let outcome = match &first {
        Ok(reply) => Outcome::Replied(reply),
        Err(ExecError::Sql(sqlx::Error::Database(db)))
            if names_a_migrate_guard(db.message(), plan.table) =>
        {
            Outcome::MigrateGuard
        }
        Err(_) => Outcome::Failed,
    };
    // Boxed, the read and the rerun: rare paths, kept out of every command's future.
    match plan.state.after_run(command, ran, outcome, !own, now_ms) {
        Next::Answer => first,
        Next::ReadLayout => {
            // Recorded, or due again, by the read itself.
            let _ = Box::pin(reread(conn, plan)).await;
            first
        }
        Next::ReadLayoutThenRerun => {
            let reading = Box::pin(reread(conn, plan)).await;
            match plan.state.rerun_in(command, &reading) {
                Some(route) => Box::pin(run(conn, plan, command, &stamp, own, route)).await,
                None => first,
            }
        }
    }
}

/// The table's layout read again on `conn` and recorded (a failure leaves it due for a later
/// command).
pub(crate) async fn reread<C: Sealed + ?Sized>(
    conn: &mut C,
    plan: &Plan<'_>,
) -> Result<(Layout, bool), Failure> {
    let st = plan.sets.get(StatementSet::TwoRows);
    let reading = super::schema::read_layout(conn, st, plan.table).await;
    plan.state.read(&reading);
    match &reading {
        Ok((layout, moving)) => {
            tracing::info!(table = %plan.table, ?layout, moving, "lock table layout read again");
        }
        Err(f) => {
            tracing::warn!(table = %plan.table, error = %f.message(), "reading the lock table's layout again failed");
        }
    }
    reading
}

/// One run of `command` with the statements of `layout` (routed, when `moving`).
async fn run<C: Sealed + ?Sized>(
    conn: &mut C,
    plan: &Plan<'_>,
    command: &Command,
    stamp: &(impl Fn(u64) -> u64 + Sync),
    own: bool,
    (layout, moving): (Layout, bool),
) -> Result<Reply, ExecError> {
    let sets = plan.sets;
    let mut op = Operation::new(sets.dialect(), command, stamp)
        .map_err(ExecError::Invalid)?
        .in_layout(layout);
    if moving {
        op = op.moving();
    }
    if own {
        op = op.on_own_connection();
    }
    loop {
        let step = op.step();
        let st = sets.get(op.statement_set());
        match step {
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
            Step::Reply(reply) => {
                if op.met_marker() {
                    plan.state.due();
                }
                return Ok(reply);
            }
        }
    }
}
