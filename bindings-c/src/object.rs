//! Objects beside locks (seed 002, ScaleOut StateServer's model): `baton_get`,
//! `baton_insert`, `baton_update_optimistic` and `baton_remove` on a locker, and `baton_object`,
//! a held lock and its object (SOSS's `LockTicket`), from `baton_get_and_lock` or
//! `baton_insert_and_lock`. Values are bytes with a length, copied in at the call; values come
//! out into the caller's buffers (`BATON_BUFFER_TOO_SMALL` with the length needed when a buffer
//! is too small). Every decision is the `baton` crate's blocking API's.

use std::ffi::{c_char, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};

use baton::{BlockingObjectGuard, Error};

use crate::call::{call, call_copy, invalid, Copied};
use crate::codes::BatonCode;
use crate::locker::{locker_ref, BatonLocker};
use crate::shared::{self, Attempt};
use crate::text;

/// A held lock and its object, as last read or written (SOSS's `LockTicket`), from
/// `baton_get_and_lock`, `baton_try_get_and_lock`, `baton_get_and_lock_for` or
/// `baton_insert_and_lock`. Its writes apply only while it holds the lock, checked by the store
/// in the same step: after a forced release or the lease's end they give `BATON_LOST` and write
/// nothing. After `baton_object_unlock`, `baton_object_update_and_release` or
/// `baton_object_remove`, its locked calls give `BATON_NOT_OWNER`; its value and version stay
/// readable. Free it with `baton_object_free` (which releases a lock still held). Its functions
/// may be called from any thread.
pub struct BatonObject {
    object: Mutex<BlockingObjectGuard>,
}

impl BatonObject {
    fn boxed(object: BlockingObjectGuard) -> *mut BatonObject {
        Box::into_raw(Box::new(BatonObject {
            object: Mutex::new(object),
        }))
    }

    fn object(&self) -> MutexGuard<'_, BlockingObjectGuard> {
        self.object.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// # Safety
/// `object` is NULL or a live object.
unsafe fn object_ref<'a>(
    function: &str,
    object: *const BatonObject,
) -> Result<&'a BatonObject, Error> {
    // SAFETY: the caller's promise.
    unsafe { object.as_ref() }.ok_or_else(|| invalid(function, "object is NULL"))
}

/// Writes `value` to `out` when the caller asked for it (NULL: not wanted).
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, and the caller promises it is writable.
        unsafe { out.write(value) };
    }
}

/// Where a value is copied: the caller's buffer and the length out-parameter, checked before
/// anything is sent to the store.
struct Destination {
    buf: *mut c_void,
    buf_len: usize,
    value_len: *mut usize,
}

impl Destination {
    /// # Safety
    /// `buf` is NULL or `buf_len` writable bytes; `value_len` is NULL or writable.
    unsafe fn new(
        function: &str,
        buf: *mut c_void,
        buf_len: usize,
        value_len: *mut usize,
    ) -> Result<Destination, Error> {
        if value_len.is_null() {
            return Err(invalid(function, "value_len is NULL"));
        }
        if buf.is_null() && buf_len != 0 {
            return Err(invalid(function, "buf is NULL but buf_len is not 0"));
        }
        // SAFETY: non-NULL and writable.
        unsafe { value_len.write(0) };
        Ok(Destination {
            buf,
            buf_len,
            value_len,
        })
    }

    /// Copies `value` (none: nothing, length 0), or only reports its length when it does not fit.
    ///
    /// # Safety
    /// As [`Destination::new`]; `value` does not overlap the buffer.
    unsafe fn copy(&self, value: Option<&[u8]>) -> Copied {
        let value = value.unwrap_or_default();
        // SAFETY: checked non-NULL and writable by `new`.
        unsafe { self.value_len.write(value.len()) };
        if value.len() > self.buf_len {
            return Copied::TooSmall {
                needed: value.len(),
                given: self.buf_len,
            };
        }
        if !value.is_empty() {
            // SAFETY: `buf` is non-NULL (buf_len >= value.len() > 0) with `buf_len` writable
            // bytes, and the value is baton's own memory, not the caller's.
            unsafe {
                std::ptr::copy_nonoverlapping(value.as_ptr(), self.buf.cast::<u8>(), value.len())
            };
        }
        Copied::Done
    }
}

/// Reads object `name` (`name_len` bytes, as lock names are given) without looking at its lock
/// (SOSS's `get`): one read. On `BATON_OK`, `*found` says whether there is an object; if there
/// is, its value is in `buf` (`*value_len` bytes) and its version in `*version`; if not,
/// `*value_len` and `*version` are 0. When the value is longer than `buf_len`, nothing is
/// copied and the call returns `BATON_BUFFER_TOO_SMALL` with the length needed in `*value_len`
/// (and `*found`, `*version` set): call again with a buffer that large (a new read: the object
/// may have changed meanwhile). `buf` may be NULL when `buf_len` is 0 (asking for the length).
/// A value is never empty, so `*value_len` is 0 exactly when there is no object.
///
/// `version` and `found` may be NULL (not wanted); `value_len` may not (`BATON_INVALID_OPTION`,
/// before anything is sent).
///
/// Errors: `BATON_INVALID_NAME`; the store's codes (`BATON_STORE_UNAVAILABLE`, ...).
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes; `buf` is NULL or
/// `buf_len` writable bytes; `value_len`, `version` and `found` are NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // C's way: the outputs are out-parameters
pub unsafe extern "C" fn baton_get(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    buf: *mut c_void,
    buf_len: usize,
    value_len: *mut usize,
    version: *mut u64,
    found: *mut bool,
) -> BatonCode {
    const F: &str = "baton_get";
    call_copy(F, || {
        // SAFETY (each): the caller's promises.
        unsafe {
            put(version, 0);
            put(found, false);
        }
        let to = unsafe { Destination::new(F, buf, buf_len, value_len) }?;
        let this = unsafe { locker_ref(F, locker) }?;
        let name = unsafe { text::name(name, name_len) }?;
        let read = this.locker.get(name)?;
        // SAFETY (each): the caller's promises, checked above.
        unsafe {
            put(version, read.as_ref().map_or(0, |r| r.version));
            put(found, read.is_some());
            Ok(to.copy(read.as_ref().map(|r| r.value.as_slice())))
        }
    })
}

/// Inserts object `name` with `value` (`value_len` bytes; any bytes, NUL and non-UTF-8 ones
/// included) and sets `*version` (NULL: not wanted) to its version.
///
/// Errors: `BATON_ALREADY_EXISTS` when it exists; `BATON_BUSY` while someone holds its lock;
/// `BATON_INVALID_OPTION` for an empty value (NULL with 0 among them) or one larger than the
/// store takes (1 MiB; MariaDB 48 000 bytes): never truncated; `BATON_INVALID_NAME`; the
/// store's codes.
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes; `value` is NULL or
/// `value_len` readable bytes; `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_insert(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    value: *const c_void,
    value_len: usize,
    version: *mut u64,
) -> BatonCode {
    const F: &str = "baton_insert";
    call(|| {
        // SAFETY (each): the caller's promises.
        unsafe { put(version, 0) };
        let this = unsafe { locker_ref(F, locker) }?;
        let name = unsafe { text::name(name, name_len) }?;
        let value = unsafe { text::value(F, value, value_len) }?;
        let written = this.locker.insert(name, value)?;
        // SAFETY: the caller's promise.
        unsafe { put(version, written) };
        Ok(())
    })
}

/// Replaces object `name`'s value with `value` if it is still at `version` (as `baton_get`
/// gave it), and sets `*new_version` (NULL: not wanted) to the version written (SOSS's
/// `update_optimistic`). Nothing is written on an error.
///
/// Errors: `BATON_VERSION_MISMATCH` when someone wrote it since (read it again and retry);
/// `BATON_OBJECT_NOT_FOUND` when it is gone; `BATON_BUSY` while someone holds its lock; the
/// value's and name's errors as `baton_insert`; the store's codes.
///
/// # Safety
/// As [`baton_insert`]; `new_version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_update_optimistic(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    value: *const c_void,
    value_len: usize,
    version: u64,
    new_version: *mut u64,
) -> BatonCode {
    const F: &str = "baton_update_optimistic";
    call(|| {
        // SAFETY (each): the caller's promises.
        unsafe { put(new_version, 0) };
        let this = unsafe { locker_ref(F, locker) }?;
        let name = unsafe { text::name(name, name_len) }?;
        let value = unsafe { text::value(F, value, value_len) }?;
        let written = this.locker.update_optimistic(name, value, version)?;
        // SAFETY: the caller's promise.
        unsafe { put(new_version, written) };
        Ok(())
    })
}

/// Removes object `name` (its version is kept: an object inserted again goes on from it).
///
/// Errors: `BATON_OBJECT_NOT_FOUND` when there is none; `BATON_BUSY` while someone holds its
/// lock; `BATON_INVALID_NAME`; the store's codes.
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn baton_remove(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
) -> BatonCode {
    const F: &str = "baton_remove";
    call(|| {
        // SAFETY (each): the caller's promises.
        let this = unsafe { locker_ref(F, locker) }?;
        let name = unsafe { text::name(name, name_len) }?;
        this.locker.remove(name)
    })
}

/// Locks `name`, waiting as `baton_lock` does, and reads its object, atomically for every other
/// client (SOSS's `get_and_lock`): nobody else writes it until the lock is released. On
/// success `*out` is the held lock and its object (`baton_object_value`: none yet when
/// `exists` is false), which the caller frees with `baton_object_free`; on error NULL.
///
/// Errors: `BATON_TIMED_OUT` when the wait ran out; `BATON_INVALID_NAME`; the store's codes.
///
/// # Safety
/// `locker` is NULL or live; `name` is NULL or `name_len` readable bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn baton_get_and_lock(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonObject,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        take(
            "baton_get_and_lock",
            locker,
            name,
            name_len,
            out,
            Attempt::Wait,
        )
    }
}

/// One attempt at [`baton_get_and_lock`]: `BATON_BUSY` if the lock is held.
///
/// # Safety
/// As [`baton_get_and_lock`].
#[no_mangle]
pub unsafe extern "C" fn baton_try_get_and_lock(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonObject,
) -> BatonCode {
    // SAFETY: the caller's promises, passed on.
    unsafe {
        take(
            "baton_try_get_and_lock",
            locker,
            name,
            name_len,
            out,
            Attempt::Once,
        )
    }
}

/// [`baton_get_and_lock`] waiting up to `wait_ms` milliseconds instead of the locker's timeout
/// (0: one attempt, giving `BATON_TIMED_OUT` if held; negative: `BATON_INVALID_OPTION`).
///
/// # Safety
/// As [`baton_get_and_lock`].
#[no_mangle]
pub unsafe extern "C" fn baton_get_and_lock_for(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    wait_ms: i64,
    out: *mut *mut BatonObject,
) -> BatonCode {
    const F: &str = "baton_get_and_lock_for";
    let wait = match shared::millis(F, "wait_ms", wait_ms, true) {
        Ok(wait) => wait,
        Err(e) => {
            // SAFETY: the caller's promise about `out`.
            unsafe { put(out, std::ptr::null_mut()) };
            return call(|| Err(e));
        }
    };
    // SAFETY: the caller's promises, passed on.
    unsafe { take(F, locker, name, name_len, out, Attempt::For(wait)) }
}

/// Locks `name` (waiting as `baton_lock` does) and inserts its object with `value` (SOSS's
/// `insert_and_lock`); on success `*out` is the held lock and its object, as from
/// [`baton_get_and_lock`]; on error NULL.
///
/// Errors: `BATON_ALREADY_EXISTS` when the object exists (the lock is released again); the
/// value's errors as `baton_insert` (checked before locking); `BATON_TIMED_OUT`;
/// `BATON_INVALID_NAME`; the store's codes.
///
/// # Safety
/// As [`baton_get_and_lock`]; `value` is NULL or `value_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn baton_insert_and_lock(
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    value: *const c_void,
    value_len: usize,
    out: *mut *mut BatonObject,
) -> BatonCode {
    const F: &str = "baton_insert_and_lock";
    call(|| {
        if out.is_null() {
            return Err(invalid(F, "out is NULL"));
        }
        // SAFETY (each): the caller's promises; `out` is non-NULL and writable.
        unsafe { out.write(std::ptr::null_mut()) };
        let this = unsafe { locker_ref(F, locker) }?;
        let name = unsafe { text::name(name, name_len) }?;
        let value = unsafe { text::value(F, value, value_len) }?;
        let object = this.locker.insert_and_lock(name, value)?;
        unsafe { out.write(BatonObject::boxed(object)) };
        Ok(())
    })
}

/// # Safety
/// As [`baton_get_and_lock`].
unsafe fn take(
    function: &str,
    locker: *const BatonLocker,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut BatonObject,
    attempt: Attempt,
) -> BatonCode {
    call(|| {
        if out.is_null() {
            return Err(invalid(function, "out is NULL"));
        }
        // SAFETY (each): the caller's promises; `out` is non-NULL and writable.
        unsafe { out.write(std::ptr::null_mut()) };
        let this = unsafe { locker_ref(function, locker) }?;
        let name = unsafe { text::name(name, name_len) }?;
        let object = shared::get_and_lock(&this.locker, name, attempt)?;
        unsafe { out.write(BatonObject::boxed(object)) };
        Ok(())
    })
}

/// Copies the object's value, as last read or written, into `buf` (`*value_len` bytes) and sets
/// `*exists` (NULL: not wanted): false, with `*value_len` 0, when there is no object. No round
/// trip. When the value is longer than `buf_len`, nothing is copied and the call returns
/// `BATON_BUFFER_TOO_SMALL` with the length needed in `*value_len`: call again with a buffer
/// that large. `buf` may be NULL when `buf_len` is 0 (asking for the length). Readable after
/// the lock was released too.
///
/// # Safety
/// `object` is NULL or live; `buf` is NULL or `buf_len` writable bytes; `value_len` and
/// `exists` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_object_value(
    object: *const BatonObject,
    buf: *mut c_void,
    buf_len: usize,
    value_len: *mut usize,
    exists: *mut bool,
) -> BatonCode {
    const F: &str = "baton_object_value";
    call_copy(F, || {
        // SAFETY (each): the caller's promises.
        unsafe { put(exists, false) };
        let to = unsafe { Destination::new(F, buf, buf_len, value_len) }?;
        let this = unsafe { object_ref(F, object) }?;
        let object = this.object();
        unsafe {
            put(exists, object.value().is_some());
            Ok(to.copy(object.value()))
        }
    })
}

/// The object's version as last read or written (0: never written; 0 for NULL).
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_version(object: *const BatonObject) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { object.as_ref() }.map_or(0, |o| o.object().version())
}

/// The lock's fencing token (0 for NULL).
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_token(object: *const BatonObject) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { object.as_ref() }.map_or(0, |o| o.object().guard().token())
}

/// Whether the lock is held: false once released, lost, or past its deadline (and for NULL).
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_held(object: *const BatonObject) -> bool {
    // SAFETY: the caller's promise.
    unsafe { object.as_ref() }.is_some_and(|o| o.object().guard().is_held())
}

/// Runs a locked call on `object`.
///
/// # Safety
/// `object` is NULL or live.
unsafe fn locked(
    function: &str,
    object: *mut BatonObject,
    body: impl FnOnce(&mut BlockingObjectGuard) -> Result<(), Error>,
) -> BatonCode {
    call(|| {
        // SAFETY: the caller's promise.
        let this = unsafe { object_ref(function, object) }?;
        body(&mut this.object())
    })
}

/// Reads the object again and renews the lock (SOSS's `get_locked`); `baton_object_value`
/// then gives what it read.
///
/// Errors: `BATON_LOST` when the lease had ended; `BATON_NOT_OWNER` after a release; the
/// store's codes.
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_get_locked(object: *mut BatonObject) -> BatonCode {
    // SAFETY: the caller's promise, passed on.
    unsafe {
        locked("baton_object_get_locked", object, |o| {
            o.get_locked().map(drop)
        })
    }
}

/// Writes `value` and keeps the lock, renewed (SOSS's `update_locked_and_retain`); sets
/// `*version` (NULL: not wanted) to the new version. The store applies it only while this
/// object's lock is held.
///
/// Errors: `BATON_OBJECT_NOT_FOUND` when there is no object (insert it with
/// `baton_object_insert`); `BATON_LOST` when the lease had ended or the lock was broken (nothing
/// written); `BATON_NOT_OWNER` after a release; the value's errors as `baton_insert`; the
/// store's codes.
///
/// # Safety
/// `object` is NULL or live; `value` is NULL or `value_len` readable bytes; `version` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn baton_object_update_and_retain(
    object: *mut BatonObject,
    value: *const c_void,
    value_len: usize,
    version: *mut u64,
) -> BatonCode {
    const F: &str = "baton_object_update_and_retain";
    // SAFETY (each): the caller's promises, passed on.
    unsafe { put(version, 0) };
    unsafe {
        locked(F, object, |o| {
            let written = o.update_locked_and_retain(text::value(F, value, value_len)?)?;
            put(version, written);
            Ok(())
        })
    }
}

/// Writes `value` and releases the lock (SOSS's `update_locked_and_release`); sets `*version`
/// (NULL: not wanted) to the new version. On an error the lock stays held (free the object to
/// release it).
///
/// Errors: as [`baton_object_update_and_retain`].
///
/// # Safety
/// As [`baton_object_update_and_retain`].
#[no_mangle]
pub unsafe extern "C" fn baton_object_update_and_release(
    object: *mut BatonObject,
    value: *const c_void,
    value_len: usize,
    version: *mut u64,
) -> BatonCode {
    const F: &str = "baton_object_update_and_release";
    // SAFETY (each): the caller's promises, passed on.
    unsafe { put(version, 0) };
    unsafe {
        locked(F, object, |o| {
            let written = o.update_locked_and_release(text::value(F, value, value_len)?)?;
            put(version, written);
            Ok(())
        })
    }
}

/// Inserts the object, which must not exist, keeping the lock; sets `*version` (NULL: not
/// wanted) to its version.
///
/// Errors: `BATON_ALREADY_EXISTS` when it exists; otherwise as
/// [`baton_object_update_and_retain`].
///
/// # Safety
/// As [`baton_object_update_and_retain`].
#[no_mangle]
pub unsafe extern "C" fn baton_object_insert(
    object: *mut BatonObject,
    value: *const c_void,
    value_len: usize,
    version: *mut u64,
) -> BatonCode {
    const F: &str = "baton_object_insert";
    // SAFETY (each): the caller's promises, passed on.
    unsafe { put(version, 0) };
    unsafe {
        locked(F, object, |o| {
            let written = o.insert_locked(text::value(F, value, value_len)?)?;
            put(version, written);
            Ok(())
        })
    }
}

/// Removes the object and releases the lock (SOSS's `remove_locked`).
///
/// Errors: `BATON_OBJECT_NOT_FOUND` when there is none (the lock stays held); `BATON_LOST`;
/// `BATON_NOT_OWNER` after a release; the store's codes.
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_remove(object: *mut BatonObject) -> BatonCode {
    // SAFETY: the caller's promise, passed on.
    unsafe {
        locked(
            "baton_object_remove",
            object,
            BlockingObjectGuard::remove_locked,
        )
    }
}

/// Renews the lock (SOSS's `lock_refresh`).
///
/// Errors: `BATON_LOST` when the lease had ended; `BATON_NOT_OWNER` after a release; the
/// store's codes.
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_refresh(object: *mut BatonObject) -> BatonCode {
    // SAFETY: the caller's promise, passed on.
    unsafe { locked("baton_object_refresh", object, |o| o.lock_refresh()) }
}

/// Releases the lock without writing (SOSS's `unlock`). `BATON_OK` means the lease was valid
/// until the release was sent; `BATON_LOST` that it was not. A second call gives
/// `BATON_NOT_OWNER`. The handle stays allocated: free it with [`baton_object_free`].
///
/// # Safety
/// `object` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn baton_object_unlock(object: *mut BatonObject) -> BatonCode {
    // SAFETY: the caller's promise, passed on.
    unsafe { locked("baton_object_unlock", object, BlockingObjectGuard::unlock) }
}

/// Releases the lock if still held, waiting for the store to confirm (errors ignored: a release
/// that could not be confirmed expires with its TTL), and frees the handle: the RAII of C. In a
/// forked child it only frees memory. NULL is ignored.
///
/// # Safety
/// `object` is NULL or a live object, not used again.
#[no_mangle]
pub unsafe extern "C" fn baton_object_free(object: *mut BatonObject) {
    if object.is_null() {
        return;
    }
    let _ = call(|| {
        // SAFETY: the caller gives up a live handle made by Box::into_raw; dropping the guard
        // releases its lock (BlockingObjectGuard's Drop).
        drop(unsafe { Box::from_raw(object) });
        Ok(())
    });
}
