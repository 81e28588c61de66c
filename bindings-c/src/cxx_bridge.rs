//! The C++ API's bridge (cxx): the Rust functions `include/baton.hpp` wraps in RAII classes.
//! Errors cross as `rust::Error` whose text is `<code>:<message>`; the header turns them into
//! `baton::Error` and its subclasses by the code (one table with C: [`BatonCode`]).
//!
//! [`BatonCode`]: crate::BatonCode

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use baton::{BlockingGuard, BlockingLocker, Error, ErrorKind};

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

    fn take(&self, name: &[u8], attempt: Attempt) -> Result<Box<Guard>, Coded> {
        guarded(|| {
            let name = text("a lock name", name, ErrorKind::InvalidName)?;
            Ok(Box::new(Guard(
                Some(shared::lock(&self.0, name, attempt)?),
                false,
            )))
        })
    }

    fn lock(&self, name: &[u8]) -> Result<Box<Guard>, Coded> {
        self.take(name, Attempt::Wait)
    }

    fn try_lock(&self, name: &[u8]) -> Result<Box<Guard>, Coded> {
        self.take(name, Attempt::Once)
    }

    fn lock_for(&self, name: &[u8], wait_ms: i64) -> Result<Box<Guard>, Coded> {
        let wait = shared::millis("baton::Lock", "the wait", wait_ms, true).map_err(Coded)?;
        self.take(name, Attempt::For(wait))
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

fn code_name(code: u32) -> &'static str {
    match code {
        0 => "ok",
        c => ErrorKind::from_code(c).map_or("unknown", ErrorKind::as_str),
    }
}
