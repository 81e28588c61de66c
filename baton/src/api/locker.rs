//! [`Locker`]: a store plus defaults, handing out [`Guard`]s.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use baton_kernel::host::{fresh_acquisition, FenceHints};
use baton_kernel::{
    Acquire, Consistency, Error, ErrorKind, ForceRelease, Inspect, LifeEvent, ListLocks, ListPage,
    LockInfo, LockLife, LockName, LockOptions, LockPage, PrefixOptions, Purge, Result, RetryPolicy,
    SerialConsistency, Strategy, Wait,
};

use crate::api::guard::Guard;
use crate::api::request::LockRequest;
use crate::host::clock::Clock;
use crate::host::driver::drive;
use crate::host::life_host::{in_context, Abandon, Life};
use crate::host::owner;
use crate::host::slots::Slots;
use crate::host::starter::Starter;
use crate::stores::memory::MemoryStore;
use crate::stores::store::Store;
use crate::stores::url::open_store;

/// Hands out locks on one store, with default options.
///
/// Cheap to clone (clones share the store, the defaults and the clock). Two live guards, even in
/// one process on one thread, are always distinct owners; sequential acquisitions of a name
/// reuse an owner id (see the `slots` module: it keeps lock rows free of piled-up deleted
/// columns) and every acquisition writes a fresh acquisition id.
///
/// The async methods must run inside a tokio runtime with time enabled (otherwise they return
/// [`ErrorKind::WrongContext`]); keep-alive tasks run on the runtime that acquired the lock.
/// For synchronous code, see [`Locker::blocking`].
///
/// A locker belongs to the process that built it: in a child forked from that process every
/// call gives [`ErrorKind::WrongContext`] (the store's connections and the locker's
/// bookkeeping are the parent's), and the child opens a locker of its own.
#[derive(Clone)]
pub struct Locker {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    defaults: LockOptions,
    host_id: Option<u32>,
    keep_alive: bool,
    clock: Clock,
    /// The fencing counter as our last lease of each name left it.
    hints: Mutex<FenceHints>,
    /// Owner-id slots in use per name.
    slots: Arc<Slots>,
    /// Starts held locks' tasks when their first renewal falls due.
    starter: Starter,
    /// The process that built the locker: the only one that may use it (see
    /// [`Locker::in_its_process`]).
    pid: u32,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // A forked child's copy: the store's connections and tasks are the parent's (its
            // pool would close the parent's sockets). Leak them, as a forked guard does.
            std::mem::forget(Arc::clone(&self.store));
        }
    }
}

impl fmt::Debug for Locker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locker")
            .field("store", &self.inner.store.describe())
            .field("defaults", &self.inner.defaults)
            .field("host_id", &self.inner.host_id)
            .field("keep_alive", &self.inner.keep_alive)
            .finish_non_exhaustive()
    }
}

impl Locker {
    /// A locker on `store` with the default options (unique insert, 60 s TTL, 30 s wait,
    /// keep-alive on).
    pub fn new(store: impl Store + 'static) -> Locker {
        Locker::from_arc(Arc::new(store))
    }

    /// A locker with default options on a store that is already shared.
    pub fn from_arc(store: Arc<dyn Store>) -> Locker {
        LockerBuilder::new(store).assemble()
    }

    /// A builder for a locker on `store`, to change the defaults.
    pub fn builder(store: impl Store + 'static) -> LockerBuilder {
        LockerBuilder::new(Arc::new(store))
    }

    /// A locker with default options on the store a URL names (see [`open_store`]): `memory:`,
    /// `sqlite://…`, `postgres://…`, `mysql://…` (each SQL store with its cargo feature).
    /// Never connects: an unreachable database fails the first operation with
    /// [`ErrorKind::StoreUnavailable`]. Bad URLs are [`ErrorKind::InvalidOption`].
    pub fn open(url: &str) -> Result<Locker> {
        Ok(Locker::from_arc(open_store(url)?))
    }

    /// A locker on a fresh [`MemoryStore`] (locks shared only with clones of this locker).
    pub fn memory() -> Locker {
        Locker::new(MemoryStore::new())
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The default options of acquisitions (their `seed` and `created_unix_ms` are drawn
    /// afresh for each one).
    pub fn defaults(&self) -> &LockOptions {
        &self.inner.defaults
    }

    /// The clock lease deadlines are measured on.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// Acquires `name`, waiting up to the default wait timeout.
    ///
    /// Errors: [`ErrorKind::TimedOut`], [`ErrorKind::InvalidName`], the store kinds, and
    /// [`ErrorKind::StaleLock`] for column prefix with `fail_on_stale_lock`.
    pub async fn lock(&self, name: &str) -> Result<Guard> {
        self.lock_with(name, LockRequest::new()).await
    }

    /// Acquires `name` in one attempt: [`ErrorKind::Busy`] if it is held.
    pub async fn try_lock(&self, name: &str) -> Result<Guard> {
        self.lock_with(name, LockRequest::new().try_once()).await
    }

    /// Acquires `name` with per-call options.
    ///
    /// Cancel safety: if the returned future is dropped before it finishes (a timeout around
    /// it, a `select!`, an aborted task), a background task on the same runtime removes the
    /// cell it wrote (one store command), so others do not wait for its TTL. Only if that task
    /// cannot run (the runtime shut down) or fails does the cell stay until its TTL runs out.
    /// An acquisition dropped after winning but before the future returned (its fencing write
    /// in flight) is undone the same way: no lock is ever held by a guard nobody has.
    pub async fn lock_with(&self, name: &str, request: LockRequest) -> Result<Guard> {
        self.acquire_on(name, request, &*self.inner.store, false)
            .await
    }

    /// Acquires `name` through `store` (the locker's own, or a caller's transaction when
    /// `in_transaction`: then only unique insert, whose unique key makes others wait for the
    /// transaction's outcome, and no fence hint is remembered, as the grant may roll back).
    pub(crate) async fn acquire_on(
        &self,
        name: &str,
        request: LockRequest,
        store: &dyn Store,
        in_transaction: bool,
    ) -> Result<Guard> {
        self.in_its_process()?;
        let name = LockName::new(name)?;
        let (opts, keep_alive) = request.resolve(&self.inner.defaults, self.inner.keep_alive)?;
        if in_transaction && opts.strategy != Strategy::UniqueInsert {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "locking inside a transaction needs the unique-insert strategy: {} decides from reads that cannot see a lock still uncommitted in another transaction",
                    opts.strategy
                ),
            ));
        }
        let runtime = current_runtime()?;
        let pid = std::process::id();
        let mut random = owner::random_in(pid);
        let (seed, acquisition) = (random.next_u64(), random.next_u64());
        let opts = fresh_acquisition(&opts, seed, acquisition, owner::unix_ms());
        let slot = self.inner.slots.take(name.as_str());
        let owner = owner::owner_with_nonce(self.inner.host_id, pid, slot.nonce())?;
        let hint = self.hints().get(name.as_str());
        let op = Acquire::new(name.clone(), owner, opts)?.with_fence_hint(hint);
        let life = Life::new(
            LockLife::new(op, keep_alive),
            self.inner.clock.clone(),
            slot,
        );
        // Dropped before it finishes (a cancelled future), this removes our cell in the background.
        let cleanup_store = (!in_transaction).then(|| Arc::clone(&self.inner.store));
        // The acquisition's commands belong to the life on the locker's own store, so that a
        // cancellation keeps the one on its way (see `Abandon`).
        let owned = cleanup_store.clone();
        let abandon = Abandon::new(Arc::clone(&life), cleanup_store, runtime.clone(), pid);
        let ended = life
            .drive(store, owned.as_ref(), LifeEvent::ends_acquisition)
            .await;
        match &ended {
            // The wait ran out with the store silent: dropped armed, `abandon` finishes the
            // cleanup in the background (the caller hears the error now).
            Some(LifeEvent::GaveUp(_)) => drop(abandon),
            _ => abandon.finish(),
        }
        let grant = LifeEvent::acquisition_outcome(ended, name.as_str())?;
        if !in_transaction {
            self.hints().remember(&grant.lease);
        }
        Ok(Guard::start(
            life,
            grant,
            Arc::clone(&self.inner.store),
            runtime,
            pid,
            &self.inner.starter,
        ))
    }

    /// What an object call without the lock needs to act as a caller of its own: options
    /// fresh for the call (its `acquisition` id names its write), an owner id and its slot
    /// (bakery and column prefix take the lock for the write), held until the call ends.
    pub(crate) fn fresh_caller(
        &self,
        name: &LockName,
    ) -> Result<(LockOptions, baton_kernel::OwnerId, crate::host::slots::Slot)> {
        self.in_its_process()?;
        let pid = std::process::id();
        let mut random = owner::random_in(pid);
        let (seed, acquisition) = (random.next_u64(), random.next_u64());
        let opts = fresh_acquisition(&self.inner.defaults, seed, acquisition, owner::unix_ms());
        let slot = self.inner.slots.take(name.as_str());
        let owner = owner::owner_with_nonce(self.inner.host_id, pid, slot.nonce())?;
        Ok((opts, owner, slot))
    }

    /// Lists the live entries of `name` (holder, waiters, stale columns), read with the default
    /// strategy's layout. One read.
    pub async fn inspect(&self, name: &str) -> Result<Vec<LockInfo>> {
        self.inspect_with(name, self.inner.defaults.strategy).await
    }

    /// [`Locker::inspect`] for a name locked with `strategy`.
    pub async fn inspect_with(&self, name: &str, strategy: Strategy) -> Result<Vec<LockInfo>> {
        let name = LockName::new(name)?;
        self.run(&mut Inspect::new(name, &self.options_for(strategy)))
            .await
    }

    /// The live entries of `name` whatever strategy locked it, as [`Locker::list`] would list
    /// them: one plain read of its row, not a scan of the table. On a locker with paths,
    /// `name` is a path (its root's row is read).
    pub async fn inspect_any(&self, name: &str) -> Result<Vec<LockInfo>> {
        let name = LockName::new(name)?;
        let opts = self.options_for(Strategy::ColumnPrefix);
        self.run(&mut Inspect::any_strategy(name, &opts)).await
    }

    /// Lists the live entries of every lock in the store's table, whatever their strategy
    /// (column-prefix locks are recognised by the default column prefix). Reads the whole
    /// table: for operators, not hot paths.
    pub async fn list(&self) -> Result<Vec<LockInfo>> {
        let opts = self.options_for(Strategy::ColumnPrefix);
        self.run(&mut ListLocks::new(&opts)).await
    }

    /// [`Locker::list`] a page at a time ([`LockPages::next`]), for a listing that shows its
    /// progress or holds one page in memory: one scan of up to
    /// [`LIST_PAGE_ROWS`](baton_kernel::LIST_PAGE_ROWS) rows per page.
    pub fn list_pages(&self) -> LockPages {
        LockPages {
            locker: self.clone(),
            opts: self.options_for(Strategy::ColumnPrefix),
            next: Some(None),
        }
    }

    /// Removes expired entries of `name`, or of every lock when `None`, and returns the
    /// `(row, column)` pairs removed. Column prefix (the default strategy's layout) also
    /// removes stale lock columns of a named lock.
    pub async fn purge(&self, name: Option<&str>) -> Result<Vec<(String, String)>> {
        self.purge_with(name, self.inner.defaults.strategy).await
    }

    /// [`Locker::purge`] for names locked with `strategy`.
    pub async fn purge_with(
        &self,
        name: Option<&str>,
        strategy: Strategy,
    ) -> Result<Vec<(String, String)>> {
        let name = name.map(LockName::new).transpose()?;
        self.run(&mut Purge::new(name, &self.options_for(strategy)))
            .await
    }

    /// Breaks `name` on purpose: removes every entry, whoever holds it, and returns what was
    /// removed. The holder finds out at its next renewal. Fencing tokens keep increasing.
    pub async fn force_release(&self, name: &str) -> Result<Vec<LockInfo>> {
        self.force_release_with(name, self.inner.defaults.strategy)
            .await
    }

    /// [`Locker::force_release`] for a name locked with `strategy`.
    pub async fn force_release_with(
        &self,
        name: &str,
        strategy: Strategy,
    ) -> Result<Vec<LockInfo>> {
        let name = LockName::new(name)?;
        self.run(&mut ForceRelease::new(name, &self.options_for(strategy)))
            .await
    }

    /// Breaks one holder of `name`, the one whose owner key (as [`Locker::inspect`] lists it)
    /// is `owner`: one reader of a shared lock, one permit of a semaphore (`baton release
    /// --force NAME --holder OWNER`). Its co-holders keep their leases; it learns at its next
    /// renewal. Returns the entry removed (none when no holder of `name` has that owner).
    pub async fn force_release_holder(
        &self,
        name: &str,
        strategy: Strategy,
        owner: &str,
    ) -> Result<Vec<LockInfo>> {
        let name = LockName::new(name)?;
        self.run(&mut ForceRelease::new(name, &self.options_for(strategy)).holder(owner))
            .await
    }

    /// Drives `op` on this locker's store and clock; store errors say which store.
    pub(crate) async fn run<O: baton_kernel::Operation>(&self, op: &mut O) -> Result<O::Output> {
        self.run_on(op, &*self.inner.store).await
    }

    /// Drives `op` on `store` (a caller's transaction, say) and this locker's clock.
    pub(crate) async fn run_on<O: baton_kernel::Operation>(
        &self,
        op: &mut O,
        store: &dyn Store,
    ) -> Result<O::Output> {
        self.in_its_process()?;
        drive(op, store, &self.inner.clock)
            .await
            .map_err(|e| in_context(e, store))
    }

    /// [`ErrorKind::WrongContext`] in a process forked from the one that built this locker.
    /// The child's copy shares the parent's store connections (whose sockets and background
    /// tasks live in the parent's runtime, absent here) and the parent's bookkeeping, which a
    /// parent thread may have held locked at the instant of the fork: used, it could corrupt
    /// the parent's connections or hang for ever. A child opens a locker of its own.
    fn in_its_process(&self) -> Result<()> {
        let pid = std::process::id();
        if pid == self.inner.pid {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::WrongContext,
            format!(
                "this locker was opened by process {}, and this is process {pid}, forked from it: a forked child opens a locker of its own (the {} and its connections belong to the parent)",
                self.inner.pid,
                self.inner.store.describe()
            ),
        ))
    }

    fn options_for(&self, strategy: Strategy) -> LockOptions {
        LockOptions {
            strategy,
            seed: owner::random_u64(),
            ..self.inner.defaults.clone()
        }
    }

    /// The fence hints (see [`FenceHints`]).
    fn hints(&self) -> std::sync::MutexGuard<'_, FenceHints> {
        self.inner
            .hints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The runtime the caller runs on, which keep-alive tasks and drop-releases will use.
fn current_runtime() -> Result<tokio::runtime::Handle> {
    tokio::runtime::Handle::try_current().map_err(|_| {
        Error::new(
            ErrorKind::WrongContext,
            "baton's async API must run inside a tokio runtime (with time enabled); use Locker::blocking() from synchronous code",
        )
    })
}

/// Builds a [`Locker`] with chosen defaults; [`LockerBuilder::build`] checks them.
#[derive(Clone)]
#[must_use = "call build() to get a Locker"]
pub struct LockerBuilder {
    store: Arc<dyn Store>,
    options: LockOptions,
    host_id: Option<u32>,
    keep_alive: bool,
}

impl fmt::Debug for LockerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockerBuilder")
            .field("store", &self.store.describe())
            .field("options", &self.options)
            .field("host_id", &self.host_id)
            .field("keep_alive", &self.keep_alive)
            .finish()
    }
}

impl LockerBuilder {
    /// A builder for a locker on a shared store, starting from the default options.
    pub fn new(store: Arc<dyn Store>) -> Self {
        LockerBuilder {
            store,
            options: LockOptions::default(),
            host_id: None,
            keep_alive: true,
        }
    }

    /// The lock algorithm (default: unique insert).
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.options.strategy = strategy;
        self
    }

    /// The lease length (default 60 s; between [`LockOptions::MIN_TTL`] and
    /// [`LockOptions::MAX_TTL`]).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl = ttl;
        self
    }

    /// How long [`Locker::lock`] waits for a held lock (default 30 s; [`Duration::MAX`]:
    /// forever).
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.options.wait = Wait::Timeout(timeout);
        self
    }

    /// The backoff between attempts.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.options.retry = retry;
        self
    }

    /// Consistency of plain reads and writes (default QUORUM).
    pub fn consistency(mut self, consistency: Consistency) -> Self {
        self.options.consistency = consistency;
        self
    }

    /// Accept a plain consistency below a quorum ([`Consistency::One`]) for the bakery and
    /// column-prefix strategies, which are otherwise refused with
    /// [`ErrorKind::InvalidOption`](crate::ErrorKind::InvalidOption): their reads must see every
    /// completed write, and ONE allows two holders at once when a replica misses a write.
    pub fn allow_weak_consistency(mut self, allow: bool) -> Self {
        self.options.allow_weak_consistency = allow;
        self
    }

    /// Consistency of conditional commands and serial reads (default SERIAL).
    pub fn serial_consistency(mut self, serial: SerialConsistency) -> Self {
        self.options.serial = serial;
        self
    }

    /// A numeric host id, for compatibility with QCassandraLock-style deployments (first key of
    /// the bakery's tie-break). Not needed for uniqueness.
    pub fn host_id(mut self, host_id: u32) -> Self {
        self.host_id = Some(host_id);
        self
    }

    /// Unique insert: whether waiters passed over reserve the next grant (a *turn*, see
    /// [`LockOptions::turns`]). Default: what the store says ([`Store::honours_turns`]): on
    /// for Cassandra, which cannot wake waiters in other processes, off elsewhere (a store
    /// that does not check turns would leave them in the way of every waiter but the
    /// reserved one).
    pub fn turns(mut self, on: bool) -> Self {
        self.options.turns = Some(on);
        self
    }

    /// Whether guards renew their leases in the background (default true).
    pub fn keep_alive(mut self, keep_alive: bool) -> Self {
        self.keep_alive = keep_alive;
        self
    }

    /// How much earlier than the store a holder considers its lease over (default 1% of the
    /// TTL plus 1 ms).
    pub fn drift_margin(mut self, margin: Duration) -> Self {
        self.options.drift_margin = Some(margin);
        self
    }

    /// How many times one storage command is sent while the store is unavailable (default 3).
    pub fn store_attempts(mut self, attempts: u32) -> Self {
        self.options.store_attempts = attempts;
        self
    }

    /// Column-prefix options (prefix, cell TTL, stale handling, row reads, lock id).
    pub fn prefix(mut self, prefix: PrefixOptions) -> Self {
        self.options.prefix = prefix;
        self
    }

    /// Whether names are dot-separated paths (default false; [`LockOptions::paths`]): a lock
    /// on `app.cache` then also conflicts with `app` and with `app.cache.users` (when either
    /// side is exclusive), and not with `app.db` or `apple`. Needs the bakery or column-prefix
    /// strategy; every user of a tree must turn it on (a flat lock and a path lock on one name
    /// do not see each other, as two strategies on one name do not).
    pub fn paths(mut self, paths: bool) -> Self {
        self.options.paths = paths;
        self
    }

    /// Replaces every default option at once.
    pub fn options(mut self, options: LockOptions) -> Self {
        self.options = options;
        self
    }

    /// The locker, or [`ErrorKind::InvalidOption`] naming the first option out of range.
    pub fn build(self) -> Result<Locker> {
        self.options.validate().map_err(|e| {
            Error::new(e.kind(), format!("invalid locker default: {}", e.message()))
        })?;
        if self.options.turns == Some(true) && !self.store.honours_turns() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "invalid locker default: turns on {}, which does not check them (only Cassandra's store does); leave turns to the store",
                    self.store.describe()
                ),
            ));
        }
        if !self.options.mode.is_exclusive() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "invalid locker default: mode {}; a locker's locks are exclusive unless a call asks otherwise (lock_shared, semaphore, LockRequest::mode)",
                    self.options.mode
                ),
            ));
        }
        Ok(self.assemble())
    }

    fn assemble(mut self) -> Locker {
        if self.options.turns.is_none() {
            self.options.turns = Some(self.store.honours_turns());
        }
        Locker {
            inner: Arc::new(Inner {
                store: self.store,
                defaults: self.options,
                host_id: self.host_id,
                keep_alive: self.keep_alive,
                starter: Starter::default(),
                clock: Clock::new(),
                hints: Mutex::new(FenceHints::new()),
                slots: Slots::new(owner::random_u64()),
                pid: std::process::id(),
            }),
        }
    }
}

/// The pages of a listing of every lock ([`Locker::list_pages`]), read one by one.
pub struct LockPages {
    locker: Locker,
    opts: LockOptions,
    /// The row the next page starts after (`Some(None)`: the first page); `None` once the last
    /// page was read.
    next: Option<Option<String>>,
}

impl LockPages {
    /// The next page (its entries, the rows it read), or `None` after the last one. A page
    /// that fails may be asked for again: the next call retries it.
    pub async fn next(&mut self) -> Result<Option<LockPage>> {
        let Some(after) = self.next.clone() else {
            return Ok(None);
        };
        let mut op = match after {
            None => ListPage::first(&self.opts),
            Some(row) => ListPage::after(&self.opts, row),
        };
        let page = self.locker.run(&mut op).await?;
        self.next = page.next.clone().map(Some);
        Ok(Some(page))
    }
}
