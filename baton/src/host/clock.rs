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
/// there is no correction: docs/safety.md.
#[derive(Clone, Debug)]
pub struct Clock {
    epoch: tokio::time::Instant,
    suspended_at_epoch: Duration,
    last: Arc<AtomicU64>,
}

/// One reading of the time the host has spent suspended since it booted (`CLOCK_BOOTTIME -
/// CLOCK_MONOTONIC`): two clock reads. The two clocks cannot be read at once, so a reading is
/// too high by the time between its reads (more if the thread was preempted there); never too
/// low.
#[cfg(target_os = "linux")]
fn suspended_sample() -> Duration {
    use rustix::time::{clock_gettime, ClockId};
    let to = |t: rustix::time::Timespec| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_nsec).unwrap_or(0),
        )
    };
    let monotonic = to(clock_gettime(ClockId::Monotonic));
    let boottime = to(clock_gettime(ClockId::Boottime));
    boottime.saturating_sub(monotonic)
}

/// No portable way to tell: no correction.
#[cfg(not(target_os = "linux"))]
fn suspended_sample() -> Duration {
    Duration::ZERO
}

/// The time the host has spent suspended since it booted: the smaller of two readings, so that
/// a thread preempted between one reading's two clock reads does not count as a suspension.
fn suspended() -> Duration {
    suspended_sample().min(suspended_sample())
}

/// The suspension counted since a clock's creation, when it read `at_epoch`: zero below
/// [`SUSPENSION_NOISE`]. The same as measuring [`suspended`] against `at_epoch`, at half its
/// cost when there was no suspension (the usual case): a first reading under the noise
/// threshold settles it, since the smaller of two readings is no larger; only a reading over
/// it takes the second.
fn suspended_since(at_epoch: Duration) -> Duration {
    suspended_since_with(at_epoch, suspended_sample)
}

/// [`suspended_since`] with `sample` taking the readings.
fn suspended_since_with(at_epoch: Duration, mut sample: impl FnMut() -> Duration) -> Duration {
    let counted = |reading: Duration| match reading.saturating_sub(at_epoch) {
        noise if noise < SUSPENSION_NOISE => Duration::ZERO,
        slept => slept,
    };
    let first = counted(sample());
    if first.is_zero() {
        return Duration::ZERO;
    }
    first.min(counted(sample()))
}

/// Suspensions shorter than this are not counted: they are what reading two clocks one after
/// the other jitters by, and the default drift margin (1% of the TTL plus a millisecond) covers
/// them.
const SUSPENSION_NOISE: Duration = Duration::from_millis(1);

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Clock {
            epoch: tokio::time::Instant::now(),
            suspended_at_epoch: suspended(),
            last: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The current instant. Costs three clock reads (five after a suspension).
    pub fn now(&self) -> Instant {
        let slept = suspended_since(self.suspended_at_epoch);
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

    #[test]
    fn a_suspension_is_the_smaller_of_two_readings_and_noise_takes_one() {
        let ms = Duration::from_millis;
        let epoch = ms(100);
        let readings = |values: Vec<Duration>| {
            let mut taken = values.into_iter();
            let mut count = 0;
            let slept = suspended_since_with(epoch, || {
                count += 1;
                taken.next().expect("no more readings than given")
            });
            (slept, count)
        };
        // Under the noise threshold: nothing slept, and one reading settles it.
        assert_eq!(readings(vec![ms(100)]), (Duration::ZERO, 1));
        assert_eq!(
            readings(vec![epoch + SUSPENSION_NOISE - Duration::from_nanos(1)]),
            (Duration::ZERO, 1)
        );
        assert_eq!(
            readings(vec![ms(50)]),
            (Duration::ZERO, 1),
            "below the epoch"
        );
        // Over it: the second reading decides, as the smaller of the two.
        assert_eq!(readings(vec![ms(105), ms(100)]), (Duration::ZERO, 2));
        assert_eq!(readings(vec![ms(3100), ms(3105)]), (ms(3000), 2));
        assert_eq!(readings(vec![ms(3105), ms(3100)]), (ms(3000), 2));
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
