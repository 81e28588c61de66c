//! Lock behaviour every strategy must show through the Rust API, on the memory store.

use crate::common;

use std::time::Duration;

use baton::{EntryState, ErrorKind, LockRequest, RetryPolicy, Strategy};
use common::{builder, locker, wait_until, within, FlakyStore};

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn lock_and_release() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let mut guard = locker.lock("job").await.expect("uncontended lock");
        assert!(guard.is_held(), "{strategy}");
        assert_eq!(guard.name(), "job");
        assert_eq!(guard.token(), 1, "{strategy}: first token");
        assert_eq!(guard.lease().strategy(), strategy);
        let infos = locker.inspect("job").await.expect("inspect");
        assert_eq!(infos.len(), 1, "{strategy}: {infos:?}");
        assert_eq!(infos[0].state, EntryState::Held, "{strategy}");
        assert_eq!(infos[0].owner, guard.lease().owner().key(), "{strategy}");
        guard.release().await.expect("release");
        assert!(!guard.is_held(), "{strategy}");
        assert_eq!(
            locker.inspect("job").await.expect("inspect"),
            vec![],
            "{strategy}"
        );
    }
}

#[tokio::test]
async fn try_lock_on_a_held_lock_is_busy() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let _held = locker.lock("job").await.expect("lock");
        let e = locker.try_lock("job").await.expect_err("held");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        assert!(e.message().contains("job"), "{strategy}: {e}");
        // The failed attempt left no cell of its own behind.
        assert_eq!(
            locker.inspect("job").await.expect("inspect").len(),
            1,
            "{strategy}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_short_wait_on_a_held_lock_times_out() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let _held = locker.lock("job").await.expect("lock");
        let started = tokio::time::Instant::now();
        let e = locker
            .lock_with("job", LockRequest::new().wait_timeout(50 * MS))
            .await
            .expect_err("held");
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{strategy}: {e}");
        let waited = started.elapsed();
        assert!(
            waited >= 50 * MS && waited < 1000 * MS,
            "{strategy}: waited {waited:?}"
        );
        assert_eq!(
            locker.inspect("job").await.expect("inspect").len(),
            1,
            "{strategy}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_gets_the_lock_after_release_with_a_larger_token() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy)
            .retry(RetryPolicy {
                initial: 2 * MS,
                max: 20 * MS,
                max_attempts: None,
                ..RetryPolicy::default()
            })
            .wait_timeout(Duration::from_secs(10))
            .build()
            .expect("valid");
        let mut first = locker.lock("job").await.expect("lock");
        let waiter = tokio::spawn({
            let locker = locker.clone();
            async move { locker.lock("job").await }
        });
        first.release().await.expect("release");
        let second = within(Duration::from_secs(10), "the waiter", waiter)
            .await
            .expect("waiter task")
            .expect("waiter gets the lock");
        assert!(
            second.token() > first.token(),
            "{strategy}: {} then {}",
            first.token(),
            second.token()
        );
        assert!(second.is_held());
    }
}

#[tokio::test]
async fn a_release_wakes_a_waiter_long_before_its_backoff_ends() {
    for strategy in Strategy::ALL {
        let store = FlakyStore::new();
        let locker = baton::Locker::builder(store.clone())
            .strategy(strategy)
            .retry(RetryPolicy {
                initial: Duration::from_secs(3600),
                max: Duration::from_secs(3600),
                max_attempts: None,
                ..RetryPolicy::default()
            })
            .wait_timeout(Duration::from_secs(7200))
            .build()
            .expect("valid");
        let mut holder = locker.lock("job").await.expect("lock");
        let before = store.executed();
        let waiter = tokio::spawn({
            let locker = locker.clone();
            async move { locker.lock("job").await }
        });
        // The waiter has made its first attempt, found the lock held and gone to sleep.
        let one_attempt = common::commands_of_a_failed_attempt(strategy);
        wait_until(
            Duration::from_secs(10),
            "the waiter's first attempt",
            || store.executed() >= before + one_attempt,
        )
        .await;
        holder.release().await.expect("release");
        let guard = within(Duration::from_secs(10), "the woken waiter", waiter)
            .await
            .expect("waiter task")
            .expect("woken waiter gets the lock");
        assert!(guard.token() > holder.token(), "{strategy}");
    }
}

#[tokio::test(start_paused = true)]
async fn only_an_acquisition_that_waits_tells_the_store() {
    // `Store::waiting` is what starts PostgreSQL's LISTEN session, which costs the server a
    // wake-up per release of the table: uncontended locks and try_lock must not call it.
    for strategy in Strategy::ALL {
        let store = FlakyStore::new();
        let locker = baton::Locker::builder(store.clone())
            .strategy(strategy)
            .build()
            .expect("valid");
        for _ in 0..3 {
            locker
                .lock("job")
                .await
                .expect("lock")
                .release()
                .await
                .expect("release");
        }
        let held = locker.lock("job").await.expect("lock");
        let busy = locker.try_lock("job").await.expect_err("held");
        assert_eq!(busy.kind(), ErrorKind::Busy, "{strategy}: {busy}");
        assert_eq!(store.waits(), 0, "{strategy}: no acquisition waited yet");
        let e = locker
            .lock_with("job", LockRequest::new().wait_timeout(200 * MS))
            .await
            .expect_err("held");
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{strategy}: {e}");
        assert!(store.waits() >= 1, "{strategy}: the waiter waited");
        drop(held);
    }
}

#[tokio::test(start_paused = true)]
async fn a_waiter_is_not_woken_by_its_own_deletes() {
    // Column prefix deletes its own cell after each lost attempt, which bumps the store's change
    // counter; a waiter that woke itself that way would retry in a tight loop.
    for strategy in Strategy::ALL {
        let store = FlakyStore::new();
        let locker = baton::Locker::builder(store.clone())
            .strategy(strategy)
            .retry(RetryPolicy {
                initial: 100 * MS,
                max: 100 * MS,
                max_attempts: None,
                ..RetryPolicy::default()
            })
            .build()
            .expect("valid");
        let _held = locker.lock("job").await.expect("lock");
        store.set_budget(1000);
        let before = store.executed();
        let e = locker
            .lock_with(
                "job",
                LockRequest::new().wait_timeout(Duration::from_secs(1)),
            )
            .await
            .expect_err("held");
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{strategy}: {e}");
        // Backoff of 50 to 100 ms over 1 s: at most about 20 attempts.
        let per_attempt = common::commands_of_a_failed_attempt(strategy);
        let spent = store.executed() - before;
        assert!(
            spent <= 22 * per_attempt,
            "{strategy}: {spent} commands in 1 s"
        );
    }
}

/// Takes "job" with `try_lock` as soon as it is free (within 10 s).
async fn take_once_free(locker: &baton::Locker, strategy: Strategy) -> baton::Guard {
    within(Duration::from_secs(10), "the lock to be free", async {
        loop {
            match locker.try_lock("job").await {
                Ok(guard) => break guard,
                Err(e) if e.kind() == ErrorKind::Busy => tokio::task::yield_now().await,
                Err(e) => panic!("{strategy}: {e}"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn dropping_a_guard_releases_it() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let guard = locker.lock("job").await.expect("lock");
        let token = guard.token();
        drop(guard);
        let next = take_once_free(&locker, strategy).await;
        assert!(next.token() > token, "{strategy}");
    }
}

/// Tasks alive on the current runtime.
fn tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test]
async fn without_keep_alive_a_lock_released_by_its_caller_costs_no_task() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy).keep_alive(false).build().expect("valid");
        let before = tasks();
        for _ in 0..3 {
            let mut guard = locker.lock("job").await.expect("lock");
            assert_eq!(tasks(), before, "{strategy}: a task while held");
            guard.release().await.expect("release");
            drop(guard);
            assert_eq!(tasks(), before, "{strategy}: a task after the release");
        }
    }
}

/// With keep-alive, a lock released before its first renewal falls due starts no task of its
/// own either: the locker's one timer task (see `starter`) starts a guard's task when its
/// renewal falls due, and ends once nothing is left to start.
#[tokio::test(start_paused = true)]
async fn keep_alive_starts_a_guard_task_only_when_its_first_renewal_falls_due() {
    for strategy in Strategy::ALL {
        let before = tasks();
        let locker = builder(strategy).ttl(60 * SECOND).build().expect("valid");
        for _ in 0..2 {
            let mut guards = Vec::new();
            for name in ["a", "b", "c"] {
                guards.push(locker.lock(name).await.expect("lock"));
            }
            assert_eq!(
                tasks(),
                before + 1,
                "{strategy}: three guards, the timer alone"
            );
            for guard in &mut guards {
                guard.release().await.expect("release");
            }
            assert_eq!(
                tasks(),
                before + 1,
                "{strategy}: the timer, until its first entry"
            );
        }
        let guard = locker.lock("job").await.expect("lock");
        let first = guard.lease().deadline();
        // Past the first renewal (a third of the validity): renewed by the guard's own task.
        advance_until(|| guard.lease().deadline() > first, 30 * SECOND).await;
        assert_eq!(
            tasks(),
            before + 1,
            "{strategy}: the guard's task; the timer ended"
        );
        drop(guard);
        let next = take_once_free(&locker, strategy).await;
        drop(next);
        advance_until(|| tasks() == before, 60 * SECOND).await;
    }
}

/// A guard renews on schedule after its locker is gone: the timer, not the locker, holds the
/// guards waiting for their first renewal.
#[tokio::test(start_paused = true)]
async fn keep_alive_renews_a_guard_whose_locker_was_dropped() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy).ttl(60 * SECOND).build().expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        drop(locker);
        let first = guard.lease().deadline();
        advance_until(|| guard.lease().deadline() > first, 30 * SECOND).await;
        assert!(guard.is_held(), "{strategy}");
    }
}

/// Sleeps in 100 ms steps (paused time advances by itself) until `done`, for at most `limit`.
async fn advance_until(mut done: impl FnMut() -> bool, limit: Duration) {
    let start = tokio::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "not done after {limit:?}");
        tokio::time::sleep(100 * MS).await;
    }
}

#[tokio::test]
async fn without_keep_alive_a_drop_or_a_renewal_starts_the_guard_task_when_needed() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy).keep_alive(false).build().expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        let deadline = guard.lease().deadline();
        guard.renew().await.expect("a renewal by hand");
        assert!(guard.lease().deadline() > deadline, "{strategy}: renewed");
        let token = guard.token();
        drop(guard);
        let next = take_once_free(&locker, strategy).await;
        assert!(next.token() > token, "{strategy}");
    }
}

#[tokio::test(start_paused = true)]
async fn keep_alive_holds_a_short_lease() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy).ttl(50 * MS).build().expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        let first_deadline = guard.lease().deadline();
        for step in 0..50 {
            tokio::time::advance(10 * MS).await;
            assert!(
                guard.is_held(),
                "{strategy}: lost after {} ms",
                (step + 1) * 10
            );
        }
        assert!(
            guard.lease().deadline() > first_deadline,
            "{strategy}: renewed"
        );
        assert_eq!(guard.token(), 1);
        assert_eq!(guard.loss(), None);
        let infos = locker.inspect("job").await.expect("inspect");
        assert_eq!(infos.len(), 1, "{strategy}: {infos:?}");
        assert_eq!(infos[0].owner, guard.lease().owner().key(), "{strategy}");
        assert_eq!(infos[0].token, Some(1), "{strategy}: token unchanged");
        assert_eq!(
            locker
                .try_lock("job")
                .await
                .map(|_| ())
                .map_err(|e| e.kind()),
            Err(ErrorKind::Busy),
            "{strategy}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn without_keep_alive_the_lease_is_lost_after_the_ttl() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy)
            .ttl(50 * MS)
            .keep_alive(false)
            .build()
            .expect("valid");
        let started = tokio::time::Instant::now();
        let mut guard = locker.lock("job").await.expect("lock");
        within(Duration::from_secs(1), "the lease to be lost", guard.lost()).await;
        let lost_after = started.elapsed();
        assert!(
            lost_after >= 45 * MS && lost_after <= 50 * MS,
            "{strategy}: lost after {lost_after:?}"
        );
        assert!(!guard.is_held(), "{strategy}");
        let loss = guard.loss().expect("a reason");
        assert_eq!(loss.kind(), ErrorKind::Lost, "{strategy}: {loss}");
        let e = guard.renew().await.expect_err("renew after loss");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        let e = guard.release().await.expect_err("release after loss");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
    }
}

#[tokio::test]
async fn renewing_by_hand_moves_the_deadline() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy).keep_alive(false).build().expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        let before = guard.lease().deadline();
        tokio::time::sleep(2 * MS).await;
        guard.renew().await.expect("renew");
        assert!(guard.lease().deadline() > before, "{strategy}");
        assert_eq!(guard.token(), 1);
    }
}

#[tokio::test]
async fn a_second_release_is_not_owner() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let mut guard = locker.lock("job").await.expect("lock");
        guard.release().await.expect("first release");
        let e = guard.release().await.expect_err("second release");
        assert_eq!(e.kind(), ErrorKind::NotOwner, "{strategy}: {e}");
        assert!(e.message().contains("already released"), "{e}");
        let e = guard.renew().await.expect_err("renew after release");
        assert_eq!(e.kind(), ErrorKind::NotOwner, "{strategy}: {e}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_expired_holder_cannot_release_its_successor() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy)
            .ttl(50 * MS)
            .keep_alive(false)
            .build()
            .expect("valid");
        let mut stale = locker.lock("job").await.expect("lock");
        within(Duration::from_secs(1), "the lease to be lost", stale.lost()).await;
        let successor = locker
            .lock_with(
                "job",
                LockRequest::new().wait_timeout(Duration::from_secs(1)),
            )
            .await
            .expect("takes over once the cell expired");
        assert!(successor.token() > stale.token(), "{strategy}");
        let e = stale.release().await.expect_err("not the owner any more");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        let infos = locker.inspect("job").await.expect("inspect");
        let holder: Vec<_> = infos
            .iter()
            .filter(|i| i.state == EntryState::Held)
            .collect();
        assert_eq!(holder.len(), 1, "{strategy}: {infos:?}");
        assert_eq!(
            holder[0].owner,
            successor.lease().owner().key(),
            "{strategy}"
        );
        assert!(successor.is_held(), "{strategy}");
    }
}

#[tokio::test]
async fn force_release_breaks_the_lock_and_the_holder_finds_out() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy).keep_alive(false).build().expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        let removed = locker.force_release("job").await.expect("force");
        assert_eq!(removed.len(), 1, "{strategy}: {removed:?}");
        assert_eq!(removed[0].owner, guard.lease().owner().key());
        let e = guard.renew().await.expect_err("renew of a broken lock");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(!guard.is_held());
        within(Duration::from_secs(1), "lost() after a loss", guard.lost()).await;
        let next = locker.try_lock("job").await.expect("free again");
        assert!(next.token() > guard.token(), "{strategy}");
    }
}

#[tokio::test(start_paused = true)]
async fn purge_removes_expired_cells() {
    for strategy in Strategy::ALL {
        let store = baton::MemoryStore::new();
        let locker = baton::Locker::builder(store.clone())
            .strategy(strategy)
            .ttl(50 * MS)
            .keep_alive(false)
            .build()
            .expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        within(Duration::from_secs(1), "the lease to be lost", guard.lost()).await;
        tokio::time::advance(10 * MS).await;
        let removed = locker.purge(Some("job")).await.expect("purge");
        assert_eq!(removed.len(), 1, "{strategy}: {removed:?}");
        assert_eq!(removed[0].0, "job");
        // Only the fencing counter is left.
        assert_eq!(store.snapshot().stored_cells(), 1, "{strategy}");
    }
}

#[tokio::test(start_paused = true)]
async fn without_keep_alive_is_held_notices_the_deadline_by_itself() {
    for strategy in Strategy::ALL {
        let locker = builder(strategy)
            .ttl(50 * MS)
            .keep_alive(false)
            .build()
            .expect("valid");
        let guard = locker.lock("job").await.expect("lock");
        tokio::time::advance(45 * MS).await;
        assert!(guard.is_held(), "{strategy}");
        assert_eq!(guard.loss(), None, "{strategy}");
        tokio::time::advance(5 * MS).await;
        assert!(!guard.is_held(), "{strategy}");
        let loss = guard.loss().expect("lost");
        assert!(
            loss.message().contains("keep-alive is off"),
            "{strategy}: {loss}"
        );
    }
}

#[test]
fn a_guard_that_outlives_its_runtime_drops_quietly() {
    for strategy in Strategy::ALL {
        let locker = locker(strategy);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let guard = runtime.block_on(locker.lock("job")).expect("lock");
        drop(runtime);
        // No runtime to release on: the lock stays until its TTL, and nothing panics.
        drop(guard);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let infos = runtime.block_on(locker.inspect("job")).expect("inspect");
        assert_eq!(infos.len(), 1, "{strategy}: still held until the TTL");
    }
}
