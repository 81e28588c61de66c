//! The one-row layout of SQLite, PostgreSQL and MariaDB (`layout=one-row`, the default of new
//! tables):
//! where such a table keeps each name's fencing counter (the `fence` column of its `lock` row),
//! that a table keeps the layout it was made with, and what the layout refuses. That the
//! layout answers every command as the kernel's reference table does is checked by the shared
//! scripts and the command tests, which run on both layouts of every database (`per_db!`'s
//! `sqlite`, `sqlite_two_rows`, `postgres`, `postgres_two_rows`, `mysql` and `mysql_two_rows`).

use std::time::Duration;

use baton::baton_kernel::strategy::{unique::LOCK_COLUMN, COUNTER_COLUMN};
use baton::baton_kernel::{ColumnFilter, ReadConsistency};
use baton::sql::Layout;
use baton::sqlx::{self, AssertSqlSafe};
use baton::{Command, Consistency, ErrorKind, Locker, Reply, SqlPool, SqlStore, Store};

use crate::common::{self, exec_raw, layout_param, with_param, Db};

/// The databases, each with both layouts.
const DBS: [Db; 3] = [Db::Sqlite, Db::Postgres, Db::MySql];

/// `(lock_name, cell, value, fence, released)` of every row of the store's table, sorted;
/// `released`: `expires_at` is the layout's absent cell (`-infinity`; MariaDB `1000-01-01`;
/// SQLite 0);
/// `fence` NULL where the table has no such column.
async fn rows(store: &SqlStore) -> Vec<(String, String, String, Option<String>, bool)> {
    let table = &store.options().table;
    match store.pool() {
        SqlPool::Postgres(pool) => {
            let sql = format!(
                "SELECT lock_name::text, cell::text, value, to_jsonb(r) ->> 'fence', COALESCE(expires_at = '-infinity', false) FROM {table} AS r ORDER BY 1, 2"
            );
            sqlx::query_as(AssertSqlSafe(sql))
                .fetch_all(pool)
                .await
                .expect("rows")
        }
        SqlPool::MySql(pool) => {
            let fence = match store.layout() {
                Some(Layout::OneRow) => "fence",
                _ => "CAST(NULL AS CHAR)",
            };
            let sql = format!(
                "SELECT lock_name, cell, value, {fence}, COALESCE(expires_at = '1000-01-01', FALSE) <> 0 FROM {table} ORDER BY lock_name, cell"
            );
            sqlx::query_as(AssertSqlSafe(sql))
                .fetch_all(pool)
                .await
                .expect("rows")
        }
        SqlPool::Sqlite(pool) => {
            let fence = match store.layout() {
                Some(Layout::OneRow) => "fence",
                _ => "NULL",
            };
            let sql = format!(
                "SELECT lock_name, cell, value, {fence}, COALESCE(expires_at = 0, FALSE) <> 0 FROM {table} ORDER BY lock_name, cell"
            );
            sqlx::query_as(AssertSqlSafe(sql))
                .fetch_all(pool)
                .await
                .expect("rows")
        }
        _ => panic!("a SQLite, PostgreSQL or MariaDB store"),
    }
}

fn read_counter(row: &str) -> Command {
    Command::Read {
        row: row.into(),
        filter: ColumnFilter::Exact(COUNTER_COLUMN.into()),
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

/// A fresh table's URL on `db`, of `layout`, or `None` to skip.
fn url(db: Db, layout: Layout) -> Option<String> {
    Some(with_param(&common::url(db)?, layout_param(layout)))
}

/// The store of a locker on `url`, after one lock and release of `job`.
async fn after_one_release(url: &str) -> SqlStore {
    let locker = Locker::open(url).expect("valid");
    let mut guard = locker.lock("job").await.expect("lock");
    guard.release().await.expect("release");
    locker.sql_store().expect("a SQL store").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_row_table_keeps_the_counter_in_the_lock_row() {
    for db in DBS {
        let Some(url) = url(db, Layout::OneRow) else {
            continue;
        };
        let locker = Locker::open(&url).expect("valid");
        let mut first = locker.lock("job").await.expect("lock");
        let token = first.token();
        first.release().await.expect("release");
        let mut second = locker.lock("job").await.expect("lock again");
        assert!(second.token() > token);
        let second_token = second.token();
        second.release().await.expect("release");

        let store = locker.sql_store().expect("a SQL store").clone();
        assert_eq!(store.layout(), Some(Layout::OneRow));
        let found = rows(&store).await;
        assert_eq!(
            found.len(),
            2,
            "the flag and one row for the name: {found:?}"
        );
        assert_eq!(
            found[0],
            (String::new(), "layout".into(), "fence".into(), None, false)
        );
        let (name, cell, value, fence, released) = &found[1];
        assert_eq!((name.as_str(), cell.as_str()), ("job", LOCK_COLUMN));
        assert!(
            value.is_empty() && *released,
            "released in place: {found:?}"
        );
        // The kernel reads the counter where the layout keeps it.
        let Reply::Cells(cells) = store.execute(read_counter("job")).await else {
            panic!("a read")
        };
        assert_eq!(cells.len(), 1, "{cells:?}");
        assert_eq!(Some(&cells[0].value), fence.as_ref());
        assert!(cells[0].ttl_remaining.is_none());
        assert!(
            cells[0].value.contains(&second_token.to_string()),
            "{cells:?} for token {second_token}"
        );
        common::drop_table(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_table_is_one_row_unless_asked_otherwise() {
    for db in DBS {
        let Some(url) = common::url(db) else {
            continue;
        };
        let store = after_one_release(&url).await;
        assert_eq!(
            store.layout(),
            Some(Layout::OneRow),
            "the default on {db:?}"
        );
        let cells: Vec<String> = rows(&store).await.into_iter().map(|r| r.1).collect();
        assert_eq!(cells, ["layout", LOCK_COLUMN], "the flag and the lock row");
        common::drop_table(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_keeps_the_layout_it_was_made_with() {
    for (db, made, asked) in DBS.into_iter().flat_map(|db| {
        [
            (db, Layout::TwoRows, Layout::OneRow),
            (db, Layout::OneRow, Layout::TwoRows),
        ]
    }) {
        let Some(url) = url(db, made) else { continue };
        let store = after_one_release(&url).await;
        assert_eq!(store.layout(), Some(made), "as asked");
        let before: Vec<String> = rows(&store).await.into_iter().map(|r| r.1).collect();

        // A store that would make a table of the other layout uses this one as it is.
        let other = Locker::open(&with_param(&url, layout_param(asked))).expect("valid");
        let mut guard = other.lock("job").await.expect("lock");
        let other_store = other.sql_store().expect("a SQL store").clone();
        assert_eq!(
            other_store.layout(),
            Some(made),
            "{made:?} asked as {asked:?}"
        );
        let cells: Vec<String> = rows(&other_store).await.into_iter().map(|r| r.1).collect();
        match made {
            Layout::TwoRows => {
                assert_eq!(before, [COUNTER_COLUMN], "a counter row, no flag");
                assert_eq!(cells, [COUNTER_COLUMN, LOCK_COLUMN]);
            }
            Layout::OneRow => {
                assert_eq!(before, ["layout", LOCK_COLUMN], "the flag and the lock row");
                assert_eq!(cells, before, "no counter row");
            }
        }
        guard.release().await.expect("release");
        common::drop_table(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_layout_is_refused_by_name() {
    for db in DBS {
        let Some(url) = url(db, Layout::OneRow) else {
            continue;
        };
        let store = SqlStore::open(&url).expect("valid");
        store.ensure_schema().await.expect("created");
        let table = store.options().table.clone();
        exec_raw(
            &store,
            &format!("UPDATE {table} SET value = 'v9' WHERE lock_name = '' AND cell = 'layout'"),
        )
        .await
        .expect("a later version's flag");
        let e = SqlStore::open(&url)
            .expect("valid")
            .ensure_schema()
            .await
            .expect_err("an unknown layout");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
        assert!(e.message().contains("does not know (\"v9\""), "{e}");
        assert!(e.message().contains(&table), "{e}");
        common::drop_table(&url).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counter_is_never_removed_given_a_ttl_or_written_as_a_row() {
    for db in DBS {
        let Some(url) = url(db, Layout::OneRow) else {
            continue;
        };
        let store = after_one_release(&url).await;
        let before = rows(&store).await;
        let refused = [
            Command::Delete {
                row: "job".into(),
                column: COUNTER_COLUMN.into(),
                consistency: Consistency::Quorum,
            },
            Command::Put {
                row: "job".into(),
                column: COUNTER_COLUMN.into(),
                value: "9".into(),
                ttl: Some(Duration::from_secs(60)),
                consistency: Consistency::Quorum,
            },
        ];
        for command in refused {
            let reply = store.execute(command.clone()).await;
            assert!(
                matches!(&reply, Reply::Failed(baton::Failure::Rejected(m)) if m.contains(COUNTER_COLUMN)),
                "{command:?}: {reply:?}"
            );
        }
        assert_eq!(rows(&store).await, before, "nothing changed");
        // An earlier version's client would write the counter as a row of its own: refused.
        let table = &store.options().table;
        let e = exec_raw(
            &store,
            &format!("INSERT INTO {table} (lock_name, cell, value) VALUES ('job', '_LOCK_', '9')"),
        )
        .await
        .expect_err("a counter row");
        // PostgreSQL: "violates check constraint"; MariaDB: "CONSTRAINT `CONSTRAINT_1` failed".
        assert!(e.to_string().to_lowercase().contains("constraint"), "{e}");
        common::drop_table(&url).await;
    }
}

/// The names of the tables in a SQLite store's file.
async fn sqlite_tables(store: &SqlStore) -> Vec<String> {
    let SqlPool::Sqlite(pool) = store.pool() else {
        panic!("a SQLite store")
    };
    sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .fetch_all(pool)
        .await
        .expect("tables")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_makes_a_one_row_table_with_its_flag_by_a_rename() {
    let Some(url) = url(Db::Sqlite, Layout::OneRow) else {
        return;
    };
    // Stores racing to make the table (each its own pool on the file): every one ends ready,
    // with the one-row layout, and nothing but the table is left.
    let stores: Vec<SqlStore> = (0..8)
        .map(|_| SqlStore::open(&url).expect("valid"))
        .collect();
    let tasks: Vec<_> = stores
        .iter()
        .cloned()
        .map(|s| tokio::spawn(async move { s.ensure_schema().await }))
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        task.await
            .expect("no panic")
            .unwrap_or_else(|e| panic!("store {i}: {e}"));
        assert_eq!(stores[i].layout(), Some(Layout::OneRow), "store {i}");
    }
    let table = stores[0].options().table.clone();
    assert_eq!(sqlite_tables(&stores[0]).await, vec![table.clone()]);
    common::drop_table(&url).await;

    // A creator that died between its statements left `<table>__creating` without its flag:
    // the next creator takes it up and renames it, flag and all.
    let store = SqlStore::open(&url).expect("valid");
    exec_raw(
        &store,
        &format!(
            "CREATE TABLE \"{table}__creating\" (lock_name TEXT NOT NULL, cell TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, stamp INTEGER NOT NULL DEFAULT 0, fence TEXT, fence_stamp INTEGER, PRIMARY KEY (lock_name, cell), CHECK (cell <> '_LOCK_')) WITHOUT ROWID"
        ),
    )
    .await
    .expect("a creator's leftover");
    store.ensure_schema().await.expect("made");
    assert_eq!(store.layout(), Some(Layout::OneRow));
    assert_eq!(sqlite_tables(&store).await, vec![table.clone()]);
    let after = after_one_release(&url).await;
    let cells: Vec<String> = rows(&after).await.into_iter().map(|r| r.1).collect();
    assert_eq!(cells, ["layout", LOCK_COLUMN], "the flag and the lock row");
    common::drop_table(&url).await;
}

/// Moves every counter of the two-row table of `store` into its `lock` rows by hand, as `baton
/// migrate` is designed to (`docs/one-row-claim.md`, phase 2): the fence columns added, each
/// counter copied into its `lock` row's `fence` (the row made absent where there was none),
/// the counter row's value replaced by the marker, and the flag written.
async fn move_counters_by_hand(store: &SqlStore) {
    let t = &store.options().table;
    let marker = baton::sql::MARKER;
    let (columns, absent, upsert): (&[&str], &str, &str) = match store.pool() {
        SqlPool::Postgres(_) => (
            &["ALTER TABLE {t} ADD COLUMN fence text, ADD COLUMN fence_stamp bigint"],
            "'-infinity'",
            "ON CONFLICT (lock_name, cell) DO UPDATE SET fence = excluded.fence, fence_stamp = excluded.fence_stamp",
        ),
        SqlPool::MySql(_) => (
            &["ALTER TABLE {t} ADD COLUMN fence TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL, ADD COLUMN fence_stamp BIGINT NULL"],
            "'1000-01-01 00:00:00'",
            "ON DUPLICATE KEY UPDATE fence = VALUES(fence), fence_stamp = VALUES(fence_stamp)",
        ),
        SqlPool::Sqlite(_) => (
            &[
                "ALTER TABLE {t} ADD COLUMN fence TEXT",
                "ALTER TABLE {t} ADD COLUMN fence_stamp INTEGER",
            ],
            "0",
            "ON CONFLICT (lock_name, cell) DO UPDATE SET fence = excluded.fence, fence_stamp = excluded.fence_stamp",
        ),
        _ => panic!("a SQLite, PostgreSQL or MariaDB store"),
    };
    let mut script: Vec<String> = columns.iter().map(|c| c.replace("{t}", t)).collect();
    script.push(format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) SELECT lock_name, 'lock', '', {absent}, 0, value, stamp FROM {t} WHERE cell = '_LOCK_' {upsert}"
    ));
    script.push(format!(
        "UPDATE {t} SET value = '{marker}' WHERE cell = '_LOCK_'"
    ));
    script.push(format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp) VALUES ('', 'layout', 'fence', NULL, 0)"
    ));
    for sql in script {
        exec_raw(store, &sql).await.expect(&sql);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_names_marker_is_never_a_cell() {
    for db in DBS {
        let Some(url) = url(db, Layout::TwoRows) else {
            continue;
        };
        let locker = Locker::open(&url).expect("valid");
        let mut guard = locker.lock("job").await.expect("lock");
        let before = guard.token();
        guard.release().await.expect("release");
        let store = locker.sql_store().expect("a SQL store").clone();
        assert_eq!(store.layout(), Some(Layout::TwoRows));
        move_counters_by_hand(&store).await;

        // A store that reads the table now finds it one-row, and every reply shows the
        // counter from `fence` and never the marker row.
        let moved = SqlStore::open(&url).expect("valid");
        moved.ensure_schema().await.expect("ready");
        assert_eq!(moved.layout(), Some(Layout::OneRow), "{db:?}");
        let marker = baton::sql::MARKER;
        let commands = [
            Command::Read {
                row: "job".into(),
                filter: ColumnFilter::All,
                consistency: ReadConsistency::Plain(Consistency::Quorum),
            },
            Command::Read {
                row: "job".into(),
                filter: ColumnFilter::Prefix("_".into()),
                consistency: ReadConsistency::Plain(Consistency::Quorum),
            },
            read_counter("job"),
            Command::Scan {
                after: None,
                limit: 10,
                consistency: Consistency::Quorum,
            },
            Command::Purge { row: None },
        ];
        for command in commands {
            let reply = moved.execute(command.clone()).await;
            let shown = format!("{reply:?}");
            assert!(!shown.contains(marker), "{db:?} {command:?}: {shown}");
            assert!(
                !matches!(reply, Reply::Failed(_)),
                "{db:?} {command:?}: {shown}"
            );
            if let Reply::Cells(cells) = &reply {
                let counters: Vec<_> = cells
                    .iter()
                    .filter(|c| c.column == COUNTER_COLUMN)
                    .collect();
                assert_eq!(counters.len(), 1, "{db:?} {command:?}: {cells:?}");
                assert!(counters[0].value.contains(&before.to_string()), "{cells:?}");
            }
        }
        // A locker on the moved table counts on from the moved counter.
        let after = Locker::open(&url).expect("valid");
        let mut guard = after.lock("job").await.expect("lock on the moved table");
        assert!(guard.token() > before, "{} after {before}", guard.token());
        guard.release().await.expect("release");
        let left = rows(&moved).await;
        assert!(
            left.iter()
                .any(|(n, c, v, _, _)| n == "job" && c == COUNTER_COLUMN && v == marker),
            "the marker stays: {left:?}"
        );
        common::drop_table(&url).await;
    }
}
