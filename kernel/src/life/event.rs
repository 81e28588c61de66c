//! What a life tells its host ([`LifePoll`]) and its holder ([`LifeEvent`], [`LifeStatus`]).

use alloc::boxed::Box;
use alloc::format;

use crate::error::{Error, ErrorKind, Result};
use crate::lease::{Grant, Lease};
use crate::model::Command;
use crate::object::Object;
use crate::op::CommandId;
use crate::time::Instant;

/// What the machine wants next.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a LifePoll tells the host what to do next"]
pub enum LifePoll {
    /// Execute this command on the store, and pass its reply to [`LockLife::handle`](super::LockLife::handle).
    Execute(CommandId, Command),
    /// Something the holder should hear about.
    Event(LifeEvent),
    /// Nothing to do before this instant, a reply, a request or a store change
    /// ([`Instant::MAX`]: only those can help).
    WaitUntil(Instant),
    /// The life is over (released, failed, cancelled) and every event has been given.
    Done,
}

/// What happened to the lock, for its holder. Each life gives exactly one of `Granted`,
/// `Failed`, `GaveUp` or `Cancelled` first; after `Granted`, at most one `Lost` and exactly one
/// `Released` (a cancellation of a held lock releases it); after the others, nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LifeEvent {
    /// The lock was acquired.
    Granted(Box<Grant>),
    /// The acquisition failed (busy, timed out, store errors): nothing of it is left held.
    Failed(Error),
    /// The acquisition's wait ended with a command still on its way
    /// ([`Acquire::gives_up_at`](crate::op::Acquire::gives_up_at)): it failed with this error ([`ErrorKind::StoreUnavailable`],
    /// or the store error it was already cleaning up after), and nothing of it is held; but
    /// what it may have written is still to be removed, as for a cancellation. The host gives the caller the error now and keeps driving the life until
    /// [`LifePoll::Done`], and keeps the owner-id slot until then.
    GaveUp(Error),
    /// The acquisition was cancelled by [`LockLife::cancel`](super::LockLife::cancel), and its cell removed (or left to
    /// expire if the store could not be reached).
    Cancelled,
    /// A renewal moved the deadline.
    Renewed(Instant),
    /// A renewal failed for store reasons; it is retried until the deadline.
    RenewalFailed(Error),
    /// The lease is lost ([`ErrorKind::Lost`]): taken over, broken by an operator, or its
    /// deadline passed without a successful renewal. The holder must stop acting as the owner.
    Lost(Error),
    /// The release finished: `Ok` means the lease was intact until the release started (see
    /// [`Release`](crate::op::Release)); a lost lease gives its loss again.
    Released(Result<()>),
    /// A holder's object call ([`LockLife::object`](super::LockLife::object)) finished: the object as it now is, or
    /// why the call failed (a [`ErrorKind::Lost`] failure comes after its `Lost` event, and
    /// nothing was written).
    Object(Result<Object>),
    /// The release the holder asked to run elsewhere ([`LockLife::release_elsewhere`](super::LockLife::release_elsewhere)): the host
    /// runs [`Release::new`](crate::op::Release::new)`(&lease)` there (the caller's database transaction), and reports
    /// `lost` if it is `Some`, whatever the release answers. No renewal runs from now on.
    ReleaseElsewhere {
        /// The lease to release.
        lease: Box<Lease>,
        /// The lease was lost before.
        lost: Option<Error>,
    },
}

impl LifeEvent {
    /// Whether the life has no cell of its own left to write after this event (released,
    /// failed, cancelled): a host frees the acquisition's owner-id slot then
    /// ([`crate::host::SlotTable`]), before anyone waiting for that outcome hears of it, so the
    /// next acquisition of the name reuses the column. Safe whatever the outcome: values
    /// carry a fresh acquisition id.
    ///
    /// Not [`LifeEvent::GaveUp`]: its cleanup is still to be sent, and the next acquisition
    /// of the name must not reuse the column it removes.
    pub fn frees_the_slot(&self) -> bool {
        matches!(
            self,
            LifeEvent::Released(_) | LifeEvent::Failed(_) | LifeEvent::Cancelled
        )
    }

    /// Whether this event ends an acquisition ([`LifeEvent::Granted`], [`LifeEvent::Failed`],
    /// [`LifeEvent::GaveUp`], [`LifeEvent::Cancelled`]): a host drives a new life until one,
    /// then hands the outcome to [`LifeEvent::acquisition_outcome`].
    pub fn ends_acquisition(&self) -> bool {
        matches!(
            self,
            LifeEvent::Granted(_)
                | LifeEvent::Failed(_)
                | LifeEvent::GaveUp(_)
                | LifeEvent::Cancelled
        )
    }

    /// Whether the life goes on after this event, which ended its acquisition, with a cleanup
    /// to send ([`LifeEvent::GaveUp`]), or with the held lock ([`LifeEvent::Granted`]): the
    /// host keeps driving it until [`LifePoll::Done`].
    pub fn life_goes_on(&self) -> bool {
        matches!(self, LifeEvent::Granted(_) | LifeEvent::GaveUp(_))
    }

    /// The grant an acquisition of lock `name` ended with, from the event that ended it (a
    /// life's first event; `None` when the machine ended without one, a kernel bug). The error
    /// names the lock.
    pub fn acquisition_outcome(event: Option<LifeEvent>, name: &str) -> Result<Grant> {
        LifeEvent::outcome(event).map_err(|e| e.about_lock(name))
    }

    fn outcome(event: Option<LifeEvent>) -> Result<Grant> {
        match event {
            Some(LifeEvent::Granted(grant)) => Ok(*grant),
            Some(LifeEvent::Failed(e) | LifeEvent::GaveUp(e)) => Err(e),
            Some(LifeEvent::Cancelled) => Err(Error::new(
                ErrorKind::Cancelled,
                "the wait for the lock was cancelled; what it wrote was removed (had the store been unreachable, it would expire with its TTL)",
            )),
            other => Err(Error::internal(format!(
                "internal error: an acquisition ended with {other:?}"
            ))),
        }
    }

    /// The event with `f` applied to the error it carries, if any (a host adds its store's
    /// context, see [`Error::in_store`]).
    pub fn map_error(self, f: impl FnOnce(Error) -> Error) -> LifeEvent {
        match self {
            LifeEvent::Failed(e) => LifeEvent::Failed(f(e)),
            LifeEvent::GaveUp(e) => LifeEvent::GaveUp(f(e)),
            LifeEvent::RenewalFailed(e) => LifeEvent::RenewalFailed(f(e)),
            LifeEvent::Lost(e) => LifeEvent::Lost(f(e)),
            LifeEvent::Released(Err(e)) => LifeEvent::Released(Err(f(e))),
            LifeEvent::Object(Err(e)) => LifeEvent::Object(Err(f(e))),
            other => other,
        }
    }
}

/// Where the lock stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LifeStatus {
    /// Being acquired.
    Acquiring,
    /// Held until the deadline, unless renewed.
    Held(Instant),
    /// Lost, and why; still to be released (which removes what is left of it).
    Lost(Error),
    /// Being released, or released.
    Released,
    /// The acquisition failed, and why.
    Failed(Error),
    /// The acquisition was cancelled.
    Cancelled,
}
