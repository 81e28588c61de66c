//! The CQL of every kernel command (the native Cassandra store prepares these once per store).
//!
//! | command | CQL | idempotent |
//! | --- | --- | --- |
//! | read, every cell | `SELECT cell, value, TTL(value), WRITETIME(value) FROM t WHERE lock_name = ?` | yes |
//! | read, prefix `p` | `… AND cell >= ? AND cell < ?` (bound to `p` and `prefix_end(p)` from the kernel's model; `cell >= ?` alone if `p` has no successor) | yes |
//! | read, exact | `… AND cell = ?` | yes |
//! | put | `UPDATE t USING TIMESTAMP ? AND TTL ? SET value = ? WHERE lock_name = ? AND cell = ?` (TTL 0: none) | yes |
//! | delete | `DELETE FROM t USING TIMESTAMP ? WHERE lock_name = ? AND cell = ?` | yes |
//! | delete-version | the same, with the command's stamp as the timestamp | yes |
//! | batch | a logged batch of the put and delete statements, on one partition, all with one timestamp | yes |
//! | insert-if-absent | `UPDATE t USING TTL ? SET value = ? WHERE lock_name = ? AND cell = ? IF value = null` | no |
//! | compare-and-set | `UPDATE t USING TTL ? SET value = ? WHERE … IF value = ?` | no |
//! | compare-and-delete | `DELETE FROM t WHERE lock_name = ? AND cell = ? IF value = ?` | no |
//! | claim | a conditional batch: insert-if-absent of the lock cell, and insert-if-absent (no counter yet) or compare-and-set (TTL 0) of the counter; with a turn, `DELETE probe FROM t WHERE lock_name = ? AND cell = '_NEXT_' IF value = null` (nobody's; left out on a table without `probe`) or compare-and-delete of `_NEXT_` (ours) | no |
//! | guarded set | a conditional batch: compare-and-set or compare-and-delete of the cell, and compare-and-set of the guard to its own value | no |
//! | set-object | a conditional batch (below) | no |
//! | scan | `SELECT lock_name, cell, value, TTL(value), WRITETIME(value) FROM t [WHERE token(lock_name) > token(?)]`, paged | yes |
//! | purge | none: Cassandra drops expired cells by itself | — |
//!
//! An object write ([`Command::SetObject`](baton_kernel::Command::SetObject)) is one
//! conditional batch on the row's partition, one round trip, whether it applies or not (a batch
//! that does not apply answers with the conditioned rows as it found them):
//!
//! - the object's cell: no object expected, insert-if-absent with TTL 0 (`UPDATE t USING TTL 0
//!   SET value = ? WHERE lock_name = ? AND cell = ? IF value = null`: no TTL); a prefix `p`
//!   expected, `UPDATE t SET value = ? WHERE lock_name = ? AND cell = ? IF value >= ? AND value
//!   < ?` (bound to `p` and `prefix_end(p)`; `IF value >= ?` alone when `p` has no end:
//!   `text` compares by bytes, so the range is the values that start with `p`);
//! - a held guard: `DELETE probe FROM t WHERE lock_name = ? AND cell = ? IF value = ?` on the
//!   lock cell and on the counter; a free one: `… IF value = null` on the lock cell.
//!
//! The guard's statements write nothing but a tombstone of `probe`, a column nothing else uses
//! (see [`PROBE_COLUMN`]): a lock cell's `value`, its TTL and its `WRITETIME` stay as its owner
//! wrote them, so the plain-written cells of the column-prefix and bakery strategies are never
//! written by Paxos, and nothing a read returns changes (a clustering row exists only while its
//! `value` is live; a tombstone makes none appear).
//!
//! Consistency, serial consistency and tracing are set on each bound statement, from the
//! command. Conditional statements are not idempotent and use no driver retry policy: the
//! kernel decides what a failed conditional command means. They carry no timestamp (Cassandra
//! refuses `USING TIMESTAMP` on them: their writes take the Paxos ballot's). Plain statements
//! carry the stamp the store took for the command (`USING TIMESTAMP ?`, see the Cassandra
//! store's docs), so they are idempotent: a resent write lands at its original place in the
//! owner's sequence of writes, and the driver may retry them on another node.

use alloc::format;
use alloc::string::String;
use core::time::Duration;

use crate::statement_list::statement_list;

mod errors;
mod operation;
mod schema;

pub use errors::{failure, DriverError, Phase, ServerError};
pub use operation::{
    effective_writes, Level, Levels, Operation, Rows, Step, Val, Value, SCAN_PAGE,
};
pub use schema::{
    add_probe, check_columns, create_keyspace, create_table, ddl_failure, qualified,
    simple_replication, table_id, validate_identifier, SchemaSetup, SchemaStep, COLUMNS_QUERY,
    DEFAULT_KEYSPACE, DEFAULT_TABLE, GC_GRACE_SECONDS, KEYSPACE_QUERY, PROBE_COLUMN,
};

statement_list! {
    /// The statements an [`Operation`] asks a host to run, each prepared once per store.
    pub enum Statement {
        /// Every live cell of a row.
        ReadAll = "read-all", Read;
        /// The cells of a row in `[from, to)`.
        ReadRange = "read-range", Read;
        /// The cells of a row from `from` on.
        ReadFrom = "read-from", Read;
        /// One cell.
        ReadExact = "read-exact", Read;
        /// A plain put.
        Put = "put", Write;
        /// A plain delete (and delete-version).
        Delete = "delete", Write;
        /// Insert-if-absent (Paxos).
        InsertIfAbsent = "insert-if-absent", Write;
        /// Compare-and-set (Paxos).
        CompareAndSet = "compare-and-set", Write;
        /// Compare-and-delete (Paxos).
        CompareAndDelete = "compare-and-delete", Write;
        /// A scan from the first partition.
        ScanFirst = "scan-first", Read;
        /// A scan after a partition.
        ScanAfter = "scan-after", Read;
        /// An object's cell written if its value is in `[from, to)` (Paxos, in a batch).
        ObjectUpdate = "object-update", Write;
        /// An object's cell written if its value is at least `from` (Paxos, in a batch).
        ObjectUpdateFrom = "object-update-from", Write;
        /// A guard: the cell holds this value (Paxos, in a batch; writes only `probe`).
        ProbeValue = "probe-value", Write;
        /// A guard: the cell has no live value (Paxos, in a batch; writes only `probe`).
        ProbeAbsent = "probe-absent", Write;
    }
}

impl Statement {
    /// The statement's place in [`Statement::ALL`] (and in [`statements`]): a host keeps its
    /// prepared statements in an array of that order.
    pub fn index(self) -> usize {
        self as usize
    }

    /// A lightweight transaction: not idempotent, and no driver may retry it (the kernel
    /// decides what a failed one means); it carries no timestamp of its own.
    pub fn is_conditional(self) -> bool {
        matches!(
            self,
            Statement::InsertIfAbsent
                | Statement::CompareAndSet
                | Statement::CompareAndDelete
                | Statement::ObjectUpdate
                | Statement::ObjectUpdateFrom
                | Statement::ProbeValue
                | Statement::ProbeAbsent
        )
    }

    /// Whether the statement names the table's `probe` column ([`PROBE_COLUMN`]), which a
    /// table made by an earlier version lacks until it is added: a host prepares it only on a
    /// table that has it.
    pub fn needs_probe(self) -> bool {
        matches!(self, Statement::ProbeValue | Statement::ProbeAbsent)
    }

    /// The statement's CQL for table `t` (already `"keyspace"."table"`, see [`qualified`]).
    pub fn cql(self, t: &str) -> String {
        let select = || {
            format!("SELECT cell, value, TTL(value), WRITETIME(value) FROM {t} WHERE lock_name = ?")
        };
        let scan =
            || format!("SELECT lock_name, cell, value, TTL(value), WRITETIME(value) FROM {t}");
        match self {
            Statement::ReadAll => select(),
            Statement::ReadRange => format!("{} AND cell >= ? AND cell < ?", select()),
            Statement::ReadFrom => format!("{} AND cell >= ?", select()),
            Statement::ReadExact => format!("{} AND cell = ?", select()),
            Statement::Put => format!(
                "UPDATE {t} USING TIMESTAMP ? AND TTL ? SET value = ? WHERE lock_name = ? AND cell = ?"
            ),
            Statement::Delete => {
                format!("DELETE FROM {t} USING TIMESTAMP ? WHERE lock_name = ? AND cell = ?")
            }
            Statement::InsertIfAbsent => format!(
                "UPDATE {t} USING TTL ? SET value = ? WHERE lock_name = ? AND cell = ? IF value = null"
            ),
            Statement::CompareAndSet => format!(
                "UPDATE {t} USING TTL ? SET value = ? WHERE lock_name = ? AND cell = ? IF value = ?"
            ),
            Statement::CompareAndDelete => {
                format!("DELETE FROM {t} WHERE lock_name = ? AND cell = ? IF value = ?")
            }
            Statement::ScanFirst => scan(),
            Statement::ScanAfter => format!("{} WHERE token(lock_name) > token(?)", scan()),
            Statement::ObjectUpdate => format!(
                "UPDATE {t} SET value = ? WHERE lock_name = ? AND cell = ? IF value >= ? AND value < ?"
            ),
            Statement::ObjectUpdateFrom => {
                format!("UPDATE {t} SET value = ? WHERE lock_name = ? AND cell = ? IF value >= ?")
            }
            Statement::ProbeValue => format!(
                "DELETE {PROBE_COLUMN} FROM {t} WHERE lock_name = ? AND cell = ? IF value = ?"
            ),
            Statement::ProbeAbsent => format!(
                "DELETE {PROBE_COLUMN} FROM {t} WHERE lock_name = ? AND cell = ? IF value = null"
            ),
        }
    }
}

/// The names of the schema's setup statements as a host gives them to adapters, all of
/// [`Access::Schema`](crate::Access::Schema).
pub mod schema_statement {
    /// [`KEYSPACE_QUERY`](super::KEYSPACE_QUERY).
    pub const KEYSPACE: &str = "keyspace";
    /// [`create_keyspace`](super::create_keyspace).
    pub const CREATE_KEYSPACE: &str = "create-keyspace";
    /// [`COLUMNS_QUERY`](super::COLUMNS_QUERY).
    pub const COLUMNS: &str = "columns";
    /// [`create_table`](super::create_table).
    pub const CREATE_TABLE: &str = "create-table";
    /// [`add_probe`](super::add_probe).
    pub const ADD_PROBE: &str = "add-probe";
}

/// Every statement with its CQL for table `t`.
pub fn statements(t: &str) -> [(Statement, String); Statement::COUNT] {
    Statement::ALL.map(|s| (s, s.cql(t)))
}

/// Cassandra's largest TTL (`Attributes.MAX_TTL`, 20 years); a larger one is refused.
const MAX_TTL_SECONDS: u64 = 20 * 365 * 24 * 60 * 60;

/// A TTL as CQL's whole seconds, `ceil(ttl) + 1`, so that the cell lives *at least* `ttl` after
/// the client sent it.
///
/// CQL TTLs are whole seconds, and Cassandra does not count them from the instant of the write:
/// the coordinator reads its clock once per statement in whole seconds, truncated
/// (`FBUtilities.nowInSeconds()` is `currentTimeMillis() / 1000`, through
/// `QueryState.getNowInSeconds()`), and stamps the cell's expiry as that second plus the TTL
/// (`BufferCell.expiring` → `ExpirationDateOverflowHandling.computeLocalExpirationTime`:
/// `nowInSec + timeToLive`). Every replica then treats the cell as live while its own
/// whole-second clock is below that stamp (`AbstractCell.isLive`: `nowInSec <
/// localDeletionTime()`). A cell written `f` seconds into a second (`0 ≤ f < 1`) therefore
/// lives `TTL − f`: up to a second less than its TTL. Rounding up to whole seconds and adding
/// one second covers both losses, and as the coordinator reads its clock after the client
/// sent the statement, the cell outlives the client's own deadline (send time + `ttl`).
///
/// `None` (no TTL) is CQL's TTL 0, and so is a TTL Cassandra would refuse (past 20 years):
/// a TTL may be rounded up, never down. (Checked against Cassandra 5.0's sources.)
pub fn ttl_seconds(ttl: Option<Duration>) -> i32 {
    match ttl {
        None => 0,
        Some(t) => {
            let whole = t.as_secs().saturating_add(u64::from(t.subsec_nanos() > 0));
            match whole.saturating_add(1) {
                seconds if seconds > MAX_TTL_SECONDS => 0,
                seconds => i32::try_from(seconds).unwrap_or(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_indexed_in_the_order_of_all() {
        for (i, s) in Statement::ALL.iter().enumerate() {
            assert_eq!(s.index(), i, "{s:?}");
        }
    }

    #[test]
    fn statement_names_are_unique_and_access_matches_the_text() {
        let mut names: alloc::vec::Vec<&str> = Statement::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Statement::ALL.len(), "{names:?}");
        for s in Statement::ALL {
            let cql = s.cql("t");
            let read = cql.starts_with("SELECT ");
            assert_eq!(read, s.access() == crate::Access::Read, "{s:?}: {cql}");
        }
    }

    #[test]
    fn ttls_round_up_with_a_spare_second() {
        assert_eq!(ttl_seconds(None), 0);
        assert_eq!(ttl_seconds(Some(Duration::ZERO)), 1);
        assert_eq!(ttl_seconds(Some(Duration::from_nanos(1))), 2);
        assert_eq!(ttl_seconds(Some(Duration::from_millis(10))), 2);
        assert_eq!(ttl_seconds(Some(Duration::from_secs(1))), 2);
        assert_eq!(ttl_seconds(Some(Duration::from_millis(1500))), 3);
        assert_eq!(ttl_seconds(Some(Duration::from_secs(60))), 61);
        assert_eq!(
            ttl_seconds(Some(Duration::from_secs(30 * 24 * 3600))),
            2_592_001
        );
    }

    /// Cassandra's expiry, modelled: the coordinator's whole second (truncated) plus the TTL,
    /// live while the whole-second clock is below it. Whatever the fraction of a second the
    /// write lands at, the cell is live for at least the TTL asked for, and dies within 2 s
    /// after it.
    #[test]
    fn cells_live_at_least_their_ttl_at_any_point_of_a_second() {
        for ttl_ms in [1_u64, 10, 999, 1_000, 1_001, 1_500, 59_999, 60_000] {
            let ttl = Duration::from_millis(ttl_ms);
            let sent = u64::try_from(ttl_seconds(Some(ttl))).expect("positive");
            for written_ms in (10_000..11_000).step_by(7) {
                let expiry_s = written_ms / 1_000 + sent;
                // The first millisecond at which the cell is dead: floor(now) >= expiry.
                let dies_ms = expiry_s * 1_000;
                assert!(
                    dies_ms >= written_ms + ttl_ms,
                    "TTL {ttl_ms} ms written at {written_ms} ms: dead at {dies_ms} ms"
                );
                assert!(
                    dies_ms < written_ms + ttl_ms + 2_000,
                    "{ttl_ms} {written_ms}"
                );
            }
        }
    }

    #[test]
    fn ttls_cassandra_would_refuse_mean_no_ttl() {
        let max = Duration::from_secs(MAX_TTL_SECONDS);
        assert_eq!(ttl_seconds(Some(max - Duration::from_secs(1))), 630_720_000);
        assert_eq!(ttl_seconds(Some(max)), 0);
        assert_eq!(ttl_seconds(Some(Duration::MAX)), 0);
    }
}
