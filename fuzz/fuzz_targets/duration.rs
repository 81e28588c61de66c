//! Durations as people and bindings give them.
//!
//! Feeds: the input as text to the `baton` command's duration parser (`cli/src/duration.rs`,
//! compiled in here as it is: `--ttl 1h30m`, `--wait 500ms`), and its first 8 bytes as an `f64`
//! to the kernel's `duration_from`, which every binding uses for its numbers (C and C++
//! milliseconds, Python seconds, JavaScript milliseconds), in both units, forever allowed or not.
//!
//! Asserts: no panic; the command's parser accepts at most 30 years, refuses with a message,
//! agrees with `parse_positive` (which only adds "not zero"), and what it accepts prints for
//! people (`human`) as a duration it reads back within the rounding `human` does (two units,
//! rounded down; tenths below 10 s). `duration_from` refuses NaN and negative numbers and
//! infinity unless forever is allowed (an `InvalidOption` naming the value), and otherwise
//! gives the amount (or `Duration::MAX` past its range).
#![no_main]

use std::time::Duration;

use baton_kernel::host::{duration_from, TimeUnit};
use baton_kernel::ErrorKind;
use libfuzzer_sys::fuzz_target;

#[path = "../../cli/src/duration.rs"]
#[allow(dead_code)]
mod duration;

fn command_line(text: &str) {
    let parsed = duration::parse(text);
    let positive = duration::parse_positive(text);
    match &parsed {
        Err(why) => {
            assert!(!why.is_empty(), "{text:?}: an empty reason");
            assert!(positive.is_err(), "{text:?}: positive but not a duration");
        }
        Ok(d) => {
            assert!(
                *d <= Duration::from_secs(30 * 365 * 86_400),
                "{text:?}: {d:?} is past 30 years"
            );
            assert_eq!(
                positive.is_ok(),
                !d.is_zero(),
                "{text:?}: {d:?}, {positive:?}"
            );
            let shown = duration::human(*d);
            let back = duration::parse(&shown)
                .unwrap_or_else(|e| panic!("{text:?} is {d:?}, shown as {shown:?}, refused: {e}"));
            let gap = if back > *d { back - *d } else { *d - back };
            // Rounded down to whole seconds from 10 s, to two units from a minute.
            let slack = if *d >= Duration::from_secs(10) {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(1)
            };
            assert!(
                gap <= *d / 20 + slack,
                "{text:?} is {d:?}, shown as {shown:?}, read back as {back:?}"
            );
        }
    }
}

fn binding(amount: f64) {
    for unit in [TimeUnit::Seconds, TimeUnit::Milliseconds] {
        for forever in [false, true] {
            let result = duration_from("the ttl", amount, unit, forever);
            let refused = amount.is_nan() || amount < 0.0 || (amount.is_infinite() && !forever);
            match result {
                Err(e) => {
                    assert!(refused, "{amount} refused: {e}");
                    assert_eq!(e.kind(), ErrorKind::InvalidOption);
                    assert!(e.message().contains("the ttl"), "{e}");
                }
                Ok(d) => {
                    assert!(!refused, "{amount} ({unit:?}) accepted as {d:?}");
                    let seconds = match unit {
                        TimeUnit::Seconds => amount,
                        TimeUnit::Milliseconds => amount / 1000.0,
                    };
                    if seconds < 1e18 {
                        let gap = (d.as_secs_f64() - seconds).abs();
                        assert!(
                            gap <= seconds * 1e-9 + 1e-9,
                            "{amount} ({unit:?}) read as {d:?}"
                        );
                    } else {
                        assert!(d.as_secs() >= 1_000_000_000_000_000_000 || d == Duration::MAX);
                    }
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    command_line(&String::from_utf8_lossy(data));
    let mut bytes = [0u8; 8];
    let n = data.len().min(8);
    bytes[..n].copy_from_slice(&data[..n]);
    binding(f64::from_le_bytes(bytes));
});
