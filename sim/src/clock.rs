//! Client clocks: each client's monotonic clock runs at its own rate from its own origin, and
//! may have stopped while the client was suspended.

/// A client's monotonic clock: `local(t) = origin + t * (1 + ppm / 1e6) - stopped` for
/// simulated time `t`, where `stopped` is the time it did not count while the host was
/// suspended (zero for a clock that counts suspension, as `CLOCK_BOOTTIME` does).
#[derive(Clone, Copy, Debug)]
pub struct ClientClock {
    origin: u64,
    ppm: i64,
    stopped: u64,
    /// Offset of this client's wall clock from the true one, in ms (skew).
    pub wall_skew_ms: i64,
    /// The last write stamp this client gave (microseconds of its wall clock, kept increasing).
    last_stamp: u64,
}

const MILLION: i128 = 1_000_000;

impl ClientClock {
    /// A clock with this origin (ns), rate error (parts per million) and wall-clock skew (ms).
    pub fn new(origin: u64, ppm: i64, wall_skew_ms: i64) -> Self {
        ClientClock {
            origin,
            ppm,
            stopped: 0,
            wall_skew_ms,
            last_stamp: 0,
        }
    }

    /// The clock did not count `d` ns (a suspension, under `CLOCK_MONOTONIC`).
    pub fn stop_for(&mut self, d: u64) {
        self.stopped = self.stopped.saturating_add(d);
    }

    /// The client's monotonic reading at simulated time `t`.
    pub fn local(&self, t: u64) -> u64 {
        let scaled = i128::from(t) * (MILLION + i128::from(self.ppm)) / MILLION;
        let reading = i128::from(self.origin) + scaled - i128::from(self.stopped);
        u64::try_from(reading.max(0)).unwrap_or(u64::MAX)
    }

    /// A write stamp at simulated time `t`: the client's wall clock in microseconds, at least
    /// one more than the last, as the Rust stores' process-wide generator gives.
    pub fn stamp(&mut self, t: u64) -> u64 {
        let wall_us = self.wall_ms(t) * 1_000 + (t / 1_000) % 1_000;
        self.last_stamp = wall_us.max(self.last_stamp + 1);
        self.last_stamp
    }

    /// The first simulated time at which the client's clock reads at least `local`.
    pub fn sim(&self, local: u64) -> u64 {
        if local == u64::MAX {
            return u64::MAX;
        }
        let since = i128::from(local) + i128::from(self.stopped) - i128::from(self.origin);
        if since <= 0 {
            return 0;
        }
        let rate = MILLION + i128::from(self.ppm);
        let mut t = since * MILLION / rate;
        while i128::from(self.local(u64::try_from(t).unwrap_or(u64::MAX))) < i128::from(local) {
            t += 1;
        }
        u64::try_from(t).unwrap_or(u64::MAX)
    }

    /// The client's wall clock in Unix ms at simulated time `t`.
    pub fn wall_ms(&self, t: u64) -> u64 {
        let base: i64 = 1_763_700_000_000;
        u64::try_from(base + self.wall_skew_ms + i64::try_from(t / 1_000_000).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_inverts_local() {
        for ppm in [-2000, 0, 1500] {
            let c = ClientClock::new(5_000, ppm, 0);
            for t in [0u64, 1, 999_999, 123_456_789_012] {
                let l = c.local(t);
                let back = c.sim(l);
                assert!(
                    back <= t && c.local(back) >= l,
                    "ppm {ppm} t {t} back {back}"
                );
            }
        }
    }
}
