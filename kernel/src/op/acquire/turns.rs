//! Unique insert's *turns* ([`LockOptions::turns`](crate::LockOptions::turns)): the next grant
//! reserved for one waiter that was passed over, so that on a store that cannot wake waiters
//! (Cassandra) the client that releases and locks again at once stops winning every hand-off.
//!
//! - **The cell.** [`TURN_COLUMN`] in the lock's row holds one waiter's turn value (its owner
//!   and acquisition), written with a plain put and a TTL of [`TURN_TTL`]. A waiter writes it
//!   when a look (below) finds the lock held, no live turn, and itself passed over at least
//!   once (aging's count); it writes it again when its look finds its own turn with less than
//!   half of [`TURN_TTL`] left. Two waiters writing at once: the last write wins, and the other
//!   sees it at its next look.
//! - **Every claim carries a condition on it** ([`Turn`]): no live turn, or, when our last
//!   look found ours, exactly ours, which the claim then removes in the same step. The looping
//!   releaser's claim therefore fails while someone is reserved (answered as not applied with
//!   the lock free and the counter as expected, which nothing else answers) and it becomes a
//!   waiter. The condition is on a cell of the same row, in the same step: an uncontended lock
//!   + release stays at two conditional writes.
//! - **Looks.** With turns, a retry that ends a back-off (not one a wake-up started) reads the
//!   row first, at the plain consistency, and claims only if the lock is free and the turn is
//!   nobody's or ours. A waiter's poll is then a read, which takes no part in Paxos (with
//!   Paxos v1, concurrent conditional writes on one partition make each other back off).
//! - **The reserved waiter polls fast**: once a round trip (at least [`TURN_POLL_MIN`], at most
//!   an eighth of [`TURN_TTL`]); the others keep aging's pace.
//!
//! **Safety does not rest on it.** A claim still applies only if the lock cell is absent and
//! the counter holds exactly the value expected; the turn only adds a condition, so it can
//! make a claim fail, never succeed where it would not have. A lost, late or reordered write
//! of the turn (plain writes and conditional ones order by timestamps, not ballots, and a
//! client's clock may be skewed) misplaces a turn or makes claims wait for up to [`TURN_TTL`]
//! of the store's clock, nothing more: a reservation nobody refreshes stops blocking claims
//! when its TTL ends. A waiter that gives up while reserved leaves its turn to expire.
//! `Sabotage::TurnOverridesLock`, a waiter that takes its turn for a grant, is the broken
//! variant the simulator must catch.

use alloc::format;
use alloc::string::String;
use core::time::Duration;

use super::{Acquire, Phase};
use crate::error::{Error, ErrorKind};
use crate::model::{Cell, Command, ReadConsistency, Turn};
use crate::options::{Sabotage, Strategy};
use crate::reserved::TURN_COLUMN;
use crate::time::Instant;

/// How long a turn lives unless its waiter writes it again. Cassandra's TTLs are whole
/// seconds: a waiter that died while reserved holds up the others this long at most.
pub const TURN_TTL: Duration = Duration::from_secs(1);

/// The shortest wait between the reserved waiter's looks.
pub const TURN_POLL_MIN: Duration = Duration::from_millis(1);

/// The turn cell as our last look found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TurnSeen {
    /// No live turn.
    Nobody,
    /// Ours, with this much time to live left (`None`: no TTL).
    Ours(Option<Duration>),
    /// Another waiter's.
    Other,
}

/// One acquisition's turn.
#[derive(Debug, Default)]
pub(super) struct Turns {
    /// We hold the turn as far as we know: we wrote it, and no look or claim since showed
    /// otherwise. A claim then expects it, and we poll at the reserved pace.
    pub(super) holding: bool,
    /// The turn cell as the last look found it, until the look's outcome is decided.
    pub(super) seen: Option<TurnSeen>,
}

impl Acquire {
    /// Whether this acquisition uses turns.
    pub(super) fn uses_turns(&self) -> bool {
        self.opts.turns == Some(true)
            && self.opts.strategy == Strategy::UniqueInsert
            && self.opts.sabotage() != Sabotage::FenceBlindWrite
    }

    /// The value our turn cell holds: our owner and acquisition.
    fn turn_value(&self) -> String {
        format!("{} acq={:x}", self.owner.key(), self.opts.acquisition)
    }

    /// The turn condition of our next claim (`None` without turns).
    pub(super) fn turn_condition(&self) -> Option<Turn> {
        if !self.uses_turns() {
            return None;
        }
        Some(if self.turns.holding {
            Turn::Ours(self.turn_value())
        } else {
            Turn::Free
        })
    }

    /// A retry that ends a back-off: reads the row (plain) before claiming.
    pub(super) fn look(&mut self) {
        self.phase = Phase::UniqueLook;
        self.io.send(Command::Read {
            row: self.row(),
            filter: crate::model::ColumnFilter::All,
            consistency: ReadConsistency::Plain(self.opts.consistency),
        });
    }

    /// The look's cells: claim, wait (taking the turn if it is due), or wait for the waiter
    /// whose turn it is.
    pub(super) fn on_look(&mut self, cells: alloc::vec::Vec<Cell>, now: Instant) {
        let (mut current, mut counter, mut turn) = (None, None, TurnSeen::Nobody);
        let ours = self.turn_value();
        for cell in cells {
            if cell.column == self.column {
                current = Some(cell.value);
            } else if cell.column == self.columns.fence {
                counter = Some(cell.value);
            } else if cell.column == TURN_COLUMN {
                turn = if cell.value == ours {
                    TurnSeen::Ours(cell.ttl_remaining)
                } else {
                    TurnSeen::Other
                };
            }
        }
        // A guess, as a hint's is: a claim from a stale one fails and shows the value.
        if counter.is_some() {
            self.unique.counter_seen.clone_from(&counter);
        }
        self.turns.holding = matches!(turn, TurnSeen::Ours(_));
        match current {
            Some(current) => {
                if self.turns.holding && self.opts.sabotage() == Sabotage::TurnOverridesLock {
                    return self.override_lock();
                }
                self.turns.seen = Some(turn);
                let seen = alloc::vec![counter.unwrap_or_else(|| current.clone())];
                self.unique_taken(current, seen, now);
            }
            None if turn == TurnSeen::Other => self.contended(now, self.reserved_for_another()),
            None => self.claim(),
        }
    }

    /// The lock is held and our cell is not in the way: wait, taking the turn first if our
    /// last look found it due (nobody's and we were passed over, or ours and soon to end).
    pub(super) fn wait_behind(&mut self, busy: Error, now: Instant) {
        let due = match self.turns.seen.take() {
            Some(TurnSeen::Nobody) => self.fair.aging.passed_over(),
            Some(TurnSeen::Ours(left)) => left.is_none_or(|left| left < TURN_TTL / 2),
            Some(TurnSeen::Other) | None => false,
        };
        if !due {
            return self.contended(now, busy);
        }
        self.phase = Phase::TurnTake(busy);
        self.io.send(Command::Put {
            row: self.row(),
            column: TURN_COLUMN.into(),
            value: self.turn_value(),
            ttl: Some(TURN_TTL),
            consistency: self.opts.consistency,
        });
    }

    /// Our turn is written: wait for the lock at the reserved pace.
    pub(super) fn turn_taken(&mut self, busy: Error, now: Instant) {
        self.turns.holding = true;
        self.contended(now, busy);
    }

    /// A claim answered "not applied" with the lock free and the counter as expected: its turn
    /// condition failed (someone else's turn, or ours ended).
    pub(super) fn turn_refused(&mut self, now: Instant) {
        self.turns.holding = false;
        self.contended(now, self.reserved_for_another());
    }

    /// The wait before the next look of a waiter holding the turn: about a round trip.
    pub(super) fn turn_pace(&self) -> Option<Duration> {
        self.turns
            .holding
            .then(|| self.round_trip.clamp(TURN_POLL_MIN, TURN_TTL / 8))
    }

    fn reserved_for_another(&self) -> Error {
        Error::new(
            ErrorKind::Busy,
            format!(
                "the next grant of lock {:?} is reserved for another waiter",
                self.name.as_str()
            ),
        )
    }

    /// The broken variant: our record written over the holder's, then the counter moved.
    fn override_lock(&mut self) {
        self.new_record_value();
        self.phase = Phase::UniqueOverride;
        self.io.send(Command::Put {
            row: self.row(),
            column: self.column.clone(),
            value: self.value.clone(),
            ttl: Some(self.opts.ttl),
            consistency: self.opts.consistency,
        });
    }
}
