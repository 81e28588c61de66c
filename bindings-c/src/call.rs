//! How every entry point runs: panics caught, errors turned into a code and a message kept
//! for [`baton_last_error`] on the calling thread.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use baton::{Error, ErrorKind};

use crate::codes::BatonCode;

thread_local! {
    /// The message of the last call on this thread that failed (empty before any).
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs `body`, returning [`BatonCode::BATON_OK`] or the error's code, with its message kept for
/// [`baton_last_error`]. A panic becomes [`BatonCode::BATON_INTERNAL`]: it never unwinds into C.
pub(crate) fn call(body: impl FnOnce() -> Result<(), Error>) -> BatonCode {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| String::from("a panic without a message"));
        Err(Error::internal(format!("baton panicked: {what}")))
    });
    match outcome {
        Ok(()) => BatonCode::BATON_OK,
        Err(e) => {
            let code = BatonCode::from(e.kind());
            remember(&e.to_string());
            code
        }
    }
}

/// How a call that copies a value into the caller's buffer ended, when it did not fail.
pub(crate) enum Copied {
    /// The value (or none) was copied.
    Done,
    /// The buffer of `given` bytes is smaller than the value's `needed`: nothing was copied.
    TooSmall { needed: usize, given: usize },
}

/// [`call`] for a body that copies a value out: [`Copied::TooSmall`] is C's own
/// [`BatonCode::BATON_BUFFER_TOO_SMALL`], with a message naming both lengths.
pub(crate) fn call_copy(function: &str, body: impl FnOnce() -> Result<Copied, Error>) -> BatonCode {
    let mut copied = Copied::Done;
    let code = call(|| {
        copied = body()?;
        Ok(())
    });
    match copied {
        Copied::TooSmall { needed, given } if code == BatonCode::BATON_OK => {
            remember(&format!(
                "{function}: the value takes {needed} bytes but the buffer has {given}; nothing was copied"
            ));
            BatonCode::BATON_BUFFER_TOO_SMALL
        }
        _ => code,
    }
}

/// Keeps `message` as this thread's last error (NULs, which C cannot show, become spaces).
fn remember(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST.with(|last| *last.borrow_mut() = text);
}

/// An [`ErrorKind::InvalidOption`] error for a bad argument of `function`.
pub(crate) fn invalid(function: &str, why: &str) -> Error {
    Error::new(ErrorKind::InvalidOption, format!("{function}: {why}"))
}

/// The message of the last call on this thread that returned an error (an empty string if
/// none did). The pointer stays valid until the next baton call on this thread that fails or
/// calls [`baton_clear_error`]; baton owns it: never free it.
#[no_mangle]
pub extern "C" fn baton_last_error() -> *const c_char {
    LAST.with(|last| last.borrow().as_ptr())
}

/// Forgets this thread's last error message.
#[no_mangle]
pub extern "C" fn baton_clear_error() {
    LAST.with(|last| *last.borrow_mut() = CString::default());
}
