//! Whatever a store answers, the kernel decides or fails; it never panics.
//!
//! Feeds: a scenario drawn from the fuzzer's bytes (strategy, mode, paths, keep-alive, whether
//! the acquisition waits, a few cells already in the table), then every operation a host runs
//! (as in `lock_table`), with each command answered either by the reference table or by a
//! reply the fuzzer makes up: a failure of any kind, cells, rows, conditional, guarded and
//! object outcomes with values shaped like records, counters, tickets and object cells (huge
//! numbers, unknown fields, other owners), whatever the command was, applied to the table or
//! not; and time passing between steps.
//!
//! Asserts: as `lock_table`: no panic; every error has a message and is not `Internal`; every
//! operation ends; a conditional write expects a value the kernel read or wrote, byte for byte.
#![no_main]

use baton_fuzz::{made_up_value, scenario, Driver, Setup, TextCell, NAME};
use baton_kernel::{Instant, Mode, Strategy};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let strategy = *u.choose(&Strategy::ALL).unwrap_or(&Strategy::UniqueInsert);
    let mode = match u.int_in_range(0..=2).unwrap_or(0) {
        0 => Mode::Exclusive,
        1 => Mode::Shared,
        _ => Mode::Counted(u.int_in_range(1..=3).unwrap_or(1)),
    };
    let setup = Setup {
        strategy,
        mode,
        paths: u.arbitrary().unwrap_or(false),
        keep_alive: u.arbitrary().unwrap_or(false),
        wait: u.arbitrary().unwrap_or(false),
    };
    let columns = [
        "lock",
        "_LOCK_",
        "_OBJECT_",
        "_NEXT_",
        "ticket/web-1:4242:00000000deadbeef",
        "_LOCK_web-1:4242:00000000deadbeef",
        "_LOCK_x|web-1:4242:00000000deadbeef",
        "_LOCK_x",
    ];
    let count = u.int_in_range(0..=3).unwrap_or(0);
    let cells: Vec<TextCell> = (0..count)
        .map(|_| TextCell {
            row: NAME.to_owned(),
            column: (*u.choose(&columns).unwrap_or(&"lock")).to_owned(),
            value: made_up_value(&mut u),
            ttl_ms: u.arbitrary::<Option<u16>>().unwrap_or(None).map(u64::from),
        })
        .collect();
    let start = Instant::from_nanos(1_000_000_000);
    let table = baton_fuzz::table_of(&cells, start);
    let mut driver = Driver::new(table, start, Some(u));
    scenario(&mut driver, setup);
});
