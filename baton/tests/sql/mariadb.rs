//! How sqlx's MySQL driver reports affected rows, which the MariaDB insert-if-absent relies on.

use baton::sqlx::{self, AssertSqlSafe};
use baton::SqlStore;

use crate::common::{base_url, table, Db};

/// sqlx connects with CLIENT_FOUND_ROWS: an `ON DUPLICATE KEY UPDATE` that leaves the row as it
/// was counts 1 row, like an insert (without the flag it would count 0), and a change counts 2.
/// So the count alone cannot tell "inserted" from "kept": the statement's `LAST_INSERT_ID(x)`
/// marker does, and it is 0 again for the next plain insert.
#[tokio::test]
async fn found_rows_and_the_last_insert_id_marker() {
    let Some(url) = base_url(Db::MySql) else {
        return;
    };
    let t = table();
    let store = SqlStore::open(&url).expect("valid URL");
    let Some(pool) = store.pool().mysql() else {
        panic!("a MariaDB pool")
    };
    let run = |sql: String| {
        let pool = pool.clone();
        async move {
            let done = sqlx::query(AssertSqlSafe(sql))
                .execute(&pool)
                .await
                .expect("statement");
            (done.rows_affected(), done.last_insert_id())
        }
    };
    run(format!("CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")).await;
    let upsert = |k: i32, v: i32| {
        format!(
            "INSERT INTO {t} (k, v) VALUES ({k}, {v}) ON DUPLICATE KEY UPDATE v = IF(LAST_INSERT_ID(IF(VALUES(v) <> v, 2, 1)) = 2, VALUES(v), v)"
        )
    };
    assert_eq!(run(upsert(1, 10)).await, (1, 0), "inserted");
    assert_eq!(run(upsert(1, 10)).await, (1, 1), "kept: found, not changed");
    assert_eq!(
        run(upsert(2, 20)).await,
        (1, 0),
        "inserted after a kept row"
    );
    assert_eq!(run(upsert(1, 11)).await, (2, 2), "changed");
    run(format!("DROP TABLE {t}")).await;
}
