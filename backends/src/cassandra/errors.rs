//! scylla driver errors as the kernel's [`Failure`]s.
//!
//! The kernel retries [`Failure::Unavailable`] (the command was certainly not applied), settles
//! [`Failure::Timeout`] by a serial read of the cell (it may have been applied), and stops at
//! [`Failure::Rejected`] (retrying will not help). So:
//!
//! | driver error | failure |
//! | --- | --- |
//! | no node reachable, empty plan, connection pool errors, a session that cannot connect | `Unavailable` |
//! | server `Unavailable` (not enough live replicas), `Overloaded`, `IsBootstrapping`, rate limit | `Unavailable`: the coordinator refused before doing anything |
//! | `WriteTimeout` (including `CAS` write timeouts), `ReadTimeout`, `ReadFailure`, `WriteFailure`, `ServerError`, a connection broken after sending, the client-side timeout | `Timeout` |
//! | anything else (missing table, syntax, permissions, bad values) | `Rejected`, with the server's message |
//!
//! One `Unavailable` is not "certainly not applied": Cassandra's classic Paxos checks the live
//! replicas again before its *commit* round, and a replica marked down between a lightweight
//! transaction's accept and commit rounds (milliseconds apart) yields `Unavailable` for a
//! proposal a quorum already accepted, which the next Paxos round on the partition completes.
//! The server does not reliably tell the two checks apart (Cassandra 5.0 was seen reporting a
//! failed Paxos prepare at SERIAL with two of three nodes down, and at QUORUM on a keyspace with
//! more replicas than nodes; a commit-round failure reports the commit level, QUORUM by default),
//! so the store does not try. Mapping every `Unavailable` to
//! `Timeout` would turn a cluster without quorum into `Ambiguous` errors instead of "store
//! unavailable"; instead the rare case is left to the kernel, where it is safe: the resent
//! command meets its own applied value and is answered "not applied, current = ours" (an
//! insert-if-absent then waits behind a record nobody believes in until its TTL ends; a fencing
//! bump moves on from its own value, so tokens still increase; a release or renewal finds the
//! cell already as it wanted), so no client ever believes it holds a lock it does not.

use baton_kernel::Failure;
use scylla::errors::{
    ConnectionPoolError, DbError, ExecutionError, NewSessionError, PrepareError,
    RequestAttemptError,
};

/// The failure `error` stands for.
pub(crate) fn failure(error: &ExecutionError) -> Failure {
    let message = describe(error);
    match error {
        ExecutionError::EmptyPlan | ExecutionError::ConnectionPoolError(_) => {
            Failure::Unavailable(message)
        }
        ExecutionError::PrepareError(e) => prepare_failure(e, message),
        ExecutionError::LastAttemptError(e) => attempt_failure(e, message),
        ExecutionError::RequestTimeout(_) => Failure::Timeout(message),
        ExecutionError::UseKeyspaceError(_)
        | ExecutionError::SchemaAgreementError(_)
        | ExecutionError::MetadataError(_) => Failure::Unavailable(message),
        ExecutionError::BadQuery(_) => Failure::Rejected(message),
        _ => Failure::Rejected(message),
    }
}

/// A failed `prepare`: nothing was applied, so connection trouble is `Unavailable`.
pub(crate) fn prepare_failure(error: &PrepareError, message: String) -> Failure {
    match error {
        PrepareError::ConnectionPoolError(_) => Failure::Unavailable(message),
        PrepareError::AllAttemptsFailed { first_attempt } => {
            match attempt_failure(first_attempt, message) {
                Failure::Timeout(m) => Failure::Unavailable(m),
                other => other,
            }
        }
        _ => Failure::Rejected(message),
    }
}

/// A session that could not be built: the cluster is unreachable (or refused the login).
pub(crate) fn session_failure(error: &NewSessionError) -> Failure {
    let message = format!("cannot connect to the Cassandra cluster: {error}");
    match error {
        NewSessionError::EmptyKnownNodesList | NewSessionError::IllegalConfig(_) => {
            Failure::Rejected(message)
        }
        _ => Failure::Unavailable(message),
    }
}

fn attempt_failure(error: &RequestAttemptError, message: String) -> Failure {
    match error {
        RequestAttemptError::DbError(db, _) => db_failure(db, message),
        // Never sent.
        RequestAttemptError::UnableToAllocStreamId
        | RequestAttemptError::SerializationError(_)
        | RequestAttemptError::CqlRequestSerialization(_) => match error {
            RequestAttemptError::UnableToAllocStreamId => Failure::Unavailable(message),
            _ => Failure::Rejected(message),
        },
        // Sent, and then the connection broke: it may have been applied.
        RequestAttemptError::BrokenConnectionError(_) => Failure::Timeout(message),
        _ => Failure::Rejected(message),
    }
}

fn db_failure(db: &DbError, message: String) -> Failure {
    match db {
        // Refused before anything was sent to replicas, with one rare exception: see the
        // module docs.
        DbError::Unavailable { .. } => Failure::Unavailable(message),
        DbError::Overloaded | DbError::IsBootstrapping | DbError::RateLimitReached { .. } => {
            Failure::Unavailable(message)
        }
        DbError::Unprepared { .. } => Failure::Unavailable(message),
        DbError::ReadTimeout { .. }
        | DbError::WriteTimeout { .. }
        | DbError::ReadFailure { .. }
        | DbError::WriteFailure { .. }
        | DbError::ServerError => Failure::Timeout(message),
        _ => Failure::Rejected(message),
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
            Failure::Unavailable(_)
        ));
        assert!(matches!(
            failure(&ExecutionError::RequestTimeout(
                std::time::Duration::from_secs(1)
            )),
            Failure::Timeout(_)
        ));
    }
}
