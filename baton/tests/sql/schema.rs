//! The lock table: validation of its name, creation on first use, clear errors when it is
//! missing or incomplete, and an unreachable server.

use std::time::{Duration, Instant};

use baton::baton_kernel::{ColumnFilter, ReadConsistency};
use baton::sql::Dialect;
use baton::{Command, Consistency, ErrorKind, Locker, Reply, SqlStore, Store};

use crate::common::{base_url, exec_raw, table, with_param, Db};
use crate::per_db;

#[test]
fn table_names_are_validated_identifiers() {
    for bad in [
        "1x",
        "a-b",
        "x;DROP TABLE y",
        "t%20x",
        "ünï",
        &"a".repeat(64),
    ] {
        let url = format!("sqlite::memory:?table={bad}");
        let e = Locker::open(&url).expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{bad}: {e}");
        assert!(e.message().contains("table"), "{e}");
    }
    assert!(Locker::open(&format!("sqlite::memory:?table={}", "a".repeat(63))).is_ok());
}

per_db!(
    created_once_by_concurrent_first_users,
    |url: String| async move {
        // Several stores (as if in several processes) race to create the same table.
        let stores: Vec<SqlStore> = (0..4)
            .map(|_| SqlStore::open(&url).expect("valid"))
            .collect();
        let tasks: Vec<_> = stores
            .iter()
            .map(|s| {
                let s = s.clone();
                tokio::spawn(async move { s.ensure_schema().await })
            })
            .collect();
        for task in tasks {
            task.await.expect("task").expect("every creator succeeds");
        }
        let locker = Locker::new(stores[0].clone());
        drop(locker.lock("after creation").await.expect("lock"));
    }
);

per_db!(
    missing_table_without_create_names_it,
    |url: String| async move {
        let url = with_param(&url, "create=false");
        let table = url
            .split("table=")
            .nth(1)
            .and_then(|t| t.split('&').next())
            .unwrap_or_default()
            .to_owned();
        let locker = Locker::open(&url).expect("opening does not check");
        let e = locker.lock("job").await.expect_err("no table");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
        assert!(e.message().contains(&table), "{e}");
        assert!(e.message().contains("does not exist"), "{e}");
        assert!(e.message().contains("CREATE TABLE"), "{e}");
        let store = SqlStore::open(&url).expect("valid");
        let e = store.ensure_schema().await.expect_err("no table");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
        // Once someone creates it, the same store works.
        let creator = SqlStore::open(&url.replace("create=false", "create=true")).expect("valid");
        creator.ensure_schema().await.expect("created");
        store.ensure_schema().await.expect("found");
        drop(Locker::new(store).lock("job").await.expect("lock"));
    }
);

per_db!(
    a_table_missing_a_column_is_named,
    |url: String| async move {
        let url = with_param(&url, "create=false");
        let store = SqlStore::open(&url).expect("valid");
        let table = &store.options().table;
        exec_raw(
        &store,
        &format!("CREATE TABLE {table} (lock_name VARCHAR(255) NOT NULL, cell VARCHAR(255) NOT NULL, value TEXT NOT NULL, PRIMARY KEY (lock_name, cell))"),
    )
    .await
    .expect("create by hand");
        let e = store.ensure_schema().await.expect_err("no expires_at");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
        assert!(e.message().contains("expires_at"), "{e}");
        assert!(e.message().contains(table.as_str()), "{e}");
        // With create on, an incomplete table is not silently "fixed" either.
        let store = SqlStore::open(&url.replace("create=false", "create=true")).expect("valid");
        let e = store.ensure_schema().await.expect_err("no expires_at");
        assert!(e.message().contains("expires_at"), "{e}");
    }
);

per_db!(
    a_table_without_the_stamp_column_is_altered_or_refused,
    |url: String| async move {
        let url = with_param(&url, "create=false");
        let store = SqlStore::open(&url).expect("valid");
        let table = store.options().table.clone();
        let expires_at = match store.dialect() {
            Dialect::Sqlite => "INTEGER",
            Dialect::Postgres => "timestamptz",
            Dialect::MySql => "DATETIME(6)",
        };
        // The table as baton made it before stamps, with a fencing counter in it.
        exec_raw(
            &store,
            &format!("CREATE TABLE {table} (lock_name VARCHAR(255) NOT NULL, cell VARCHAR(255) NOT NULL, value TEXT NOT NULL, expires_at {expires_at}, PRIMARY KEY (lock_name, cell))"),
        )
        .await
        .expect("create by hand");
        exec_raw(
            &store,
            &format!(
                "INSERT INTO {table} (lock_name, cell, value) VALUES ('job', 'fence', 'token=7')"
            ),
        )
        .await
        .expect("an old row");
        // Without create: refused, naming the column and the statement that adds it.
        let e = store.ensure_schema().await.expect_err("no stamp column");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
        assert!(e.message().contains(&table), "{e}");
        assert!(e.message().contains("no column stamp"), "{e}");
        assert!(e.message().contains("ALTER TABLE"), "{e}");
        assert!(e.message().contains("ADD COLUMN"), "{e}");
        // With create: added, by whichever of several concurrent stores gets there first.
        let url = url.replace("create=false", "create=true");
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let s = SqlStore::open(&url).expect("valid");
                tokio::spawn(async move { s.ensure_schema().await })
            })
            .collect();
        for task in tasks {
            task.await.expect("task").expect("every store succeeds");
        }
        let store = SqlStore::open(&url).expect("valid");
        // Old rows read with stamp 0, and any new write replaces them.
        let read = Command::Read {
            row: "job".into(),
            filter: ColumnFilter::All,
            consistency: ReadConsistency::Plain(Consistency::Quorum),
        };
        let Reply::Cells(cells) = store.execute(read.clone()).await else {
            panic!("cells")
        };
        assert_eq!(
            cells
                .iter()
                .map(|c| (c.column.as_str(), c.value.as_str(), c.stamp))
                .collect::<Vec<_>>(),
            [("fence", "token=7", 0)]
        );
        let put = Command::Put {
            row: "job".into(),
            column: "fence".into(),
            value: "token=8".into(),
            ttl: None,
            consistency: Consistency::Quorum,
        };
        assert_eq!(store.execute(put).await, Reply::Written);
        let Reply::Cells(cells) = store.execute(read).await else {
            panic!("cells")
        };
        assert!(
            matches!(&cells[..], [c] if c.value == "token=8" && c.stamp > 0),
            "{cells:?}"
        );
        let locker = Locker::new(store);
        drop(locker.lock("after the upgrade").await.expect("lock"));
        // And the altered table passes the check without create.
        let checked = SqlStore::open(&url.replace("create=true", "create=false")).expect("valid");
        checked.ensure_schema().await.expect("complete now");
    }
);

/// A server that refuses connections fails the first operation promptly, naming the store.
async fn unreachable(db: Db, url: &str) {
    if base_url(db).is_none() {
        return;
    }
    let locker = Locker::open(&format!("{url}?table={}&timeout=1s", table())).expect("lazy");
    let started = Instant::now();
    let e = locker.lock("job").await.expect_err("nothing listens");
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}");
    assert!(e.message().contains("127.0.0.1:1"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn unreachable_postgres_is_store_unavailable() {
    unreachable(Db::Postgres, "postgres://baton:baton@127.0.0.1:1/baton").await;
}

#[tokio::test]
async fn unreachable_mysql_is_store_unavailable() {
    unreachable(Db::MySql, "mysql://baton:baton@127.0.0.1:1/baton").await;
}

#[tokio::test]
async fn an_unwritable_sqlite_path_is_a_clear_error() {
    let locker = Locker::open("sqlite:///nonexistent-dir/baton/locks.db?timeout=1s").expect("lazy");
    let e = locker.lock("job").await.expect_err("no such directory");
    assert!(
        matches!(
            e.kind(),
            ErrorKind::StoreUnavailable | ErrorKind::StoreError
        ),
        "{e}"
    );
    assert!(
        e.message()
            .contains("sqlite at /nonexistent-dir/baton/locks.db"),
        "{e}"
    );
}
