//! The statements and decoding of each command, against the kernel's reference table's meaning.

use super::params::owned;
use super::*;

use alloc::string::ToString;
use core::time::Duration;

use baton_kernel::ColumnFilter;
use baton_kernel::{Consistency, ObjectGuard, ReadConsistency, SerialConsistency};

#[test]
fn ttls_round_up_to_milliseconds() {
    assert_eq!(ttl_ms(None), None);
    assert_eq!(ttl_ms(Some(Duration::from_millis(5))), Some(5));
    assert_eq!(ttl_ms(Some(Duration::from_micros(5_001))), Some(6));
    assert_eq!(ttl_ms(Some(Duration::from_nanos(1))), Some(1));
    assert_eq!(ttl_ms(Some(Duration::MAX)), None);
}

fn read(filter: ColumnFilter) -> Command {
    Command::Read {
        row: "r".into(),
        filter,
        consistency: ReadConsistency::Plain(Consistency::default()),
    }
}

#[test]
fn long_keys_are_refused() {
    assert!(check_keys(&read(ColumnFilter::Prefix("x".repeat(255)))).is_ok());
    assert!(check_keys(&read(ColumnFilter::Prefix("x".repeat(256)))).is_err());
}

#[test]
fn an_unapplied_conditional_reads_who_is_in_the_way() {
    let insert = Command::InsertIfAbsent {
        row: "r".into(),
        column: "c".into(),
        value: "v".into(),
        ttl: Some(Duration::from_micros(1_500)),
        serial: SerialConsistency::Serial,
        consistency: Consistency::default(),
    };
    let mut op = Operation::new(Dialect::MySql, &insert, |floor| floor + 7).expect("valid");
    assert_eq!(
        op.step(),
        Step::Execute {
            statement: Statement::InsertIfAbsent,
            params: vec![
                text("r"),
                text("c"),
                text("v"),
                Param::Int(Some(2)),
                Param::Int(Some(7))
            ],
        }
    );
    // MariaDB's marker: a live row was kept.
    op.executed(Done {
        rows: 1,
        insert_id: 1,
    });
    assert_eq!(
        op.step(),
        fetch(Statement::Current, vec![text("r"), text("c")], TEXT)
    );
    op.fetched(vec![vec![Val::Text("theirs".to_string())]]);
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Conditional {
            applied: false,
            current: Some("theirs".to_string()),
        })
    );
}

#[test]
fn a_batch_takes_one_stamp_above_its_floor() {
    let batch = Command::Batch {
        row: "r".into(),
        writes: vec![
            Write::Delete { column: "a".into() },
            Write::Put {
                column: "b".into(),
                value: "v".into(),
                ttl: None,
            },
        ],
        consistency: Consistency::default(),
        after: 41,
    };
    let mut op = Operation::new(Dialect::Sqlite, &batch, |floor| floor + 1).expect("valid");
    let Step::Transaction(statements) = op.step() else {
        panic!("a batch is one transaction");
    };
    assert_eq!(statements.len(), 2);
    assert!(statements
        .iter()
        .all(|(_, params)| params.last() == Some(&Param::Int(Some(42)))));
    op.executed(Done::default());
    assert_eq!(op.step(), Step::Reply(Reply::Written));
}

#[test]
fn a_scan_skips_rows_that_expired_and_tops_up_its_page() {
    let scan = Command::Scan {
        after: None,
        limit: 2,
        consistency: Consistency::default(),
    };
    let mut op = Operation::new(Dialect::Postgres, &scan, |_| 0).expect("valid");
    let name = |s: &str| vec![Val::Text(s.to_string())];
    let cell = |row: &str| {
        vec![
            Val::Text(row.to_string()),
            Val::Text("c".to_string()),
            Val::Text("v".to_string()),
            Val::Int(None),
            Val::Int(Some(3)),
        ]
    };
    assert_eq!(
        op.step(),
        fetch(Statement::ScanFirst, vec![Param::Int(Some(2))], TEXT)
    );
    op.fetched(vec![name("a"), name("b")]);
    assert_eq!(
        op.step(),
        fetch(Statement::ScanCells, vec![owned("a"), owned("b")], ROW_CELL)
    );
    // `b` expired in between.
    op.fetched(vec![cell("a")]);
    assert_eq!(
        op.step(),
        fetch(
            Statement::ScanAfter,
            vec![owned("b"), Param::Int(Some(1))],
            TEXT
        )
    );
    op.fetched(vec![name("c")]);
    op.step();
    op.fetched(vec![cell("c")]);
    let Step::Reply(Reply::Rows(rows)) = op.step() else {
        panic!("the page is full");
    };
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(rows[0].1[0].stamp, 3);
}

fn claim(expected: Option<&str>) -> Command {
    Command::Claim {
        row: "r".into(),
        column: "lock".into(),
        value: "mine".into(),
        ttl: Some(Duration::from_secs(60)),
        counter: "_LOCK_".into(),
        counter_expected: expected.map(String::from),
        counter_next: "token=2".into(),
        turn: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::default(),
    }
}

#[test]
fn a_one_row_claim_reads_the_cells_only_when_it_did_not_apply() {
    let applied_row = |n: i64| {
        vec![vec![
            Val::Int(Some(n)),
            Val::Int(Some(n)),
            Val::Text(String::new()),
            Val::Text(String::new()),
        ]]
    };
    // A claim that expects a counter updates the row; one that expects none may insert it.
    for (expected, statement) in [
        (Some("token=1"), Statement::ClaimAsync),
        (None, Statement::ClaimFirstAsync),
    ] {
        let command = claim(expected);
        let mut op = Operation::new(Dialect::Postgres, &command, |_| 5)
            .expect("valid")
            .in_layout(Layout::OneRow)
            .on_own_connection();
        let Step::Fetch { statement: s, .. } = op.step() else {
            panic!("a claim is one statement");
        };
        assert_eq!(s, statement);
        op.fetched(applied_row(1));
        assert_eq!(
            op.step(),
            Step::Reply(Reply::Guarded {
                applied: true,
                current: Some("mine".into()),
                guard: Some("token=2".into()),
            })
        );
    }
    // Not applied: a read of both cells, which the reply shows.
    let command = claim(Some("token=1"));
    let mut op = Operation::new(Dialect::Postgres, &command, |_| 5)
        .expect("valid")
        .in_layout(Layout::OneRow);
    assert!(matches!(
        op.step(),
        Step::Fetch {
            statement: Statement::Claim,
            ..
        }
    ));
    op.fetched(applied_row(0));
    assert_eq!(
        op.step(),
        fetch(
            Statement::GuardedCurrent,
            vec![text("r"), text("lock"), text("r"), text("_LOCK_")],
            TWO_TEXTS
        )
    );
    op.fetched(vec![vec![
        Val::Text("theirs".into()),
        Val::Text("token=7".into()),
    ]]);
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Guarded {
            applied: false,
            current: Some("theirs".into()),
            guard: Some("token=7".into()),
        })
    );
    // A two-row claim's one statement answers with the cells as found.
    let mut op = Operation::new(Dialect::Postgres, &command, |_| 5).expect("valid");
    op.step();
    op.fetched(vec![vec![
        Val::Int(Some(0)),
        Val::Int(Some(0)),
        Val::Text("theirs".into()),
        Val::Text("token=7".into()),
    ]]);
    assert!(matches!(
        op.step(),
        Step::Reply(Reply::Guarded { applied: false, .. })
    ));
}

#[test]
fn a_one_row_table_refuses_what_it_cannot_hold_before_any_statement() {
    let counter_put = Command::Put {
        row: "r".into(),
        column: "_LOCK_".into(),
        value: "token=1".into(),
        ttl: Some(Duration::from_secs(1)),
        consistency: Consistency::default(),
    };
    let mut other = claim(None);
    if let Command::Claim { column, .. } = &mut other {
        *column = "other".into();
    }
    for command in [counter_put, other] {
        let mut op = Operation::new(Dialect::Postgres, &command, |_| 5)
            .expect("valid")
            .in_layout(Layout::OneRow);
        assert!(
            matches!(op.step(), Step::Reply(Reply::Failed(Failure::Rejected(_)))),
            "{command:?}"
        );
        // The same command on a two-row table is a statement.
        let mut op = Operation::new(Dialect::Postgres, &command, |_| 5).expect("valid");
        assert!(!matches!(op.step(), Step::Reply(_)), "{command:?}");
    }
}

fn set_object(expected: Option<&str>, guard: ObjectGuard) -> Command {
    Command::SetObject {
        row: "r".into(),
        column: "_OBJECT_".into(),
        expected: expected.map(String::from),
        value: "00000000000000000002;1.1;QQ==".into(),
        guard,
        serial: SerialConsistency::Serial,
        consistency: Consistency::default(),
    }
}

fn held(counter: &str) -> ObjectGuard {
    ObjectGuard::Held {
        column: "lock".into(),
        value: "owner=a".into(),
        counter: counter.into(),
        counter_value: "token=1".into(),
    }
}

fn free() -> ObjectGuard {
    ObjectGuard::Free {
        column: "lock".into(),
    }
}

#[test]
fn an_object_write_is_one_statement_and_reads_only_when_not_applied() {
    let value = "00000000000000000002;1.1;QQ==";
    let prefix = "00000000000000000001;";
    let command = set_object(Some(prefix), held("_LOCK_"));
    let mut op = Operation::new(Dialect::Postgres, &command, |_| 9).expect("valid");
    assert_eq!(
        op.step(),
        Step::Execute {
            statement: Statement::ObjectUpdateHeld,
            params: vec![
                text(value),
                Param::Int(Some(9)),
                text("r"),
                text("_OBJECT_"),
                text(prefix),
                owned("00000000000000000001<"),
                text("r"),
                text("lock"),
                text("owner=a"),
                text("r"),
                text("_LOCK_"),
                text("token=1"),
            ],
        }
    );
    op.executed(Done {
        rows: 1,
        insert_id: 0,
    });
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Object {
            applied: true,
            current: Some(value.into()),
            lock: Some("owner=a".into()),
            counter: Some("token=1".into()),
        })
    );
    // Not applied: the three cells, read after.
    let mut op = Operation::new(Dialect::Sqlite, &command, |_| 9).expect("valid");
    op.step();
    op.executed(Done::default());
    assert_eq!(
        op.step(),
        fetch(
            Statement::ObjectCurrent,
            vec![
                text("r"),
                text("_OBJECT_"),
                text("r"),
                text("lock"),
                text("r"),
                text("_LOCK_")
            ],
            &[Kind::Text, Kind::Text, Kind::Text]
        )
    );
    op.fetched(vec![vec![
        Val::Text("00000000000000000003;x;-".into()),
        Val::Text(String::new()),
        Val::Text("token=2".into()),
    ]]);
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Object {
            applied: false,
            current: Some("00000000000000000003;x;-".into()),
            lock: None,
            counter: Some("token=2".into()),
        })
    );
}

#[test]
fn object_inserts_and_free_guards_on_each_database() {
    let value = "00000000000000000002;1.1;QQ==";
    // MariaDB: an insert that found the row there reports the marker 1, not applied; a free
    // guard reports no counter.
    let insert = set_object(None, free());
    let mut op = Operation::new(Dialect::MySql, &insert, |_| 9).expect("valid");
    assert_eq!(
        op.step(),
        Step::Execute {
            statement: Statement::ObjectInsertFree,
            params: vec![
                text("r"),
                text("_OBJECT_"),
                text(value),
                Param::Int(Some(9)),
                text("r"),
                text("lock"),
            ],
        }
    );
    op.executed(Done {
        rows: 1,
        insert_id: 1,
    });
    assert!(matches!(
        op.step(),
        Step::Fetch {
            statement: Statement::ObjectCurrent,
            ..
        }
    ));
    op.fetched(vec![vec![
        Val::Text("there".into()),
        Val::Text("owner=b".into()),
        Val::Text("owner=b".into()),
    ]]);
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Object {
            applied: false,
            current: Some("there".into()),
            lock: Some("owner=b".into()),
            counter: None,
        })
    );
    // MariaDB's free update names the lock row first (its join comes before its SET).
    let update = set_object(Some("p"), free());
    let mut op = Operation::new(Dialect::MySql, &update, |_| 9).expect("valid");
    let Step::Execute { statement, params } = op.step() else {
        panic!("one statement");
    };
    assert_eq!(statement, Statement::ObjectUpdateFree);
    assert_eq!(params[..3], [text("r"), text("lock"), text(value)]);
    // A prefix without an end: the `_from` statement, without the end.
    let update = set_object(Some("\u{10FFFF}"), free());
    let mut op = Operation::new(Dialect::Postgres, &update, |_| 9).expect("valid");
    let Step::Execute { statement, params } = op.step() else {
        panic!("one statement");
    };
    assert_eq!(statement, Statement::ObjectUpdateFreeFrom);
    assert_eq!(params.len(), 7);
}

#[test]
fn object_values_mariadb_cannot_hold_are_refused_not_truncated() {
    let mut command = set_object(None, free());
    if let Command::SetObject { value, .. } = &mut command {
        *value = "x".repeat(65_535);
    }
    assert!(Operation::new(Dialect::MySql, &command, |_| 9).is_ok());
    if let Command::SetObject { value, .. } = &mut command {
        value.push('x');
    }
    let Err(Failure::Rejected(why)) = Operation::new(Dialect::MySql, &command, |_| 9) else {
        panic!("refused");
    };
    assert!(
        why.contains("65535 bytes") && why.contains("65536"),
        "{why}"
    );
    for d in [Dialect::Postgres, Dialect::Sqlite] {
        assert!(Operation::new(d, &command, |_| 9).is_ok(), "{d:?}");
    }
    // Long key names are refused as for every command.
    let mut command = set_object(None, free());
    if let Command::SetObject { guard, .. } = &mut command {
        *guard = ObjectGuard::Free {
            column: "x".repeat(256),
        };
    }
    assert!(Operation::new(Dialect::Postgres, &command, |_| 9).is_err());
}

#[test]
fn a_one_row_table_guards_object_writes_by_its_counter_only() {
    let ok = set_object(Some("p"), held("_LOCK_"));
    let mut op = Operation::new(Dialect::Postgres, &ok, |_| 5)
        .expect("valid")
        .in_layout(Layout::OneRow);
    assert!(matches!(
        op.step(),
        Step::Execute {
            statement: Statement::ObjectUpdateHeld,
            ..
        }
    ));
    let mut object_in_counter = set_object(None, free());
    if let Command::SetObject { column, .. } = &mut object_in_counter {
        *column = "_LOCK_".into();
    }
    for command in [set_object(None, held("other")), object_in_counter] {
        let mut op = Operation::new(Dialect::Postgres, &command, |_| 5)
            .expect("valid")
            .in_layout(Layout::OneRow);
        assert!(
            matches!(op.step(), Step::Reply(Reply::Failed(Failure::Rejected(_)))),
            "{command:?}"
        );
    }
}

#[test]
fn a_mariadb_one_row_read_splits_table_rows_into_cells() {
    let row = |cell: &str, value: &str, own: bool, counter: Option<(&str, i64)>| {
        vec![
            Val::Text(cell.into()),
            Val::Text(value.into()),
            Val::Int(Some(900)),
            Val::Int(Some(3)),
            Val::Int(Some(i64::from(own))),
            Val::Text(counter.map_or("", |c| c.0).into()),
            Val::Int(counter.map(|c| c.1)),
        ]
    };
    for filter in [ColumnFilter::All, ColumnFilter::Prefix("_".into())] {
        let command = read(filter);
        let mut op = Operation::new(Dialect::MySql, &command, |_| 5)
            .expect("valid")
            .in_layout(Layout::OneRow);
        let Step::Fetch { columns, .. } = op.step() else {
            panic!("a read is one statement");
        };
        assert_eq!(columns, SPLIT_CELL);
        // Key order, as the statement answers: `_NEXT_`, then the `lock` row (its own cell
        // expired, its counter in), then a ticket; `_LOCK_` sorts first ('L' < 'N').
        op.fetched(vec![
            row("_NEXT_", "w", true, None),
            row("lock", "", false, Some(("token=4", 17))),
            row("t1", "x", true, None),
        ]);
        let Step::Reply(Reply::Cells(cells)) = op.step() else {
            panic!("cells");
        };
        let names: Vec<(&str, &str, Option<Duration>, u64)> = cells
            .iter()
            .map(|c| {
                (
                    c.column.as_str(),
                    c.value.as_str(),
                    c.ttl_remaining,
                    c.stamp,
                )
            })
            .collect();
        let left = Some(Duration::from_millis(900));
        assert_eq!(
            names,
            vec![
                ("_LOCK_", "token=4", None, 17),
                ("_NEXT_", "w", left, 3),
                ("t1", "x", left, 3),
            ]
        );
    }
    // One cell, and any read on PostgreSQL or two rows, is read as cells.
    for (dialect, layout, filter) in [
        (
            Dialect::MySql,
            Layout::OneRow,
            ColumnFilter::Exact("_LOCK_".into()),
        ),
        (Dialect::MySql, Layout::TwoRows, ColumnFilter::All),
        (Dialect::Postgres, Layout::OneRow, ColumnFilter::All),
    ] {
        let command = read(filter);
        let mut op = Operation::new(dialect, &command, |_| 5)
            .expect("valid")
            .in_layout(layout);
        let Step::Fetch { columns, .. } = op.step() else {
            panic!("a read is one statement");
        };
        assert_eq!(columns, CELL, "{dialect:?} {layout:?}");
    }
}
