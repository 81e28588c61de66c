//! The blocking API: works from plain threads, refuses from async code.

use std::time::Duration;

use baton::{BlockingLocker, Cancel, ErrorKind, LockRequest, Locker, Strategy};

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
        .ttl(Duration::from_secs(2))
        .build()
        .expect("valid")
        .blocking();
    let guard = locker.lock("job").expect("lock");
    let first = guard.lease().deadline();
    // Lost within 2.5 s would mean renewals did not happen (the TTL is 2 s, real time; a
    // renewal at each third of it leaves 1.3 s for a paused test process, seen here at 0.4 s).
    assert_eq!(
        guard.wait_lost(Duration::from_millis(2_500)),
        Ok(false),
        "{:?}",
        guard.loss()
    );
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

/// Waits (polling, with a deadline) until `condition` holds.
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: not in time"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_blocking_wait_is_cancelled_from_another_thread_and_leaves_nothing() {
    let locker = Locker::builder(baton::MemoryStore::new())
        .strategy(Strategy::Bakery)
        .build()
        .expect("valid")
        .blocking();
    let held = locker.lock("job").expect("lock");
    let cancel = Cancel::new();
    let waiter = std::thread::spawn({
        let (locker, cancel) = (locker.clone(), cancel.clone());
        move || {
            let request = LockRequest::new().wait_timeout(Duration::from_secs(60));
            locker
                .lock_cancellable("job", request, &cancel)
                .map(|g| g.token())
        }
    });
    // The waiter's ticket is in the queue: it is waiting.
    wait_until("the waiter to queue", || {
        locker.inspect("job").expect("inspect").len() == 2
    });
    let asked = std::time::Instant::now();
    cancel.cancel();
    let e = waiter.join().expect("thread").expect_err("cancelled");
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert_eq!(e.lock(), Some("job"));
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    // Its cell is removed in the background; the holder is untouched.
    wait_until("the waiter's ticket to go", || {
        locker.inspect("job").expect("inspect").len() == 1
    });
    assert!(held.is_held());
}

#[test]
fn a_cancel_raised_before_the_wait_cancels_it_at_once() {
    let locker = BlockingLocker::open("memory:").expect("memory");
    let held = locker.lock("job").expect("lock");
    let cancel = Cancel::new();
    cancel.cancel();
    assert!(cancel.is_cancelled());
    let e = locker
        .lock_cancellable("job", LockRequest::new(), &cancel)
        .expect_err("cancelled");
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    drop(held);
    assert_eq!(
        locker.try_lock("job").map(|g| g.token()),
        Ok(2),
        "nothing left behind"
    );
}

#[test]
fn a_loss_calls_the_callback_and_a_release_does_not() {
    let locker = Locker::builder(baton::MemoryStore::new())
        .ttl(Duration::from_secs(2))
        .build()
        .expect("valid")
        .blocking();
    let (tx, rx) = std::sync::mpsc::channel();
    let guard = locker.lock("job").expect("lock");
    guard.on_lost({
        let tx = tx.clone();
        move |e| tx.send(e).expect("send")
    });
    locker.force_release("job").expect("force");
    let e = rx.recv_timeout(Duration::from_secs(10)).expect("called");
    assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    assert!(!guard.is_held());
    assert_eq!(guard.remaining(), Duration::ZERO);

    let mut second = locker.lock("job").expect("lock again");
    assert!(second.remaining() > Duration::from_secs(1));
    second.on_lost(move |e| tx.send(e).expect("send"));
    second.release().expect("release");
    // Past the released lease's deadline (2 s), a wrong call would have come.
    assert!(
        rx.recv_timeout(Duration::from_millis(2_500)).is_err(),
        "not called after a release"
    );
}

#[test]
fn check_says_held_lost_or_released() {
    let locker = BlockingLocker::open("memory:").expect("memory");
    let mut guard = locker.lock("checked").expect("lock");
    assert_eq!(guard.check(), Ok(()));
    guard.release().expect("release");
    let e = guard.check().expect_err("released");
    assert_eq!(e.kind(), ErrorKind::NotOwner, "{e}");
    assert_eq!(e.lock(), Some("checked"));
}
