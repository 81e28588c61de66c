//! `baton_locker`: a store and default options, opened from a URL; shareable between threads.

use std::ffi::c_char;

use baton::{BlockingLocker, Error, Mode};

use crate::call::{call, invalid};
use crate::codes::BatonCode;
use crate::guard::BatonGuard;
use crate::shared::{self, Attempt};
use crate::text;

/// A locker: a store with default options. Thread-safe: one locker may be used from many
/// threads at once, and [`baton_locker_clone`] gives another handle on the same store.
/// Created by [`baton_locker_open`], freed by [`baton_locker_free`].
pub struct BatonLocker {
    pub(crate) locker: BlockingLocker,
}

/// Options of [`baton_locker_open`]. Fill it with [`baton_options_init`] first, then change
/// what you need; strings are borrowed for the call only.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BatonOptions {
    /// `"unique-insert"` (NULL: the default), `"bakery"` or `"column-prefix"`.
    pub strategy: *const c_char,
    /// The lease, in milliseconds (default 60000; 10 ms to 30 days).
    pub ttl_ms: i64,
    /// How long `baton_lock` waits for a held lock, in milliseconds (default 30000; 0: one
    /// attempt; `INT64_MAX`: forever).
    pub wait_timeout_ms: i64,
    /// Consistency of plain reads and writes on Cassandra: `"quorum"` (NULL: the default),
    /// `"local_quorum"`, `"each_quorum"`, `"all"`, `"one"`.
    pub consistency: *const c_char,
    /// The lock table (NULL: the URL's `table=`, or `baton_locks`); added to the URL.
    pub table: *const c_char,
    /// Whether held locks renew their leases in the background (default true).
    pub keep_alive: bool,
    /// Whether lock names are dot-separated paths (default false): a lock on `app.cache` then
    /// conflicts with `app` and `app.cache.users` (either side exclusive), not with `app.db`
    /// or `apple`. `"bakery"` and `"column-prefix"` only (unique insert is
    /// `BATON_INVALID_OPTION` at open); `a..b`, `a.`, `.a` and names with `|` are
    /// `BATON_INVALID_NAME`; objects (`baton_get_and_lock`, ...) are `BATON_INVALID_OPTION`.
    /// Added last: code that fills the struct with `baton_options_init` keeps working.
    pub paths: bool,
}

/// Fills `options` with the defaults. NULL is ignored.
///
/// # Safety
/// `options` is NULL or points to writable memory for one [`BatonOptions`].
#[no_mangle]
pub unsafe extern "C" fn baton_options_init(options: *mut BatonOptions) {
    if options.is_null() {
        return;
    }
    let (ttl_ms, wait_timeout_ms) = shared::default_times();
    let filled = BatonOptions {
        strategy: std::ptr::null(),
        ttl_ms,
        wait_timeout_ms,
        consistency: std::ptr::null(),
        table: std::ptr::null(),
        keep_alive: true,
        paths: false,
    };
    // SAFETY: non-NULL, and the caller promises room for one BatonOptions.
    unsafe { options.write(filled) };
}

/// Opens a locker on the store at `url` (`memory:`, `sqlite:///path.db`, `postgres://…`,
/// `mysql://…`, `cassandra://h1,h2/keyspace`, as the README lists) with `options` (NULL: the
/// defaults). Opening does not connect: an unreachable store is reported by the first lock.
/// On success `*out` is a new locker the caller frees with [`baton_locker_free`]; on error it
/// is set to NULL.
///
/// Errors: `BATON_INVALID_OPTION` for a NULL `url` or `out`, a malformed URL, an unknown
/// strategy or consistency, a TTL or timeout out of range (naming which), or `paths` with
/// the unique-insert strategy.
///
/// # Safety
/// `url` is NULL or a NUL-terminated string; `options` is NULL or points to a
/// [`BatonOptions`] whose strings are NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_locker_open(
    url: *const c_char,
    options: *const BatonOptions,
    out: *mut *mut BatonLocker,
) -> BatonCode {
    const F: &str = "baton_locker_open";
    call(|| {
        if out.is_null() {
            return Err(invalid(F, "out is NULL"));
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: the caller's promise about `url`.
        let url =
            unsafe { text::option(F, "url", url) }?.ok_or_else(|| invalid(F, "url is NULL"))?;
        let mut filled = std::mem::MaybeUninit::<BatonOptions>::uninit();
        // SAFETY: `filled` has room for one BatonOptions.
        unsafe { baton_options_init(filled.as_mut_ptr()) };
        // SAFETY: initialised just above; or the caller's promise about `options`.
        let options = if options.is_null() {
            unsafe { filled.assume_init() }
        } else {
            unsafe { options.read() }
        };
        // SAFETY (each): the caller's promise about the strings of `options`.
        let options = shared::Options {
            strategy: unsafe { text::option(F, "options.strategy", options.strategy) }?,
            ttl_ms: options.ttl_ms,
            wait_timeout_ms: options.wait_timeout_ms,
            consistency: unsafe { text::option(F, "options.consistency", options.consistency) }?,
            table: unsafe { text::option(F, "options.table", options.table) }?,
            keep_alive: options.keep_alive,
            paths: options.paths,
        };
        let locker = Box::new(BatonLocker {
            locker: shared::open(F, url, &options)?,
        });
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(Box::into_raw(locker)) };
        Ok(())
    })
}

/// Another handle on the same locker (same store, same options), freed separately.
///
/// # Safety
/// `locker` is NULL or a live locker; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_locker_clone(
    locker: *const BatonLocker,
    out: *mut *mut BatonLocker,
) -> BatonCode {
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { locker_ref("baton_locker_clone", locker) }?;
        if out.is_null() {
            return Err(invalid("baton_locker_clone", "out is NULL"));
        }
        let copy = Box::new(BatonLocker {
            locker: this.locker.clone(),
        });
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(Box::into_raw(copy)) };
        Ok(())
    })
}

/// Frees a locker handle. Locks taken through it stay held until they are unlocked or freed.
/// NULL is ignored.
///
/// # Safety
/// `locker` is NULL or a live locker handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn baton_locker_free(locker: *mut BatonLocker) {
    if locker.is_null() {
        return;
    }
    let _ = call(|| {
        // SAFETY: the caller gives up a live handle made by Box::into_raw.
        drop(unsafe { Box::from_raw(locker) });
        Ok(())
    });
}

/// # Safety
/// `locker` is NULL or a live locker.
pub(crate) unsafe fn locker_ref<'a>(
    function: &str,
    locker: *const BatonLocker,
) -> Result<&'a BatonLocker, Error> {
    // SAFETY: the caller's promise.
    unsafe { locker.as_ref() }.ok_or_else(|| invalid(function, "locker is NULL"))
}

/// Takes lock `name` (`name_len` bytes, UTF-8, no NUL needed), waiting up to the locker's
/// wait timeout. On success `*out` is a held lock the caller frees with
/// `baton_guard_free` (which unlocks it if still held); on error
/// NULL.
///
/// Errors: `BATON_TIMED_OUT` when the wait ran out; `BATON_INVALID_NAME`; the store's codes.
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn baton_lock(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        lock_with(
            "baton_lock",
            locker,
            name,
            name_len,
            None,
            out,
            Attempt::Wait,
        )
    }
}

/// One attempt at lock `name`: `BATON_BUSY` if it is held. Otherwise as [`baton_lock`].
///
/// # Safety
/// As [`baton_lock`].
#[no_mangle]
pub unsafe extern "C" fn baton_try_lock(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        lock_with(
            "baton_try_lock",
            locker,
            name,
            name_len,
            None,
            out,
            Attempt::Once,
        )
    }
}

/// [`baton_lock`] waiting up to `wait_ms` milliseconds instead of the locker's timeout (0:
/// one attempt, giving `BATON_TIMED_OUT` if held; negative: `BATON_INVALID_OPTION`).
///
/// # Safety
/// As [`baton_lock`].
#[no_mangle]
pub unsafe extern "C" fn baton_lock_for(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    wait_ms: i64,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    const F: &str = "baton_lock_for";
    let wait = match shared::millis(F, "wait_ms", wait_ms, true) {
        Ok(wait) => wait,
        Err(e) => return call(|| Err(e)),
    };
    // SAFETY: the caller's promises, passed on.
    unsafe { lock_with(F, locker, name, name_len, None, out, Attempt::For(wait)) }
}

/// Takes `name` in `mode` (`None`: the locker's default) as `function`.
///
/// # Safety
/// As [`baton_lock`].
pub(crate) unsafe fn lock_with(
    function: &str,
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    mode: Option<Mode>,
    out: *mut *mut BatonGuard,
    attempt: Attempt,
) -> BatonCode {
    call(|| {
        if out.is_null() {
            return Err(invalid(function, "out is NULL"));
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: the caller's promises.
        let this = unsafe { locker_ref(function, locker) }?;
        // SAFETY: the caller's promise about `name`.
        let name = unsafe { text::name(name, name_len) }?;
        let guard = shared::lock(&this.locker, name, mode, attempt)?;
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(BatonGuard::boxed(guard)) };
        Ok(())
    })
}
