//! The error codes of the C API: the kernel's stable codes, one table for C and C++.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use baton::ErrorKind;

/// What a function of the C API returns: 0 on success, otherwise the kind of the error, with
/// the kernel's stable code (the same numbers in every language baton speaks).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)] // C's names: BATON_OK, BATON_TIMED_OUT, …
pub enum BatonCode {
    /// Success.
    BATON_OK = 0,
    /// Waited the whole timeout without acquiring.
    BATON_TIMED_OUT = 1,
    /// A try-lock found the lock held.
    BATON_BUSY = 2,
    /// The lease ended while the holder still believed it held it.
    BATON_LOST = 3,
    /// Unlock or renew of a lock this handle does not (or no longer) hold.
    BATON_NOT_OWNER = 4,
    /// Column prefix found an expired lock column and was told to fail on it.
    BATON_STALE_LOCK = 5,
    /// A lock name broke a rule (NULL, empty, over 255 bytes, NUL inside, not UTF-8).
    BATON_INVALID_NAME = 6,
    /// An option or argument is out of range (a NULL handle, a bad URL, a negative duration).
    BATON_INVALID_OPTION = 7,
    /// The store could not be reached; nothing was applied.
    BATON_STORE_UNAVAILABLE = 8,
    /// The store refused (schema, permissions, a corrupt cell).
    BATON_STORE_ERROR = 9,
    /// A write may or may not have been applied and reading back could not settle it.
    BATON_AMBIGUOUS = 10,
    /// A wait was cancelled by its caller.
    BATON_CANCELLED = 11,
    /// A bug in baton (a panic caught at the boundary among them): please report it.
    BATON_INTERNAL = 12,
    /// baton could not start the runtime it runs on.
    BATON_RUNTIME_FAILED = 13,
    /// A call from where it cannot run.
    BATON_WRONG_CONTEXT = 14,
    /// An optimistic update named a version the object no longer has: another client wrote it
    /// first. Read it again and retry.
    BATON_VERSION_MISMATCH = 15,
    /// An update or removal of an object that does not exist (never inserted, or removed).
    BATON_OBJECT_NOT_FOUND = 16,
    /// An insert of an object that exists.
    BATON_ALREADY_EXISTS = 17,
    /// C only, not a kind of the kernel's (no other language has it): the caller's buffer is
    /// smaller than the object's value. Nothing was copied; the length out-parameter says how
    /// many bytes the value needs: call again with a buffer that large.
    BATON_BUFFER_TOO_SMALL = -1,
}

impl From<ErrorKind> for BatonCode {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::TimedOut => BatonCode::BATON_TIMED_OUT,
            ErrorKind::Busy => BatonCode::BATON_BUSY,
            ErrorKind::Lost => BatonCode::BATON_LOST,
            ErrorKind::NotOwner => BatonCode::BATON_NOT_OWNER,
            ErrorKind::StaleLock => BatonCode::BATON_STALE_LOCK,
            ErrorKind::InvalidName => BatonCode::BATON_INVALID_NAME,
            ErrorKind::InvalidOption => BatonCode::BATON_INVALID_OPTION,
            ErrorKind::StoreUnavailable => BatonCode::BATON_STORE_UNAVAILABLE,
            ErrorKind::StoreError => BatonCode::BATON_STORE_ERROR,
            ErrorKind::Ambiguous => BatonCode::BATON_AMBIGUOUS,
            ErrorKind::Cancelled => BatonCode::BATON_CANCELLED,
            ErrorKind::Internal => BatonCode::BATON_INTERNAL,
            ErrorKind::RuntimeFailed => BatonCode::BATON_RUNTIME_FAILED,
            ErrorKind::WrongContext => BatonCode::BATON_WRONG_CONTEXT,
            ErrorKind::VersionMismatch => BatonCode::BATON_VERSION_MISMATCH,
            ErrorKind::ObjectNotFound => BatonCode::BATON_OBJECT_NOT_FOUND,
            ErrorKind::AlreadyExists => BatonCode::BATON_ALREADY_EXISTS,
            // A kind added later: its code is stable, the C enum learns its name later.
            _ => BatonCode::BATON_INTERNAL,
        }
    }
}

/// The name of `code` (`"ok"`, `"timed_out"`, `"busy"`, …, as in every binding;
/// `"buffer_too_small"` for C's own `BATON_BUFFER_TOO_SMALL`), or `"unknown"`.
/// The string is static: never free it.
#[no_mangle]
pub extern "C" fn baton_code_name(code: i32) -> *const c_char {
    static NAMES: OnceLock<Vec<(i32, CString)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let mut names = vec![
            (0, CString::from(c"ok")),
            (
                BatonCode::BATON_BUFFER_TOO_SMALL as i32,
                CString::from(c"buffer_too_small"),
            ),
        ];
        for kind in ErrorKind::ALL {
            // Kind names are ASCII identifiers: no NUL inside; codes are small.
            if let (Ok(name), Ok(code)) = (CString::new(kind.as_str()), i32::try_from(kind.code()))
            {
                names.push((code, name));
            }
        }
        names
    });
    match names.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => name.as_ptr(),
        None => c"unknown".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    /// The C enum is the kernel's table: same codes, same names.
    #[test]
    fn codes_and_names_are_the_kernels() {
        for kind in ErrorKind::ALL {
            let code = BatonCode::from(kind);
            assert_eq!(code as u32, kind.code(), "{kind:?}");
            // SAFETY: baton_code_name returns a static NUL-terminated string.
            let name = unsafe { CStr::from_ptr(baton_code_name(code as i32)) };
            assert_eq!(name.to_str(), Ok(kind.as_str()));
        }
        // SAFETY: as above.
        let ok = unsafe { CStr::from_ptr(baton_code_name(0)) };
        assert_eq!(ok.to_str(), Ok("ok"));
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(baton_code_name(-3)) };
        assert_eq!(unknown.to_str(), Ok("unknown"));
        // SAFETY: as above.
        let small = unsafe { CStr::from_ptr(baton_code_name(-1)) };
        assert_eq!(small.to_str(), Ok("buffer_too_small"));
    }
}
