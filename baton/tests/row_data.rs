//! Column prefix's read-modify-write: acquire-and-read-row and release-with-mutation.

use crate::common;

use baton::{Cell, Command, Consistency, ErrorKind, LockRequest, Reply, Strategy, Write};
use baton_kernel::{ColumnFilter, ReadConsistency};
use common::{locker, within};

fn put(row: &str, column: &str, value: &str) -> Command {
    Command::Put {
        row: row.into(),
        column: column.into(),
        value: value.into(),
        ttl: None,
        consistency: Consistency::Quorum,
    }
}

async fn row_of(locker: &baton::Locker, row: &str) -> Vec<Cell> {
    let read = Command::Read {
        row: row.into(),
        filter: ColumnFilter::All,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    };
    match locker.store().execute(read).await {
        Reply::Cells(cells) => cells,
        other => panic!("read answered {other:?}"),
    }
}

#[tokio::test]
async fn read_row_returns_data_columns_and_release_with_writes_them() {
    let locker = locker(Strategy::ColumnPrefix);
    assert_eq!(
        locker
            .store()
            .execute(put("account 7", "balance", "10"))
            .await,
        Reply::Written
    );
    let mut guard = locker
        .lock_with("account 7", LockRequest::new().read_row(true))
        .await
        .expect("lock");
    let row = guard.row();
    assert_eq!(
        row,
        [Cell {
            column: "balance".into(),
            value: "10".into(),
            ttl_remaining: None,
            // The version the put made, whatever stamp the store gave it.
            stamp: row.first().map_or(0, |c| c.stamp),
        }]
    );
    assert!(row[0].stamp > 0, "{row:?}");
    guard
        .release_with(vec![
            Write::Put {
                column: "balance".into(),
                value: "11".into(),
                ttl: None,
            },
            Write::Put {
                column: "audit".into(),
                value: "+1".into(),
                ttl: None,
            },
        ])
        .await
        .expect("release with mutation");
    let cells = row_of(&locker, "account 7").await;
    let columns: Vec<(&str, &str)> = cells
        .iter()
        .map(|c| (c.column.as_str(), c.value.as_str()))
        .collect();
    assert!(columns.contains(&("balance", "11")), "{columns:?}");
    assert!(columns.contains(&("audit", "+1")), "{columns:?}");
    // No lock column is left, only the fencing counter (the bare prefix).
    let lock_columns: Vec<&str> = columns
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| c.starts_with("_LOCK_"))
        .collect();
    assert_eq!(lock_columns, vec!["_LOCK_"]);
    assert!(locker
        .inspect("account 7")
        .await
        .expect("inspect")
        .is_empty());
    // The next holder reads what the last one wrote.
    let next = locker
        .lock_with("account 7", LockRequest::new().read_row(true))
        .await
        .expect("lock again");
    let balance = next.row().iter().find(|c| c.column == "balance");
    assert_eq!(balance.map(|c| c.value.as_str()), Some("11"));
}

#[tokio::test]
async fn without_read_row_the_row_is_empty() {
    let locker = locker(Strategy::ColumnPrefix);
    locker.store().execute(put("r", "data", "x")).await;
    let guard = locker.lock("r").await.expect("lock");
    assert!(guard.row().is_empty());
}

#[tokio::test]
async fn a_custom_lock_id_names_the_lock_column() {
    let locker = locker(Strategy::ColumnPrefix);
    let guard = locker
        .lock_with("r", LockRequest::new().lock_id("worker-7"))
        .await
        .expect("lock");
    assert_eq!(guard.lease().column(), "_LOCK_worker-7");
}

#[tokio::test]
async fn bad_mutations_are_refused_and_the_lock_stays_held() {
    // Only column prefix shares its row with data.
    for strategy in [Strategy::UniqueInsert, Strategy::Bakery] {
        let locker = locker(strategy);
        let mut guard = locker.lock("r").await.expect("lock");
        let e = guard
            .release_with(vec![Write::Delete {
                column: "data".into(),
            }])
            .await
            .expect_err("not a data-row strategy");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{strategy}: {e}");
        assert!(guard.is_held(), "{strategy}");
        guard.release().await.expect("plain release still works");
    }

    let prefix = locker(Strategy::ColumnPrefix);
    let mut guard = prefix.lock("r").await.expect("lock");
    let own_column = guard.lease().column().to_owned();
    let e = guard
        .release_with(vec![Write::Delete { column: own_column }])
        .await
        .expect_err("a lock column");
    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
    assert!(guard.is_held());
    drop(guard);
    within(
        std::time::Duration::from_secs(10),
        "drop to release",
        async {
            while prefix.try_lock("r").await.is_err() {
                tokio::task::yield_now().await;
            }
        },
    )
    .await;
}
