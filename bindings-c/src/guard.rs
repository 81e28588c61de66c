//! `baton_guard`: one held lock. Unlock it with [`baton_unlock`] to learn whether the critical
//! section was protected throughout, or free it with [`baton_guard_free`], which unlocks it
//! too and cannot fail.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use baton::{BlockingGuard, Error};

use crate::call::{call, invalid};
use crate::codes::BatonCode;
use crate::modes::{c_mode, BatonMode};
use crate::shared::{self, millis};

/// A lock taken by `baton_lock`, `baton_try_lock` or `baton_lock_for`, a shared lock
/// (`baton_lock_shared`, ...) or a semaphore's permit (`baton_semaphore_acquire`, ...). Its
/// functions may be called from any thread. In a child process after `fork()` it belongs to
/// the parent: `baton_unlock` there gives `BATON_NOT_OWNER` and `baton_guard_free` only frees
/// memory.
pub struct BatonGuard {
    /// The guard, and whether it was unlocked (then freeing it has nothing left to do).
    guard: Mutex<(BlockingGuard, bool)>,
}

impl BatonGuard {
    pub(crate) fn boxed(guard: BlockingGuard) -> *mut BatonGuard {
        Box::into_raw(Box::new(BatonGuard {
            guard: Mutex::new((guard, false)),
        }))
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, (BlockingGuard, bool)> {
        self.guard.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Called once, from a thread of baton's, when a held lock's lease is lost: `context` as given
/// to [`baton_guard_on_lost`], the error's code (`BATON_LOST`) and message (valid during the
/// call only). It must return quickly and must not call back into the same lock.
pub type BatonLostCallback =
    Option<unsafe extern "C" fn(context: *mut c_void, code: BatonCode, message: *const c_char)>;

/// # Safety
/// `lock` is NULL or a live lock.
unsafe fn lock_ref<'a>(function: &str, lock: *const BatonGuard) -> Result<&'a BatonGuard, Error> {
    // SAFETY: the caller's promise.
    unsafe { lock.as_ref() }.ok_or_else(|| invalid(function, "lock is NULL"))
}

/// Unlocks. `BATON_OK` means the lease was valid until the unlock was sent: the critical
/// section was protected throughout. `BATON_LOST` means it was not. A second unlock gives
/// `BATON_NOT_OWNER`. The handle stays allocated: free it with [`baton_guard_free`].
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn baton_unlock(lock: *mut BatonGuard) -> BatonCode {
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { lock_ref("baton_unlock", lock) }?;
        let mut guard = this.guard();
        // Released either way (a failed unlock lets the lock expire with its TTL).
        guard.1 = true;
        guard.0.release()
    })
}

/// Unlocks if still held, waiting for the store to confirm (errors ignored: an unlock that
/// could not be confirmed expires with its TTL), and frees the handle. NULL is ignored.
///
/// # Safety
/// `lock` is NULL or a live lock, not used again.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_free(lock: *mut BatonGuard) {
    if lock.is_null() {
        return;
    }
    let _ = call(|| {
        // SAFETY: the caller gives up a live handle made by Box::into_raw.
        let lock = unsafe { Box::from_raw(lock) };
        let (guard, unlocked) = lock
            .guard
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if !unlocked {
            shared::finish(guard);
        }
        Ok(())
    });
}

/// The lock's fencing token (0 for a NULL lock): pass it to the resource you protect.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_token(lock: *const BatonGuard) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { lock.as_ref() }.map_or(0, |l| l.guard().0.token())
}

/// The lock's name: `*name` points to its `*name_len` bytes (UTF-8, not NUL-terminated),
/// owned by the lock and valid until it is freed with [`baton_guard_free`]. Which lock is
/// which among those `baton_lock_all` gave. A NULL `lock`, `name` or `name_len` is
/// `BATON_INVALID_OPTION`.
///
/// # Safety
/// `lock` is NULL or a live lock; `name` and `name_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_name(
    lock: *const BatonGuard,
    name: *mut *const c_char,
    name_len: *mut usize,
) -> BatonCode {
    const F: &str = "baton_guard_name";
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { lock_ref(F, lock) }?;
        if name.is_null() || name_len.is_null() {
            return Err(invalid(F, "name or name_len is NULL"));
        }
        let guard = this.guard();
        // The name's bytes belong to the guard, which no call changes: they stay where they
        // are until the handle is freed.
        let text = guard.0.name();
        // SAFETY: both non-NULL and writable.
        unsafe {
            name.write(text.as_ptr().cast::<c_char>());
            name_len.write(text.len());
        }
        Ok(())
    })
}

/// How the lock is (or was) held: `*mode` is `BATON_MODE_EXCLUSIVE`, `BATON_MODE_SHARED` or
/// `BATON_MODE_COUNTED`; `*permits` (NULL: not wanted) the semaphore's permits for a counted
/// one, 1 otherwise. A NULL `lock` or `mode` is `BATON_INVALID_OPTION`.
///
/// # Safety
/// `lock` is NULL or a live lock; `mode` and `permits` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_mode(
    lock: *const BatonGuard,
    mode: *mut BatonMode,
    permits: *mut u32,
) -> BatonCode {
    const F: &str = "baton_guard_mode";
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { lock_ref(F, lock) }?;
        if mode.is_null() {
            return Err(invalid(F, "mode is NULL"));
        }
        let (held_as, count) = c_mode(this.guard().0.mode());
        // SAFETY: non-NULL and writable.
        unsafe { mode.write(held_as) };
        if !permits.is_null() {
            // SAFETY: non-NULL and writable.
            unsafe { permits.write(count) };
        }
        Ok(())
    })
}

/// Whether the lock is held: false once unlocked, lost, or past its deadline (and for NULL).
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_held(lock: *const BatonGuard) -> bool {
    // SAFETY: the caller's promise.
    unsafe { lock.as_ref() }.is_some_and(|l| l.guard().0.is_held())
}

/// Milliseconds left before the lease's deadline (0 when not held, and for NULL).
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_remaining_ms(lock: *const BatonGuard) -> i64 {
    // SAFETY: the caller's promise.
    unsafe { lock.as_ref() }.map_or(0, |l| {
        i64::try_from(l.guard().0.remaining().as_millis()).unwrap_or(i64::MAX)
    })
}

/// `BATON_OK` while the lock is held; `BATON_LOST` (with the reason) once its lease was lost;
/// `BATON_NOT_OWNER` after an unlock.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_check(lock: *const BatonGuard) -> BatonCode {
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { lock_ref("baton_guard_check", lock) }?;
        this.guard().0.check()
    })
}

/// Waits up to `timeout_ms` milliseconds for the lock to stop being held (lost, unlocked or
/// past its deadline); `*lost` says whether it did. Negative timeouts are
/// `BATON_INVALID_OPTION`.
///
/// # Safety
/// `lock` is NULL or a live lock; `lost` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_wait_lost(
    lock: *const BatonGuard,
    timeout_ms: i64,
    lost: *mut bool,
) -> BatonCode {
    const F: &str = "baton_guard_wait_lost";
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { lock_ref(F, lock) }?;
        if lost.is_null() {
            return Err(invalid(F, "lost is NULL"));
        }
        let timeout = millis(F, "timeout_ms", timeout_ms, true)?;
        let ended = this
            .guard()
            .0
            .wait_lost(timeout.min(Duration::from_secs(u64::MAX / 4)))?;
        // SAFETY: non-NULL and writable.
        unsafe { lost.write(ended) };
        Ok(())
    })
}

/// A raw pointer that may travel to baton's thread: the caller of [`baton_guard_on_lost`]
/// promises `context` may be used from any thread until the callback ran or the lock was
/// unlocked.
struct Context(*mut c_void);
// SAFETY: see the type's docs: the C caller vouches for the pointer's thread-safety.
unsafe impl Send for Context {}

/// Asks for `callback(context, BATON_LOST, message)` once, from a thread of baton's, if the
/// lease is lost (a renewal found the lock broken or taken over, or its deadline passed). Not
/// called after an unlock. A NULL callback is `BATON_INVALID_OPTION`.
///
/// # Safety
/// `lock` is NULL or a live lock; `context` must stay usable from another thread until the
/// callback has run or the lock was unlocked or freed.
#[no_mangle]
pub unsafe extern "C" fn baton_guard_on_lost(
    lock: *const BatonGuard,
    callback: BatonLostCallback,
    context: *mut c_void,
) -> BatonCode {
    const F: &str = "baton_guard_on_lost";
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { lock_ref(F, lock) }?;
        let callback = callback.ok_or_else(|| invalid(F, "callback is NULL"))?;
        let context = Context(context);
        this.guard().0.on_lost(move |e| {
            let context = context;
            let message = CString::new(e.to_string().replace('\0', " ")).unwrap_or_default();
            // SAFETY: the caller's promise about `callback` and `context`.
            unsafe { callback(context.0, BatonCode::from(e.kind()), message.as_ptr()) };
        });
        Ok(())
    })
}
