//! Renewal (keep-alive) of a held lease.

use alloc::format;
use alloc::string::String;

use super::io::{Io, IoPoll};
use super::{CommandId, Operation, Poll};
use crate::error::{unexpected, Error, ErrorKind, Result};
use crate::lease::Lease;
use crate::model::{Command, Reply};
use crate::options::{Sabotage, Strategy};
use crate::retry::SplitMix64;
use crate::strategy::unique;
use crate::time::Instant;

use super::held::{
    check_read, counter_owner, delete_mine, granted_since, io_for, lost, lost_to, moved_counter,
    named,
};

#[derive(Debug)]
enum RenewPhase {
    Start,
    Check,
    Write,
    Cas,
    /// Unique insert: the serial read after an applied compare-and-set, carrying its send time.
    Confirm(Instant),
    Cleanup(Error),
    Done,
}

/// Extends a lease by its TTL, measured from when the renewal was sent.
///
/// Unique insert (2 round trips): a compare-and-set of our record onto itself with a fresh TTL,
/// then a serial read of the row: our record and the counter as our grant left it. The
/// compare-and-set alone notices a forced release by the record being gone, except when a late
/// or duplicated copy of our own insert put the record back afterwards; the counter, which a
/// forced release moves before removing anything, tells then too. Bakery and column prefix (2 round trips): read the lock's entries and its fencing
/// counter, then re-write our cell. The read notices a forced release: our cell is gone, or the
/// counter names a later grant or a forced release (every grant moves it, and so does a forced
/// release); the renewal then reports the loss at once and leaves our cell for the release that
/// follows (removing it first would free the lock while the holder still believes). The
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
        self.lease.data.opts.sabotage() != Sabotage::NoContinuity && now >= self.lease.data.deadline
    }

    /// Why the lease is lost according to a read of its entries and counter, if it is: our cell
    /// gone, or the counter moved (every grant moves it, and a forced release does before
    /// removing anything). The loss is reported at once, leaving our cell: deleting it first
    /// would free the lock while the holder still believes it holds it (until this renewal
    /// answers). The release that follows a loss removes the cell.
    fn loss_in(&self, cells: &[crate::model::Cell]) -> Option<Error> {
        if !cells
            .iter()
            .any(|c| c.column == self.lease.data.column && c.value == self.lease.data.value)
        {
            return Some(lost(
                &self.lease,
                "its lock cell is gone (expired or force-released)",
            ));
        }
        moved_counter(&self.lease, cells).map(|m| {
            lost_to(
                &self.lease,
                &granted_since(&m.value),
                counter_owner(&m.value),
            )
        })
    }

    fn on_reply(&mut self, reply: Reply, sent: Instant, now: Instant) {
        let validity = self.lease.data.opts.lease_validity();
        match (core::mem::replace(&mut self.phase, RenewPhase::Done), reply) {
            (RenewPhase::Check, Reply::Cells(cells)) => {
                if let Some(e) = self.loss_in(&cells) {
                    self.result = Some(Err(e));
                    return;
                }
                let ttl = self.lease.data.opts.cell_ttl();
                self.phase = RenewPhase::Write;
                self.io.send(Command::Put {
                    row: self.lease.data.row.clone(),
                    column: self.lease.data.column.clone(),
                    value: self.lease.data.value.clone(),
                    ttl: Some(ttl),
                    consistency: self.lease.data.opts.consistency,
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
                if self.lease.data.opts.strategy == Strategy::UniqueInsert {
                    self.phase = RenewPhase::Confirm(sent);
                    self.io.send(check_read(&self.lease));
                    return;
                }
                let lease = self
                    .lease
                    .clone()
                    .with_deadline(sent.saturating_add(validity));
                self.result = Some(Ok(lease));
            }
            (RenewPhase::Confirm(cas_sent), Reply::Cells(cells)) => {
                self.result = Some(match self.loss_in(&cells) {
                    Some(e) => Err(e),
                    None => Ok(self
                        .lease
                        .clone()
                        .with_deadline(cas_sent.saturating_add(validity))),
                });
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
                    None => String::from("its record is gone (expired or force-released)"),
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
                return Poll::Ready(result.clone().map_err(|e| named(e, &self.lease)));
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Done(Ok(reply), sent) => self.on_reply(reply, sent, now),
                IoPoll::Done(Err(e), _) => self.result = Some(Err(e)),
                IoPoll::Idle => {
                    if !matches!(self.phase, RenewPhase::Start) {
                        self.result = Some(Err(Error::new(
                            ErrorKind::Internal,
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
                    if lease.data.opts.strategy == Strategy::UniqueInsert {
                        self.phase = RenewPhase::Cas;
                        self.io.send(Command::CompareAndSet {
                            row: lease.data.row.clone(),
                            column: lease.data.column.clone(),
                            expected: lease.data.value.clone(),
                            new: Some(lease.data.value.clone()),
                            ttl: Some(lease.data.opts.ttl),
                            serial: lease.data.opts.serial,
                            consistency: lease.data.opts.consistency,
                        });
                    } else {
                        self.phase = RenewPhase::Check;
                        self.io.send(check_read(lease));
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
