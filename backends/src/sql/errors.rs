//! sqlx errors as the kernel's [`Failure`]s.
//!
//! The kernel retries [`Failure::Unavailable`] (the command was certainly not applied), settles
//! [`Failure::Timeout`] by reading back (it may have been), and stops at [`Failure::Rejected`]
//! (retrying will not help). So the mapping errs towards `Timeout` whenever a statement may have
//! reached the server, and calls `Unavailable` only what the database guarantees it rolled back.

use baton_kernel::Failure;

use super::dialect::Dialect;

/// Where an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Getting a connection: nothing was sent.
    Connect,
    /// Running a statement: it may have reached the server.
    Statement,
}

/// The failure `error` stands for. The message is the database's; the locker adds which store.
pub(crate) fn failure(error: &sqlx::Error, dialect: Dialect, phase: Phase) -> Failure {
    let message = describe(error, dialect);
    match error {
        sqlx::Error::Database(db) => match database_class(&**db, dialect) {
            Class::RolledBack => Failure::Unavailable(message),
            Class::Connection if phase == Phase::Connect => Failure::Unavailable(message),
            Class::Connection => Failure::Timeout(message),
            Class::Refused => Failure::Rejected(message),
        },
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
            Failure::Unavailable(message)
        }
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => match phase {
            Phase::Connect => Failure::Unavailable(message),
            Phase::Statement => Failure::Timeout(message),
        },
        _ => Failure::Rejected(message),
    }
}

/// A short text for `error`: the database's message with its SQLSTATE (or SQLite result code).
pub(crate) fn describe(error: &sqlx::Error, dialect: Dialect) -> String {
    match error {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) if dialect == Dialect::Sqlite => {
                format!("{} (sqlite error {code})", db.message())
            }
            Some(code) => format!("{} (SQLSTATE {code})", db.message()),
            None => db.message().to_owned(),
        },
        sqlx::Error::PoolTimedOut => String::from(
            "no connection became available in time (the server is unreachable or slow, or every pooled connection is busy)",
        ),
        other => other.to_string(),
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

fn database_class(db: &dyn sqlx::error::DatabaseError, dialect: Dialect) -> Class {
    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
    match dialect {
        Dialect::Sqlite => {
            // Primary result code: BUSY (5) and LOCKED (6) roll back the statement.
            match code.parse::<u32>().map(|c| c & 0xff) {
                Ok(5 | 6) => Class::RolledBack,
                _ => Class::Refused,
            }
        }
        Dialect::Postgres => match code.as_str() {
            // serialization failure, deadlock, lock not available, statement timeout / cancel,
            // too many connections, shutting down, starting up.
            "40001" | "40P01" | "55P03" | "57014" | "53300" | "57P01" | "57P02" | "57P03" => {
                Class::RolledBack
            }
            c if c.starts_with("08") => Class::Connection,
            _ => Class::Refused,
        },
        Dialect::MySql => match mysql_number(db) {
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

#[cfg(feature = "mysql")]
fn mysql_number(db: &dyn sqlx::error::DatabaseError) -> Option<u16> {
    db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .map(|e| e.number())
}

#[cfg(not(feature = "mysql"))]
fn mysql_number(_db: &dyn sqlx::error::DatabaseError) -> Option<u16> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_errors_depend_on_the_phase() {
        let io = || sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(matches!(
            failure(&io(), Dialect::Postgres, Phase::Connect),
            Failure::Unavailable(_)
        ));
        assert!(matches!(
            failure(&io(), Dialect::Postgres, Phase::Statement),
            Failure::Timeout(_)
        ));
        assert!(matches!(
            failure(&sqlx::Error::PoolTimedOut, Dialect::MySql, Phase::Connect),
            Failure::Unavailable(m) if m.starts_with("no connection")
        ));
        assert!(matches!(
            failure(&sqlx::Error::RowNotFound, Dialect::Sqlite, Phase::Statement),
            Failure::Rejected(_)
        ));
    }
}
