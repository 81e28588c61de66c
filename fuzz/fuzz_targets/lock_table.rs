//! A hand-edited lock table must never panic a client.
//!
//! Feeds: a digit choosing the setup, then a lock table written as text, one cell a line
//! (`row<TAB>column<TAB>value[<TAB>ttl_ms]`, see `baton_fuzz::parse_table`): lock records,
//! bakery tickets, fencing counters, object cells, as a person (or another version of baton)
//! may have left them. The setup ([`setups`]: every strategy exclusive and flat; bakery and
//! column prefix shared, with paths) runs every operation a host runs on the table: inspect,
//! list, the whole life of a lock (acquire, renew, the object read and written, release),
//! object calls from outside the lock, purge, forced release, each against the reference table
//! answering truthfully.
//!
//! Asserts: no panic; every error has a message and is not `Internal`; every operation ends; a
//! conditional write expects, byte for byte, a value the kernel read or wrote (never a value it
//! decoded and encoded again, which a hand-written cell would never match).
#![no_main]

use baton_fuzz::{parse_table, scenario, table_of, Driver, Setup};
use baton_kernel::{Instant, Mode, Strategy};
use libfuzzer_sys::fuzz_target;

/// The setups a table is run under, by digit: '0' unique insert, '1' bakery, '3' column prefix,
/// each exclusive and flat, keep-alive on, trying once; '2' bakery and '4' column prefix shared
/// with paths, keep-alive off, waiting; '5' unique insert waiting, with turns (its retries
/// look at the row, and may write or take the `_NEXT_` cell).
fn setups() -> [Setup; 6] {
    let flat = |strategy| Setup {
        strategy,
        mode: Mode::Exclusive,
        paths: false,
        keep_alive: true,
        wait: false,
    };
    let shared = |strategy| Setup {
        strategy,
        mode: Mode::Shared,
        paths: true,
        keep_alive: false,
        wait: true,
    };
    [
        flat(Strategy::UniqueInsert),
        flat(Strategy::Bakery),
        shared(Strategy::Bakery),
        flat(Strategy::ColumnPrefix),
        shared(Strategy::ColumnPrefix),
        Setup {
            wait: true,
            ..flat(Strategy::UniqueInsert)
        },
    ]
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the setup ('0' to '5'; any byte counts, wrapping around), the rest
    // is the table: one scenario per input (the fuzzer mutates both), six times the
    // executions a second of running all six.
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let setups = setups();
    let setup = setups[usize::from(pick.wrapping_sub(b'0')) % setups.len()];
    let cells = parse_table(text);
    let start = Instant::from_nanos(1_000_000_000);
    let mut driver = Driver::new(table_of(&cells, start), start, None);
    scenario(&mut driver, setup);
});
