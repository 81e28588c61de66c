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
//! (a woken waiter is told when to try, see the `herd` module): each time an attempt finds that
//! the lock changed hands since our previous attempt, the waiter is *passed over* once more (up
//! to [`MAX_HALVINGS`]); each time it finds the same holder, once less. Unique insert tells
//! who got the lock by the fencing counter where the store's reply carries it (it moves exactly
//! when the lock changes hands, including between two claims that both found the lock free),
//! else by the holder's record; column prefix by the other columns' values (each acquisition,
//! and each of its attempts, writes a value of its own). While passed over `k` times, a waiter
//! waits at most `scale / 2^k` (jittered as the back-off is, never below `initial`), where `k`
//! is also at most the number of whole `scale`s it has waited (the longer it waited, the more
//! often it tries). The *scale* is [`HOT_WAIT`] (32 ms) or [`HOT_ROUND_TRIPS`] of our round
//! trips, whichever is longer, capped by `max`.
//!
//! - A waiter behind one long holder sees the same holder at every attempt and keeps its
//!   back-off: a lock held for hours costs no more reads than before.
//! - Only a lock that changes hands while we wait makes us try more often. A lock handed from
//!   one long job to the next shortens a waiter's next wait once, and the next attempt, finding
//!   the same job, gives it back its back-off.
//! - The scale does not depend on `max`, so the default policy (1 s cap) keeps waiters in the
//!   race for a lock that changes hands every few milliseconds: a waiter passed over twice
//!   tries every 8–16 ms at most (the default `initial`, 10 ms, bounds it below). With a cap on
//!   `max` alone (this rule's first version, `max / 4` at best) Jain's index on Cassandra, 8
//!   clients, default policy, was 0.13–0.35; with the scale, column prefix 0.90–0.98 and unique
//!   insert 0.89–0.93 with Paxos v2, 0.62–0.71 with v1 (whose contention on one partition
//!   leaves a client's LWT now and then waiting up to Cassandra's contention timeout).
//! - Measured with `bench_sql` as above (a 20 ms `max`, where the scale is `max`): Jain's
//!   index of unique insert on MariaDB 0.79–0.96 with 8 clients, SQLite 0.84–0.95; throughput
//!   with 8 clients 65–79% (MariaDB) and 70–84% (SQLite) of one client's. The price is the
//!   passed-over waiters' extra tries where the store is the bottleneck: MariaDB with 32
//!   clients keeps 20–30% of one client's rate (about 50% without the rule).
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

/// The most halvings of a passed-over waiter's wait (a quarter of the hot lock's scale).
pub(crate) const MAX_HALVINGS: u32 = 2;

/// The longest wait that still keeps a waiter in the race for a lock that changes hands while
/// it waits, on a store a few milliseconds away (see [`hot_scale`]).
pub(crate) const HOT_WAIT: Duration = Duration::from_millis(32);

/// How many of our round trips the hot scale spans at least, for stores far away.
pub(crate) const HOT_ROUND_TRIPS: u32 = 8;

/// The scale of a passed-over waiter's waits: `HOT_WAIT` or [`HOT_ROUND_TRIPS`] of our round
/// trips, whichever is longer, but never more than the policy's `max` nor less than its
/// `initial`.
fn hot_scale(round_trip: Duration, policy: &RetryPolicy) -> Duration {
    HOT_WAIT
        .max(round_trip.saturating_mul(HOT_ROUND_TRIPS))
        .min(policy.max)
        .max(policy.initial)
}

/// One acquisition's record of the holders it found.
#[derive(Clone, Debug, Default)]
pub(crate) struct Aging {
    /// The cells that held the lock at our last attempt that found it taken (exact values:
    /// each acquisition, and each of its attempts, writes a value of its own).
    last_seen: Vec<String>,
    /// Up to [`MAX_HALVINGS`]: one more each time an attempt finds that the lock changed hands
    /// since our previous attempt, one fewer each time it finds the same holder.
    passed_over: u32,
    /// Whether the lock changed hands between two of our attempts at least once.
    hot: bool,
}

impl Aging {
    /// An attempt found the lock taken by `holders` (the values of the cells in the way; empty
    /// when unknown, which counts as no change).
    pub(crate) fn found(&mut self, holders: Vec<String>) {
        if holders.is_empty() {
            return;
        }
        if !self.last_seen.is_empty() {
            self.passed_over = if holders.iter().any(|h| self.last_seen.contains(h)) {
                self.passed_over.saturating_sub(1)
            } else {
                self.hot = true;
                self.passed_over.saturating_add(1).min(MAX_HALVINGS)
            };
        }
        self.last_seen = holders;
    }

    /// Whether the lock changed hands since we started waiting more often than we found the
    /// same holder again: the waiter has been passed over.
    pub(crate) fn passed_over(&self) -> bool {
        self.passed_over > 0
    }

    /// The wait of a waiter on a hot lock (one that changed hands while we waited) whose polls
    /// are plain reads (unique insert's looks with turns): at most half the hot scale
    /// (jittered), whether or not the holder changed since our last look, so that a waiter is
    /// there to take the next turn. `None` on a lock that has not changed hands while we
    /// waited: a long holder costs no more reads than before.
    pub(crate) fn hot_look(
        &self,
        round_trip: Duration,
        policy: &RetryPolicy,
        rng: &mut SplitMix64,
    ) -> Option<Duration> {
        self.hot.then(|| {
            RetryPolicy::jitter(hot_scale(round_trip, policy) / 2, rng).max(policy.initial)
        })
    }

    /// The wait before the next attempt of an acquisition that has `waited` so far: `backoff`
    /// (the policy's), shortened for a waiter passed over (see the module doc). `round_trip`
    /// is how long our last reply took.
    pub(crate) fn wait(
        &self,
        waited: Duration,
        backoff: Duration,
        round_trip: Duration,
        policy: &RetryPolicy,
        rng: &mut SplitMix64,
    ) -> Duration {
        let scale = hot_scale(round_trip, policy);
        let scales = u32::try_from(waited.as_nanos() / scale.as_nanos().max(1)).unwrap_or(u32::MAX);
        let halvings = self.passed_over.min(scales);
        if halvings == 0 {
            return backoff;
        }
        let cap = (scale / (1u32 << halvings)).max(policy.initial);
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
    /// A round trip short enough that the scale is `HOT_WAIT` (or `max`).
    const RT: Duration = Duration::from_micros(500);

    fn policy(max: Duration) -> RetryPolicy {
        RetryPolicy {
            initial: Duration::from_millis(1),
            max,
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

    /// Asserts that 100 waits are all within `[cap / 2, cap]`.
    fn assert_capped(aging: &Aging, waited: Duration, policy: &RetryPolicy, cap: Duration) {
        let mut rng = SplitMix64::new(9);
        for _ in 0..100 {
            let wait = aging.wait(waited, policy.max, RT, policy, &mut rng);
            assert!(
                wait <= cap && wait >= cap / 2,
                "{wait:?} not in [{cap:?}/2, {cap:?}]"
            );
        }
    }

    #[test]
    fn the_same_holder_keeps_the_back_off() {
        let mut aging = Aging::default();
        let mut rng = SplitMix64::new(1);
        for _ in 0..10 {
            aging.found(holders(&["a"]));
        }
        assert_eq!(aging.wait(LONG, MAX, RT, &policy(MAX), &mut rng), MAX);
    }

    #[test]
    fn each_change_of_hands_halves_the_scale_up_to_the_maximum() {
        for times in 1..=MAX_HALVINGS + 3 {
            let k = times.min(MAX_HALVINGS);
            let cap = HOT_WAIT / (1 << k);
            assert_capped(&passed_over(times as usize), LONG, &policy(MAX), cap);
        }
    }

    #[test]
    fn the_scale_is_the_policy_max_when_that_is_shorter() {
        let short = Duration::from_millis(20);
        assert_capped(&passed_over(1), LONG, &policy(short), short / 2);
        assert_capped(&passed_over(2), LONG, &policy(short), short / 4);
    }

    #[test]
    fn the_default_policy_keeps_a_passed_over_waiter_in_the_race() {
        // A 1 s cap: the old rule's best was 250 ms; the scale brings it to `initial`.
        let policy = RetryPolicy::default();
        let mut rng = SplitMix64::new(6);
        let wait = passed_over(2).wait(LONG, policy.max, RT, &policy, &mut rng);
        assert!(wait <= policy.initial, "{wait:?}");
    }

    #[test]
    fn a_store_far_away_stretches_the_scale_to_its_round_trips() {
        let far = Duration::from_millis(20);
        let mut rng = SplitMix64::new(8);
        let policy = policy(Duration::from_secs(1));
        let scale = far * HOT_ROUND_TRIPS;
        for _ in 0..100 {
            let wait = passed_over(1).wait(LONG, policy.max, far, &policy, &mut rng);
            assert!(wait <= scale / 2 && wait >= scale / 4, "{wait:?}");
        }
    }

    #[test]
    fn halvings_are_limited_by_time_waited_in_scales() {
        let aging = passed_over(40);
        let mut rng = SplitMix64::new(3);
        // Passed over often, but waited less than one scale: the back-off stands.
        let wait = aging.wait(HOT_WAIT / 2, MAX, RT, &policy(MAX), &mut rng);
        assert_eq!(wait, MAX);
        // One scale waited: one halving.
        assert_capped(&aging, HOT_WAIT + HOT_WAIT / 2, &policy(MAX), HOT_WAIT / 2);
    }

    #[test]
    fn finding_the_same_holder_again_undoes_one_halving() {
        let mut aging = passed_over(5);
        aging.found(holders(&["5"]));
        assert_capped(&aging, LONG, &policy(MAX), HOT_WAIT / 2);
        aging.found(holders(&["5"]));
        let mut rng = SplitMix64::new(7);
        assert_eq!(aging.wait(LONG, MAX, RT, &policy(MAX), &mut rng), MAX);
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
            let wait = aging.wait(LONG, Duration::from_millis(40), RT, &tight, &mut rng);
            assert!(wait >= Duration::from_millis(10) && wait <= Duration::from_millis(20));
        }
        let short = Duration::from_micros(700);
        assert_eq!(aging.wait(LONG, short, RT, &policy(MAX), &mut rng), short);
    }

    #[test]
    fn a_holder_still_in_the_way_is_no_change_and_unknown_holders_tell_nothing() {
        let mut aging = Aging::default();
        let mut rng = SplitMix64::new(5);
        aging.found(holders(&["holder", "x"]));
        aging.found(holders(&["holder", "y"]));
        aging.found(holders(&[]));
        assert_eq!(aging.wait(LONG, MAX, RT, &policy(MAX), &mut rng), MAX);
    }
}
