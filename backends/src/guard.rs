//! [`Guard`]: a held lock that releases itself when dropped.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use baton_kernel::{Cell, Error, ErrorKind, Grant, Lease, Release, Renew, Result, Write};
use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::keep_alive;
use crate::locker::Locker;
use crate::slots::Slot;
use crate::store::Store;

/// Where a guard's lease stands.
#[derive(Clone, Debug)]
pub(crate) enum Status {
    /// Held (as far as renewals know; the deadline is checked separately).
    Held,
    /// Lost, and why.
    Lost(Error),
    /// Released (or being released) by the guard.
    Released,
    /// Released inside a caller's database transaction ([`Guard::release_in`]): a release
    /// through the locker's store is still due, in case the transaction rolled back (it finds
    /// nothing to do after a commit).
    InTransaction,
}

/// What a guard shares with its background task.
pub(crate) struct Shared {
    pub(crate) locker: Locker,
    lease: Mutex<Lease>,
    status: watch::Sender<Status>,
    /// Serializes renewals and the release, so a renewal's write never lands after the release.
    pub(crate) ops: tokio::sync::Mutex<()>,
    /// Tells the background task that the lease or the status changed.
    pub(crate) kick: Notify,
    pub(crate) keep_alive: bool,
    /// The owner-id slot: freed once the lease is released, or when the guard and its background
    /// work are gone.
    slot: Mutex<Option<Slot>>,
}

impl Shared {
    pub(crate) fn lease(&self) -> Lease {
        self.lease_slot().clone()
    }

    fn lease_slot(&self) -> MutexGuard<'_, Lease> {
        self.lease.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    pub(crate) fn is_active(&self) -> bool {
        matches!(*self.status.borrow(), Status::Held)
    }

    /// Marks the lease lost if its deadline has passed; returns whether it is still held.
    pub(crate) fn check_deadline(&self) -> bool {
        if !self.is_active() {
            return false;
        }
        let deadline = self.lease_slot().deadline();
        if self.locker.clock().now() < deadline {
            return true;
        }
        let why = if self.keep_alive {
            "its deadline passed without a successful renewal"
        } else {
            "its deadline passed (keep-alive is off)"
        };
        self.mark_lost(self.lost_error(why));
        false
    }

    /// Marks the lease lost (once; a released guard stays released).
    pub(crate) fn mark_lost(&self, error: Error) {
        let marked = self.status.send_if_modified(|status| {
            if matches!(status, Status::Held) {
                *status = Status::Lost(error.clone());
                true
            } else {
                false
            }
        });
        if marked {
            tracing::warn!(lock = %self.lease_slot().name(), "{error}");
            self.kick.notify_one();
        }
    }

    /// A loss for `why`, in the kernel's wording.
    pub(crate) fn lost_error(&self, why: &str) -> Error {
        let lease = self.lease_slot();
        Error::new(
            ErrorKind::Lost,
            format!(
                "lease on lock {:?} (token {}) is lost: {why}",
                lease.name().as_str(),
                lease.token()
            ),
        )
    }

    /// One renewal (the caller holds `ops`): updates the lease, or marks it lost.
    pub(crate) async fn renew_locked(&self) -> Result<()> {
        match self.status() {
            Status::Released | Status::InTransaction => {
                return Err(already_released(&self.lease()))
            }
            Status::Lost(e) => return Err(e),
            Status::Held => {}
        }
        let lease = self.lease();
        let result = self.locker.run(&mut Renew::new(&lease)).await;
        self.after_renewal(result)
    }

    /// Applies a renewal's outcome.
    pub(crate) fn after_renewal(&self, result: Result<Lease>) -> Result<()> {
        match result {
            Ok(renewed) => {
                tracing::debug!(lock = %renewed.name(), deadline = ?renewed.deadline(), "lease renewed");
                *self.lease_slot() = renewed;
                self.kick.notify_one();
                Ok(())
            }
            Err(e) if matches!(e.kind(), ErrorKind::Lost | ErrorKind::NotOwner) => {
                self.mark_lost(e.clone());
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Releases the lease, once: later calls get [`ErrorKind::NotOwner`].
    pub(crate) async fn release(&self, writes: Option<Vec<Write>>) -> Result<()> {
        let _ops = self.ops.lock().await;
        let lease = self.lease();
        let lost = match self.status() {
            Status::Released => return Err(already_released(&lease)),
            Status::InTransaction if writes.is_some() => return Err(already_released(&lease)),
            Status::InTransaction => {
                // The release already ran in the caller's transaction. If that rolled back, this
                // one releases the lock; if it committed, there is nothing left, which is fine.
                self.status.send_replace(Status::Released);
                let result = self.locker.run(&mut Release::new(&lease)).await;
                self.free_slot();
                return match result {
                    Err(e) if e.kind() == ErrorKind::Lost => Ok(()),
                    other => other,
                };
            }
            Status::Lost(e) => Some(e),
            Status::Held => None,
        };
        let mut op = match writes {
            Some(writes) => Release::with_mutation(&lease, writes)?,
            None => Release::new(&lease),
        };
        self.status.send_replace(Status::Released);
        self.kick.notify_one();
        let result = self.locker.run(&mut op).await;
        self.free_slot();
        match (lost, result) {
            // The cell is cleaned up either way, but the holder must hear that it had lost.
            (Some(e), _) => Err(e),
            (None, result) => result,
        }
    }
}

impl Shared {
    /// Frees the owner-id slot for the next acquisition of this name (reuse is safe once our
    /// release has run, whatever its outcome: values carry a fresh acquisition id).
    fn free_slot(&self) {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Releases the lease through `store`, a caller's transaction: the guard then stops its
    /// keep-alive and owes one more release through the locker's own store (see
    /// [`Status::InTransaction`]). Allowed again after a rollback.
    #[cfg_attr(
        not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
        allow(dead_code)
    )]
    pub(crate) async fn release_in_transaction(&self, store: &dyn Store) -> Result<()> {
        let _ops = self.ops.lock().await;
        let lease = self.lease();
        let lost = match self.status() {
            Status::Released => return Err(already_released(&lease)),
            Status::Lost(e) => Some(e),
            Status::Held | Status::InTransaction => None,
        };
        self.status.send_replace(Status::InTransaction);
        self.kick.notify_one();
        let result = self.locker.run_on(&mut Release::new(&lease), store).await;
        match (lost, result) {
            (Some(e), _) => Err(e),
            (None, result) => result,
        }
    }
}

fn already_released(lease: &Lease) -> Error {
    Error::new(
        ErrorKind::NotOwner,
        format!(
            "lock {:?} (token {}) was already released by this guard",
            lease.name().as_str(),
            lease.token()
        ),
    )
}

/// A held lock. Dropping it releases the lock (in the background, on the runtime that acquired
/// it); [`Guard::release`] does it now and reports the outcome.
///
/// While held, a background task renews the lease when about a third of its validity has
/// passed (unless keep-alive is off), and marks it lost, never silently, when a renewal finds
/// the lock gone or taken over, or when the deadline passes without a successful renewal.
/// Check [`Guard::is_held`] before acting as the owner, wait on [`Guard::lost`] to abort
/// work, and show [`Guard::token`] to resources that can fence stale holders.
///
/// A guard dropped in a forked child process does nothing at all: the lock belongs to the
/// parent, and the parent's runtime does not exist in the child.
pub struct Guard {
    name: String,
    token: u64,
    row: Vec<Cell>,
    pub(crate) shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
    pub(crate) runtime: Handle,
    pub(crate) pid: u32,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("name", &self.name)
            .field("token", &self.token)
            .field("status", &self.shared.status())
            .field("deadline", &self.shared.lease().deadline())
            .finish_non_exhaustive()
    }
}

impl Guard {
    pub(crate) fn start(
        locker: Locker,
        grant: Grant,
        keep_alive: bool,
        runtime: Handle,
        pid: u32,
        slot: Slot,
    ) -> Guard {
        let Grant { lease, row } = grant;
        let name = lease.name().as_str().to_owned();
        let token = lease.token();
        let shared = Arc::new(Shared {
            locker,
            lease: Mutex::new(lease),
            status: watch::Sender::new(Status::Held),
            ops: tokio::sync::Mutex::new(()),
            kick: Notify::new(),
            keep_alive,
            slot: Mutex::new(Some(slot)),
        });
        // Without keep-alive there is nothing to do in the background: the deadline is checked
        // by whoever asks (is_held, loss, lost).
        let task = keep_alive.then(|| runtime.spawn(keep_alive::run(Arc::clone(&shared))));
        Guard {
            name,
            token,
            row,
            shared,
            task,
            runtime,
            pid,
        }
    }

    /// The lease as it stands now (its deadline moves with each renewal).
    pub fn lease(&self) -> Lease {
        self.shared.lease()
    }

    /// The fencing token: larger than every token granted before for this name.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the guard still holds the lock: not released, not lost, and its deadline (on
    /// the locker's clock) not passed. Check it before acting as the owner.
    pub fn is_held(&self) -> bool {
        self.shared.check_deadline()
    }

    /// Why the lease was lost, if it was.
    pub fn loss(&self) -> Option<Error> {
        self.shared.check_deadline();
        match self.shared.status() {
            Status::Lost(e) => Some(e),
            _ => None,
        }
    }

    /// Resolves when the guard no longer holds the lock: the lease was lost (renewal failed,
    /// the lock was taken over or broken, or the deadline passed), or it was released.
    pub async fn lost(&self) {
        let clock = self.shared.locker.clock().clone();
        let mut status = self.shared.status.subscribe();
        loop {
            let deadline = self.shared.lease().deadline();
            tokio::select! {
                _ = status.wait_for(|s| !matches!(s, Status::Held)) => return,
                // Renewed meanwhile? Then the loop waits for the new deadline.
                () = tokio::time::sleep_until(clock.to_tokio(deadline)) => {
                    self.shared.check_deadline();
                }
            }
        }
    }

    /// With column prefix and [`LockRequest::read_row`](crate::LockRequest::read_row): the
    /// row's data columns as read when the lock was granted. Empty otherwise.
    pub fn row(&self) -> &[Cell] {
        &self.row
    }

    /// Renews the lease now (the keep-alive task does this by itself).
    ///
    /// Errors: [`ErrorKind::Lost`] if the lease had ended, been taken over or broken (the guard
    /// is then lost); [`ErrorKind::NotOwner`] after release; store kinds otherwise (the lease
    /// then stays valid until its current deadline).
    pub async fn renew(&self) -> Result<()> {
        let _ops = self.shared.ops.lock().await;
        self.shared.renew_locked().await
    }

    /// Releases the lock.
    ///
    /// `Ok` means the lease was valid until the release was sent: the critical section was
    /// protected throughout. [`ErrorKind::Lost`] means it was not (it had been lost, or the
    /// kernel found it ended); the guard's own cell is removed either way where it still
    /// exists. A second call gives [`ErrorKind::NotOwner`]. On a store error the lock expires
    /// with its TTL; the guard counts as released either way.
    pub async fn release(&mut self) -> Result<()> {
        self.shared.release(None).await
    }

    /// Releases the lock and, in the same batch, applies `writes` to data columns of the lock's
    /// row (Astyanax's `releaseWithMutation`). The kernel decides which strategies share their
    /// row with data (column prefix); other strategies, and writes to the lock's own columns,
    /// give [`ErrorKind::InvalidOption`] and leave the lock held.
    pub async fn release_with(&mut self, writes: Vec<Write>) -> Result<()> {
        self.shared.release(Some(writes)).await
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // A forked child: the lock is the parent's, and the parent's runtime (its threads,
            // its timers) does not exist here. Touch nothing: leak our references so no
            // destructor wakes a task or takes a lock another thread held at fork time.
            if let Some(task) = self.task.take() {
                std::mem::forget(task);
            }
            std::mem::forget(Arc::clone(&self.shared));
            std::mem::forget(self.runtime.clone());
            return;
        }
        // Detach the background task: it stops once it sees the status change (it is never
        // aborted mid-renewal, so no renewal write can land after the release).
        drop(self.task.take());
        if matches!(self.shared.status(), Status::Released) {
            self.shared.kick.notify_one();
            return;
        }
        let shared = Arc::clone(&self.shared);
        let pending = PendingRelease {
            name: self.name.clone(),
            token: self.token,
            done: false,
        };
        // If the runtime has shut down, the task is dropped unpolled and `pending` logs it.
        drop(self.runtime.spawn(async move {
            let mut pending = pending;
            let result = shared.release(None).await;
            pending.done = true;
            match result {
                Ok(()) => tracing::debug!(lock = %pending.name, "released on drop"),
                Err(e) => tracing::warn!(lock = %pending.name, "release on drop: {e}"),
            }
        }));
    }
}

/// Logs a drop-release that never ran.
struct PendingRelease {
    name: String,
    token: u64,
    done: bool,
}

impl Drop for PendingRelease {
    fn drop(&mut self) {
        if !self.done {
            tracing::warn!(
                lock = %self.name,
                token = self.token,
                "guard dropped after its runtime shut down: the lock could not be released and will expire with its TTL"
            );
        }
    }
}
