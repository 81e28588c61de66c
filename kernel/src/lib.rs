//! # baton-kernel
//!
//! The sans-IO core of baton, a distributed lock library: three lock algorithms written as
//! state machines over a small wide-column storage model. No I/O, no clock, no threads, no
//! async, no randomness of its own, `no_std` + `alloc`: the same code runs natively, in
//! WebAssembly, and in the deterministic simulator.
//!
//! ## Pieces
//! - [`LockName`], [`OwnerId`], [`LockOptions`]: validated inputs.
//! - [`model`]: the storage commands ([`Command`]) a store executes, its replies ([`Reply`]), and
//!   the reference in-memory table ([`MemoryTable`]) that defines their meaning.
//! - [`strategy`]: the algorithms (bakery, unique insert, column prefix), each with its safety
//!   argument, consistency needs, crash behaviour and round-trip costs.
//! - Operations ([`Acquire`], [`Renew`], [`Release`], [`Inspect`], [`ListLocks`] or
//!   [`ListPage`], [`Purge`], [`ForceRelease`]):
//!   each a state machine driven through the [`Operation`] trait.
//! - [`Lease`]: what a grant gives, with its fencing token and deadline.
//! - [`LockLife`]: a lock's whole life (acquire, keep alive, loss, release, cleanup after
//!   cancellation) as one machine that every host drives the same way.
//! - [`Error`] and [`ErrorKind`]: the error taxonomy shared by every binding, with stable codes.
//!
//! ## Driving an operation
//!
//! A driver owns the clock and the store. It polls the operation with the current instant and
//! does what it is told; this is the whole loop (the `baton` crate's driver is this plus async
//! sleeping and wake-ups):
//!
//! ```
//! use baton_kernel::{Acquire, Instant, LockName, LockOptions, MemoryTable, Operation, OwnerId, Poll};
//!
//! let mut table = MemoryTable::new();
//! let owner = OwnerId::new("web-1", 4242, 0x5eed).unwrap();
//! let mut op = Acquire::new(LockName::new("nightly-digest").unwrap(), owner, LockOptions::default()).unwrap();
//! let now = Instant::from_nanos(1_000);
//! let grant = loop {
//!     match op.poll(now) {
//!         Poll::Execute(id, command) => {
//!             let reply = table.apply(&command, now); // a real store does I/O here
//!             op.handle(id, reply);
//!         }
//!         Poll::WaitUntil(_until) => unreachable!("uncontended: never waits"),
//!         Poll::Ready(result) => break result.unwrap(),
//!     }
//! };
//! assert_eq!(grant.lease.token(), 1);
//! ```
//!
//! Rules of the loop (details on [`Operation`]): at most one command is outstanding; `now` is
//! monotonic; a store failure is reported as [`Reply::Failed`], never by abandoning the
//! operation; on a `WaitUntil`, sleep until that instant, or call [`Operation::wake`] early when
//! the store reports that a lock changed.

#![no_std]
#![forbid(unsafe_code)]
#![deny(unused_must_use)]

extern crate alloc;

mod error;
pub mod host;
mod lease;
pub mod life;
pub mod mode;
pub mod model;
mod name;
pub mod object;
mod op;
mod options;
mod owner;
mod path;
mod record;
mod reserved;
mod retry;
pub mod strategy;
mod time;

pub use error::{Error, ErrorKind, Result};
pub use lease::{EntryState, FenceHint, Grant, Lease, LockInfo, COURTESIES};
pub use life::{AfterObject, LifeEvent, LifePoll, LifeStatus, LockLife};
pub use mode::Mode;
pub use model::{
    Cell, ColumnFilter, Command, Consistency, Failure, MemoryTable, ObjectGuard, ReadConsistency,
    Reply, SerialConsistency, Turn, Write,
};
pub use name::LockName;
pub use object::{check_value, Object, MAX_OBJECT_BYTES, OBJECT_COLUMN};
pub use op::{
    Acquire, CommandId, ForceRelease, Inspect, ListLocks, ListPage, LockPage, ObjectOp,
    ObjectRequest, Operation, Poll, Purge, Release, Renew, GIVE_UP_GRACE, GIVE_UP_GRACE_MAX,
    LIST_PAGE_ROWS,
};
#[cfg(feature = "sabotage")]
pub use options::Sabotage;
pub use options::{LockOptions, PrefixOptions, Strategy, Wait};
pub use owner::OwnerId;
pub use path::LockPath;
pub use retry::{RetryPolicy, SplitMix64};
pub use time::Instant;
