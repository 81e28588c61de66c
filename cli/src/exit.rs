//! Exit statuses, and the error type that carries one.
//!
//! baton's own outcomes use the sysexits(3) codes, so a script or a cron wrapper can tell "the
//! lock was busy, try later" (75) from "the job failed" (whatever the job returned). `baton run`
//! otherwise exits with its command's status; a job killed by a signal gives 128 + the signal
//! number, as shells report it.

use std::fmt;

use baton::{Error, ErrorKind};

/// Success.
pub const OK: u8 = 0;
/// EX_USAGE: bad arguments (unknown strategy, bad duration, bad store URL, bad lock name).
pub const USAGE: u8 = 64;
/// EX_DATAERR: `baton put`: the object is not at `--version` (another client wrote it since),
/// or, without `--version`, it already exists.
pub const CONFLICT: u8 = 65;
/// EX_NOINPUT: `baton get`, `put --version`, `remove`: there is no such object.
pub const NO_OBJECT: u8 = 66;
/// EX_UNAVAILABLE: the lock store could not be opened, reached or used, or it was too slow to
/// leave `--min-lease` of a lease before `baton run`'s command (which was then not run).
pub const UNAVAILABLE: u8 = 69;
/// EX_SOFTWARE: the lease was lost while the command ran; the command was stopped.
pub const LOST: u8 = 70;
/// EX_OSERR: the operating system refused something baton needs (a process, a signal handler).
pub const OS_ERROR: u8 = 71;
/// EX_CANTCREAT: the default store's directory could not be created.
pub const CANT_CREATE: u8 = 73;
/// EX_TEMPFAIL: the lock is held by someone else (`--no-wait`), or the wait timed out.
pub const BUSY: u8 = 75;
/// As shells do: the command was found but could not be executed.
pub const CANNOT_EXECUTE: u8 = 126;
/// As shells do: the command was not found.
pub const NOT_FOUND: u8 = 127;

/// The exit statuses, as shown in `--help` (docs/cli.md has the same table).
pub const HELP_TABLE: &str = "\
Exit status:
  N      baton run: the command's own exit status (128+N if it died of signal N)
  0      success (other subcommands)
  64     usage: bad argument, duration, strategy, lock name or store URL
  65     baton put: the object changed since --version, or (without it) already exists
  66     baton get/put --version/remove: no such object
  69     store unavailable: could not open, reach or use the lock store, or it granted the
         lock too late to leave --min-lease of the lease (the command was not run)
  70     lease lost while the command ran: it was sent SIGTERM, then SIGKILL
  71     operating system error (could not start a process or handle signals)
  73     could not create the default store's directory
  75     lock busy (--no-wait) or the wait timed out, or the object is locked: try again later
  126    the command could not be executed
  127    the command was not found";

/// A failure of the `baton` command: what went wrong, what to do about it, and the status to
/// exit with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The exit status.
    pub status: u8,
    /// The problem, in one line.
    pub message: String,
    /// What the user can do about it.
    pub hint: Option<String>,
}

impl CliError {
    /// An error exiting with `status`.
    pub fn new(status: u8, message: impl Into<String>) -> Self {
        CliError {
            status,
            message: message.into(),
            hint: None,
        }
    }

    /// A usage error (64).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError::new(USAGE, message)
    }

    /// The same error with a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// An error from the baton library, with `context` saying what baton was doing.
    pub fn from_baton(context: &str, e: &Error) -> Self {
        let status = status_of(e.kind());
        let message = format!("{context}: {}", e.message());
        let error = CliError::new(status, message);
        match e.kind() {
            ErrorKind::StoreUnavailable | ErrorKind::StoreError | ErrorKind::Ambiguous => error.hint(
                "check that the lock store is reachable and writable, or choose another with --store URL (or BATON_STORE)",
            ),
            ErrorKind::InvalidName => error.hint(
                "a lock name is 1 to 255 bytes of text without NUL; spaces and slashes are fine",
            ),
            _ => error,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// The exit status for an error kind of the library.
pub fn status_of(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::StaleLock | ErrorKind::Cancelled => BUSY,
        ErrorKind::InvalidName | ErrorKind::InvalidOption => USAGE,
        ErrorKind::StoreUnavailable | ErrorKind::StoreError | ErrorKind::Ambiguous => UNAVAILABLE,
        ErrorKind::Lost | ErrorKind::NotOwner => LOST,
        ErrorKind::VersionMismatch | ErrorKind::AlreadyExists => CONFLICT,
        ErrorKind::ObjectNotFound => NO_OBJECT,
        _ => LOST,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_documented_statuses() {
        assert_eq!(status_of(ErrorKind::Busy), 75);
        assert_eq!(status_of(ErrorKind::TimedOut), 75);
        assert_eq!(status_of(ErrorKind::InvalidOption), 64);
        assert_eq!(status_of(ErrorKind::StoreUnavailable), 69);
        assert_eq!(status_of(ErrorKind::Lost), 70);
        for kind in ErrorKind::ALL {
            assert!(HELP_TABLE.contains(&format!("  {}  ", status_of(kind))));
        }
    }

    #[test]
    fn errors_show_their_hint() {
        let e = CliError::from_baton(
            "cannot open the lock store",
            &Error::new(ErrorKind::StoreUnavailable, "connection refused"),
        );
        assert_eq!(e.status, UNAVAILABLE);
        let shown = e.to_string();
        assert!(shown.starts_with("cannot open the lock store: connection refused"));
        assert!(shown.contains("hint: check that the lock store"), "{shown}");
    }
}
