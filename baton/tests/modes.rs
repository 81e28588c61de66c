//! Shared locks, semaphores and `lock_all` through the Rust API (issue 43), on the memory
//! store, for both strategies that carry modes. The stores' own tests run the same shapes
//! across processes (`tests/tests/modes.rs`).

use crate::common;

use std::time::Duration;

use baton::{ErrorKind, LockRequest, Locker, Mode, Strategy};
use common::builder;

const MODE_STRATEGIES: [Strategy; 2] = [Strategy::Bakery, Strategy::ColumnPrefix];

fn locker(strategy: Strategy) -> Locker {
    builder(strategy)
        .wait_timeout(Duration::from_millis(300))
        .build()
        .expect("valid options")
}

fn kind<T>(r: baton::Result<T>) -> ErrorKind {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.kind(),
    }
}

#[tokio::test]
async fn readers_share_and_a_writer_waits_for_them() {
    for strategy in MODE_STRATEGIES {
        let locker = locker(strategy);
        let a = locker.lock_shared("catalog").await.expect("first reader");
        let b = locker.lock_shared("catalog").await.expect("second reader");
        assert_eq!(a.mode(), Mode::Shared);
        assert_ne!(a.token(), b.token(), "{strategy}: every grant has a token");
        assert_eq!(kind(locker.try_lock("catalog").await), ErrorKind::Busy);
        drop((a, b));
        let mut w = locker.lock("catalog").await.expect("writer after readers");
        assert_eq!(w.mode(), Mode::Exclusive);
        assert_eq!(
            kind(locker.try_lock_shared("catalog").await),
            ErrorKind::Busy,
            "{strategy}: no reader beside a writer"
        );
        let token = w.token();
        w.release().await.expect("release");
        let r = locker
            .lock_shared("catalog")
            .await
            .expect("reader after writer");
        assert!(
            r.token() > token,
            "{strategy}: a reader's token follows the writer's"
        );
    }
}

#[tokio::test]
async fn a_waiting_writer_is_not_overtaken_by_new_readers() {
    for strategy in MODE_STRATEGIES {
        let locker = builder(strategy)
            .wait_timeout(Duration::from_secs(10))
            .build()
            .expect("valid options");
        let reader = locker.lock_shared("feed").await.expect("reader");
        let writer = tokio::spawn({
            let locker = locker.clone();
            async move { locker.lock("feed").await }
        });
        // Once the writer's request is in the row, a new reader must wait behind it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let entries = locker.inspect("feed").await.expect("inspect");
            if entries.len() >= 2 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{strategy}: writer never queued"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            kind(locker.try_lock_shared("feed").await),
            ErrorKind::Busy,
            "{strategy}: a new reader went past a waiting writer"
        );
        drop(reader);
        let w = writer.await.expect("task").expect("the writer gets in");
        assert_eq!(w.mode(), Mode::Exclusive);
    }
}

#[tokio::test]
async fn a_semaphore_admits_its_permits_and_no_more() {
    for strategy in MODE_STRATEGIES {
        let locker = locker(strategy);
        let slots = locker.semaphore("encoders", 3).expect("semaphore");
        assert_eq!(slots.permits(), 3);
        let held: Vec<_> = futures_join(&slots, 3).await;
        assert_eq!(
            kind(slots.try_acquire().await),
            ErrorKind::Busy,
            "{strategy}: a fourth holder"
        );
        assert_eq!(
            kind(slots.acquire_timeout(Duration::from_millis(100)).await),
            ErrorKind::TimedOut
        );
        for mut guard in held {
            guard.release().await.expect("release");
        }
        let again = slots.try_acquire().await.expect("permits came back");
        assert_eq!(again.mode(), Mode::Counted(3));
    }
}

async fn futures_join(slots: &baton::Semaphore, n: usize) -> Vec<baton::Guard> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(slots.try_acquire().await.expect("a free permit"));
    }
    out
}

#[tokio::test]
async fn mode_mix_ups_and_bad_permits_are_typed_errors() {
    for strategy in MODE_STRATEGIES {
        let locker = locker(strategy);
        assert_eq!(kind(locker.semaphore("s", 0)), ErrorKind::InvalidOption);
        assert_eq!(
            kind(locker.semaphore("s", 10_001)),
            ErrorKind::InvalidOption
        );
        assert_eq!(kind(locker.semaphore("", 2)), ErrorKind::InvalidName);
        let three = locker.semaphore("s", 3).expect("valid");
        let _held = three.acquire().await.expect("permit");
        let four = locker.semaphore("s", 4).expect("valid alone");
        let e = four.try_acquire().await.expect_err("two sizes on one name");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{strategy}: {e}");
        let e = locker
            .try_lock_shared("s")
            .await
            .expect_err("shared on a semaphore");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{strategy}: {e}");
        // Nothing of the refused requests was left behind: the permit holder is alone.
        assert_eq!(locker.inspect("s").await.expect("inspect").len(), 1);
    }
    let unique = locker(Strategy::UniqueInsert);
    let e = unique.semaphore("s", 2).expect_err("unique insert");
    assert_eq!(e.kind(), ErrorKind::InvalidOption);
    assert!(e.message().contains("bakery or column-prefix"), "{e}");
    assert_eq!(
        kind(unique.lock_shared("s").await),
        ErrorKind::InvalidOption
    );
}

#[tokio::test]
async fn objects_need_an_exclusive_lease() {
    for strategy in MODE_STRATEGIES {
        let locker = locker(strategy);
        let e = locker
            .get_and_lock_with("doc", LockRequest::new().shared())
            .await
            .expect_err("object under a shared lease");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{strategy}: {e}");
        drop(locker.try_lock("doc").await.expect("nothing was left held"));
    }
    let e = builder(Strategy::Bakery)
        .options(baton::LockOptions {
            strategy: Strategy::Bakery,
            mode: Mode::Shared,
            ..baton::LockOptions::default()
        })
        .build()
        .expect_err("a shared default");
    assert_eq!(e.kind(), ErrorKind::InvalidOption);
}

#[tokio::test]
async fn lock_all_takes_everything_in_one_order_or_nothing() {
    for strategy in MODE_STRATEGIES {
        let locker = locker(strategy);
        let guards = locker
            .lock_all(&["foo.baz", "foo", "foo.bar.woof"], LockRequest::new())
            .await
            .expect("all free");
        let names: Vec<&str> = guards.iter().map(|g| g.name()).collect();
        assert_eq!(names, ["foo", "foo.bar.woof", "foo.baz"]);
        drop(guards);
        // One of them held elsewhere: a timeout, and nothing of the call stays held.
        let other = locker.lock("b").await.expect("b");
        let e = locker
            .lock_all(
                &["c", "b", "a"],
                LockRequest::new().wait_timeout(Duration::from_millis(200)),
            )
            .await
            .expect_err("b is held");
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        let a = locker.try_lock("a").await.expect("a was given back");
        let c = locker.try_lock("c").await.expect("c was never taken");
        drop((a, c, other));
        assert_eq!(
            kind(locker.lock_all(&["a", "a"], LockRequest::new()).await),
            ErrorKind::InvalidOption
        );
        assert_eq!(
            kind(locker.lock_all(&[], LockRequest::new()).await),
            ErrorKind::InvalidOption
        );
    }
}

#[tokio::test]
async fn paths_cover_their_subtree() {
    for strategy in MODE_STRATEGIES {
        let locker = builder(strategy)
            .paths(true)
            .wait_timeout(Duration::from_millis(200))
            .build()
            .expect("valid options");
        let cache = locker.lock("app.cache").await.expect("app.cache");
        assert_eq!(kind(locker.try_lock("app").await), ErrorKind::Busy);
        assert_eq!(
            kind(locker.try_lock_shared("app.cache.users").await),
            ErrorKind::Busy
        );
        let db = locker.try_lock("app.db").await.expect("a sibling");
        let apple = locker.try_lock("apple").await.expect("not a parent");
        let held: Vec<String> = locker
            .inspect("app.cache")
            .await
            .expect("inspect")
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(held, ["app.cache"], "{strategy}: one path's entries");
        drop((cache, db, apple));
        assert_eq!(
            kind(locker.try_lock("a..b").await),
            ErrorKind::InvalidName,
            "{strategy}"
        );
        assert_eq!(kind(locker.try_lock("a.").await), ErrorKind::InvalidName);
        assert_eq!(
            kind(
                locker
                    .lock_all(&["foo", "foo.bar"], LockRequest::new())
                    .await
            ),
            ErrorKind::InvalidOption,
            "{strategy}: foo already covers foo.bar"
        );
        let e = locker
            .get_and_lock("app.cache")
            .await
            .expect_err("objects live beside flat names");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
    }
    let e = builder(Strategy::UniqueInsert)
        .paths(true)
        .build()
        .expect_err("unique insert");
    assert_eq!(e.kind(), ErrorKind::InvalidOption);
}
