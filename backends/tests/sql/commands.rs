//! The storage commands on each database, against the kernel's reference table.

use std::time::Duration;

use baton::{
    Cell, Command, Consistency, Failure, MemoryStore, Reply, SerialConsistency, SqlStore, Store,
    Write,
};
use baton_kernel::{ColumnFilter, ReadConsistency};

use crate::per_db;

fn open(url: &str) -> SqlStore {
    SqlStore::open(url).expect("valid URL")
}

fn read(row: &str, filter: ColumnFilter) -> Command {
    Command::Read {
        row: row.into(),
        filter,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

fn put(row: &str, column: &str, value: &str, ttl: Option<Duration>) -> Command {
    Command::Put {
        row: row.into(),
        column: column.into(),
        value: value.into(),
        ttl,
        consistency: Consistency::Quorum,
    }
}

fn iia(row: &str, column: &str, value: &str, ttl: Option<Duration>) -> Command {
    Command::InsertIfAbsent {
        row: row.into(),
        column: column.into(),
        value: value.into(),
        ttl,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn cas(row: &str, column: &str, expected: &str, new: Option<&str>) -> Command {
    Command::CompareAndSet {
        row: row.into(),
        column: column.into(),
        expected: expected.into(),
        new: new.map(String::from),
        ttl: Some(Duration::from_secs(60)),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn conditional(applied: bool, current: Option<&str>) -> Reply {
    Reply::Conditional {
        applied,
        current: current.map(String::from),
    }
}

fn columns(reply: Reply) -> Vec<String> {
    match reply {
        Reply::Cells(cells) => cells.into_iter().map(|c| c.column).collect(),
        other => panic!("expected cells, got {other:?}"),
    }
}

/// The reply with remaining TTLs reduced to whether there is one (they differ by clock).
fn normalized(reply: Reply) -> Reply {
    let cells = |cells: Vec<Cell>| {
        cells
            .into_iter()
            .map(|c| Cell {
                ttl_remaining: c.ttl_remaining.map(|_| Duration::ZERO),
                ..c
            })
            .collect()
    };
    match reply {
        Reply::Cells(c) => Reply::Cells(cells(c)),
        Reply::Rows(rows) => Reply::Rows(rows.into_iter().map(|(r, c)| (r, cells(c))).collect()),
        other => other,
    }
}

const LONG: Option<Duration> = Some(Duration::from_secs(600));
const SHORT: Option<Duration> = Some(Duration::from_millis(300));

per_db!(
    same_replies_as_the_reference_table,
    |url: String| async move {
        let store = open(&url);
        let reference = MemoryStore::new();
        let script = vec![
            put("job", "data", "v1", None),
            put("job", "l_b", "x", LONG),
            put("job", "l_a", "y", LONG),
            put("job", "lx", "not in l_", None),
            read("job", ColumnFilter::All),
            read("job", ColumnFilter::Prefix("l_".into())),
            read("job", ColumnFilter::Exact("data".into())),
            read("job", ColumnFilter::Exact("nope".into())),
            iia("job", "lock", "owner=a", LONG),
            iia("job", "lock", "owner=b", LONG),
            // The same value again: a live cell is in the way, whatever it holds.
            iia("job", "lock", "owner=a", LONG),
            cas("job", "lock", "owner=b", Some("owner=c")),
            cas("job", "lock", "owner=a", Some("owner=a")),
            cas("job", "lock", "owner=a", Some("owner=c")),
            cas("job", "missing", "x", None),
            cas("job", "lock", "owner=c", None),
            cas("job", "lock", "owner=c", None),
            Command::Batch {
                row: "job".into(),
                writes: vec![
                    Write::Put {
                        column: "data".into(),
                        value: "v2".into(),
                        ttl: None,
                    },
                    Write::Put {
                        column: "tmp".into(),
                        value: "t".into(),
                        ttl: None,
                    },
                    Write::Delete {
                        column: "tmp".into(),
                    },
                    Write::Delete {
                        column: "l_a".into(),
                    },
                ],
                consistency: Consistency::Quorum,
            },
            read("job", ColumnFilter::All),
            Command::Delete {
                row: "job".into(),
                column: "lx".into(),
                consistency: Consistency::Quorum,
            },
            put("other", "c", "1", None),
            put("a-row", "c", "1", LONG),
            Command::Scan {
                after: None,
                limit: 2,
                consistency: Consistency::Quorum,
            },
            Command::Scan {
                after: Some("job".into()),
                limit: 2,
                consistency: Consistency::Quorum,
            },
            Command::Scan {
                after: Some("other".into()),
                limit: 2,
                consistency: Consistency::Quorum,
            },
            Command::Purge { row: None },
        ];
        for command in script {
            let want = normalized(reference.apply(&command));
            let got = normalized(store.execute(command.clone()).await);
            assert_eq!(got, want, "{command:?} on {url}");
        }
    }
);

per_db!(expiry_by_the_server_clock, |url: String| async move {
    let store = open(&url);
    assert_eq!(
        store.execute(put("r", "short", "1", SHORT)).await,
        Reply::Written
    );
    assert_eq!(
        store
            .execute(put("r", "long", "2", Some(Duration::from_secs(60))))
            .await,
        Reply::Written
    );
    assert_eq!(
        store.execute(put("r", "forever", "3", None)).await,
        Reply::Written
    );
    let Reply::Cells(cells) = store.execute(read("r", ColumnFilter::All)).await else {
        panic!("cells")
    };
    let ttl = |name: &str| {
        cells
            .iter()
            .find(|c| c.column == name)
            .map(|c| c.ttl_remaining)
            .expect("present")
    };
    // Remaining TTLs are computed by the server, rounded up, never above the TTL plus the
    // rounding.
    let long = ttl("long").expect("has a TTL");
    assert!(
        long > Duration::from_secs(55) && long <= Duration::from_millis(60_001),
        "{long:?}"
    );
    let short = ttl("short").expect("has a TTL");
    assert!(
        short > Duration::ZERO && short <= Duration::from_millis(301),
        "{short:?}"
    );
    assert_eq!(ttl("forever"), None);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        columns(store.execute(read("r", ColumnFilter::All)).await),
        vec!["forever", "long"]
    );
    // Expired rows stay until purged, invisible; the purge names them.
    assert_eq!(
        store
            .execute(Command::Purge {
                row: Some("r".into())
            })
            .await,
        Reply::Purged(vec![("r".into(), "short".into())])
    );
    assert_eq!(
        store.execute(Command::Purge { row: None }).await,
        Reply::Purged(vec![])
    );
});

per_db!(
    insert_if_absent_takes_over_an_expired_row,
    |url: String| async move {
        let store = open(&url);
        assert_eq!(
            store.execute(iia("r", "lock", "a", SHORT)).await,
            conditional(true, None)
        );
        assert_eq!(
            store.execute(iia("r", "lock", "b", SHORT)).await,
            conditional(false, Some("a"))
        );
        // A compare-and-set on a live cell with the wrong expectation reports what is there.
        assert_eq!(
            store.execute(cas("r", "lock", "zzz", Some("c"))).await,
            conditional(false, Some("a"))
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        // Expired: the compare-and-set sees nothing live, even though the row is still stored...
        assert_eq!(
            store.execute(cas("r", "lock", "a", Some("c"))).await,
            conditional(false, None)
        );
        // ... and the insert takes the row over in its one statement.
        assert_eq!(
            store.execute(iia("r", "lock", "b", LONG)).await,
            conditional(true, None)
        );
        assert_eq!(
            store.execute(iia("r", "lock", "c", LONG)).await,
            conditional(false, Some("b"))
        );
        // After an insert that was not applied, a plain insert still counts as applied (MariaDB:
        // the statement's LAST_INSERT_ID marker does not leak into the next statement).
        assert_eq!(
            store.execute(iia("r", "other", "x", LONG)).await,
            conditional(true, None)
        );
        // Nothing was left to purge: the takeover replaced the expired row.
        assert_eq!(
            store.execute(Command::Purge { row: None }).await,
            Reply::Purged(vec![])
        );
    }
);

per_db!(
    prefixes_are_byte_ranges_not_patterns,
    |url: String| async move {
        let store = open(&url);
        let names = [
            "l_1",
            "l_2",
            "lx",
            "l%",
            "l",
            "l_",
            "é_1",
            "é",
            "ê",
            "z\u{10FFFF}",
            "z\u{10FFFF}a",
            "Z",
            "a b",
            "100%_sure",
        ];
        for name in names {
            assert_eq!(
                store.execute(put("row", name, name, None)).await,
                Reply::Written
            );
        }
        let prefix = |p: &str| {
            let store = store.clone();
            let p = p.to_owned();
            async move { columns(store.execute(read("row", ColumnFilter::Prefix(p))).await) }
        };
        assert_eq!(prefix("l_").await, vec!["l_", "l_1", "l_2"]);
        assert_eq!(prefix("l%").await, vec!["l%"]);
        assert_eq!(prefix("100%").await, vec!["100%_sure"]);
        assert_eq!(prefix("é").await, vec!["é", "é_1"]);
        assert_eq!(
            prefix("z\u{10FFFF}").await,
            vec!["z\u{10FFFF}", "z\u{10FFFF}a"]
        );
        // Every cell, in byte order.
        let mut sorted: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        sorted.sort();
        assert_eq!(
            columns(store.execute(read("row", ColumnFilter::All)).await),
            sorted
        );
        // Trailing spaces are significant (no PAD SPACE collation).
        store.execute(put("row", "pad ", "with space", None)).await;
        assert_eq!(
            columns(
                store
                    .execute(read("row", ColumnFilter::Exact("pad".into())))
                    .await
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            store.execute(cas("row", "pad ", "with space ", None)).await,
            conditional(false, Some("with space"))
        );
    }
);

per_db!(
    hostile_names_are_stored_and_listed_verbatim,
    |url: String| async move {
        let store = open(&url);
        let rows = [
            "'; DROP TABLE baton_locks; --",
            "\"quoted\" `back` \\slash\\",
            "Robert'); DELETE FROM t; --",
            "ünïcödé 🔒",
        ];
        for row in rows {
            let value = format!("owner={row}");
            assert_eq!(
                store.execute(iia(row, row, &value, LONG)).await,
                conditional(true, None)
            );
            let Reply::Cells(cells) = store
                .execute(read(row, ColumnFilter::Exact(row.into())))
                .await
            else {
                panic!("cells")
            };
            assert_eq!(cells.len(), 1, "{row}");
            assert_eq!(
                (cells[0].column.as_str(), cells[0].value.as_str()),
                (row, value.as_str())
            );
        }
        let Reply::Rows(listed) = store
            .execute(Command::Scan {
                after: None,
                limit: 100,
                consistency: Consistency::Quorum,
            })
            .await
        else {
            panic!("rows")
        };
        let mut want: Vec<&str> = rows.to_vec();
        want.sort();
        assert_eq!(
            listed.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>(),
            want
        );
    }
);

per_db!(
    scans_page_in_byte_order_and_skip_expired_rows,
    |url: String| async move {
        let store = open(&url);
        for i in 0..7 {
            let ttl = if i % 3 == 0 { SHORT } else { LONG };
            store.execute(put(&format!("row-{i}"), "c", "v", ttl)).await;
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        let mut after = None;
        let mut seen = Vec::new();
        loop {
            let Reply::Rows(page) = store
                .execute(Command::Scan {
                    after: after.clone(),
                    limit: 2,
                    consistency: Consistency::Quorum,
                })
                .await
            else {
                panic!("rows")
            };
            let full = page.len() == 2;
            after = page.last().map(|(r, _)| r.clone());
            seen.extend(page.into_iter().map(|(r, _)| r));
            if !full {
                break;
            }
        }
        assert_eq!(seen, vec!["row-1", "row-2", "row-4", "row-5"]);
    }
);

per_db!(
    keys_longer_than_the_table_holds_are_rejected,
    |url: String| async move {
        let store = open(&url);
        let long = "x".repeat(256);
        assert!(matches!(
            store.execute(put("r", &long, "v", None)).await,
            Reply::Failed(Failure::Rejected(m)) if m.contains("255 bytes")
        ));
        assert_eq!(
            store.execute(put("r", &"x".repeat(255), "v", None)).await,
            Reply::Written
        );
    }
);
