//! The statements, values and decoding of each command, and which batch writes are sent.

use super::*;

use alloc::string::ToString;
use core::time::Duration;

use baton_kernel::{Instant, MemoryTable, ObjectGuard};

fn put(c: &str, v: &str) -> Write {
    Write::Put {
        column: c.into(),
        value: v.into(),
        ttl: None,
    }
}

fn del(c: &str) -> Write {
    Write::Delete { column: c.into() }
}

#[test]
fn batches_keep_the_write_that_decides_each_column() {
    let writes = vec![
        put("a", "1"),
        del("b"),
        del("a"),
        put("b", "2"),
        put("c", "3"),
        put("c", "4"),
        put("b", "5"),
        del("d"),
        put("d", "6"),
        del("d"),
    ];
    let kept: Vec<&Write> = effective_writes(&writes);
    assert_eq!(kept, vec![&writes[2], &writes[3], &writes[4], &writes[9]]);
}

/// The kept writes, applied as Cassandra applies one batch (one timestamp: a delete wins a
/// tie with a put), leave the table as the reference table leaves it after the whole batch.
#[test]
fn batches_match_the_reference_table() {
    let now = Instant::from_nanos(0);
    let columns = ["a", "b"];
    let mut scripts: Vec<Vec<Write>> = vec![vec![]];
    for _ in 0..4 {
        let mut longer = Vec::new();
        for script in &scripts {
            for (i, c) in columns.iter().enumerate() {
                for w in [put(c, &format!("v{i}{}", script.len())), del(c)] {
                    let mut s = script.clone();
                    s.push(w);
                    longer.push(s);
                }
            }
        }
        scripts.extend(longer);
    }
    for start in [None, Some("old")] {
        for script in &scripts {
            let mut reference = MemoryTable::new();
            let mut cassandra = MemoryTable::new();
            if let Some(v) = start {
                for table in [&mut reference, &mut cassandra] {
                    for c in columns {
                        let before = Command::Put {
                            row: "r".into(),
                            column: c.into(),
                            value: v.into(),
                            ttl: None,
                            consistency: Consistency::Quorum,
                        };
                        table.apply_stamped(&before, now, 1);
                    }
                }
            }
            let batch = |writes: Vec<Write>| Command::Batch {
                row: "r".into(),
                writes,
                consistency: Consistency::Quorum,
                after: 0,
            };
            reference.apply_stamped(&batch(script.clone()), now, 2);
            // One write per column: no ties within the batch, so order is irrelevant.
            let kept = effective_writes(script).into_iter().cloned().collect();
            cassandra.apply_stamped(&batch(kept), now, 2);
            assert_eq!(
                cassandra.read("r", &ColumnFilter::All, now),
                reference.read("r", &ColumnFilter::All, now),
                "{script:?} over {start:?}"
            );
        }
    }
}

#[test]
fn serial_reads_and_overrides() {
    let read = Command::Read {
        row: "r".into(),
        filter: ColumnFilter::Prefix("p".into()),
        consistency: ReadConsistency::Serial(SerialConsistency::Serial),
    };
    let levels = Levels {
        consistency: Some(Consistency::One),
        serial: Some(SerialConsistency::LocalSerial),
    };
    let mut op = Operation::new(&read, levels, |_| unreachable!()).expect("valid");
    assert_eq!(
        op.step(),
        execute(
            Statement::ReadRange,
            vec![text("r"), text("p"), Value::Text("q".into())],
            Level::LocalSerial,
            None
        )
    );
    op.rows(Rows {
        columns: ["cell", "value", "ttl(value)", "writetime(value)"]
            .map(String::from)
            .to_vec(),
        rows: vec![vec![
            Some(Val::Text("p1".to_string())),
            Some(Val::Text("v".to_string())),
            Some(Val::Int(3)),
            Some(Val::BigInt(9)),
        ]],
    });
    let Step::Reply(Reply::Cells(cells)) = op.step() else {
        panic!("a read answers with cells");
    };
    assert_eq!(cells[0].ttl_remaining, Some(Duration::from_secs(3)));
    assert_eq!(cells[0].stamp, 9);
}

#[test]
fn an_unapplied_conditional_names_the_value_in_the_way() {
    let cas = Command::CompareAndSet {
        row: "r".into(),
        column: "c".into(),
        expected: "mine".into(),
        new: None,
        ttl: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    };
    let mut op = Operation::new(&cas, Levels::default(), |_| unreachable!()).expect("valid");
    let Step::Execute {
        statement, serial, ..
    } = op.step()
    else {
        panic!("one statement");
    };
    assert_eq!(statement, Statement::CompareAndDelete);
    assert_eq!(serial, Some(SerialConsistency::Serial));
    op.rows(Rows {
        columns: vec!["[applied]".to_string(), "value".to_string()],
        rows: vec![vec![
            Some(Val::Boolean(false)),
            Some(Val::Text("theirs".to_string())),
        ]],
    });
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Conditional {
            applied: false,
            current: Some("theirs".to_string())
        })
    );
}

#[test]
fn a_scan_stops_at_its_limit_across_pages() {
    let scan = Command::Scan {
        after: None,
        limit: 2,
        consistency: Consistency::One,
    };
    let mut op = Operation::new(&scan, Levels::default(), |_| 0).expect("valid");
    // Two partitions: the smallest driver page (16 rows).
    assert!(matches!(op.step(), Step::Scan { page_size: 16, .. }));
    let row = |name: &str, cell: &str| {
        vec![
            Some(Val::Text(name.to_string())),
            Some(Val::Text(cell.to_string())),
            Some(Val::Text("v".to_string())),
            None,
            Some(Val::BigInt(1)),
        ]
    };
    let columns = ["lock_name", "cell", "value", "ttl", "writetime"]
        .map(String::from)
        .to_vec();
    op.page(
        Rows {
            columns: columns.clone(),
            rows: vec![row("a", "1"), row("a", "2")],
        },
        false,
    );
    assert_eq!(op.step(), Step::NextPage);
    op.page(
        Rows {
            columns,
            rows: vec![row("b", "1"), row("c", "1")],
        },
        false,
    );
    let Step::Reply(Reply::Rows(rows)) = op.step() else {
        panic!("the page is full");
    };
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].1.len(), 2);
}

fn set_object(expected: Option<&str>, guard: ObjectGuard) -> Command {
    Command::SetObject {
        row: "r".into(),
        column: "_OBJECT_".into(),
        expected: expected.map(String::from),
        value: "00000000000000000002;1.1;QQ==".into(),
        guard,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn held() -> ObjectGuard {
    ObjectGuard::Held {
        column: "lock".into(),
        value: "owner=a".into(),
        counter: "_LOCK_".into(),
        counter_value: "token=1".into(),
    }
}

/// A not-applied conditional batch's result: `[applied]`, then each conditioned row that
/// exists, `(lock_name, cell, value)`.
fn not_applied(rows: &[(&str, &str)]) -> Rows {
    Rows {
        columns: ["[applied]", "lock_name", "cell", "value"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .map(|(cell, value)| {
                vec![
                    Some(Val::Boolean(false)),
                    Some(Val::Text("r".to_string())),
                    Some(Val::Text(cell.to_string())),
                    Some(Val::Text(value.to_string())),
                ]
            })
            .collect(),
    }
}

#[test]
fn an_object_write_is_one_conditional_batch_whose_guard_writes_only_the_probe() {
    let prefix = "00000000000000000001;";
    let command = set_object(Some(prefix), held());
    let mut op = Operation::new(&command, Levels::default(), |_| unreachable!()).expect("valid");
    let Step::Batch {
        statements,
        consistency,
        serial,
    } = op.step()
    else {
        panic!("one batch");
    };
    assert_eq!(
        (consistency, serial),
        (Level::Quorum, Some(SerialConsistency::Serial))
    );
    let names: Vec<Statement> = statements.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        names,
        [
            Statement::ObjectUpdate,
            Statement::ProbeValue,
            Statement::ProbeValue
        ]
    );
    assert_eq!(
        statements[0].1,
        vec![
            text("00000000000000000002;1.1;QQ=="),
            text("r"),
            text("_OBJECT_"),
            text(prefix),
            Value::Text("00000000000000000001<".into())
        ]
    );
    assert_eq!(
        statements[2].1,
        vec![text("r"), text("_LOCK_"), text("token=1")]
    );
    for s in [Statement::ProbeValue, Statement::ProbeAbsent] {
        let cql = s.cql("t");
        assert!(cql.starts_with("DELETE probe FROM t WHERE"), "{cql}");
        assert!(s.is_conditional() && s.needs_probe(), "{s:?}");
    }
    // Not applied: the rows as the batch found them; a row it does not name has no cell.
    op.rows(not_applied(&[
        ("_OBJECT_", "00000000000000000003;x;-"),
        ("lock", "owner=b"),
    ]));
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Object {
            applied: false,
            current: Some("00000000000000000003;x;-".into()),
            lock: Some("owner=b".into()),
            counter: None,
        })
    );
}

#[test]
fn an_object_insert_has_no_ttl_and_a_free_guard_one_probe() {
    let command = set_object(
        None,
        ObjectGuard::Free {
            column: "lock".into(),
        },
    );
    let mut op = Operation::new(&command, Levels::default(), |_| unreachable!()).expect("valid");
    let Step::Batch { statements, .. } = op.step() else {
        panic!("one batch");
    };
    assert_eq!(statements[0].0, Statement::InsertIfAbsent);
    assert_eq!(statements[0].1[0], Value::Int(0), "TTL 0: none");
    assert_eq!(
        statements[1],
        (Statement::ProbeAbsent, vec![text("r"), text("lock")])
    );
    op.rows(Rows {
        columns: vec!["[applied]".to_string()],
        rows: vec![vec![Some(Val::Boolean(true))]],
    });
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Object {
            applied: true,
            current: Some("00000000000000000002;1.1;QQ==".into()),
            lock: None,
            counter: None,
        })
    );
    // A prefix without an end: `IF value >= ?` alone.
    let command = set_object(Some("\u{10FFFF}"), held());
    let mut op = Operation::new(&command, Levels::default(), |_| unreachable!()).expect("valid");
    let Step::Batch { statements, .. } = op.step() else {
        panic!("one batch");
    };
    assert_eq!(statements[0].0, Statement::ObjectUpdateFrom);
    assert_eq!(statements[0].1.len(), 4);
    op.rows(not_applied(&[("_LOCK_", "token=2"), ("lock", "owner=a")]));
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Object {
            applied: false,
            current: None,
            lock: Some("owner=a".into()),
            counter: Some("token=2".into()),
        })
    );
}

#[test]
fn without_the_probe_column_object_writes_are_refused_and_others_run() {
    let command = set_object(None, held());
    let mut op = Operation::new(&command, Levels::default(), |_| unreachable!())
        .expect("valid")
        .without_probe("add it with: ALTER TABLE");
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Failed(Failure::Rejected(
            "add it with: ALTER TABLE".into()
        )))
    );
    let read = Command::Read {
        row: "r".into(),
        filter: ColumnFilter::All,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    };
    let mut op = Operation::new(&read, Levels::default(), |_| 0)
        .expect("valid")
        .without_probe("no probe");
    assert!(matches!(op.step(), Step::Execute { .. }));
}

fn claim(turn: Option<Turn>) -> Command {
    Command::Claim {
        row: "r".into(),
        column: "lock".into(),
        value: "owner=a".into(),
        ttl: Some(Duration::from_secs(60)),
        counter: "_LOCK_".into(),
        counter_expected: Some("token=1".into()),
        counter_next: "token=2 owner=a".into(),
        turn,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

/// The statements of a claim's batch, on a table with or without the `probe` column.
fn claim_batch(command: &Command, probe: bool) -> Vec<(Statement, Vec<Value<'_>>)> {
    let op = Operation::new(command, Levels::default(), |_| unreachable!()).expect("valid");
    let mut op = if probe {
        op
    } else {
        op.without_probe("no probe")
    };
    match op.step() {
        Step::Batch { statements, .. } => statements,
        other => panic!("a claim is one batch: {other:?}"),
    }
}

#[test]
fn a_claims_turn_is_a_probe_of_the_turn_cell_or_the_delete_of_ours() {
    let names = |s: &[(Statement, Vec<Value<'_>>)]| s.iter().map(|(s, _)| *s).collect::<Vec<_>>();
    let base = [Statement::InsertIfAbsent, Statement::CompareAndSet];
    let (none, free, ours) = (
        claim(None),
        claim(Some(Turn::Free)),
        claim(Some(Turn::Ours("a acq=1".into()))),
    );
    assert_eq!(names(&claim_batch(&none, true)), base);
    let batch = claim_batch(&free, true);
    assert_eq!(names(&batch)[..2], base);
    assert_eq!(
        batch[2],
        (Statement::ProbeAbsent, vec![text("r"), text("_NEXT_")])
    );
    assert_eq!(
        claim_batch(&ours, true)[2],
        (
            Statement::CompareAndDelete,
            vec![text("r"), text("_NEXT_"), text("a acq=1")]
        )
    );
    // Without the probe column: no probe (the store ignores `Free`), the delete of ours kept.
    assert_eq!(names(&claim_batch(&free, false)), base);
    assert_eq!(
        names(&claim_batch(&ours, false))[2],
        Statement::CompareAndDelete
    );
    // Refused by the turn alone: the lock free and the counter as expected, as the kernel reads
    // it; the turn's row is not part of the reply.
    let mut op = Operation::new(&free, Levels::default(), |_| unreachable!()).expect("valid");
    assert!(matches!(op.step(), Step::Batch { .. }));
    op.rows(not_applied(&[("_LOCK_", "token=1"), ("_NEXT_", "b acq=2")]));
    assert_eq!(
        op.step(),
        Step::Reply(Reply::Guarded {
            applied: false,
            current: None,
            guard: Some("token=1".into()),
        })
    );
}

#[test]
fn a_scans_driver_page_follows_its_limit() {
    assert_eq!(scan_page_size(0), 16);
    assert_eq!(scan_page_size(64), 256);
    assert_eq!(scan_page_size(250), SCAN_PAGE);
    assert_eq!(scan_page_size(256), SCAN_PAGE);
    assert_eq!(scan_page_size(u32::MAX), SCAN_PAGE);
}
