//! Release of a held lease.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::io::{Io, IoPoll};
use super::{CommandId, Operation, Poll};
use crate::error::{unexpected, Error, ErrorKind, Result};
use crate::lease::Lease;
use crate::model::{Command, Reply, Write};
use crate::options::{Sabotage, Strategy};
use crate::record::Fence;
use crate::reserved;
use crate::retry::SplitMix64;
use crate::strategy::{unique, RowColumns};
use crate::time::Instant;

use super::held::{
    check_read, check_read_filter, counter_owner, delete_mine, granted_since, io_for, lost,
    lost_to, moved_counter, named, Moved,
};

/// Releases a lease: only the owner's own cell is removed, and the result says what is known.
///
/// - `Ok(())`: released, and no one else was granted the lock while this lease was believed:
///   the release started before the lease's deadline, and a read made after it started found our
///   cell in place and the fencing counter as our grant left it.
/// - [`ErrorKind::Lost`]: the lease had ended before the release: its deadline had passed, or
///   the lock was gone or someone else's (expired, force-released, taken over), or the counter
///   shows a grant or a forced release since ours. The critical section may have overlapped
///   another holder's.
///
/// One command for every strategy: unique insert removes our exact record by a compare-and-set
/// that applies only while the fencing counter is still at our grant
/// ([`Command::GuardedSet`]); bakery and column prefix delete our cell and read the row as the
/// delete found it ([`Command::Vacate`]). With a mutation (column prefix), two: the read, then
/// the data writes and our delete in one batch (Astyanax's `releaseWithMutation`). The owner's
/// cell is removed either way where it still exists, and no one else's ever is.
///
/// Why the counter decides: every grant moves the counter before it is granted, and a forced
/// release moves it before removing anything; the counter never takes an earlier value again.
/// So a counter still at our grant's value, read (or checked) after the release started, means
/// no one else was granted while we believed. A release whose send may have been applied (its
/// reply lost) and that then finds our cell gone with the counter still at our grant (or moved
/// by later grants with no forced release counted since) is `Ok` too: our cell went away by our
/// own removal or by its expiry, both after the holder stopped acting. The removal's own answer cannot tell that: a late or duplicated
/// copy of our own write (a unique insert included) may have put back a cell a forced release
/// had removed. What happens after the read (our removal, a forced release racing it) comes after
/// the holder stopped acting, and overlaps no one.
#[derive(Debug)]
pub struct Release {
    lease: Lease,
    mutation: Vec<Write>,
    io: Io,
    rng: SplitMix64,
    phase: ReleasePhase,
    /// When the release started (the first poll): the end of the holder's belief.
    started: Option<Instant>,
    /// A removal of ours may have been applied before this release started: the same lease
    /// released in the caller's transaction, committed or rolled back.
    removed_before: bool,
    result: Option<Result<()>>,
}

#[derive(Debug)]
enum ReleasePhase {
    Start,
    /// The read before the removal.
    Check,
    /// Unique insert: our record removed by compare-and-set while the counter is at our grant,
    /// in one step (the check and the removal together).
    Guarded,
    /// Bakery and column prefix: our cell removed, and the row as it was just before read, in
    /// one step.
    Vacate,
    /// The delete (or compare-and-set, or batch); `Some` carries the error the check found,
    /// `None` that it found the lease intact (or, under a broken variant, that there was no check).
    Remove(Option<Error>),
    Done,
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
            phase: ReleasePhase::Start,
            started: None,
            removed_before: false,
            result: None,
        }
    }

    /// A release of `lease` after it was released elsewhere (in the caller's transaction,
    /// [`crate::LockLife::release_elsewhere`]), which may have committed or rolled back. Our
    /// cell found gone then counts as that release's removal where nothing else explains it,
    /// as after a send of this release that may have been applied: before the deadline, with
    /// the counter at our grant or moved only by later grants (no forced release since, and our
    /// grant did not take its token from a forced release's count). `Ok`
    /// then; [`ErrorKind::Lost`] when a forced release or the deadline could have removed it,
    /// since a rolled-back release left the lease to them.
    pub fn after_elsewhere(lease: &Lease) -> Self {
        let mut release = Release::new(lease);
        release.removed_before = true;
        release
    }

    /// Whether our cell may have been removed by ourselves: a send of this release that may
    /// have been applied, or a release elsewhere before it.
    fn maybe_removed(&self) -> bool {
        self.removed_before || self.io.maybe_applied()
    }

    /// A release that also applies `writes` to data columns of the lock's row, atomically with
    /// the release (Astyanax's `releaseWithMutation`). Only for column prefix, and only on
    /// columns that are not lock columns; otherwise [`ErrorKind::InvalidOption`].
    pub fn with_mutation(lease: &Lease, writes: Vec<Write>) -> Result<Self> {
        Self::check_mutation(lease, &writes)?;
        let mut release = Release::new(lease);
        release.mutation = writes;
        Ok(release)
    }

    /// Whether [`Release::with_mutation`] would accept `writes` for `lease`, without building
    /// the release (which copies the lease).
    pub fn check_mutation(lease: &Lease, writes: &[Write]) -> Result<()> {
        if lease.data.opts.strategy != Strategy::ColumnPrefix && !writes.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "release with a mutation needs the column-prefix strategy (the lock shares its row with data), not {}",
                    lease.data.opts.strategy
                ),
            ));
        }
        let columns = RowColumns::at(&lease.data.opts, lease.data.name.as_str());
        for (i, w) in writes.iter().enumerate() {
            let column = match w {
                Write::Put { column, .. } | Write::Delete { column } => column,
            };
            // A batch's writes share one stamp, so two writes of one column would not apply in
            // order on every store (the first put wins over a second one at an equal stamp).
            let again = writes[..i].iter().any(|earlier| match earlier {
                Write::Put { column: c, .. } | Write::Delete { column: c } => c == column,
            });
            if again {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!("mutation writes column {column:?} twice; write each column once"),
                ));
            }
            if reserved::is_reserved(column) {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "mutation column {column:?} is reserved on every lock name ({}); use another name",
                        reserved::why(column)
                    ),
                ));
            }
            if column == &columns.fence || columns.is_entry(column) || column.is_empty() {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "mutation column {column:?} is empty or is one of the lock's own columns"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The lease being released.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    fn remove_command(&mut self) -> Command {
        if self.mutation.is_empty() {
            return delete_mine(&self.lease);
        }
        let mut writes = core::mem::take(&mut self.mutation);
        writes.push(Write::Delete {
            column: self.lease.data.column.clone(),
        });
        Command::Batch {
            row: self.lease.data.row.clone(),
            writes,
            consistency: self.lease.data.opts.consistency,
            after: self.lease.data.newest_stamp,
        }
    }

    fn in_time(&self) -> bool {
        self.started.is_some_and(|t| t < self.lease.data.deadline)
    }

    fn late(&self) -> Error {
        lost(&self.lease, "its deadline had passed before release")
    }

    fn on_reply(&mut self, reply: Reply) {
        let phase = core::mem::replace(&mut self.phase, ReleasePhase::Done);
        self.result = Some(match (phase, reply) {
            (ReleasePhase::Check, Reply::Cells(cells)) => {
                let found = self.verdict(&cells);
                self.phase = ReleasePhase::Remove(found);
                let command = self.remove_command();
                self.io.send(command);
                return;
            }
            (ReleasePhase::Vacate, Reply::Cells(cells)) => {
                let mine = self.mine(&cells);
                match self.verdict(&cells) {
                    // Our cell was already gone with the counter at our grant, after a send of
                    // this release that may have been applied: our own removal (or an expiry),
                    // with no grant since.
                    Some(_)
                        if !mine
                            && self.maybe_removed()
                            && self
                                .moved(&cells)
                                .is_none_or(|m| self.regranted(&m, &cells)) =>
                    {
                        if self.in_time() {
                            Ok(())
                        } else {
                            Err(self.late())
                        }
                    }
                    Some(e) => Err(e),
                    None if self.in_time() => Ok(()),
                    None => Err(self.late()),
                }
            }
            (ReleasePhase::Guarded, Reply::Guarded { applied: true, .. }) if self.in_time() => {
                Ok(())
            }
            (ReleasePhase::Guarded, Reply::Guarded { applied: true, .. }) => Err(self.late()),
            (ReleasePhase::Guarded, Reply::Guarded { current, guard, .. }) => {
                let mine = current.as_deref() == Some(self.lease.data.value.as_str());
                let error = match guard {
                    // Our removal may have been applied (its reply lost), and the lock granted
                    // again since; no forced release came in between (the count did not move),
                    // so our record went away by our removal or by its expiry, both after the
                    // holder stopped acting.
                    Some(v)
                        if !mine
                            && self.maybe_removed()
                            && self.in_time()
                            && self.regranted_without_force(&v) =>
                    {
                        return self.ok();
                    }
                    Some(v) if v != self.lease.data.fence_value => {
                        lost_to(&self.lease, &granted_since(&v), counter_owner(&v))
                    }
                    None => lost(&self.lease, "its fencing counter was gone"),
                    // The counter is at our grant: no one else was granted since.
                    Some(_) => match current {
                        // Our record in place with the counter at our grant would have been
                        // removed: a store that could not tell. Remove it on its own.
                        Some(_) if mine => {
                            self.phase = ReleasePhase::Remove(None);
                            self.io.send(delete_mine(&self.lease));
                            return;
                        }
                        // Gone after a send that may have been applied: our removal, or an
                        // expiry with no grant since; either way no one else held it.
                        None if self.maybe_removed() && self.in_time() => return self.ok(),
                        None if self.maybe_removed() => self.late(),
                        None => lost(
                            &self.lease,
                            "its lock cell was gone (expired or force-released)",
                        ),
                        Some(other) => lost_to(
                            &self.lease,
                            &format!("it had been taken over by {}", unique::owner_of(&other)),
                            Some(unique::owner_of(&other)),
                        ),
                    },
                };
                if mine {
                    // A late copy of our own insert put the record back: remove it.
                    self.phase = ReleasePhase::Remove(Some(error));
                    self.io.send(delete_mine(&self.lease));
                    return;
                }
                Err(error)
            }
            (ReleasePhase::Remove(Some(e)), Reply::Written | Reply::Conditional { .. }) => Err(e),
            (ReleasePhase::Remove(None), _) if !self.in_time() => Err(self.late()),
            (
                ReleasePhase::Remove(None),
                Reply::Written | Reply::Conditional { applied: true, .. },
            ) => Ok(()),
            (
                ReleasePhase::Remove(None),
                Reply::Conditional {
                    applied: false,
                    current,
                },
            ) => {
                if !self.checked() {
                    // The broken variant: a record found gone after a timed-out send is taken
                    // for our own release.
                    self.trusted_removal(current)
                } else {
                    // The check found the lease intact after the release started; whatever
                    // removed the record since (a copy of this compare-and-set whose answer was
                    // lost, a forced release) came after the holder stopped acting.
                    Ok(())
                }
            }
            (phase, reply) => Err(unexpected(&format!("release step {phase:?}"), &reply)),
        });
    }

    /// Whether the counter value `v` is a later grant's, with no forced release counted since
    /// our grant, nor one counted just before it (whose removal of our cell may have come
    /// after our grant: column prefix seeds 802451 and 847630 of the million-seed run).
    fn regranted_without_force(&self, v: &str) -> bool {
        if self.lease.data.after_forced {
            return false;
        }
        let (Ok(now), Ok(ours)) = (
            Fence::decode(v),
            Fence::decode(&self.lease.data.fence_value),
        ) else {
            return false;
        };
        now.owner != crate::record::FORCED && now.token > ours.token && now.forced == ours.forced
    }

    /// Whether `cells` hold our cell with our value.
    fn mine(&self, cells: &[crate::model::Cell]) -> bool {
        cells
            .iter()
            .any(|c| c.column == self.lease.data.column && c.value == self.lease.data.value)
    }

    /// The counter's value in `cells` that says the lease was lost ([`moved_counter`]), if
    /// one does.
    fn moved(&self, cells: &[crate::model::Cell]) -> Option<Moved> {
        moved_counter(&self.lease, cells)
    }

    /// Whether `moved` is only a later grant after our cell went away by our own removal (or
    /// its expiry): with no forced release on our path since our grant, nor just before it.
    /// Our own counter: [`Self::regranted_without_force`]; a related path's counter (paths):
    /// our own counter shows no forced release since ours.
    fn regranted(&self, moved: &Moved, cells: &[crate::model::Cell]) -> bool {
        if moved.own {
            return self.regranted_without_force(&moved.value);
        }
        let own = RowColumns::at(&self.lease.data.opts, self.lease.data.name.as_str()).fence;
        !self.lease.data.after_forced
            && cells.iter().find(|c| c.column == own).is_none_or(|c| {
                c.value == self.lease.data.fence_value || self.regranted_without_force(&c.value)
            })
    }

    /// What a read of the row made after the release started says: `None` when the lease was
    /// intact (our cell there, the counter as our grant left it), the loss otherwise.
    fn verdict(&self, cells: &[crate::model::Cell]) -> Option<Error> {
        match (self.mine(cells), self.moved(cells)) {
            (_, Some(m)) => Some(lost_to(
                &self.lease,
                &granted_since(&m.value),
                counter_owner(&m.value),
            )),
            (false, None) => Some(lost(
                &self.lease,
                "its lock cell was gone (expired or force-released)",
            )),
            (true, None) => None,
        }
    }

    /// Bakery and column prefix without a mutation: removal and check in one step.
    fn vacates(&self) -> bool {
        self.lease.data.opts.strategy != Strategy::UniqueInsert && self.mutation.is_empty()
    }

    fn ok(&mut self) {
        self.result = Some(Ok(()));
    }

    /// Whether the release is one guarded compare-and-set (unique insert without a mutation).
    fn guarded(&self) -> bool {
        self.lease.data.opts.strategy == Strategy::UniqueInsert && self.mutation.is_empty()
    }

    /// Unique insert's release: our record removed only while the counter is at our grant.
    fn guarded_remove(&self) -> Command {
        Command::GuardedSet {
            row: self.lease.data.row.clone(),
            column: self.lease.data.column.clone(),
            expected: self.lease.data.value.clone(),
            new: None,
            ttl: None,
            guard: RowColumns::at(&self.lease.data.opts, self.lease.data.name.as_str()).fence,
            guard_value: self.lease.data.fence_value.clone(),
            serial: self.lease.data.opts.serial,
            consistency: self.lease.data.opts.consistency,
        }
    }

    /// Whether this release reads the lock before removing (always, but for the broken variant).
    fn checked(&self) -> bool {
        self.lease.data.opts.sabotage() != Sabotage::ReleaseSkipsCheck
    }

    /// The broken variant's verdict on a compare-and-set that did not apply.
    fn trusted_removal(&self, current: Option<String>) -> Result<()> {
        match current {
            _ if self.io.maybe_applied() => Ok(()),
            Some(v) => Err(lost(
                &self.lease,
                &format!("it had been taken over by {}", unique::owner_of(&v)),
            )),
            None => Err(lost(
                &self.lease,
                "its record was already gone (released before, force-released, or expired)",
            )),
        }
    }
}

impl Operation for Release {
    type Output = ();

    fn poll(&mut self, now: Instant) -> Poll<()> {
        self.started.get_or_insert(now);
        loop {
            if let Some(result) = &self.result {
                if self.removed_before
                    && self.lease.data.opts.sabotage() == Sabotage::ElsewhereReleaseTrusted
                    && result.as_ref().is_err_and(|e| e.kind() == ErrorKind::Lost)
                {
                    return Poll::Ready(Ok(()));
                }
                return Poll::Ready(result.clone().map_err(|e| named(e, &self.lease)));
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Done(Err(e), _) => self.result = Some(Err(e)),
                IoPoll::Done(Ok(reply), _) => self.on_reply(reply),
                IoPoll::Idle if matches!(self.phase, ReleasePhase::Start) => {
                    if self.checked() && self.guarded() {
                        self.phase = ReleasePhase::Guarded;
                        let command = self.guarded_remove();
                        self.io.send(command);
                    } else if self.checked() && self.vacates() {
                        self.phase = ReleasePhase::Vacate;
                        self.io.send(Command::Vacate {
                            row: self.lease.data.row.clone(),
                            column: self.lease.data.column.clone(),
                            read: check_read_filter(&self.lease),
                            consistency: self.lease.data.opts.consistency,
                        });
                    } else if self.checked() {
                        self.phase = ReleasePhase::Check;
                        self.io.send(check_read(&self.lease));
                    } else {
                        self.phase = ReleasePhase::Remove(None);
                        let command = self.remove_command();
                        self.io.send(command);
                    }
                }
                IoPoll::Idle => {
                    self.result = Some(Err(Error::new(
                        ErrorKind::Internal,
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
