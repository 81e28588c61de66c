//! The rows and outcomes a SQL database gives back, decoded by `baton_statements::sql`.
//!
//! Feeds: a storage command of the fuzzer's choosing (any kind; names, values, TTLs and stamps
//! included, over-long names too) to `sql::Operation` for a dialect and table layout of its
//! choosing, then, for each step the operation asks for, what the fuzzer makes up as the
//! database's answer: rows counted and insert ids for statements and transactions; for
//! fetches, rows shaped as asked (text and integer columns, NULLs, huge and negative numbers,
//! remaining TTLs and stamps) or not (missing or extra columns, wrong kinds); sometimes the
//! wrong kind of answer altogether (a host bug). Also database errors' codes and messages to
//! `sql::describe_database` and `sql::failure`.
//!
//! Asserts: no panic; the statement each step names exists in the dialect's statements for
//! the layout; the operation replies within a bounded number of steps (a scan fed pages that
//! keep coming aside); a failure has a message; a step after the reply is answered with an
//! internal error, not a panic or a second reply.
#![no_main]

use std::sync::OnceLock;

use baton_fuzz::{check_reply, made_up_command, made_up_value};
use baton_kernel::{Command, Failure, Reply};
use baton_statements::sql::{
    describe_database, failure, Dialect, Done, DriverError, Kind, Layout, Operation, Phase,
    Statements, Step, Val,
};
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fn made_up_int(u: &mut Unstructured<'_>) -> Option<i64> {
    match u.int_in_range(0..=4).unwrap_or(0) {
        0 => None,
        1 => Some(u.int_in_range(-2..=100_000).unwrap_or(0)),
        2 => Some(i64::MAX - u.int_in_range(0..=1).unwrap_or(0)),
        3 => Some(i64::MIN),
        _ => Some(u.arbitrary().unwrap_or(0)),
    }
}

fn made_up_rows(u: &mut Unstructured<'_>, columns: &[Kind]) -> Vec<Vec<Val>> {
    let count = u.int_in_range(0..=4).unwrap_or(0);
    (0..count)
        .map(|_| {
            let mut row: Vec<Val> = columns
                .iter()
                .map(|kind| {
                    let wrong = u.ratio(1, 16).unwrap_or(false);
                    match (kind, wrong) {
                        (Kind::Text, false) | (Kind::Int, true) => Val::Text(made_up_value(u)),
                        (Kind::Int, false) | (Kind::Text, true) => Val::Int(made_up_int(u)),
                    }
                })
                .collect();
            match u.int_in_range(0..=15).unwrap_or(0) {
                0 => row.truncate(u.int_in_range(0..=row.len()).unwrap_or(0)),
                1 => row.push(Val::Text(made_up_value(u))),
                _ => {}
            }
            row
        })
        .collect()
}

fn made_up_done(u: &mut Unstructured<'_>) -> Done {
    Done {
        rows: match u.int_in_range(0..=3).unwrap_or(0) {
            0 => 0,
            1 => 1,
            2 => 2,
            _ => u.arbitrary().unwrap_or(0),
        },
        insert_id: match u.int_in_range(0..=2).unwrap_or(0) {
            0 => 0,
            1 => 1,
            _ => u.arbitrary().unwrap_or(0),
        },
    }
}

/// The statements of each dialect and layout, built once (building them is most of a run).
fn statements(dialect: Dialect, layout: Layout) -> &'static Statements {
    static SETS: OnceLock<Vec<(Dialect, Layout, Statements)>> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql]
            .into_iter()
            .flat_map(|d| [(d, Layout::TwoRows), (d, Layout::OneRow)])
            .map(|(d, l)| {
                (
                    d,
                    l,
                    Statements::in_layout(d, "baton_locks", l).expect("a valid table"),
                )
            })
            .collect()
    });
    sets.iter()
        .find(|(d, l, _)| *d == dialect && *l == layout)
        .map(|(_, _, s)| s)
        .expect("every dialect and layout")
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let dialect = *u
        .choose(&[Dialect::Sqlite, Dialect::Postgres, Dialect::MySql])
        .unwrap_or(&Dialect::Sqlite);
    let layout = if u.arbitrary().unwrap_or(false) {
        Layout::OneRow
    } else {
        Layout::TwoRows
    };
    let statements = statements(dialect, layout);
    let own = u.arbitrary().unwrap_or(false);
    let stamp: u64 = u.arbitrary().unwrap_or(1);
    let command = made_up_command(&mut u);
    let op = Operation::new(dialect, &command, |floor| {
        stamp.max(floor.saturating_add(1))
    });
    let mut op = match op {
        Ok(op) => op.in_layout(layout),
        Err(f) => {
            assert!(matches!(f, Failure::Rejected(_)), "{f:?}");
            assert!(!f.message().is_empty());
            return;
        }
    };
    if own {
        op = op.on_own_connection();
    }
    let scan = matches!(command, Command::Scan { .. });
    let mut replied = false;
    for _ in 0..256 {
        let host_bug = u.ratio(1, 32).unwrap_or(false);
        match op.step() {
            Step::Execute { statement, .. } => {
                assert!(!statements.get(statement).is_empty(), "{statement:?}");
                if host_bug {
                    op.fetched(Vec::new());
                } else {
                    op.executed(made_up_done(&mut u));
                }
            }
            Step::Fetch {
                statement, columns, ..
            } => {
                assert!(!statements.get(statement).is_empty(), "{statement:?}");
                if host_bug {
                    op.executed(made_up_done(&mut u));
                } else {
                    let rows = made_up_rows(&mut u, columns);
                    op.fetched(rows);
                }
            }
            Step::Transaction(steps) => {
                for (statement, _) in &steps {
                    assert!(!statements.get(*statement).is_empty(), "{statement:?}");
                }
                op.executed(Done::default());
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
            Step::Reply(Reply::Failed(Failure::Rejected(m))) => assert!(m.contains("internal")),
            other => panic!("a step after the reply gave {other:?}"),
        }
    }

    let code: Option<&str> = u.arbitrary().unwrap_or(None);
    let message: &str = u.arbitrary().unwrap_or("");
    let text = describe_database(dialect, code, message);
    let number: Option<u16> = u.arbitrary().unwrap_or(None);
    for phase in [Phase::Connect, Phase::Statement] {
        let f = failure(
            DriverError::Database { code, number },
            dialect,
            phase,
            text.clone(),
        );
        assert_eq!(f.message(), text);
    }
});
