//! Helpers shared by the integration tests: lockers per strategy, test stores, waiting on
//! conditions with a deadline.

#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::{
    Command, Failure, Locker, LockerBuilder, MemoryStore, Reply, Store, StoreFuture, Strategy,
};
use tokio::sync::watch;

/// A locker builder on a fresh memory store with `strategy`.
pub fn builder(strategy: Strategy) -> LockerBuilder {
    Locker::builder(MemoryStore::new()).strategy(strategy)
}

/// A locker on a fresh memory store with `strategy` and default options.
pub fn locker(strategy: Strategy) -> Locker {
    builder(strategy)
        .build()
        .expect("default options are valid")
}

/// A memory store that can be switched off: then every command fails as unavailable.
#[derive(Clone, Debug, Default)]
pub struct FlakyStore {
    inner: MemoryStore,
    dead: Arc<AtomicBool>,
    executed: Arc<AtomicU64>,
    budget: Arc<AtomicU64>,
    waits: Arc<AtomicU64>,
}

impl FlakyStore {
    pub fn new() -> Self {
        let store = Self::default();
        store.budget.store(u64::MAX, Ordering::SeqCst);
        store
    }

    /// After `commands` more commands, every command is rejected: a runaway retry loop then
    /// ends in an error instead of hanging the test.
    pub fn set_budget(&self, commands: u64) {
        self.budget
            .store(self.executed() + commands, Ordering::SeqCst);
    }

    /// From now on, every command fails with `Failure::Unavailable`.
    pub fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
    }

    /// From now on, commands reach the table again.
    pub fn revive(&self) {
        self.dead.store(false, Ordering::SeqCst);
    }

    /// Commands executed so far (failed ones included).
    pub fn executed(&self) -> u64 {
        self.executed.load(Ordering::SeqCst)
    }

    /// How many times a waiter said it is about to wait ([`Store::waiting`]).
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::SeqCst)
    }
}

impl Store for FlakyStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        let n = self.executed.fetch_add(1, Ordering::SeqCst);
        if n >= self.budget.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Reply::Failed(Failure::Rejected(
                String::from("the test's command budget is spent"),
            ))));
        }
        if self.dead.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Reply::Failed(Failure::Unavailable(
                String::from("connection refused (the test killed the store)"),
            ))));
        }
        self.inner.execute(command)
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn waiting(&self) {
        self.waits.fetch_add(1, Ordering::SeqCst);
    }

    fn describe(&self) -> String {
        String::from("flaky test store")
    }
}

/// Polls `condition` (yielding between polls) until it holds; panics after `within`.
pub async fn wait_until(within: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let polled = tokio::time::timeout(within, async {
        while !condition() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(polled.is_ok(), "timed out waiting until {what}");
}

/// Runs `future`, failing the test if it takes longer than `within`.
pub async fn within<F: Future>(within: Duration, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(within, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {within:?}: {what}"),
    }
}

/// The commands one failed attempt on a held lock costs before the waiter sleeps:
/// unique insert: insert-if-absent; bakery: entering, read, ticket, read;
/// column prefix: write, read, delete.
pub fn commands_of_a_failed_attempt(strategy: Strategy) -> u64 {
    match strategy {
        Strategy::UniqueInsert => 1,
        Strategy::Bakery => 4,
        Strategy::ColumnPrefix => 3,
    }
}
