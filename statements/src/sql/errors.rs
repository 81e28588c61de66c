//! Driver errors as the kernel's [`Failure`]s, decided once for every host.
//!
//! The kernel retries [`Failure::Unavailable`] (the command was certainly not applied), settles
//! [`Failure::Timeout`] by reading back (it may have been), and stops at [`Failure::Rejected`]
//! (retrying will not help). So the mapping errs towards `Timeout` whenever a statement may have
//! reached the server, and calls `Unavailable` only what the database guarantees it rolled back.
//! A host describes its driver's error as a [`DriverError`] (what happened, in the database's
//! terms) and [`failure`] decides.

use alloc::format;
use alloc::string::String;

use baton_kernel::Failure;

use super::Dialect;

/// Where an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Getting a connection, or setting up the table: nothing of a command was sent.
    Connect,
    /// Running a command's statement: it may have reached the server.
    Statement,
}

/// What went wrong, as a driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverError<'a> {
    /// The database answered with an error: its SQLSTATE (SQLite: its result code, as
    /// decimal text) and, from MariaDB, its error number.
    Database {
        /// The SQLSTATE or SQLite result code, if the driver reported one.
        code: Option<&'a str>,
        /// MariaDB's error number (`None` elsewhere).
        number: Option<u16>,
    },
    /// No connection could be had: the pool timed out, was closed, or its worker died.
    NoConnection,
    /// The connection failed (I/O, TLS, a protocol error): a statement sent on it may or may
    /// not have been applied.
    Connection,
    /// The host gave up waiting for an answer (its client-side timeout, see
    /// [`no_answer_within`](crate::no_answer_within)): the statement may still be applied.
    ClientTimeout,
    /// Anything else (a value that does not decode, a configuration error).
    Other,
}

/// The failure `error` stands for; `message` is the text to report (see
/// [`describe_database`]); the host adds which store.
pub fn failure(error: DriverError<'_>, dialect: Dialect, phase: Phase, message: String) -> Failure {
    match error {
        DriverError::Database { code, number } => match database_class(dialect, code, number) {
            // Rolled back (a deadlock, a serialization failure): certainly not applied.
            Class::RolledBack => Failure::NotApplied(message),
            Class::Connection if phase == Phase::Connect => Failure::NotApplied(message),
            Class::Connection => Failure::Timeout(message),
            Class::Refused => Failure::Rejected(message),
        },
        // The statement never left: no connection could be had, or it failed before sending.
        DriverError::NoConnection => Failure::NotApplied(message),
        DriverError::Connection | DriverError::ClientTimeout => match phase {
            Phase::Connect => Failure::NotApplied(message),
            Phase::Statement => Failure::Timeout(message),
        },
        DriverError::Other => Failure::Rejected(message),
    }
}

/// A database error's text: its message with its SQLSTATE (or SQLite result code).
pub fn describe_database(dialect: Dialect, code: Option<&str>, message: &str) -> String {
    match code {
        Some(code) if dialect == Dialect::Sqlite => format!("{message} (sqlite error {code})"),
        // MariaDB says only "Access denied" for a wrong password, a user unknown from that host,
        // or a user that requires TLS reached without it.
        Some(code @ "28000") if dialect == Dialect::MySql => format!(
            "authentication failed: {message} (SQLSTATE {code}; a wrong password, or a user that requires TLS reached without it)"
        ),
        Some(code) => format!("{message} (SQLSTATE {code})"),
        None => String::from(message),
    }
}

enum Class {
    /// The database rolled the statement (or its transaction) back: retrying is safe.
    RolledBack,
    /// The connection broke: the statement may or may not have been applied.
    Connection,
    /// Anything else: missing table, permissions, bad data.
    Refused,
}

fn database_class(dialect: Dialect, code: Option<&str>, number: Option<u16>) -> Class {
    let code = code.unwrap_or_default();
    match dialect {
        Dialect::Sqlite => {
            // Primary result code: BUSY (5) and LOCKED (6) roll back the statement.
            match code.parse::<u32>().map(|c| c & 0xff) {
                Ok(5 | 6) => Class::RolledBack,
                _ => Class::Refused,
            }
        }
        Dialect::Postgres => match code {
            // serialization failure, deadlock, lock not available, statement timeout / cancel,
            // too many connections, shutting down, starting up.
            "40001" | "40P01" | "55P03" | "57014" | "53300" | "57P01" | "57P02" | "57P03" => {
                Class::RolledBack
            }
            c if c.starts_with("08") => Class::Connection,
            _ => Class::Refused,
        },
        Dialect::MySql => match number {
            // lock wait timeout (InnoDB rolls back the statement), deadlock (the transaction),
            // max_statement_time, too many connections, server shutting down.
            Some(1205 | 1213 | 1969 | 1040 | 1053) => Class::RolledBack,
            // lost connection, server gone
            Some(2006 | 2013) => Class::Connection,
            _ if code.starts_with("08") => Class::Connection,
            _ => Class::Refused,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(e: DriverError<'_>, d: Dialect, p: Phase) -> &'static str {
        match failure(e, d, p, String::new()) {
            Failure::Unavailable(_) => "unavailable",
            Failure::Timeout(_) => "timeout",
            Failure::Rejected(_) => "rejected",
            Failure::NotApplied(_) => "not applied",
            _ => "other",
        }
    }

    #[test]
    fn connection_errors_depend_on_the_phase() {
        let pg = Dialect::Postgres;
        assert_eq!(
            kind(DriverError::Connection, pg, Phase::Connect),
            "not applied"
        );
        assert_eq!(
            kind(DriverError::Connection, pg, Phase::Statement),
            "timeout"
        );
        // A statement the host gave up on may still be applied; a connection attempt had
        // nothing at stake.
        assert_eq!(
            kind(DriverError::ClientTimeout, pg, Phase::Statement),
            "timeout"
        );
        assert_eq!(
            kind(DriverError::ClientTimeout, pg, Phase::Connect),
            "not applied"
        );
        assert_eq!(
            kind(DriverError::NoConnection, Dialect::MySql, Phase::Statement),
            "not applied"
        );
        assert_eq!(
            kind(DriverError::Other, Dialect::Sqlite, Phase::Statement),
            "rejected"
        );
    }

    #[test]
    fn database_codes_classify_per_dialect() {
        let db = |code, number| DriverError::Database { code, number };
        let s = Phase::Statement;
        assert_eq!(
            kind(db(Some("40P01"), None), Dialect::Postgres, s),
            "not applied"
        );
        assert_eq!(
            kind(db(Some("08006"), None), Dialect::Postgres, s),
            "timeout"
        );
        assert_eq!(
            kind(db(Some("42P01"), None), Dialect::Postgres, s),
            "rejected"
        );
        // SQLITE_BUSY_SNAPSHOT (517) is BUSY in its primary code.
        assert_eq!(
            kind(db(Some("517"), None), Dialect::Sqlite, s),
            "not applied"
        );
        assert_eq!(kind(db(Some("1"), None), Dialect::Sqlite, s), "rejected");
        assert_eq!(
            kind(db(Some("HY000"), Some(1213)), Dialect::MySql, s),
            "not applied"
        );
        assert_eq!(
            kind(db(Some("HY000"), Some(2013)), Dialect::MySql, s),
            "timeout"
        );
        assert_eq!(
            kind(db(Some("42S02"), Some(1146)), Dialect::MySql, s),
            "rejected"
        );
        assert_eq!(
            describe_database(Dialect::Sqlite, Some("5"), "database is locked"),
            "database is locked (sqlite error 5)"
        );
    }
}
