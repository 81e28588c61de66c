//! The blocking API: works from plain threads, refuses from async code.

use std::time::Duration;

use baton::{BlockingLocker, ErrorKind, LockRequest, Locker, Strategy};

#[test]
fn blocking_locks_work_from_plain_threads() {
    for strategy in Strategy::ALL {
        let locker = Locker::builder(baton::MemoryStore::new())
            .strategy(strategy)
            .build()
            .expect("valid")
            .blocking();
        let mut guard = locker.lock("job").expect("lock");
        assert!(guard.is_held(), "{strategy}");
        assert_eq!(guard.token(), 1);
        let e = locker.try_lock("job").expect_err("held");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        guard.renew().expect("renew");
        let infos = locker.inspect("job").expect("inspect");
        assert_eq!(infos.len(), 1, "{strategy}");
        guard.release().expect("release");
        let e = guard.release().expect_err("second release");
        assert_eq!(e.kind(), ErrorKind::NotOwner, "{strategy}: {e}");

        // From another thread, and dropping releases before drop returns.
        let other = locker.clone();
        let token = std::thread::spawn(move || {
            let guard = other.lock("job").expect("lock from a thread");
            guard.token()
        })
        .join()
        .expect("thread");
        assert_eq!(token, 2, "{strategy}");
        let next = locker
            .try_lock("job")
            .expect("released by drop, synchronously");
        assert_eq!(next.token(), 3, "{strategy}");
    }
}

#[test]
fn blocking_waiters_are_served_in_turn() {
    let locker = BlockingLocker::open("memory:").expect("memory");
    let guard = locker.lock("job").expect("lock");
    let waiter = std::thread::spawn({
        let locker = locker.clone();
        move || {
            locker
                .lock_with(
                    "job",
                    LockRequest::new().wait_timeout(Duration::from_secs(10)),
                )
                .map(|g| g.token())
        }
    });
    drop(guard);
    assert_eq!(waiter.join().expect("thread"), Ok(2));
}

#[test]
fn blocking_keep_alive_runs_in_the_background() {
    let locker = Locker::builder(baton::MemoryStore::new())
        .ttl(Duration::from_millis(400))
        .build()
        .expect("valid")
        .blocking();
    let guard = locker.lock("job").expect("lock");
    let first = guard.lease().deadline();
    // Lost within 1.2 s would mean renewals did not happen (the TTL is 400 ms, real time).
    assert_eq!(guard.wait_lost(Duration::from_millis(1200)), Ok(false));
    assert!(guard.is_held());
    assert!(guard.lease().deadline() > first);
}

#[tokio::test]
async fn blocking_calls_from_async_code_are_refused() {
    let locker = Locker::open("memory:").expect("memory").blocking();
    let e = locker.lock("job").expect_err("async context");
    assert_eq!(e.kind(), ErrorKind::WrongContext, "{e}");
    assert!(e.message().contains("async context"), "{e}");
    assert!(locker.inspect("job").is_err());
    assert!(locker.purge(None).is_err());
    // The lock was never taken.
    assert!(locker.locker().try_lock("job").await.is_ok());
}

#[test]
fn a_blocking_guard_dropped_in_async_code_still_releases() {
    let locker = Locker::open("memory:").expect("memory");
    let guard = locker.blocking().lock("job").expect("lock");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let next = runtime.block_on(async {
        // Inside a runtime the drop cannot block: it releases in the background.
        drop(guard);
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match locker.try_lock("job").await {
                    Ok(guard) => break guard,
                    Err(_) => tokio::task::yield_now().await,
                }
            }
        })
        .await
        .expect("released in the background")
    });
    assert_eq!(next.token(), 2);
}

#[tokio::test]
async fn blocking_calls_from_spawn_blocking_are_refused_too() {
    // A spawn_blocking thread is inside the runtime's context: blocking on another runtime
    // there would panic, so it is refused like any async context.
    let blocking = Locker::open("memory:").expect("memory").blocking();
    let result = tokio::task::spawn_blocking(move || blocking.lock("job").map(|_| ()))
        .await
        .expect("task");
    assert_eq!(result.map_err(|e| e.kind()), Err(ErrorKind::WrongContext));
}
