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
