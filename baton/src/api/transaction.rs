//! Locks inside the caller's transactions (Alfresco's commit/rollback rule).
//!
//! The caller keeps using sqlx: it begins a transaction on the lock table's database (for
//! example on [`SqlStore::pool`]) and passes `&mut *tx` to
//!
//! - [`Locker::lock_in`]: the lock row is written inside the transaction, so it commits or rolls
//!   back with it. Unique insert only (its unique key makes others wait for the outcome), and
//!   without keep-alive: the transaction must finish within the TTL.
//! - [`Guard::release_in`]: the release is written inside the transaction, so the caller's own
//!   writes and the release commit together. If the transaction rolls back instead, the lock is
//!   still held in the database; dropping the guard (or calling [`Guard::release`]) then
//!   releases it in a transaction of its own. After a commit that second release finds nothing
//!   to do and reports `Ok`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use baton::{LockRequest, Locker, SqlStore};
//! let store = SqlStore::open("sqlite:///var/lib/app/app.db")?;
//! let locker = Locker::new(store.clone());
//! let pool = store.pool().sqlite().expect("a SQLite store").clone();
//!
//! // Release together with the caller's writes.
//! let mut guard = locker.lock("invoice 42").await?;
//! let mut tx = pool.begin().await?;
//! baton::sqlx::query("UPDATE invoices SET sent = 1 WHERE id = 42").execute(&mut *tx).await?;
//! guard.release_in(&mut *tx).await?;
//! tx.commit().await?;
//! drop(guard); // after a rollback this would release the lock; after the commit, nothing to do
//!
//! // Lock only if the transaction commits.
//! let mut tx = pool.begin().await?;
//! let guard = locker.lock_in(&mut *tx, "invoice 43", LockRequest::new()).await?;
//! // ... the caller's writes on &mut *tx ...
//! tx.commit().await?;
//! # drop(guard);
//! # Ok(())
//! # }
//! ```
//!
//! The lock table must be in the database the transaction runs on, and transactions that take
//! locks should run at READ COMMITTED (PostgreSQL's default; MariaDB's default REPEATABLE READ
//! also works for unique insert, whose statements all read the latest committed row). A failed
//! statement aborts a PostgreSQL transaction: a lock operation that fails inside one (including
//! a wait for another transaction's lock that outlasts the statement timeout) leaves the caller's
//! transaction to roll back. `sqlite::memory:` has a single connection, so a transaction on it
//! leaves none for the store: use a SQLite file.

use baton_kernel::{Error, ErrorKind, LockLife, Release, Result};

use crate::api::guard::Guard;
use crate::api::locker::Locker;
use crate::api::request::LockRequest;
use crate::host::life_host::in_context;
use crate::stores::sql::tx::ConnStore;
use crate::stores::sql::{SqlConn, SqlStore};

impl Locker {
    /// Acquires `name` inside the caller's transaction on `conn` (`&mut *tx`): the lock row
    /// commits or rolls back with the transaction, and other processes wait for that outcome.
    ///
    /// Needs a locker on a [`SqlStore`] whose table is in the transaction's database, and the
    /// unique-insert strategy (bakery and column prefix rely on reads that cannot see an
    /// uncommitted lock; they give [`ErrorKind::InvalidOption`]). The guard has no keep-alive
    /// (renewals through the pool would wait for the transaction): commit within the TTL, and
    /// check [`Guard::is_held`] before relying on the lock late in a long transaction. Waiting
    /// for a held lock works as with [`Locker::lock_with`], polling inside the transaction.
    ///
    /// Until the transaction ends, others trying the same name wait for it (up to their
    /// statement timeout, then they see [`ErrorKind::StoreUnavailable`] and retry). If the
    /// transaction rolls back, the lock was never taken: dropping the guard then finds nothing to
    /// release (and logs that the lease was lost).
    pub async fn lock_in<C: SqlConn + ?Sized>(
        &self,
        conn: &mut C,
        name: &str,
        request: LockRequest,
    ) -> Result<Guard> {
        let sql = self.require_sql("lock_in")?;
        let store = ConnStore::new(conn, sql).await?;
        self.acquire_on(name, request.keep_alive(false), &store, true)
            .await
    }

    /// The locker's store, if it is a [`SqlStore`]: for its [`SqlStore::pool`], to begin the
    /// transactions that [`Locker::lock_in`] and [`Guard::release_in`] join.
    pub fn sql_store(&self) -> Option<&SqlStore> {
        self.store()
            .as_any()
            .and_then(|s| s.downcast_ref::<SqlStore>())
    }

    /// The locker's store as a [`SqlStore`], or [`ErrorKind::InvalidOption`] naming `method`.
    pub(crate) fn require_sql(&self, method: &str) -> Result<SqlStore> {
        self.sql_store().cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "{method} needs a locker on a SQL store, not on the {}",
                    self.store().describe()
                ),
            )
        })
    }
}

impl Guard {
    /// Releases the lock inside the caller's transaction on `conn` (`&mut *tx`), so the release
    /// commits together with the caller's own writes. Keep-alive stops.
    ///
    /// If the transaction commits, the lock is free from that moment. If it rolls back, the
    /// lock is still held: dropping the guard, or [`Guard::release`], releases it in its own
    /// transaction: after a commit it finds nothing left and reports `Ok`, unless an operator
    /// force-released the lock since or the lease's deadline passed (keep-alive stops here):
    /// then [`ErrorKind::Lost`], as it cannot tell a commit from a rollback followed by either;
    /// after a rollback it reports as any release does.
    /// Calling `release_in` again in a new transaction after a rollback is fine too.
    ///
    /// Errors as for [`Guard::release`]: [`ErrorKind::Lost`] if the lease had been lost, store
    /// kinds if the statement failed (on PostgreSQL the transaction is then aborted).
    pub async fn release_in<C: SqlConn + ?Sized>(&mut self, conn: &mut C) -> Result<()> {
        let sql = self
            .store
            .as_any()
            .and_then(|s| s.downcast_ref::<SqlStore>())
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "release_in needs a lock on a SQL store, not on the {}",
                        self.store.describe()
                    ),
                )
            })?;
        let store = ConnStore::new(conn, sql).await?;
        // Once no renewal is in flight, the machine stops renewing and hands over the lease.
        let before = self.life.view().elsewhere;
        self.life.request(LockLife::release_elsewhere)?;
        let view = self.life.wait_for(|v| v.elsewhere > before || v.done).await;
        let Some((lease, lost)) = view.last_elsewhere.filter(|_| view.elsewhere > before) else {
            return Err(Error::new(
                ErrorKind::NotOwner,
                format!("lock {:?} was released meanwhile", self.name()),
            ));
        };
        let clock = self.life.clock().clone();
        let result = crate::host::driver::drive(&mut Release::new(&lease), &store, &clock)
            .await
            .map_err(|e| in_context(e, &store));
        match lost {
            Some(e) => Err(e),
            None => result,
        }
    }
}
