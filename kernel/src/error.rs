//! The one error taxonomy every store and every language binding shares.
//!
//! Each [`ErrorKind`] has a stable numeric [code](ErrorKind::code): the C binding returns it,
//! the C++, Python and JavaScript bindings carry it on their exception or error objects. Codes are
//! never reused or renumbered; new kinds get new codes.

use alloc::string::String;
use core::fmt;

/// What went wrong, independent of language and store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Waited for the whole wait timeout (or exhausted the retry policy) without acquiring.
    TimedOut,
    /// A try-once acquire found the lock held by someone else.
    Busy,
    /// The lease ended (expired, or renewal failed) while the holder still believed it held it.
    Lost,
    /// The caller asked to renew or release a lock it does not (or no longer) own.
    NotOwner,
    /// Column prefix with `fail_on_stale_lock`: an expired lock column of another owner was found.
    StaleLock,
    /// A lock name broke one of the naming rules (see [`LockName`](crate::LockName)).
    InvalidName,
    /// An option (TTL, timeout, retry policy, table name, prefix...) is out of its range.
    InvalidOption,
    /// The store could not be reached or could not reach enough replicas; nothing was applied.
    StoreUnavailable,
    /// The store answered with an error that retrying will not fix (schema, permissions...).
    StoreError,
    /// A command may or may not have been applied and reading back could not settle which.
    Ambiguous,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::TimedOut,
        ErrorKind::Busy,
        ErrorKind::Lost,
        ErrorKind::NotOwner,
        ErrorKind::StaleLock,
        ErrorKind::InvalidName,
        ErrorKind::InvalidOption,
        ErrorKind::StoreUnavailable,
        ErrorKind::StoreError,
        ErrorKind::Ambiguous,
    ];

    /// The stable numeric code of this kind (never 0; 0 means success in the C API).
    pub const fn code(self) -> u32 {
        match self {
            ErrorKind::TimedOut => 1,
            ErrorKind::Busy => 2,
            ErrorKind::Lost => 3,
            ErrorKind::NotOwner => 4,
            ErrorKind::StaleLock => 5,
            ErrorKind::InvalidName => 6,
            ErrorKind::InvalidOption => 7,
            ErrorKind::StoreUnavailable => 8,
            ErrorKind::StoreError => 9,
            ErrorKind::Ambiguous => 10,
        }
    }

    /// The kind with this code, if any.
    pub fn from_code(code: u32) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// A stable snake_case identifier (`timed_out`, `busy`...), used in JSON output and bindings.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::TimedOut => "timed_out",
            ErrorKind::Busy => "busy",
            ErrorKind::Lost => "lost",
            ErrorKind::NotOwner => "not_owner",
            ErrorKind::StaleLock => "stale_lock",
            ErrorKind::InvalidName => "invalid_name",
            ErrorKind::InvalidOption => "invalid_option",
            ErrorKind::StoreUnavailable => "store_unavailable",
            ErrorKind::StoreError => "store_error",
            ErrorKind::Ambiguous => "ambiguous",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error: its [kind](ErrorKind) and a message for people naming what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stable numeric code of [`Error::kind`].
    pub fn code(&self) -> u32 {
        self.kind.code()
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn invalid_option(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidOption, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (baton error {}: {})",
            self.message,
            self.kind.code(),
            self.kind
        )
    }
}

impl core::error::Error for Error {}

/// An error for a reply of the wrong shape (a store bug).
pub(crate) fn unexpected(command_kind: &str, reply: &crate::model::Reply) -> Error {
    Error::new(
        ErrorKind::StoreError,
        alloc::format!("store answered {reply:?} to a {command_kind}"),
    )
}

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn codes_are_stable_unique_and_round_trip() {
        let codes: alloc::vec::Vec<u32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, (1..=10).collect::<alloc::vec::Vec<u32>>());
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ErrorKind::from_code(0), None);
        assert_eq!(ErrorKind::from_code(11), None);
    }

    #[test]
    fn display_names_kind_and_code() {
        let e = Error::new(ErrorKind::Busy, "lock \"a\" is held by h:1:00");
        assert_eq!(
            e.to_string(),
            "lock \"a\" is held by h:1:00 (baton error 2: busy)"
        );
    }
}
