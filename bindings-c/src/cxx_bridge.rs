//! The C++ API's bridge (cxx): the Rust functions `include/baton.hpp` wraps in RAII classes.
//! Errors cross as `rust::Error` whose text is `<code>:<message>`; the header turns them into
//! `baton::Error` and its subclasses by the code (one table with C: [`BatonCode`]).
//!
//! [`BatonCode`]: crate::BatonCode

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use baton::{
    BlockingGuard, BlockingLocker, BlockingObjectGuard, BlockingSemaphore, Error, ErrorKind, Mode,
};

use crate::shared::{self, Attempt};

#[cxx::bridge(namespace = "baton::bridge")]
mod ffi {
    /// A locker's options; empty strings mean the default.
    struct LockerOptions {
        strategy: String,
        ttl_ms: i64,
        wait_timeout_ms: i64,
        consistency: String,
        table: String,
        keep_alive: bool,
        paths: bool,
    }

    /// An object as `get` read it: `found` false when there is none (value empty, version 0).
    struct ObjectRead {
        found: bool,
        value: Vec<u8>,
        version: u64,
    }

    unsafe extern "C++" {
        include!("baton/lost_callback.hpp");
        type LostCallback;
        fn call(self: &LostCallback, code: u32, message: &str);
    }

    extern "Rust" {
        type Locker;
        type Guard;

        fn default_options() -> LockerOptions;
        fn open_locker(url: &[u8], options: &LockerOptions) -> Result<Box<Locker>>;
        fn clone_locker(self: &Locker) -> Box<Locker>;
        fn lock(self: &Locker, name: &[u8]) -> Result<Box<Guard>>;
        fn try_lock(self: &Locker, name: &[u8]) -> Result<Box<Guard>>;
        fn lock_for(self: &Locker, name: &[u8], wait_ms: i64) -> Result<Box<Guard>>;

        fn unlock(self: &mut Guard) -> Result<()>;
        fn finish(self: &mut Guard);
        fn token(self: &Guard) -> u64;
        fn held(self: &Guard) -> bool;
        fn remaining_ms(self: &Guard) -> i64;
        fn check(self: &Guard) -> Result<()>;
        fn wait_lost(self: &Guard, timeout_ms: i64) -> Result<bool>;
        fn on_lost(self: &Guard, callback: UniquePtr<LostCallback>) -> Result<()>;

        fn code_name(code: u32) -> &'static str;
    }

    // Shared locks and semaphores (baton::SharedMutex, baton::Semaphore).
    extern "Rust" {
        type Semaphore;

        fn lock_shared(self: &Locker, name: &[u8]) -> Result<Box<Guard>>;
        fn try_lock_shared(self: &Locker, name: &[u8]) -> Result<Box<Guard>>;
        fn lock_shared_for(self: &Locker, name: &[u8], wait_ms: i64) -> Result<Box<Guard>>;
        fn semaphore(self: &Locker, name: &[u8], permits: i64) -> Result<Box<Semaphore>>;

        fn permits(self: &Semaphore) -> u32;
        fn acquire(self: &Semaphore) -> Result<Box<Guard>>;
        fn try_acquire(self: &Semaphore) -> Result<Box<Guard>>;
        fn acquire_for(self: &Semaphore, wait_ms: i64) -> Result<Box<Guard>>;
    }

    // Several locks at once (Locker::lock_all): the names joined, with each one's length; the
    // locks come back in the order taken, handed over one by one.
    extern "Rust" {
        type Guards;

        fn lock_all(
            self: &Locker,
            joined: &[u8],
            lengths: &[usize],
            shared: bool,
            default_wait: bool,
            wait_ms: i64,
        ) -> Result<Box<Guards>>;
        fn count(self: &Guards) -> usize;
        fn take(self: &mut Guards, index: usize) -> Result<Box<Guard>>;
        fn name(self: &Guard) -> &str;
    }

    // Objects beside locks: unlocked calls on the locker, locked ones on an Object.
    extern "Rust" {
        type Object;

        fn get(self: &Locker, name: &[u8]) -> Result<ObjectRead>;
        fn insert(self: &Locker, name: &[u8], value: &[u8]) -> Result<u64>;
        fn update_optimistic(self: &Locker, name: &[u8], value: &[u8], version: u64)
            -> Result<u64>;
        fn remove(self: &Locker, name: &[u8]) -> Result<()>;
        fn get_and_lock(self: &Locker, name: &[u8]) -> Result<Box<Object>>;
        fn try_get_and_lock(self: &Locker, name: &[u8]) -> Result<Box<Object>>;
        fn get_and_lock_for(self: &Locker, name: &[u8], wait_ms: i64) -> Result<Box<Object>>;
        fn insert_and_lock(self: &Locker, name: &[u8], value: &[u8]) -> Result<Box<Object>>;

        fn exists(self: &Object) -> bool;
        fn value(self: &Object) -> &[u8];
        fn version(self: &Object) -> u64;
        fn token(self: &Object) -> u64;
        fn held(self: &Object) -> bool;
        fn remaining_ms(self: &Object) -> i64;
        fn get_locked(self: &mut Object) -> Result<()>;
        fn update_locked_and_retain(self: &mut Object, value: &[u8]) -> Result<u64>;
        fn update_locked_and_release(self: &mut Object, value: &[u8]) -> Result<u64>;
        fn insert_locked(self: &mut Object, value: &[u8]) -> Result<u64>;
        fn remove_locked(self: &mut Object) -> Result<()>;
        fn lock_refresh(self: &Object) -> Result<()>;
        fn unlock(self: &mut Object) -> Result<()>;
        fn finish(self: &mut Object);
    }
}

// SAFETY: a LostCallback holds a std::function the C++ caller hands over for baton's thread
// to call once; baton.hpp documents that it must be callable from another thread.
unsafe impl Send for ffi::LostCallback {}
// SAFETY: only `call`, a const method, is used, and only once.
unsafe impl Sync for ffi::LostCallback {}

/// An error as it crosses into C++: `<code>:<message>`.
#[derive(Debug)]
pub struct Coded(Error);

impl fmt::Display for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0.code(), self.0)
    }
}

impl From<Error> for Coded {
    fn from(e: Error) -> Self {
        Coded(e)
    }
}

/// Runs `body`; a panic becomes an [`ErrorKind::Internal`] error, never an unwind into C++.
fn guarded<T>(body: impl FnOnce() -> Result<T, Error>) -> Result<T, Coded> {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err(Error::internal("baton panicked in a C++ call")))
        .map_err(Coded)
}

/// A locker (`baton::Locker` in C++).
pub struct Locker(BlockingLocker);

/// A held lock (inside `baton::Lock` and `baton::Mutex`), and whether it was unlocked (then
/// finishing it has nothing left to do).
pub struct Guard(Option<BlockingGuard>, bool);

fn default_options() -> ffi::LockerOptions {
    let (ttl_ms, wait_timeout_ms) = shared::default_times();
    ffi::LockerOptions {
        strategy: String::new(),
        ttl_ms,
        wait_timeout_ms,
        consistency: String::new(),
        table: String::new(),
        keep_alive: true,
        paths: false,
    }
}

fn text<'a>(what: &str, bytes: &'a [u8], kind: ErrorKind) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes).map_err(|e| {
        Error::new(
            kind,
            format!("{what} must be UTF-8; byte {} is not", e.valid_up_to()),
        )
    })
}

fn open_locker(url: &[u8], options: &ffi::LockerOptions) -> Result<Box<Locker>, Coded> {
    guarded(|| {
        let url = text("the store URL", url, ErrorKind::InvalidOption)?;
        let some = |s: &str| {
            if s.is_empty() {
                None
            } else {
                Some(s.to_owned())
            }
        };
        let (strategy, consistency, table) = (
            some(&options.strategy),
            some(&options.consistency),
            some(&options.table),
        );
        let options = shared::Options {
            strategy: strategy.as_deref(),
            ttl_ms: options.ttl_ms,
            wait_timeout_ms: options.wait_timeout_ms,
            consistency: consistency.as_deref(),
            table: table.as_deref(),
            keep_alive: options.keep_alive,
            paths: options.paths,
        };
        Ok(Box::new(Locker(shared::open(
            "baton::Locker",
            url,
            &options,
        )?)))
    })
}

impl Locker {
    fn clone_locker(&self) -> Box<Locker> {
        Box::new(Locker(self.0.clone()))
    }

    /// Takes `name` in `mode` (`None`: the locker's default).
    fn take(&self, name: &[u8], mode: Option<Mode>, attempt: Attempt) -> Result<Box<Guard>, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            Ok(Box::new(Guard(
                Some(shared::lock(&self.0, name, mode, attempt)?),
                false,
            )))
        })
    }

    fn lock(&self, name: &[u8]) -> Result<Box<Guard>, Coded> {
        self.take(name, None, Attempt::Wait)
    }

    fn try_lock(&self, name: &[u8]) -> Result<Box<Guard>, Coded> {
        self.take(name, None, Attempt::Once)
    }

    fn lock_for(&self, name: &[u8], wait_ms: i64) -> Result<Box<Guard>, Coded> {
        let wait = shared::millis("baton::Lock", "the wait", wait_ms, true).map_err(Coded)?;
        self.take(name, None, Attempt::For(wait))
    }

    fn lock_shared(&self, name: &[u8]) -> Result<Box<Guard>, Coded> {
        self.take(name, Some(Mode::Shared), Attempt::Wait)
    }

    fn try_lock_shared(&self, name: &[u8]) -> Result<Box<Guard>, Coded> {
        self.take(name, Some(Mode::Shared), Attempt::Once)
    }

    fn lock_shared_for(&self, name: &[u8], wait_ms: i64) -> Result<Box<Guard>, Coded> {
        let wait =
            shared::millis("baton::SharedMutex", "the wait", wait_ms, true).map_err(Coded)?;
        self.take(name, Some(Mode::Shared), Attempt::For(wait))
    }

    fn semaphore(&self, name: &[u8], permits: i64) -> Result<Box<Semaphore>, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            Ok(Box::new(Semaphore(shared::semaphore(
                &self.0, name, permits,
            )?)))
        })
    }
}

impl Locker {
    /// The names of `joined`, cut at `lengths`, taken all or nothing (`default_wait`: up to
    /// the locker's wait timeout, else up to `wait_ms`).
    fn lock_all(
        &self,
        joined: &[u8],
        lengths: &[usize],
        shared: bool,
        default_wait: bool,
        wait_ms: i64,
    ) -> Result<Box<Guards>, Coded> {
        guarded(|| {
            let what = if shared {
                "baton::Locker::lock_all_shared"
            } else {
                "baton::Locker::lock_all"
            };
            let attempt = if default_wait {
                Attempt::Wait
            } else {
                Attempt::For(shared::millis(what, "the wait", wait_ms, true)?)
            };
            let mut names = Vec::with_capacity(lengths.len());
            let mut rest = joined;
            for &length in lengths {
                if length > rest.len() {
                    return Err(Error::internal(format!(
                        "{what}: the names' lengths exceed their bytes"
                    )));
                }
                let (name, after) = rest.split_at(length);
                names.push(text("a lock name", name, ErrorKind::InvalidName)?);
                rest = after;
            }
            let mode = shared.then_some(Mode::Shared);
            let guards = shared::lock_all(&self.0, &names, mode, attempt)?;
            Ok(Box::new(Guards(guards.into_iter().map(Some).collect())))
        })
    }
}

/// The locks `lock_all` took, in the order taken, until C++ takes each into a `baton::Lock`
/// (any left are released when this is dropped).
pub struct Guards(Vec<Option<BlockingGuard>>);

impl Guards {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn take(&mut self, index: usize) -> Result<Box<Guard>, Coded> {
        guarded(|| match self.0.get_mut(index).and_then(Option::take) {
            Some(guard) => Ok(Box::new(Guard(Some(guard), false))),
            None => Err(Error::internal(format!(
                "lock_all's lock {index} was taken already or never was"
            ))),
        })
    }
}

impl Drop for Guards {
    fn drop(&mut self) {
        for guard in self.0.drain(..).flatten() {
            let _ = catch_unwind(AssertUnwindSafe(|| shared::finish(guard)));
        }
    }
}

/// A semaphore (inside `baton::Semaphore`).
pub struct Semaphore(BlockingSemaphore);

impl Semaphore {
    fn permits(&self) -> u32 {
        self.0.permits()
    }

    fn take(&self, attempt: Attempt) -> Result<Box<Guard>, Coded> {
        guarded(|| {
            Ok(Box::new(Guard(
                Some(shared::acquire(&self.0, attempt)?),
                false,
            )))
        })
    }

    fn acquire(&self) -> Result<Box<Guard>, Coded> {
        self.take(Attempt::Wait)
    }

    fn try_acquire(&self) -> Result<Box<Guard>, Coded> {
        self.take(Attempt::Once)
    }

    fn acquire_for(&self, wait_ms: i64) -> Result<Box<Guard>, Coded> {
        let wait = shared::millis("baton::Semaphore", "the wait", wait_ms, true).map_err(Coded)?;
        self.take(Attempt::For(wait))
    }
}

impl Guard {
    fn guard(&self) -> Result<&BlockingGuard, Error> {
        self.0
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::NotOwner, "this lock was already finished"))
    }

    fn unlock(&mut self) -> Result<(), Coded> {
        guarded(|| match self.0.as_mut() {
            Some(guard) => guard.release(),
            None => Err(Error::new(
                ErrorKind::NotOwner,
                "this lock was already finished",
            )),
        })
    }

    fn finish(&mut self) {
        if let Some(guard) = self.0.take() {
            if !self.1 {
                let _ = catch_unwind(AssertUnwindSafe(|| shared::finish(guard)));
            }
        }
    }

    fn token(&self) -> u64 {
        self.0.as_ref().map_or(0, BlockingGuard::token)
    }

    fn name(&self) -> &str {
        self.0.as_ref().map_or("", BlockingGuard::name)
    }

    fn held(&self) -> bool {
        self.0.as_ref().is_some_and(BlockingGuard::is_held)
    }

    fn remaining_ms(&self) -> i64 {
        self.0.as_ref().map_or(0, |g| {
            i64::try_from(g.remaining().as_millis()).unwrap_or(i64::MAX)
        })
    }

    fn check(&self) -> Result<(), Coded> {
        guarded(|| self.guard()?.check())
    }

    fn wait_lost(&self, timeout_ms: i64) -> Result<bool, Coded> {
        guarded(|| {
            let timeout =
                shared::millis("baton::Lock::wait_lost", "the timeout", timeout_ms, true)?;
            self.guard()?.wait_lost(timeout)
        })
    }

    fn on_lost(&self, callback: cxx::UniquePtr<ffi::LostCallback>) -> Result<(), Coded> {
        guarded(|| {
            if callback.is_null() {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    "the loss callback is empty",
                ));
            }
            self.guard()?.on_lost(move |e| {
                if let Some(callback) = callback.as_ref() {
                    callback.call(e.code(), &e.to_string());
                }
            });
            Ok(())
        })
    }
}

impl Locker {
    fn get(&self, name: &[u8]) -> Result<ffi::ObjectRead, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            Ok(match self.0.get(name)? {
                Some(read) => ffi::ObjectRead {
                    found: true,
                    value: read.value,
                    version: read.version,
                },
                None => ffi::ObjectRead {
                    found: false,
                    value: Vec::new(),
                    version: 0,
                },
            })
        })
    }

    fn insert(&self, name: &[u8], value: &[u8]) -> Result<u64, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            self.0.insert(name, value)
        })
    }

    fn update_optimistic(&self, name: &[u8], value: &[u8], version: u64) -> Result<u64, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            self.0.update_optimistic(name, value, version)
        })
    }

    fn remove(&self, name: &[u8]) -> Result<(), Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            self.0.remove(name)
        })
    }

    fn take_object(&self, name: &[u8], attempt: Attempt) -> Result<Box<Object>, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            Ok(Box::new(Object(Some(shared::get_and_lock(
                &self.0, name, attempt,
            )?))))
        })
    }

    fn get_and_lock(&self, name: &[u8]) -> Result<Box<Object>, Coded> {
        self.take_object(name, Attempt::Wait)
    }

    fn try_get_and_lock(&self, name: &[u8]) -> Result<Box<Object>, Coded> {
        self.take_object(name, Attempt::Once)
    }

    fn get_and_lock_for(&self, name: &[u8], wait_ms: i64) -> Result<Box<Object>, Coded> {
        let wait = shared::millis("baton::Locker::get_and_lock_for", "the wait", wait_ms, true)
            .map_err(Coded)?;
        self.take_object(name, Attempt::For(wait))
    }

    fn insert_and_lock(&self, name: &[u8], value: &[u8]) -> Result<Box<Object>, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            Ok(Box::new(Object(Some(self.0.insert_and_lock(name, value)?))))
        })
    }
}

/// A held lock and its object (inside `baton::Object`); `None` once finished.
pub struct Object(Option<BlockingObjectGuard>);

impl Object {
    fn object(&mut self) -> Result<&mut BlockingObjectGuard, Error> {
        self.0
            .as_mut()
            .ok_or_else(|| Error::new(ErrorKind::NotOwner, "this object was already finished"))
    }

    fn exists(&self) -> bool {
        self.0.as_ref().is_some_and(|o| o.value().is_some())
    }

    fn value(&self) -> &[u8] {
        self.0.as_ref().and_then(|o| o.value()).unwrap_or_default()
    }

    fn version(&self) -> u64 {
        self.0.as_ref().map_or(0, BlockingObjectGuard::version)
    }

    fn token(&self) -> u64 {
        self.0.as_ref().map_or(0, |o| o.guard().token())
    }

    fn held(&self) -> bool {
        self.0.as_ref().is_some_and(|o| o.guard().is_held())
    }

    fn remaining_ms(&self) -> i64 {
        self.0.as_ref().map_or(0, |o| {
            i64::try_from(o.guard().remaining().as_millis()).unwrap_or(i64::MAX)
        })
    }

    fn get_locked(&mut self) -> Result<(), Coded> {
        guarded(|| self.object()?.get_locked().map(drop))
    }

    fn update_locked_and_retain(&mut self, value: &[u8]) -> Result<u64, Coded> {
        guarded(|| self.object()?.update_locked_and_retain(value))
    }

    fn update_locked_and_release(&mut self, value: &[u8]) -> Result<u64, Coded> {
        guarded(|| self.object()?.update_locked_and_release(value))
    }

    fn insert_locked(&mut self, value: &[u8]) -> Result<u64, Coded> {
        guarded(|| self.object()?.insert_locked(value))
    }

    fn remove_locked(&mut self) -> Result<(), Coded> {
        guarded(|| self.object()?.remove_locked())
    }

    fn lock_refresh(&self) -> Result<(), Coded> {
        guarded(|| match self.0.as_ref() {
            Some(object) => object.lock_refresh(),
            None => Err(Error::new(
                ErrorKind::NotOwner,
                "this object was already finished",
            )),
        })
    }

    fn unlock(&mut self) -> Result<(), Coded> {
        guarded(|| self.object()?.unlock())
    }

    /// Releases the lock if still held, as the destructor of `baton::Object` does (dropping
    /// the guard releases it and waits for the store; never a panic across the boundary).
    fn finish(&mut self) {
        if let Some(object) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(object)));
        }
    }
}

fn code_name(code: u32) -> &'static str {
    match code {
        0 => "ok",
        c => ErrorKind::from_code(c).map_or("unknown", ErrorKind::as_str),
    }
}
