//! `SqlStore::migrate` (`docs/one-row-claim.md`, phase 2): a two-row table's counters moved into
//! its `lock` rows, held names left for a later run, the table marked one-row by the run that
//! leaves none, and the guards that keep moved counters from clients still in two rows.

use baton::sql::{Layout, MARKER};
use baton::sqlx::{self, AssertSqlSafe};
use baton::{Command, Locker, Reply, SqlPool, SqlStore, Store, Strategy};

use crate::common::{self, exec_raw, layout_param, with_param, Db};

const DBS: [Db; 3] = [Db::Sqlite, Db::Postgres, Db::MySql];

/// `(lock_name, cell, value, fence)` of every row but the flag, sorted (after the columns
/// were added).
async fn rows(store: &SqlStore) -> Vec<(String, String, String, Option<String>)> {
    let t = &store.options().table;
    let sql = AssertSqlSafe(format!(
        "SELECT lock_name, cell, value, fence FROM {t} WHERE lock_name <> '' ORDER BY lock_name, cell"
    ));
    match store.pool() {
        SqlPool::Postgres(p) => sqlx::query_as::<_, (String, String, String, Option<String>)>(sql)
            .fetch_all(p)
            .await
            .expect("rows"),
        SqlPool::MySql(p) => sqlx::query_as(sql).fetch_all(p).await.expect("rows"),
        SqlPool::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await.expect("rows"),
        _ => panic!("a SQL store"),
    }
}

/// The fence the `lock` row of `name` holds.
async fn fence(store: &SqlStore, name: &str) -> Option<String> {
    rows(store)
        .await
        .into_iter()
        .find(|(n, c, _, _)| n == name && c == "lock")
        .and_then(|r| r.3)
}

fn two_rows(db: Db) -> Option<String> {
    Some(with_param(&common::url(db)?, layout_param(Layout::TwoRows)))
}

async fn token_after_release(locker: &Locker, name: &str) -> u64 {
    let mut guard = locker.lock(name).await.expect("lock");
    let token = guard.token();
    guard.release().await.expect("release");
    token
}

async fn migrate(url: &str) -> baton::sql::MigrationReport {
    SqlStore::open(url)
        .expect("valid")
        .migrate(&mut |_| {})
        .await
        .expect("migrate")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_moves_every_counter_and_marks_the_table_one_row() {
    for db in DBS {
        let Some(url) = two_rows(db) else { continue };
        let unique = Locker::open(&url).expect("valid");
        let bakery = bakery_on(&url);
        let mut before = Vec::new();
        for name in ["a", "b", "c"] {
            before.push((name, token_after_release(&unique, name).await));
        }
        before.push(("d", token_after_release(&bakery, "d").await));
        // A store that read the table before the run, to run it again after.
        let early = SqlStore::open(&url).expect("valid");
        early.ensure_schema().await.expect("ready");

        let report = migrate(&url).await;
        assert_eq!(report.moved, 4, "{db:?} {report:?}");
        assert!(
            report.finished && report.held.is_empty(),
            "{db:?} {report:?}"
        );
        assert!(
            report.summary().contains("one-row now"),
            "{}",
            report.summary()
        );
        let again = migrate(&url).await;
        assert!(again.already_one_row, "{db:?} {again:?}");
        // The flag is read from the table, not from what the store saw first.
        let again = early.migrate(&mut |_| {}).await.expect("migrate again");
        assert!(again.already_one_row, "{db:?} {again:?}");

        let store = SqlStore::open(&url).expect("valid");
        store.ensure_schema().await.expect("ready");
        assert_eq!(store.layout(), Some(Layout::OneRow), "{db:?}");
        for (name, token) in &before {
            assert!(
                fence(&store, name)
                    .await
                    .is_some_and(|f| f.starts_with(&format!("token={token} "))),
                "{db:?} {name}: {:?}",
                rows(&store).await
            );
        }
        // Lockers that start now count on from the moved counters, in both strategies.
        let unique = Locker::open(&url).expect("valid");
        let bakery = bakery_on(&url);
        for (name, token) in before {
            let locker = if name == "d" { &bakery } else { &unique };
            let next = token_after_release(locker, name).await;
            assert!(next > token, "{db:?} {name}: {next} after {token}");
        }
        let markers = rows(&store)
            .await
            .into_iter()
            .filter(|(_, c, v, _)| c == "_LOCK_" && v == MARKER)
            .count();
        assert_eq!(markers, 4, "{db:?}: every counter row stays, as a marker");
        common::drop_table(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_leaves_held_names_and_finishes_once_they_are_released() {
    for db in DBS {
        let Some(url) = two_rows(db) else { continue };
        let locker = Locker::open(&url).expect("valid");
        let free = token_after_release(&locker, "free").await;
        let mut held = locker.lock("held").await.expect("lock");
        let held_token = held.token();
        // A client that read the table as two-row before the run, as one still running would.
        let old = SqlStore::open(&url).expect("valid");
        old.ensure_schema().await.expect("ready");
        assert_eq!(old.layout(), Some(Layout::TwoRows));

        let report = migrate(&url).await;
        assert_eq!(report.moved, 1, "{db:?} {report:?}");
        assert_eq!(report.held, ["held"], "{db:?} {report:?}");
        assert!(!report.finished, "{db:?} {report:?}");
        assert!(
            report.summary().contains("run again"),
            "{}",
            report.summary()
        );

        // In the window, a client that read the table as two-row before the run meets the
        // moved name's marker, reads the layout again and counts on from the moved counter.
        let old_locker = Locker::new(old.clone());
        let token = token_after_release(&old_locker, "free").await;
        assert!(token > free, "{db:?}: {token} after {free}");
        // An earlier build's purge (a two-row `DELETE` of expired rows) leaves the moved
        // counter where it is: PostgreSQL and SQLite skip the row, MariaDB refuses the whole
        // statement.
        let t = old.options().table.clone();
        exec_raw(
            &old,
            &format!(
                "UPDATE {t} SET expires_at = {} WHERE lock_name = 'free' AND cell = 'lock'",
                past(db)
            ),
        )
        .await
        .expect("expired by hand");
        let purged = exec_raw(
            &old,
            &format!(
                "DELETE FROM {t} WHERE expires_at IS NOT NULL AND expires_at <= {}",
                now(db)
            ),
        )
        .await;
        assert!(
            fence(&old, "free")
                .await
                .is_some_and(|f| f.starts_with(&format!("token={token} "))),
            "{db:?}: the moved counter survives a two-row purge ({purged:?}): {:?}",
            rows(&old).await
        );
        assert_eq!(purged.is_err(), db == Db::MySql, "{db:?}: {purged:?}");
        let free = token;

        // The holder releases in two rows, as it took the lock; the next run finishes.
        held.release().await.expect("the holder's release");
        let report = migrate(&url).await;
        assert_eq!(report.moved, 1, "{db:?} {report:?}");
        assert!(
            report.finished && report.held.is_empty(),
            "{db:?} {report:?}"
        );
        let after = Locker::open(&url).expect("valid");
        assert!(
            token_after_release(&after, "held").await > held_token,
            "{db:?}"
        );
        assert!(token_after_release(&after, "free").await > free, "{db:?}");
        common::drop_table(&url).await;
    }
}

/// The server's time in `db`'s `expires_at` type.
fn now(db: Db) -> &'static str {
    match db {
        Db::Postgres => "statement_timestamp()",
        Db::MySql => "UTC_TIMESTAMP(6)",
        _ => "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)",
    }
}

/// A past `expires_at` in `db`'s type, not its absent value.
fn past(db: Db) -> &'static str {
    match db {
        Db::Postgres => "'2001-01-01'",
        Db::MySql => "'2001-01-01 00:00:00'",
        _ => "1",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_table_refuses_what_would_lose_or_restart_a_counter() {
    for db in DBS {
        let Some(url) = two_rows(db) else { continue };
        let locker = Locker::open(&url).expect("valid");
        let token = token_after_release(&locker, "job").await;
        assert!(migrate(&url).await.finished);
        let store = SqlStore::open(&url).expect("valid");
        store.ensure_schema().await.expect("ready");
        let t = store.options().table.clone();
        let before = rows(&store).await;

        // Deleting the moved counter or its marker by hand: skipped, or refused on MariaDB.
        let deleted = exec_raw(&store, &format!("DELETE FROM {t} WHERE lock_name = 'job'")).await;
        assert_eq!(rows(&store).await, before, "{db:?}: {deleted:?}");
        assert_eq!(deleted.is_err(), db == Db::MySql, "{db:?}: {deleted:?}");
        // A marker set back to a number, and a new counter row (a client still in two rows
        // making a name's first counter): refused.
        let set_back = exec_raw(
            &store,
            &format!("UPDATE {t} SET value = '1' WHERE lock_name = 'job' AND cell = '_LOCK_'"),
        )
        .await;
        assert!(set_back.is_err(), "{db:?}: a marker set back");
        let new_counter = exec_raw(
            &store,
            &format!("INSERT INTO {t} (lock_name, cell, value) VALUES ('new', '_LOCK_', '1')"),
        )
        .await;
        assert!(new_counter.is_err(), "{db:?}: a new counter row");
        assert_eq!(rows(&store).await, before, "{db:?}");
        assert!(token_after_release(&locker_on(&url), "job").await > token);
        common::drop_table(&url).await;
    }
}

fn locker_on(url: &str) -> Locker {
    Locker::open(url).expect("valid")
}

fn bakery_on(url: &str) -> Locker {
    Locker::builder(SqlStore::open(url).expect("valid"))
        .strategy(Strategy::Bakery)
        .build()
        .expect("valid")
}

/// `$then`, evaluated while a transaction of `$store`'s pool (PostgreSQL or MariaDB) holds the
/// rows `$select` (a `SELECT … FOR UPDATE`) locks, rolled back after.
macro_rules! while_rows_locked {
    // One pool's arm (the pools' types differ, the steps do not).
    (on $pool:ident, $select:expr, $then:expr) => {{
        let mut tx = $pool.begin().await.expect("begin");
        sqlx::query(AssertSqlSafe($select))
            .execute(&mut *tx)
            .await
            .expect("rows locked");
        let outcome = $then;
        tx.rollback().await.expect("rollback");
        outcome
    }};
    ($store:expr, $select:expr, $then:expr) => {
        match $store.pool() {
            SqlPool::Postgres(p) => while_rows_locked!(on p, $select, $then),
            SqlPool::MySql(p) => while_rows_locked!(on p, $select, $then),
            _ => unreachable!("PostgreSQL or MariaDB"),
        }
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_leaves_a_name_whose_rows_another_transaction_holds() {
    // PostgreSQL and MariaDB: row locks (SQLite has one writer: a run waits for it).
    for db in [Db::Postgres, Db::MySql] {
        let Some(url) = two_rows(db) else { continue };
        // A first run adds the columns and guards (a change of the table's definition waits
        // for open transactions: it is not what this test holds up) and leaves a held name.
        let locker = Locker::open(&url).expect("valid");
        let mut held = locker.lock("held").await.expect("lock");
        // While a transaction is open on the table, the first run cannot add the columns: it
        // fails after a short wait, saying so, and changes nothing.
        let early = SqlStore::open(&url).expect("valid");
        early.ensure_schema().await.expect("ready");
        let t = early.options().table.clone();
        let read = format!("SELECT value FROM {t} WHERE lock_name = 'held' FOR UPDATE");
        let failed = while_rows_locked!(
            early,
            read,
            SqlStore::open(&url)
                .expect("valid")
                .migrate(&mut |_| {})
                .await
        );
        let e = failed.expect_err("a run that cannot change the table's definition");
        assert!(
            e.message().contains("run again when they end"),
            "{db:?}: {e}"
        );
        let first = migrate(&url).await;
        assert_eq!(first.held, ["held"], "{db:?} {first:?}");
        let two_rows = Locker::open(&url).expect("valid");
        let token = token_after_release(&two_rows, "job").await;
        let store = SqlStore::open(&url).expect("valid");
        store.ensure_schema().await.expect("ready");
        let t = store.options().table.clone();
        let lock =
            format!("SELECT value FROM {t} WHERE lock_name = 'job' AND cell = '_LOCK_' FOR UPDATE");
        let report = while_rows_locked!(store, lock, migrate(&url).await);
        assert_eq!(report.busy, ["job"], "{db:?} {report:?}");
        assert!(!report.finished && report.moved == 0, "{db:?} {report:?}");
        assert!(report.summary().contains("busy"), "{}", report.summary());
        held.release().await.expect("release");
        let report = migrate(&url).await;
        assert!(report.finished && report.moved == 2, "{db:?} {report:?}");
        assert!(token_after_release(&locker_on(&url), "job").await > token);
        common::drop_table(&url).await;
    }
}

/// The counter cells a scan shows, by name.
async fn scanned_counters(store: &SqlStore) -> Vec<(String, String)> {
    let Reply::Rows(rows) = store
        .execute(Command::Scan {
            after: None,
            limit: 100,
            consistency: baton::Consistency::Quorum,
        })
        .await
    else {
        panic!("a scan")
    };
    rows.into_iter()
        .flat_map(|(name, cells)| {
            cells
                .into_iter()
                .filter(|c| c.column == "_LOCK_")
                .map(move |c| (name.clone(), c.value))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_being_moved_serves_each_name_in_its_layout() {
    for db in DBS {
        let Some(url) = two_rows(db) else { continue };
        // Stores that read the table as two-row before the run: a holder, and a client.
        let holder = Locker::open(&url).expect("valid");
        let before = SqlStore::open(&url).expect("valid");
        before.ensure_schema().await.expect("ready");
        let before_locker = Locker::new(before.clone());
        let moved = token_after_release(&holder, "moved").await;
        let kept = token_after_release(&holder, "kept").await;
        let bakery_moved = token_after_release(&bakery_on(&url), "b").await;
        let mut held = holder.lock("kept").await.expect("lock");
        let kept_held = held.token();
        assert!(kept_held > kept);

        let report = migrate(&url).await;
        assert_eq!(report.moved, 2, "{db:?} {report:?}");
        assert_eq!(report.held, ["kept"], "{db:?} {report:?}");

        // A store that reads the table now serves both kinds of name.
        let after = Locker::open(&url).expect("valid");
        let next = token_after_release(&after, "moved").await;
        assert!(next > moved, "{db:?}: {next} after {moved}");
        let b = token_after_release(&bakery_on(&url), "b").await;
        assert!(b > bakery_moved, "{db:?}: bakery {b} after {bakery_moved}");
        let store = after.sql_store().expect("a SQL store").clone();
        let counters = scanned_counters(&store).await;
        assert!(
            counters
                .iter()
                .any(|(n, v)| n == "kept" && v.starts_with(&format!("token={kept_held} ")))
                && counters
                    .iter()
                    .any(|(n, v)| n == "moved" && v.starts_with(&format!("token={next} ")))
                && !counters.iter().any(|(_, v)| v == MARKER),
            "{db:?}: {counters:?}"
        );
        // The store that read the table before the run meets the marker, reads the layout
        // again and goes on.
        let again = token_after_release(&before_locker, "moved").await;
        assert!(again > next, "{db:?}: {again} after {next}");
        // The holder, still in two rows, releases the name that was not moved; the name is
        // then served in two rows.
        held.release().await.expect("the holder's release");
        let k = token_after_release(&after, "kept").await;
        assert!(k > kept_held, "{db:?}: {k} after {kept_held}");
        assert!(!matches!(
            store.execute(Command::Purge { row: None }).await,
            Reply::Failed(_)
        ));
        assert!(fence(&store, "moved")
            .await
            .is_some_and(|f| f.starts_with(&format!("token={again} "))));

        // Names first locked during the run, from both stores and by bakery, are made in two
        // rows and moved by the run that finishes.
        let new_after = token_after_release(&after, "new-after").await;
        let new_before = token_after_release(&before_locker, "new-before").await;
        let new_bakery = token_after_release(&bakery_on(&url), "new-bakery").await;

        // The run that finishes: every store goes on in one row, a new name included (a store
        // still routing meets the guard that came with the flag, and reads the layout again).
        let report = migrate(&url).await;
        assert!(report.finished && report.moved == 4, "{db:?} {report:?}");
        let fresh = token_after_release(&after, "fresh").await;
        assert_eq!(
            token_after_release(&after, "fresh").await,
            fresh + 1,
            "{db:?}"
        );
        assert!(
            token_after_release(&after, "new-after").await > new_after,
            "{db:?}"
        );
        assert!(
            token_after_release(&before_locker, "new-before").await > new_before,
            "{db:?}"
        );
        assert!(
            token_after_release(&bakery_on(&url), "new-bakery").await > new_bakery,
            "{db:?}"
        );
        let k2 = token_after_release(&before_locker, "kept").await;
        assert!(k2 > k, "{db:?}: {k2} after {k}");
        let m2 = token_after_release(&after, "moved").await;
        assert!(m2 > again, "{db:?}: {m2} after {again}");
        let left = rows(&store).await;
        assert!(
            !left.iter().any(|(_, c, v, _)| c == "_LOCK_" && v != MARKER),
            "{db:?}: no counter row but markers: {left:?}"
        );
        // Both stores read the table as one-row now: one that met the guard at once, one that
        // meets moved names at its next command a second after it last read the layout.
        assert_eq!(store.layout(), Some(Layout::OneRow), "{db:?}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut last = k2;
        while before.layout() != Some(Layout::OneRow) {
            assert!(
                std::time::Instant::now() < deadline,
                "{db:?}: still {:?}",
                before.layout()
            );
            let next = token_after_release(&before_locker, "kept").await;
            assert!(next > last, "{db:?}: {next} after {last}");
            last = next;
        }
        common::drop_table(&url).await;
    }
}

/// What the clients of [`clients_across_a_migration_never_overlap`] saw of one name: a fenced
/// register (the highest token a section of the name wrote; a lower or equal one is a
/// regression) and whether a section of it is running (one starting while another runs is an
/// overlap, which fencing alone would not prevent).
#[derive(Default)]
struct Register {
    highest: std::sync::Mutex<u64>,
    inside: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Checked {
    sections: std::sync::atomic::AtomicU64,
    overlaps: std::sync::atomic::AtomicU64,
    regressions: std::sync::atomic::AtomicU64,
    errors: std::sync::Mutex<Vec<String>>,
}

/// One critical section of `name` under `locker`, checked against `register`.
async fn section(locker: &Locker, name: &str, register: &Register, checked: &Checked) {
    use std::sync::atomic::Ordering::SeqCst;
    let mut guard = match locker.lock(name).await {
        Ok(g) => g,
        Err(e) => {
            checked
                .errors
                .lock()
                .expect("the errors")
                .push(format!("lock {name}: {e}"));
            return;
        }
    };
    if register.inside.swap(true, SeqCst) {
        checked.overlaps.fetch_add(1, SeqCst);
    }
    {
        let mut highest = register.highest.lock().expect("the register");
        if guard.token() <= *highest {
            checked.regressions.fetch_add(1, SeqCst);
        }
        *highest = (*highest).max(guard.token());
    }
    tokio::task::yield_now().await;
    register.inside.store(false, SeqCst);
    checked.sections.fetch_add(1, SeqCst);
    if let Err(e) = guard.release().await {
        checked
            .errors
            .lock()
            .expect("the errors")
            .push(format!("release {name}: {e}"));
    }
}

/// Clients on a few names while `migrate` runs again and again until a run finishes, and on
/// after: unique-insert stores that read the table before the first run (as two-row) and one
/// opened during the runs (as being moved), and bakery clients on names of their own. Every
/// critical section writes its token to its name's fenced register and marks itself inside:
/// no two sections of a name overlap, no token goes back or repeats, throughout the move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_across_a_migration_never_overlap() {
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    const UNIQUE: [&str; 3] = ["u0", "u1", "u2"];
    const BAKERY: [&str; 2] = ["b0", "b1"];
    for db in DBS {
        let Some(url) = two_rows(db) else { continue };
        let registers: Arc<std::collections::HashMap<&str, Register>> = Arc::new(
            UNIQUE
                .iter()
                .chain(&BAKERY)
                .map(|n| (*n, Register::default()))
                .collect(),
        );
        let checked = Arc::new(Checked::default());
        // Every name locked once, in two rows, by the stores that read the table now.
        let before: Vec<Locker> = (0..2).map(|_| locker_on(&url)).collect();
        let bakery: Vec<Locker> = (0..2).map(|_| bakery_on(&url)).collect();
        for name in UNIQUE {
            section(&before[0], name, &registers[name], &checked).await;
        }
        for name in BAKERY {
            section(&bakery[0], name, &registers[name], &checked).await;
        }

        // A name held through the first run, so that there is a window with the table being
        // moved (the run leaves it), which the store opened then reads.
        let mut held = locker_on(&url).lock("h").await.expect("lock");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let client = |locker: Locker, names: &'static [&'static str], k: usize| {
            let (registers, checked, stop) = (registers.clone(), checked.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = k;
                while !stop.load(SeqCst) {
                    let name = names[i % names.len()];
                    section(&locker, name, &registers[name], &checked).await;
                    i += 1;
                    // Paced, so that the names are free now and then for `migrate` to move.
                    tokio::time::sleep(Duration::from_millis(3)).await;
                }
            })
        };
        let mut clients = Vec::new();
        for (k, l) in before.into_iter().enumerate() {
            clients.push(client(l, &UNIQUE, k));
        }
        for (k, l) in bakery.into_iter().enumerate() {
            clients.push(client(l, &BAKERY, k));
        }

        // `migrate` again and again (a store opened after the first run joins the clients)
        // until a run finishes.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut runs = 0;
        loop {
            // A run that could not change the table's definition within its wait (a client's
            // statement in the way, under load) fails by design: run it again.
            let report = match SqlStore::open(&url)
                .expect("valid")
                .migrate(&mut |_| {})
                .await
            {
                Ok(report) => report,
                Err(e) => {
                    assert!(Instant::now() < deadline, "{db:?}: {e}");
                    println!("{db:?}: a run of migrate failed, run again: {e}");
                    continue;
                }
            };
            runs += 1;
            if runs == 1 {
                assert!(report.held.iter().any(|n| n == "h"), "{db:?} {report:?}");
                clients.push(client(locker_on(&url), &UNIQUE, 2));
                held.release().await.expect("release");
            }
            if report.finished {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{db:?}: not finished after {runs} runs: {report:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let at_finish = checked.sections.load(SeqCst);
        // On in one row: at least as many sections again as the clients made before the end.
        let on = Instant::now() + Duration::from_secs(30);
        while checked.sections.load(SeqCst) < at_finish + 40 {
            assert!(
                Instant::now() < on,
                "{db:?}: the clients stopped after the move"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.store(true, SeqCst);
        for c in clients {
            c.await.expect("a client");
        }
        let store = SqlStore::open(&url).expect("valid");
        store.ensure_schema().await.expect("ready");
        assert_eq!(store.layout(), Some(Layout::OneRow), "{db:?}");
        let (sections, overlaps, regressions) = (
            checked.sections.load(SeqCst),
            checked.overlaps.load(SeqCst),
            checked.regressions.load(SeqCst),
        );
        let errors = checked.errors.lock().expect("the errors").clone();
        println!(
            "{db:?}: {runs} runs of migrate; {sections} sections ({at_finish} before the end), {overlaps} overlaps, {regressions} token regressions, {} errors {errors:?}",
            errors.len()
        );
        assert_eq!((overlaps, regressions), (0, 0), "{db:?}");
        assert!(errors.is_empty(), "{db:?}: {errors:?}");
        common::drop_table(&url).await;
    }
}

/// A store that read the table (as two-row) before a run of `migrate`, opened for one command.
async fn store_from_before(url: &str) -> SqlStore {
    let store = SqlStore::open(url).expect("valid");
    store.ensure_schema().await.expect("ready");
    store
}

/// Stores that read the table before a run moved a name: a read and a scan of it show its
/// counter, never the marker (each reads the layout again and runs again), and a purge goes
/// on (MariaDB's guard refuses the two-row purge's delete of the moved counter's row, which
/// such a store takes for an expired cell: it reads the layout again and purges again), while
/// the table is being moved and after it is one-row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_from_before_read_scan_and_purge_moved_names() {
    let read_counter = |row: &str| Command::Read {
        row: row.into(),
        filter: baton::baton_kernel::ColumnFilter::Exact("_LOCK_".into()),
        consistency: baton::baton_kernel::ReadConsistency::Plain(baton::Consistency::Quorum),
    };
    for db in DBS {
        let Some(url) = two_rows(db) else { continue };
        let locker = locker_on(&url);
        let token = token_after_release(&locker, "moved").await;
        let counter = format!("token={token} ");
        let mut held = locker.lock("held").await.expect("lock");
        for finished in [false, true] {
            let (reader, scanner, purger) = (
                store_from_before(&url).await,
                store_from_before(&url).await,
                store_from_before(&url).await,
            );
            if finished {
                held.release().await.expect("release");
            }
            let report = migrate(&url).await;
            assert_eq!(report.finished, finished, "{db:?} {report:?}");

            let reply = reader.execute(read_counter("moved")).await;
            assert!(
                matches!(&reply, Reply::Cells(c) if c.len() == 1 && c[0].value.starts_with(&counter)),
                "{db:?} finished {finished}: the read answered {reply:?}"
            );
            let scanned = scanned_counters(&scanner).await;
            assert!(
                scanned
                    .iter()
                    .any(|(n, v)| n == "moved" && v.starts_with(&counter))
                    && !scanned.iter().any(|(_, v)| v == MARKER),
                "{db:?} finished {finished}: {scanned:?}"
            );
            let purged = purger.execute(Command::Purge { row: None }).await;
            assert!(
                matches!(purged, Reply::Purged(_)),
                "{db:?} finished {finished}: the purge answered {purged:?}"
            );
            assert_eq!(
                fence(&purger, "moved")
                    .await
                    .map(|f| f.starts_with(&counter)),
                Some(true),
                "{db:?}: the moved counter kept"
            );
        }
        common::drop_table(&url).await;
    }
}

/// Runs of `baton migrate` at the same time, on tables of one database and twice on one table,
/// as when an operator migrates every table of a service at once: each run answers, none fails
/// on another's DDL (PostgreSQL's guards share a trigger function; two runs replacing it at
/// once failed with "tuple concurrently updated" before the runs took turns at their DDL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_runs_at_the_same_time_on_one_database_all_answer() {
    const TABLES: usize = 6;
    for db in DBS {
        let mut urls = Vec::new();
        for _ in 0..TABLES {
            let Some(url) = two_rows(db) else { break };
            token_after_release(&locker_on(&url), "job").await;
            urls.push(url);
        }
        let Some(first) = urls.first().cloned() else {
            continue;
        };
        let runs: Vec<_> = urls
            .iter()
            .chain([&first])
            .map(|url| {
                let url = url.clone();
                tokio::spawn(async move {
                    let report = SqlStore::open(&url)
                        .expect("valid")
                        .migrate(&mut |_| {})
                        .await;
                    (url, report)
                })
            })
            .collect();
        for run in runs {
            let (url, report) = run.await.expect("the run's task");
            assert!(report.is_ok(), "{db:?} {url}: {report:?}");
        }
        // Two runs on one table may each leave a name the other was moving: one more run
        // finishes it.
        for url in &urls {
            let report = migrate(url).await;
            assert!(
                report.finished || report.already_one_row,
                "{db:?} {report:?}"
            );
            common::drop_table(url).await;
        }
    }
}
