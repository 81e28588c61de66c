//! sqlx errors as the kernel's [`Failure`]s: this module only says what sqlx reported, as a
//! driver-free [`DriverError`]; [`baton_statements::sql::failure`] decides what it means (see
//! there for the rules, shared by every host).

use baton_kernel::Failure;
use baton_statements::sql::{describe_database, DriverError};

use super::dialect::Dialect;

pub(crate) use baton_statements::sql::Phase;

/// The failure `error` stands for. The message is the database's; the locker adds which store.
pub(crate) fn failure(error: &sqlx::Error, dialect: Dialect, phase: Phase) -> Failure {
    let code = match error {
        sqlx::Error::Database(db) => db.code(),
        _ => None,
    };
    let driver = match error {
        sqlx::Error::Database(db) => DriverError::Database {
            code: code.as_deref(),
            number: mysql_number(&**db),
        },
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
            DriverError::NoConnection
        }
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => {
            DriverError::Connection
        }
        _ => DriverError::Other,
    };
    baton_statements::sql::failure(driver, dialect, phase, describe(error, dialect))
}

/// A short text for `error`: the database's message with its SQLSTATE (or SQLite result code).
fn describe(error: &sqlx::Error, dialect: Dialect) -> String {
    match error {
        sqlx::Error::Database(db) => describe_database(dialect, db.code().as_deref(), db.message()),
        sqlx::Error::PoolTimedOut => String::from(
            "no connection became available in time (the server is unreachable or slow, or every pooled connection is busy)",
        ),
        // A TLS failure, with its cause in plain words (an untrusted or expired certificate,
        // a name mismatch).
        other => {
            let message = other.to_string();
            crate::stores::credentials::explain_tls(&message).unwrap_or(message)
        }
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
    fn sqlx_errors_are_described_to_the_shared_rules() {
        let io = || sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(matches!(
            failure(&io(), Dialect::Postgres, Phase::Connect),
            Failure::NotApplied(_)
        ));
        assert!(matches!(
            failure(&io(), Dialect::Postgres, Phase::Statement),
            Failure::Timeout(_)
        ));
        assert!(matches!(
            failure(&sqlx::Error::PoolTimedOut, Dialect::MySql, Phase::Connect),
            Failure::NotApplied(m) if m.starts_with("no connection")
        ));
        assert!(matches!(
            failure(&sqlx::Error::RowNotFound, Dialect::Sqlite, Phase::Statement),
            Failure::Rejected(_)
        ));
    }
}
