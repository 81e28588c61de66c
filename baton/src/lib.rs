//! # baton
//!
//! Distributed locks for Rust services. A [`Locker`] holds a [`Store`] (a lock table) and
//! default options; its `lock` calls return a [`Guard`] that keeps the lease alive in the
//! background, tells you when it is lost, and releases the lock when dropped.
//!
//! The lock algorithms live in the sans-IO kernel, [`baton_kernel`]; this crate is its driver
//! (the only place that sleeps or does I/O), its stores, and the API.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> baton::Result<()> {
//! use std::time::Duration;
//! use baton::{ErrorKind, Locker, Strategy};
//!
//! let locker = Locker::builder(baton::MemoryStore::new())
//!     .strategy(Strategy::UniqueInsert)
//!     .ttl(Duration::from_secs(30))
//!     .build()?;
//! let mut guard = locker.lock("nightly-digest").await?;
//! assert!(guard.is_held());
//! // Show the fencing token to anything that can refuse a stale holder.
//! let token = guard.token();
//! assert_eq!(
//!     locker.try_lock("nightly-digest").await.map(|_| ()).map_err(|e| e.kind()),
//!     Err(ErrorKind::Busy)
//! );
//! guard.release().await?;
//! assert!(locker.lock("nightly-digest").await?.token() > token);
//! # Ok(())
//! # }
//! ```
//!
//! From synchronous code, the same through [`Locker::blocking`] (not from inside a tokio
//! runtime: that gives [`ErrorKind::WrongContext`]):
//!
//! ```
//! # fn main() -> baton::Result<()> {
//! let locker = baton::Locker::open("memory:")?.blocking();
//! {
//!     let guard = locker.lock("report 42")?;
//!     assert!(guard.is_held());
//! } // dropped: released
//! assert!(locker.try_lock("report 42").is_ok());
//! # Ok(())
//! # }
//! ```
//!
//! ## Modules
//! - [`store`]: the [`Store`] trait, and the obligations of a store.
//! - [`memory`]: [`MemoryStore`], the in-process store.
//! - [`sql`]: [`SqlStore`], on SQLite (feature `sqlite`, on by default), PostgreSQL (`postgres`)
//!   and MariaDB (`mysql`), with locks taken and released inside the caller's transactions.
//! - [`cassandra`]: [`CassandraStore`], on Cassandra or ScyllaDB (feature `cassandra`).
//! - [`driver`]: [`drive`], which runs one kernel operation against a store.
//! - [`Locker`], [`LockerBuilder`], [`LockRequest`], [`Guard`]; [`BlockingLocker`] and
//!   [`BlockingGuard`] for synchronous code; [`open_store`] to pick a store by URL.
//!
//! ## Runtime
//! The async API needs a tokio runtime with time enabled. Keep-alive tasks and releases of
//! dropped guards run on the runtime that acquired the lock; if it has shut down by then, the
//! lock expires with its TTL (and a warning is logged through `tracing`).

#![forbid(unsafe_code)]
#![deny(unused_must_use)]

mod api;
mod host;
mod stores;

pub use host::driver;
#[cfg(feature = "cassandra")]
pub use stores::cassandra;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub use stores::sql;
pub use stores::{memory, store};

pub use api::blocking::{shared_runtime, BlockingGuard, BlockingLocker, BlockingSemaphore, Cancel};
pub use api::guard::Guard;
pub use api::locker::{LockPages, Locker, LockerBuilder};
pub use api::modes::Semaphore;
pub use api::object::{BlockingObjectGuard, ObjectGuard, Versioned};
pub use api::request::LockRequest;
pub use api::spec::LockerSpec;
pub use host::background::{abandon_task, wait_for_cleanups};
pub use host::clock::Clock;
pub use host::driver::drive;
pub use stores::memory::MemoryStore;
pub use stores::store::{Store, StoreFuture};
pub use stores::url::open_store;

#[cfg(feature = "cassandra")]
pub use cassandra::{CassandraOptions, CassandraStore};
/// The scylla driver this crate is built with (for [`CassandraStore::session`]).
#[cfg(feature = "cassandra")]
pub use scylla;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub use sql::{SqlConn, SqlOptions, SqlPool, SqlStore};
/// The sqlx this crate is built with, for beginning transactions that locks join.
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub use sqlx;

pub use baton_kernel;
pub use baton_kernel::{
    Cell, Command, Consistency, EntryState, Error, ErrorKind, Failure, Instant, Lease, LockInfo,
    LockOptions, LockPage, LockPath, Mode, PrefixOptions, Reply, Result, RetryPolicy,
    SerialConsistency, Strategy, Wait, Write,
};

/// The README's Rust examples, compiled as doctests so they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The Rust examples of `docs/rust.md` (the API beyond the README's example), as doctests.
#[doc = include_str!("../../docs/rust.md")]
#[cfg(doctest)]
pub struct RustGuideDoctests;

/// The Rust example of `docs/sql-store.md` (locks in your transactions), as a doctest.
#[doc = include_str!("../../docs/sql-store.md")]
#[cfg(doctest)]
pub struct SqlStoreDoctests;
