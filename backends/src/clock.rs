//! The monotonic clock a [`Locker`](crate::Locker) hands to the kernel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton_kernel::Instant;

/// How far "never" is when a kernel instant does not fit a tokio instant (about 30 years, as
/// tokio itself uses for far-future timers).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Kernel [`Instant`]s from [`tokio::time::Instant`], relative to an epoch fixed when the clock
/// is created.
///
/// Each [`Locker`](crate::Locker) has its own clock: lease deadlines are instants of it. It reads
/// tokio's clock so that tests under `tokio::time::pause()` are deterministic; the epoch is per
/// clock, not per process, because a paused and an unpaused runtime in one process disagree
/// about what "now" is. Readings never go backwards, even if a clock is read from runtimes whose
/// clocks disagree (the kernel requires a monotonic `now`).
#[derive(Clone, Debug)]
pub struct Clock {
    epoch: tokio::time::Instant,
    last: Arc<AtomicU64>,
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Clock {
            epoch: tokio::time::Instant::now(),
            last: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.epoch);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let previous = self.last.fetch_max(nanos, Ordering::Relaxed);
        Instant::from_nanos(nanos.max(previous))
    }

    /// The tokio instant of a kernel instant (far in the future for [`Instant::MAX`]).
    pub fn to_tokio(&self, at: Instant) -> tokio::time::Instant {
        let offset = Duration::from_nanos(at.as_nanos());
        self.epoch
            .checked_add(offset)
            .filter(|_| offset < FAR_FUTURE)
            .unwrap_or_else(|| tokio::time::Instant::now() + FAR_FUTURE)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_tokio_time_and_converts_back() {
        let clock = Clock::new();
        assert_eq!(clock.now(), Instant::ZERO);
        tokio::time::advance(Duration::from_millis(1500)).await;
        let now = clock.now();
        assert_eq!(now, Instant::from_nanos(1_500_000_000));
        assert_eq!(clock.to_tokio(now), tokio::time::Instant::now());
        assert!(clock.to_tokio(Instant::MAX) > tokio::time::Instant::now() + FAR_FUTURE / 2);
    }
}
