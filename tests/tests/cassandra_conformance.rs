//! The store conformance suite (see `baton_tests::conformance`) on Cassandra: every behaviour
//! for every strategy, each in its own table of the cluster `BATON_CASSANDRA_URL` names.
//!
//! One node and three nodes (replication factor 3) are two runs of this file, because the
//! project's two clusters share 127.0.0.1:9042 and never run together:
//!
//! ```text
//! scripts/cassandra start1
//! BATON_CASSANDRA_URL=$(scripts/cassandra url1) BATON_REQUIRE_SERVICES=1 \
//!   cargo test -p baton-tests --test cassandra_conformance
//! scripts/cassandra stop; scripts/cassandra start3
//! BATON_CASSANDRA_URL=$(scripts/cassandra url3) BATON_REQUIRE_SERVICES=1 \
//!   cargo test -p baton-tests --test cassandra_conformance
//! ```
//!
//! Unset: skipped with a line on stderr (a failure under `BATON_REQUIRE_SERVICES=1`).

mod cassandra {
    baton_tests::conformance_tests!(baton_tests::conformance::Backend::Cassandra);
}
