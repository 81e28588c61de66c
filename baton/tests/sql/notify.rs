//! PostgreSQL's wake-ups across processes: a release by one store wakes a waiter of another
//! (as another process would be) through the release's `pg_notify` and the waiter's `LISTEN`,
//! long before the waiter's back-off ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::sqlx::{self, AssertSqlSafe};
use baton::{Command, Locker, RetryPolicy, SqlPool, SqlStore, Store, StoreFuture, Strategy};
use tokio::sync::watch;

use crate::common::{self, Db};

/// A store that counts the commands it forwards.
#[derive(Clone)]
struct Counting {
    inner: Arc<SqlStore>,
    executed: Arc<AtomicU64>,
}

impl Store for Counting {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        self.executed.fetch_add(1, Ordering::SeqCst);
        self.inner.execute(command)
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn waiting(&self) {
        self.inner.waiting()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Waits until a session of the database is listening on `channel`.
async fn listening(store: &SqlStore, channel: &str) {
    let SqlPool::Postgres(pool) = store.pool() else {
        panic!("a PostgreSQL store")
    };
    let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN \"{channel}\"'");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql.clone()))
            .fetch_one(pool)
            .await
            .expect("pg_stat_activity");
        if n > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "no session listens on {channel}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_by_another_store_wakes_a_waiter_long_before_its_backoff_ends() {
    let Some(url) = common::url(Db::Postgres) else {
        return;
    };
    for strategy in Strategy::ALL {
        let holder = Locker::builder(SqlStore::open(&url).expect("url"))
            .strategy(strategy)
            .build()
            .expect("valid");
        let store = Arc::new(SqlStore::open(&url).expect("url"));
        let counting = Counting {
            inner: Arc::clone(&store),
            executed: Arc::default(),
        };
        let executed = Arc::clone(&counting.executed);
        let waiter = Locker::builder(counting)
            .strategy(strategy)
            .retry(RetryPolicy {
                initial: Duration::from_secs(3600),
                max: Duration::from_secs(3600),
                max_attempts: None,
                queue_poll: Duration::from_secs(3600),
            })
            .wait_timeout(Duration::from_secs(7200))
            .build()
            .expect("valid");
        let name = format!("job {strategy}");
        let mut held = holder.lock(&name).await.expect("lock");
        let task = tokio::spawn({
            let name = name.clone();
            async move { waiter.lock(&name).await }
        });
        // The waiter made its first attempt and found the lock held (unique insert: a claim;
        // bakery: entering, read, ticket, read; column prefix: put, read, delete), and listens.
        let first_attempt = match strategy {
            Strategy::UniqueInsert => 1,
            Strategy::Bakery => 4,
            Strategy::ColumnPrefix => 3,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while executed.load(Ordering::SeqCst) < first_attempt {
            assert!(
                Instant::now() < deadline,
                "{strategy}: the waiter's first attempt"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        listening(&store, &store.options().table).await;
        // Its own delete (column prefix) notifies its own listener too: it may try once more,
        // but must not spin while the lock is held.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let spent = executed.load(Ordering::SeqCst);
        assert!(
            spent <= 2 * first_attempt,
            "{strategy}: the waiter spins while the lock is held ({spent} commands)"
        );
        let released = Instant::now();
        held.release().await.expect("release");
        let guard = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap_or_else(|_| panic!("{strategy}: the waiter was not woken"))
            .expect("task")
            .expect("the woken waiter gets the lock");
        assert!(guard.token() > held.token(), "{strategy}");
        println!(
            "{strategy}: granted {:?} after the release",
            released.elapsed()
        );
        drop(guard);
    }
    common::drop_table(&url).await;
}
