//! Objects beside locks (ScaleOut StateServer's model, seed 002): a named object is an opaque
//! byte value with a version, kept in its lock's own row. [`Locker::get_and_lock`] reads it and
//! locks it; the [`ObjectGuard`] it returns (SOSS's `LockTicket`) writes it with the store
//! checking, in the same step, that the guard still holds the lock; [`Locker::update_optimistic`]
//! writes it without the lock, if nobody wrote it since the version read.
//!
//! Every decision is the kernel's ([`baton_kernel::object`], [`ObjectOp`], and the holder's
//! [`LockLife::object`](baton_kernel::LockLife::object)); this module adapts them to async Rust.
//!
//! | call | round trips (unique insert, uncontended) |
//! | --- | --- |
//! | [`Locker::get`] | 1 |
//! | [`Locker::update_optimistic`] | 1 |
//! | [`Locker::insert`] | 1 (2 over a removed object) |
//! | [`Locker::remove`] | 2 |
//! | [`Locker::get_and_lock`] | the lock's (1) + 1 |
//! | [`ObjectGuard::update_locked_and_release`] | 1 + the release's (1) |
//!
//! With bakery and column prefix an unlocked write takes the lock for itself (their lock is one
//! cell per contender, which no single conditional step can check): a try-once acquisition, the
//! write, and a release.

use std::fmt;

use baton_kernel::{
    AfterObject, Error, ErrorKind, LockName, Object, ObjectOp, ObjectRequest, Result,
};

use crate::api::blocking::run;
use crate::api::guard::Guard;
use crate::api::locker::Locker;
use crate::api::request::LockRequest;
use crate::host::life_host;

/// An object's value and version, as read or written.
#[derive(Clone, PartialEq, Eq)]
pub struct Versioned {
    /// The value.
    pub value: Vec<u8>,
    /// Its version: grows by one on every write of the object, removals included.
    pub version: u64,
}

impl fmt::Debug for Versioned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Versioned")
            .field("value", &String::from_utf8_lossy(&self.value))
            .field("version", &self.version)
            .finish()
    }
}

impl Versioned {
    fn of(object: Object) -> Option<Versioned> {
        let version = object.version;
        object.value.map(|value| Versioned { value, version })
    }
}

impl Locker {
    /// Reads object `name`: its value and version, or `None` when there is none (never
    /// inserted, or removed). Does not look at the lock (SOSS's `get`). One read.
    pub async fn get(&self, name: &str) -> Result<Option<Versioned>> {
        Ok(Versioned::of(
            self.object_call(name, ObjectRequest::Get).await?,
        ))
    }

    /// Inserts object `name` with `value` and returns its version: [`ErrorKind::AlreadyExists`]
    /// when it exists, [`ErrorKind::Busy`] while someone holds its lock.
    pub async fn insert(&self, name: &str, value: impl Into<Vec<u8>>) -> Result<u64> {
        let request = ObjectRequest::Insert(value.into());
        Ok(self.object_call(name, request).await?.version)
    }

    /// Replaces object `name`'s value if it is still at `version` (as [`Locker::get`] returned
    /// it), and returns the new version (SOSS's `update_optimistic`). Errors:
    /// [`ErrorKind::VersionMismatch`] when someone wrote it since (read it again and retry),
    /// [`ErrorKind::ObjectNotFound`] when it is gone, [`ErrorKind::Busy`] while someone holds
    /// its lock (a locked object is not changed by others). Nothing is written on an error.
    pub async fn update_optimistic(
        &self,
        name: &str,
        value: impl Into<Vec<u8>>,
        version: u64,
    ) -> Result<u64> {
        let request = ObjectRequest::Update {
            value: value.into(),
            version: Some(version),
        };
        Ok(self.object_call(name, request).await?.version)
    }

    /// Removes object `name`: [`ErrorKind::ObjectNotFound`] when there is none,
    /// [`ErrorKind::Busy`] while someone holds its lock.
    pub async fn remove(&self, name: &str) -> Result<()> {
        self.object_call(name, ObjectRequest::Remove)
            .await
            .map(drop)
    }

    /// Locks `name` (waiting as [`Locker::lock`] does) and reads its object, atomically for
    /// every other client: nobody else writes it until the guard is released (SOSS's
    /// `get_and_lock`). [`ObjectGuard::value`] is `None` when there is no object yet.
    pub async fn get_and_lock(&self, name: &str) -> Result<ObjectGuard> {
        self.get_and_lock_with(name, LockRequest::new()).await
    }

    /// [`Locker::get_and_lock`] with per-call lock options (try once, a timeout, a TTL...).
    /// The request must be exclusive: a shared or counted one gets
    /// [`ErrorKind::InvalidOption`] before anything is locked (co-holders could write too).
    pub async fn get_and_lock_with(&self, name: &str, request: LockRequest) -> Result<ObjectGuard> {
        let (opts, _) = request.resolve(self.defaults(), false)?;
        if opts.paths {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "lock {name:?} is a path: objects live beside flat names only (a root's row holds its whole tree)"
                ),
            )
            .with_lock(name));
        }
        if !opts.mode.is_exclusive() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "get_and_lock on {name:?} asked for a {} lock: a lock's object is written under an exclusive lease only",
                    opts.mode
                ),
            )
            .with_lock(name));
        }
        let guard = self.lock_with(name, request).await?;
        let object = guard_call(&guard, ObjectRequest::Get, AfterObject::Keep).await?;
        Ok(ObjectGuard { guard, object })
    }

    /// Locks `name` and inserts its object with `value` (SOSS's `insert_and_lock`):
    /// [`ErrorKind::AlreadyExists`] when it exists (the lock is then released).
    pub async fn insert_and_lock(
        &self,
        name: &str,
        value: impl Into<Vec<u8>>,
    ) -> Result<ObjectGuard> {
        let value = value.into();
        baton_kernel::check_value(&value, self.store().max_object_bytes())?;
        let mut guard = self.get_and_lock(name).await?;
        match guard
            .call(ObjectRequest::Insert(value), AfterObject::Keep)
            .await
        {
            Ok(()) => Ok(guard),
            Err(e) => {
                let _ = guard.unlock().await;
                Err(e)
            }
        }
    }

    async fn object_call(&self, name: &str, request: ObjectRequest) -> Result<Object> {
        let name = LockName::new(name)?;
        let limit = self.store().max_object_bytes();
        let (opts, owner, _slot) = self.fresh_caller(&name)?;
        let mut op = ObjectOp::new(name.clone(), owner, opts, request, limit)
            .map_err(|e| e.with_lock(name.as_str()))?;
        self.run(&mut op).await
    }
}

/// A held lock and its object (SOSS's `LockTicket`): the object as last read or written, and
/// the locked calls. Dropping it releases the lock, as a [`Guard`] does. Every write is applied
/// by the store only if this guard still holds the lock when the store applies it (its lock
/// cell there and unexpired, the fencing counter at its grant): a holder paused past its lease
/// or force-released gets [`ErrorKind::Lost`] and its write does not apply, even when it
/// reaches the store late.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct ObjectGuard {
    guard: Guard,
    object: Object,
}

impl fmt::Debug for ObjectGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectGuard")
            .field("guard", &self.guard)
            .field("version", &self.object.version)
            .field("exists", &self.object.exists())
            .finish()
    }
}

impl ObjectGuard {
    /// The object's value as last read or written (`None`: no object).
    pub fn value(&self) -> Option<&[u8]> {
        self.object.value.as_deref()
    }

    /// The object's version as last read or written (0: never written).
    pub fn version(&self) -> u64 {
        self.object.version
    }

    /// The lock: lease, token, [`Guard::is_held`], [`Guard::lost`]...
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// The guard, for calls that need it mutably.
    pub fn guard_mut(&mut self) -> &mut Guard {
        &mut self.guard
    }

    /// Reads the object again and renews the lock (SOSS's `get_locked`).
    pub async fn get_locked(&mut self) -> Result<Option<&[u8]>> {
        self.call(ObjectRequest::Get, AfterObject::Renew).await?;
        Ok(self.value())
    }

    /// Writes `value` and keeps the lock, renewed (SOSS's `update_locked_and_retain`); returns
    /// the new version. [`ErrorKind::ObjectNotFound`] when there is no object (insert it with
    /// [`ObjectGuard::insert_locked`]).
    pub async fn update_locked_and_retain(&mut self, value: impl Into<Vec<u8>>) -> Result<u64> {
        let request = self.update(value.into())?;
        self.call(request, AfterObject::Renew).await?;
        Ok(self.version())
    }

    /// Writes `value` and releases the lock (SOSS's `update_locked_and_release`); returns the
    /// new version. `Ok` means the write applied (the store checked the lock as it applied it);
    /// the release follows, and a lock it could not release expires with its TTL (its failure
    /// is logged). On an error nothing was written and the lock stays held (dropping the guard
    /// releases it), unless the error is the lease's loss.
    pub async fn update_locked_and_release(&mut self, value: impl Into<Vec<u8>>) -> Result<u64> {
        let request = self.update(value.into())?;
        self.call(request, AfterObject::Release).await?;
        self.finish_release().await;
        Ok(self.version())
    }

    /// Inserts the object, which must not exist ([`ErrorKind::AlreadyExists`]), keeping the
    /// lock; returns its version.
    pub async fn insert_locked(&mut self, value: impl Into<Vec<u8>>) -> Result<u64> {
        let value = value.into();
        baton_kernel::check_value(&value, self.guard.store.max_object_bytes())?;
        self.call(ObjectRequest::Insert(value), AfterObject::Keep)
            .await?;
        Ok(self.version())
    }

    /// Removes the object and releases the lock (SOSS's `remove_locked`). `Ok` means the
    /// removal applied; the release follows as for [`ObjectGuard::update_locked_and_release`].
    pub async fn remove_locked(&mut self) -> Result<()> {
        self.call(ObjectRequest::Remove, AfterObject::Release)
            .await?;
        self.finish_release().await;
        Ok(())
    }

    /// Renews the lock (SOSS's `lock_refresh`).
    pub async fn lock_refresh(&self) -> Result<()> {
        self.guard.renew().await
    }

    /// Releases the lock without writing (SOSS's `unlock`). A second call gives
    /// [`ErrorKind::NotOwner`].
    pub async fn unlock(&mut self) -> Result<()> {
        self.guard.release().await
    }

    fn update(&self, value: Vec<u8>) -> Result<ObjectRequest> {
        baton_kernel::check_value(&value, self.guard.store.max_object_bytes())?;
        Ok(ObjectRequest::Update {
            value,
            version: None,
        })
    }

    async fn call(&mut self, request: ObjectRequest, after: AfterObject) -> Result<()> {
        self.object = guard_call(&self.guard, request, after).await?;
        Ok(())
    }

    /// Waits for the release a successful write asked for; its failure is only logged: the
    /// write it follows applied under the lock, and a lock not released expires with its TTL.
    async fn finish_release(&mut self) {
        let view = self
            .guard
            .life
            .wait_for(|v| v.released.is_some() || v.done)
            .await;
        if let Some(Err(e)) = view.released {
            tracing::debug!(lock = %self.guard.name(), "release after an object write: {e}");
        }
    }
}

/// A holder's object call through its life.
async fn guard_call(guard: &Guard, request: ObjectRequest, after: AfterObject) -> Result<Object> {
    if let Some(e) = guard.forked() {
        return Err(e);
    }
    life_host::object(&guard.life, &*guard.store, request, after)
        .await
        .map_err(|e| match e.lock() {
            Some(_) => e,
            None => e.with_lock(guard.name()),
        })
}

impl crate::BlockingLocker {
    /// [`Locker::get`], blocking.
    pub fn get(&self, name: &str) -> Result<Option<Versioned>> {
        run(self.locker().get(name))?
    }

    /// [`Locker::insert`], blocking.
    pub fn insert(&self, name: &str, value: impl Into<Vec<u8>>) -> Result<u64> {
        run(self.locker().insert(name, value))?
    }

    /// [`Locker::update_optimistic`], blocking.
    pub fn update_optimistic(
        &self,
        name: &str,
        value: impl Into<Vec<u8>>,
        version: u64,
    ) -> Result<u64> {
        run(self.locker().update_optimistic(name, value, version))?
    }

    /// [`Locker::remove`], blocking.
    pub fn remove(&self, name: &str) -> Result<()> {
        run(self.locker().remove(name))?
    }

    /// [`Locker::get_and_lock`], blocking.
    pub fn get_and_lock(&self, name: &str) -> Result<BlockingObjectGuard> {
        self.get_and_lock_with(name, LockRequest::new())
    }

    /// [`Locker::get_and_lock_with`], blocking.
    pub fn get_and_lock_with(
        &self,
        name: &str,
        request: LockRequest,
    ) -> Result<BlockingObjectGuard> {
        let guard = run(self.locker().get_and_lock_with(name, request))??;
        Ok(BlockingObjectGuard { guard })
    }

    /// [`Locker::insert_and_lock`], blocking.
    pub fn insert_and_lock(
        &self,
        name: &str,
        value: impl Into<Vec<u8>>,
    ) -> Result<BlockingObjectGuard> {
        let guard = run(self.locker().insert_and_lock(name, value))??;
        Ok(BlockingObjectGuard { guard })
    }
}

/// An [`ObjectGuard`] for synchronous code. Dropping it releases the lock before `drop`
/// returns, as a [`BlockingGuard`](crate::BlockingGuard) does.
#[derive(Debug)]
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct BlockingObjectGuard {
    guard: ObjectGuard,
}

impl BlockingObjectGuard {
    /// [`ObjectGuard::value`].
    pub fn value(&self) -> Option<&[u8]> {
        self.guard.value()
    }

    /// [`ObjectGuard::version`].
    pub fn version(&self) -> u64 {
        self.guard.version()
    }

    /// [`ObjectGuard::guard`].
    pub fn guard(&self) -> &Guard {
        self.guard.guard()
    }

    /// [`ObjectGuard::get_locked`], blocking.
    pub fn get_locked(&mut self) -> Result<Option<&[u8]>> {
        run(self.guard.get_locked())?.map(drop)?;
        Ok(self.guard.value())
    }

    /// [`ObjectGuard::update_locked_and_retain`], blocking.
    pub fn update_locked_and_retain(&mut self, value: impl Into<Vec<u8>>) -> Result<u64> {
        run(self.guard.update_locked_and_retain(value))?
    }

    /// [`ObjectGuard::update_locked_and_release`], blocking.
    pub fn update_locked_and_release(&mut self, value: impl Into<Vec<u8>>) -> Result<u64> {
        run(self.guard.update_locked_and_release(value))?
    }

    /// [`ObjectGuard::insert_locked`], blocking.
    pub fn insert_locked(&mut self, value: impl Into<Vec<u8>>) -> Result<u64> {
        run(self.guard.insert_locked(value))?
    }

    /// [`ObjectGuard::remove_locked`], blocking.
    pub fn remove_locked(&mut self) -> Result<()> {
        run(self.guard.remove_locked())?
    }

    /// [`ObjectGuard::lock_refresh`], blocking.
    pub fn lock_refresh(&self) -> Result<()> {
        run(self.guard.lock_refresh())?
    }

    /// [`ObjectGuard::unlock`], blocking.
    pub fn unlock(&mut self) -> Result<()> {
        run(self.guard.unlock())?
    }
}

impl Drop for BlockingObjectGuard {
    fn drop(&mut self) {
        crate::api::blocking::release_on_drop(self.guard.guard_mut());
    }
}
