//! Which wake-ups a waiting acquisition answers at once, so that a release seen by many
//! waiters does not send every one of them to the store.
//!
//! A store that signals changes (PostgreSQL's `NOTIFY`, the memory store) wakes every waiter
//! of a table at every release. Each woken waiter tries again, and all but one find the lock
//! taken: with `n` waiters, a hand-off costs the store `n` attempts, and the waiters' wake-ups
//! and attempts compete for the same CPUs as the hand-off itself.
//!
//! The rule, per acquisition:
//! - a wake-up that comes long after the previous one (more than [`BUSY_WAKES`] of our round
//!   trips; releases are rare, so the herd is cheap) is always answered: a waiter never waits
//!   for its back-off when a release it could take was signalled;
//! - while releases come fast, a waiter that has lost `k` races after wake-ups answers one with
//!   probability `1/4^k` (never less than 1 in 2^[`MAX_HALVINGS`]), and otherwise keeps sleeping
//!   until the next wake-up or the end of its back-off.
//!
//! Every new acquisition starts by answering, so a client that loops lock and release joins
//! the herd afresh each time; quartering rather than halving keeps what its first lost races
//! cost the store near one attempt. Measured on PostgreSQL with 8 clients on one name
//! (`bench_sql`): throughput from about 30% to about 50% of one client's, Jain's index of
//! column prefix from 0.70–0.76 to 0.95–0.98.
//!
//! A waiter that has been woken at least once also keeps its plain back-off between wake-ups:
//! the shorter waits of a waiter passed over (the `aging` module) are for stores that never
//! wake their waiters.
//!
//! So a lone waiter, which never loses a race it was woken for, answers every wake-up, and in
//! a herd about one waiter answers each release. Waiters that have waited as long answer as
//! often, so none is starved; one that ignores a wake-up still retries at the end of its
//! back-off. This decides only when to try again, never whether a lock is granted: it cannot
//! make two holders.

use core::time::Duration;

use crate::retry::SplitMix64;
use crate::time::Instant;

/// Wake-ups closer together than this many round trips mean releases are coming fast.
pub(crate) const BUSY_WAKES: u32 = 16;

/// Halvings of the chance to answer a wake-up per race lost.
pub(crate) const HALVINGS_PER_LOSS: u32 = 2;

/// The most halvings of the chance to answer a wake-up (1 in 32).
pub(crate) const MAX_HALVINGS: u32 = 5;

/// One acquisition's record of its wake-ups.
#[derive(Clone, Debug, Default)]
pub(crate) struct Herd {
    /// Races lost after answering a wake-up.
    losses: u32,
    /// When the last wake-up came.
    last_wake: Option<Instant>,
}

impl Herd {
    /// A wake-up came at `now`: whether to try again at once. `round_trip` is how long our
    /// last reply took (zero before any).
    pub(crate) fn answer(
        &mut self,
        now: Instant,
        round_trip: Duration,
        rng: &mut SplitMix64,
    ) -> bool {
        let busy = self.last_wake.is_some_and(|last| {
            now.saturating_duration_since(last) <= round_trip.saturating_mul(BUSY_WAKES)
        });
        self.last_wake = Some(now);
        if !busy {
            return true;
        }
        let odds = 1u64
            << self
                .losses
                .saturating_mul(HALVINGS_PER_LOSS)
                .min(MAX_HALVINGS);
        rng.below(odds) == 0
    }

    /// Whether a wake-up came during this acquisition (the store signals changes).
    pub(crate) fn woken(&self) -> bool {
        self.last_wake.is_some()
    }

    /// An attempt made because of a wake-up found the lock taken.
    pub(crate) fn lost(&mut self) {
        self.losses = self.losses.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RT: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Instant {
        Instant::ZERO.saturating_add(Duration::from_millis(ms))
    }

    /// How many of `wakes` wake-ups, `every` ms apart, a herd member with `losses` answers.
    fn answered(losses: u32, wakes: u64, every: u64) -> u64 {
        let mut herd = Herd::default();
        for _ in 0..losses {
            herd.lost();
        }
        let mut rng = SplitMix64::new(7);
        (1..=wakes)
            .filter(|i| herd.answer(at(i * every), RT, &mut rng))
            .count() as u64
    }

    #[test]
    fn a_waiter_that_never_lost_answers_every_wake_up() {
        assert_eq!(answered(0, 1000, 1), 1000);
    }

    #[test]
    fn wake_ups_far_apart_are_always_answered() {
        let far = u64::from(BUSY_WAKES) + 1;
        assert_eq!(answered(10, 1000, far), 1000);
    }

    #[test]
    fn while_releases_come_fast_each_lost_race_quarters_the_answers_down_to_one_in_32() {
        // The first wake-up has no predecessor: always answered.
        for (losses, expected) in [(1, 2000), (2, 500), (3, 250), (9, 250)] {
            let got = answered(losses, 8001, 1) - 1;
            assert!(
                got.abs_diff(expected) <= expected / 5,
                "{losses} losses: {got} of 8000 answered, expected about {expected}"
            );
        }
    }

    #[test]
    fn the_first_wake_up_after_a_quiet_spell_is_answered() {
        let mut herd = Herd::default();
        for _ in 0..5 {
            herd.lost();
        }
        let mut rng = SplitMix64::new(1);
        assert!(herd.answer(at(0), RT, &mut rng));
        assert!(herd.answer(at(1000), RT, &mut rng));
    }
}
