//! Retry policy, exponential backoff, and the seeded jitter generator.

use alloc::format;
use core::time::Duration;

use crate::error::{Error, Result};

/// How often to retry, and how long to wait between attempts.
///
/// The n-th wait is drawn uniformly from `[d/2, d]` where `d = min(initial * 2^n, max)`
/// ("equal jitter"): never zero, never more than `max`, and spread so contenders that collided
/// once are unlikely to collide again. ScaleOut's polling retry (count x interval) is
/// `RetryPolicy { initial: interval, max: interval, max_attempts: Some(count),
/// ..RetryPolicy::default() }`.
///
/// A unique-insert or column-prefix waiter that the lock keeps passing over (it changed hands
/// while we waited) waits less than this as it ages, on stores that do not wake their waiters:
/// down to a quarter of 32 ms or of 8 round trips, whichever is longer (of `max` if that is
/// shorter), never below `initial` (see the kernel's `aging` module). So even with the default
/// 1 s `max` a waiter stays in the race for a lock that changes hands every few milliseconds
/// (Cassandra, one node, 8 clients, Paxos v2: Jain's index 0.89–0.93 for unique insert,
/// 0.95–0.98 for column prefix; with Paxos v1, 0.62–0.71 and 0.90–0.98).
///
/// A bakery waiter that holds a ticket backs off the same way between reads of the queue, but
/// capped by `queue_poll` as well: it only reads (no conditional write competes with the
/// holder), and the lock passes to it no sooner than its next read, so on a store that cannot
/// wake waiters (Cassandra, or another process's SQL pool) the cap bounds each hand-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// The first wait; default 10 ms.
    pub initial: Duration,
    /// The cap on any wait; default 1 s.
    pub max: Duration,
    /// The most acquisition attempts, or `None` for as many as the wait timeout allows.
    pub max_attempts: Option<u32>,
    /// The cap on a bakery waiter's wait between reads of the queue; default 100 ms (`max`
    /// caps it too, and it is never below `initial`). Eight waiters cost at most about 80 reads
    /// a second at the default.
    pub queue_poll: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial: Duration::from_millis(10),
            max: Duration::from_secs(1),
            max_attempts: None,
            queue_poll: Duration::from_millis(100),
        }
    }
}

impl RetryPolicy {
    /// Checks the policy, naming the first field out of range.
    pub fn validate(&self) -> Result<()> {
        if self.initial.is_zero() {
            return Err(Error::invalid_option(
                "retry initial interval must be more than zero",
            ));
        }
        if self.max < self.initial {
            return Err(Error::invalid_option(format!(
                "retry max interval {:?} is less than the initial interval {:?}",
                self.max, self.initial
            )));
        }
        if self.queue_poll.is_zero() {
            return Err(Error::invalid_option(
                "retry queue_poll (a bakery waiter's cap between reads) must be more than zero",
            ));
        }
        if self.max_attempts == Some(0) {
            return Err(Error::invalid_option(
                "retry max_attempts must be at least 1",
            ));
        }
        Ok(())
    }

    /// The wait before attempt `attempt + 1` (attempt counts from 0), jittered by `rng`.
    pub fn delay(&self, attempt: u32, rng: &mut SplitMix64) -> Duration {
        Self::jittered(self.initial, self.max, attempt, rng)
    }

    /// The wait before a bakery waiter's read of the queue number `poll + 1`: as
    /// [`RetryPolicy::delay`], capped by `queue_poll` as well.
    pub fn queue_delay(&self, poll: u32, rng: &mut SplitMix64) -> Duration {
        let cap = self.max.min(self.queue_poll).max(self.initial);
        Self::jittered(self.initial, cap, poll, rng)
    }

    fn jittered(initial: Duration, cap: Duration, attempt: u32, rng: &mut SplitMix64) -> Duration {
        let shift = attempt.min(31);
        Self::jitter(initial.saturating_mul(1u32 << shift).min(cap), rng)
    }

    /// A wait drawn uniformly from `[d/2, d]` ("equal jitter").
    pub(crate) fn jitter(d: Duration, rng: &mut SplitMix64) -> Duration {
        let half = d / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(rng.below(nanos.saturating_add(1)))
    }
}

/// A small, fast, seedable generator (SplitMix64). The kernel's only source of "randomness":
/// the caller seeds it, so simulations replay exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_are_capped_and_jittered() {
        let p = RetryPolicy {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(80),
            max_attempts: None,
            ..RetryPolicy::default()
        };
        let mut rng = SplitMix64::new(7);
        for attempt in 0..40 {
            let cap = Duration::from_millis(10)
                .saturating_mul(1 << attempt.min(31))
                .min(Duration::from_millis(80));
            let d = p.delay(attempt, &mut rng);
            assert!(
                d >= cap / 2 && d <= cap,
                "attempt {attempt}: {d:?} not in [{:?}, {cap:?}]",
                cap / 2
            );
        }
    }

    #[test]
    fn queue_polls_are_capped_by_queue_poll_and_max_never_below_initial() {
        let mut rng = SplitMix64::new(11);
        let ms = Duration::from_millis;
        // (initial, max, queue_poll) -> the cap of a queue poll's wait
        for (initial, max, queue_poll, cap) in [
            (ms(10), ms(1000), ms(100), ms(100)),
            (ms(10), ms(50), ms(100), ms(50)),
            (ms(200), ms(1000), ms(100), ms(200)),
        ] {
            let p = RetryPolicy {
                initial,
                max,
                queue_poll,
                max_attempts: None,
            };
            for poll in 0..40 {
                let d = p.queue_delay(poll, &mut rng);
                assert!(
                    d <= cap && d >= initial.min(cap) / 2,
                    "{p:?}, poll {poll}: {d:?} is over the cap {cap:?} or under half of initial"
                );
            }
            assert!(
                p.queue_delay(39, &mut rng) >= cap / 2,
                "{p:?}: reaches the cap"
            );
        }
    }

    #[test]
    fn invalid_policies_are_named() {
        let bad = [
            RetryPolicy {
                initial: Duration::ZERO,
                ..RetryPolicy::default()
            },
            RetryPolicy {
                max: Duration::from_millis(1),
                ..RetryPolicy::default()
            },
            RetryPolicy {
                max_attempts: Some(0),
                ..RetryPolicy::default()
            },
            RetryPolicy {
                queue_poll: Duration::ZERO,
                ..RetryPolicy::default()
            },
        ];
        for p in bad {
            assert!(p.validate().is_err(), "{p:?}");
        }
    }

    #[test]
    fn generator_is_deterministic() {
        let a: alloc::vec::Vec<u64> = (0..4)
            .scan(SplitMix64::new(1), |r, _| Some(r.next_u64()))
            .collect();
        let b: alloc::vec::Vec<u64> = (0..4)
            .scan(SplitMix64::new(1), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert!(SplitMix64::new(3).below(10) < 10);
    }
}
