//! A hand-edited lock table must never panic a client.
//!
//! Feeds: a lock table written as text, one cell a line (`row<TAB>column<TAB>value[<TAB>ttl_ms]`,
//! see `baton_fuzz::parse_table`): lock records, bakery tickets, fencing counters, object cells,
//! as a person (or another version of baton) may have left them. Every strategy, exclusive and
//! (bakery, column prefix) shared, flat and with paths, runs every operation a host runs on it:
//! inspect, list, the whole life of a lock (acquire, renew, the object read and written,
//! release), object calls from outside the lock, purge, forced release, each against the
//! reference table answering truthfully.
//!
//! Asserts: no panic; every error has a message and is not `Internal`; every operation ends; a
//! conditional write expects, byte for byte, a value the kernel read or wrote (never a value it
//! decoded and encoded again, which a hand-written cell would never match).
#![no_main]

use baton_fuzz::{parse_table, scenario, table_of, Driver, Setup};
use baton_kernel::{Instant, Mode, Strategy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cells = parse_table(data);
    let start = Instant::from_nanos(1_000_000_000);
    let table = table_of(&cells, start);
    for strategy in Strategy::ALL {
        let mut setups = vec![Setup {
            strategy,
            mode: Mode::Exclusive,
            paths: false,
            keep_alive: true,
            wait: false,
        }];
        if strategy != Strategy::UniqueInsert {
            setups.push(Setup {
                strategy,
                mode: Mode::Shared,
                paths: true,
                keep_alive: false,
                wait: true,
            });
        }
        for setup in setups {
            let mut driver = Driver::new(table.clone(), start, None);
            scenario(&mut driver, setup);
        }
    }
});
