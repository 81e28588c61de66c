//! Text from C: lock names as bytes with a length (so a NUL inside is seen and refused, not
//! silently cut), and NUL-terminated option strings.

use std::ffi::{c_char, CStr};

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
