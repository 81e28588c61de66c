//! The in-process store: the kernel's reference table behind a mutex.

use baton_kernel::{Command, Instant, MemoryTable, Reply};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

use crate::stores::store::{may_free_a_lock, Store, StoreFuture};

/// A lock table in this process's memory: the kernel's [`MemoryTable`] shared between threads.
///
/// Cloning is cheap and clones share the table, so lockers built on clones of one store exclude
/// each other (within this process only: use a database store across processes). Commands apply
/// at the store's *own* clock: the tokio clock since the store was created, so TTLs expire on
/// schedule under `tokio::time::pause()` too. Releases bump [`Store::changes`], waking waiters.
/// Writes are stamped by the table itself ([`MemoryTable::apply`]) in the order they are
/// applied, which is the order they were sent: a command is applied as soon as it is sent.
#[derive(Clone, Debug)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    table: Mutex<MemoryTable>,
    epoch: tokio::time::Instant,
    changes: watch::Sender<u64>,
}

impl MemoryStore {
    /// An empty store whose clock starts now.
    pub fn new() -> Self {
        MemoryStore {
            inner: Arc::new(Inner {
                table: Mutex::new(MemoryTable::new()),
                epoch: tokio::time::Instant::now(),
                changes: watch::Sender::new(0),
            }),
        }
    }

    /// The store's clock: time since it was created.
    pub fn now(&self) -> Instant {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.inner.epoch);
        Instant::from_duration(elapsed)
    }

    /// A copy of the table as it is now (for tests and debugging).
    pub fn snapshot(&self) -> MemoryTable {
        self.table().clone()
    }

    /// Applies `command` at the store's clock, synchronously.
    pub fn apply(&self, command: &Command) -> Reply {
        let reply = {
            let mut table = self.table();
            table.apply(command, self.now())
        };
        if may_free_a_lock(command, &reply) {
            self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        reply
    }

    /// A poisoned mutex only means another thread panicked while holding it; every
    /// [`MemoryTable::apply`] leaves the table consistent, so carry on with it.
    fn table(&self) -> MutexGuard<'_, MemoryTable> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl Store for MemoryStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        let reply = self.apply(&command);
        Box::pin(std::future::ready(reply))
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.changes.subscribe())
    }

    fn describe(&self) -> String {
        String::from("memory store")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_kernel::{ColumnFilter, Consistency, ReadConsistency, SerialConsistency, Write};
    use std::time::Duration;

    fn put(column: &str, ttl: Option<Duration>) -> Command {
        Command::Put {
            row: "r".into(),
            column: column.into(),
            value: "v".into(),
            ttl,
            consistency: Consistency::Quorum,
        }
    }

    fn read() -> Command {
        Command::Read {
            row: "r".into(),
            filter: ColumnFilter::All,
            consistency: ReadConsistency::Plain(Consistency::Quorum),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn expires_by_its_own_clock() {
        let store = MemoryStore::new();
        store.apply(&put("a", Some(Duration::from_millis(50))));
        tokio::time::advance(Duration::from_millis(49)).await;
        assert!(matches!(store.execute(read()).await, Reply::Cells(c) if c.len() == 1));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(store.execute(read()).await, Reply::Cells(vec![]));
    }

    #[tokio::test]
    async fn bumps_changes_only_when_a_lock_may_be_free() {
        let store = MemoryStore::new();
        let rx = store.changes().expect("memory store has changes");
        let count = || *rx.borrow();
        store.apply(&put("a", None));
        store.apply(&read());
        assert_eq!(count(), 0);
        let cas = |new: Option<&str>| Command::CompareAndSet {
            row: "r".into(),
            column: "a".into(),
            expected: "v".into(),
            new: new.map(String::from),
            ttl: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        };
        store.apply(&cas(Some("v")));
        assert_eq!(count(), 0, "a conditional update frees nothing");
        store.apply(&cas(None));
        assert_eq!(count(), 1, "a conditional delete that applied");
        store.apply(&cas(None));
        assert_eq!(count(), 1, "a conditional delete that did not apply");
        store.apply(&Command::Delete {
            row: "r".into(),
            column: "b".into(),
            consistency: Consistency::Quorum,
        });
        assert_eq!(
            count(),
            1,
            "an acquisition removing its own cell frees nothing waited for"
        );
        store.apply(&Command::DeleteVersion {
            row: "r".into(),
            column: "b".into(),
            stamp: u64::MAX,
            consistency: Consistency::Quorum,
        });
        assert_eq!(count(), 2, "another owner's cell removed");
        store.apply(&Command::Batch {
            after: 0,
            row: "r".into(),
            writes: vec![Write::Delete { column: "c".into() }],
            consistency: Consistency::Quorum,
        });
        assert_eq!(count(), 3);
        store.apply(&Command::DeleteVersion {
            row: "r".into(),
            column: "a".into(),
            stamp: 1,
            consistency: Consistency::Quorum,
        });
        assert_eq!(count(), 4, "a delete-version");
        store.apply(&Command::Purge { row: None });
        assert_eq!(count(), 4, "a purge that removed nothing");
    }

    #[test]
    fn survives_a_poisoned_mutex() {
        let store = MemoryStore::new();
        let clone = store.clone();
        let _ = std::thread::spawn(move || {
            let _held = clone.inner.table.lock();
            panic!("poison the table");
        })
        .join();
        assert!(store.inner.table.is_poisoned());
        assert_eq!(store.apply(&put("a", None)), Reply::Written);
        assert_eq!(store.snapshot().stored_cells(), 1);
    }
}
