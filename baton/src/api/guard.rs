//! [`Guard`]: a held lock that releases itself when dropped.
//!
//! A guard is a handle on the lock's [`LockLife`](baton_kernel::LockLife) machine, which a task
//! on the runtime that acquired the lock drives (the `life_host` module): renewals, loss,
//! release. The guard's methods are requests to that machine and waits for their outcomes;
//! [`Guard::release`] also sends the release's command itself when nothing else is on its way,
//! so that its reply does not cross threads twice.

use std::fmt;
use std::sync::Arc;

use baton_kernel::{Cell, Error, ErrorKind, Grant, Lease, LifeStatus, LockLife, Result, Write};
use tokio::runtime::Handle;

use crate::host::life_host::{self, Life};
use crate::host::starter::Starter;
use crate::stores::store::Store;

/// A held lock. Dropping it releases the lock (in the background, on the runtime that acquired
/// it); [`Guard::release`] does it now and reports the outcome.
///
/// While held, a background task renews the lease when about a third of its validity has
/// passed (unless keep-alive is off), and marks it lost, never silently, when a renewal finds
/// the lock gone or taken over, or when the deadline passes without a successful renewal.
/// Check [`Guard::is_held`] before acting as the owner, wait on [`Guard::lost`] to abort
/// work, and show [`Guard::token`] to resources that can fence stale holders.
///
/// A guard dropped in a forked child process does nothing at all, and releasing or renewing it
/// there gives [`ErrorKind::NotOwner`]: the lock belongs to the parent, and the parent's
/// runtime does not exist in the child.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct Guard {
    name: String,
    token: u64,
    granted: Lease,
    row: Vec<Cell>,
    pub(crate) life: Arc<Life>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) runtime: Handle,
    pub(crate) pid: u32,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("name", &self.name)
            .field("token", &self.token)
            .field("status", &self.life.status())
            .field("deadline", &self.lease().deadline())
            .finish_non_exhaustive()
    }
}

impl Guard {
    /// The guard of a granted lock: the rest of its life is driven on `store`, by a task on
    /// `runtime` started when first needed, by `starter` when its first renewal falls due (see
    /// [`Life::hand_over`]).
    pub(crate) fn start(
        life: Arc<Life>,
        grant: Grant,
        store: Arc<dyn Store>,
        runtime: Handle,
        pid: u32,
        starter: &Starter,
    ) -> Guard {
        let Grant { lease, row } = grant;
        life.hand_over(Arc::clone(&store), runtime.clone(), starter);
        Guard {
            name: lease.name().as_str().to_owned(),
            token: lease.token(),
            granted: lease,
            row,
            life,
            store,
            runtime,
            pid,
        }
    }

    /// The lease as it stands now (its deadline moves with each renewal).
    pub fn lease(&self) -> Lease {
        self.life
            .view()
            .lease
            .unwrap_or_else(|| self.granted.clone())
    }

    /// The fencing token: larger than every token granted before for this name.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the lock is held as: exclusive, shared, or one permit of a semaphore.
    pub fn mode(&self) -> baton_kernel::Mode {
        self.granted.mode()
    }

    /// Whether the guard still holds the lock: not released, not lost, and its deadline (on
    /// the locker's clock) not passed. Check it before acting as the owner.
    pub fn is_held(&self) -> bool {
        matches!(self.life.status(), LifeStatus::Held(_))
    }

    /// How long the lease has left before its deadline (zero once lost or released). Renewals
    /// move the deadline; this is the time to finish or to check again.
    pub fn remaining(&self) -> std::time::Duration {
        let life = &self.life;
        life.machine().remaining(life.clock().now())
    }

    /// Why the lease was lost, if it was.
    pub fn loss(&self) -> Option<Error> {
        match self.life.status() {
            LifeStatus::Lost(e) => Some(e),
            _ => None,
        }
    }

    /// `Ok` while the lock is held; once the lease was lost (a failed renewal, a takeover, a
    /// break, or its deadline passed), the loss, of kind [`ErrorKind::Lost`]; after a release,
    /// [`ErrorKind::NotOwner`]. QCassandraLock-style code calls it before trusting the lock
    /// again after a long step.
    pub fn check(&self) -> Result<()> {
        let life = &self.life;
        life.machine().check(life.clock().now(), &self.name)
    }

    /// In a forked child, the error every operation on the parent's lock gives (the lock and
    /// the runtime that keeps it are the parent's); `None` in the process that took it.
    pub(crate) fn forked(&self) -> Option<Error> {
        (std::process::id() != self.pid).then(|| {
            Error::new(
                ErrorKind::NotOwner,
                format!(
                    "lock {:?} belongs to process {}, which took it; this forked child cannot renew or release it",
                    self.name, self.pid
                ),
            )
            .with_lock(self.name.as_str())
        })
    }

    /// Resolves when the guard no longer holds the lock: the lease was lost (renewal failed,
    /// the lock was taken over or broken, or the deadline passed), or it was released.
    pub async fn lost(&self) {
        self.life.until_not_held().await;
    }

    /// With column prefix and [`LockRequest::read_row`](crate::LockRequest::read_row): the
    /// row's data columns as read when the lock was granted. Empty otherwise.
    pub fn row(&self) -> &[Cell] {
        &self.row
    }

    /// Renews the lease now (the keep-alive task does this by itself).
    ///
    /// Errors: [`ErrorKind::Lost`](crate::ErrorKind::Lost) if the lease had ended, been taken
    /// over or broken (the guard is then lost); [`ErrorKind::NotOwner`](crate::ErrorKind::NotOwner)
    /// after release; store kinds otherwise (the lease then stays valid until its current
    /// deadline).
    pub async fn renew(&self) -> Result<()> {
        if let Some(e) = self.forked() {
            return Err(e);
        }
        let before = self.life.view().renewals;
        self.life.request(LockLife::renew_now)?;
        let view = self.life.wait_for(|v| v.renewals > before || v.done).await;
        match view.last_renewal {
            Some(result) if view.renewals > before => result,
            _ => Err(Error::new(
                ErrorKind::NotOwner,
                format!("lock {:?} was released during the renewal", self.name),
            )),
        }
    }

    /// Releases the lock.
    ///
    /// `Ok` means the lease was valid until the release was sent: the critical section was
    /// protected throughout. [`ErrorKind::Lost`](crate::ErrorKind::Lost) means it was not (it
    /// had been lost, or the kernel found it ended); the guard's own cell is removed either way
    /// where it still exists. A second call gives [`ErrorKind::NotOwner`](crate::ErrorKind::NotOwner).
    /// On a store error the lock expires with its TTL; the guard counts as released either way.
    pub async fn release(&mut self) -> Result<()> {
        if let Some(e) = self.forked() {
            return Err(e);
        }
        life_host::release(&self.life, &*self.store, Vec::new()).await
    }

    /// Releases the lock and, in the same batch, applies `writes` to data columns of the lock's
    /// row (Astyanax's `releaseWithMutation`). The kernel decides which strategies share their
    /// row with data (column prefix); other strategies, writes to the lock's own columns, and
    /// writes to `_LOCK_` or `lock` (every strategy's fencing counter and unique insert's lock
    /// cell, reserved on every name) give
    /// [`ErrorKind::InvalidOption`](crate::ErrorKind::InvalidOption) and leave the lock held.
    pub async fn release_with(&mut self, writes: Vec<Write>) -> Result<()> {
        if let Some(e) = self.forked() {
            return Err(e);
        }
        life_host::release(&self.life, &*self.store, writes).await
    }

    /// Whether the life is over or its release already asked for (nothing left for a drop).
    pub(crate) fn released(&self) -> bool {
        let view = self.life.view();
        view.done || view.released.is_some() || matches!(self.life.status(), LifeStatus::Released)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // A forked child: the lock is the parent's, and the parent's runtime (its threads,
            // its timers) does not exist here. Touch nothing: leak our references so no
            // destructor wakes a task or takes a lock another thread held at fork time.
            std::mem::forget(Arc::clone(&self.life));
            std::mem::forget(Arc::clone(&self.store));
            std::mem::forget(self.runtime.clone());
            return;
        }
        // The task (started now if the life had none and is not over) releases the lock (a
        // held one; a lost one is cleaned up) and ends.
        self.life.request(LockLife::cancel);
        if self.life.driver_is_gone() && !self.released() {
            tracing::warn!(
                lock = %self.name,
                token = self.token,
                "guard dropped after its runtime shut down: the lock could not be released and will expire with its TTL"
            );
        }
    }
}
