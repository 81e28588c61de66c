//! Leases that run out: expiry by the store's clock, takeover, renewal, and what an expired
//! holder may still do (nothing to the new holder).
//!
//! Timing assertions here only bound things from the side that cannot depend on the machine's
//! speed: a takeover is never *earlier* than the TTL allows (measured from before the holder's
//! acquire was sent, so the store's apply time is later), and upper bounds are generous limits
//! that only stop a hang. Checks that need the test thread to be on time (a renewed lease still
//! held before its new deadline) are made only when it was; otherwise they say so and pass.

use std::io::Write as _;
use std::time::Duration;

use baton::{ErrorKind, LockRequest, Strategy};
use tokio::time::Instant;

use super::target::Table;
use super::util::{ready, within};

/// Generous bound on anything that should take milliseconds: only there to stop a hang.
const HANG: Duration = Duration::from_secs(30);

/// How much earlier than the TTL a takeover may be seen, for the difference between the
/// store's clock and this process's monotonic clock over a few seconds (both tick at the
/// same rate on one machine; this covers timestamp truncation to the millisecond).
const CLOCK_SLACK: Duration = Duration::from_millis(5);

/// A holder without keep-alive loses its lock when the TTL runs out by the store's clock: a
/// waiter gets it then, not before, with a larger token; the old holder knows it lost it.
pub async fn expiry_and_takeover(table: Table, strategy: Strategy) {
    let ttl = Duration::from_millis(1500);
    let holder = ready(table.locker(strategy)).await;
    let waiter = ready(table.locker(strategy)).await;

    let sent = Instant::now();
    let mut old = holder
        .lock_with("job", LockRequest::new().ttl(ttl).keep_alive(false))
        .await
        .expect("lock");
    // A try answered before `sent + TTL` was applied while the holder's record was live.
    let tried = within(HANG, "a try", waiter.try_lock("job")).await;
    if sent.elapsed() < ttl {
        let e = tried.expect_err("a try while the lock is held");
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    } else {
        note(&table, strategy, "the try was answered after the TTL");
    }

    let new = within(ttl + HANG, "the takeover", waiter.lock("job"))
        .await
        .expect("the waiter takes over after the TTL");
    let took = sent.elapsed();
    assert!(
        took + CLOCK_SLACK >= ttl,
        "taken over {took:?} after the holder's acquire was sent, before its TTL {ttl:?}"
    );
    assert!(
        new.token() > old.token(),
        "{} then {}",
        old.token(),
        new.token()
    );

    // The old holder's own deadline (send + TTL - margin) has passed too.
    assert!(
        !old.is_held(),
        "the expired holder still believes it holds the lock"
    );
    let loss = old
        .loss()
        .expect("the expired holder is told it lost the lock");
    assert_eq!(loss.kind(), ErrorKind::Lost, "{loss}");
    let e = old.release().await.expect_err("release after expiry");
    assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    assert!(new.is_held());
    let infos = waiter.inspect("job").await.expect("inspect");
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!(infos[0].owner, new.lease().owner().key(), "{infos:?}");
}

/// Renewing moves the deadline, and the store keeps the lock past the first TTL: others are
/// still refused after it.
pub async fn renew_extends_the_lease(table: Table, strategy: Strategy) {
    // The renewal is sent a quarter of the TTL before the first deadline and must be answered
    // before it: 1.5 s for a paused test process (seen at 0.4 s) and a Paxos round on a busy
    // machine.
    let ttl = Duration::from_secs(6);
    let holder = ready(table.locker(strategy)).await;
    let other = ready(table.locker(strategy)).await;

    let mut guard = holder
        .lock_with("job", LockRequest::new().ttl(ttl).keep_alive(false))
        .await
        .expect("lock");
    // The store expires the first write at (apply time) + TTL, and apply time <= now.
    let first_store_expiry = Instant::now() + ttl;
    let first_deadline = guard.lease().deadline();
    // Renew once three quarters of the lease have passed.
    let clock = holder.clock().clone();
    tokio::time::sleep_until(clock.to_tokio(first_deadline) - ttl / 4).await;
    let renew_sent = Instant::now();
    within(HANG, "renew", guard.renew())
        .await
        .expect("renew a valid lease");
    let new_deadline = guard.lease().deadline();
    assert!(
        new_deadline > first_deadline,
        "renewal did not move the deadline: {first_deadline:?} -> {new_deadline:?}"
    );

    // Past the first deadline and the first store expiry: still ours.
    tokio::time::sleep_until(clock.to_tokio(first_deadline).max(first_store_expiry)).await;
    let held = guard.is_held();
    // Read after is_held: if this is before the new deadline, so was is_held's own reading.
    let checked = clock.now();
    if checked < new_deadline {
        assert!(held, "lost before the renewed deadline");
    } else {
        note(
            &table,
            strategy,
            "the holder's check came after its renewed deadline",
        );
    }
    let tried = within(HANG, "a try after the first TTL", other.try_lock("job")).await;
    // The renewed cell lives until at least renew_sent + TTL: a try answered before then was
    // applied before then, and must have found the lock held.
    if Instant::now() < renew_sent + ttl {
        let e = tried;
        let e = e.expect_err("the renewed lock is still held after the first TTL");
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    } else {
        note(&table, strategy, "the try came after the renewed TTL");
    }
    if held && guard.is_held() {
        guard.release().await.expect("release a renewed lease");
    }
}

/// A holder whose lease expired cannot release the new holder's lock: its release is `Lost`,
/// and the new holder keeps the lock (others are refused, the entry is the new holder's).
pub async fn expired_holder_cannot_release(table: Table, strategy: Strategy) {
    let ttl = Duration::from_millis(500);
    let holder = ready(table.locker(strategy)).await;
    let taker = ready(table.locker(strategy)).await;
    let third = ready(table.locker(strategy)).await;

    let mut old = holder
        .lock_with("job", LockRequest::new().ttl(ttl).keep_alive(false))
        .await
        .expect("lock");
    let mut new = within(ttl + HANG, "the takeover", taker.lock("job"))
        .await
        .expect("takeover");

    let e = old
        .release()
        .await
        .expect_err("an expired holder's release");
    assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    assert!(
        new.is_held(),
        "the new holder lost the lock to an old holder's release"
    );
    let infos = third.inspect("job").await.expect("inspect");
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!(infos[0].owner, new.lease().owner().key(), "{infos:?}");
    let e = third
        .try_lock("job")
        .await
        .expect_err("still held by the new holder");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    // And the new holder can still renew and release its own lock.
    new.renew().await.expect("the new holder renews");
    new.release().await.expect("the new holder releases");
    let next = third
        .try_lock("job")
        .await
        .expect("free after the real release");
    assert!(next.token() > new.token());
}

/// Says, past the harness's capture, that a timing-dependent check was not made.
fn note(table: &Table, strategy: Strategy, what: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "baton-tests: {} {strategy}: {what} (the machine is slow); check skipped",
        table.backend()
    );
}
