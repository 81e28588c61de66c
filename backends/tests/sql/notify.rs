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

/// Waits until a session of the database is listening on `channel`: it holds the channel's gate
/// (its last query, ending in `LISTEN`, has finished), rather than queueing for it.
async fn listening(store: &SqlStore, channel: &str) {
    let SqlPool::Postgres(pool) = store.pool() else {
        panic!("a PostgreSQL store")
    };
    let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%LISTEN \"{channel}\"' AND state = 'idle'");
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

/// The sessions of the database on `channel`'s gate: (listening, queued). A listening session
/// holds the gate; a queued one waits for it (its `pg_advisory_lock` waits on a lock).
async fn at_the_gate(store: &SqlStore, channel: &str) -> (i64, i64) {
    let SqlPool::Postgres(pool) = store.pool() else {
        panic!("a PostgreSQL store")
    };
    let sql = format!(
        "SELECT count(*) FILTER (WHERE state = 'idle'), \
         count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock') \
         FROM pg_stat_activity WHERE query LIKE '%LISTEN \"{channel}\"'"
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity")
}

/// A locker on `store` that never retries before its back-off of an hour: only a wake-up
/// makes it try again.
fn patient(store: impl Store + 'static, strategy: Strategy) -> Locker {
    Locker::builder(store)
        .strategy(strategy)
        .retry(RetryPolicy {
            initial: Duration::from_secs(3600),
            max: Duration::from_secs(3600),
            max_attempts: None,
            queue_poll: Duration::from_secs(3600),
        })
        .wait_timeout(Duration::from_secs(7200))
        .build()
        .expect("valid")
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
        let waiter = patient(counting, strategy);
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

/// With several processes waiting, one session at a time listens (it holds the table's gate) and
/// the others queue for it: a release wakes one process, which passes the gate to the next, so
/// every waiter is woken in turn, none by its back-off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_waiting_process_listens_at_a_time_and_each_is_woken_in_turn() {
    let Some(url) = common::url(Db::Postgres) else {
        return;
    };
    let holder = Locker::builder(SqlStore::open(&url).expect("url"))
        .build()
        .expect("valid");
    let stores: Vec<_> = (0..3)
        .map(|_| Arc::new(SqlStore::open(&url).expect("url")))
        .collect();
    let channel = stores[0].options().table.clone();
    let mut held = holder.lock("job").await.expect("lock");
    let mut waiting: Vec<_> = stores
        .iter()
        .map(|store| {
            let store = Counting {
                inner: Arc::clone(store),
                executed: Arc::default(),
            };
            let waiter = patient(store, Strategy::UniqueInsert);
            tokio::spawn(async move { waiter.lock("job").await })
        })
        .collect();
    // Each waiter found the lock held and waits: one session listens, two queue.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (listening, queued) = at_the_gate(&stores[0], &channel).await;
        assert!(listening <= 1, "{listening} sessions listen at once");
        if (listening, queued) == (1, 2) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{listening} listening and {queued} queued, not 1 and 2"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut tokens = vec![held.token()];
    while !waiting.is_empty() {
        held.release().await.expect("release");
        // The listening process is woken; the gate passes on.
        let deadline = Instant::now() + Duration::from_secs(10);
        let woken = loop {
            if let Some(i) = waiting.iter().position(|t| t.is_finished()) {
                break waiting.swap_remove(i);
            }
            assert!(
                Instant::now() < deadline,
                "no waiter woken by the release (their back-off is an hour)"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        held = woken
            .await
            .expect("task")
            .expect("the woken waiter gets the lock");
        tokens.push(held.token());
        if !waiting.is_empty() {
            listening(&stores[0], &channel).await;
        }
    }
    held.release().await.expect("release");
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens {tokens:?}");
    common::drop_table(&url).await;
}
