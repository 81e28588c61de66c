//! The [`Store`] trait: what a lock table must do for the driver.

use std::future::Future;
use std::pin::Pin;

use baton_kernel::{Command, Reply};
use tokio::sync::watch;

/// A boxed future a [`Store`] returns from [`Store::execute`].
pub type StoreFuture<'a> = Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

/// A lock table that executes the kernel's storage [`Command`]s.
///
/// The meaning of every command is defined by the kernel's reference table,
/// [`MemoryTable`](baton_kernel::MemoryTable); the obligations a store takes on are listed in
/// [`baton_kernel::model`] and checked by the conformance suite. In short:
///
/// - **Expiry by the store's clock.** A cell written with TTL `t` at store time `a` stays live at
///   least until `a + t` and is never returned by a read after it expired. A store may round a
///   TTL *up* (to whole seconds, say), never down.
/// - **Visibility.** A completed write is seen by every read that starts after it completed, at
///   the consistency the command names.
/// - **Linearizable conditionals.** [`Command::InsertIfAbsent`] and [`Command::CompareAndSet`]
///   are linearizable with each other and with serial reads.
/// - **Failures are replies.** A store that cannot execute a command answers
///   [`Reply::Failed`]: [`Failure::Unavailable`](baton_kernel::Failure::Unavailable) when the
///   command was certainly not applied, [`Failure::Timeout`](baton_kernel::Failure::Timeout)
///   when it may have been, [`Failure::Rejected`](baton_kernel::Failure::Rejected) when retrying
///   will not help. `execute` never panics, and its future always completes (a store enforces
///   its own timeouts).
///
/// The driver sends one command at a time per operation, but many operations (guards, lockers,
/// threads) share one store, so `execute` is called concurrently.
pub trait Store: Send + Sync + 'static {
    /// Executes one command and answers with its reply. Never panics: every failure is a
    /// [`Reply::Failed`].
    fn execute(&self, command: Command) -> StoreFuture<'_>;

    /// A counter bumped whenever a lock may have been freed (a delete, a conditional delete, a
    /// batch that deletes, a purge that removed something), so waiters retry at once instead of
    /// at the end of their backoff. Spurious bumps only cost an early retry; a store that cannot
    /// tell returns `None` (the default) and waiters rely on their backoff alone.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// A short description for messages, such as `memory store` or `postgres at db1:5432`
    /// (never with a password).
    fn describe(&self) -> String;
}

impl std::fmt::Debug for dyn Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.describe())
    }
}
