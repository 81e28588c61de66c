//! Locks inside the caller's transactions: the release commits with the caller's writes, a
//! rollback leaves the lock to the guard, and a lock taken in a transaction rolls back with it.

use std::time::Duration;

use baton::baton_kernel::{ColumnFilter, ReadConsistency};
use baton::sqlx::{self, AssertSqlSafe};
use baton::{
    Command, Consistency, EntryState, ErrorKind, LockRequest, Locker, Reply, SqlStore, Store,
    Strategy,
};

use crate::common::{table, url, Db};

/// A locker on a fresh table of `db`, its store, and a data table of the caller's (both
/// dropped when the test passes).
async fn setup(db: Db) -> Option<(Locker, SqlStore, String, Cleanup)> {
    let url = url(db)?;
    let store = SqlStore::open(&url).expect("valid URL");
    store.ensure_schema().await.expect("lock table");
    let data = format!("d{}", table());
    crate::common::exec_raw(
        &store,
        &format!("CREATE TABLE {data} (k VARCHAR(100) NOT NULL)"),
    )
    .await
    .expect("data table");
    let locker = Locker::builder(store.clone())
        .wait_timeout(Duration::from_secs(5))
        .build()
        .expect("valid");
    let cleanup = Cleanup {
        url,
        data: data.clone(),
        store: store.clone(),
    };
    Some((locker, store, data, cleanup))
}

/// Drops a passing test's tables.
struct Cleanup {
    url: String,
    data: String,
    store: SqlStore,
}

impl Cleanup {
    async fn run(self) {
        let _ =
            crate::common::exec_raw(&self.store, &format!("DROP TABLE IF EXISTS {}", self.data))
                .await;
        crate::common::drop_table(&self.url).await;
    }
}

/// The wall clock in microseconds since 1970, the unit of the stores' stamps.
fn micros_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The `(cell, stamp)` of every live cell of `row`.
async fn stamps(store: &SqlStore, row: &str) -> Vec<(String, u64)> {
    let read = Command::Read {
        row: row.into(),
        filter: ColumnFilter::All,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    };
    match store.execute(read).await {
        Reply::Cells(cells) => cells.into_iter().map(|c| (c.column, c.stamp)).collect(),
        other => panic!("read answered {other:?}"),
    }
}

/// Whether `name` is held, by a plain read (it never waits for an open transaction).
async fn held(locker: &Locker, name: &str) -> bool {
    locker
        .inspect(name)
        .await
        .expect("inspect")
        .iter()
        .any(|i| i.state == EntryState::Held)
}

macro_rules! tx_tests {
    ($module:ident, $feature:literal, $db:expr, $pool:ident) => {
        #[cfg(feature = $feature)]
        mod $module {
            use super::*;

            async fn count(store: &SqlStore, data: &str) -> i64 {
                let pool = store.pool().$pool().expect("pool");
                let row: (i64,) =
                    sqlx::query_as(AssertSqlSafe(format!("SELECT COUNT(*) FROM {data}")))
                        .fetch_one(pool)
                        .await
                        .expect("count");
                row.0
            }

            fn insert(data: &str) -> AssertSqlSafe<String> {
                AssertSqlSafe(format!("INSERT INTO {data} (k) VALUES ('written')"))
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn the_release_commits_with_the_data() {
                let Some((locker, store, data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let mut guard = locker.lock("invoice").await.expect("lock");
                let mut tx = pool.begin().await.expect("begin");
                sqlx::query(insert(&data))
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
                guard
                    .release_in(&mut *tx)
                    .await
                    .expect("release in the transaction");
                assert!(!guard.is_held(), "released as far as the guard knows");
                // Not committed yet: others still see the lock, and no data.
                assert!(held(&locker, "invoice").await);
                assert_eq!(count(&store, &data).await, 0);
                tx.commit().await.expect("commit");
                // Both at once.
                assert!(!held(&locker, "invoice").await);
                assert_eq!(count(&store, &data).await, 1);
                // The guard's own release now finds nothing left: fine.
                guard
                    .release()
                    .await
                    .expect("nothing to release after the commit");
                let mut next = locker.try_lock("invoice").await.expect("free");
                next.release().await.expect("release");
                cleanup.run().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn after_a_rollback_the_guard_releases_the_lock() {
                let Some((locker, store, data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let mut guard = locker.lock("invoice").await.expect("lock");
                let mut tx = pool.begin().await.expect("begin");
                sqlx::query(insert(&data))
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
                guard
                    .release_in(&mut *tx)
                    .await
                    .expect("release in the transaction");
                tx.rollback().await.expect("rollback");
                // The data is gone and the lock still held...
                assert_eq!(count(&store, &data).await, 0);
                assert!(held(&locker, "invoice").await);
                let e = locker.try_lock("invoice").await.expect_err("still held");
                assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
                // ... until the guard releases it in its own transaction.
                guard.release().await.expect("release after the rollback");
                assert!(!held(&locker, "invoice").await);
                cleanup.run().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn after_a_rollback_dropping_the_guard_releases_the_lock() {
                let Some((locker, store, _data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let mut guard = locker.lock("invoice").await.expect("lock");
                let mut tx = pool.begin().await.expect("begin");
                guard
                    .release_in(&mut *tx)
                    .await
                    .expect("release in the transaction");
                drop(tx); // rolled back
                drop(guard);
                let relocked = locker
                    .lock_with(
                        "invoice",
                        LockRequest::new().wait_timeout(Duration::from_secs(5)),
                    )
                    .await
                    .expect("released by the drop");
                assert_eq!(relocked.token(), 2);
                cleanup.run().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_lock_taken_in_a_rolled_back_transaction_is_gone() {
                let Some((locker, store, data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let mut tx = pool.begin().await.expect("begin");
                let guard = locker
                    .lock_in(&mut *tx, "invoice", LockRequest::new())
                    .await
                    .expect("lock in the transaction");
                assert!(guard.is_held());
                sqlx::query(insert(&data))
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
                tx.rollback().await.expect("rollback");
                assert!(!held(&locker, "invoice").await);
                let other = locker.try_lock("invoice").await.expect("never taken");
                // The stale guard's release must not touch the new holder's lock.
                drop(guard);
                tokio::time::sleep(Duration::from_millis(300)).await;
                assert!(held(&locker, "invoice").await);
                assert!(other.is_held());
                cleanup.run().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_lock_taken_in_a_committed_transaction_holds() {
                let Some((locker, store, data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let began = micros_now();
                let mut tx = pool.begin().await.expect("begin");
                let mut guard = locker
                    .lock_in(&mut *tx, "invoice", LockRequest::new())
                    .await
                    .expect("lock in the transaction");
                sqlx::query(insert(&data))
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
                tx.commit().await.expect("commit");
                assert!(held(&locker, "invoice").await);
                let e = locker.try_lock("invoice").await.expect_err("held");
                assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
                // The lock row carries the stamp of the write, as outside transactions.
                let stamps = stamps(&store, "invoice").await;
                assert!(
                    !stamps.is_empty() && stamps.iter().all(|(_, s)| *s >= began),
                    "{stamps:?} (began {began})"
                );
                // Take the lock and release it in one transaction of the caller's.
                let mut tx = pool.begin().await.expect("begin");
                guard.release_in(&mut *tx).await.expect("release");
                tx.commit().await.expect("commit");
                assert!(!held(&locker, "invoice").await);
                assert_eq!(count(&store, &data).await, 1);
                cleanup.run().await;
            }

            /// A lock taken late in a long transaction of the caller's expires a whole TTL after
            /// the statement that took it, not after the transaction began: an expiry counted
            /// from the transaction's start (PostgreSQL's `now()`) would be in the past already,
            /// and the next client would get the lock while this one believes it holds it.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_lock_taken_late_in_a_long_transaction_lasts_its_ttl() {
                let Some((locker, store, _data, cleanup)) = setup($db).await else {
                    return;
                };
                let ttl = Duration::from_secs(2);
                let pool = store.pool().$pool().expect("pool").clone();
                let mut tx = pool.begin().await.expect("begin");
                sqlx::query("SELECT 1")
                    .execute(&mut *tx)
                    .await
                    .expect("the transaction has begun");
                // The scenario itself: the transaction grows older than the lease.
                tokio::time::sleep(ttl + Duration::from_millis(300)).await;
                let guard = locker
                    .lock_in(&mut *tx, "invoice", LockRequest::new().ttl(ttl))
                    .await
                    .expect("lock in the old transaction");
                tx.commit().await.expect("commit");
                assert!(guard.is_held());
                assert!(
                    held(&locker, "invoice").await,
                    "the lock is live right after its commit"
                );
                let e = locker
                    .try_lock("invoice")
                    .await
                    .expect_err("another client must not get the lock");
                assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
                drop(guard);
                cleanup.run().await;
            }

            /// A release in the caller's transaction writes with the same stamp rules as any
            /// other: the plain deletes of bakery and column prefix carry a fresh stamp, newer
            /// than the version they remove, so the lock is free after the commit.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn every_strategy_releases_in_a_transaction() {
                let Some((locker, store, _data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                for strategy in Strategy::ALL {
                    let name = format!("invoice-{strategy}");
                    let request = LockRequest::new().strategy(strategy);
                    let mut guard = locker
                        .lock_with(&name, request.clone())
                        .await
                        .expect("lock");
                    let mut tx = pool.begin().await.expect("begin");
                    guard.release_in(&mut *tx).await.expect("release");
                    tx.commit().await.expect("commit");
                    let mut next = locker
                        .lock_with(&name, request.try_once())
                        .await
                        .unwrap_or_else(|e| panic!("{strategy}: still held: {e}"));
                    next.release().await.expect("release");
                }
                cleanup.run().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_statement_stuck_behind_a_transaction_is_cancelled_by_the_server() {
                let Some((locker, store, _data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let mut tx = pool.begin().await.expect("begin");
                let guard = locker
                    .lock_in(&mut *tx, "invoice", LockRequest::new())
                    .await
                    .expect("lock in the transaction");
                // Another store on the same table, with a 1 s statement timeout: its insert waits
                // for the open transaction until the server gives up on it (row lock wait on
                // PostgreSQL and MariaDB, SQLite's busy timeout), which is "not applied".
                let url = format!("{}&timeout=1s", cleanup.url);
                let other = Locker::open(&url).expect("valid URL");
                let started = std::time::Instant::now();
                let e = other
                    .try_lock("invoice")
                    .await
                    .expect_err("blocked by the transaction");
                assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}");
                assert!(
                    started.elapsed() < Duration::from_secs(15),
                    "{:?}",
                    started.elapsed()
                );
                tx.rollback().await.expect("rollback");
                drop(guard);
                // (A new connection, perhaps, after the server's cancel: "no connection in
                // time" until it is open, which may take longer than the 1 s limit.)
                let mut free = crate::common::while_unavailable(|| other.try_lock("invoice"))
                    .await
                    .expect("free after the rollback");
                free.release().await.expect("release");
                cleanup.run().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn only_unique_insert_locks_in_a_transaction() {
                let Some((locker, store, _data, cleanup)) = setup($db).await else {
                    return;
                };
                let pool = store.pool().$pool().expect("pool").clone();
                let mut tx = pool.begin().await.expect("begin");
                for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
                    let e = locker
                        .lock_in(&mut *tx, "invoice", LockRequest::new().strategy(strategy))
                        .await
                        .expect_err("not inside a transaction");
                    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
                    assert!(e.message().contains("unique-insert"), "{e}");
                }
                // A locker on another kind of store cannot join the transaction.
                let e = Locker::memory()
                    .lock_in(&mut *tx, "invoice", LockRequest::new())
                    .await
                    .expect_err("memory store");
                assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
                cleanup.run().await;
            }
        }
    };
}

tx_tests!(sqlite, "sqlite", Db::Sqlite, sqlite);
tx_tests!(postgres, "postgres", Db::Postgres, postgres);
tx_tests!(mysql, "mysql", Db::MySql, mysql);
