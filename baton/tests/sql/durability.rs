//! PostgreSQL: which claims wait for the disk. On the store's own connections a claim that
//! inserted nothing (the lock was held, or another claim moved the fencing counter first), and
//! an acquisition's removal of its own cell, commit without a flush; a claim that took the lock
//! commits durably; a claim in a caller's transaction never touches that transaction's
//! `synchronous_commit`.

use std::time::Duration;

use baton::sqlx::{self, AssertSqlSafe, PgConnection};
use baton::{LockRequest, Locker, SqlPool, SqlStore};
use baton_statements::sql::{Dialect, Layout, Statements};

use crate::common::{self, Db};

/// The transaction's `synchronous_commit`, as its commit would use it.
async fn synchronous_commit(conn: &mut PgConnection) -> String {
    sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(conn)
        .await
        .expect("SHOW synchronous_commit")
}

/// Runs the claim `sql` of `value` on row `job` (fencing counter `_LOCK_`, expected to hold
/// `expected`, `''` for none, moved to `next`) in the open transaction on `conn`; returns how
/// many lock cells it inserted (no row back: none, as a one-row claim that did not apply
/// answers).
async fn claim(conn: &mut PgConnection, sql: &str, value: &str, expected: &str, next: &str) -> i64 {
    let row: Option<(i64, i64, String, String)> = sqlx::query_as(AssertSqlSafe(sql.to_owned()))
        .bind("job")
        .bind("lock")
        .bind(value)
        .bind(60_000i64)
        .bind(1i64)
        .bind("_LOCK_")
        .bind(expected)
        .bind(next)
        .fetch_optional(conn)
        .await
        .expect("claim");
    row.map_or(0, |(inserted, ..)| inserted)
}

/// A PostgreSQL store on a fresh table made in `layout`, its URL, and the statements of that
/// layout; `None` to skip.
async fn store_in(layout: Layout) -> Option<(String, SqlStore, Statements)> {
    let url = common::with_param(&common::url(Db::Postgres)?, common::layout_param(layout));
    let store = SqlStore::open(&url).expect("valid URL");
    store.ensure_schema().await.expect("lock table");
    assert_eq!(store.layout(), Some(layout));
    let statements = Statements::in_layout(Dialect::Postgres, &store.options().table, layout)
        .expect("statements");
    Some((url, store, statements))
}

/// Makes the lock cell of `job` expired (its row stays).
async fn expire_the_lock(store: &SqlStore) {
    common::exec_raw(
        store,
        &format!(
            "UPDATE {} SET expires_at = now() - interval '1 second' WHERE lock_name = 'job' AND cell = 'lock'",
            store.options().table
        ),
    )
    .await
    .expect("expire the lock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_claims_and_backing_off_deletes_skip_the_flush() {
    losing_claims_skip_the_flush(Layout::OneRow).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_claims_and_backing_off_deletes_skip_the_flush_on_two_rows() {
    losing_claims_skip_the_flush(Layout::TwoRows).await;
}

async fn losing_claims_skip_the_flush(layout: Layout) {
    let Some((url, store, statements)) = store_in(layout).await else {
        return;
    };
    let SqlPool::Postgres(pool) = store.pool() else {
        panic!("a PostgreSQL store")
    };

    // A claim that takes the free lock: durable.
    let mut tx = pool.begin().await.expect("begin");
    assert_eq!(
        claim(&mut tx, &statements.claim_first_async, "a", "", "1").await,
        1
    );
    assert_eq!(synchronous_commit(&mut tx).await, "on");
    tx.commit().await.expect("commit");

    // A claim that finds it held: nothing written, not even a row lock (no transaction id),
    // and nothing to flush.
    let mut tx = pool.begin().await.expect("begin");
    assert_eq!(
        claim(&mut tx, &statements.claim_async, "b", "1", "2").await,
        0
    );
    assert_eq!(synchronous_commit(&mut tx).await, "off");
    let xid: Option<String> = sqlx::query_scalar("SELECT pg_current_xact_id_if_assigned()::text")
        .fetch_one(&mut *tx)
        .await
        .expect("xid");
    assert_eq!(xid, None, "a waiter's claim wrote or locked something");
    tx.rollback().await.expect("rollback");

    // The lock expired, a claim that expected an older counter: it locked a row and inserted
    // nothing, so it does not flush either.
    expire_the_lock(&store).await;
    let mut tx = pool.begin().await.expect("begin");
    assert_eq!(
        claim(&mut tx, &statements.claim_first_async, "c", "", "1").await,
        0
    );
    assert_eq!(synchronous_commit(&mut tx).await, "off");
    tx.rollback().await.expect("rollback");

    // An acquisition's removal of its own cell does not flush; the plain delete does.
    for (sql, setting) in [
        (&statements.delete_async, "off"),
        (&statements.delete, "on"),
    ] {
        let mut tx = pool.begin().await.expect("begin");
        sqlx::query(AssertSqlSafe(sql.clone()))
            .bind("job")
            .bind("counter")
            .bind(i64::MAX)
            .execute(&mut *tx)
            .await
            .expect("delete");
        assert_eq!(synchronous_commit(&mut tx).await, setting, "{sql}");
        tx.rollback().await.expect("rollback");
    }

    // The plain claim, for a caller's transaction, leaves the setting alone either way.
    let mut tx = pool.begin().await.expect("begin");
    assert_eq!(
        claim(&mut tx, &statements.claim_first, "c", "", "1").await,
        0
    );
    assert_eq!(synchronous_commit(&mut tx).await, "on");
    tx.rollback().await.expect("rollback");
    common::drop_table(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_fails_in_a_callers_transaction_keeps_its_durability() {
    let Some(url) = common::url(Db::Postgres) else {
        return;
    };
    let holder = Locker::open(&url).expect("valid URL");
    let mut held = holder.lock("invoice").await.expect("lock");
    let store = holder.sql_store().expect("a SQL store").clone();
    let SqlPool::Postgres(pool) = store.pool() else {
        panic!("a PostgreSQL store")
    };
    let mut tx = pool.begin().await.expect("begin");
    holder
        .lock_in(
            &mut *tx,
            "invoice",
            LockRequest::new().wait_timeout(Duration::from_millis(100)),
        )
        .await
        .expect_err("held by another guard");
    assert_eq!(synchronous_commit(&mut tx).await, "on");
    tx.rollback().await.expect("rollback");
    held.release().await.expect("release");
    common::drop_table(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_loses_a_race_after_waiting_skips_the_flush() {
    for layout in [Layout::OneRow, Layout::TwoRows] {
        claim_losing_a_race_skips_the_flush(layout).await;
    }
}

/// Two claims of a free lock from the same counter: the second qualifies the row, waits for
/// the first's row lock, and finds the counter moved when the first commits. It took no lock
/// cell, so it must not wait for the disk either; the first must.
async fn claim_losing_a_race_skips_the_flush(layout: Layout) {
    let Some((url, store, statements)) = store_in(layout).await else {
        return;
    };
    let SqlPool::Postgres(pool) = store.pool() else {
        panic!("a PostgreSQL store")
    };
    // A released lock at counter 1 (first claimed by a committed claim, then expired).
    let mut conn = pool.acquire().await.expect("connect");
    assert_eq!(
        claim(&mut conn, &statements.claim_first_async, "a", "", "1").await,
        1
    );
    expire_the_lock(&store).await;

    let mut first = pool.begin().await.expect("begin");
    assert_eq!(
        claim(&mut first, &statements.claim_async, "b", "1", "2").await,
        1,
        "{layout:?}: the first claim takes the lock"
    );
    let mut second = pool.begin().await.expect("begin");
    let second_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *second)
        .await
        .expect("pid");
    let claim_async = statements.claim_async.clone();
    let racing = tokio::spawn(async move {
        let won = claim(&mut second, &claim_async, "c", "1", "2").await;
        let setting = synchronous_commit(&mut second).await;
        second.rollback().await.expect("rollback");
        (won, setting)
    });
    // Until the second claim waits for the first's row lock.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: bool = sqlx::query_scalar(
            "SELECT COALESCE((SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1), false)",
        )
        .bind(second_pid)
        .fetch_one(&mut *conn)
        .await
        .expect("pg_stat_activity");
        if waiting {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{layout:?}: the second claim never waited for the first"
        );
        tokio::task::yield_now().await;
    }
    assert_eq!(synchronous_commit(&mut first).await, "on", "{layout:?}");
    first.commit().await.expect("commit");
    let (won, setting) = racing.await.expect("the second claim");
    assert_eq!(won, 0, "{layout:?}: one claim of the two applies");
    assert_eq!(
        setting, "off",
        "{layout:?}: the losing claim skips the flush"
    );
    drop(conn);
    common::drop_table(&url).await;
}
