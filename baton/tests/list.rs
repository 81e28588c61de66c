//! `Locker::list`: every lock of the store, with its strategy, owner and token.

use baton::{LockRequest, Locker, MemoryStore, Strategy};

#[tokio::test]
async fn lists_locks_of_every_strategy_until_released() -> baton::Result<()> {
    let locker = Locker::new(MemoryStore::new());
    let mut guards = Vec::new();
    for strategy in Strategy::ALL {
        let name = format!("job-{strategy}");
        guards.push(
            locker
                .lock_with(&name, LockRequest::new().strategy(strategy))
                .await?,
        );
    }
    let listed: Vec<(String, Strategy, Option<u64>)> = locker
        .list()
        .await?
        .into_iter()
        .map(|i| (i.name, i.strategy, i.token))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("job-bakery".to_string(), Strategy::Bakery, Some(1)),
            (
                "job-column-prefix".to_string(),
                Strategy::ColumnPrefix,
                Some(1)
            ),
            (
                "job-unique-insert".to_string(),
                Strategy::UniqueInsert,
                Some(1)
            ),
        ]
    );
    for mut g in guards {
        g.release().await?;
    }
    assert_eq!(locker.list().await?, vec![]);
    Ok(())
}

/// Sequential acquisitions of a name by one locker reuse their lock column (so releases do not
/// pile deleted columns into the row); concurrent ones never share one.
#[tokio::test]
async fn sequential_acquisitions_reuse_a_column_concurrent_ones_do_not() -> baton::Result<()> {
    let locker = Locker::new(MemoryStore::new());
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        let name = format!("reuse-{strategy}");
        let request = || LockRequest::new().strategy(strategy).try_once();
        let mut first = locker.lock_with(&name, request()).await?;
        let column = first.lease().column().to_string();
        first.release().await?;
        let mut second = locker.lock_with(&name, request()).await?;
        assert_eq!(second.lease().column(), column, "{strategy}: reused");
        assert!(
            second.token() > first.token(),
            "{strategy}: tokens still increase"
        );
        // A concurrent contender of the same locker gets another column (and is refused).
        let busy = locker.lock_with(&name, request()).await;
        assert_eq!(
            busy.map(|_| ()).map_err(|e| e.kind()),
            Err(baton::ErrorKind::Busy),
            "{strategy}"
        );
        second.release().await?;
    }
    Ok(())
}
