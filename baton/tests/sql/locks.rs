//! Every strategy through `Locker::open(url)` on each database: lock, try, hand-off, expiry,
//! renewal, release, force, purge and listing.

use std::time::Duration;

use baton::{EntryState, ErrorKind, LockRequest, Locker, Strategy};

use crate::per_db;

/// The shortest TTL a test here may count on outliving a pause of the test process: the
/// machines the suite runs on have been seen to stop a process for 0.4 s at a time, which a
/// keep-alive renewing at a third of a 2 s lease (1.3 s to spare) rides out.
const STALL_PROOF_TTL: Duration = Duration::from_secs(2);

fn locker(url: &str, strategy: Strategy) -> Locker {
    Locker::builder(baton::SqlStore::open(url).expect("valid URL"))
        .strategy(strategy)
        .wait_timeout(Duration::from_secs(10))
        .build()
        .expect("valid options")
}

per_db!(lock_try_and_hand_off, |url: String| async move {
    // Straight from the URL, with the locker defaults; the strategy per request.
    let a = Locker::open(&url).expect("valid URL");
    let b = Locker::open(&url).expect("valid URL");
    for strategy in Strategy::ALL {
        let name = format!("job {strategy}");
        let request = move || LockRequest::new().strategy(strategy);
        let mut first = a.lock_with(&name, request()).await.expect("uncontended");
        assert!(first.is_held());
        let e = b
            .lock_with(&name, request().try_once())
            .await
            .expect_err("held");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        let waiter = {
            let b = b.clone();
            let name = name.clone();
            tokio::spawn(async move { b.lock_with(&name, request()).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiter.is_finished(), "{strategy}: the waiter must wait");
        let token = first.token();
        first.release().await.expect("release");
        let mut second = waiter.await.expect("task").expect("handed off");
        assert!(
            second.token() > token,
            "{strategy}: fencing tokens increase"
        );
        second.release().await.expect("release");
        assert_eq!(
            a.inspect_with(&name, strategy).await.expect("inspect"),
            vec![],
            "{strategy}"
        );
    }
});

per_db!(
    a_crashed_holder_expires_with_its_ttl,
    |url: String| async move {
        for strategy in Strategy::ALL {
            let name = format!("crash {strategy}");
            let a = locker(&url, strategy);
            let crashed = a
                .lock_with(
                    &name,
                    LockRequest::new().ttl(STALL_PROOF_TTL).keep_alive(false),
                )
                .await
                .expect("lock");
            // A crash: no release, no renewal.
            std::mem::forget(crashed);
            let e = a.try_lock(&name).await.expect_err("still held");
            assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
            tokio::time::sleep(STALL_PROOF_TTL + Duration::from_millis(200)).await;
            let mut next = a
                .try_lock(&name)
                .await
                .expect("expired by the server's clock");
            assert!(next.token() >= 2, "{strategy}: {}", next.token());
            next.release().await.expect("release");
        }
    }
);

per_db!(renewal_extends_the_lease, |url: String| async move {
    let ttl = 2 * STALL_PROOF_TTL;
    for strategy in Strategy::ALL {
        let name = format!("renew {strategy}");
        let a = locker(&url, strategy);
        let mut guard = a
            .lock_with(&name, LockRequest::new().ttl(ttl).keep_alive(false))
            .await
            .expect("lock");
        let before = guard.lease().deadline();
        // Renewed at half the TTL, which leaves a stalled machine half of it to send the
        // renewal in before the first lease lapses.
        tokio::time::sleep(ttl / 2).await;
        guard.renew().await.expect("renew");
        assert!(guard.lease().deadline() > before, "{strategy}");
        // Past the first TTL, but renewed (with at least a stall's worth to spare): still ours.
        tokio::time::sleep(ttl / 2 + Duration::from_millis(300)).await;
        assert!(guard.is_held(), "{strategy}: {:?}", guard.loss());
        let e = a.try_lock(&name).await.expect_err("renewed");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        guard
            .release()
            .await
            .expect("release within the renewed lease");
    }
});

per_db!(keep_alive_holds_past_the_ttl, |url: String| async move {
    let a = locker(&url, Strategy::UniqueInsert);
    let guard = a
        .lock_with("kept", LockRequest::new().ttl(STALL_PROOF_TTL))
        .await
        .expect("lock");
    // Renewed twice by then (at each third of the validity).
    tokio::time::sleep(STALL_PROOF_TTL + Duration::from_millis(500)).await;
    assert!(guard.is_held(), "{:?}", guard.loss());
    assert_eq!(
        a.try_lock("kept").await.map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::Busy)
    );
});

per_db!(list_force_and_purge, |url: String| async move {
    let a = locker(&url, Strategy::UniqueInsert);
    let mut guards = Vec::new();
    for strategy in Strategy::ALL {
        let name = format!("list-{strategy}");
        guards.push(
            a.lock_with(&name, LockRequest::new().strategy(strategy))
                .await
                .expect("lock"),
        );
    }
    let listed = a.list().await.expect("list");
    let summary: Vec<(String, Strategy, Option<u64>, EntryState)> = listed
        .iter()
        .map(|i| (i.name.clone(), i.strategy, i.token, i.state))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "list-bakery".into(),
                Strategy::Bakery,
                Some(1),
                EntryState::Held
            ),
            (
                "list-column-prefix".into(),
                Strategy::ColumnPrefix,
                Some(1),
                EntryState::Held
            ),
            (
                "list-unique-insert".into(),
                Strategy::UniqueInsert,
                Some(1),
                EntryState::Held
            ),
        ]
    );
    for info in &listed {
        // Owner host and pid, created and expiry are all there for operators.
        assert!(
            info.owner.contains(&format!(":{}:", std::process::id())),
            "{info:?}"
        );
        assert!(info.created_unix_ms.is_some_and(|ms| ms > 0), "{info:?}");
        assert!(
            info.expires_in
                .is_some_and(|d| d <= Duration::from_secs(60)),
            "{info:?}"
        );
    }
    // Force: the holder's entry goes, whoever holds it.
    let removed = a
        .force_release_with("list-unique-insert", Strategy::UniqueInsert)
        .await
        .expect("force");
    assert_eq!(removed.len(), 1, "{removed:?}");
    let b = locker(&url, Strategy::UniqueInsert);
    let mut taken = b
        .try_lock("list-unique-insert")
        .await
        .expect("broken lock is free");
    // Larger than the broken holder's 1 (the force itself moves the counter, so the broken
    // holder can tell: the next token is not simply 2).
    assert!(taken.token() > 1, "fencing continues after a force");
    taken.release().await.expect("release");
    // Purge removes only expired entries.
    let short = a
        .lock_with(
            "short",
            LockRequest::new()
                .ttl(Duration::from_millis(300))
                .keep_alive(false),
        )
        .await
        .expect("lock");
    std::mem::forget(short);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let purged = a.purge(None).await.expect("purge");
    assert_eq!(purged, vec![("short".to_string(), "lock".to_string())]);
    assert_eq!(a.list().await.expect("list").len(), 2);
    drop(guards);
});
