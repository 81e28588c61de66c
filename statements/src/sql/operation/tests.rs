//! The statements and decoding of each command, against the kernel's reference table's meaning.

use super::params::owned;
use super::*;

use alloc::string::ToString;
use core::time::Duration;

use baton_kernel::ColumnFilter;
use baton_kernel::{Consistency, ReadConsistency, SerialConsistency};

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
