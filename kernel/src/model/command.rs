//! Commands the kernel emits and the replies stores give.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

/// Consistency level of plain reads and writes (Cassandra's names; SQL stores ignore it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Consistency {
    /// One replica.
    One,
    /// A majority of all replicas (the default, as in QCassandraLock and Astyanax).
    #[default]
    Quorum,
    /// A majority of the replicas in the local data centre.
    LocalQuorum,
    /// A majority in every data centre.
    EachQuorum,
    /// Every replica.
    All,
}

impl core::str::FromStr for Consistency {
    type Err = crate::Error;

    /// `one`, `quorum`, `local_quorum`, `each_quorum` or `all`, in any case, with `_` or `-`
    /// between the words, or in camelCase: `local_quorum`, `LOCAL_QUORUM`, `local-quorum` and
    /// the drivers' `localQuorum` are one level.
    fn from_str(text: &str) -> crate::Result<Consistency> {
        let mut word = alloc::string::String::with_capacity(text.len() + 1);
        let mut after_lower = false;
        for c in text.chars() {
            if c.is_ascii_uppercase() && after_lower {
                word.push('_'); // camelCase: a word starts at the capital
            }
            after_lower = c.is_ascii_lowercase();
            word.push(if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            });
        }
        match word.as_str() {
            "one" => Ok(Consistency::One),
            "quorum" => Ok(Consistency::Quorum),
            "local_quorum" => Ok(Consistency::LocalQuorum),
            "each_quorum" => Ok(Consistency::EachQuorum),
            "all" => Ok(Consistency::All),
            _ => Err(crate::Error::new(
                crate::ErrorKind::InvalidOption,
                alloc::format!(
                    "unknown consistency {text:?} (one, quorum, local_quorum, each_quorum, all)"
                ),
            )),
        }
    }
}

/// Consistency of the Paxos phase of conditional commands and of serial reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SerialConsistency {
    /// Linearizable across all data centres (the default).
    #[default]
    Serial,
    /// Linearizable within the local data centre.
    LocalSerial,
}

/// How a [`Command::Read`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadConsistency {
    /// A plain read at this level.
    Plain(Consistency),
    /// A linearizable read: sees every conditional command that completed, and settles any
    /// that is in flight (Cassandra's `SERIAL` read finishes an in-progress Paxos round).
    Serial(SerialConsistency),
}

/// Which columns of a row a read returns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ColumnFilter {
    /// Every live cell of the row.
    All,
    /// Live cells whose column starts with this prefix.
    Prefix(String),
    /// The live cell with exactly this column, if any.
    Exact(String),
}

impl ColumnFilter {
    /// Whether `column` passes the filter.
    pub fn matches(&self, column: &str) -> bool {
        match self {
            ColumnFilter::All => true,
            ColumnFilter::Prefix(p) => column.starts_with(p.as_str()),
            ColumnFilter::Exact(c) => column == c,
        }
    }
}

/// The smallest string greater than every string that starts with `prefix`, or `None` if there
/// is none (`prefix` is empty or all `U+10FFFF`). Stores compare columns by their UTF-8 bytes
/// (SQL's binary collations, Cassandra's `text`), which is code-point order, the order of
/// Rust's `str`; so the columns a [`ColumnFilter::Prefix`] matches are exactly those in
/// `[prefix, prefix_end(prefix))`, a range an index can serve.
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        // The next scalar value: surrogates are not characters.
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// One plain write inside a [`Command::Batch`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Write {
    /// Write `value` to `column`, with an optional TTL.
    Put {
        /// The column.
        column: String,
        /// The value.
        value: String,
        /// Time to live; `None` keeps the cell until deleted.
        ttl: Option<Duration>,
    },
    /// Remove `column`.
    Delete {
        /// The column.
        column: String,
    },
}

/// The lock condition of a [`Command::SetObject`]: checked on other cells of the object's
/// row, in the same conditional step as the object's own.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ObjectGuard {
    /// The writer holds the lock: its live lock cell `column` holds exactly `value`, and the
    /// fencing counter `counter` holds exactly `counter_value` (the grant's; a forced release
    /// or a later grant moves it). A locked write.
    Held {
        /// The writer's lock cell.
        column: String,
        /// Its value.
        value: String,
        /// The fencing counter's column.
        counter: String,
        /// The counter's value as the writer's grant left it.
        counter_value: String,
    },
    /// Nobody holds the lock: no live cell `column` (unique insert's lock cell). An unlocked
    /// write.
    Free {
        /// The lock cell.
        column: String,
    },
}

/// A [`Command::Claim`]'s condition on the row's turn cell ([`TURN_COLUMN`]), the reservation
/// of the next grant for one waiter (see `Acquire`'s turns, [`LockOptions::turns`]).
///
/// A store that cannot check the cell in the claim's step may ignore the condition: the SQL
/// stores ignore both variants (and the kernel writes no turn there), Cassandra on a table
/// without the `probe` column ignores [`Turn::Free`]. Ignoring it can only let more claims
/// through. The turn decides nothing about safety: a claim still applies only if the lock
/// cell is absent and the counter as expected.
///
/// [`TURN_COLUMN`]: crate::reserved::TURN_COLUMN
/// [`LockOptions::turns`]: crate::LockOptions::turns
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Turn {
    /// Nobody's turn: the turn cell has no live value.
    Free,
    /// Ours: the turn cell holds exactly this value; a claim that applies also removes it.
    Ours(String),
}

/// A storage command. Every command but [`Command::Scan`] and a table-wide [`Command::Purge`]
/// addresses one row of the store's lock table. New commands may be added: a store answers
/// one it does not know with `Reply::Failed(Failure::Rejected(..))`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Command {
    /// Read the live cells of `row` that pass `filter`, with their remaining TTL.
    /// Answered by [`Reply::Cells`], sorted by column.
    Read {
        /// The row.
        row: String,
        /// Which columns.
        filter: ColumnFilter,
        /// Plain or serial.
        consistency: ReadConsistency,
    },
    /// Write a cell unconditionally. Answered by [`Reply::Written`].
    Put {
        /// The row.
        row: String,
        /// The column.
        column: String,
        /// The value.
        value: String,
        /// Time to live (stores may round up, never down); `None` keeps it until deleted.
        ttl: Option<Duration>,
        /// Write consistency.
        consistency: Consistency,
    },
    /// Remove the writer's own cell (absent is fine). Answered by [`Reply::Written`].
    ///
    /// Like [`Command::Put`] and [`Command::Batch`], it is a *plain write*: the executor stamps
    /// it (see [`Command::stamped`]) and the store applies it only over older versions, so a
    /// delete that arrives late cannot remove a cell its writer wrote again since.
    Delete {
        /// The row.
        row: String,
        /// The column.
        column: String,
        /// Write consistency.
        consistency: Consistency,
    },
    /// Remove the writer's own cell, as [`Command::Delete`] does (stamped), and answer with the
    /// cells of the row that `read` selects as they were just before the removal
    /// ([`Reply::Cells`]). A release: the holder learns in the same step whether its lease was
    /// intact (its cell there, the counter where its grant left it). One statement where the
    /// store can read and delete together (PostgreSQL); a read, then the delete, elsewhere.
    Vacate {
        /// The row.
        row: String,
        /// Our cell.
        column: String,
        /// What to read before removing it.
        read: ColumnFilter,
        /// Read and write consistency.
        consistency: Consistency,
    },
    /// Remove the version of a cell that a read returned: the cell is removed only if its stamp
    /// ([`Cell::stamp`]) is at most `stamp`, so a newer write by its owner survives (Cassandra:
    /// `DELETE … USING TIMESTAMP stamp`; SQL: `DELETE … WHERE stamp <= ?`). Used to remove
    /// *someone else's* cell (a stale column-prefix entry, a forced release): never a blind
    /// delete. Answered by [`Reply::Written`].
    DeleteVersion {
        /// The row.
        row: String,
        /// The column.
        column: String,
        /// The newest version to remove.
        stamp: u64,
        /// Write consistency.
        consistency: Consistency,
    },
    /// Create a cell only if no live cell exists at `(row, column)`; an expired one is replaced.
    /// Answered by [`Reply::Conditional`].
    InsertIfAbsent {
        /// The row.
        row: String,
        /// The column.
        column: String,
        /// The value.
        value: String,
        /// Time to live; `None` keeps it until deleted.
        ttl: Option<Duration>,
        /// Paxos consistency.
        serial: SerialConsistency,
        /// Commit consistency.
        consistency: Consistency,
    },
    /// If the live cell at `(row, column)` holds exactly `expected`, replace it with `new`
    /// (and `ttl`), or delete it when `new` is `None`. Answered by [`Reply::Conditional`].
    CompareAndSet {
        /// The row.
        row: String,
        /// The column.
        column: String,
        /// The value the cell must hold.
        expected: String,
        /// The value to write, or `None` to delete.
        new: Option<String>,
        /// Time to live of the new value; `None` keeps it until deleted.
        ttl: Option<Duration>,
        /// Paxos consistency.
        serial: SerialConsistency,
        /// Commit consistency.
        consistency: Consistency,
    },
    /// Insert-if-absent of `(row, column)` and a compare-and-set of the counter cell
    /// `(row, counter)` from `counter_expected` (`None`: absent) to `counter_next` (no TTL), as
    /// one conditional step: both are applied, or neither (an expired lock cell counts as
    /// absent and is replaced). Answered by [`Reply::Guarded`]: applied, or the live values of
    /// both cells as the step found them.
    ///
    /// It is the fenced acquire of unique insert in one round trip (Cassandra: one conditional
    /// batch in the row's partition; PostgreSQL: one statement; SQLite and MariaDB: one
    /// transaction). One partial outcome is allowed, and shown in the reply: a store may insert
    /// the lock cell and leave a counter it found changed under it (PostgreSQL, when the counter
    /// is created by someone else in the same instant); the reply then says not applied, with
    /// `current` our own value.
    Claim {
        /// The row.
        row: String,
        /// The lock cell.
        column: String,
        /// The lock cell's value.
        value: String,
        /// The lock cell's time to live.
        ttl: Option<Duration>,
        /// The counter's column.
        counter: String,
        /// The value the counter must hold (`None`: no counter cell yet).
        counter_expected: Option<String>,
        /// The counter's new value.
        counter_next: String,
        /// A condition on the row's turn cell, checked in the same step (`None`: none). A
        /// claim refused by it alone is answered as not applied with the lock cell absent and
        /// the counter as expected.
        turn: Option<Turn>,
        /// Paxos consistency.
        serial: SerialConsistency,
        /// Commit consistency.
        consistency: Consistency,
    },
    /// A compare-and-set of `(row, column)` (from `expected` to `new`, or a delete when `new`
    /// is `None`) that is applied only if the guard cell `(row, guard)` also holds
    /// `guard_value`, both checked in one conditional step. Answered by [`Reply::Guarded`].
    /// The fenced release of unique insert in one round trip: our record is removed only while
    /// the fencing counter is still at our grant.
    GuardedSet {
        /// The row.
        row: String,
        /// The cell to change.
        column: String,
        /// The value the cell must hold.
        expected: String,
        /// The value to write, or `None` to delete.
        new: Option<String>,
        /// Time to live of the new value.
        ttl: Option<Duration>,
        /// The guard cell's column.
        guard: String,
        /// The value the guard cell must hold.
        guard_value: String,
        /// Paxos consistency.
        serial: SerialConsistency,
        /// Commit consistency.
        consistency: Consistency,
    },
    /// Plain writes to one row applied together (a logged batch on Cassandra, one transaction
    /// on SQL), all with one stamp; each column appears at most once. Used by
    /// release-with-mutation. Answered by [`Reply::Written`].
    Batch {
        /// The row.
        row: String,
        /// The writes, applied in order.
        writes: Vec<Write>,
        /// Write consistency.
        consistency: Consistency,
        /// The newest stamp the writer saw in the row: the executor stamps the batch above it,
        /// so data written by a holder always supersedes what an earlier holder wrote, even
        /// from a host whose clock is behind (0: no floor).
        after: u64,
    },
    /// Write an object cell (no TTL) if its live value starts with `expected` (`None`: there is
    /// no live cell) and `guard` holds, all checked in one conditional step at the moment the
    /// store applies it. Answered by [`Reply::Object`]: applied, or what the step found. An
    /// object cell is written only by this command (conditional, never plain).
    ///
    /// Cassandra: one conditional batch on the row's partition (the guard's cells are checked by
    /// statements that write only the table's `probe` column, never their value). SQL: one
    /// statement.
    SetObject {
        /// The row.
        row: String,
        /// The object's cell.
        column: String,
        /// A prefix its live value must start with (the whole value, or its version), or
        /// `None`: no live cell.
        expected: Option<String>,
        /// The value to write.
        value: String,
        /// The lock condition.
        guard: ObjectGuard,
        /// Paxos consistency.
        serial: SerialConsistency,
        /// Commit consistency.
        consistency: Consistency,
    },
    /// Physically remove expired cells (of one row, or of the whole table when `row` is
    /// `None`). Answered by [`Reply::Purged`] with what was removed.
    Purge {
        /// The row, or every row.
        row: Option<String>,
    },
    /// List rows that have live cells, with those cells, a page at a time: at most `limit`
    /// rows, in an order the store defines and keeps stable (key order on SQL and in memory,
    /// token order on Cassandra), starting after the row `after`. Answered by [`Reply::Rows`].
    /// For operators' listings only: it reads the whole table.
    Scan {
        /// Continue after this row (`None`: from the start).
        after: Option<String>,
        /// The most rows to return (at least 1).
        limit: u32,
        /// Read consistency.
        consistency: Consistency,
    },
}

impl Command {
    /// The row the command addresses (`None` for a table-wide purge).
    pub fn row(&self) -> Option<&str> {
        match self {
            Command::Read { row, .. }
            | Command::Put { row, .. }
            | Command::Delete { row, .. }
            | Command::Vacate { row, .. }
            | Command::DeleteVersion { row, .. }
            | Command::InsertIfAbsent { row, .. }
            | Command::CompareAndSet { row, .. }
            | Command::Claim { row, .. }
            | Command::GuardedSet { row, .. }
            | Command::SetObject { row, .. }
            | Command::Batch { row, .. } => Some(row),
            Command::Purge { row } => row.as_deref(),
            Command::Scan { .. } => None,
        }
    }

    /// Whether the executor stamps the command with a fresh write timestamp: [`Command::Put`],
    /// [`Command::Delete`] and [`Command::Batch`], the plain writes of an owner's own cells.
    ///
    /// Stamps are the storage model's answer to late delivery. A store keeps, with every cell,
    /// the stamp of the write that made it, and applies a plain write only over an older version
    /// (a put: stamp greater than the cell's; a delete: at least the cell's). The executor takes
    /// each stamp, when it sends the command, from a generator that never goes backwards in the
    /// process (the Rust stores: wall-clock microseconds, at least one more than the last stamp
    /// issued, as Cassandra's client-side timestamps). Only an owner writes its own cells, one
    /// command at a time, so its writes are ordered by their stamps whatever order they arrive
    /// in: a put or delete held up in a pooler's queue or a socket buffer, applied after the owner
    /// wrote again, changes nothing. (A late write that finds the cell *gone* may recreate it:
    /// that only adds a contender, who blocks others until its TTL ends; it never removes one.)
    pub fn stamped(&self) -> bool {
        matches!(
            self,
            Command::Put { .. }
                | Command::Delete { .. }
                | Command::Vacate { .. }
                | Command::Batch { .. }
        )
    }

    /// Whether the command is conditional (a lightweight transaction on Cassandra).
    pub fn is_conditional(&self) -> bool {
        matches!(
            self,
            Command::InsertIfAbsent { .. }
                | Command::CompareAndSet { .. }
                | Command::Claim { .. }
                | Command::GuardedSet { .. }
                | Command::SetObject { .. }
        )
    }
}

/// A live cell returned by a read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cell {
    /// The column.
    pub column: String,
    /// The value.
    pub value: String,
    /// Time left before the store expires the cell, by the store's clock; `None` if it has no TTL.
    pub ttl_remaining: Option<Duration>,
    /// The stamp of the write that made this version of the cell (see [`Command::stamped`];
    /// Cassandra's `WRITETIME`): [`Command::DeleteVersion`] with it removes exactly this version.
    pub stamp: u64,
}

/// Why a store could not execute a command.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Failure {
    /// The store said the command was not applied (not enough live replicas, an overloaded
    /// node...). For a conditional command the kernel does not rely on it: Cassandra can answer `Unavailable`
    /// for a proposal a quorum accepted before its commit round failed, and the next Paxos round
    /// completes it, so the kernel reads such an outcome as "maybe applied" when it resends.
    Unavailable(String),
    /// The command may or may not have been applied (a timeout after it was sent).
    Timeout(String),
    /// The store refused the command for a reason retrying will not fix.
    Rejected(String),
    /// The command was certainly not applied, and never will be: it never left the client (no
    /// connection could be had, the connection failed before it was sent), or the store rolled
    /// it back. Unlike [`Failure::Unavailable`], never "maybe applied", even for a conditional
    /// command: retrying it is safe, and a caller told it failed is told the truth.
    NotApplied(String),
}

impl Failure {
    /// The store's message.
    pub fn message(&self) -> &str {
        match self {
            Failure::Unavailable(m)
            | Failure::Timeout(m)
            | Failure::Rejected(m)
            | Failure::NotApplied(m) => m,
        }
    }

    /// The error kind of this failure when nothing settles it further (a setup step, such as
    /// creating the schema, whose commands are idempotent): [`ErrorKind::StoreError`] for a
    /// refusal, [`ErrorKind::StoreUnavailable`] otherwise.
    ///
    /// [`ErrorKind::StoreError`]: crate::ErrorKind::StoreError
    /// [`ErrorKind::StoreUnavailable`]: crate::ErrorKind::StoreUnavailable
    pub fn setup_kind(&self) -> crate::ErrorKind {
        match self {
            Failure::Rejected(_) => crate::ErrorKind::StoreError,
            Failure::Unavailable(_) | Failure::Timeout(_) | Failure::NotApplied(_) => {
                crate::ErrorKind::StoreUnavailable
            }
        }
    }
}

/// A store's answer to a [`Command`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reply {
    /// The cells a [`Command::Read`] found.
    Cells(Vec<Cell>),
    /// A plain write completed.
    Written,
    /// The outcome of a conditional command. When not applied, `current` is the live value that
    /// prevented it (`None` if there was no live cell).
    Conditional {
        /// Whether the command took effect.
        applied: bool,
        /// When not applied: the live value found.
        current: Option<String>,
    },
    /// The outcome of a [`Command::Claim`] or [`Command::GuardedSet`]. Applied: both cells as
    /// the command left them. Not applied: the live values the step found (`None`: no live
    /// cell), which a store may read a moment after the step itself.
    Guarded {
        /// Whether the command took effect.
        applied: bool,
        /// The lock cell's (or changed cell's) live value.
        current: Option<String>,
        /// The counter's (or guard cell's) value.
        guard: Option<String>,
    },
    /// The outcome of a [`Command::SetObject`]. Not applied: the object cell's live value
    /// (`None`: no live cell), and the guard's cells as the step found them (`lock`: the
    /// lock cell's live value; `counter`: the counter's, for [`ObjectGuard::Held`]), which a
    /// store may read a moment after the step itself. Applied: `current` is the value written.
    Object {
        /// Whether the command took effect.
        applied: bool,
        /// The object cell's live value.
        current: Option<String>,
        /// The lock cell's live value.
        lock: Option<String>,
        /// The counter's value (a held guard only).
        counter: Option<String>,
    },
    /// The `(row, column)` pairs a [`Command::Purge`] removed.
    Purged(Vec<(String, String)>),
    /// The rows a [`Command::Scan`] found, each with its live cells (sorted by column). Fewer
    /// than `limit` rows means the scan reached the end.
    Rows(Vec<(String, Vec<Cell>)>),
    /// The command failed.
    Failed(Failure),
}

#[cfg(test)]
mod prefix_tests {
    use super::*;

    #[test]
    fn prefix_ends_bound_exactly_the_prefixed_strings() {
        assert_eq!(prefix_end("_LOCK_").as_deref(), Some("_LOCK`"));
        assert_eq!(prefix_end("ticket/").as_deref(), Some("ticket0"));
        assert_eq!(prefix_end("é").as_deref(), Some("ê"));
        assert_eq!(prefix_end("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        assert_eq!(prefix_end(""), None);
        let end = prefix_end("ab").expect("has an end");
        for s in ["ab", "ab\u{10FFFF}", "abzzz"] {
            assert!(s >= "ab" && s < end.as_str(), "{s}");
        }
        for s in ["aa\u{10FFFF}", "ac", "b"] {
            assert!(!(s >= "ab" && s < end.as_str()), "{s}");
        }
    }
}

#[cfg(test)]
mod consistency_tests {
    use super::*;

    #[test]
    fn every_documented_spelling_names_one_level() {
        for (text, level) in [
            ("one", Consistency::One),
            ("QUORUM", Consistency::Quorum),
            ("local_quorum", Consistency::LocalQuorum),
            ("local-quorum", Consistency::LocalQuorum),
            ("LOCAL_QUORUM", Consistency::LocalQuorum),
            ("localQuorum", Consistency::LocalQuorum),
            ("LocalQuorum", Consistency::LocalQuorum),
            ("eachQuorum", Consistency::EachQuorum),
            ("each_quorum", Consistency::EachQuorum),
            ("all", Consistency::All),
        ] {
            assert_eq!(text.parse::<Consistency>(), Ok(level), "{text}");
        }
        for text in ["", "localquorum", "local__quorum", "two", "local quorum"] {
            let e = text.parse::<Consistency>().expect_err(text);
            assert_eq!(e.kind(), crate::ErrorKind::InvalidOption, "{text}");
        }
    }
}
