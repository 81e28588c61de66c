//! A `lock()` future dropped midway (a timeout around it, a `select!`, an aborted task) removes
//! the cell it wrote, in the background, instead of leaving it to block others for its TTL.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::{Command, Failure, Locker, MemoryStore, Reply, Store, StoreFuture, Strategy};
use tokio::sync::watch;

use common::within;

/// Long enough that no entry in these tests can expire on its own.
const TTL: Duration = Duration::from_secs(3600);
const PATIENCE: Duration = Duration::from_secs(20);

/// A memory store whose command number `stall_at` (counting from 0) never answers, once.
#[derive(Clone)]
struct StallStore {
    inner: MemoryStore,
    stall_at: u64,
    /// Whether the stalled command is applied before the store stops answering.
    apply_stalled: bool,
    /// Answer the stalled command with a timeout after this long, as a real store's client
    /// timeout does, instead of never.
    time_out_after: Option<Duration>,
    executed: Arc<AtomicU64>,
    stalled: Arc<AtomicBool>,
}

impl StallStore {
    fn new(inner: MemoryStore, stall_at: u64) -> Self {
        StallStore {
            inner,
            stall_at,
            apply_stalled: false,
            time_out_after: None,
            executed: Arc::default(),
            stalled: Arc::default(),
        }
    }
}

impl StallStore {
    /// A store that applies its `stall_at`-th command and then never answers it.
    fn applying(inner: MemoryStore, stall_at: u64) -> Self {
        StallStore {
            apply_stalled: true,
            ..StallStore::new(inner, stall_at)
        }
    }

    /// The same store, answering its stalled command with a timeout after `after`.
    fn timing_out(self, after: Duration) -> Self {
        StallStore {
            time_out_after: Some(after),
            ..self
        }
    }
}

impl Store for StallStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        if self.executed.fetch_add(1, Ordering::SeqCst) == self.stall_at {
            self.stalled.store(true, Ordering::SeqCst);
            return Box::pin(async move {
                if self.apply_stalled {
                    self.inner.execute(command).await;
                }
                match self.time_out_after {
                    Some(after) => {
                        tokio::time::sleep(after).await;
                        Reply::Failed(Failure::Timeout(String::from("the test store stalled")))
                    }
                    None => std::future::pending().await,
                }
            });
        }
        self.inner.execute(command)
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn describe(&self) -> String {
        String::from("stalling test store")
    }
}

fn locker_on(store: impl Store + 'static, strategy: Strategy) -> Locker {
    Locker::builder(store)
        .strategy(strategy)
        .ttl(TTL)
        .build()
        .expect("valid options")
}

/// Two bakery lockers on one memory store: a holder and a waiter.
fn bakery_pair() -> (Locker, Locker) {
    let table = MemoryStore::new();
    (
        locker_on(table.clone(), Strategy::Bakery),
        locker_on(table, Strategy::Bakery),
    )
}

/// Waits until a [`StallStore`] has stalled `what`'s command.
async fn until_stalled(stalled: &AtomicBool, what: &str) {
    within(PATIENCE, &format!("{what} to stall"), async {
        while !stalled.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// Aborts `task` (stalled in `what`) and checks that it ended cancelled.
async fn cancel<T>(task: tokio::task::JoinHandle<T>, what: &str) {
    task.abort();
    assert!(
        task.await.err().is_some_and(|e| e.is_cancelled()),
        "{what} was cancelled"
    );
}

/// Waits until `name` has no live entries, then takes and releases it: the name is free again.
async fn free_again(other: &Locker, name: &str, strategy: Strategy, context: &str) {
    wait_for_entries(other, name, strategy, 0).await;
    let mut guard = other
        .try_lock(name)
        .await
        .unwrap_or_else(|e| panic!("{context}: the name is free again: {e}"));
    guard.release().await.expect("release");
}

/// Waits until `name` has exactly `entries` live entries, as `observer` reads them.
async fn wait_for_entries(observer: &Locker, name: &str, strategy: Strategy, entries: usize) {
    within(
        PATIENCE,
        &format!("{name} to have {entries} entries"),
        async {
            loop {
                let seen = observer
                    .inspect_with(name, strategy)
                    .await
                    .expect("inspect");
                if seen.len() == entries {
                    return;
                }
                tokio::task::yield_now().await;
            }
        },
    )
    .await;
}

/// The acquisition stalls after its cell is written (unique insert: its claim is applied and
/// never answered; bakery: `entering` is written and the next command hangs; column prefix:
/// the column is written and the next command hangs). Aborting it must leave the name free at
/// once, not after an hour.
#[tokio::test]
async fn an_abandoned_acquisition_removes_its_cell() {
    for strategy in [
        Strategy::UniqueInsert,
        Strategy::Bakery,
        Strategy::ColumnPrefix,
    ] {
        let table = MemoryStore::new();
        let stalling = match strategy {
            Strategy::UniqueInsert => StallStore::applying(table.clone(), 0),
            _ => StallStore::new(table.clone(), 1),
        };
        let stalled = Arc::clone(&stalling.stalled);
        let abandoning = locker_on(stalling, strategy);
        let other = locker_on(table, strategy);

        let task = tokio::spawn(async move { abandoning.lock("cancelled").await });
        until_stalled(&stalled, "the acquisition").await;
        wait_for_entries(&other, "cancelled", strategy, 1).await;
        cancel(task, &format!("{strategy}: the acquisition")).await;
        free_again(&other, "cancelled", strategy, &strategy.to_string()).await;
    }
}

/// A bakery waiter queued behind a holder, cancelled: its ticket goes, the holder's stays.
#[tokio::test]
async fn a_cancelled_bakery_waiter_takes_its_ticket_back() {
    let (holder, waiter) = bakery_pair();
    let mut held = holder.lock("queue").await.expect("holder");

    let queued = waiter.clone();
    let task = tokio::spawn(async move { queued.lock("queue").await });
    wait_for_entries(&holder, "queue", Strategy::Bakery, 2).await;
    task.abort();
    assert!(task.await.expect_err("aborted").is_cancelled());

    wait_for_entries(&holder, "queue", Strategy::Bakery, 1).await;
    assert!(held.is_held(), "the holder keeps its lock");
    held.release().await.expect("release");
    let mut next = within(
        PATIENCE,
        "the waiter's locker to lock again",
        waiter.lock("queue"),
    )
    .await
    .expect("free after the holder's release");
    next.release().await.expect("release");
}

/// `tokio::time::timeout` around `lock()`: the usual way a future gets dropped.
#[tokio::test]
async fn a_timeout_around_lock_leaves_nothing_behind() {
    let (holder, waiter) = bakery_pair();
    let mut held = holder.lock("timeout").await.expect("holder");

    let attempt = tokio::time::timeout(Duration::from_millis(50), waiter.lock("timeout")).await;
    assert!(
        attempt.is_err(),
        "the holder still holds, so the wait timed out"
    );

    wait_for_entries(&holder, "timeout", Strategy::Bakery, 1).await;
    held.release().await.expect("release");
}

/// A `release()` future dropped while its command is on its way (the release is sent from the
/// caller's task): the guard's task settles whether the command took effect and finishes the
/// release, whether the store had applied it or not; the name is free at once, not after the
/// hour-long TTL. (When the guard's task happens to poll first, right after the grant, it sends
/// the release itself and the caller only waits for it: the stalled command then ends with a
/// timeout, as a real store's would, and the guard's task settles it. Without that timeout
/// this test hung on that interleaving, about once in many CI runs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_release_is_finished_by_the_guards_task() {
    for strategy in [
        Strategy::UniqueInsert,
        Strategy::Bakery,
        Strategy::ColumnPrefix,
    ] {
        for apply in [false, true] {
            let table = MemoryStore::new();
            let other = locker_on(table.clone(), strategy);
            // Count the acquisition's commands on a plain locker first: the release is next.
            let probe = StallStore::new(table.clone(), u64::MAX);
            let executed = Arc::clone(&probe.executed);
            let mut warm = locker_on(probe, strategy).lock("warm").await.expect("lock");
            let release_at = executed.load(Ordering::SeqCst);
            warm.release().await.expect("release");

            let stalling = if apply {
                StallStore::applying(table.clone(), release_at)
            } else {
                StallStore::new(table.clone(), release_at)
            }
            .timing_out(Duration::from_secs(2));
            let stalled = Arc::clone(&stalling.stalled);
            let mut guard = locker_on(stalling, strategy)
                .lock("released")
                .await
                .expect("lock");
            assert!(
                !stalled.load(Ordering::SeqCst),
                "{strategy}: not stalled yet"
            );
            let task = tokio::spawn(async move {
                let outcome = guard.release().await;
                (guard, outcome)
            });
            until_stalled(&stalled, "the release").await;
            cancel(task, &format!("{strategy}: the release")).await;
            let context = format!("{strategy}, applied {apply}");
            free_again(&other, "released", strategy, &context).await;
        }
    }
}

/// A memory store whose command number `late_at` is on the wire when it is sent: it is applied
/// after `delay` whatever becomes of its caller (as a request a server has already received),
/// then answered.
#[derive(Clone)]
struct LateStore {
    inner: MemoryStore,
    late_at: u64,
    delay: Duration,
    executed: Arc<AtomicU64>,
    sent: Arc<AtomicBool>,
    applied: Arc<AtomicBool>,
}

impl Store for LateStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        if self.executed.fetch_add(1, Ordering::SeqCst) != self.late_at {
            return self.inner.execute(command);
        }
        self.sent.store(true, Ordering::SeqCst);
        let (inner, delay, applied) = (self.inner.clone(), self.delay, Arc::clone(&self.applied));
        let (answer, reply) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let reply = inner.execute(command).await;
            applied.store(true, Ordering::SeqCst);
            let _ = answer.send(reply);
        });
        Box::pin(async move {
            reply.await.unwrap_or_else(|_| {
                Reply::Failed(Failure::Timeout(String::from(
                    "the test store's task ended",
                )))
            })
        })
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn describe(&self) -> String {
        String::from("late test store")
    }
}

/// The acquisition's first write is still on its way when the caller gives up: its cleanup
/// waits for that write's answer, then removes what it wrote. A cleanup sent at once would run
/// first, and the write landing after it would leave a cell blocking the name for the whole
/// TTL (an hour here).
#[tokio::test]
async fn a_cancellation_while_a_write_is_on_its_way_leaves_nothing_once_it_lands() {
    for strategy in Strategy::ALL {
        let table = MemoryStore::new();
        let store = LateStore {
            inner: table.clone(),
            late_at: 0,
            delay: Duration::from_millis(200),
            executed: Arc::default(),
            sent: Arc::default(),
            applied: Arc::default(),
        };
        let (sent, applied) = (Arc::clone(&store.sent), Arc::clone(&store.applied));
        let locker = locker_on(store, strategy);
        let observer = locker_on(table, strategy);
        let task = tokio::spawn(async move { locker.lock("late-write").await.map(drop) });
        until_stalled(&sent, "the first write").await;
        cancel(task, "the acquisition").await;
        assert!(
            !applied.load(Ordering::SeqCst),
            "{strategy}: the write had not landed yet when the caller gave up"
        );
        within(PATIENCE, "the late write to land", async {
            while !applied.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
        })
        .await;
        free_again(&observer, "late-write", strategy, &format!("{strategy}")).await;
    }
}
