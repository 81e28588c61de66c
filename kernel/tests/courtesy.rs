//! The courtesy of a contended lock (`Lease::fence_hint`): after a lease that had to wait for
//! someone else, the next acquisitions of the name by the same locker first wait two of the
//! previous lease's round trips, so that the waiters its release woke get their turn. Where
//! the store woke the waiting lease, the next [`COURTESIES`] do, unless one has to wait again,
//! which starts them over; where waiters poll, the next one does. An uncontended lease owes
//! none, and a try-once acquisition never waits.

use std::time::Duration;

use baton_kernel::{
    Acquire, Command, FenceHint, Grant, Instant, LockName, LockOptions, MemoryTable, Operation,
    OwnerId, Poll, Release, RetryPolicy, Strategy, Wait, COURTESIES,
};

/// Every reply takes this long.
const RT: Duration = Duration::from_millis(3);

fn acquire(strategy: Strategy, host: &str, nonce: u64, wait: Wait) -> Acquire {
    let opts = LockOptions {
        strategy,
        wait,
        acquisition: nonce,
        retry: RetryPolicy {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(20),
            ..RetryPolicy::default()
        },
        ..LockOptions::default()
    };
    let owner = OwnerId::new(host, 1, nonce).expect("owner");
    Acquire::new(LockName::new("job").expect("name"), owner, opts).expect("options")
}

/// Polls `op` at `now`, answering each command after [`RT`], until it finishes or waits with
/// nothing outstanding; returns the result (if finished) and the time reached.
fn run<O: Operation>(
    table: &mut MemoryTable,
    op: &mut O,
    mut now: Instant,
) -> (Option<baton_kernel::Result<O::Output>>, Instant) {
    loop {
        match op.poll(now) {
            Poll::Execute(id, command) => {
                let reply = table.apply(&command, now);
                now = now.saturating_add(RT);
                op.handle(id, reply);
            }
            Poll::WaitUntil(_) => return (None, now),
            Poll::Ready(r) => return (Some(r), now),
        }
    }
}

fn granted(r: Option<baton_kernel::Result<Grant>>) -> Grant {
    r.expect("finished").expect("granted")
}

/// A lease of `strategy` that waited for another holder's release.
fn contended_lease(table: &mut MemoryTable, strategy: Strategy) -> (Grant, Instant) {
    contended_lease_after(table, strategy, None, 2, Instant::from_nanos(1), false)
}

/// A lease of `strategy`, acquired from `now` with `hint` and acquisition `nonce`, that found
/// another holder's lock and waited for its release; with `woken`, the store signalled the
/// release to it (as PostgreSQL's `NOTIFY` does), else it found the lock free by polling.
fn contended_lease_after(
    table: &mut MemoryTable,
    strategy: Strategy,
    hint: Option<FenceHint>,
    nonce: u64,
    now: Instant,
    woken: bool,
) -> (Grant, Instant) {
    let wait = Wait::Timeout(Duration::from_secs(10));
    let (holder, now) = run(table, &mut acquire(strategy, "h", 100 + nonce, wait), now);
    let holder = granted(holder);
    let mut waiter = acquire(strategy, "a", nonce, wait).with_fence_hint(hint);
    let (none, now) = run(table, &mut waiter, now);
    assert!(none.is_none(), "{strategy}: the waiter waits");
    // Past any courtesy: the waiter finds the lock held.
    let (none, now) = run(
        table,
        &mut waiter,
        now.saturating_add(Duration::from_secs(1)),
    );
    assert!(
        none.is_none(),
        "{strategy}: the waiter waits for the holder"
    );
    let (released, now) = run(table, &mut Release::new(&holder.lease), now);
    released.expect("finished").expect("released");
    if woken {
        waiter.wake();
    }
    let mut now = now;
    loop {
        now = now.saturating_add(Duration::from_millis(1));
        let (done, at) = run(table, &mut waiter, now);
        now = at;
        if let Some(r) = done {
            return (granted(Some(r)), now);
        }
    }
}

#[test]
fn after_a_contended_lease_the_next_acquisition_waits_two_round_trips_first() {
    for strategy in Strategy::ALL {
        let mut table = MemoryTable::new();
        let (lease, now) = contended_lease(&mut table, strategy);
        let (released, now) = run(&mut table, &mut Release::new(&lease.lease), now);
        released.expect("finished").expect("released");
        let hint = Some(lease.lease.fence_hint());

        let mut again = acquire(strategy, "a", 3, Wait::Timeout(Duration::from_secs(10)))
            .with_fence_hint(hint.clone());
        assert_eq!(
            again.poll(now),
            Poll::WaitUntil(now.saturating_add(RT * 2)),
            "{strategy}: the courtesy comes first"
        );
        // A change at the store (our own release's notification) does not cut it short.
        again.wake();
        assert_eq!(again.poll(now), Poll::WaitUntil(now.saturating_add(RT * 2)));
        assert!(
            matches!(again.poll(now.saturating_add(RT * 2)), Poll::Execute(..)),
            "{strategy}: then the first attempt"
        );

        let mut once = acquire(strategy, "a", 4, Wait::TryOnce).with_fence_hint(hint);
        assert!(
            matches!(once.poll(now), Poll::Execute(..)),
            "{strategy}: a try-once acquisition never waits"
        );
    }
}

#[test]
fn after_an_uncontended_lease_the_next_acquisition_starts_at_once() {
    for strategy in Strategy::ALL {
        let mut table = MemoryTable::new();
        let wait = Wait::Timeout(Duration::from_secs(10));
        let (lease, now) = run(
            &mut table,
            &mut acquire(strategy, "a", 1, wait),
            Instant::from_nanos(1),
        );
        let lease = granted(lease);
        let (released, now) = run(&mut table, &mut Release::new(&lease.lease), now);
        released.expect("finished").expect("released");
        let mut again =
            acquire(strategy, "a", 2, wait).with_fence_hint(Some(lease.lease.fence_hint()));
        let first = again.poll(now);
        assert!(
            matches!(
                first,
                Poll::Execute(_, Command::Claim { .. } | Command::Put { .. })
            ),
            "{strategy}: {first:?}"
        );
    }
}

/// Acquires and releases the name once with `hint`, no one else about: whether the acquisition
/// waited before its first command, and the lease's hint for the next one.
fn uncontended_after(
    table: &mut MemoryTable,
    strategy: Strategy,
    nonce: u64,
    hint: FenceHint,
    now: Instant,
) -> (bool, FenceHint, Instant) {
    let mut op = acquire(strategy, "a", nonce, Wait::Timeout(Duration::from_secs(10)))
        .with_fence_hint(Some(hint));
    let mut now = now;
    let courteous = match op.poll(now) {
        Poll::WaitUntil(_) => true,
        Poll::Execute(id, command) => {
            let reply = table.apply(&command, now);
            now = now.saturating_add(RT);
            op.handle(id, reply);
            false
        }
        Poll::Ready(r) => panic!("{strategy}: finished before any command: {r:?}"),
    };
    let lease = loop {
        let (done, at) = run(table, &mut op, now);
        now = at;
        if let Some(r) = done {
            break granted(Some(r));
        }
        now = now.saturating_add(Duration::from_millis(1));
    };
    let (released, now) = run(table, &mut Release::new(&lease.lease), now);
    released.expect("finished").expect("released");
    (courteous, lease.lease.fence_hint(), now)
}

/// How many acquisitions in a row, each alone and each from the previous one's hint (the first
/// from `hint`), wait for a courtesy first (at most 100).
fn courteous_in_a_row(
    table: &mut MemoryTable,
    strategy: Strategy,
    mut hint: FenceHint,
    mut now: Instant,
) -> u8 {
    for n in 0..100 {
        let (courteous, next, at) =
            uncontended_after(table, strategy, 1000 + u64::from(n), hint, now);
        if !courteous {
            return n;
        }
        (hint, now) = (next, at);
    }
    100
}

/// After `lease` is released: how many acquisitions in a row owe a courtesy.
fn courtesies_after(
    table: &mut MemoryTable,
    strategy: Strategy,
    lease: &Grant,
    now: Instant,
) -> u8 {
    let (released, now) = run(table, &mut Release::new(&lease.lease), now);
    released.expect("finished").expect("released");
    courteous_in_a_row(table, strategy, lease.lease.fence_hint(), now)
}

#[test]
fn woken_by_the_store_the_courtesy_is_owed_until_that_many_acquisitions_won_at_once() {
    for strategy in Strategy::ALL {
        let mut table = MemoryTable::new();
        let (lease, now) =
            contended_lease_after(&mut table, strategy, None, 2, Instant::from_nanos(1), true);
        assert_eq!(
            courtesies_after(&mut table, strategy, &lease, now),
            COURTESIES,
            "{strategy}"
        );
    }
}

#[test]
fn where_waiters_poll_only_the_next_acquisition_owes_the_courtesy() {
    for strategy in Strategy::ALL {
        let mut table = MemoryTable::new();
        let (lease, now) = contended_lease(&mut table, strategy);
        assert_eq!(
            courtesies_after(&mut table, strategy, &lease, now),
            1,
            "{strategy}"
        );
    }
}

#[test]
fn an_acquisition_woken_again_owes_every_courtesy_again() {
    for strategy in Strategy::ALL {
        let mut table = MemoryTable::new();
        let (lease, now) =
            contended_lease_after(&mut table, strategy, None, 2, Instant::from_nanos(1), true);
        let (released, now) = run(&mut table, &mut Release::new(&lease.lease), now);
        released.expect("finished").expect("released");
        let mut hint = lease.lease.fence_hint();
        let mut now = now;
        for n in 0..3 {
            let (courteous, next, at) = uncontended_after(&mut table, strategy, 10 + n, hint, now);
            assert!(courteous, "{strategy}: acquisition {n}");
            (hint, now) = (next, at);
        }
        let (again, now) = contended_lease_after(&mut table, strategy, Some(hint), 20, now, true);
        assert_eq!(
            courtesies_after(&mut table, strategy, &again, now),
            COURTESIES,
            "{strategy}"
        );
    }
}
