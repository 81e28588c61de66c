//! The [`Store`] trait: what a lock table must do for the driver.

use std::any::Any;
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
/// - **Stamped plain writes.** The store stamps every [`Command::stamped`] command when it sends
///   it, from a generator that never goes backwards in the process, keeps each cell's stamp and
///   returns it in reads ([`Cell::stamp`](baton_kernel::Cell::stamp)), and applies a put only
///   over an older version and a delete only over a version at most as new (a
///   [`Command::DeleteVersion`] at the stamp it carries). So a write that reaches the database
///   late never undoes a later write of the same owner.
/// - **Failures are replies.** A store that cannot execute a command answers
///   [`Reply::Failed`]: [`Failure::Unavailable`](baton_kernel::Failure::Unavailable) when the
///   command was certainly not applied, [`Failure::Timeout`](baton_kernel::Failure::Timeout)
///   when it may have been, [`Failure::Rejected`](baton_kernel::Failure::Rejected) when retrying
///   will not help. `execute` never panics, and its future always completes (a store enforces
///   its own timeouts).
///
/// The driver sends one command at a time per operation, but many operations (guards, lockers,
/// threads) share one store, so `execute` is called concurrently.
///
/// A store may borrow (a caller's database transaction, say): [`drive`](crate::drive) takes a
/// `&dyn Store` of any lifetime. A [`Locker`](crate::Locker) keeps its store in an `Arc`, so its
/// store is `'static`.
pub trait Store: Send + Sync {
    /// Executes one command and answers with its reply. Never panics: every failure is a
    /// [`Reply::Failed`].
    fn execute(&self, command: Command) -> StoreFuture<'_>;

    /// A counter bumped whenever a lock may have been freed (a delete, a delete-version, a
    /// conditional delete, a batch that deletes, a purge that removed something), so waiters retry at once instead of
    /// at the end of their backoff. Spurious bumps only cost an early retry; a store that cannot
    /// tell returns `None` (the default) and waiters rely on their backoff alone.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// A waiter holding a receiver of [`Store::changes`] is about to wait on it. A store that
    /// learns of other processes' frees only while it listens for them (PostgreSQL's `LISTEN`)
    /// starts listening here, and may stop some time after the last call; a store that does not
    /// need it ignores it (the default). Called before every wait, never for an acquisition that
    /// succeeds at once: it must be cheap, and listening costs nothing until someone waits.
    /// A wrapper store forwards it along with `changes`.
    fn waiting(&self) {}

    /// Whether the store checks a claim's turn condition ([`baton_kernel::Turn`]) in the
    /// claim's own step, so that lockers on it reserve turns by default
    /// ([`LockOptions::turns`](crate::LockOptions::turns)): Cassandra's does, which cannot wake
    /// waiters in other processes; the others do not (the default). A wrapper store forwards it.
    fn honours_turns(&self) -> bool {
        false
    }

    /// The largest object value this store's table takes, in bytes (see
    /// [`baton_statements::object_limit`]): a larger one is refused with
    /// [`ErrorKind::InvalidOption`](crate::ErrorKind::InvalidOption) before anything is sent.
    fn max_object_bytes(&self) -> usize {
        baton_kernel::MAX_OBJECT_BYTES
    }

    /// A short description for messages, such as `memory store` or `postgres at db1:5432`
    /// (never with a password).
    fn describe(&self) -> String;

    /// The store as [`Any`], for code that needs a particular store back from a
    /// [`Locker`](crate::Locker) (transactions need the SQL store). `None` (the default) for
    /// stores that do not offer it.
    fn as_any(&self) -> Option<&dyn Any> {
        None
    }
}

/// Whether applying `command` (answered by `reply`) may have freed a lock: stores that offer
/// [`Store::changes`] bump their counter then (the kernel decides, for every host).
pub(crate) use baton_kernel::host::may_free_a_lock;

impl std::fmt::Debug for dyn Store + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.describe())
    }
}
