//! What a holder and a waiter see when the store fails.

use crate::common;

use std::time::Duration;

use baton::{ErrorKind, Locker, Strategy};
use common::{within, FlakyStore};

const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn a_dead_store_gives_store_unavailable_with_a_clear_message() {
    for strategy in Strategy::ALL {
        let store = FlakyStore::new();
        store.kill();
        let locker = Locker::builder(store.clone())
            .strategy(strategy)
            .build()
            .expect("valid");
        let e = locker.lock("job").await.expect_err("dead store");
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
        let message = e.to_string();
        for part in ["connection refused", "flaky test store", "3 times", "job"] {
            assert!(
                message.contains(part),
                "{strategy}: {message:?} lacks {part:?}"
            );
        }
        // Unique insert's insert answered `Unavailable` may still have been accepted (a
        // Cassandra commit round), so it also tries to remove it, store_attempts times too.
        let commands = if strategy == Strategy::UniqueInsert {
            2
        } else {
            1
        };
        assert_eq!(
            store.executed(),
            3 * commands,
            "{strategy}: store_attempts sends of each command"
        );
        let e = locker.inspect("job").await.expect_err("dead store");
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_dies_under_a_guard_makes_it_lost_by_its_deadline() {
    for strategy in Strategy::ALL {
        let store = FlakyStore::new();
        let locker = Locker::builder(store.clone())
            .strategy(strategy)
            .ttl(100 * MS)
            .build()
            .expect("valid");
        let started = tokio::time::Instant::now();
        let guard = locker.lock("job").await.expect("lock");
        let deadline = guard.lease().deadline();
        let before = store.executed();
        store.kill();
        within(
            Duration::from_secs(10),
            "the guard to be lost",
            guard.lost(),
        )
        .await;
        let now = locker.clock().now();
        // Lost no later than the deadline (timers have 1 ms resolution), and so before the
        // store's TTL can have freed the lock for someone else.
        assert!(
            now <= deadline.saturating_add(MS),
            "{strategy}: lost at {now:?}, deadline {deadline:?}"
        );
        assert!(
            started.elapsed() < 100 * MS,
            "{strategy}: {:?}",
            started.elapsed()
        );
        assert!(!guard.is_held(), "{strategy}");
        let loss = guard.loss().expect("a reason");
        assert_eq!(loss.kind(), ErrorKind::Lost, "{strategy}: {loss}");
        // It kept trying after the first renewal failed (one renewal sends its command
        // store_attempts = 3 times).
        let sent = store.executed() - before;
        assert!(sent > 3, "{strategy}: {sent} commands");
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_comes_back_in_time_keeps_the_lease() {
    for strategy in Strategy::ALL {
        let store = FlakyStore::new();
        let locker = Locker::builder(store.clone())
            .strategy(strategy)
            .ttl(Duration::from_secs(3))
            .build()
            .expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        store.kill();
        // Past the first renewal point (a third of the validity), with renewals failing.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(guard.is_held(), "{strategy}: still within the deadline");
        store.revive();
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(
            guard.is_held(),
            "{strategy}: renewed once the store was back"
        );
        assert_eq!(guard.loss(), None);
    }
}
