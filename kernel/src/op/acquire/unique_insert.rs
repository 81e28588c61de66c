//! Unique insert's steps of an acquisition: the claim (the lock cell and the counter in one
//! step), a late insert of our own, and the serial read when the counter is unknown.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{millis, Acquire, Phase};
use crate::error::{Error, ErrorKind};
use crate::model::{Command, ReadConsistency, Reply};
use crate::options::Sabotage;
use crate::record::{Fence, LockRecord};
use crate::strategy::fence::FenceBump;
use crate::strategy::unique;
use crate::time::Instant;

impl Acquire {
    /// Unique insert: a value of its own for every send of a lock record (`att=N`): an insert
    /// the store applies late must not pass for a later one (its TTL started earlier).
    pub(super) fn new_record_value(&mut self) {
        self.unique.sends = self.unique.sends.saturating_add(1);
        if self.opts.sabotage() != Sabotage::SameValueEveryAttempt {
            self.record.att = self.unique.sends;
            self.value = self.record.encode();
        }
    }

    /// Unique insert: sends a claim (the lock cell and the counter in one step) from the
    /// counter value last seen.
    pub(super) fn claim(&mut self) {
        self.new_record_value();
        let bump = FenceBump::new(
            self.name.as_str(),
            &self.columns.fence,
            self.owner.key(),
            self.opts.acquisition,
            self.unique.counter_seen.as_deref(),
            false,
            self.opts.consistency,
            self.opts.serial,
        );
        match bump {
            Ok(bump) => {
                let turn = self.turn_condition();
                self.io
                    .send(bump.claim(&self.column, self.value.clone(), self.opts.ttl, turn));
                self.phase = Phase::UniqueClaim(bump);
            }
            // An unreadable counter value: let the store's own value replace it.
            Err(_) if self.unique.counter_seen.is_some() => {
                self.unique.counter_seen = None;
                self.unique.sends = self.unique.sends.saturating_sub(1);
                self.claim();
            }
            Err(e) => self.finish(Err(e)),
        }
    }

    /// Unique insert: reads the row back (serial) for the counter and our record.
    pub(super) fn read_fence(&mut self) {
        self.phase = Phase::FenceRead;
        self.io.send(Command::Read {
            row: self.row(),
            filter: crate::model::ColumnFilter::All,
            consistency: ReadConsistency::Serial(self.opts.serial),
        });
    }

    /// Unique insert: the lock holds `current`, not our record. `seen` names the acquisition
    /// that got the lock, for aging: the fencing counter where the reply carries it (it moves
    /// exactly when the lock changes hands), else the holder's record.
    pub(super) fn unique_taken(&mut self, current: String, seen: Vec<String>, now: Instant) {
        if self.uses_turns() {
            self.note_place();
        }
        let ours = LockRecord::decode(&current)
            .is_ok_and(|r| r.same_acquisition(&self.record) && r.att != self.record.att);
        if ours && self.opts.sabotage() != Sabotage::SameValueEveryAttempt {
            // An earlier attempt's insert, applied late: nobody believes in it. Remove
            // exactly that record, then try again at once.
            self.phase = Phase::UniqueClearOwn;
            self.io.send(Command::CompareAndSet {
                row: self.row(),
                column: self.column.clone(),
                expected: current,
                new: None,
                ttl: None,
                serial: self.opts.serial,
                consistency: self.opts.consistency,
            });
            return;
        }
        if self.opts.sabotage() == Sabotage::UniqueBlindDelete {
            let wall = self.opts.created_unix_ms + millis(self.waited(now));
            if unique::looks_expired(&current, wall) {
                self.phase = Phase::UniqueBlindDelete;
                let row = self.row();
                self.io.send(Command::Delete {
                    row,
                    column: self.column.clone(),
                    consistency: self.opts.consistency,
                });
                return;
            }
        }
        let busy = unique::busy(self.name.as_str(), Some(&current));
        self.fair.aging.found(seen);
        self.wait_behind(busy, now);
    }

    /// A reply to one of unique insert's commands.
    pub(super) fn on_unique_reply(
        &mut self,
        phase: Phase,
        reply: Reply,
        sent: Instant,
        now: Instant,
    ) {
        match (phase, reply) {
            (Phase::UniqueLook, Reply::Cells(cells)) => self.on_look(cells, now),
            (Phase::TurnTake(busy), Reply::Written) => self.turn_taken(busy, now),
            (Phase::UniqueOverride, Reply::Written) => {
                self.cell_written(sent);
                self.read_fence();
            }
            (
                Phase::UniqueClaim(bump),
                Reply::Guarded {
                    current: None,
                    guard,
                    ..
                },
            ) if self.turn_condition().is_some() && guard.as_deref() == bump.expected_text() => {
                // Free, the counter as we expected: only the turn condition refused the claim.
                self.wrote = false;
                self.turn_refused(now);
            }
            (Phase::UniqueClaim(bump), Reply::Guarded { current, guard, .. }) => {
                if current.as_deref() == Some(self.value.as_str()) {
                    // Our record is the lock's: inserted by this claim (or by an earlier send of
                    // it, settled by a serial read).
                    self.cell_written(sent);
                    if guard.as_deref() == Some(bump.next_value().as_str()) {
                        self.fence_value = bump.next_value();
                        self.after_forced = bump.follows_forced();
                        return self.won(bump.token(), now);
                    }
                    // The record went in without the counter (a store that found the counter
                    // changed under it): move the counter from the value the step found, after
                    // our record was in place, as a separate insert would.
                    return self.start_fence(guard, true);
                }
                self.wrote = false;
                if let Some(Err(e)) = guard.as_deref().map(Fence::decode) {
                    // A counter value no claim can start from (edited by hand, or written by
                    // a layout this build does not know): fail as the other strategies do,
                    // rather than claim from "no counter" and wait out the timeout as busy.
                    return self.finish(Err(e));
                }
                self.unique.counter_seen.clone_from(&guard);
                let seen: Vec<String> = guard.into_iter().collect();
                match current {
                    // Free, but the counter was not at the value we guessed: claim again from
                    // the value found, once per attempt.
                    None if self.unique.reclaims == 0 => {
                        self.unique.reclaims += 1;
                        self.claim();
                    }
                    None => {
                        // Someone took and released the lock between our two claims.
                        self.fair.aging.found(seen);
                        let busy = Error::new(
                            ErrorKind::Busy,
                            format!(
                                "the fencing counter of lock {:?} moved between this attempt's two claims (another client was granted the lock, or it was force-released)",
                                self.name.as_str()
                            ),
                        );
                        self.contended(now, busy);
                    }
                    Some(current) => self.unique_taken(current, seen, now),
                }
            }
            (Phase::UniqueInsert, Reply::Conditional { applied, current }) => {
                if applied || current.as_deref() == Some(self.value.as_str()) {
                    self.cell_written(sent);
                    return match self.fence_hint.take() {
                        Some(hint) => self.start_fence(Some(hint.value), false),
                        None => self.read_fence(),
                    };
                }
                self.wrote = false;
                let current = current.unwrap_or_default();
                self.unique_taken(current.clone(), alloc::vec![current], now);
            }
            (Phase::UniqueClearOwn, Reply::Conditional { .. }) => self.start_attempt(now),
            (Phase::UniqueBlindDelete, Reply::Written) => {
                self.attempts = self.attempts.saturating_sub(1);
                self.start_attempt(now);
            }
            (phase, reply) => self.unexpected_reply(&phase, &reply),
        }
    }
}

/// Unique insert's state across the claims of one acquisition.
#[derive(Debug, Default)]
pub(super) struct UniqueClaims {
    /// Unique insert: the counter's value as last seen (from the hint or a claim's reply);
    /// `None` until one is known, when a claim expects no counter.
    pub(super) counter_seen: Option<String>,
    /// Unique insert: the sends of a lock record so far (each gets a value of its own).
    pub(super) sends: u32,
    /// Unique insert: claims sent again at once in this attempt because the lock was free but
    /// the counter had moved.
    pub(super) reclaims: u32,
}
