//! Acquiring, trying, waiting and handing a lock over.

use std::time::Duration;

use baton::{EntryState, ErrorKind, LockRequest, Strategy};
use tokio::time::Instant;

use super::target::Table;
use super::util::{ready, within, CountingStore};
use baton::LockerBuilder;

/// Generous bound on anything that should take milliseconds: only there to stop a hang.
const HANG: Duration = Duration::from_secs(30);

/// An uncontended lock is granted with a positive token, shows as held by its owner, and is
/// gone after release; releasing twice is refused.
pub async fn acquire_and_release(table: Table, strategy: Strategy) {
    let locker = ready(table.locker(strategy)).await;
    let mut guard = within(HANG, "an uncontended lock", locker.lock("job"))
        .await
        .expect("uncontended lock");
    assert!(guard.is_held());
    assert_eq!(guard.name(), "job");
    assert!(guard.token() >= 1, "token {}", guard.token());
    assert_eq!(guard.lease().strategy(), strategy);
    let infos = locker.inspect("job").await.expect("inspect");
    assert_eq!(infos.len(), 1, "one live entry: {infos:?}");
    assert_eq!(infos[0].state, EntryState::Held, "{infos:?}");
    assert_eq!(infos[0].owner, guard.lease().owner().key(), "{infos:?}");
    assert_eq!(infos[0].token, Some(guard.token()), "{infos:?}");

    within(HANG, "release", guard.release())
        .await
        .expect("release");
    assert!(!guard.is_held());
    assert_eq!(
        locker.inspect("job").await.expect("inspect"),
        vec![],
        "nothing left after release"
    );
    let again = guard.release().await.expect_err("second release");
    assert_eq!(again.kind(), ErrorKind::NotOwner, "{again}");

    // The name is free again, and its next token is larger.
    let next = within(HANG, "relock", locker.lock("job"))
        .await
        .expect("relock");
    assert!(
        next.token() > guard.token(),
        "{} then {}",
        guard.token(),
        next.token()
    );
}

/// A try on a held lock is `Busy` and leaves nothing behind; once released, a try succeeds.
pub async fn try_lock_is_busy_while_held(table: Table, strategy: Strategy) {
    let holder = ready(table.locker(strategy)).await;
    let other = ready(table.locker(strategy)).await;
    let mut held = holder.lock("job").await.expect("lock");
    let e = within(HANG, "a try on a held lock", other.try_lock("job"))
        .await
        .expect_err("held by someone else");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(e.message().contains("job"), "the error names the lock: {e}");
    assert!(held.is_held());
    assert_eq!(
        other.inspect("job").await.expect("inspect").len(),
        1,
        "the failed try left no entry of its own"
    );
    held.release().await.expect("release");
    let guard = within(HANG, "a try on a free lock", other.try_lock("job"))
        .await
        .expect("free now");
    assert!(guard.token() > held.token());
}

/// A wait on a held lock gives up with `TimedOut` after its timeout (not before), leaving the
/// holder alone and nothing of its own behind.
pub async fn wait_times_out(table: Table, strategy: Strategy) {
    let holder = ready(table.locker(strategy)).await;
    let other = ready(table.locker(strategy)).await;
    let held = holder.lock("job").await.expect("lock");
    let timeout = Duration::from_millis(400);
    let started = Instant::now();
    let e = within(
        timeout + HANG,
        "a wait with a timeout",
        other.lock_with("job", LockRequest::new().wait_timeout(timeout)),
    )
    .await
    .expect_err("held for longer than the wait");
    let waited = started.elapsed();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    assert!(
        waited >= timeout,
        "gave up after {waited:?}, before {timeout:?}"
    );
    assert!(held.is_held());
    let infos = other.inspect("job").await.expect("inspect");
    assert_eq!(infos.len(), 1, "only the holder's entry is left: {infos:?}");
    assert_eq!(infos[0].owner, held.lease().owner().key());
}

/// Two waiters queue behind a holder; each release hands the lock to one of them, never both,
/// with a larger token each time.
pub async fn handoff_to_waiters(table: Table, strategy: Strategy) {
    let holder = ready(table.locker(strategy)).await;
    let mut first = holder.lock("job").await.expect("lock");

    let mut waiters = Vec::new();
    for _ in 0..2 {
        let store = CountingStore::new(table.client());
        let locker = ready(
            LockerBuilder::new(std::sync::Arc::new(store.clone()))
                .strategy(strategy)
                .retry(super::target::quick_retry())
                .wait_timeout(HANG),
        )
        .await;
        let before = store.executed();
        let task = tokio::spawn(async move {
            let guard = locker.lock("job").await;
            (guard, Instant::now())
        });
        waiters.push((store, before, task));
    }
    // Both have tried at least once while the lock was held.
    for (store, before, _) in &waiters {
        super::util::wait_until(HANG, "a waiter's first attempt", || {
            store.executed() > *before
        })
        .await;
    }
    assert!(
        waiters.iter().all(|(_, _, task)| !task.is_finished()),
        "a waiter finished while the lock was held"
    );

    let released_at = Instant::now();
    first.release().await.expect("release");
    let (Some(mut a), Some(mut b)) = (waiters.pop(), waiters.pop()) else {
        unreachable!("two waiters");
    };
    // Whichever waiter gets it first, the other must still be waiting.
    let (done, rest) = within(HANG, "the first waiter", async {
        tokio::select! {
            out = &mut a.2 => (out, b.2),
            out = &mut b.2 => (out, a.2),
        }
    })
    .await;
    let (guard, granted_at) = done.expect("waiter task");
    let mut second = guard.expect("a waiter gets the lock after release");
    assert!(granted_at >= released_at, "granted before the release");
    assert!(
        second.token() > first.token(),
        "{} then {}",
        first.token(),
        second.token()
    );
    assert!(second.is_held());
    if rest.is_finished() {
        let (other, _) = rest.await.expect("waiter task");
        match other {
            Ok(g) => panic!(
                "both waiters hold the lock: tokens {} and {}",
                second.token(),
                g.token()
            ),
            Err(e) => panic!("the other waiter gave up while it should wait: {e}"),
        }
    }

    let released_again = Instant::now();
    second.release().await.expect("release");
    let (guard, granted_at) = within(HANG, "the second waiter", rest)
        .await
        .expect("waiter task");
    let third = guard.expect("the other waiter gets the lock after the second release");
    assert!(
        granted_at >= released_again,
        "the second waiter got the lock while the first held it"
    );
    assert!(
        third.token() > second.token(),
        "{} then {}",
        second.token(),
        third.token()
    );
}
