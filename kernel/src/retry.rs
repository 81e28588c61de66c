//! Retry policy, exponential backoff, and the seeded jitter generator.

use alloc::format;
use core::time::Duration;

use crate::error::{Error, Result};

/// How often to retry, and how long to wait between attempts.
///
/// The n-th wait is drawn uniformly from `[d/2, d]` where `d = min(initial * 2^n, max)`
/// ("equal jitter"): never zero, never more than `max`, and spread so contenders that collided
/// once are unlikely to collide again. ScaleOut's polling retry (count x interval) is
/// `RetryPolicy { initial: interval, max: interval, max_attempts: Some(count) }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// The first wait; default 10 ms.
    pub initial: Duration,
    /// The cap on any wait; default 1 s.
    pub max: Duration,
    /// The most acquisition attempts, or `None` for as many as the wait timeout allows.
    pub max_attempts: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial: Duration::from_millis(10),
            max: Duration::from_secs(1),
            max_attempts: None,
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
        if self.max_attempts == Some(0) {
            return Err(Error::invalid_option(
                "retry max_attempts must be at least 1",
            ));
        }
        Ok(())
    }

    /// The wait before attempt `attempt + 1` (attempt counts from 0), jittered by `rng`.
    pub fn delay(&self, attempt: u32, rng: &mut SplitMix64) -> Duration {
        let shift = attempt.min(31);
        let d = self.initial.saturating_mul(1u32 << shift).min(self.max);
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
