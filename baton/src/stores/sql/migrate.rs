//! Moving a two-row lock table's fencing counters into its `lock` rows
//! ([`SqlStore::migrate`]). The statements and the order they run in are
//! [`baton_statements::sql::Migration`]'s; this module runs them on one connection.
//!
//! Clients keep working during a run: a store of this version serves each name in the layout
//! it is in while the table is being moved, and reads the layout again when it meets a moved
//! name (`docs/one-row-claim.md`, "Phase 2, revised"; `baton_statements::sql::moving_route`).
//! The WebAssembly package's SQL host does not route yet: it fails on a moved name (never a
//! wrong token: the marker is no number) until restarted after the table is one-row.

use std::collections::BTreeSet;

use baton_kernel::{Error, Result};
use baton_statements::sql::{Kind, Layout, Migration, Param, Val, MARKER, ONE_ROW_FLAG};
use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use super::conn::Sealed;
use super::dialect::Dialect;
use super::errors::{failure, Phase};
use super::{SqlPool, SqlStore};

/// Names read per page of pending counters.
const PAGE: i64 = 500;

/// How long a change of the table's definition waits for transactions open on it, in
/// seconds: then the run fails, to be run again when they end.
const DDL_WAIT_S: u32 = 2;

/// What a run of [`SqlStore::migrate`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// The table was one-row already (it has the layout flag): nothing was done.
    pub already_one_row: bool,
    /// Names whose counter this run moved.
    pub moved: u64,
    /// Names left because a cell of theirs with a TTL was live (a held lock, a bakery ticket,
    /// a column-prefix entry): moved by a later run, once released.
    pub held: Vec<String>,
    /// Names left because another transaction had one of their rows locked at that moment.
    pub busy: Vec<String>,
    /// Names left alone because their `lock` row holds a fence while their counter row is no
    /// marker (no run of `migrate` leaves that: a table changed by hand, to look at).
    pub conflicts: Vec<String>,
    /// The table is one-row now: every counter moved and its layout flag written.
    pub finished: bool,
}

impl MigrationReport {
    /// One line for a person.
    pub fn summary(&self) -> String {
        if self.already_one_row {
            return "the table is one-row already: nothing to move".into();
        }
        let mut line = format!("moved {} counter(s)", self.moved);
        if !self.held.is_empty() {
            line.push_str(&format!(
                "; {} held name(s) left for a later run: {}",
                self.held.len(),
                shown(&self.held)
            ));
        }
        if !self.busy.is_empty() {
            line.push_str(&format!(
                "; {} name(s) busy in another transaction, left for a later run: {}",
                self.busy.len(),
                shown(&self.busy)
            ));
        }
        if !self.conflicts.is_empty() {
            line.push_str(&format!(
                "; {} name(s) with a fence already beside a counter row, left alone (look at them by hand): {}",
                self.conflicts.len(),
                shown(&self.conflicts)
            ));
        }
        line.push_str(if self.finished {
            "; the table is one-row now"
        } else {
            "; the table is not one-row yet: run again"
        });
        line
    }
}

/// Up to ten names, then how many more.
fn shown(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(10)
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > 10 {
        s.push_str(&format!(" and {} more", names.len() - 10));
    }
    s
}

fn sql(text: &str) -> SqlStr {
    // Built from constant text and the validated, quoted table name only.
    AssertSqlSafe(text.to_owned()).into_sql_str()
}

/// Whether `e` says a `NOWAIT` lock was taken by another transaction: PostgreSQL's
/// `lock_not_available`, MariaDB's lock wait timeout (which `NOWAIT` answers at once).
fn lock_taken(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            db.code().as_deref() == Some("55P03")
                || db.message().contains("Lock wait timeout")
                || db.message().contains("NOWAIT")
                || db.message().contains("database is locked")
        }
        _ => false,
    }
}

impl SqlStore {
    /// Moves the fencing counters of this store's two-row table into its `lock` rows, then
    /// marks the table one-row (`docs/one-row-claim.md`, phase 2): names with a live cell
    /// that has a TTL are left and reported, to be moved by a later run; the table is marked
    /// one-row by the run that leaves none. Safe to run again, and to stop at any point: each
    /// name moves in a transaction of its own.
    ///
    /// Every client of the table must run this version or later (each serves a name in the
    /// layout it is in during a run); `baton migrate` is the command.
    ///
    /// Stores read the layout again when they meet a moved name, so any store, this one
    /// included, goes on in one row after the run that finishes.
    ///
    /// `progress` is called after each page of names.
    ///
    /// Cost: a few statements per name (about a millisecond each on a local server).
    ///
    /// Errors: the store's, as [`Locker`](crate::Locker) reports them (an unreachable
    /// database, a missing table); [`ErrorKind::StoreError`](crate::ErrorKind::StoreError)
    /// when the database refuses the columns, the triggers or the constraint (privileges).
    pub async fn migrate(
        &self,
        progress: &mut (dyn FnMut(&MigrationReport) + Send),
    ) -> Result<MigrationReport> {
        self.ensure_schema().await?;
        if self.layout() == Some(Layout::OneRow) {
            return Ok(MigrationReport {
                already_one_row: true,
                ..MigrationReport::default()
            });
        }
        let m = Migration::new(self.dialect(), &self.options().table);
        let columns = self.statements().columns.clone();
        let flag = self.statements().layout_flag.clone();
        let catalog = self.statements().catalog_name.clone();
        let d = self.dialect();
        let table = &self.options().table;
        let run = |e: sqlx::Error| {
            let f = failure(&e, d, Phase::Statement);
            let mut message = f.message().to_string();
            if lock_taken(&e) {
                message.push_str(&format!(
                    " (a change of table {table}'s definition waited {DDL_WAIT_S} s for transactions open on it: run again when they end)"
                ));
            }
            Error::new(f.setup_kind(), message)
        };
        macro_rules! run_on {
            ($pool:expr) => {{
                let mut c = $pool.acquire().await.map_err(run)?;
                on(&mut *c, &m, [&columns, &flag], &catalog, progress)
                    .await
                    .map_err(run)
            }};
        }
        match self.pool() {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => run_on!(p),
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => run_on!(p),
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => run_on!(p),
        }
    }
}

/// What happened to one name.
enum Moved {
    Yes,
    Held,
    Busy,
    /// A fence already in its `lock` row.
    Conflict,
    /// Moved by someone else meanwhile, or its counter row gone.
    Nothing,
}

/// The whole run on `c`.
async fn on<C>(
    c: &mut C,
    m: &Migration,
    [columns, flag]: [&SqlStr; 2],
    catalog: &str,
    progress: &mut (dyn FnMut(&MigrationReport) + Send),
) -> std::result::Result<MigrationReport, sqlx::Error>
where
    C: Sealed + sqlx::Connection,
    <C::Database as sqlx::Database>::Connection: Sealed,
{
    // The flag as it is now (another run may have finished since this store read it).
    let flagged = c
        .fetch(flag, &[], &[Kind::Text])
        .await?
        .into_iter()
        .any(|r| r.into_iter().next().map(Val::into_text).as_deref() == Some(ONE_ROW_FLAG));
    if flagged {
        return Ok(MigrationReport {
            already_one_row: true,
            ..MigrationReport::default()
        });
    }
    // The columns and the guards. DDL waits for every transaction open on the table, and
    // holds up every statement after it while it waits: only what is missing is made, and
    // each waits at most DDL_WAIT. Runs at the same time take turns (another run's DDL is
    // seen, not repeated): PostgreSQL's guards share one trigger function, which two runs
    // replacing at once fail on ("tuple concurrently updated"); SQLite's `ADD COLUMN` has no
    // `IF NOT EXISTS`.
    match m.dialect {
        // One transaction: PostgreSQL drops and makes its triggers again, with no moment
        // without them; the transaction-scoped advisory lock orders runs on any table of the
        // database (it waits at most DDL_WAIT too).
        Dialect::Postgres => {
            let ddl = missing(c, m, columns, catalog).await?;
            if !ddl.is_empty() {
                let mut tx = c.begin().await?;
                tx.script(&sql(&format!("SET LOCAL lock_timeout = '{DDL_WAIT_S}s'")))
                    .await?;
                tx.script(&sql(&m.ddl_turn)).await?;
                for s in ddl {
                    tx.script(&sql(s)).await?;
                }
                tx.commit().await?;
            }
        }
        // Each statement skips what is there (`IF NOT EXISTS`, `OR REPLACE`) and commits on
        // its own.
        Dialect::MySql => {
            for s in missing(c, m, columns, catalog).await? {
                c.script(&sql(&format!(
                    "SET STATEMENT lock_wait_timeout = {DDL_WAIT_S} FOR {s}"
                )))
                .await?;
            }
        }
        // Read and made under the write lock: another run's columns are seen, not added again.
        Dialect::Sqlite => {
            if !missing(c, m, columns, catalog).await?.is_empty() {
                let mut tx = c.begin_with(sql("BEGIN IMMEDIATE")).await?;
                for s in missing(&mut *tx, m, columns, catalog).await? {
                    tx.script(&sql(s)).await?;
                }
                tx.commit().await?;
            }
        }
    }

    let mut report = MigrationReport::default();
    let mut left = BTreeSet::new();
    let mut after = String::new();
    loop {
        let page = c
            .fetch(
                &sql(&m.pending),
                &[Param::Text(after.as_str().into()), Param::Int(Some(PAGE))],
                &[Kind::Text],
            )
            .await?;
        let names: Vec<String> = page
            .into_iter()
            .filter_map(|r| r.into_iter().next().map(Val::into_text))
            .collect();
        let Some(last) = names.last() else { break };
        after = last.clone();
        for name in names {
            match move_one(c, m, &name).await? {
                Moved::Yes => report.moved += 1,
                Moved::Held => {
                    left.insert(name.clone());
                    report.held.push(name);
                }
                Moved::Busy => {
                    left.insert(name.clone());
                    report.busy.push(name);
                }
                Moved::Conflict => {
                    left.insert(name.clone());
                    report.conflicts.push(name);
                }
                Moved::Nothing => {}
            }
        }
        progress(&report);
    }
    if left.is_empty() {
        report.finished = finish(c, m).await?;
    }
    Ok(report)
}

/// The DDL `c`'s table still needs: its missing columns, and every guard when one is missing.
async fn missing<'m, X>(
    c: &mut X,
    m: &'m Migration,
    columns: &SqlStr,
    catalog: &str,
) -> std::result::Result<Vec<&'m str>, sqlx::Error>
where
    X: Sealed + ?Sized,
{
    let present: Vec<String> = c
        .fetch(columns, &[Param::Text(catalog.into())], &[Kind::Text])
        .await?
        .into_iter()
        .filter_map(|r| r.into_iter().next().map(Val::into_text))
        .collect();
    let mut ddl: Vec<&str> = m.missing_columns(&present);
    let guards = c
        .fetch(&sql(&m.guards_present), &[], &[Kind::Int])
        .await?
        .first()
        .and_then(|r| r.first())
        .and_then(Val::int)
        .unwrap_or(0);
    if guards < m.guards_count {
        ddl.extend(m.guards.iter().map(String::as_str));
    }
    Ok(ddl)
}

/// Moves `name`'s counter, in a transaction of its own.
async fn move_one<C>(
    c: &mut C,
    m: &Migration,
    name: &str,
) -> std::result::Result<Moved, sqlx::Error>
where
    C: Sealed + sqlx::Connection,
    <C::Database as sqlx::Database>::Connection: Sealed,
{
    let by_name = [Param::Text(name.into())];
    let held = |rows: Vec<Vec<Val>>| {
        rows.first()
            .and_then(|r| r.first())
            .and_then(Val::int)
            .unwrap_or(0)
            > 0
    };
    // A plain read first: a held name is skipped without locking anything.
    if held(c.fetch(&sql(&m.held), &by_name, &[Kind::Int]).await?) {
        return Ok(Moved::Held);
    }
    if m.dialect == Dialect::MySql {
        // Row locks only, no gap locks on the names around it.
        c.script(&sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED"))
            .await?;
    }
    let mut tx = match m.dialect {
        // Another writer past the busy timeout: the name waits for a later run.
        Dialect::Sqlite => match c.begin_with(sql("BEGIN IMMEDIATE")).await {
            Ok(tx) => tx,
            Err(e) if lock_taken(&e) => return Ok(Moved::Busy),
            Err(e) => return Err(e),
        },
        Dialect::Postgres | Dialect::MySql => c.begin().await?,
    };
    let counter = match tx
        .fetch(&sql(&m.lock_counter), &by_name, &[Kind::Text, Kind::Int])
        .await
    {
        Ok(rows) => rows,
        Err(e) if lock_taken(&e) => return Ok(Moved::Busy),
        Err(e) => return Err(e),
    };
    let Some([value, stamp]) = counter
        .into_iter()
        .next()
        .and_then(|r| <[Val; 2]>::try_from(r).ok())
    else {
        return Ok(Moved::Nothing);
    };
    let value = value.into_text();
    if value == MARKER {
        return Ok(Moved::Nothing);
    }
    match tx.fetch(&sql(&m.lock_row), &by_name, &[Kind::Text]).await {
        Ok(rows) => {
            let fenced = rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next())
                .is_some_and(|f| !f.into_text().is_empty());
            if fenced {
                return Ok(Moved::Conflict);
            }
        }
        Err(e) if lock_taken(&e) => return Ok(Moved::Busy),
        Err(e) => return Err(e),
    }
    // Again, after both rows are ours: a claim that committed since the first look.
    if held(tx.fetch(&sql(&m.held), &by_name, &[Kind::Int]).await?) {
        return Ok(Moved::Held);
    }
    tx.run(
        &sql(&m.write_fence),
        &[
            Param::Text(name.into()),
            Param::Text(value.as_str().into()),
            Param::Int(stamp.int()),
        ],
    )
    .await?;
    tx.run(&sql(&m.mark), &by_name).await?;
    tx.commit().await?;
    Ok(Moved::Yes)
}

/// Marks the table one-row if no counter is pending (checked again with writers kept out).
async fn finish<C>(c: &mut C, m: &Migration) -> std::result::Result<bool, sqlx::Error>
where
    C: Sealed + sqlx::Connection,
    <C::Database as sqlx::Database>::Connection: Sealed,
{
    let pending = [Param::Text("".into()), Param::Int(Some(1))];
    if m.dialect == Dialect::MySql {
        // DDL commits on its own: the constraint first, alone. It checks the rows there, so
        // it fails while a counter is pending, and from then on no counter row can be made.
        for s in &m.finish_begin {
            let s = format!("SET STATEMENT lock_wait_timeout = {DDL_WAIT_S} FOR {s}");
            match c.script(&sql(&s)).await {
                Ok(()) => {}
                // Added by a run that stopped before the flag.
                Err(sqlx::Error::Database(db)) if db.message().contains("Duplicate") => {}
                // A counter row still pending (made since the last page was read).
                Err(sqlx::Error::Database(db)) if db.message().contains("CONSTRAINT") => {
                    return Ok(false)
                }
                Err(e) => return Err(e),
            }
        }
    }
    let mut tx = match m.dialect {
        Dialect::Sqlite => c.begin_with(sql("BEGIN IMMEDIATE")).await?,
        Dialect::Postgres | Dialect::MySql => c.begin().await?,
    };
    if m.dialect == Dialect::Postgres {
        tx.script(&sql(&format!("SET LOCAL lock_timeout = '{DDL_WAIT_S}s'")))
            .await?;
        for s in &m.finish_begin {
            tx.script(&sql(s)).await?;
        }
    }
    if !tx
        .fetch(&sql(&m.pending), &pending, &[Kind::Text])
        .await?
        .is_empty()
    {
        return Ok(false);
    }
    for s in &m.finish {
        tx.script(&sql(s)).await?;
    }
    tx.commit().await?;
    Ok(true)
}
