//! The write stamps of the database stores: one generator for the whole process.
//!
//! The kernel's storage model orders an owner's plain writes by the stamps their executor gives
//! them ([`Command::stamped`](baton_kernel::Command::stamped)), not by the order in which they
//! reach the store. The SQL and Cassandra stores take every stamp from [`next_stamp_after`], when they
//! send the command.

use std::sync::atomic::{AtomicU64, Ordering};

use baton_kernel::host::next_stamp;
use std::time::{SystemTime, UNIX_EPOCH};

/// The last stamp [`next_stamp_after`] returned (0 before the first).
static LAST: AtomicU64 = AtomicU64::new(0);

/// A fresh write stamp by the kernel's rule ([`next_stamp`]), greater than `floor` (a batch's
/// [`after`](baton_kernel::Command::Batch), 0 otherwise; the generator moves past it, so later
/// stamps stay greater too): microseconds since the Unix epoch by the wall clock, and **strictly
/// greater than every stamp returned before in this process**, from any thread and any store.
///
/// When the wall clock reads no later than the last stamp (several stamps in one microsecond,
/// or the clock stepped back), the stamp is the last one plus 1: stamps run ahead of the clock
/// until it catches up, and never repeat or go back. Cassandra's client-side timestamps follow
/// the same rule, and `WRITETIME` reads them back, so one generator serves every store.
///
/// What this gives: one process's writes of a cell are ordered by when it sent them. Across
/// processes stamps are only as well ordered as the hosts' clocks, which is enough because a
/// cell is written with plain writes by one owner only, and an owner lives in one process.
pub(crate) fn next_stamp_after(floor: u64) -> u64 {
    let now = now_micros();
    let previous = LAST
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
            Some(next_stamp(now, floor, last))
        })
        .unwrap_or_else(|last| last);
    next_stamp(now, floor, previous)
}

/// The wall clock in microseconds since the Unix epoch (0 before it).
fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_wall_clock_microseconds() {
        let before = now_micros();
        let stamp = next_stamp_after(0);
        let after = now_micros();
        // Ahead of the clock only by the stamps taken in the same microseconds.
        assert!(stamp >= before, "{stamp} < {before}");
        assert!(stamp <= after + 1_000_000, "{stamp} far ahead of {after}");
    }

    #[test]
    fn stamps_strictly_increase_across_threads() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let stamps: Vec<u64> = (0..10_000).map(|_| next_stamp_after(0)).collect();
                    assert!(stamps.windows(2).all(|w| w[0] < w[1]));
                    stamps
                })
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "a stamp was issued twice");
    }
}
