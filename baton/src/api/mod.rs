//! The API a program uses: the [`Locker`](crate::Locker) and its guards (async and blocking),
//! per-call requests, lockers described by bindings, and locks inside the caller's
//! transactions.

pub(crate) mod blocking;
pub(crate) mod guard;
pub(crate) mod locker;
pub(crate) mod modes;
pub(crate) mod object;
pub(crate) mod request;
pub(crate) mod spec;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) mod transaction;
