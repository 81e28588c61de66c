//! [`Detached`]: the connections a PostgreSQL, MariaDB or SQLite-file store runs its own
//! statements on, taken out of its sqlx pool so that no statement costs a ping.
//!
//! sqlx's pool pings a connection when it is returned (always, in a task of its own) and, with
//! `test_before_acquire`, before handing it out: two round trips that do no work around every
//! statement, and the first of them delays the next statement on that connection. A store
//! learns a connection's health from its own statements instead: a broken connection fails the
//! statement with an I/O error, which the kernel settles (a read-back, or a resend on another
//! connection), and the connection is dropped.
//!
//! So a store checks connections out of its pool once, detaches them ([`PoolConnection::detach`],
//! after which the pool no longer counts them) and keeps them here, up to the pool's size. A
//! connection goes back to the idle list only after a command that succeeded; after a failure,
//! a timeout or a cancelled command it is dropped (closed), since it may be mid-statement or
//! inside a transaction. The pool itself stays the caller's, for transactions
//! ([`SqlStore::pool`](super::SqlStore::pool)); its connections and these are counted apart.
//!
//! Each connection keeps its statement timer ([`Deadline`]) with it, so that its statements'
//! client-side time limit costs no new timer each.
//!
//! A SQLite file's store detaches its connections too: there a ping crosses no network but is
//! a round trip to the connection's worker thread, and the two around each statement made a
//! lock + release 1.41-1.44x two plain `UPDATE`s on one connection (`bench_sql`, in blocks,
//! 2026-12-02). An in-memory database is not detached (it lives in the pool's only
//! connection), nor is a caller's SQLite pool (which may hold one).
//!
//! [`PoolConnection::detach`]: sqlx::pool::PoolConnection::detach

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::deadline::Deadline;

/// Idle detached connections of one store, each with its statement timer, and the permits that
/// bound how many exist.
pub(crate) struct Detached<C> {
    idle: Mutex<Vec<(C, Deadline)>>,
    permits: std::sync::Arc<Semaphore>,
}

impl<C> Detached<C> {
    /// Room for `size` connections (at least one).
    pub fn new(size: u32) -> Self {
        Detached {
            idle: Mutex::new(Vec::new()),
            permits: std::sync::Arc::new(Semaphore::new(size.max(1) as usize)),
        }
    }

    /// A connection: an idle one, or a new one from `connect`. Waits for a permit first (a
    /// command waits here when `size` commands are running).
    ///
    /// `connect` is called only when no connection is idle, and its future is boxed: opening a
    /// connection is a large future (several KB for PostgreSQL), which would otherwise be
    /// built and copied with every statement's future, though a store rarely connects.
    pub async fn checkout<E, F, Fut>(&self, connect: F) -> Result<Checkout<'_, C>, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<C, E>>,
    {
        // The semaphore is never closed.
        let permit = std::sync::Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .ok();
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match idle {
            Some(conn) => conn,
            None => (Box::pin(connect()).await?, Deadline::default()),
        };
        Ok(Checkout {
            home: self,
            conn: Some(conn),
            _permit: permit,
        })
    }
}

/// A checked-out connection: dropped (closed) unless [`Checkout::keep`] puts it back.
pub(crate) struct Checkout<'a, C> {
    home: &'a Detached<C>,
    conn: Option<(C, Deadline)>,
    _permit: Option<OwnedSemaphorePermit>,
}

impl<C> Checkout<'_, C> {
    /// The connection and its statement timer, to run a statement within a time limit.
    pub fn with_deadline(&mut self) -> (&mut C, &mut Deadline) {
        // Present until `keep` consumes the checkout.
        let (conn, deadline) = self.conn.as_mut().expect("a checked-out connection");
        (conn, deadline)
    }

    /// Puts the connection back for the next command (after a command that succeeded).
    pub fn keep(mut self) {
        if let Some(conn) = self.conn.take() {
            self.home
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

impl<C> Deref for Checkout<'_, C> {
    type Target = C;

    fn deref(&self) -> &C {
        // Present until `keep` consumes the checkout.
        &self.conn.as_ref().expect("a checked-out connection").0
    }
}

impl<C> DerefMut for Checkout<'_, C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.conn.as_mut().expect("a checked-out connection").0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn kept_connections_are_reused_and_dropped_ones_replaced() {
        let set: Detached<u32> = Detached::new(2);
        let next = std::sync::atomic::AtomicU32::new(0);
        let connect =
            || async { Ok::<_, ()>(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) };
        let a = set.checkout(connect).await.expect("connects");
        assert_eq!(*a, 0);
        a.keep();
        let b = set.checkout(connect).await.expect("idle");
        assert_eq!(*b, 0, "the kept connection is reused");
        drop(b);
        let c = set.checkout(connect).await.expect("connects");
        assert_eq!(*c, 1, "a dropped connection is replaced by a new one");
    }

    #[tokio::test]
    async fn no_more_than_size_connections_are_out() {
        let set: Detached<u32> = Detached::new(1);
        let first = set
            .checkout(|| async { Ok::<_, ()>(1) })
            .await
            .expect("first");
        assert_eq!(set.permits.available_permits(), 0, "a second would wait");
        drop(first);
        assert_eq!(set.permits.available_permits(), 1);
        assert!(set.checkout(|| async { Ok::<_, ()>(3) }).await.is_ok());
    }
}
