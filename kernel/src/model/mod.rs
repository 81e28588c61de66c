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
//! - Plain writes ([`Command::stamped`]) are ordered by the stamps their executor gives them,
//!   not by their arrival: a put applies only over an older version of its cell, a delete only
//!   over a version at most as new, so a write that reaches the store late (queued in a pooler,
//!   left in a socket buffer, held in a coordinator's queue) never undoes a later write of the
//!   same owner. Every read returns each cell's stamp.
//! - A [`Failure::NotApplied`] reply means the command was not applied and never will be (it
//!   never left the client, or the store rolled it back). A [`Failure::Unavailable`] reply
//!   means the store said it was not applied (for conditional commands, see its docs). A [`Failure::Timeout`] reply means it may have been, *at any time
//!   later*: a command can be applied after the client gave up on it and after a read-back.
//!   For conditional commands on Cassandra a serial read settles it (it completes or supersedes
//!   the in-flight Paxos round); SQL stores bound how late a statement can start by their
//!   statement timeout only once the server has started it, so the kernel never relies on a
//!   read-back having settled anything: each acquisition attempt writes a value of its own.

mod command;
mod memory;

pub use command::{
    prefix_end, Cell, ColumnFilter, Command, Consistency, Failure, ObjectGuard, ReadConsistency,
    Reply, SerialConsistency, Turn, Write,
};
pub use memory::MemoryTable;
