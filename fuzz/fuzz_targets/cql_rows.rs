//! The results Cassandra gives back, decoded by `baton_statements::cql`.
//!
//! Feeds: a storage command of the fuzzer's choosing (any kind, as in `sql_rows`) to
//! `cql::Operation`, with consistency overrides and a table with or without its `probe` column,
//! then, for each statement, batch or page it asks for, a result the fuzzer makes up: column
//! names (`[applied]`, `cell`, `value`, `lock_name`, the TTL and WRITETIME columns, or any),
//! rows of text, ints, bigints, booleans, other types and NULLs, in the expected shape or not;
//! pages that end or go on. Also drivers' errors to `cql::failure`.
//!
//! Asserts: no panic; the operation replies within a bounded number of steps (a scan fed
//! pages that keep coming aside); a failure has a message; a step after the reply is answered
//! with an internal error, not a panic or a second reply.
#![no_main]

use baton_fuzz::{check_reply, made_up_command, made_up_value};
use baton_kernel::{Command, Consistency, Failure, Reply, SerialConsistency};
use baton_statements::cql::{failure, DriverError, Levels, Operation, Phase, Rows, Step, Val};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fn made_up_val(u: &mut Unstructured<'_>) -> Option<Val> {
    match u.int_in_range(0..=7).unwrap_or(0) {
        0 => None,
        1 | 2 => Some(Val::Text(made_up_value(u))),
        3 => Some(Val::Int(u.arbitrary().unwrap_or(0))),
        4 => Some(Val::BigInt(u.arbitrary().unwrap_or(0))),
        5 => Some(Val::Boolean(u.arbitrary().unwrap_or(false))),
        6 => Some(Val::Other),
        _ => Some(Val::Text(baton_fuzz::made_up_key(u))),
    }
}

fn made_up_rows(u: &mut Unstructured<'_>) -> Rows {
    let names = [
        "[applied]",
        "lock_name",
        "cell",
        "value",
        "ttl(value)",
        "writetime(value)",
        "probe",
    ];
    let shapes: [&[&str]; 5] = [
        &["cell", "value", "ttl(value)", "writetime(value)"],
        &[
            "lock_name",
            "cell",
            "value",
            "ttl(value)",
            "writetime(value)",
        ],
        &["[applied]"],
        &["[applied]", "value"],
        &["[applied]", "lock_name", "cell", "value"],
    ];
    let mut columns: Vec<String> = match u.int_in_range(0..=5).unwrap_or(0) {
        5 => {
            let count = u.int_in_range(0..=5).unwrap_or(0);
            (0..count)
                .map(|_| (*u.choose(&names).unwrap_or(&"cell")).to_owned())
                .collect()
        }
        i => shapes[i].iter().map(|s| (*s).to_owned()).collect(),
    };
    if u.ratio(1, 16).unwrap_or(false) {
        columns.push(u.arbitrary().unwrap_or_default());
    }
    let count = u.int_in_range(0..=4).unwrap_or(0);
    let rows = (0..count)
        .map(|_| {
            let width = match u.int_in_range(0..=15).unwrap_or(0) {
                0 => u.int_in_range(0..=6).unwrap_or(0),
                _ => columns.len(),
            };
            (0..width)
                .map(
                    |i| match (columns.get(i).map(String::as_str), u.ratio(1, 8)) {
                        (_, Ok(true)) | (None, _) => made_up_val(u),
                        (Some("[applied]"), _) => {
                            Some(Val::Boolean(u.arbitrary().unwrap_or(false)))
                        }
                        (Some("ttl(value)"), _) => match u.arbitrary().unwrap_or(false) {
                            true => Some(Val::Int(u.arbitrary().unwrap_or(0))),
                            false => None,
                        },
                        (Some("writetime(value)"), _) => {
                            Some(Val::BigInt(u.arbitrary().unwrap_or(0)))
                        }
                        (Some("lock_name" | "cell"), _) => {
                            Some(Val::Text(baton_fuzz::made_up_key(u)))
                        }
                        (Some(_), _) => Some(Val::Text(made_up_value(u))),
                    },
                )
                .collect()
        })
        .collect();
    Rows { columns, rows }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let levels = Levels {
        consistency: match u.int_in_range(0..=2).unwrap_or(0) {
            0 => None,
            1 => Some(Consistency::LocalQuorum),
            _ => Some(Consistency::One),
        },
        serial: match u.arbitrary().unwrap_or(false) {
            true => Some(SerialConsistency::LocalSerial),
            false => None,
        },
    };
    let no_probe = u.ratio(1, 8).unwrap_or(false);
    let stamp: u64 = u.arbitrary().unwrap_or(1);
    let command = made_up_command(&mut u);
    let op = Operation::new(&command, levels, |floor| stamp.max(floor.saturating_add(1)));
    let mut op = match op {
        Ok(op) => op,
        Err(f) => {
            assert!(!f.message().is_empty());
            return;
        }
    };
    if no_probe {
        op = op.without_probe("the table has no probe column");
    }
    let scan = matches!(command, Command::Scan { .. });
    let mut replied = false;
    for _ in 0..256 {
        let host_bug = u.ratio(1, 32).unwrap_or(false);
        match op.step() {
            Step::Execute { .. } | Step::Batch { .. } => {
                let rows = made_up_rows(&mut u);
                if host_bug {
                    op.page(rows, true);
                } else {
                    op.rows(rows);
                }
            }
            Step::Scan { .. } | Step::NextPage => {
                let rows = made_up_rows(&mut u);
                if host_bug {
                    op.rows(rows);
                } else {
                    let last = u.ratio(1, 3).unwrap_or(true);
                    op.page(rows, last);
                }
            }
            Step::Reply(reply) => {
                check_reply(&reply);
                replied = true;
                break;
            }
        }
    }
    assert!(replied || scan, "no reply to {command:?} in 256 steps");
    if replied {
        match op.step() {
            Step::Reply(Reply::Failed(Failure::Rejected(m))) => assert!(!m.is_empty()),
            other => panic!("a step after the reply gave {other:?}"),
        }
    }

    let message: String = u.arbitrary().unwrap_or_default();
    for phase in [Phase::Connect, Phase::Execute] {
        for error in [
            DriverError::NotSent,
            DriverError::Broken,
            DriverError::Other,
        ] {
            assert_eq!(failure(error, phase, message.clone()).message(), message);
        }
    }
});
