//! The synchronous API: [`BlockingLocker`] and [`BlockingGuard`].
//!
//! Each call runs the async API on one process-wide tokio runtime (multi-thread, one worker,
//! built on first use), which also runs the guards' keep-alive tasks. A forked child that calls
//! the blocking API gets a runtime of its own: the parent's worker thread does not exist in the
//! child, so the parent's runtime is leaked there, never used or dropped.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use baton_kernel::{Cell, Error, ErrorKind, Lease, LockInfo, Result, Strategy, Write};
use tokio::runtime::Runtime;

use crate::api::guard::Guard;
use crate::api::locker::Locker;
use crate::api::modes::Semaphore;
use crate::api::request::LockRequest;

/// The process-wide runtime, with the process id it was built in.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// The process-wide tokio runtime the blocking API runs on (one worker thread, built on first
/// use, and built again in a forked child, whose copy of the parent's has no threads). For
/// bindings that wait on futures from a foreign event loop (Python's asyncio) without a thread
/// per wait: spawn the async API's futures on it. Errors: [`ErrorKind::RuntimeFailed`].
pub fn shared_runtime() -> Result<Arc<Runtime>> {
    runtime()
}

fn runtime() -> Result<Arc<Runtime>> {
    let pid = std::process::id();
    if let Some(runtime) = built_in(pid) {
        return Ok(runtime);
    }
    // Built outside the lock, which is held only to look and to swap: a thread that forks
    // while another is in here leaves the child a lock held by nobody, so the window is kept
    // to a few instructions (a runtime's build starts a thread).
    let built = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("baton-blocking")
            // Time for timers, I/O for the database stores' sockets.
            .enable_all()
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorKind::RuntimeFailed,
                    format!("could not start the runtime of baton's blocking API: {e}"),
                )
            })?,
    );
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match slot.take() {
        Some((owner, first)) if owner == pid => {
            // Another thread built one first: use it, and stop ours without waiting.
            *slot = Some((owner, Arc::clone(&first)));
            drop(slot);
            if let Ok(ours) = Arc::try_unwrap(built) {
                ours.shutdown_background();
            }
            Ok(first)
        }
        inherited => {
            // Built by the parent before a fork: its threads are not here. Never drop it.
            std::mem::forget(inherited);
            *slot = Some((pid, Arc::clone(&built)));
            Ok(built)
        }
    }
}

/// The runtime built in process `pid`, if there is one.
fn built_in(pid: u32) -> Option<Arc<Runtime>> {
    let slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match slot.as_ref() {
        Some((owner, runtime)) if *owner == pid => Some(Arc::clone(runtime)),
        _ => None,
    }
}

/// Runs `future` to completion on the process-wide runtime, refusing to block an async task.
pub(crate) fn run<F: Future>(future: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::new(
            ErrorKind::WrongContext,
            "blocking API called from async context; use the async API (Locker) instead of BlockingLocker",
        ));
    }
    Ok(runtime()?.block_on(future))
}

impl Locker {
    /// The synchronous API on this locker.
    pub fn blocking(&self) -> BlockingLocker {
        BlockingLocker::new(self.clone())
    }
}

/// The synchronous face of a [`Semaphore`] (see [`BlockingLocker::semaphore`]).
#[derive(Clone, Debug)]
pub struct BlockingSemaphore {
    semaphore: Semaphore,
}

impl BlockingSemaphore {
    /// The name its permits are taken on.
    pub fn name(&self) -> &str {
        self.semaphore.name()
    }

    /// How many holders it admits at once.
    pub fn permits(&self) -> u32 {
        self.semaphore.permits()
    }

    /// [`Semaphore::acquire`], blocking.
    pub fn acquire(&self) -> Result<BlockingGuard> {
        self.acquire_with(LockRequest::new())
    }

    /// [`Semaphore::try_acquire`], blocking.
    pub fn try_acquire(&self) -> Result<BlockingGuard> {
        self.acquire_with(LockRequest::new().try_once())
    }

    /// [`Semaphore::acquire_timeout`], blocking.
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<BlockingGuard> {
        self.acquire_with(LockRequest::new().wait_timeout(timeout))
    }

    /// [`Semaphore::acquire_with`], blocking.
    pub fn acquire_with(&self, request: LockRequest) -> Result<BlockingGuard> {
        let guard = run(self.semaphore.acquire_with(request))??;
        Ok(BlockingGuard { guard })
    }
}

/// The synchronous face of a [`Locker`] (see [`Locker::blocking`]); same methods, same
/// errors. Calling it from inside a tokio runtime gives [`ErrorKind::WrongContext`]; a runtime
/// that cannot start (no threads left) gives [`ErrorKind::RuntimeFailed`].
#[derive(Clone, Debug)]
pub struct BlockingLocker {
    locker: Locker,
}

impl BlockingLocker {
    /// The blocking API on `locker`.
    pub fn new(locker: Locker) -> Self {
        BlockingLocker { locker }
    }

    /// A blocking locker on the store a URL names (see [`Locker::open`]).
    pub fn open(url: &str) -> Result<Self> {
        Ok(Locker::open(url)?.blocking())
    }

    /// The async locker underneath.
    pub fn locker(&self) -> &Locker {
        &self.locker
    }

    /// [`Locker::lock`], blocking.
    pub fn lock(&self, name: &str) -> Result<BlockingGuard> {
        self.lock_with(name, LockRequest::new())
    }

    /// [`Locker::try_lock`], blocking.
    pub fn try_lock(&self, name: &str) -> Result<BlockingGuard> {
        self.lock_with(name, LockRequest::new().try_once())
    }

    /// [`Locker::lock_with`], blocking.
    pub fn lock_with(&self, name: &str, request: LockRequest) -> Result<BlockingGuard> {
        let guard = run(self.locker.lock_with(name, request))??;
        Ok(BlockingGuard { guard })
    }

    /// [`BlockingLocker::lock_with`] that another thread, or a signal handler, can interrupt:
    /// once `cancel` is [cancelled](Cancel::cancel), the wait ends within about 10 ms with
    /// [`ErrorKind::Cancelled`], and the acquisition removes its cell in the background (as a
    /// dropped async acquisition does). A cancel that comes after the grant changes nothing:
    /// the guard is returned.
    ///
    /// ```
    /// use baton::{BlockingLocker, Cancel, ErrorKind, LockRequest};
    /// let locker = BlockingLocker::open("memory:")?;
    /// let held = locker.lock("job")?;
    /// let cancel = Cancel::new();
    /// let waiter = std::thread::spawn({
    ///     let (locker, cancel) = (locker.clone(), cancel.clone());
    ///     move || locker.lock_cancellable("job", LockRequest::new(), &cancel).map(|_| ())
    /// });
    /// cancel.cancel(); // Ctrl-C, a stop token, a shutdown...
    /// let e = waiter.join().unwrap().unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::Cancelled);
    /// # drop(held);
    /// # Ok::<(), baton::Error>(())
    /// ```
    pub fn lock_cancellable(
        &self,
        name: &str,
        request: LockRequest,
        cancel: &Cancel,
    ) -> Result<BlockingGuard> {
        let name_owned = name.to_owned();
        let acquire = self.locker.lock_with(name, request);
        let guard = run(async {
            tokio::select! {
                guard = acquire => guard,
                () = cancel.cancelled() => Err(Error::new(
                    ErrorKind::Cancelled,
                    format!("the wait for lock {name_owned:?} was cancelled"),
                )
                .with_lock(name_owned.as_str())),
            }
        })??;
        Ok(BlockingGuard { guard })
    }

    /// [`Locker::lock_shared`], blocking.
    pub fn lock_shared(&self, name: &str) -> Result<BlockingGuard> {
        self.lock_with(name, LockRequest::new().shared())
    }

    /// [`Locker::try_lock_shared`], blocking.
    pub fn try_lock_shared(&self, name: &str) -> Result<BlockingGuard> {
        self.lock_with(name, LockRequest::new().shared().try_once())
    }

    /// [`Locker::semaphore`], with blocking acquires.
    pub fn semaphore(&self, name: &str, permits: u32) -> Result<BlockingSemaphore> {
        Ok(BlockingSemaphore {
            semaphore: self.locker.semaphore(name, permits)?,
        })
    }

    /// [`Locker::lock_all`], blocking.
    pub fn lock_all(&self, names: &[&str], request: LockRequest) -> Result<Vec<BlockingGuard>> {
        let guards = run(self.locker.lock_all(names, request))??;
        Ok(guards
            .into_iter()
            .map(|guard| BlockingGuard { guard })
            .collect())
    }

    /// [`Locker::inspect`], blocking.
    pub fn inspect(&self, name: &str) -> Result<Vec<LockInfo>> {
        run(self.locker.inspect(name))?
    }

    /// [`Locker::inspect_with`], blocking.
    pub fn inspect_with(&self, name: &str, strategy: Strategy) -> Result<Vec<LockInfo>> {
        run(self.locker.inspect_with(name, strategy))?
    }

    /// [`Locker::purge`], blocking.
    pub fn purge(&self, name: Option<&str>) -> Result<Vec<(String, String)>> {
        run(self.locker.purge(name))?
    }

    /// [`Locker::purge_with`], blocking.
    pub fn purge_with(
        &self,
        name: Option<&str>,
        strategy: Strategy,
    ) -> Result<Vec<(String, String)>> {
        run(self.locker.purge_with(name, strategy))?
    }

    /// [`Locker::force_release`], blocking.
    pub fn force_release(&self, name: &str) -> Result<Vec<LockInfo>> {
        run(self.locker.force_release(name))?
    }

    /// [`Locker::force_release_with`], blocking.
    pub fn force_release_with(&self, name: &str, strategy: Strategy) -> Result<Vec<LockInfo>> {
        run(self.locker.force_release_with(name, strategy))?
    }
}

/// Interrupts a blocking wait ([`BlockingLocker::lock_cancellable`]) from another thread or a
/// signal handler. Cheap to clone; clones share one flag.
///
/// [`Cancel::cancel`] only stores an atomic flag, which is async-signal-safe: a C or C++
/// `SIGINT` handler, or a `std::stop_token` callback, may call it. The waiter looks at the flag
/// every 10 ms.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
}

impl Cancel {
    /// How often a waiter looks at the flag.
    pub const POLL: Duration = Duration::from_millis(10);

    /// A flag not yet raised.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Raises the flag: waits using it end with [`ErrorKind::Cancelled`]. Idempotent.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
    }

    /// Whether the flag is raised.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    async fn cancelled(&self) {
        while !self.is_cancelled() {
            tokio::time::sleep(Cancel::POLL).await;
        }
    }
}

/// A held lock, for synchronous code: the [`Guard`] API, blocking. Dropping it releases the
/// lock before `drop` returns (in a forked child it does nothing; inside an async runtime the
/// release happens in the background, as for [`Guard`]).
#[derive(Debug)]
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct BlockingGuard {
    guard: Guard,
}

impl BlockingGuard {
    /// [`Guard::lease`].
    pub fn lease(&self) -> Lease {
        self.guard.lease()
    }

    /// [`Guard::token`].
    pub fn token(&self) -> u64 {
        self.guard.token()
    }

    /// [`Guard::mode`], what the lock is held as.
    pub fn mode(&self) -> baton_kernel::Mode {
        self.guard.mode()
    }

    /// [`Guard::name`].
    pub fn name(&self) -> &str {
        self.guard.name()
    }

    /// [`Guard::is_held`].
    pub fn is_held(&self) -> bool {
        self.guard.is_held()
    }

    /// [`Guard::loss`].
    pub fn loss(&self) -> Option<Error> {
        self.guard.loss()
    }

    /// [`Guard::lost`], blocking for at most `timeout`: whether the lock was lost (or released)
    /// by then.
    pub fn wait_lost(&self, timeout: Duration) -> Result<bool> {
        run(async {
            tokio::time::timeout(timeout, self.guard.lost())
                .await
                .is_ok()
        })
    }

    /// [`Guard::check`].
    pub fn check(&self) -> Result<()> {
        self.guard.check()
    }

    /// [`Guard::row`].
    pub fn row(&self) -> &[Cell] {
        self.guard.row()
    }

    /// [`Guard::remaining`].
    pub fn remaining(&self) -> Duration {
        self.guard.remaining()
    }

    /// Calls `on_lost` once, from a thread of baton's runtime, if the lease is lost (a renewal
    /// found the lock broken or taken over, or the deadline passed without one): a notification
    /// that needs no async code and no polling. Not called when the guard is released before
    /// any loss. `on_lost` must not block for long (it runs on the runtime's only worker).
    pub fn on_lost(&self, on_lost: impl FnOnce(Error) + Send + 'static) {
        let life = std::sync::Arc::clone(&self.guard.life);
        let runtime = self.guard.runtime.clone();
        drop(runtime.spawn(async move {
            if let Some(e) = life.until_not_held().await {
                on_lost(e);
            }
        }));
    }

    /// [`Guard::renew`], blocking.
    pub fn renew(&self) -> Result<()> {
        run(self.guard.renew())?
    }

    /// [`Guard::release`], blocking.
    pub fn release(&mut self) -> Result<()> {
        run(self.guard.release())?
    }

    /// [`Guard::release_with`], blocking.
    pub fn release_with(&mut self, writes: Vec<Write>) -> Result<()> {
        run(self.guard.release_with(writes))?
    }
}

impl Drop for BlockingGuard {
    fn drop(&mut self) {
        release_on_drop(&mut self.guard);
    }
}

/// A blocking guard's drop: releases the lock before returning, except in a forked child (do
/// nothing), in an async context (release in the background) or once released: the inner
/// guard's own drop handles each of those.
pub(crate) fn release_on_drop(guard: &mut Guard) {
    if std::process::id() != guard.pid
        || tokio::runtime::Handle::try_current().is_ok()
        || guard.released()
    {
        return;
    }
    let runtime = guard.runtime.clone();
    if let Err(e) = runtime.block_on(guard.release()) {
        tracing::warn!(lock = %guard.name(), "release on drop: {e}");
    }
}
