//! The storage commands on each database, against the kernel's reference table.

use std::time::Duration;

use baton::{
    Cell, Command, Consistency, Failure, MemoryStore, Reply, SerialConsistency, SqlStore, Store,
    Write,
};
use baton_kernel::{ColumnFilter, ReadConsistency};

use crate::per_db;

pub(crate) fn open(url: &str) -> SqlStore {
    SqlStore::open(url).expect("valid URL")
}

pub(crate) fn read(row: &str, filter: ColumnFilter) -> Command {
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

fn delete(row: &str, column: &str) -> Command {
    Command::Delete {
        row: row.into(),
        column: column.into(),
        consistency: Consistency::Quorum,
    }
}

fn delete_version(row: &str, column: &str, stamp: u64) -> Command {
    Command::DeleteVersion {
        row: row.into(),
        column: column.into(),
        stamp,
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

/// The reply with remaining TTLs reduced to whether there is one (they differ by clock), and
/// stamps to 0 (the reference table counts commands, the store reads the clock).
pub(crate) fn normalized(reply: Reply) -> Reply {
    let cells = |cells: Vec<Cell>| {
        cells
            .into_iter()
            .map(|c| Cell {
                ttl_remaining: c.ttl_remaining.map(|_| Duration::ZERO),
                stamp: 0,
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

pub(crate) const LONG: Option<Duration> = Some(Duration::from_secs(600));
/// A TTL a cell outlives in a test only if nothing stalls the test for this long: 2 s, since
/// the machines the suite runs on have been seen to stop a process for 0.4 s at a time.
const SHORT: Option<Duration> = Some(Duration::from_secs(2));
/// Long enough after a write with [`SHORT`] returned for the server to have expired it (the
/// server stamps the expiry when it applies the write, before the reply).
const PAST_SHORT: Duration = Duration::from_millis(2_100);

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
                after: 0,
            },
            read("job", ColumnFilter::All),
            Command::Delete {
                row: "job".into(),
                column: "lx".into(),
                consistency: Consistency::Quorum,
            },
            // One stamp for a whole batch: a second put of a cell the batch wrote changes
            // nothing, a put after a delete recreates the cell.
            Command::Batch {
                row: "job".into(),
                writes: vec![
                    Write::Put {
                        column: "twice".into(),
                        value: "first".into(),
                        ttl: None,
                    },
                    Write::Put {
                        column: "twice".into(),
                        value: "second".into(),
                        ttl: None,
                    },
                    Write::Put {
                        column: "again".into(),
                        value: "gone".into(),
                        ttl: None,
                    },
                    Write::Delete {
                        column: "again".into(),
                    },
                    Write::Put {
                        column: "again".into(),
                        value: "back".into(),
                        ttl: LONG,
                    },
                ],
                consistency: Consistency::Quorum,
                after: 0,
            },
            read("job", ColumnFilter::All),
            // Versions: no cell is as old as stamp 0; every one is at most u64::MAX.
            delete_version("job", "twice", 0),
            delete_version("job", "again", u64::MAX),
            delete_version("job", "absent", u64::MAX),
            read("job", ColumnFilter::All),
            // A cell whose name is the counter's but for case is a cell of its own (MariaDB
            // compares a parameter with a literal in the connection's case-insensitive
            // collation: seen to write a one-row table's counter, 2026-12-02); and the
            // counter is read with the row's other cells, in byte order, by any filter.
            put("case", "_LOCK_", "token=1", None),
            put("case", "_lock_", "lower", LONG),
            put("case", "lock", "owner=a", LONG),
            put("case", "_NEXT_", "w", LONG),
            cas("case", "_lock_", "lower", Some("lower2")),
            read("case", ColumnFilter::All),
            read("case", ColumnFilter::Prefix("_".into())),
            read("case", ColumnFilter::Prefix("_L".into())),
            read("case", ColumnFilter::Prefix("_N".into())),
            // An empty prefix has no end: every cell from the first (ReadFrom).
            read("case", ColumnFilter::Prefix(String::new())),
            read("case", ColumnFilter::Exact("_LOCK_".into())),
            read("case", ColumnFilter::Exact("_lock_".into())),
            cas("case", "lock", "owner=a", None),
            read("case", ColumnFilter::All),
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
        short > Duration::ZERO && short <= Duration::from_millis(2_001),
        "{short:?}"
    );
    assert_eq!(ttl("forever"), None);
    tokio::time::sleep(PAST_SHORT).await;
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
        tokio::time::sleep(PAST_SHORT).await;
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
        tokio::time::sleep(PAST_SHORT).await;
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

/// The live cells of `row` as `(column, value, stamp)`.
async fn versions(store: &SqlStore, row: &str) -> Vec<(String, String, u64)> {
    match store.execute(read(row, ColumnFilter::All)).await {
        Reply::Cells(cells) => cells
            .into_iter()
            .map(|c| (c.column, c.value, c.stamp))
            .collect(),
        other => panic!("read answered {other:?}"),
    }
}

/// The stamp of the live cell `(row, column)`.
async fn stamp_of(store: &SqlStore, row: &str, column: &str) -> u64 {
    versions(store, row)
        .await
        .into_iter()
        .find(|(c, _, _)| c == column)
        .map(|(_, _, s)| s)
        .unwrap_or_else(|| panic!("no cell {column} in {row}"))
}

/// The wall clock in microseconds since 1970, the unit of the stores' stamps.
fn micros_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

per_db!(reads_return_increasing_stamps, |url: String| async move {
    let store = open(&url);
    let mut last = 0;
    for i in 0..5 {
        let before = micros_now();
        let value = format!("v{i}");
        assert_eq!(
            store.execute(put("r", "c", &value, LONG)).await,
            Reply::Written
        );
        let after = micros_now();
        let cells = versions(&store, "r").await;
        assert_eq!(cells.len(), 1, "{cells:?}");
        let (_, got, stamp) = &cells[0];
        assert_eq!(got, &value);
        assert!(*stamp > last, "put {i}: {stamp} after {last}");
        // Wall-clock microseconds, taken when the statement was sent.
        assert!(
            *stamp >= before && *stamp <= after + 1_000_000,
            "{before} <= {stamp} <= {after}"
        );
        last = *stamp;
    }
    // Conditional writes stamp their cells too.
    assert_eq!(
        store.execute(iia("r", "lock", "a", LONG)).await,
        conditional(true, None)
    );
    let inserted = stamp_of(&store, "r", "lock").await;
    assert!(inserted > last, "{inserted} after {last}");
    assert_eq!(
        store.execute(cas("r", "lock", "a", Some("b"))).await,
        conditional(true, None)
    );
    let swapped = stamp_of(&store, "r", "lock").await;
    assert!(swapped > inserted, "{swapped} after {inserted}");
    // A batch stamps all its writes with one stamp.
    let batch = Command::Batch {
        after: 0,
        row: "r".into(),
        writes: ["x", "y"]
            .into_iter()
            .map(|c| Write::Put {
                column: c.into(),
                value: c.into(),
                ttl: None,
            })
            .collect(),
        consistency: Consistency::Quorum,
    };
    assert_eq!(store.execute(batch).await, Reply::Written);
    let (x, y) = (
        stamp_of(&store, "r", "x").await,
        stamp_of(&store, "r", "y").await,
    );
    assert_eq!(x, y);
    assert!(x > swapped, "{x} after {swapped}");
    // Scans return the same stamps as reads.
    let Reply::Rows(rows) = store
        .execute(Command::Scan {
            after: None,
            limit: 10,
            consistency: Consistency::Quorum,
        })
        .await
    else {
        panic!("rows")
    };
    let scanned: Vec<(String, String, u64)> = rows
        .into_iter()
        .flat_map(|(_, cells)| cells)
        .map(|c| (c.column, c.value, c.stamp))
        .collect();
    assert_eq!(scanned, versions(&store, "r").await);
});

per_db!(
    late_writes_do_not_undo_later_ones,
    |url: String| async move {
        let store = open(&url);
        store.execute(put("r", "c", "v1", LONG)).await;
        let s1 = stamp_of(&store, "r", "c").await;
        store.execute(put("r", "c", "v2", LONG)).await;
        let s2 = stamp_of(&store, "r", "c").await;
        assert!(s2 > s1);
        let now = || versions(&store, "r");
        let v2 = vec![("c".to_owned(), "v2".to_owned(), s2)];
        // A put that reaches the database after a later write (an older stamp), or a second
        // time (the same stamp), changes nothing.
        for stamp in [s1, s2 - 1, s2] {
            assert_eq!(
                store
                    .execute_stamped(put("r", "c", "late", None), stamp)
                    .await,
                Reply::Written
            );
            assert_eq!(now().await, v2, "a put stamped {stamp}");
        }
        // Nor does a late delete, or a late batch.
        for stamp in [s1, s2 - 1] {
            assert_eq!(
                store.execute_stamped(delete("r", "c"), stamp).await,
                Reply::Written
            );
            assert_eq!(now().await, v2, "a delete stamped {stamp}");
            let batch = Command::Batch {
                after: 0,
                row: "r".into(),
                writes: vec![
                    Write::Delete { column: "c".into() },
                    Write::Put {
                        column: "c".into(),
                        value: "batch".into(),
                        ttl: None,
                    },
                ],
                consistency: Consistency::Quorum,
            };
            assert_eq!(store.execute_stamped(batch, stamp).await, Reply::Written);
            assert_eq!(now().await, v2, "a batch stamped {stamp}");
        }
        // A newer put applies, with its TTL; a delete at least as new removes the cell.
        store
            .execute_stamped(put("r", "c", "v3", SHORT), s2 + 1)
            .await;
        let cells = now().await;
        assert_eq!(
            cells,
            vec![("c".to_owned(), "v3".to_owned(), s2 + 1)],
            "a newer put"
        );
        store.execute_stamped(delete("r", "c"), s2 + 1).await;
        assert_eq!(now().await, vec![], "a delete as new as the cell");
        // No tombstones in SQL: a late put after the delete recreates the cell, as in the
        // reference table (it only adds a contender, until its TTL ends).
        store
            .execute_stamped(put("r", "c", "ghost", SHORT), s1)
            .await;
        assert_eq!(now().await, vec![("c".to_owned(), "ghost".to_owned(), s1)]);
        // An expired row is replaced only by a newer write too.
        tokio::time::sleep(PAST_SHORT).await;
        assert_eq!(now().await, vec![]);
        store
            .execute_stamped(put("r", "c", "older", None), s1 - 1)
            .await;
        assert_eq!(now().await, vec![], "an older put over an expired row");
        store.execute(put("r", "c", "fresh", None)).await;
        assert!(
            matches!(&now().await[..], [(_, v, s)] if v == "fresh" && *s > s2),
            "{:?}",
            now().await
        );
    }
);

per_db!(
    delete_version_removes_only_the_version_read,
    |url: String| async move {
        let store = open(&url);
        let changes = store.changes().expect("the SQL store reports changes");
        store.execute(put("r", "c", "v1", LONG)).await;
        let s1 = stamp_of(&store, "r", "c").await;
        // An older version than the cell's: nothing removed.
        assert_eq!(
            store.execute(delete_version("r", "c", s1 - 1)).await,
            Reply::Written
        );
        assert_eq!(versions(&store, "r").await.len(), 1);
        // The version a read returned: removed, and waiters are told.
        let seen = *changes.borrow();
        assert_eq!(
            store.execute(delete_version("r", "c", s1)).await,
            Reply::Written
        );
        assert_eq!(versions(&store, "r").await, vec![]);
        assert!(*changes.borrow() > seen, "a delete-version may free a lock");
        // Read a version, then the owner writes the cell again: the newer version survives
        // a delete of the one that was read...
        store.execute(put("r", "c", "v2", LONG)).await;
        let s2 = stamp_of(&store, "r", "c").await;
        store.execute(put("r", "c", "v3", LONG)).await;
        let s3 = stamp_of(&store, "r", "c").await;
        assert!(s3 > s2);
        store.execute(delete_version("r", "c", s2)).await;
        assert_eq!(
            versions(&store, "r").await,
            vec![("c".to_owned(), "v3".to_owned(), s3)]
        );
        // ... and goes with its own version. A cell that is not there is fine.
        store.execute(delete_version("r", "c", s3)).await;
        assert_eq!(versions(&store, "r").await, vec![]);
        assert_eq!(
            store.execute(delete_version("r", "c", s3)).await,
            Reply::Written
        );
        // A stamp past the column's range (only a delete-version can carry one) means every
        // version. A delete-version keeps its own stamp when executed with another.
        store.execute(put("r", "c", "v4", None)).await;
        let s4 = stamp_of(&store, "r", "c").await;
        assert_eq!(
            store
                .execute_stamped(delete_version("r", "c", s4 - 1), s4 + 1)
                .await,
            Reply::Written
        );
        assert_eq!(versions(&store, "r").await.len(), 1);
        store.execute(delete_version("r", "c", u64::MAX)).await;
        assert_eq!(versions(&store, "r").await, vec![]);
    }
);
