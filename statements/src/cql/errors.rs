//! Cassandra driver errors as the kernel's [`Failure`]s, decided once for every host: a host
//! describes what its driver reported as a [`DriverError`], and [`failure`] decides.
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

use alloc::string::String;

use baton_kernel::Failure;

/// Where an error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Connecting, preparing a statement, or setting up the schema: nothing of a command was
    /// applied, so an error that leaves that open still means "not applied".
    Connect,
    /// Executing a command's statement: it may have reached the replicas.
    Execute,
}

/// An error code of the native protocol's `ERROR` response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerError {
    /// `Unavailable` (0x1000): not enough live replicas.
    Unavailable,
    /// `Overloaded` (0x1001).
    Overloaded,
    /// `Is_bootstrapping` (0x1002).
    IsBootstrapping,
    /// A rate limit (ScyllaDB).
    RateLimited,
    /// `Unprepared` (0x2500).
    Unprepared,
    /// `Read_timeout` (0x1200).
    ReadTimeout,
    /// `Write_timeout` (0x1100), including a `CAS` write timeout.
    WriteTimeout,
    /// `Read_failure` (0x1300).
    ReadFailure,
    /// `Write_failure` (0x1500).
    WriteFailure,
    /// `Server_error` (0x0000).
    ServerError,
    /// Any other code (syntax, invalid, unauthorized, a missing table, …).
    Other,
}

/// What went wrong, as a driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverError {
    /// The server answered with an error.
    Server(ServerError),
    /// No node could take the request, so it was not sent: no node reachable, an empty query
    /// plan, a broken connection pool, no stream id free, a keyspace or metadata the client
    /// could not use.
    NotSent,
    /// The request could not be built (values that do not serialize): it was not sent, and
    /// retrying will not help.
    Invalid,
    /// The connection broke after the request was sent.
    Broken,
    /// The client-side timeout passed with no answer.
    ClientTimeout,
    /// Anything else.
    Other,
}

/// The failure `error` stands for in `phase`; `message` is the text to report.
pub fn failure(error: DriverError, phase: Phase, message: String) -> Failure {
    let failure = match error {
        DriverError::Server(server) => match server {
            // Refused before anything was sent to replicas, with one rare exception: see the
            // module docs.
            ServerError::Unavailable
            | ServerError::Overloaded
            | ServerError::IsBootstrapping
            | ServerError::RateLimited
            | ServerError::Unprepared => Failure::Unavailable(message),
            ServerError::ReadTimeout
            | ServerError::WriteTimeout
            | ServerError::ReadFailure
            | ServerError::WriteFailure
            | ServerError::ServerError => Failure::Timeout(message),
            ServerError::Other => Failure::Rejected(message),
        },
        DriverError::NotSent => Failure::NotApplied(message),
        DriverError::Broken | DriverError::ClientTimeout => Failure::Timeout(message),
        DriverError::Invalid | DriverError::Other => Failure::Rejected(message),
    };
    match (phase, failure) {
        // Nothing of a command was at stake: what may have been applied was a prepare or an
        // idempotent schema statement.
        (Phase::Connect, Failure::Timeout(m) | Failure::Unavailable(m)) => Failure::NotApplied(m),
        (_, failure) => failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(e: DriverError, phase: Phase) -> &'static str {
        match failure(e, phase, String::new()) {
            Failure::Unavailable(_) => "unavailable",
            Failure::Timeout(_) => "timeout",
            Failure::Rejected(_) => "rejected",
            Failure::NotApplied(_) => "not applied",
            _ => "other",
        }
    }

    #[test]
    fn unavailable_is_not_applied_and_timeouts_may_be() {
        let x = Phase::Execute;
        assert_eq!(
            kind(DriverError::Server(ServerError::Unavailable), x),
            "unavailable"
        );
        assert_eq!(
            kind(DriverError::Server(ServerError::WriteTimeout), x),
            "timeout"
        );
        assert_eq!(kind(DriverError::Server(ServerError::Other), x), "rejected");
        assert_eq!(kind(DriverError::NotSent, x), "not applied");
        assert_eq!(kind(DriverError::Broken, x), "timeout");
        assert_eq!(kind(DriverError::ClientTimeout, x), "timeout");
        assert_eq!(kind(DriverError::Invalid, x), "rejected");
    }

    #[test]
    fn nothing_is_at_stake_while_connecting() {
        let c = Phase::Connect;
        assert_eq!(kind(DriverError::Broken, c), "not applied");
        assert_eq!(
            kind(DriverError::Server(ServerError::ReadTimeout), c),
            "not applied"
        );
        assert_eq!(kind(DriverError::Server(ServerError::Other), c), "rejected");
    }
}
