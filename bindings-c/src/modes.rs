//! Shared locks and semaphores: `baton_lock_shared` and friends, and `baton_semaphore`. Only
//! types are adapted here: which modes a strategy carries, who may hold beside whom and how
//! many permits a name has are the `baton` crate's decisions.

use std::ffi::c_char;

use baton::{BlockingSemaphore, Error, Mode};

use crate::call::{call, invalid};
use crate::codes::BatonCode;
use crate::guard::BatonGuard;
use crate::locker::{lock_with, locker_ref, BatonLocker};
use crate::shared::{self, Attempt};
use crate::text;

/// Takes lock `name` as a reader: any number of shared holders at once, never beside an
/// exclusive one (a writer that waits is not starved: readers that come after it wait behind
/// it). Waits up to the locker's wait timeout. The lock is a `baton_guard`, unlocked with
/// `baton_unlock` and freed with `baton_guard_free` like any other.
///
/// Errors: `BATON_INVALID_OPTION` when the locker's strategy is unique insert (shared locks
/// need `"bakery"` or `"column-prefix"`), or when the name is in use as a semaphore;
/// `BATON_TIMED_OUT` when the wait ran out; `BATON_INVALID_NAME`; the store's codes.
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn baton_lock_shared(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    let (f, shared) = ("baton_lock_shared", Some(Mode::Shared));
    // SAFETY: the caller's promises, passed on.
    unsafe { lock_with(f, locker, name, name_len, shared, out, Attempt::Wait) }
}

/// One attempt at [`baton_lock_shared`]: `BATON_BUSY` while a writer holds the lock or waits
/// for it.
///
/// # Safety
/// As [`baton_lock_shared`].
#[no_mangle]
pub unsafe extern "C" fn baton_try_lock_shared(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    let (f, shared) = ("baton_try_lock_shared", Some(Mode::Shared));
    // SAFETY: the caller's promises, passed on.
    unsafe { lock_with(f, locker, name, name_len, shared, out, Attempt::Once) }
}

/// [`baton_lock_shared`] waiting up to `wait_ms` milliseconds instead of the locker's timeout
/// (0: one attempt, giving `BATON_TIMED_OUT` if held; negative: `BATON_INVALID_OPTION`).
///
/// # Safety
/// As [`baton_lock_shared`].
#[no_mangle]
pub unsafe extern "C" fn baton_lock_shared_for(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    wait_ms: i64,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    const F: &str = "baton_lock_shared_for";
    let wait = match shared::millis(F, "wait_ms", wait_ms, true) {
        Ok(wait) => wait,
        // SAFETY: the caller's promise about `out`.
        Err(e) => return unsafe { refuse(out, e) },
    };
    let shared = Some(Mode::Shared);
    // SAFETY: the caller's promises, passed on.
    unsafe { lock_with(F, locker, name, name_len, shared, out, Attempt::For(wait)) }
}

/// A semaphore: at most `baton_semaphore_permits` holders of its name at once, across every
/// process using the store. Made by [`baton_semaphore_open`], freed by
/// [`baton_semaphore_free`]; its functions may be called from many threads at once. Each
/// permit taken is a `baton_guard`: `baton_unlock` gives it back (a second `baton_unlock` is
/// `BATON_NOT_OWNER`), `baton_guard_free` gives it back if still held and frees it.
pub struct BatonSemaphore {
    semaphore: BlockingSemaphore,
}

/// Opens a semaphore of `permits` (1 to 10000) on lock `name` (`name_len` bytes, UTF-8) of
/// `locker`. Opening takes no permit and does not touch the store. On success `*out` is a
/// semaphore the caller frees with [`baton_semaphore_free`]; on error NULL.
///
/// Every user of the name must give the same `permits`: an acquire that finds the name held
/// with another count, or as a shared or exclusive lock, is `BATON_INVALID_OPTION` naming
/// both.
///
/// Errors: `BATON_INVALID_OPTION` for `permits` outside 1 to 10000, a locker whose strategy
/// is unique insert (semaphores need `"bakery"` or `"column-prefix"`), a NULL `locker` or
/// `out`; `BATON_INVALID_NAME`.
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn baton_semaphore_open(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    permits: i64,
    out: *mut *mut BatonSemaphore,
) -> BatonCode {
    const F: &str = "baton_semaphore_open";
    call(|| {
        if out.is_null() {
            return Err(invalid(F, "out is NULL"));
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: the caller's promises.
        let this = unsafe { locker_ref(F, locker) }?;
        // SAFETY: the caller's promise about `name`.
        let name = unsafe { text::name(name, name_len) }?;
        let semaphore = Box::new(BatonSemaphore {
            semaphore: shared::semaphore(&this.locker, name, permits)?,
        });
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(Box::into_raw(semaphore)) };
        Ok(())
    })
}

/// Frees a semaphore. Permits taken through it stay held until their guards are unlocked or
/// freed. NULL is ignored.
///
/// # Safety
/// `semaphore` is NULL or a live semaphore, not used again.
#[no_mangle]
pub unsafe extern "C" fn baton_semaphore_free(semaphore: *mut BatonSemaphore) {
    if semaphore.is_null() {
        return;
    }
    let _ = call(|| {
        // SAFETY: the caller gives up a live handle made by Box::into_raw.
        drop(unsafe { Box::from_raw(semaphore) });
        Ok(())
    });
}

/// How many holders the semaphore admits at once (0 for NULL).
///
/// # Safety
/// `semaphore` is NULL or a live semaphore.
#[no_mangle]
pub unsafe extern "C" fn baton_semaphore_permits(semaphore: *const BatonSemaphore) -> u32 {
    // SAFETY: the caller's promise.
    unsafe { semaphore.as_ref() }.map_or(0, |s| s.semaphore.permits())
}

/// Takes a permit, waiting up to the locker's wait timeout. On success `*out` is the permit, a
/// `baton_guard` (give it back with `baton_unlock` or `baton_guard_free`); on error NULL.
///
/// Errors: `BATON_TIMED_OUT` when every permit stayed taken for the whole wait;
/// `BATON_INVALID_OPTION` when the name is held with another count or as a shared or
/// exclusive lock, or for a NULL argument; the store's codes.
///
/// # Safety
/// `semaphore` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_semaphore_acquire(
    semaphore: *const BatonSemaphore,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe { acquire("baton_semaphore_acquire", semaphore, out, Attempt::Wait) }
}

/// One attempt at a permit: `BATON_BUSY` when all are taken. Otherwise as
/// [`baton_semaphore_acquire`].
///
/// # Safety
/// As [`baton_semaphore_acquire`].
#[no_mangle]
pub unsafe extern "C" fn baton_semaphore_try_acquire(
    semaphore: *const BatonSemaphore,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe { acquire("baton_semaphore_try_acquire", semaphore, out, Attempt::Once) }
}

/// [`baton_semaphore_acquire`] waiting up to `wait_ms` milliseconds instead of the locker's
/// timeout (0: one attempt, giving `BATON_TIMED_OUT` when all are taken; negative:
/// `BATON_INVALID_OPTION`).
///
/// # Safety
/// As [`baton_semaphore_acquire`].
#[no_mangle]
pub unsafe extern "C" fn baton_semaphore_acquire_for(
    semaphore: *const BatonSemaphore,
    wait_ms: i64,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    const F: &str = "baton_semaphore_acquire_for";
    let wait = match shared::millis(F, "wait_ms", wait_ms, true) {
        Ok(wait) => wait,
        // SAFETY: the caller's promise about `out`.
        Err(e) => return unsafe { refuse(out, e) },
    };
    // SAFETY: the caller's promises, passed on.
    unsafe { acquire(F, semaphore, out, Attempt::For(wait)) }
}

/// Takes every lock of `names` (`count` names; name `i` is `name_lens[i]` bytes at
/// `names[i]`, UTF-8, no NUL needed; `name_lens` NULL: each name is NUL-terminated), all or
/// nothing, waiting up to `wait_ms` milliseconds in all (0: one attempt at each, giving
/// `BATON_TIMED_OUT` if one is held; `INT64_MAX`: forever; negative: `BATON_INVALID_OPTION`).
/// The names are taken one at a time in one global order, whatever order they are given in
/// (`app`, `app.cache`, `app.cache.users`, `app.db`), so two callers never each hold what the
/// other waits for. On success `out[0]` to `out[count - 1]` are the held locks in the order
/// taken (`baton_guard_name` tells which is which), each a `baton_guard` unlocked with
/// `baton_unlock` and freed with `baton_guard_free` like any other. On an error every lock
/// already taken has been released before the call returns, and every `out[i]` is NULL.
///
/// Errors: `BATON_INVALID_OPTION` for no names (`count` 0), a name given twice, or (on a
/// paths locker) a path given with one of its ancestors, or a NULL `names` or `out`;
/// `BATON_INVALID_NAME` for any name that is NULL, not UTF-8 or breaks the rules (checked
/// before anything is taken); `BATON_TIMED_OUT` when the wait ran out; the store's codes.
///
/// # Safety
/// `locker` is NULL or live; `names` is NULL or `count` readable pointers, each NULL or
/// `name_lens[i]` readable bytes (a NUL-terminated string when `name_lens` is NULL);
/// `name_lens` is NULL or `count` readable lengths; `out` is NULL or `count` writable pointers.
#[no_mangle]
pub unsafe extern "C" fn baton_lock_all(
    locker: *const BatonLocker,
    names: *const *const c_char,
    name_lens: *const usize,
    count: usize,
    wait_ms: i64,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        lock_all(
            "baton_lock_all",
            locker,
            names,
            name_lens,
            count,
            None,
            wait_ms,
            out,
        )
    }
}

/// [`baton_lock_all`] as a reader: every lock shared (beside other readers, never beside a
/// writer). Needs `"bakery"` or `"column-prefix"`, as [`baton_lock_shared`] does.
///
/// # Safety
/// As [`baton_lock_all`].
#[no_mangle]
pub unsafe extern "C" fn baton_lock_all_shared(
    locker: *const BatonLocker,
    names: *const *const c_char,
    name_lens: *const usize,
    count: usize,
    wait_ms: i64,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    let (f, shared) = ("baton_lock_all_shared", Some(Mode::Shared));
    // SAFETY: the caller's promises, passed on.
    unsafe { lock_all(f, locker, names, name_lens, count, shared, wait_ms, out) }
}

/// # Safety
/// As [`baton_lock_all`].
#[allow(clippy::too_many_arguments)] // the C function's own, plus its name and mode
unsafe fn lock_all(
    function: &str,
    locker: *const BatonLocker,
    names: *const *const c_char,
    name_lens: *const usize,
    count: usize,
    mode: Option<Mode>,
    wait_ms: i64,
    out: *mut *mut BatonGuard,
) -> BatonCode {
    call(|| {
        if out.is_null() {
            return Err(invalid(function, "out is NULL"));
        }
        // Arrays of `count` pointers or lengths must fit in memory at all.
        if count > isize::MAX as usize / std::mem::size_of::<usize>() {
            return Err(invalid(function, "count is larger than any array"));
        }
        // SAFETY: `out` is non-NULL with room for `count` pointers (the caller's promise).
        let out = unsafe { std::slice::from_raw_parts_mut(out, count) };
        out.fill(std::ptr::null_mut());
        let wait = shared::millis(function, "wait_ms", wait_ms, true)?;
        // SAFETY: the caller's promise.
        let this = unsafe { locker_ref(function, locker) }?;
        let names: &[*const c_char] = match (names.is_null(), count) {
            (_, 0) => &[],
            (true, _) => return Err(invalid(function, "names is NULL")),
            // SAFETY: non-NULL, `count` readable pointers (the caller's promise).
            (false, _) => unsafe { std::slice::from_raw_parts(names, count) },
        };
        let lens: Option<&[usize]> = match (name_lens.is_null(), count) {
            (true, _) | (_, 0) => None,
            // SAFETY: non-NULL, `count` readable lengths (the caller's promise).
            (false, _) => Some(unsafe { std::slice::from_raw_parts(name_lens, count) }),
        };
        let texts = names
            .iter()
            .enumerate()
            .map(|(i, &name)| match lens {
                // SAFETY: the caller's promise about `names[i]` and `name_lens[i]`.
                Some(lens) => unsafe { text::name(name, lens[i]) },
                // SAFETY: the caller's promise: NULL or NUL-terminated.
                None => unsafe { text::c_name(name) },
            })
            .collect::<Result<Vec<&str>, Error>>()?;
        let guards = shared::lock_all(&this.locker, &texts, mode, Attempt::For(wait))?;
        if guards.len() != out.len() {
            return Err(Error::internal(format!(
                "{function}: {} locks for {} names",
                guards.len(),
                out.len()
            )));
        }
        for (slot, guard) in out.iter_mut().zip(guards) {
            *slot = BatonGuard::boxed(guard);
        }
        Ok(())
    })
}

/// Fails with `e`, `*out` set to NULL as on every error.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn refuse(out: *mut *mut BatonGuard, e: Error) -> BatonCode {
    call(|| {
        if !out.is_null() {
            // SAFETY: non-NULL and writable.
            unsafe { out.write(std::ptr::null_mut()) };
        }
        Err(e)
    })
}

/// # Safety
/// As [`baton_semaphore_acquire`].
unsafe fn acquire(
    function: &str,
    semaphore: *const BatonSemaphore,
    out: *mut *mut BatonGuard,
    attempt: Attempt,
) -> BatonCode {
    call(|| {
        if out.is_null() {
            return Err(invalid(function, "out is NULL"));
        }
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(std::ptr::null_mut()) };
        // SAFETY: the caller's promise.
        let this: &BatonSemaphore =
            unsafe { semaphore.as_ref() }.ok_or_else(|| invalid(function, "semaphore is NULL"))?;
        let guard = shared::acquire(&this.semaphore, attempt)?;
        // SAFETY: `out` is non-NULL and writable.
        unsafe { out.write(BatonGuard::boxed(guard)) };
        Ok(())
    })
}

/// How a lock is held (`baton_guard_mode`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)] // C's names
pub enum BatonMode {
    /// The only holder (`baton_lock`, `baton_try_lock`, `baton_lock_for`).
    BATON_MODE_EXCLUSIVE = 0,
    /// One of any number of readers (`baton_lock_shared` and friends).
    BATON_MODE_SHARED = 1,
    /// One of a semaphore's permits (`baton_semaphore_acquire` and friends).
    BATON_MODE_COUNTED = 2,
}

/// `mode` as C sees it, and its permits (1 unless counted).
pub(crate) fn c_mode(mode: Mode) -> (BatonMode, u32) {
    match mode {
        Mode::Exclusive => (BatonMode::BATON_MODE_EXCLUSIVE, 1),
        Mode::Shared => (BatonMode::BATON_MODE_SHARED, 1),
        Mode::Counted(n) => (BatonMode::BATON_MODE_COUNTED, n),
    }
}
