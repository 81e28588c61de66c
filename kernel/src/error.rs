//! The one error taxonomy every store and every language binding shares.
//!
//! Each [`ErrorKind`] has a stable numeric [code](ErrorKind::code): the C binding returns it,
//! the C++, Python and JavaScript bindings carry it on their exception or error objects. Codes are
//! never reused or renumbered; new kinds get new codes.

use alloc::string::String;
use core::fmt;

/// What went wrong, independent of language and store.
///
/// The discriminant of each kind is its stable [code](ErrorKind::code) (`#[repr(u32)]`), so a C
/// enum can mirror it one to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u32)]
pub enum ErrorKind {
    /// Waited for the whole wait timeout (or exhausted the retry policy) without acquiring.
    TimedOut = 1,
    /// A try-once acquire found the lock held by someone else.
    Busy = 2,
    /// The lease ended (expired, or renewal failed) while the holder still believed it held it.
    Lost = 3,
    /// The caller asked to renew or release a lock it does not (or no longer) own.
    NotOwner = 4,
    /// Column prefix with `fail_on_stale_lock`: an expired lock column of another owner was found.
    StaleLock = 5,
    /// A lock name broke one of the naming rules (see [`LockName`](crate::LockName)).
    InvalidName = 6,
    /// An option (TTL, timeout, retry policy, table name, prefix...) is out of its range.
    InvalidOption = 7,
    /// The store could not be reached or could not reach enough replicas; nothing was applied.
    StoreUnavailable = 8,
    /// The store answered with an error that retrying will not fix (schema, permissions...).
    StoreError = 9,
    /// A command may or may not have been applied and reading back could not settle which.
    Ambiguous = 10,
    /// A wait was interrupted by its caller (a cancellation token, Ctrl-C, a signal) before it
    /// finished; the acquisition left nothing behind that its TTL would not remove.
    Cancelled = 11,
    /// A bug in baton (a state it must never reach), never a store's error: please report it.
    Internal = 12,
    /// baton could not start what it runs on (the blocking API's runtime: threads, timers).
    RuntimeFailed = 13,
    /// A call from a context it cannot run in: the blocking API from inside an async runtime,
    /// the async API outside one.
    WrongContext = 14,
    /// An optimistic update named a version the object no longer has: another client wrote it
    /// first (ScaleOut StateServer's `VersionMismatchException`). Read it again and retry.
    VersionMismatch = 15,
    /// The object does not exist (never inserted, or removed): an update or a locked write
    /// needs one (ScaleOut StateServer's `ObjectNotFoundException`).
    ObjectNotFound = 16,
    /// An insert found the object already there.
    AlreadyExists = 17,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 17] = [
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
        ErrorKind::Cancelled,
        ErrorKind::Internal,
        ErrorKind::RuntimeFailed,
        ErrorKind::WrongContext,
        ErrorKind::VersionMismatch,
        ErrorKind::ObjectNotFound,
        ErrorKind::AlreadyExists,
    ];

    /// The stable numeric code of this kind (never 0; 0 means success in the C API).
    pub const fn code(self) -> u32 {
        self as u32
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
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
            ErrorKind::RuntimeFailed => "runtime_failed",
            ErrorKind::WrongContext => "wrong_context",
            ErrorKind::VersionMismatch => "version_mismatch",
            ErrorKind::ObjectNotFound => "object_not_found",
            ErrorKind::AlreadyExists => "already_exists",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error: its [kind](ErrorKind), a message for people naming what was wrong, and, where
/// known, the lock, the store and the lock's holder as separate fields for programs (bindings
/// put them on their exception objects).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    lock: Option<String>,
    store: Option<String>,
    holder: Option<String>,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            lock: None,
            store: None,
            holder: None,
        }
    }

    /// A bug in baton ([`ErrorKind::Internal`]).
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, message)
    }

    /// This error, naming the lock it is about (the message is unchanged).
    #[must_use]
    pub fn with_lock(mut self, lock: impl Into<String>) -> Self {
        self.lock = Some(lock.into());
        self
    }

    /// This error, naming `lock` unless it names a lock already.
    #[must_use]
    pub fn about_lock(self, lock: &str) -> Self {
        if self.lock.is_some() {
            self
        } else {
            self.with_lock(lock)
        }
    }

    /// This error, naming the store it came from (the message is unchanged).
    #[must_use]
    pub fn with_store(mut self, store: impl Into<String>) -> Self {
        self.store = Some(store.into());
        self
    }

    /// This error, naming the lock's holder (the message is unchanged).
    #[must_use]
    pub fn with_holder(mut self, holder: impl Into<String>) -> Self {
        self.holder = Some(holder.into());
        self
    }

    /// The lock the error is about, where known.
    pub fn lock(&self) -> Option<&str> {
        self.lock.as_deref()
    }

    /// The store it came from (its description, passwords masked), where known.
    pub fn store(&self) -> Option<&str> {
        self.store.as_deref()
    }

    /// The lock's holder (an owner id), where known: a `Busy` or `TimedOut` acquisition, a lease
    /// taken over.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref()
    }

    /// This error as seen from the store described as `store`: the store is named in its
    /// [`store`](Error::store) field, and, for the errors that come from the store (unavailable,
    /// refused, ambiguous), in its message too.
    pub fn in_store(self, store: &str) -> Error {
        let e = match self.kind {
            ErrorKind::StoreUnavailable | ErrorKind::StoreError | ErrorKind::Ambiguous => {
                let mut with = Error::new(self.kind, alloc::format!("{} [{store}]", self.message));
                with.lock = self.lock;
                with.holder = self.holder;
                with
            }
            _ => self,
        };
        e.with_store(store)
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
        assert_eq!(codes, (1..=17).collect::<alloc::vec::Vec<u32>>());
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ErrorKind::from_code(0), None);
        assert_eq!(ErrorKind::from_code(18), None);
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
