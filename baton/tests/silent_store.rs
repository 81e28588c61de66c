//! A store that stops answering costs a caller who gave a timeout no more than that timeout:
//! `lock()` fails with `StoreUnavailable` when its wait ends, whatever the store's own command
//! timeout and attempts would have cost (six command timeouts before), and what the acquisition
//! may have written is removed in the background once the store answers again.
//!
//! Two kinds of silence: a store in this process whose command never answers (every
//! strategy), and a TCP server on loopback that accepts connections and never says a word,
//! named by a PostgreSQL or MariaDB URL (the clients' own connection handling included).

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{
    Command, ErrorKind, LockRequest, Locker, MemoryStore, Reply, Store, StoreFuture, Strategy,
};
use tokio::sync::watch;

use common::within;

/// The lock's timeout in these tests.
const WAIT: Duration = Duration::from_secs(2);
/// How late after the timeout the error may come: scheduling, not the store.
const SLACK: Duration = Duration::from_millis(700);

/// A memory store that never answers while `silent` is set (commands are not applied then).
#[derive(Clone)]
struct Silent {
    inner: MemoryStore,
    silent: Arc<AtomicBool>,
    unanswered: Arc<AtomicU64>,
}

impl Store for Silent {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        if self.silent.load(Ordering::SeqCst) {
            self.unanswered.fetch_add(1, Ordering::SeqCst);
            return Box::pin(std::future::pending::<Reply>());
        }
        self.inner.execute(command)
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn describe(&self) -> String {
        String::from("silent test store")
    }
}

#[tokio::test]
async fn a_silent_store_fails_the_wait_at_its_timeout_on_every_strategy() {
    for strategy in Strategy::ALL {
        let store = Silent {
            inner: MemoryStore::new(),
            silent: Arc::new(AtomicBool::new(true)),
            unanswered: Arc::default(),
        };
        let locker = Locker::builder(store.clone())
            .strategy(strategy)
            .build()
            .expect("options");
        let started = Instant::now();
        let e = within(
            WAIT * 10,
            "lock() on a silent store",
            locker.lock_with("job", LockRequest::new().wait_timeout(WAIT)),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("{strategy}: a silent store grants nothing"));
        let took = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
        assert!(e.to_string().contains("did not answer"), "{strategy}: {e}");
        assert!(
            took >= WAIT && took < WAIT + SLACK,
            "{strategy}: failed after {took:?}, for a timeout of {WAIT:?}: {e}"
        );
        assert_eq!(store.unanswered.load(Ordering::SeqCst), 1, "{strategy}");
        // The store answers again: the name is free (nothing was applied).
        store.silent.store(false, Ordering::SeqCst);
        let mut guard = locker.try_lock("job").await.expect("free again");
        guard.release().await.expect("release");
    }
}

/// A TCP server on loopback that accepts every connection and never writes a byte; connections
/// are kept open (a reset would be an answer).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
async fn silent_server() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let task = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    (port, task)
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
async fn fails_within_the_wait(url: &str) {
    let started = Instant::now();
    let outcome = within(WAIT * 10, &format!("open and lock on {url}"), async {
        let locker = Locker::open(url)?;
        locker
            .lock_with("job", LockRequest::new().wait_timeout(WAIT))
            .await
            .map(drop)
    })
    .await;
    let took = started.elapsed();
    let e = outcome.expect_err("a silent server grants nothing");
    assert!(
        matches!(e.kind(), ErrorKind::StoreUnavailable),
        "{url}: {e} ({:?})",
        e.kind()
    );
    assert!(
        took < WAIT + SLACK,
        "{url}: failed after {took:?}, for a timeout of {WAIT:?}: {e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[cfg(feature = "postgres")]
async fn a_silent_postgres_server_fails_the_wait_at_its_timeout() {
    let (port, server) = silent_server().await;
    fails_within_the_wait(&format!("postgres://baton@127.0.0.1:{port}/baton")).await;
    server.abort();
}

#[tokio::test]
#[cfg(feature = "mysql")]
async fn a_silent_mariadb_server_fails_the_wait_at_its_timeout() {
    let (port, server) = silent_server().await;
    fails_within_the_wait(&format!("mysql://baton@127.0.0.1:{port}/baton")).await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread")]
#[cfg(feature = "cassandra")]
async fn a_silent_cassandra_node_fails_the_wait_at_its_timeout() {
    let (port, server) = silent_server().await;
    fails_within_the_wait(&format!("cassandra://127.0.0.1:{port}/baton")).await;
    server.abort();
}
