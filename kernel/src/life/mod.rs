//! A lock's whole life as one sans-IO machine: acquiring (waiting, backing off, waking on a
//! change), keeping the lease alive (when to renew, retrying failed renewals, the deadline with
//! its drift margin), deciding the lease is lost, releasing, and cleaning up an acquisition its
//! caller abandoned.
//!
//! [`LockLife`] decides all of that from the time and the store's replies it is given, in the
//! shape of the operations (quinn-proto's `Connection` is the model): it returns commands to
//! execute, instants to wake at, and [events](LifeEvent) for the holder. Every host drives the
//! same machine (the tokio driver, the blocking API, the bindings), so a lock behaves the same
//! in every language.
//!
//! # Driving contract
//!
//! ```text
//! loop {
//!     match life.poll(now()) {
//!         LifePoll::Execute(id, command) => start executing it; its reply goes to life.handle(id, reply),
//!         LifePoll::Event(event)         => tell the holder (granted, lost, released, ...),
//!         LifePoll::WaitUntil(t)         => wait until t, a reply, a request of the holder
//!                                           (release, renew_now, cancel), or a change in the
//!                                           store (then call life.wake()),
//!         LifePoll::Done                 => stop: nothing will ever happen again,
//!     }
//! }
//! ```
//!
//! - At most one command is outstanding. Unlike an [`Operation`], the machine may have to act
//!   while a command is outstanding (a deadline passes while a renewal hangs: the lease is lost
//!   now, not when the store answers), so with a command outstanding the host still wakes at the
//!   [`LifePoll::WaitUntil`] instant and polls.
//! - An acquisition that ends with [`LifeEvent::GaveUp`] (its wait ran out with the store
//!   silent: the caller hears the error at once) still has its cleanup to send: keep driving
//!   the machine until [`LifePoll::Done`]. So does one that ends with `Granted`, of course.
//! - `now` is monotonic, as for operations. A reply with a stale id (a command abandoned by a
//!   cancellation) is ignored.
//!
//! # Costs
//! Nothing beyond the operations it runs: an acquisition, one renewal per third of the lease's
//! validity ([`Lease::renew_at`]; none with keep-alive off), retries of failed renewals (10 ms
//! growing to 1 s, at most a tenth of the validity apart), one release, and on cancellation one
//! command that removes the abandoned acquisition's cell ([`Acquire::cleanup`]).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::vec::Vec;
use core::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::lease::Lease;
use crate::model::{Command, Reply, Write};
use crate::object::Object;
use crate::op::{
    Acquire, CommandId, ObjectCall, ObjectLevels, ObjectRequest, Operation, Poll, Release, Renew,
};
use crate::options::Sabotage;
use crate::time::Instant;

mod event;
mod held;

pub use event::{LifeEvent, LifePoll, LifeStatus};
pub use held::renewal_retry_delay;
use held::Held;

/// Which operation an outstanding command belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Acquire,
    Renew,
    Object,
    Release,
    Cleanup,
}

/// What a holder's object call does to the lock once it succeeds ([`LockLife::object`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterObject {
    /// Nothing: the lock stays held, renewed on its schedule.
    Keep,
    /// Renew it now (ScaleOut StateServer's `get_locked`, `update_locked_and_retain`).
    Renew,
    /// Release it (`update_locked_and_release`, `remove_locked`).
    Release,
}

#[derive(Debug)]
struct Outstanding {
    id: CommandId,
    target: Target,
    inner: CommandId,
    /// When it was handed to the host.
    sent: Instant,
}

#[derive(Debug)]
enum Phase {
    Acquiring(Box<Acquire>),
    /// The cleanup of an abandoned acquisition: `cleanup` is `Some` until sent; `then` is the
    /// event that ends the life once it is done (`Cancelled` for a cancellation; none for an
    /// acquisition that gave up, whose `Failed` was given when it did).
    Cancelling {
        cleanup: Option<Command>,
        then: Option<LifeEvent>,
    },
    Held(Box<Held>),
    Releasing {
        op: Box<Release>,
        lost: Option<Error>,
    },
    /// Released elsewhere ([`LockLife::release_elsewhere`]); if that was rolled back, the lock is
    /// still held in the store, so a release here is still due. `lost`: the lease was lost
    /// before, which a release here must report whatever it finds.
    Elsewhere {
        lease: Box<Lease>,
        lost: Option<Error>,
    },
    Over,
}

/// One lock's life. See the [module docs](self) for the driving contract.
#[derive(Debug)]
pub struct LockLife {
    phase: Phase,
    keep_alive: bool,
    next_id: u64,
    outstanding: Option<Outstanding>,
    events: VecDeque<LifeEvent>,
    status: LifeStatus,
}

impl LockLife {
    /// The life of a lock about to be acquired by `acquire`. With `keep_alive`, the lease is
    /// renewed at [`Lease::renew_at`] until it is released; without, it ends at its deadline.
    pub fn new(acquire: Acquire, keep_alive: bool) -> Self {
        LockLife {
            phase: Phase::Acquiring(Box::new(acquire)),
            keep_alive,
            next_id: 0,
            outstanding: None,
            events: VecDeque::new(),
            status: LifeStatus::Acquiring,
        }
    }

    /// Where the lock stands at `now` (a passed deadline counts as lost even before the next
    /// poll reports it).
    pub fn status(&self, now: Instant) -> LifeStatus {
        match (&self.status, &self.phase) {
            (LifeStatus::Held(deadline), Phase::Held(h)) if now >= *deadline => {
                LifeStatus::Lost(h.deadline_loss(self.keep_alive))
            }
            (status, _) => status.clone(),
        }
    }

    /// What a holder's `check` answers at `now` (every host's guard, lock or handle): `Ok`
    /// while the lease is held; its loss ([`ErrorKind::Lost`], a deadline passed included)
    /// once lost and not yet released; [`ErrorKind::NotOwner`] once released (or before a
    /// grant). Errors name lock `name`.
    pub fn check(&self, now: Instant, name: &str) -> Result<()> {
        match self.status(now) {
            LifeStatus::Held(_) => Ok(()),
            LifeStatus::Lost(e) => Err(e.about_lock(name)),
            _ => Err(Error::new(
                ErrorKind::NotOwner,
                format!("lock {name:?} was released by this holder"),
            )
            .with_lock(name)),
        }
    }

    /// Whether the machine can use a store's change notices now (an acquisition waiting its
    /// turn, [`LockLife::wake`]): a host listens for changes only then, so that a held lock is
    /// not woken, for nothing, by every release of the table.
    pub fn wants_changes(&self) -> bool {
        matches!(self.phase, Phase::Acquiring(_))
    }

    /// The lease while held (or lost and not yet released).
    pub fn lease(&self) -> Option<&Lease> {
        match &self.phase {
            Phase::Held(h) => Some(&h.lease),
            Phase::Releasing { op, .. } => Some(op.lease()),
            Phase::Elsewhere { lease, .. } => Some(lease),
            _ => None,
        }
    }

    /// Until when the machine has nothing to do unless its holder asks for something: a host
    /// may leave it unpolled until then (and must poll it after each request). `Some(t)`: the
    /// next step falls due at `t` by itself (a held lock with keep-alive: its next renewal, or
    /// the retry of a failed one, and never later than the deadline); any machine with work
    /// pending (an acquisition, a command outstanding, an event not yet taken, a request)
    /// answers [`Instant::ZERO`]. `None`: only a request can give it work (a held lock without
    /// keep-alive, whose loss at the deadline [`LockLife::status`] shows without a poll; a
    /// lease already lost; a finished life).
    ///
    /// It decides nothing: the same poll at `t` finds the same work. Costs a few comparisons.
    pub fn idle_until(&self) -> Option<Instant> {
        if !self.events.is_empty() || self.outstanding.is_some() {
            return Some(Instant::ZERO);
        }
        match &self.phase {
            Phase::Over => None,
            Phase::Held(h) => {
                let requested = h.renew_requested
                    || h.object_requested.is_some()
                    || h.object_call.is_some()
                    || h.release_requested.is_some()
                    || h.elsewhere_requested
                    || h.renewal.is_some();
                if requested {
                    Some(Instant::ZERO)
                } else if h.lost.is_some() {
                    None
                } else {
                    h.scheduled_renewal(self.keep_alive)
                        .map(|due| due.min(h.lease.deadline()))
                }
            }
            _ => Some(Instant::ZERO),
        }
    }

    /// How long the lease has left at `now` ([`Duration::ZERO`] once lost, released or not
    /// yet granted).
    pub fn remaining(&self, now: Instant) -> Duration {
        match self.status(now) {
            LifeStatus::Held(deadline) => deadline.saturating_duration_since(now),
            _ => Duration::ZERO,
        }
    }

    /// Tells a waiting acquisition that the lock may have changed (the store saw a release), so
    /// it tries again now, unless it keeps losing the races it is woken for while wake-ups come
    /// fast (see [`Operation::wake`]). Harmless at any time.
    pub fn wake(&mut self) {
        if let Phase::Acquiring(op) = &mut self.phase {
            op.wake();
        }
    }

    /// Asks for a renewal now (after the one in flight, if any). [`ErrorKind::NotOwner`] when
    /// the lock is not held.
    pub fn renew_now(&mut self) -> Result<()> {
        match &mut self.phase {
            Phase::Held(h) if h.lost.is_none() && h.release_requested.is_none() => {
                h.renew_requested = true;
                Ok(())
            }
            Phase::Held(h) if h.lost.is_some() => Err(h.lost.clone().unwrap_or_else(|| {
                Error::internal("internal error: a lost lease without its loss")
            })),
            _ => Err(not_held("renew")),
        }
    }

    /// Asks for an object call as the holder (ScaleOut StateServer's locked calls): read the
    /// name's object, or write it with the store checking, in the same step, that this lease
    /// still holds the lock (its lock cell live and unchanged, the fencing counter at its
    /// grant). It runs once no renewal is in flight; its outcome comes as
    /// [`LifeEvent::Object`], then `after` applies if it succeeded. A write the store refuses
    /// because the lease is gone reports the loss ([`LifeEvent::Lost`]) and writes nothing.
    ///
    /// The first call of a life reads the object (one round trip; serial on Cassandra, so that
    /// no earlier holder's write is still in flight); every later write knows the cell it
    /// replaces and is one round trip. A holder's write also expects the cell it last saw: in
    /// the one race a store cannot exclude (an unlocked write checked before the grant and
    /// applied after the holder's read), it fails with [`ErrorKind::VersionMismatch`] and writes
    /// nothing; the lock stays held.
    ///
    /// Errors at once: [`ErrorKind::NotOwner`] when the lock is not held (or is being
    /// released), the loss when it was lost, [`ErrorKind::InvalidOption`] while another object
    /// call is pending.
    pub fn object(&mut self, request: ObjectRequest, after: AfterObject) -> Result<()> {
        let Phase::Held(h) = &mut self.phase else {
            return Err(not_held("use the lock's object"));
        };
        if let Some(lost) = &h.lost {
            return Err(lost.clone());
        }
        if h.release_requested.is_some() || h.elsewhere_requested {
            return Err(not_held("use the lock's object"));
        }
        if h.lease.data.opts.paths {
            return Err(crate::op::object::paths_have_no_objects(
                h.lease.name().as_str(),
            ));
        }
        if !h.lease.mode().is_exclusive() {
            // Its co-holders could write it too: a locked write is only safe under a lease
            // that excludes every other writer.
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "lock {:?} is held {}: a lock's object is written under an exclusive lease only",
                    h.lease.name().as_str(),
                    h.lease.mode()
                ),
            ));
        }
        if h.object_requested.is_some() || h.object_call.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                "another call on this lock's object is still running: one at a time",
            ));
        }
        h.object_requested = Some((request, after));
        Ok(())
    }

    /// Asks for the release, applying `writes` to data columns of the lock's row in the same
    /// batch (column prefix only: see [`Release::with_mutation`]). The outcome comes as
    /// [`LifeEvent::Released`]. Errors at once: [`ErrorKind::NotOwner`] when the lock is not
    /// held (a second release), [`ErrorKind::InvalidOption`] for writes the strategy cannot
    /// carry (the lock stays held).
    pub fn release(&mut self, writes: Vec<Write>) -> Result<()> {
        if let Phase::Elsewhere { lease, lost } = &mut self.phase {
            if !writes.is_empty() {
                return Err(not_held("release with writes"));
            }
            // That release may have committed: our cell found gone counts as its removal
            // where nothing else explains it (see [`Release::after_elsewhere`]).
            let op = Box::new(Release::after_elsewhere(lease));
            let mut lost = lost.take();
            if lease.options().sabotage() == Sabotage::ElsewhereReleaseTrusted {
                lost = None;
            }
            self.phase = Phase::Releasing { op, lost };
            return Ok(());
        }
        let Phase::Held(h) = &mut self.phase else {
            return Err(not_held("release"));
        };
        if h.release_requested.is_some() || h.elsewhere_requested {
            return Err(not_held("release"));
        }
        Release::check_mutation(&h.lease, &writes)?;
        h.release_requested = Some(writes);
        Ok(())
    }

    /// Asks for the release to be run elsewhere by the host (in the caller's database
    /// transaction, so that it commits with the caller's writes): once no renewal is in flight,
    /// [`LifeEvent::ReleaseElsewhere`] gives the lease to release there, and renewals stop. If that
    /// release is rolled back, the lock is still held in the store: [`LockLife::release`] (or
    /// [`LockLife::cancel`]) then releases it here ([`Release::after_elsewhere`]: `Ok` when it
    /// finds the lock freed by that release, should it have committed, and nothing else since
    /// that could have freed it; a loss known before is reported again); and this may be asked
    /// again. [`ErrorKind::NotOwner`] when the lock is not held.
    pub fn release_elsewhere(&mut self) -> Result<()> {
        match &mut self.phase {
            Phase::Held(h) if h.release_requested.is_none() && !h.elsewhere_requested => {
                h.elsewhere_requested = true;
                Ok(())
            }
            Phase::Elsewhere { lease, lost } => {
                let (lease, lost) = (lease.clone(), lost.clone());
                self.events
                    .push_back(LifeEvent::ReleaseElsewhere { lease, lost });
                Ok(())
            }
            _ => Err(not_held("release")),
        }
    }

    /// Abandons the lock: an acquisition in progress stops and removes its cell (the reply to a
    /// command it had outstanding is then ignored); a held lock is released. Harmless once the
    /// life is over.
    pub fn cancel(&mut self) {
        match &mut self.phase {
            Phase::Acquiring(op) => {
                let cleanup = op.cleanup();
                self.status = LifeStatus::Cancelled;
                match cleanup {
                    // A command of the acquisition still on its way stays outstanding: the
                    // cleanup is sent once its reply is in, so that it cannot overtake the
                    // write it removes (a write applied after its cleanup would stay until
                    // its TTL). A host that dropped that command calls
                    // [`LockLife::forget_outstanding`].
                    Some(command) => {
                        self.phase = Phase::Cancelling {
                            cleanup: Some(command),
                            then: Some(LifeEvent::Cancelled),
                        }
                    }
                    None => {
                        self.outstanding = None;
                        self.phase = Phase::Over;
                        self.events.push_back(LifeEvent::Cancelled);
                    }
                }
            }
            Phase::Held(h) if h.release_requested.is_none() => {
                h.release_requested = Some(Vec::new());
            }
            Phase::Elsewhere { .. } => {
                let _ = self.release(Vec::new());
            }
            _ => {}
        }
    }

    /// The host dropped the outstanding command (its future was cancelled with the caller's):
    /// its reply will never come, so stop waiting for it. A cancelled acquisition then sends
    /// its cleanup at once; should the dropped command still be applied after that, what it
    /// wrote expires with its TTL.
    pub fn forget_outstanding(&mut self) {
        self.outstanding = None;
    }

    /// Gives the machine the store's reply to the command `id`. A stale id is ignored.
    pub fn handle(&mut self, id: CommandId, reply: Reply) {
        let Some(out) = self.outstanding.take_if(|o| o.id == id) else {
            return;
        };
        match (&mut self.phase, out.target) {
            (Phase::Acquiring(op), Target::Acquire) => op.handle(out.inner, reply),
            (Phase::Held(h), Target::Renew) => {
                if let Some(op) = h.renewal.as_mut() {
                    op.handle(out.inner, reply);
                }
            }
            (Phase::Held(h), Target::Object) => {
                if let Some((call, _)) = h.object_call.as_mut() {
                    call.handle(out.inner, reply);
                }
            }
            (Phase::Releasing { op, .. }, Target::Release) => op.handle(out.inner, reply),
            (Phase::Cancelling { then, .. }, Target::Cleanup) => {
                // The cleanup is best effort: whatever it answered, the cell is gone or expires.
                if let Some(event) = then.take() {
                    self.events.push_back(event);
                }
                self.phase = Phase::Over;
            }
            _ => {}
        }
    }

    /// Advances the machine at `now` and says what it needs.
    pub fn poll(&mut self, now: Instant) -> LifePoll {
        for _ in 0..64 {
            if let Some(event) = self.events.pop_front() {
                return LifePoll::Event(event);
            }
            match self.step(now) {
                Step::Again => continue,
                Step::Out(out) => return out,
            }
        }
        // A kernel bug: end the life as a failure (nothing more is sent; a held lock expires
        // with its TTL), so that the event keeps its contract: nothing follows it but `Done`.
        let e = Error::internal("internal error: the lock's life did not settle in 64 steps");
        self.phase = Phase::Over;
        self.outstanding = None;
        self.events.clear();
        self.status = LifeStatus::Failed(e.clone());
        LifePoll::Event(LifeEvent::Failed(e))
    }

    fn send(
        &mut self,
        target: Target,
        inner: CommandId,
        command: Command,
        now: Instant,
    ) -> LifePoll {
        let id = CommandId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        self.outstanding = Some(Outstanding {
            id,
            target,
            inner,
            sent: now,
        });
        LifePoll::Execute(id, command)
    }

    /// The acquisition's wait ended with its command still on its way
    /// ([`Acquire::gives_up_at`]): it fails now ([`LifeEvent::GaveUp`], or [`LifeEvent::Failed`]
    /// when nothing of it can be left to remove), and what it may have written is removed as
    /// for a cancellation: the cleanup goes once that command's reply is in (or at once after
    /// [`LockLife::forget_outstanding`]), and the life ends without another event.
    fn give_up(&mut self, now: Instant) {
        let Phase::Acquiring(op) = &self.phase else {
            return;
        };
        let on_its_way = self
            .outstanding
            .as_ref()
            .map_or(Duration::ZERO, |o| now.saturating_duration_since(o.sent));
        // An acquisition already failing (removing its cell after a store error) fails with
        // that error; otherwise the store's silence is the reason.
        let e = match op.failing() {
            Some(e) => e.clone(),
            None => Error::new(
                ErrorKind::StoreUnavailable,
                format!(
                    "the store did not answer within the wait for lock {:?}: gave up after {} attempt(s), with a command on its way for {on_its_way:?}",
                    op.name().as_str(),
                    op.attempts(),
                ),
            ),
        }
        .with_lock(op.name().as_str());
        let cleanup = op.cleanup();
        self.status = LifeStatus::Failed(e.clone());
        self.phase = match cleanup {
            Some(command) => {
                self.events.push_back(LifeEvent::GaveUp(e));
                Phase::Cancelling {
                    cleanup: Some(command),
                    then: None,
                }
            }
            None => {
                self.events.push_back(LifeEvent::Failed(e));
                self.outstanding = None;
                Phase::Over
            }
        };
    }

    fn step(&mut self, now: Instant) -> Step {
        let busy = self.outstanding.is_some();
        match &mut self.phase {
            Phase::Over => Step::Out(LifePoll::Done),
            // Waiting for the reply of the acquisition's command still on its way.
            Phase::Cancelling { .. } if busy => Step::Out(LifePoll::WaitUntil(Instant::MAX)),
            Phase::Cancelling { cleanup, .. } => match cleanup.take() {
                Some(command) => Step::Out(self.send(Target::Cleanup, CommandId(0), command, now)),
                None => Step::Out(LifePoll::WaitUntil(Instant::MAX)),
            },
            Phase::Acquiring(op) if busy => match self
                .outstanding
                .as_ref()
                .and_then(|o| op.gives_up_on(o.sent))
            {
                // A caller who gave a timeout is not kept waiting past it by a store that does
                // not answer.
                Some(limit) if now >= limit => {
                    self.give_up(now);
                    Step::Again
                }
                Some(limit) => Step::Out(LifePoll::WaitUntil(limit)),
                None => Step::Out(LifePoll::WaitUntil(Instant::MAX)),
            },
            Phase::Acquiring(op) => match op.poll(now) {
                Poll::Execute(inner, command) => {
                    Step::Out(self.send(Target::Acquire, inner, command, now))
                }
                Poll::WaitUntil(t) => Step::Out(LifePoll::WaitUntil(t)),
                Poll::Ready(Ok(grant)) => {
                    let deadline = grant.lease.deadline();
                    self.status = LifeStatus::Held(deadline);
                    self.phase = Phase::Held(Box::new(Held::new(grant.lease.clone())));
                    self.events.push_back(LifeEvent::Granted(Box::new(grant)));
                    Step::Again
                }
                Poll::Ready(Err(e)) => {
                    self.status = LifeStatus::Failed(e.clone());
                    self.phase = Phase::Over;
                    self.events.push_back(LifeEvent::Failed(e));
                    Step::Again
                }
            },
            Phase::Held(_) => self.step_held(now, busy),
            Phase::Releasing { .. } if busy => Step::Out(LifePoll::WaitUntil(Instant::MAX)),
            Phase::Elsewhere { .. } => Step::Out(LifePoll::WaitUntil(Instant::MAX)),
            Phase::Releasing { op, lost } => match op.poll(now) {
                Poll::Execute(inner, command) => {
                    Step::Out(self.send(Target::Release, inner, command, now))
                }
                Poll::WaitUntil(t) => Step::Out(LifePoll::WaitUntil(t)),
                Poll::Ready(result) => {
                    // A lease lost before the release was asked for stays lost, whatever the
                    // release found: the holder must hear it.
                    let result = match lost.take() {
                        Some(e) => Err(e),
                        None => result,
                    };
                    self.phase = Phase::Over;
                    self.events.push_back(LifeEvent::Released(result));
                    Step::Again
                }
            },
        }
    }

    fn step_held(&mut self, now: Instant, busy: bool) -> Step {
        let keep_alive = self.keep_alive;
        let Phase::Held(h) = &mut self.phase else {
            return Step::Out(LifePoll::Done);
        };
        let deadline = h.lease.deadline();
        // The deadline passed: lost now, even with a renewal hanging.
        if h.lost.is_none() && now >= deadline {
            let e = h.deadline_loss(keep_alive);
            h.lost = Some(e.clone());
            self.status = LifeStatus::Lost(e.clone());
            self.events.push_back(LifeEvent::Lost(e));
            return Step::Again;
        }
        if let Some(op) = h.renewal.as_mut() {
            if busy {
                let wake = if h.lost.is_none() {
                    deadline
                } else {
                    Instant::MAX
                };
                return Step::Out(LifePoll::WaitUntil(wake));
            }
            return match op.poll(now) {
                Poll::Execute(inner, command) => {
                    Step::Out(self.send(Target::Renew, inner, command, now))
                }
                // Its own retry timer; and the deadline, while it still matters.
                Poll::WaitUntil(t) if h.lost.is_none() => {
                    Step::Out(LifePoll::WaitUntil(t.min(deadline)))
                }
                Poll::WaitUntil(t) => Step::Out(LifePoll::WaitUntil(t)),
                Poll::Ready(result) => {
                    h.renewal = None;
                    self.after_renewal(result, now);
                    Step::Again
                }
            };
        }
        if let Some((call, after)) = h.object_call.as_mut() {
            if busy {
                let wake = if h.lost.is_none() {
                    deadline
                } else {
                    Instant::MAX
                };
                return Step::Out(LifePoll::WaitUntil(wake));
            }
            return match call.poll(now) {
                Poll::Execute(inner, command) => {
                    Step::Out(self.send(Target::Object, inner, command, now))
                }
                Poll::WaitUntil(t) if h.lost.is_none() => {
                    Step::Out(LifePoll::WaitUntil(t.min(deadline)))
                }
                Poll::WaitUntil(t) => Step::Out(LifePoll::WaitUntil(t)),
                Poll::Ready(result) => {
                    let after = *after;
                    h.object_cell = call.known();
                    h.object_call = None;
                    self.after_object(result, after);
                    Step::Again
                }
            };
        }
        if let Some((request, after)) = h.object_requested.take() {
            if let Some(lost) = &h.lost {
                self.events.push_back(LifeEvent::Object(Err(lost.clone())));
                return Step::Again;
            }
            h.object_writes = h
                .object_writes
                .saturating_add(u64::from(request_writes(&request)));
            let data = &h.lease.data;
            let guard = crate::model::ObjectGuard::Held {
                column: data.column.clone(),
                value: data.value.clone(),
                counter: crate::strategy::RowColumns::at(&data.opts, data.name.as_str()).fence,
                counter_value: data.fence_value.clone(),
            };
            let levels = ObjectLevels {
                read: crate::model::ReadConsistency::Serial(data.opts.serial),
                serial: data.opts.serial,
                consistency: data.opts.consistency,
            };
            let (io, rng) = crate::op::io_for_lease(&h.lease);
            let call = ObjectCall::new(
                data.name.as_str(),
                request,
                guard,
                (
                    crate::object::writer_id(data.opts.acquisition, &data.owner),
                    h.object_writes,
                ),
                levels,
                h.object_cell.clone(),
                io,
                rng,
            )
            .with_sabotage(data.opts.sabotage());
            h.object_call = Some((call, after));
            return Step::Again;
        }
        if h.elsewhere_requested {
            let lease = Box::new(h.lease.clone());
            let lost = h.lost.clone();
            self.status = LifeStatus::Released;
            self.events
                .push_back(LifeEvent::ReleaseElsewhere { lease, lost });
            self.phase = Phase::Elsewhere {
                lease: Box::new(h.lease.clone()),
                lost: h.lost.clone(),
            };
            return Step::Again;
        }
        if let Some(writes) = h.release_requested.take() {
            let lost = h.lost.clone();
            let op = match Release::with_mutation(&h.lease, writes) {
                Ok(op) => op,
                // Checked when asked for; the lease has not changed strategy since.
                Err(e) => {
                    self.phase = Phase::Over;
                    self.status = LifeStatus::Released;
                    self.events.push_back(LifeEvent::Released(Err(e)));
                    return Step::Again;
                }
            };
            self.status = LifeStatus::Released;
            self.phase = Phase::Releasing {
                op: Box::new(op),
                lost,
            };
            return Step::Again;
        }
        if h.lost.is_some() {
            return Step::Out(LifePoll::WaitUntil(Instant::MAX));
        }
        let due = if h.renew_requested {
            Some(now)
        } else {
            h.scheduled_renewal(keep_alive)
        };
        match due {
            Some(at) if now >= at => {
                h.renew_requested = false;
                h.renewal = Some(Renew::new(&h.lease));
                Step::Again
            }
            Some(at) => Step::Out(LifePoll::WaitUntil(at.min(deadline))),
            None => Step::Out(LifePoll::WaitUntil(deadline)),
        }
    }

    fn after_object(&mut self, result: Result<Object>, after: AfterObject) {
        let Phase::Held(h) = &mut self.phase else {
            return;
        };
        match &result {
            Ok(_) => match after {
                AfterObject::Keep => {}
                AfterObject::Renew => h.renew_requested = h.lost.is_none(),
                AfterObject::Release => {
                    if h.release_requested.is_none() && !h.elsewhere_requested {
                        h.release_requested = Some(Vec::new());
                    }
                }
            },
            Err(e) if e.kind() == ErrorKind::Lost && h.lost.is_none() => {
                h.lost = Some(e.clone());
                self.status = LifeStatus::Lost(e.clone());
                self.events.push_back(LifeEvent::Lost(e.clone()));
            }
            Err(_) => {}
        }
        self.events.push_back(LifeEvent::Object(result));
    }

    fn after_renewal(&mut self, result: Result<Lease>, now: Instant) {
        let Phase::Held(h) = &mut self.phase else {
            return;
        };
        match result {
            // A loss by deadline was already reported; a late success changes nothing.
            _ if h.lost.is_some() => {}
            Ok(lease) => {
                let lease = if lease.options().sabotage() == Sabotage::RenewalFromReplyTime {
                    let validity = lease.options().lease_validity();
                    lease.with_deadline(now.saturating_add(validity))
                } else {
                    lease
                };
                let deadline = lease.deadline();
                h.lease = lease;
                h.failures = 0;
                h.retry_at = None;
                h.last_error = None;
                self.status = LifeStatus::Held(deadline);
                self.events.push_back(LifeEvent::Renewed(deadline));
            }
            Err(e) if matches!(e.kind(), ErrorKind::Lost | ErrorKind::NotOwner) => {
                h.lost = Some(e.clone());
                self.status = LifeStatus::Lost(e.clone());
                self.events.push_back(LifeEvent::Lost(e));
            }
            Err(e) => {
                let validity = h.lease.options().lease_validity();
                h.retry_at = Some(now.saturating_add(renewal_retry_delay(h.failures, validity)));
                h.failures = h.failures.saturating_add(1);
                h.last_error = Some(e.clone());
                self.events.push_back(LifeEvent::RenewalFailed(e));
            }
        }
    }
}

// A step lives for one poll: boxing its poll would cost an allocation per step.
#[allow(clippy::large_enum_variant)]
enum Step {
    Again,
    Out(LifePoll),
}

/// Whether a request writes (and takes a write number).
fn request_writes(request: &ObjectRequest) -> bool {
    !matches!(request, ObjectRequest::Get)
}

fn not_held(what: &str) -> Error {
    Error::new(
        ErrorKind::NotOwner,
        format!("cannot {what}: the lock is not held (not granted yet, or already released)"),
    )
}
