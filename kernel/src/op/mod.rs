//! Operations as state machines: the driving contract shared by every operation.

mod acquire;
mod admin;
mod aging;
mod held;
mod herd;
mod io;
mod list;
pub(crate) mod object;
mod release;
mod renew;

pub use acquire::{Acquire, GIVE_UP_GRACE, GIVE_UP_GRACE_MAX};
pub use admin::{ForceRelease, Inspect, Purge};
pub(crate) use held::io_for as io_for_lease;
pub use list::{ListLocks, ListPage, LockPage, LIST_PAGE_ROWS};
pub(crate) use object::{Levels as ObjectLevels, ObjectCall};
pub use object::{ObjectOp, ObjectRequest};
pub use release::Release;
pub use renew::Renew;

use crate::error::Result;
use crate::model::{Command, Reply};
use crate::time::Instant;

/// Correlates a [`Reply`] with the [`Command`] it answers. Unique within one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommandId(pub u64);

/// What an operation wants next.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a Poll tells the driver what to do next"]
pub enum Poll<T> {
    /// Execute this command on the store, then pass its reply to
    /// [`Operation::handle`] with the same id.
    Execute(CommandId, Command),
    /// Nothing to do before this instant (or before [`Operation::wake`], or a reply, if a
    /// command is outstanding). [`Instant::MAX`] means "only a reply or a wake can help".
    WaitUntil(Instant),
    /// The operation finished. Polling again returns the same result.
    Ready(Result<T>),
}

/// A lock operation: [`Acquire`], [`Renew`], [`Release`], [`Inspect`], [`ListLocks`],
/// [`Purge`], [`ForceRelease`].
///
/// # Driving contract
///
/// ```text
/// loop {
///     match op.poll(now()) {
///         Poll::Execute(id, command) => { let reply = store.execute(command); op.handle(id, reply); }
///         Poll::WaitUntil(t)         => sleep until t, or until the store says a lock changed
///                                       (then call op.wake()),
///         Poll::Ready(result)        => return result,
///     }
/// }
/// ```
///
/// - At most one command is outstanding. After [`Poll::Execute`], call [`Operation::handle`]
///   with its reply before expecting progress; polling earlier returns
///   `Poll::WaitUntil(Instant::MAX)`. A reply with an unknown or stale id is ignored.
/// - `now` must come from a monotonic clock and never go backwards. The kernel takes the `now`
///   of the poll that emitted a command as its send time, and the `now` of the first poll after
///   the reply as its receive time; both are conservative for lease deadlines as long as the
///   driver polls promptly.
/// - A store that cannot execute a command answers [`Reply::Failed`]; the operation retries,
///   resolves ambiguity by reading back, or fails with a clear error. It never panics.
pub trait Operation {
    /// The result of the operation.
    type Output: Clone;

    /// Advances the operation at `now` and says what it needs.
    fn poll(&mut self, now: Instant) -> Poll<Self::Output>;

    /// Gives the operation the store's reply to the command `id`.
    fn handle(&mut self, id: CommandId, reply: Reply);

    /// Tells a waiting operation that the lock may have changed (a release was seen), so it
    /// may try again now rather than at the end of its backoff: a waiter that keeps losing the
    /// races it is woken for answers only some wake-ups while they come fast (the `herd`
    /// module). Harmless at any time: it decides when to look, never what is granted.
    fn wake(&mut self);
}
