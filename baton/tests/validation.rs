//! Bad input gives clear errors of the right kind, never a panic.

use crate::common;

use std::future::Future;
use std::time::Duration;

use baton::{ErrorKind, LockOptions, LockRequest, Locker, MemoryStore, RetryPolicy, Strategy};
use common::locker;

fn bad_names() -> Vec<String> {
    vec![
        String::new(),
        "x".repeat(256),
        String::from("a\0b"),
        "é".repeat(128),
    ]
}

#[tokio::test]
async fn bad_names_are_invalid_name_everywhere() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        for name in bad_names() {
            let shown = name.escape_debug().to_string();
            let kinds = [
                locker.lock(&name).await.map(|_| ()).map_err(|e| e.kind()),
                locker
                    .try_lock(&name)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.kind()),
                locker
                    .inspect(&name)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.kind()),
                locker
                    .purge(Some(&name))
                    .await
                    .map(|_| ())
                    .map_err(|e| e.kind()),
                locker
                    .force_release(&name)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.kind()),
            ];
            for kind in kinds {
                assert_eq!(kind, Err(ErrorKind::InvalidName), "{strategy}: {shown}");
            }
        }
        // The longest allowed name works.
        let longest = "x".repeat(255);
        assert!(locker.try_lock(&longest).await.is_ok(), "{strategy}");
    }
}

#[tokio::test]
async fn names_say_which_rule_they_broke() {
    let locker = locker(Strategy::UniqueInsert);
    let message = |name: String| {
        let locker = locker.clone();
        async move {
            locker
                .try_lock(&name)
                .await
                .expect_err("bad name")
                .message()
                .to_owned()
        }
    };
    assert!(message(String::new()).await.contains("empty"));
    assert!(message("x".repeat(256)).await.contains("255"));
    assert!(message("a\0b".into()).await.contains("NUL"));
}

#[tokio::test]
async fn out_of_range_ttls_are_invalid_options() {
    for ttl in [
        Duration::ZERO,
        Duration::from_millis(9),
        LockOptions::MAX_TTL + Duration::from_secs(1),
        Duration::MAX,
    ] {
        let e = Locker::builder(MemoryStore::new())
            .ttl(ttl)
            .build()
            .expect_err("builder ttl");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{ttl:?}: {e}");
        assert!(e.message().contains("ttl"), "{e}");

        let e = locker(Strategy::Bakery)
            .lock_with("job", LockRequest::new().ttl(ttl))
            .await
            .expect_err("request ttl");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{ttl:?}: {e}");
    }
}

#[tokio::test]
async fn other_bad_options_are_named() {
    let cases: Vec<(baton::Result<Locker>, &str)> = vec![
        (
            Locker::builder(MemoryStore::new())
                .retry(RetryPolicy {
                    initial: Duration::ZERO,
                    ..RetryPolicy::default()
                })
                .build(),
            "retry",
        ),
        (
            Locker::builder(MemoryStore::new())
                .store_attempts(0)
                .build(),
            "store_attempts",
        ),
        (
            Locker::builder(MemoryStore::new())
                .ttl(Duration::from_secs(1))
                .drift_margin(Duration::from_secs(2))
                .build(),
            "drift",
        ),
    ];
    for (result, word) in cases {
        let e = result.expect_err(word);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
        assert!(e.message().contains(word), "{e} should mention {word}");
    }
    let e = locker(Strategy::UniqueInsert)
        .lock_with("job", LockRequest::new().fail_on_stale_lock(true))
        .await
        .expect_err("prefix option on unique insert");
    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
    assert!(e.message().contains("column-prefix"), "{e}");
    let e = locker(Strategy::ColumnPrefix)
        .lock_with("job", LockRequest::new().cell_ttl(Duration::from_secs(1)))
        .await
        .expect_err("cell ttl below the lease ttl");
    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
}

#[test]
fn bad_store_urls_are_invalid_options_naming_the_url() {
    for url in [
        "",
        "memory",
        "memory:extra",
        "1memory:",
        "ftp://example/locks",
        "postgres:",
        "postgres:/nohost",
    ] {
        let e = Locker::open(url).expect_err(url);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{url:?}: {e}");
        assert!(e.message().contains(&format!("{url:?}")), "{url:?}: {e}");
    }
}

#[test]
fn sql_stores_open_lazily_or_say_they_are_not_built_in_without_leaking_passwords() {
    // Opening never connects (and needs no runtime): nothing listens on db1 or db2.
    for (url, built, feature) in [
        (
            "sqlite:///var/lib/baton-test/locks.db",
            cfg!(feature = "sqlite"),
            "sqlite",
        ),
        (
            "postgres://app:s3cret@db1:5432/locks",
            cfg!(feature = "postgres"),
            "postgres",
        ),
        (
            "mysql://app:s3cret@db2/locks?table=t",
            cfg!(feature = "mysql"),
            "mysql",
        ),
    ] {
        match Locker::open(url) {
            Ok(locker) => {
                assert!(built, "{url} opened without its feature");
                assert!(!format!("{locker:?}").contains("s3cret"), "{locker:?}");
            }
            Err(e) => {
                assert!(!built, "{url}: {e}");
                assert_eq!(e.kind(), ErrorKind::InvalidOption, "{url}: {e}");
                assert!(e.message().contains(feature), "{e}");
                assert!(!e.message().contains("s3cret"), "{e}");
            }
        }
    }
    // Opening never connects, so a Cassandra URL opens whenever the store is built in.
    let cassandra_built = cfg!(feature = "cassandra");
    match Locker::open("cassandra://c1,c2/locks?consistency=quorum") {
        Ok(_) => assert!(cassandra_built, "opened without the feature"),
        Err(e) => {
            assert!(!cassandra_built, "{e}");
            assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
            assert!(e.message().contains("not built in"), "{e}");
            assert!(e.message().contains("Cassandra"), "{e}");
        }
    }
    assert!(Locker::open("memory:").is_ok());
}

#[test]
fn the_async_api_outside_a_runtime_is_an_error_not_a_panic() {
    let locker = locker(Strategy::UniqueInsert);
    // Poll the future by hand, without any runtime.
    let mut future = Box::pin(locker.lock("job"));
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(e)) => {
            assert_eq!(e.kind(), ErrorKind::WrongContext, "{e}");
            assert!(e.message().contains("tokio runtime"), "{e}");
        }
        other => panic!(
            "expected an error at once, got {:?}",
            other.map(|r| r.map(|_| ()))
        ),
    }
}

#[tokio::test]
async fn errors_name_the_lock_the_store_and_the_holder_as_fields() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let held = locker.lock("a/job").await.expect("lock");
        let busy = locker.try_lock("a/job").await.expect_err("held");
        assert_eq!(busy.kind(), ErrorKind::Busy, "{strategy}: {busy}");
        assert_eq!(busy.lock(), Some("a/job"), "{strategy}: {busy:?}");
        assert_eq!(busy.store(), Some("memory store"), "{strategy}: {busy:?}");
        let holder = held.lease().owner().key();
        assert_eq!(busy.holder(), Some(holder.as_str()), "{strategy}: {busy:?}");
        // The fields are not in the message twice.
        assert_eq!(
            busy.message().matches(&holder).count(),
            1,
            "{strategy}: {busy}"
        );
        let bad = locker.lock("").await.expect_err("empty name");
        assert_eq!(bad.kind(), ErrorKind::InvalidName);
        assert_eq!(bad.holder(), None);
    }
}

#[test]
fn every_kind_has_its_code_as_discriminant() {
    for kind in ErrorKind::ALL {
        assert_eq!(kind as u32, kind.code(), "{kind}");
        assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
    }
    assert_eq!(ErrorKind::Cancelled.code(), 11);
    assert_eq!(ErrorKind::Internal.code(), 12);
    assert_eq!(ErrorKind::RuntimeFailed.as_str(), "runtime_failed");
    assert_eq!(ErrorKind::WrongContext.as_str(), "wrong_context");
}
