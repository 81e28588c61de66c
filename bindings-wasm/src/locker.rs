//! The objects JavaScript holds: a locker (a store and its defaults), an acquisition in
//! progress, and a held lock. Each forwards to the lock's life machine ([`crate::life`]) or to
//! a one-shot kernel operation; the package's JavaScript wraps them in its idiomatic classes.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use baton_kernel::host::{fresh_acquisition, waits_forever, ChangeWatch, FenceHints};
use baton_kernel::{
    Acquire, Error, ErrorKind, ForceRelease, Instant, LifeEvent, LifeStatus, ListLocks, LockInfo,
    LockLife, LockName, LockOptions, LockPath, Mode, Operation, OwnerId, Poll, Purge, Result, Wait,
};
use js_sys::{Array, BigInt, Function, Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::errors::{in_context, to_js};
use crate::js::{self, Sleep};
use crate::life::Life;
use crate::options::{lock_name, lock_names, lock_options, locker_options, permits, LockerOptions};
use crate::slots::Slots;
use crate::store::cql::CqlHost;
use crate::store::memory::MemoryStore;
use crate::store::sql::SqlHost;
use crate::store::{Backend, Store};
use crate::wake::{race, First};

pub(crate) struct Inner {
    pub(crate) store: Rc<Store>,
    pub(crate) defaults: LockOptions,
    keep_alive: bool,
    pub(crate) host: String,
    pub(crate) pid: u32,
    pub(crate) slots: Rc<Slots>,
    hints: RefCell<FenceHints>,
}

/// A store and the defaults of the locks taken on it.
#[wasm_bindgen]
pub struct CoreLocker {
    pub(crate) inner: Rc<Inner>,
}

#[wasm_bindgen]
impl CoreLocker {
    /// A locker on the in-module memory store.
    pub fn memory(
        store: &MemoryStore,
        options: JsValue,
    ) -> std::result::Result<CoreLocker, JsValue> {
        let options = locker_options(&options).map_err(|e| to_js(&e))?;
        Ok(CoreLocker::assemble(
            Store::memory(Rc::clone(&store.shared)),
            options,
        ))
    }

    /// A locker on a SQL adapter (see the `store::sql` module).
    pub fn sql(adapter: JsValue, options: JsValue) -> std::result::Result<CoreLocker, JsValue> {
        let options = locker_options(&options).map_err(|e| to_js(&e))?;
        let host = SqlHost::new(&adapter, options.command_timeout).map_err(|e| to_js(&e))?;
        Ok(CoreLocker::assemble(
            Store::adapter(Backend::Sql(Box::new(host)), &adapter),
            options,
        ))
    }

    /// A locker on a CQL adapter (see the `store::cql` module).
    pub fn cql(adapter: JsValue, options: JsValue) -> std::result::Result<CoreLocker, JsValue> {
        let options = locker_options(&options).map_err(|e| to_js(&e))?;
        let host = CqlHost::new(&adapter, options.command_timeout).map_err(|e| to_js(&e))?;
        Ok(CoreLocker::assemble(
            Store::adapter(Backend::Cql(host), &adapter),
            options,
        ))
    }

    fn assemble(store: Store, options: LockerOptions) -> CoreLocker {
        let host = options
            .host
            .or_else(|| store.host().map(OwnerId::sanitize_host))
            .unwrap_or_else(|| String::from("js"));
        CoreLocker {
            inner: Rc::new(Inner {
                store: Rc::new(store),
                defaults: options.defaults,
                keep_alive: options.keep_alive,
                host,
                pid: js::pid(),
                slots: Slots::new(js::random_u64()),
                hints: RefCell::new(FenceHints::new()),
            }),
        }
    }

    /// Where the locks are kept, for messages.
    pub fn describe(&self) -> String {
        self.inner.store.describe().to_owned()
    }

    /// Starts acquiring `name` (`options`: `timeout`, `ttl`, `mode`...; `tryOnce`: one
    /// attempt, busy reported as `Busy`; `object`: for `getAndLock`, which needs the lock
    /// exclusive). Throws for a bad name or option; the acquisition's outcome is
    /// [`Acquisition::result`].
    pub fn acquire(
        &self,
        name: JsValue,
        options: JsValue,
        try_once: bool,
        object: bool,
    ) -> std::result::Result<Acquisition, JsValue> {
        let start = || {
            let name = lock_name(&name)?;
            let opts = lock_options(&self.inner.defaults, &options, try_once, None)?;
            if object && opts.paths {
                // As the tokio host's `get_and_lock_with`: a path's row holds its whole tree.
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "lock {:?} is a path: objects live beside flat names only (a root's row holds its whole tree)",
                        name.as_str()
                    ),
                )
                .with_lock(name.as_str()));
            }
            if object && !opts.mode.is_exclusive() {
                // As the tokio host's `get_and_lock_with`: an object is its holder's alone.
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "get_and_lock takes the lock exclusive: an object is written by its one holder, not under a {} lock",
                        opts.mode
                    ),
                ));
            }
            self.start(name, opts)
        };
        start().map_err(|e| to_js(&e))
    }

    /// Starts acquiring every name of the array `names`, all or nothing, as the tokio host's
    /// `Locker::lock_all` does: one at a time in the one global order of [`LockPath::order`]
    /// (so two callers never each hold what the other waits for), `options` as
    /// [`CoreLocker::acquire`]'s, their timeout the budget of the whole call. On any error, a
    /// cancellation included, every lock already taken is released (last first) before the
    /// result rejects. Throws `InvalidOption` for no names, a name twice, or (with paths) a
    /// path given with one of its ancestors; `InvalidName` for a bad name.
    #[wasm_bindgen(js_name = lockAll)]
    pub fn lock_all(
        &self,
        names: JsValue,
        options: JsValue,
    ) -> std::result::Result<AllAcquisition, JsValue> {
        let prepare = || {
            let opts = lock_options(&self.inner.defaults, &options, false, None)?;
            opts.validate()?;
            let ordered = lock_order(lock_names(&names)?, opts.paths)?;
            Ok::<_, Error>((ordered, opts))
        };
        let (ordered, opts) = prepare().map_err(|e| to_js(&e))?;
        let state = Rc::new(AllState::default());
        let locker = CoreLocker {
            inner: Rc::clone(&self.inner),
        };
        let progress = Rc::clone(&state);
        let promise = future_to_promise(async move {
            match locker.take_all(ordered, opts, &progress).await {
                Ok(locks) => Ok(locks
                    .into_iter()
                    .map(JsValue::from)
                    .collect::<Array>()
                    .into()),
                Err(e) => Err(to_js(&e)),
            }
        });
        Ok(AllAcquisition {
            state,
            promise: Some(promise),
        })
    }

    /// A semaphore of `permits` on `name` (see [`CoreSemaphore`]). Throws `InvalidOption` for
    /// permits that are not an integer from 1 to 10 000 or a locker whose strategy is unique
    /// insert, `InvalidName` for a bad name: now, not at the first acquire.
    pub fn semaphore(
        &self,
        name: JsValue,
        permits_value: JsValue,
    ) -> std::result::Result<CoreSemaphore, JsValue> {
        let make = || {
            let mode = permits(&permits_value)?;
            let name = lock_name(&name)?;
            let mut opts = self.inner.defaults.clone();
            opts.mode = mode;
            opts.validate()?;
            Ok::<_, Error>(CoreSemaphore {
                locker: CoreLocker {
                    inner: Rc::clone(&self.inner),
                },
                name,
                mode,
            })
        };
        make().map_err(|e| to_js(&e))
    }

    /// Every live lock entry in the store (`[{ name, strategy, column, owner, state, token,
    /// ticket, createdUnixMs, acquisition, value, expiresIn }]`).
    pub fn locks(&self) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let mut op = ListLocks::new(&inner.options());
            let infos = run(&inner.store, &mut op).await.map_err(|e| to_js(&e))?;
            Ok(infos_array(&infos).into())
        })
    }

    /// Removes expired entries (of `name`, or of every lock): `[{ name, cell }]` removed.
    pub fn purge(&self, name: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let name = if name.is_undefined() || name.is_null() {
                None
            } else {
                Some(lock_name(&name).map_err(|e| to_js(&e))?)
            };
            let lock = name.as_ref().map(|n| n.as_str().to_owned());
            let mut op = Purge::new(name, &inner.options());
            let removed = run(&inner.store, &mut op).await.map_err(|e| {
                to_js(&match &lock {
                    Some(lock) => e.about_lock(lock),
                    None => e,
                })
            })?;
            let list: Array = removed
                .iter()
                .map(|(name, cell)| {
                    let item = Object::new();
                    js::set(&item, "name", name.as_str());
                    js::set(&item, "cell", cell.as_str());
                    JsValue::from(item)
                })
                .collect();
            Ok(list.into())
        })
    }

    /// Breaks `name`'s lock whoever holds it (an operator's call): the entries removed.
    #[wasm_bindgen(js_name = forceRelease)]
    pub fn force_release(&self, name: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let name = lock_name(&name).map_err(|e| to_js(&e))?;
            let lock = name.as_str().to_owned();
            let mut op = ForceRelease::new(name, &inner.options());
            let infos = run(&inner.store, &mut op)
                .await
                .map_err(|e| to_js(&e.about_lock(&lock)))?;
            Ok(infos_array(&infos).into())
        })
    }
}

impl CoreLocker {
    fn start(&self, name: LockName, opts: LockOptions) -> Result<Acquisition> {
        let (life, granted) = self.begin(name, opts)?;
        let promise =
            future_to_promise(
                async move { granted.await.map(JsValue::from).map_err(|e| to_js(&e)) },
            );
        Ok(Acquisition {
            life,
            promise: Some(promise),
        })
    }

    /// Takes `ordered` one at a time (see [`CoreLocker::lock_all`]); on any error releases
    /// what it took, last first, and returns the error.
    async fn take_all(
        &self,
        ordered: Vec<LockPath>,
        opts: LockOptions,
        state: &AllState,
    ) -> Result<Vec<CoreLock>> {
        let deadline = match opts.wait {
            Wait::Timeout(t) if t != Duration::MAX => Some(js::now().saturating_add(t)),
            _ => None,
        };
        let mut taken: Vec<CoreLock> = Vec::with_capacity(ordered.len());
        for path in ordered {
            let outcome = if state.cancelled.get() {
                Err(Error::new(
                    ErrorKind::Cancelled,
                    format!("lock_all was cancelled before it took {:?}", path.as_str()),
                ))
            } else {
                let mut one = opts.clone();
                if let Some(deadline) = deadline {
                    one.wait = Wait::Timeout(deadline.saturating_duration_since(js::now()));
                }
                match self.begin(path.name().clone(), one) {
                    Ok((life, granted)) => {
                        *state.current.borrow_mut() = Some(life);
                        let outcome = granted.await;
                        *state.current.borrow_mut() = None;
                        outcome
                    }
                    Err(e) => Err(e),
                }
            };
            match outcome {
                Ok(lock) => {
                    state.taken.borrow_mut().push(Rc::clone(&lock.life));
                    taken.push(lock);
                }
                Err(e) => {
                    release_all(taken).await;
                    return Err(e);
                }
            }
        }
        if state.cancelled.get() {
            release_all(taken).await;
            return Err(Error::new(
                ErrorKind::Cancelled,
                "lock_all was cancelled as its last lock was granted; every lock was released",
            ));
        }
        Ok(taken)
    }

    /// Starts the acquisition of `name`: its life, and the grant to come.
    #[allow(clippy::type_complexity)]
    fn begin(
        &self,
        name: LockName,
        opts: LockOptions,
    ) -> Result<(Rc<Life>, Pin<Box<dyn Future<Output = Result<CoreLock>>>>)> {
        let inner = &self.inner;
        let (seed, acquisition) = (js::random_u64(), js::random_u64());
        let opts = fresh_acquisition(&opts, seed, acquisition, js::unix_ms());
        let slot = inner.slots.take(name.as_str());
        let owner = OwnerId::new(&inner.host, inner.pid, slot.nonce())?;
        let hint = inner.hints.borrow().get(name.as_str());
        let op = Acquire::new(name.clone(), owner, opts)?.with_fence_hint(hint);
        let life = Life::new(
            LockLife::new(op, inner.keep_alive),
            Rc::clone(&inner.store),
            slot,
        );
        let driver = Rc::clone(&life);
        let locker = Rc::clone(inner);
        let granted = Box::pin(async move {
            let ended = driver.drive(LifeEvent::ends_acquisition).await;
            if let Some(LifeEvent::GaveUp(_)) = &ended {
                // The wait ran out with the store silent: the caller hears it now, and the
                // cleanup of what the acquisition may have written goes on by itself.
                let cleaner = Rc::clone(&driver);
                wasm_bindgen_futures::spawn_local(async move {
                    let _ = cleaner.drive(|_| false).await;
                });
            }
            let grant = LifeEvent::acquisition_outcome(ended, name.as_str())?;
            locker.hints.borrow_mut().remember(&grant.lease);
            // The rest of the life (renewals, loss, release) runs on its own.
            let keeper = Rc::clone(&driver);
            wasm_bindgen_futures::spawn_local(async move {
                let _ = keeper.drive(|_| false).await;
            });
            Ok::<_, Error>(CoreLock {
                life: driver,
                name: grant.lease.name().as_str().to_owned(),
                mode: grant.lease.mode(),
                token: grant.lease.token(),
                owner: grant.lease.owner().key(),
            })
        });
        Ok((life, granted))
    }
}

/// Releases `taken`, last first; a release's own failure (a lost lease) changes nothing: the
/// lock is not held either way.
async fn release_all(mut taken: Vec<CoreLock>) {
    while let Some(lock) = taken.pop() {
        let _ = lock.life.release().await;
    }
}

/// `names` in the order [`CoreLocker::lock_all`] takes them (the tokio host's `lock_order`):
/// `InvalidOption` for none, a repeated name, or (with `paths`) two related paths;
/// `InvalidName` for a name that is not a valid path when `paths` is on.
fn lock_order(names: Vec<LockName>, paths: bool) -> Result<Vec<LockPath>> {
    if names.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            "lock_all needs at least one name",
        ));
    }
    if paths {
        let given = names
            .into_iter()
            .map(LockPath::from_name)
            .collect::<Result<Vec<_>>>()?;
        return LockPath::sorted_unrelated(given);
    }
    let mut ordered: Vec<LockPath> = names.into_iter().map(LockPath::flat_name).collect();
    ordered.sort_by(LockPath::order);
    if let Some(pair) = ordered.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "lock_all was given {:?} twice; each name once",
                pair[0].as_str()
            ),
        ));
    }
    Ok(ordered)
}

/// What a `lockAll` in progress shares with its handle: the acquisition under way, the locks
/// taken, and whether it was cancelled.
#[derive(Default)]
struct AllState {
    current: RefCell<Option<Rc<Life>>>,
    taken: RefCell<Vec<Rc<Life>>>,
    cancelled: Cell<bool>,
}

/// A `lockAll` in progress (see [`CoreLocker::lock_all`]).
#[wasm_bindgen]
pub struct AllAcquisition {
    state: Rc<AllState>,
    promise: Option<Promise>,
}

#[wasm_bindgen]
impl AllAcquisition {
    /// Resolves to the array of held locks (in the order taken), or rejects with the error
    /// once every lock it took is released (a `Cancelled` one after [`AllAcquisition::cancel`]).
    /// Given once.
    pub fn result(&mut self) -> Promise {
        self.promise.take().unwrap_or_else(|| {
            Promise::reject(&to_js(&Error::internal(
                "internal error: a lockAll's result was taken twice",
            )))
        })
    }

    /// Stops: the acquisition under way removes what it wrote, the locks taken are released,
    /// and the result rejects with `Cancelled`; after the result resolved, the locks it gave
    /// are released (as a cancelled [`Acquisition`] releases a lock granted meanwhile).
    pub fn cancel(&self) {
        self.state.cancelled.set(true);
        if let Some(life) = self.state.current.borrow().as_ref() {
            life.request(LockLife::cancel);
        }
        for life in self.state.taken.borrow().iter() {
            life.request(LockLife::cancel);
        }
    }
}

impl Inner {
    /// The defaults, with a fresh seed, for a one-shot operation.
    fn options(&self) -> LockOptions {
        LockOptions {
            seed: js::random_u64(),
            ..self.defaults.clone()
        }
    }
}

/// A semaphore on the store: at most [`CoreSemaphore::permits`] holders of its name at once.
/// Each acquisition is a [`CoreLock`] holding one permit, released as any lock is.
#[wasm_bindgen]
pub struct CoreSemaphore {
    locker: CoreLocker,
    name: LockName,
    mode: Mode,
}

#[wasm_bindgen]
impl CoreSemaphore {
    /// The name its permits are taken on.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.as_str().to_owned()
    }

    /// How many holders it admits at once.
    #[wasm_bindgen(getter)]
    pub fn permits(&self) -> u32 {
        match self.mode {
            Mode::Counted(n) => n,
            _ => 1,
        }
    }

    /// Starts taking a permit, as [`CoreLocker::acquire`] starts a lock (`options`: `timeout`,
    /// `ttl`...; no `mode`: it is the semaphore's).
    pub fn acquire(
        &self,
        options: JsValue,
        try_once: bool,
    ) -> std::result::Result<Acquisition, JsValue> {
        let start = || {
            let opts = lock_options(
                &self.locker.inner.defaults,
                &options,
                try_once,
                Some(self.mode),
            )?;
            self.locker.start(self.name.clone(), opts)
        };
        start().map_err(|e| to_js(&e))
    }
}

/// An acquisition in progress.
#[wasm_bindgen]
pub struct Acquisition {
    life: Rc<Life>,
    promise: Option<Promise>,
}

#[wasm_bindgen]
impl Acquisition {
    /// Resolves to the held lock, or rejects with the error (a `Cancelled` one after
    /// [`Acquisition::cancel`], once its entry is removed). Given once.
    pub fn result(&mut self) -> Promise {
        self.promise.take().unwrap_or_else(|| {
            Promise::reject(&to_js(&Error::internal(
                "internal error: an acquisition's result was taken twice",
            )))
        })
    }

    /// Stops waiting: the acquisition removes what it wrote and rejects with `Cancelled`; if
    /// the lock was already granted, it is released.
    pub fn cancel(&self) {
        self.life.request(LockLife::cancel);
    }
}

/// A held lock.
#[wasm_bindgen]
pub struct CoreLock {
    pub(crate) life: Rc<Life>,
    pub(crate) name: String,
    mode: Mode,
    token: u64,
    owner: String,
}

#[wasm_bindgen]
impl CoreLock {
    /// The fencing token: larger for every later holder of the name.
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.token)
    }

    /// The lock's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// What it is held as: `exclusive`, `shared` or `counted(N)` (a permit of a semaphore).
    #[wasm_bindgen(getter)]
    pub fn mode(&self) -> String {
        self.mode.to_string()
    }

    /// The owner id written in the store (what `baton locks` shows).
    #[wasm_bindgen(getter)]
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// Whether the lease is held now: granted, not lost, not released, deadline not passed.
    #[wasm_bindgen(getter)]
    pub fn held(&self) -> bool {
        matches!(self.life.status(), LifeStatus::Held(_))
    }

    /// Milliseconds until the lease's deadline unless renewed (0 when not held).
    #[wasm_bindgen(getter)]
    pub fn remaining(&self) -> f64 {
        self.life.remaining_ms()
    }

    /// Throws `Lost` if the lease was lost or its deadline passed, `NotOwner` after a release.
    pub fn check(&self) -> std::result::Result<(), JsValue> {
        self.life.check(&self.name).map_err(|e| to_js(&e))
    }

    /// Calls `callback(error)` once when the lease is lost (at once if it already is).
    #[wasm_bindgen(js_name = onLost)]
    pub fn on_lost(&self, callback: Function) {
        self.life.on_lost(callback);
    }

    /// Releases the lock: resolves when its entry is removed; rejects with `Lost` if the lease
    /// was lost first, with `NotOwner` on a second release.
    pub fn release(&self) -> Promise {
        let (life, name) = (Rc::clone(&self.life), self.name.clone());
        future_to_promise(async move {
            life.release()
                .await
                .map_err(|e| to_js(&e.about_lock(&name)))?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

impl Drop for CoreLock {
    /// The JavaScript `Lock` was collected without a release: release it now, as a dropped
    /// native guard does (what remains of a lost lease is removed too).
    fn drop(&mut self) {
        self.life.request(LockLife::cancel);
    }
}

/// Drives a one-shot operation on `store`, by the native driver's rules: one command at a
/// time, and a store change wakes the operation only as [`ChangeWatch`] says (never its own).
pub(crate) async fn run<O: Operation>(store: &Rc<Store>, op: &mut O) -> Result<O::Output> {
    let changes = store.changes();
    let mut watch = ChangeWatch::new(changes.version());
    loop {
        match op.poll(js::now()) {
            Poll::Ready(result) => return result.map_err(|e| in_context(e, store)),
            Poll::Execute(id, command) => {
                watch.before(&command, changes.version());
                let reply = Rc::clone(store).execute(command).await;
                watch.after(changes.version());
                op.handle(id, reply);
            }
            Poll::WaitUntil(Instant::MAX) => return Err(waits_forever()),
            Poll::WaitUntil(until) => {
                let mut timer = Box::pin(Sleep::until(until));
                let mut never = Box::pin(core::future::pending::<()>());
                let mut change = Box::pin(changes.changed(watch.seen()));
                if let First::Change =
                    race::<()>(None, timer.as_mut(), never.as_mut(), Some(change.as_mut())).await
                {
                    // On the next turn of the event loop (see the life host).
                    Sleep::for_duration(core::time::Duration::ZERO).await;
                    if watch.take_change(changes.version()) {
                        op.wake();
                    }
                }
            }
        }
    }
}

fn infos_array(infos: &[LockInfo]) -> Array {
    let optional = |v: Option<u64>| v.map_or(JsValue::NULL, |v| BigInt::from(v).into());
    infos
        .iter()
        .map(|info| {
            let item = Object::new();
            js::set(&item, "name", info.name.as_str());
            js::set(&item, "strategy", info.strategy.as_str());
            js::set(&item, "column", info.column.as_str());
            js::set(&item, "owner", info.owner.as_str());
            js::set(&item, "state", info.state.as_str());
            js::set(&item, "token", optional(info.token));
            js::set(&item, "ticket", optional(info.ticket));
            js::set(
                &item,
                "createdUnixMs",
                info.created_unix_ms
                    .map_or(JsValue::NULL, |v| JsValue::from_f64(v as f64)),
            );
            js::set(&item, "acquisition", BigInt::from(info.acquisition));
            js::set(&item, "value", info.value.as_str());
            js::set(
                &item,
                "expiresIn",
                info.expires_in.map_or(JsValue::NULL, |d| {
                    JsValue::from_f64(d.as_secs_f64() * 1000.0)
                }),
            );
            JsValue::from(item)
        })
        .collect()
}
