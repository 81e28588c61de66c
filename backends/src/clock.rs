//! The monotonic clock a [`Locker`](crate::Locker) hands to the kernel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton_kernel::Instant;

/// How far "never" is when a kernel instant does not fit a tokio instant (about 30 years, as
/// tokio itself uses for far-future timers).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Kernel [`Instant`]s from [`tokio::time::Instant`], relative to an epoch fixed when the clock
/// is created, plus the time the host spent suspended since then.
///
/// Each [`Locker`](crate::Locker) has its own clock: lease deadlines are instants of it. It reads
/// tokio's clock so that tests under `tokio::time::pause()` are deterministic; the epoch is per
/// clock, not per process, because a paused and an unpaused runtime in one process disagree
/// about what "now" is. Readings never go backwards, even if a clock is read from runtimes whose
/// clocks disagree (the kernel requires a monotonic `now`).
///
/// **Suspension.** tokio's (and std's) clock is `CLOCK_MONOTONIC`, which stops while a laptop or
/// a VM is suspended; the store's clock does not, so a holder would wake believing in a lease
/// that expired while it slept. On Linux the clock adds the growth of
/// `CLOCK_BOOTTIME - CLOCK_MONOTONIC` since its creation (the time spent suspended), so a
/// suspended holder's lease ends on time; timers still sleep on tokio's clock, and wake late by
/// the suspension, which only makes the holder notice later, never believe longer. Elsewhere
/// there is no correction: README "Safety and its assumptions".
#[derive(Clone, Debug)]
pub struct Clock {
    epoch: tokio::time::Instant,
    suspended_at_epoch: Duration,
    last: Arc<AtomicU64>,
}

/// The time the host has spent suspended since it booted (`CLOCK_BOOTTIME - CLOCK_MONOTONIC`).
#[cfg(target_os = "linux")]
fn suspended() -> Duration {
    use rustix::time::{clock_gettime, ClockId};
    let to = |t: rustix::time::Timespec| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_nsec).unwrap_or(0),
        )
    };
    // The two clocks cannot be read at once: each sample is too high by the time between its
    // reads (more if the thread was preempted there), so take the smaller of two.
    let sample = || {
        let monotonic = to(clock_gettime(ClockId::Monotonic));
        let boottime = to(clock_gettime(ClockId::Boottime));
        boottime.saturating_sub(monotonic)
    };
    sample().min(sample())
}

/// Suspensions shorter than this are not counted: they are what reading two clocks one after
/// the other jitters by, and the default drift margin (1% of the TTL plus a millisecond) covers
/// them.
const SUSPENSION_NOISE: Duration = Duration::from_millis(1);

/// No portable way to tell: no correction.
#[cfg(not(target_os = "linux"))]
fn suspended() -> Duration {
    Duration::ZERO
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Clock {
            epoch: tokio::time::Instant::now(),
            suspended_at_epoch: suspended(),
            last: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        let slept = match suspended().saturating_sub(self.suspended_at_epoch) {
            noise if noise < SUSPENSION_NOISE => Duration::ZERO,
            slept => slept,
        };
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.epoch) + slept;
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

    #[cfg(target_os = "linux")]
    #[test]
    fn boottime_runs_at_least_as_fast_as_monotonic() {
        // Without a suspension in between, the two clocks advance together (within a read).
        let a = suspended();
        let b = suspended();
        assert!(b + Duration::from_millis(5) >= a, "{a:?} then {b:?}");
    }
}
