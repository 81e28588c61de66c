//! Objects beside locks through the Rust API (async and blocking) on the memory store, with
//! every strategy: seed 002's two examples, concurrent increments that must end exact, and the
//! errors a user meets.

use std::sync::Arc;

use baton::{BlockingLocker, ErrorKind, LockRequest, Locker, Strategy};

fn locker(strategy: Strategy) -> Locker {
    Locker::builder(baton::MemoryStore::new())
        .strategy(strategy)
        .build()
        .expect("locker")
}

fn number(bytes: Option<&[u8]>) -> u64 {
    bytes
        .map(|b| {
            std::str::from_utf8(b)
                .expect("utf-8")
                .parse()
                .expect("a number")
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn the_quote_example_runs_on_every_strategy() {
    for strategy in Strategy::ALL {
        let quotes = locker(strategy);
        quotes.insert("GOOG", "1053.00").await.expect("insert");
        // Read & lock the object, change it, update & unlock in one step.
        let mut quote = quotes.get_and_lock("GOOG").await.expect("get_and_lock");
        assert_eq!(quote.value(), Some(&b"1053.00"[..]));
        assert_eq!(quote.version(), 1);
        let v = quote
            .update_locked_and_release("1053.26")
            .await
            .expect("update_locked_and_release");
        assert_eq!(v, 2, "{strategy}");
        assert!(!quote.guard().is_held());
        let now = quotes.get("GOOG").await.expect("get").expect("exists");
        assert_eq!((now.value.as_slice(), now.version), (&b"1053.26"[..], 2));
        // The guard is spent.
        assert_eq!(
            quote
                .update_locked_and_retain("x")
                .await
                .map_err(|e| e.kind()),
            Err(ErrorKind::NotOwner)
        );
    }
}

/// Seed 002's optimistic loop: get, change, update_optimistic; on a mismatch read again; when
/// the object is gone, insert it.
async fn set_price(quotes: &Locker, price: &str) -> u32 {
    for attempt in 1..=100 {
        match quotes.get("GOOG").await.expect("get") {
            Some(quote) => match quotes.update_optimistic("GOOG", price, quote.version).await {
                Ok(_) => return attempt,
                Err(e) if e.kind() == ErrorKind::VersionMismatch => continue,
                Err(e) if e.kind() == ErrorKind::ObjectNotFound => continue,
                Err(e) => panic!("{e}"),
            },
            None => match quotes.insert("GOOG", price).await {
                Ok(_) => return attempt,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("{e}"),
            },
        }
    }
    panic!("max optimistic update attempts exceeded")
}

#[tokio::test]
async fn the_optimistic_loop_inserts_when_gone_and_updates_otherwise() {
    for strategy in Strategy::ALL {
        let quotes = locker(strategy);
        assert_eq!(set_price(&quotes, "1052.42").await, 1);
        assert_eq!(set_price(&quotes, "1052.43").await, 1);
        let q = quotes.get("GOOG").await.expect("get").expect("exists");
        assert_eq!((q.value.as_slice(), q.version), (&b"1052.43"[..], 2));
        quotes.remove("GOOG").await.expect("remove");
        assert_eq!(quotes.get("GOOG").await.expect("get"), None);
        assert_eq!(
            quotes
                .update_optimistic("GOOG", "1", 2)
                .await
                .map_err(|e| e.kind()),
            Err(ErrorKind::ObjectNotFound)
        );
        set_price(&quotes, "1").await;
        // Inserted again after its removal, it goes on from its last version.
        assert_eq!(
            quotes.get("GOOG").await.expect("get").map(|q| q.version),
            Some(4)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_locked_and_optimistic_increments_end_exact() {
    for strategy in Strategy::ALL {
        let quotes = Arc::new(locker(strategy));
        let mut tasks = Vec::new();
        for i in 0..8 {
            let quotes = Arc::clone(&quotes);
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    if i % 2 == 0 {
                        let mut o = quotes.get_and_lock("counter").await.expect("lock");
                        let n = number(o.value()) + 1;
                        if o.value().is_none() {
                            o.insert_locked(n.to_string()).await.expect("insert");
                            o.unlock().await.expect("unlock");
                        } else {
                            o.update_locked_and_release(n.to_string())
                                .await
                                .expect("update");
                        }
                    } else {
                        loop {
                            let cur = quotes.get("counter").await.expect("get");
                            let result = match &cur {
                                Some(c) => {
                                    let n = number(Some(&c.value)) + 1;
                                    quotes
                                        .update_optimistic("counter", n.to_string(), c.version)
                                        .await
                                }
                                None => quotes.insert("counter", "1").await,
                            };
                            match result {
                                Ok(_) => break,
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        ErrorKind::VersionMismatch
                                            | ErrorKind::Busy
                                            | ErrorKind::AlreadyExists
                                    ) =>
                                {
                                    tokio::task::yield_now().await
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        let end = quotes.get("counter").await.expect("get").expect("exists");
        assert_eq!(number(Some(&end.value)), 200, "{strategy}");
    }
}

#[tokio::test]
async fn a_locked_object_refuses_others_and_a_broken_lock_refuses_its_holder() {
    for strategy in Strategy::ALL {
        let quotes = locker(strategy);
        quotes.insert("GOOG", "1").await.expect("insert");
        let mut held = quotes.get_and_lock("GOOG").await.expect("lock");
        let e = quotes
            .update_optimistic("GOOG", "2", 1)
            .await
            .expect_err("busy");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        assert_eq!(
            quotes.remove("GOOG").await.map_err(|e| e.kind()),
            Err(ErrorKind::Busy)
        );
        let other = quotes
            .get_and_lock_with("GOOG", LockRequest::new().try_once())
            .await
            .expect_err("held");
        assert_eq!(other.kind(), ErrorKind::Busy);
        // An operator breaks the lock: the holder's write is refused at the store.
        quotes.force_release("GOOG").await.expect("force");
        let e = held.update_locked_and_retain("3").await.expect_err("lost");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(!held.guard().is_held());
        assert_eq!(
            quotes.get("GOOG").await.expect("get").map(|q| q.value),
            Some(b"1".to_vec())
        );
    }
}

#[tokio::test]
async fn bad_input_gives_typed_errors() {
    let quotes = locker(Strategy::UniqueInsert);
    let cases: Vec<(&str, Vec<u8>, ErrorKind)> = vec![
        ("", b"x".to_vec(), ErrorKind::InvalidName),
        ("a\0b", b"x".to_vec(), ErrorKind::InvalidName),
        ("GOOG", Vec::new(), ErrorKind::InvalidOption),
        (
            "GOOG",
            vec![0; baton::baton_kernel::MAX_OBJECT_BYTES + 1],
            ErrorKind::InvalidOption,
        ),
    ];
    for (name, value, kind) in cases {
        assert_eq!(
            quotes
                .insert(name, value.clone())
                .await
                .map_err(|e| e.kind()),
            Err(kind),
            "{name:?} {}",
            value.len()
        );
        assert_eq!(
            quotes
                .insert_and_lock(name, value.clone())
                .await
                .map(drop)
                .map_err(|e| e.kind()),
            Err(kind)
        );
    }
    // A value of exactly the limit is fine, and comes back whole.
    let big = vec![0xa5; baton::baton_kernel::MAX_OBJECT_BYTES];
    quotes.insert("big", big.clone()).await.expect("1 MiB");
    assert_eq!(
        quotes.get("big").await.expect("get").map(|q| q.value),
        Some(big)
    );
    // A name that holds a lock but no object.
    let mut bare = quotes.get_and_lock("bare").await.expect("lock");
    assert_eq!(bare.value(), None);
    assert_eq!(
        bare.update_locked_and_retain("x")
            .await
            .map_err(|e| e.kind()),
        Err(ErrorKind::ObjectNotFound)
    );
    assert!(bare.guard().is_held());
    assert_eq!(bare.insert_locked("x").await.expect("insert"), 1);
    assert_eq!(
        bare.insert_locked("y").await.map_err(|e| e.kind()),
        Err(ErrorKind::AlreadyExists)
    );
    bare.remove_locked().await.expect("remove_locked");
    assert_eq!(
        bare.unlock().await.map_err(|e| e.kind()),
        Err(ErrorKind::NotOwner)
    );
    assert_eq!(quotes.get("bare").await.expect("get"), None);
    // insert_and_lock over an existing object releases the lock it took.
    quotes.insert("taken", "1").await.expect("insert");
    assert_eq!(
        quotes
            .insert_and_lock("taken", "2")
            .await
            .map(drop)
            .map_err(|e| e.kind()),
        Err(ErrorKind::AlreadyExists)
    );
    drop(quotes.try_lock("taken").await.expect("released"));
}

#[test]
fn the_blocking_api_runs_the_quote_example() {
    let quotes = BlockingLocker::new(locker(Strategy::Bakery));
    let mut quote = quotes
        .insert_and_lock("GOOG", "1053.00")
        .expect("insert_and_lock");
    assert_eq!(quote.version(), 1);
    assert_eq!(
        quote.get_locked().expect("get_locked"),
        Some(&b"1053.00"[..])
    );
    assert_eq!(
        quote.update_locked_and_retain("1053.10").expect("retain"),
        2
    );
    quote.lock_refresh().expect("refresh");
    assert_eq!(
        quote.update_locked_and_release("1053.26").expect("release"),
        3
    );
    drop(quote);
    let got = quotes.get("GOOG").expect("get").expect("exists");
    assert_eq!(got.version, 3);
    assert_eq!(
        quotes
            .update_optimistic("GOOG", "1", 3)
            .expect("optimistic"),
        4
    );
    {
        let _held = quotes.get_and_lock("GOOG").expect("lock");
        assert_eq!(
            quotes
                .update_optimistic("GOOG", "2", 4)
                .map_err(|e| e.kind()),
            Err(ErrorKind::Busy)
        );
    }
    // Dropped: released before drop returned.
    assert_eq!(quotes.update_optimistic("GOOG", "2", 4).expect("free"), 5);
}

/// A store nobody answers at (a closed port): every object call is `StoreUnavailable`, never
/// `Ambiguous`, since no statement ever left (the stores say `NotApplied`).
#[tokio::test]
#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
async fn a_dead_store_is_unavailable_not_ambiguous() {
    let urls = [
        "postgres://baton@127.0.0.1:1/none?connect_timeout=1",
        "mysql://baton@127.0.0.1:1/none?connect_timeout=1",
        "cassandra://127.0.0.1:1/none?connect_timeout=1s",
    ];
    let mut tried = 0;
    for url in urls {
        let Ok(locker) = Locker::open(url) else {
            continue; // a store this build lacks
        };
        tried += 1;
        let locker = Locker::from_arc(std::sync::Arc::clone(locker.store()));
        for (what, result) in [
            ("get", locker.get("x").await.map(drop)),
            ("insert", locker.insert("x", "1").await.map(drop)),
            (
                "update_optimistic",
                locker.update_optimistic("x", "1", 1).await.map(drop),
            ),
            ("remove", locker.remove("x").await),
        ] {
            let e = result.expect_err(what);
            assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{url} {what}: {e}");
        }
    }
    assert!(tried > 0, "no network store in this build");
}
