//! scylla driver errors as the kernel's [`Failure`]s: this module only says what the driver
//! reported, as a driver-free [`DriverError`]; [`baton_statements::cql::failure`] decides
//! what it means (see there for the rules and the one `Unavailable` that is not "certainly not
//! applied", shared by every host).

use baton_kernel::Failure;
use baton_statements::cql::{DriverError, Phase, ServerError};
use scylla::errors::{
    ConnectionPoolError, DbError, ExecutionError, NewSessionError, PrepareError,
    RequestAttemptError,
};

/// The failure `error` of a command's statement stands for.
pub(crate) fn failure(error: &ExecutionError) -> Failure {
    let (driver, phase) = match error {
        ExecutionError::PrepareError(e) => (prepare_error(e), Phase::Connect),
        other => (execution_error(other), Phase::Execute),
    };
    baton_statements::cql::failure(driver, phase, describe(error))
}

/// The failure of a setup statement (schema, catalog): nothing of a command is at stake.
pub(crate) fn setup_failure(error: &ExecutionError) -> Failure {
    let driver = match error {
        ExecutionError::PrepareError(e) => prepare_error(e),
        other => execution_error(other),
    };
    baton_statements::cql::failure(driver, Phase::Connect, describe(error))
}

/// A failed `prepare`: nothing was applied.
pub(crate) fn prepare_failure(error: &PrepareError, message: String) -> Failure {
    baton_statements::cql::failure(prepare_error(error), Phase::Connect, message)
}

/// A session that could not be built: the cluster is unreachable (or refused the login).
///
/// Without TLS (`tls` false), a connection the server drops during the connection setup gets
/// a hint: that is how a TLS-only port answers a plain client.
pub(crate) fn session_failure(error: &NewSessionError, tls: bool) -> Failure {
    let driver = match error {
        NewSessionError::EmptyKnownNodesList | NewSessionError::IllegalConfig(_) => {
            DriverError::Invalid
        }
        _ => DriverError::NotSent,
    };
    let message = format!("cannot connect to the Cassandra cluster: {error}");
    // A TLS failure, with its cause in plain words (an untrusted or expired certificate, a
    // name mismatch).
    let message = crate::stores::credentials::explain_tls(&message).unwrap_or(message);
    let dropped = message.contains("Connection reset")
        || message.contains("Failed to read the frame header")
        || message.contains("connection setup request");
    let message = if !tls && dropped {
        format!("{message} (a node that requires TLS drops a plain connection so: if the cluster's client port is TLS-only, add sslmode=verify-full and sslrootcert=)")
    } else {
        message
    };
    baton_statements::cql::failure(driver, Phase::Connect, message)
}

fn execution_error(error: &ExecutionError) -> DriverError {
    match error {
        ExecutionError::EmptyPlan
        | ExecutionError::ConnectionPoolError(_)
        | ExecutionError::UseKeyspaceError(_)
        | ExecutionError::SchemaAgreementError(_)
        | ExecutionError::MetadataError(_) => DriverError::NotSent,
        ExecutionError::PrepareError(e) => prepare_error(e),
        ExecutionError::LastAttemptError(e) => attempt_error(e),
        ExecutionError::RequestTimeout(_) => DriverError::ClientTimeout,
        ExecutionError::BadQuery(_) => DriverError::Invalid,
        _ => DriverError::Other,
    }
}

fn prepare_error(error: &PrepareError) -> DriverError {
    match error {
        PrepareError::ConnectionPoolError(_) => DriverError::NotSent,
        PrepareError::AllAttemptsFailed { first_attempt } => attempt_error(first_attempt),
        _ => DriverError::Other,
    }
}

fn attempt_error(error: &RequestAttemptError) -> DriverError {
    match error {
        RequestAttemptError::DbError(db, _) => DriverError::Server(server_error(db)),
        // Never sent.
        RequestAttemptError::UnableToAllocStreamId => DriverError::NotSent,
        RequestAttemptError::SerializationError(_)
        | RequestAttemptError::CqlRequestSerialization(_) => DriverError::Invalid,
        // Sent, and then the connection broke: it may have been applied.
        RequestAttemptError::BrokenConnectionError(_) => DriverError::Broken,
        _ => DriverError::Other,
    }
}

fn server_error(db: &DbError) -> ServerError {
    match db {
        DbError::Unavailable { .. } => ServerError::Unavailable,
        DbError::Overloaded => ServerError::Overloaded,
        DbError::IsBootstrapping => ServerError::IsBootstrapping,
        DbError::RateLimitReached { .. } => ServerError::RateLimited,
        DbError::Unprepared { .. } => ServerError::Unprepared,
        DbError::ReadTimeout { .. } => ServerError::ReadTimeout,
        DbError::WriteTimeout { .. } => ServerError::WriteTimeout,
        DbError::ReadFailure { .. } => ServerError::ReadFailure,
        DbError::WriteFailure { .. } => ServerError::WriteFailure,
        DbError::ServerError => ServerError::ServerError,
        _ => ServerError::Other,
    }
}

/// A short text for `error`: the server's message where there is one.
pub(crate) fn describe(error: &ExecutionError) -> String {
    match error {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, message)) => {
            if message.is_empty() {
                db.to_string()
            } else {
                format!("{db} ({message})")
            }
        }
        ExecutionError::ConnectionPoolError(ConnectionPoolError::Broken {
            last_connection_error,
        }) => format!("no connection to the node: {last_connection_error}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(e: DbError) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, "server says".into()))
    }

    #[test]
    fn unavailable_is_not_applied() {
        let unavailable = || DbError::Unavailable {
            consistency: scylla::statement::Consistency::Quorum,
            required: 2,
            alive: 1,
        };
        assert!(matches!(
            failure(&db(unavailable())),
            Failure::Unavailable(m) if m.contains("server says")
        ));
    }

    #[test]
    fn timeouts_and_refusals() {
        let wt = DbError::WriteTimeout {
            consistency: scylla::statement::Consistency::Quorum,
            received: 1,
            required: 2,
            write_type: scylla::errors::WriteType::Cas,
        };
        assert!(matches!(failure(&db(wt)), Failure::Timeout(_)));
        assert!(matches!(
            failure(&db(DbError::Invalid)),
            Failure::Rejected(_)
        ));
        assert!(matches!(
            failure(&ExecutionError::EmptyPlan),
            Failure::NotApplied(_)
        ));
        assert!(matches!(
            failure(&ExecutionError::RequestTimeout(
                std::time::Duration::from_secs(1)
            )),
            Failure::Timeout(_)
        ));
    }
}
