//! The wide-column storage model every store implements.
//!
//! A lock table is a set of cells keyed by `(row, column)`, each with a text value and an optional
//! TTL. The kernel emits [`Command`]s against it; a store executes each one and answers with a
//! [`Reply`]. [`MemoryTable`] is the reference implementation: it applies commands at a given
//! instant of the *store's* clock, and defines what every other store must do.
//!
//! Store obligations (checked by the conformance suite):
//! - Expiry is decided by the store's clock. A cell written with TTL `t` at store time `a` is live
//!   at least until `a + t` (stores may round a TTL up, never down) and is never returned by a read
//!   after it expired.
//! - A completed write is visible to every read that starts after it completed, at the requested
//!   consistency (QUORUM writes + QUORUM reads on Cassandra, any SQL transaction).
//! - Conditional commands ([`Command::InsertIfAbsent`], [`Command::CompareAndSet`]) are
//!   linearizable with respect to each other and to reads at serial consistency.
//! - A [`Failure::Unavailable`] reply means the command was not applied. A [`Failure::Timeout`]
//!   reply means it may have been; a later read at serial consistency settles it.

mod command;
mod memory;

pub use command::{
    Cell, ColumnFilter, Command, Consistency, Failure, ReadConsistency, Reply, SerialConsistency,
    Write,
};
pub use memory::MemoryTable;
