//! Executing one kernel [`Command`] on a connection: the driver-free
//! [`Operation`](baton_statements::sql::Operation) decides every statement, its parameters and
//! what the rows mean; this loop only runs its steps through sqlx.
//!
//! Stamps: every command that writes gets one stamp, taken from the process's generator
//! ([`next_stamp_after`]) just before its first statement is sent (a [`Command::DeleteVersion`]
//! uses its own); a batch's writes all carry the same stamp, as in the reference table.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use baton_kernel::{Command, Failure, Reply};
use baton_statements::sql::{
    moving_route, shows_marker, Done, Layout, Operation, Route, StatementSet, Step,
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

/// The table's layout as a store last read it: two rows, being moved, or one row, in that
/// order only (`baton migrate` moves a table forward, never back, so an older reading, from a
/// slow check or a caller's transaction's snapshot, never takes a store back). One value, so
/// that a command never sees half of a change.
#[derive(Debug, Default)]
pub(crate) struct TableState {
    /// 0: two rows; 1: being moved; 2: one row.
    stage: AtomicU8,
    /// A command met a moved name's marker since the layout was last read.
    pub(crate) refresh_due: AtomicBool,
    last_refresh: std::sync::Mutex<Option<std::time::Instant>>,
}

impl TableState {
    /// The layout, and whether the table is being moved.
    pub(crate) fn get(&self) -> (Layout, bool) {
        match self.stage.load(Ordering::Acquire) {
            0 => (Layout::TwoRows, false),
            1 => (Layout::TwoRows, true),
            _ => (Layout::OneRow, false),
        }
    }

    pub(crate) fn layout(&self) -> Layout {
        self.get().0
    }

    /// Records a reading; one older than what is known changes nothing. Returns `layout`.
    pub(crate) fn set(&self, layout: Layout, moving: bool) -> Layout {
        let stage = match (layout, moving) {
            (Layout::OneRow, _) => 2,
            (Layout::TwoRows, true) => 1,
            (Layout::TwoRows, false) => 0,
        };
        self.stage.fetch_max(stage, Ordering::AcqRel);
        layout
    }

    /// Whether a second has passed since the last read (and if so, that one starts now).
    pub(crate) fn may_refresh(&self) -> bool {
        let mut last = self.last_refresh.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            return false;
        }
        *last = Some(now);
        true
    }
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
    let (layout, moving) = plan.state.get();
    let first = run(conn, plan, command, &stamp, own, layout, moving).await;
    // The table changed under the store: `migrate` moved a name (a store that read the table
    // as two-row before the columns were added meets its marker), or finished (the guard it
    // made with the flag refuses a counter row that a store still in two rows would make).
    // The store reads the layout again at once, and runs again a command that applied nothing
    // when meeting either (one that writes or guards by the counter); any other fails this
    // once, closed (a marker is no counter).
    let changed = match &first {
        Ok(reply) => !moving && layout == Layout::TwoRows && shows_marker(command, reply),
        Err(ExecError::Sql(e)) => layout == Layout::TwoRows && names_the_flag_guard(e, plan.table),
        Err(ExecError::Invalid(_)) => false,
    };
    // In a caller's transaction the layout is read later, on a connection of the store's own
    // (an error has aborted a PostgreSQL transaction, and its snapshot may be old).
    if changed && !own {
        plan.state.refresh_due.store(true, Ordering::Relaxed);
    }
    // A command that met a moved name (routing): the layout read again on this connection
    // (at most once a second; the flag may be there now).
    if own && !changed && plan.state.refresh_due.load(Ordering::Relaxed) && plan.state.may_refresh()
    {
        plan.state.refresh_due.store(false, Ordering::Relaxed);
        Box::pin(reread(conn, plan)).await;
    }
    if changed && own {
        // Boxed, as the read: rare paths, kept out of every command's future.
        if let Some((layout, moving)) = Box::pin(reread(conn, plan)).await {
            if (moving || layout == Layout::OneRow) && moving_route(command) == Route::TwoRowsFirst
            {
                let moving = moving && layout == Layout::TwoRows;
                return Box::pin(run(conn, plan, command, &stamp, own, layout, moving)).await;
            }
        }
    }
    first
}

/// The table's layout read again on `conn` and recorded; a failure leaves it due for the next
/// command.
pub(crate) async fn reread<C: Sealed + ?Sized>(
    conn: &mut C,
    plan: &Plan<'_>,
) -> Option<(Layout, bool)> {
    let st = plan.sets.get(StatementSet::TwoRows);
    match super::schema::read_layout(conn, st, plan.table).await {
        Ok((layout, moving)) => {
            plan.state.set(layout, moving);
            tracing::info!(table = %plan.table, ?layout, moving, "lock table layout read again");
            Some((layout, moving))
        }
        Err(f) => {
            plan.state.refresh_due.store(true, Ordering::Relaxed);
            tracing::warn!(table = %plan.table, error = %f.message(), "reading the lock table's layout again failed");
            None
        }
    }
}

/// Whether `e` is the refusal of the guard `baton migrate` makes with the layout flag (a
/// counter row made in a table whose counters are in its lock rows): PostgreSQL's and
/// MariaDB's constraint `<table>_moved`, SQLite's trigger of that name and message.
fn names_the_flag_guard(e: &sqlx::Error, table: &str) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            let m = db.message();
            m.contains(&format!("{table}_moved"))
                || m.contains("keeps its fencing counters in its lock rows")
        }
        _ => false,
    }
}

/// One run of `command` with the statements of `layout` (routed, when `moving`).
async fn run<C: Sealed + ?Sized>(
    conn: &mut C,
    plan: &Plan<'_>,
    command: &Command,
    stamp: &(impl Fn(u64) -> u64 + Sync),
    own: bool,
    layout: Layout,
    moving: bool,
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
                    plan.state.refresh_due.store(true, Ordering::Relaxed);
                }
                return Ok(reply);
            }
        }
    }
}
