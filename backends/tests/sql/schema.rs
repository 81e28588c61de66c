//! The lock table: validation of its name, creation on first use, clear errors when it is
//! missing or incomplete, and an unreachable server.

use std::time::{Duration, Instant};

use baton::{ErrorKind, Locker, SqlStore};

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
        locker.lock("after creation").await.expect("lock");
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
        Locker::new(store).lock("job").await.expect("lock");
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
