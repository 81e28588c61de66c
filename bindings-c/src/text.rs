//! Text from C: lock names as bytes with a length (so a NUL inside is seen and refused, not
//! silently cut), NUL-terminated option strings, and objects' values (bytes with a length).

use std::ffi::{c_char, c_void, CStr};

use baton::{Error, ErrorKind};

use crate::call::invalid;

/// The lock name at `name` (`len` bytes, NUL not needed). A NULL pointer or bytes that are not
/// UTF-8 are [`ErrorKind::InvalidName`]; every other rule (empty, too long, NUL inside) is the
/// kernel's, checked when the name is used.
///
/// # Safety
/// `name` is NULL or points to `len` readable bytes that stay unchanged during the call.
pub(crate) unsafe fn name<'a>(name: *const c_char, len: usize) -> Result<&'a str, Error> {
    if name.is_null() {
        return Err(Error::new(ErrorKind::InvalidName, "the lock name is NULL"));
    }
    // SAFETY: the caller promises `len` readable bytes at a non-NULL `name`.
    let bytes = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::InvalidName,
            format!("a lock name must be UTF-8; byte {} is not", e.valid_up_to()),
        )
    })
}

/// The NUL-terminated lock name at `name`: NULL or bytes that are not UTF-8 are
/// [`ErrorKind::InvalidName`], as in [`name`].
///
/// # Safety
/// `name` is NULL or points to a NUL-terminated string that stays unchanged during the call.
pub(crate) unsafe fn c_name<'a>(name: *const c_char) -> Result<&'a str, Error> {
    if name.is_null() {
        return Err(Error::new(ErrorKind::InvalidName, "the lock name is NULL"));
    }
    // SAFETY: the caller promises a NUL-terminated string at a non-NULL `name`.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    // SAFETY: `bytes` is readable, `bytes.len()` long, for as long as the caller's string.
    unsafe { self::name(bytes.as_ptr().cast::<c_char>(), bytes.len()) }
}

/// The NUL-terminated string at `text`, or `None` for NULL; not UTF-8 is
/// [`ErrorKind::InvalidOption`] naming `what`.
///
/// # Safety
/// `text` is NULL or points to a NUL-terminated string that stays unchanged during the call.
pub(crate) unsafe fn option<'a>(
    function: &str,
    what: &str,
    text: *const c_char,
) -> Result<Option<&'a str>, Error> {
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller promises a NUL-terminated string at a non-NULL `text`.
    let text = unsafe { CStr::from_ptr(text) };
    text.to_str()
        .map(Some)
        .map_err(|_| invalid(function, &format!("{what} is not UTF-8")))
}

/// An object's value at `value` (`len` bytes, any bytes: NUL and non-UTF-8 ones are data). NULL
/// with a length of 0 is the empty value, which the kernel refuses, as it refuses one larger
/// than the store takes; NULL with a length is [`ErrorKind::InvalidOption`].
///
/// # Safety
/// `value` is NULL or points to `len` readable bytes that stay unchanged during the call.
pub(crate) unsafe fn value<'a>(
    function: &str,
    value: *const c_void,
    len: usize,
) -> Result<&'a [u8], Error> {
    if value.is_null() {
        return match len {
            0 => Ok(&[]),
            _ => Err(invalid(function, "value is NULL but value_len is not 0")),
        };
    }
    if isize::try_from(len).is_err() {
        return Err(invalid(function, "value_len is larger than any object"));
    }
    // SAFETY: the caller promises `len` readable bytes at a non-NULL `value`; `len` fits isize.
    Ok(unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) })
}
