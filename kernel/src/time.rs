//! Time as the kernel sees it: instants handed in by the caller, never read from a clock.

use core::fmt;
use core::time::Duration;

/// A point on the caller's monotonic clock, in nanoseconds since an epoch the caller chooses.
///
/// The kernel never reads a clock. Drivers convert their own monotonic clock (for example
/// `std::time::Instant` relative to a process-wide epoch) into `Instant`s and pass them to
/// [`Operation::poll`](crate::Operation::poll). Only differences between instants are meaningful.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant, used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `d` after the epoch (saturating at [`Instant::MAX`]).
    pub fn from_duration(d: Duration) -> Self {
        Instant(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Self {
        let add = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(add))
    }

    /// `self - d`, saturating at [`Instant::ZERO`].
    pub fn saturating_sub(self, d: Duration) -> Self {
        let sub = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_sub(sub))
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{}.{:06}ms", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(
            Instant::MAX.saturating_add(Duration::from_secs(1)),
            Instant::MAX
        );
        assert_eq!(
            Instant::ZERO.saturating_sub(Duration::from_secs(1)),
            Instant::ZERO
        );
        let a = Instant::from_nanos(5);
        assert_eq!(
            a.saturating_duration_since(Instant::from_nanos(9)),
            Duration::ZERO
        );
        assert_eq!(Instant::from_duration(Duration::MAX), Instant::MAX);
    }
}
