//! Renewal (keep-alive) and release of a held lease.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::io::{Io, IoPoll};
use super::{CommandId, Operation, Poll};
use crate::error::{unexpected, Error, ErrorKind, Result};
use crate::lease::Lease;
use crate::model::{Command, ReadConsistency, Reply, Write};
use crate::options::{Sabotage, Strategy};
use crate::record::Fence;
use crate::retry::SplitMix64;
use crate::strategy::{unique, Layout};
use crate::time::Instant;

fn lost(lease: &Lease, why: &str) -> Error {
    Error::new(
        ErrorKind::Lost,
        format!(
            "lease on lock {:?} (token {}) is lost: {why}",
            lease.name.as_str(),
            lease.token
        ),
    )
}

fn delete_mine(lease: &Lease) -> Command {
    match lease.opts.strategy {
        Strategy::UniqueInsert => Command::CompareAndSet {
            row: lease.row.clone(),
            column: lease.column.clone(),
            expected: lease.value.clone(),
            new: None,
            ttl: None,
            serial: lease.opts.serial,
            consistency: lease.opts.consistency,
        },
        _ => Command::Delete {
            row: lease.row.clone(),
            column: lease.column.clone(),
            consistency: lease.opts.consistency,
        },
    }
}

fn io_for(lease: &Lease) -> (Io, SplitMix64) {
    (
        Io::new(lease.opts.store_attempts, lease.opts.retry),
        SplitMix64::new(lease.opts.seed ^ lease.token),
    )
}

#[derive(Debug)]
enum RenewPhase {
    Start,
    Check,
    Write,
    Cas,
    Cleanup(Error),
    Done,
}

/// Extends a lease by its TTL, measured from when the renewal was sent.
///
/// Unique insert: one compare-and-set of our record onto itself with a fresh TTL (1 round
/// trip). Bakery and column prefix (2 round trips): read the lock's entries and its fencing
/// counter, then re-write our cell. The read notices a forced release: our cell is gone, or the
/// counter names a later grant (every grant moves it), in which case our cell is deleted. The
/// re-write counts only if it answered before the current deadline, otherwise it may have revived
/// a cell that had already expired, so it is deleted and the lease is lost.
///
/// A forced release that lands between the read and the re-write of a plain-strategy renewal is
/// undone by the re-write; the holder then learns of it at its following renewal, from the
/// counter, once the lock was granted to someone else.
///
/// Errors: [`ErrorKind::Lost`] when the lease had ended, was taken over, or its cell was removed;
/// store kinds otherwise (the lease is then still valid until its current deadline).
#[derive(Debug)]
pub struct Renew {
    lease: Lease,
    io: Io,
    rng: SplitMix64,
    phase: RenewPhase,
    result: Option<Result<Lease>>,
}

impl Renew {
    /// A renewal of `lease`.
    pub fn new(lease: &Lease) -> Self {
        let (io, rng) = io_for(lease);
        Renew {
            lease: lease.clone(),
            io,
            rng,
            phase: RenewPhase::Start,
            result: None,
        }
    }

    fn late(&self, now: Instant) -> bool {
        self.lease.opts.sabotage != Sabotage::NoContinuity && now >= self.lease.deadline
    }

    fn on_reply(&mut self, reply: Reply, sent: Instant, now: Instant) {
        let validity = self.lease.opts.lease_validity();
        match (core::mem::replace(&mut self.phase, RenewPhase::Done), reply) {
            (RenewPhase::Check, Reply::Cells(cells)) => {
                if !cells
                    .iter()
                    .any(|c| c.column == self.lease.column && c.value == self.lease.value)
                {
                    self.result = Some(Err(lost(
                        &self.lease,
                        "its lock cell is gone (expired or force-released)",
                    )));
                    return;
                }
                // Every grant moves the fencing counter: if it no longer holds what our grant
                // wrote, the lock was broken (forced release) and granted again since.
                let fence = Layout::of(&self.lease.opts).fence;
                let counter = cells.iter().find(|c| c.column == fence);
                if let Some(f) = counter
                    .filter(|c| c.value != self.lease.fence_value)
                    .and_then(|c| Fence::decode(&c.value).ok())
                {
                    let why = format!(
                        "the lock was granted to {} (token {}) since",
                        f.owner, f.token
                    );
                    self.phase = RenewPhase::Cleanup(lost(&self.lease, &why));
                    self.io.send(delete_mine(&self.lease));
                    return;
                }
                let ttl = self.lease.opts.cell_ttl();
                self.phase = RenewPhase::Write;
                self.io.send(Command::Put {
                    row: self.lease.row.clone(),
                    column: self.lease.column.clone(),
                    value: self.lease.value.clone(),
                    ttl: Some(ttl),
                    consistency: self.lease.opts.consistency,
                });
            }
            (RenewPhase::Write, Reply::Written)
            | (RenewPhase::Cas, Reply::Conditional { applied: true, .. }) => {
                if self.late(now) {
                    let e = lost(&self.lease, "the renewal answered after the lease deadline");
                    self.phase = RenewPhase::Cleanup(e);
                    self.io.send(delete_mine(&self.lease));
                    return;
                }
                let mut lease = self.lease.clone();
                lease.deadline = sent.saturating_add(validity);
                self.result = Some(Ok(lease));
            }
            (
                RenewPhase::Cas,
                Reply::Conditional {
                    applied: false,
                    current,
                },
            ) => {
                let why = match current {
                    Some(v) => format!("it was taken over by {}", unique::owner_of(&v)),
                    None => String::from("it expired"),
                };
                self.result = Some(Err(lost(&self.lease, &why)));
            }
            (RenewPhase::Cleanup(e), Reply::Written | Reply::Conditional { .. }) => {
                self.result = Some(Err(e))
            }
            (phase, reply) => {
                self.result = Some(Err(unexpected(&format!("renewal step {phase:?}"), &reply)))
            }
        }
    }
}

impl Operation for Renew {
    type Output = Lease;

    fn poll(&mut self, now: Instant) -> Poll<Lease> {
        loop {
            if let Some(result) = &self.result {
                return Poll::Ready(result.clone());
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Done(Ok(reply), sent) => self.on_reply(reply, sent, now),
                IoPoll::Done(Err(e), _) => self.result = Some(Err(e)),
                IoPoll::Idle => {
                    if !matches!(self.phase, RenewPhase::Start) {
                        self.result = Some(Err(Error::new(
                            ErrorKind::StoreError,
                            "internal error: renewal stalled",
                        )));
                        continue;
                    }
                    if self.late(now) {
                        self.result =
                            Some(Err(lost(&self.lease, "its deadline passed before renewal")));
                        continue;
                    }
                    let lease = &self.lease;
                    if lease.opts.strategy == Strategy::UniqueInsert {
                        self.phase = RenewPhase::Cas;
                        self.io.send(Command::CompareAndSet {
                            row: lease.row.clone(),
                            column: lease.column.clone(),
                            expected: lease.value.clone(),
                            new: Some(lease.value.clone()),
                            ttl: Some(lease.opts.ttl),
                            serial: lease.opts.serial,
                            consistency: lease.opts.consistency,
                        });
                    } else {
                        self.phase = RenewPhase::Check;
                        self.io.send(Command::Read {
                            row: lease.row.clone(),
                            filter: Layout::of(&lease.opts).filter(false),
                            consistency: ReadConsistency::Plain(lease.opts.consistency),
                        });
                    }
                }
            }
        }
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}

/// Releases a lease: only the owner's own cell is removed.
///
/// Unique insert: compare-and-set our record to nothing (1 round trip). Bakery and column prefix:
/// delete our cell (1 round trip), or with a mutation, write the data cells and delete ours in one
/// batch (Astyanax's `releaseWithMutation`).
///
/// `Ok(())` means the lease's deadline had not passed when the release was sent, and (unique
/// insert) our record was still the lock's. [`ErrorKind::Lost`] means the deadline had passed, or
/// (unique insert) the record was gone or someone else's: the critical section may have
/// overlapped another holder. The owner's cell is removed either way where it still exists, and
/// no one else's ever is.
///
/// Limits. For the plain-write strategies (bakery, column prefix) release is a delete of our own
/// cell, which reports nothing: a release after a forced release, or a second release of the same
/// lease, returns `Ok` (harmlessly: it deletes only our cell). The Rust API refuses a second
/// release itself ([`ErrorKind::NotOwner`]) and learns of a forced release through the
/// keep-alive's renewals. The same holds for unique insert when a send of the release timed out
/// (its reply lost, a coordinator died) and the serial read-back finds our record gone or
/// another owner's: our own timed-out delete is by far the likely cause (the next contender
/// took the lock it freed), so the release is `Ok` if it was sent before the deadline; only a
/// forced release racing it would make that answer wrong, and the keep-alive reports those. A
/// direct "not applied" reply, with no timed-out send before it, is still `Lost`: our record
/// was gone before our release reached the store.
#[derive(Debug)]
pub struct Release {
    lease: Lease,
    mutation: Vec<Write>,
    io: Io,
    rng: SplitMix64,
    started: bool,
    result: Option<Result<()>>,
}

impl Release {
    /// A release of `lease`.
    pub fn new(lease: &Lease) -> Self {
        let (io, rng) = io_for(lease);
        Release {
            lease: lease.clone(),
            mutation: Vec::new(),
            io,
            rng,
            started: false,
            result: None,
        }
    }

    /// A release that also applies `writes` to data columns of the lock's row, atomically with
    /// the release (Astyanax's `releaseWithMutation`). Only for column prefix, and only on
    /// columns that are not lock columns; otherwise [`ErrorKind::InvalidOption`].
    pub fn with_mutation(lease: &Lease, writes: Vec<Write>) -> Result<Self> {
        if lease.opts.strategy != Strategy::ColumnPrefix && !writes.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "release with a mutation needs the column-prefix strategy (the lock shares its row with data), not {}",
                    lease.opts.strategy
                ),
            ));
        }
        let layout = Layout::of(&lease.opts);
        for w in &writes {
            let column = match w {
                Write::Put { column, .. } | Write::Delete { column } => column,
            };
            if column == &layout.fence || layout.is_entry(column) || column.is_empty() {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "mutation column {column:?} is empty or is one of the lock's own columns"
                    ),
                ));
            }
        }
        let mut release = Release::new(lease);
        release.mutation = writes;
        Ok(release)
    }

    fn command(&mut self) -> Command {
        if self.mutation.is_empty() {
            return delete_mine(&self.lease);
        }
        let mut writes = core::mem::take(&mut self.mutation);
        writes.push(Write::Delete {
            column: self.lease.column.clone(),
        });
        Command::Batch {
            row: self.lease.row.clone(),
            writes,
            consistency: self.lease.opts.consistency,
        }
    }
}

impl Operation for Release {
    type Output = ();

    fn poll(&mut self, now: Instant) -> Poll<()> {
        loop {
            if let Some(result) = &self.result {
                return Poll::Ready(result.clone());
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Done(Err(e), _) => self.result = Some(Err(e)),
                IoPoll::Done(Ok(reply), sent) => {
                    let in_time = sent < self.lease.deadline;
                    // Some send timed out, and the read-back found our record gone or replaced:
                    // the timed-out delete applied (see the type's docs).
                    let our_delete_applied = self.io.maybe_applied();
                    self.result = Some(match reply {
                        Reply::Written | Reply::Conditional { applied: true, .. } if in_time => {
                            Ok(())
                        }
                        Reply::Conditional { applied: false, .. }
                            if in_time && our_delete_applied =>
                        {
                            Ok(())
                        }
                        Reply::Written | Reply::Conditional { applied: true, .. } => {
                            Err(lost(&self.lease, "its deadline had passed before release"))
                        }
                        Reply::Conditional {
                            applied: false,
                            current: Some(v),
                        } => Err(lost(
                            &self.lease,
                            &format!("it had been taken over by {}", unique::owner_of(&v)),
                        )),
                        Reply::Conditional {
                            applied: false,
                            current: None,
                        } => Err(lost(
                            &self.lease,
                            "its record was already gone (released before, force-released, or expired)",
                        )),
                        other => Err(unexpected("release", &other)),
                    });
                }
                IoPoll::Idle if !self.started => {
                    self.started = true;
                    let command = self.command();
                    self.io.send(command);
                }
                IoPoll::Idle => {
                    self.result = Some(Err(Error::new(
                        ErrorKind::StoreError,
                        "internal error: release stalled",
                    )));
                }
            }
        }
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}
