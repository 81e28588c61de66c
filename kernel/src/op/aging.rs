//! How often a waiter that keeps being passed over tries again, so that on a store that cannot
//! wake waiters the ones that waited longest are not the ones that try least.
//!
//! A waiter's back-off grows with its attempts (see [`RetryPolicy`]): a new waiter tries after
//! 1, 2, 4... `initial`s, an old one once per `max`. On a polling store the lock goes to whoever
//! tries in the short moment it is free, so newcomers, trying often, win most hand-offs, and a
//! client that releases and locks again in a loop, a newcomer at every lock, comes out ahead.
//! Measured with `bench_sql`, 8 clients looping on one name (retry 1 ms doubling to 20 ms):
//! Jain's index of unique insert on MariaDB 0.60–0.82 over three runs of the same build.
//!
//! The rule, per unique-insert or column-prefix acquisition on a store that has not woken it
//! (a woken waiter is told when to try, see the `herd` module): each time an attempt finds the
//! lock held by another acquisition than at its previous attempt (the lock changed hands without
//! us), the waiter is *passed over* once more. Its wait before the next attempt is then at most
//! `max / 2^k` (jittered as the back-off is, never below `initial`), where `k` is the smallest
//! of: the times it was passed over, the number of whole `max`es it has waited, and
//! [`MAX_HALVINGS`].
//!
//! - A waiter behind one long holder sees the same holder at every attempt and keeps its
//!   back-off: a lock held for hours costs no more reads than before.
//! - Only a lock that changes hands while we wait makes us try more often, and never more than
//!   `2^MAX_HALVINGS` times as often as the back-off's cap: with the default policy (1 s cap)
//!   at most 4 tries a second per waiter, after 2 s of being passed over.
//! - Measured as above, unique insert, over 7 runs of 2–3 s: Jain's index on MariaDB 0.87–0.98
//!   with 8 clients and 0.90–0.96 with 32, on SQLite 0.81–0.92 and 0.73–0.88; on Cassandra (8
//!   clients, a 20–50 ms cap) 0.88–0.94 against 0.78. The price is the passed-over waiters'
//!   extra tries, which cost throughput where the store is the bottleneck: MariaDB with 8
//!   clients keeps 60–73% of one client's acquisitions a second (80–90% without the rule), with
//!   32 21–31% (about 50%).
//! - Column prefix ages too, since its retries look before they write (see `column_prefix`):
//!   a retry that finds the lock held costs a read, not a write that others collide with.
//!
//! This decides only when to try again, never whether a lock is granted: it cannot make two
//! holders.
//!
//! [`RetryPolicy`]: crate::RetryPolicy

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use crate::retry::{RetryPolicy, SplitMix64};

/// The most halvings of a passed-over waiter's wait (`max / 4`).
pub(crate) const MAX_HALVINGS: u32 = 2;

/// One acquisition's record of the holders it found.
#[derive(Clone, Debug, Default)]
pub(crate) struct Aging {
    /// The cells that held the lock at our last attempt that found it taken (exact values:
    /// each acquisition, and each of its attempts, writes a value of its own).
    last_seen: Vec<String>,
    /// How many times the lock changed hands while we waited.
    passed_over: u32,
}

impl Aging {
    /// An attempt found the lock taken by `holders` (the values of the cells in the way; empty
    /// when unknown, which counts as no change).
    pub(crate) fn found(&mut self, holders: Vec<String>) {
        if holders.is_empty() {
            return;
        }
        let changed =
            !self.last_seen.is_empty() && !holders.iter().any(|h| self.last_seen.contains(h));
        if changed {
            self.passed_over = self.passed_over.saturating_add(1);
        }
        self.last_seen = holders;
    }

    /// The wait before the next attempt of an acquisition that has `waited` so far: `backoff`
    /// (the policy's), shortened for a waiter passed over (see the module doc).
    pub(crate) fn wait(
        &self,
        waited: Duration,
        backoff: Duration,
        policy: &RetryPolicy,
        rng: &mut SplitMix64,
    ) -> Duration {
        let maxes =
            u32::try_from(waited.as_nanos() / policy.max.as_nanos().max(1)).unwrap_or(u32::MAX);
        let halvings = self.passed_over.min(maxes).min(MAX_HALVINGS);
        if halvings == 0 {
            return backoff;
        }
        let cap = (policy.max / (1u32 << halvings)).max(policy.initial);
        backoff.min(RetryPolicy::jitter(cap, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    const MAX: Duration = Duration::from_millis(64);
    /// Long enough that time does not limit the halvings.
    const LONG: Duration = Duration::from_secs(60);

    fn policy() -> RetryPolicy {
        RetryPolicy {
            initial: Duration::from_millis(1),
            max: MAX,
            ..RetryPolicy::default()
        }
    }

    fn holders(values: &[&str]) -> Vec<String> {
        values.iter().map(ToString::to_string).collect()
    }

    fn passed_over(times: usize) -> Aging {
        let mut aging = Aging::default();
        for i in 0..=times {
            aging.found(alloc::vec![i.to_string()]);
        }
        aging
    }

    #[test]
    fn the_same_holder_keeps_the_back_off() {
        let mut aging = Aging::default();
        let mut rng = SplitMix64::new(1);
        for _ in 0..10 {
            aging.found(holders(&["a"]));
        }
        assert_eq!(aging.wait(LONG, MAX, &policy(), &mut rng), MAX);
    }

    #[test]
    fn each_change_of_hands_halves_the_longest_wait() {
        let mut rng = SplitMix64::new(2);
        for times in 1..=MAX_HALVINGS {
            let aging = passed_over(times as usize);
            let cap = MAX / (1 << times);
            for _ in 0..100 {
                let wait = aging.wait(LONG, MAX, &policy(), &mut rng);
                assert!(
                    wait <= cap && wait >= cap / 2,
                    "{wait:?} not in [{cap:?}/2, {cap:?}]"
                );
            }
        }
    }

    #[test]
    fn halvings_are_limited_by_time_waited_and_by_the_maximum() {
        let aging = passed_over(40);
        let mut rng = SplitMix64::new(3);
        // Passed over often, but waited less than one max: the back-off stands.
        assert_eq!(aging.wait(MAX / 2, MAX, &policy(), &mut rng), MAX);
        // One max waited: one halving.
        for _ in 0..100 {
            let wait = aging.wait(MAX + MAX / 2, MAX, &policy(), &mut rng);
            assert!(wait <= MAX / 2 && wait >= MAX / 4, "{wait:?}");
        }
        // However long: MAX_HALVINGS.
        for _ in 0..100 {
            let wait = aging.wait(LONG, MAX, &policy(), &mut rng);
            let cap = MAX / (1 << MAX_HALVINGS);
            assert!(wait <= cap && wait >= cap / 2, "{wait:?}");
        }
    }

    #[test]
    fn never_below_initial_and_never_above_the_back_off() {
        let aging = passed_over(40);
        let mut rng = SplitMix64::new(4);
        let tight = RetryPolicy {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(40),
            ..RetryPolicy::default()
        };
        for _ in 0..100 {
            let wait = aging.wait(LONG, Duration::from_millis(40), &tight, &mut rng);
            assert!(wait >= Duration::from_millis(10) && wait <= Duration::from_millis(20));
        }
        let short = Duration::from_micros(700);
        assert_eq!(aging.wait(LONG, short, &policy(), &mut rng), short);
    }

    #[test]
    fn a_holder_still_in_the_way_is_no_change() {
        let mut aging = Aging::default();
        let mut rng = SplitMix64::new(5);
        aging.found(holders(&["holder", "x"]));
        aging.found(holders(&["holder", "y"]));
        aging.found(holders(&[]));
        assert_eq!(aging.wait(LONG, MAX, &policy(), &mut rng), MAX);
    }
}
