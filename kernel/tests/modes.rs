//! Modes on flat names (issue 43, docs/modes-design.md), driven against the memory model:
//! shared holders hold together, an exclusive request waits for them and new shared ones wait
//! behind it, a semaphore admits its permits and no more, every grant has its own increasing
//! token, unique insert refuses the modes it cannot carry, and a mode mix-up is refused.

use std::time::Duration;

use baton_kernel::{
    Acquire, ErrorKind, Grant, Instant, LockName, LockOptions, MemoryTable, Mode, Operation,
    OwnerId, Poll, Release, Renew, RetryPolicy, Strategy, Wait,
};

/// The strategies that carry every mode.
const STRATEGIES: [Strategy; 2] = [Strategy::Bakery, Strategy::ColumnPrefix];

/// Every reply takes this long.
const RT: Duration = Duration::from_millis(3);

fn acquire(
    strategy: Strategy,
    mode: Mode,
    host: &str,
    wait: Wait,
) -> baton_kernel::Result<Acquire> {
    let opts = LockOptions {
        strategy,
        mode,
        wait,
        acquisition: u64::from(host.as_bytes()[0]),
        retry: RetryPolicy {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(20),
            ..RetryPolicy::default()
        },
        ..LockOptions::default()
    };
    let owner = OwnerId::new(host, 1, 7).expect("owner");
    Acquire::new(LockName::new("jobs").expect("name"), owner, opts)
}

/// Polls `op` from `now`, answering each command after [`RT`], until it finishes or sleeps;
/// the result (if finished) and the time reached.
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

fn once(strategy: Strategy, mode: Mode, host: &str) -> Acquire {
    acquire(strategy, mode, host, Wait::TryOnce).expect("options")
}

fn granted(r: Option<baton_kernel::Result<Grant>>) -> Grant {
    r.expect("finished").expect("granted")
}

fn busy(r: Option<baton_kernel::Result<Grant>>) {
    let e = r.expect("finished").expect_err("busy");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
}

#[test]
fn shared_holders_hold_together_and_shut_out_exclusive_requests() {
    for strategy in STRATEGIES {
        let mut table = MemoryTable::default();
        let now = Instant::from_nanos(1);
        let (a, now) = run(&mut table, &mut once(strategy, Mode::Shared, "a"), now);
        let (b, now) = run(&mut table, &mut once(strategy, Mode::Shared, "b"), now);
        let (a, b) = (granted(a), granted(b));
        assert!(
            b.lease.token() > a.lease.token(),
            "every grant has its own token, in order"
        );
        let (x, _) = run(&mut table, &mut once(strategy, Mode::Exclusive, "x"), now);
        busy(x);
    }
}

#[test]
fn an_exclusive_holder_shuts_out_shared_requests() {
    for strategy in STRATEGIES {
        let mut table = MemoryTable::default();
        let now = Instant::from_nanos(1);
        let (x, now) = run(&mut table, &mut once(strategy, Mode::Exclusive, "x"), now);
        granted(x);
        let (s, _) = run(&mut table, &mut once(strategy, Mode::Shared, "s"), now);
        busy(s);
    }
}

#[test]
fn a_semaphore_admits_its_permits_and_no_more() {
    for strategy in STRATEGIES {
        let mut table = MemoryTable::default();
        let mut now = Instant::from_nanos(1);
        let mut tokens = Vec::new();
        for host in ["a", "b", "c"] {
            let (g, t) = run(&mut table, &mut once(strategy, Mode::Counted(3), host), now);
            tokens.push(granted(g).lease.token());
            now = t;
        }
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
        let (d, now) = run(&mut table, &mut once(strategy, Mode::Counted(3), "d"), now);
        busy(d);
        // The same name as a shared lock, or as a semaphore of another size: refused, not guessed.
        for mode in [Mode::Shared, Mode::Counted(4), Mode::Exclusive] {
            let (e, _) = run(&mut table, &mut once(strategy, mode, "e"), now);
            let e = e.expect("finished").expect_err("mix-up");
            assert_eq!(e.kind(), ErrorKind::InvalidOption, "{mode}: {e}");
        }
    }
}

#[test]
fn unique_insert_refuses_what_it_cannot_carry() {
    for mode in [Mode::Shared, Mode::Counted(2)] {
        let e = acquire(Strategy::UniqueInsert, mode, "a", Wait::TryOnce).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
        assert!(e.message().contains("bakery or column-prefix"), "{e}");
    }
    assert!(acquire(Strategy::UniqueInsert, Mode::Exclusive, "a", Wait::TryOnce).is_ok());
}

#[test]
fn co_holders_grants_do_not_make_a_shared_holder_lose_its_lease() {
    for strategy in STRATEGIES {
        let mut table = MemoryTable::default();
        let now = Instant::from_nanos(1);
        let (a, now) = run(&mut table, &mut once(strategy, Mode::Shared, "a"), now);
        let (b, now) = run(&mut table, &mut once(strategy, Mode::Shared, "b"), now);
        let (a, b) = (granted(a), granted(b));
        // b's grant moved the counter after a's: a renews and releases as the only holder would.
        let (renewed, now) = run(&mut table, &mut Renew::new(&a.lease), now);
        renewed.expect("finished").expect("a renews");
        let (released, now) = run(&mut table, &mut Release::new(&a.lease), now);
        released.expect("finished").expect("a releases");
        let (released, now) = run(&mut table, &mut Release::new(&b.lease), now);
        released.expect("finished").expect("b releases");
        // Both gone: an exclusive request holds.
        let (x, _) = run(&mut table, &mut once(strategy, Mode::Exclusive, "x"), now);
        granted(x);
    }
}

#[test]
fn a_shared_holder_whose_lease_expired_under_an_exclusive_grant_is_told() {
    for strategy in STRATEGIES {
        let mut table = MemoryTable::default();
        let now = Instant::from_nanos(1);
        let (a, now) = run(&mut table, &mut once(strategy, Mode::Shared, "a"), now);
        let a = granted(a);
        // a stops renewing; after its TTL an exclusive request holds, then a shared one joins
        // after that one's release: the counter's latest value is a shared grant's, which still
        // carries the exclusive grant's token.
        let later = now.saturating_add(Duration::from_secs(61));
        let (x, later) = run(&mut table, &mut once(strategy, Mode::Exclusive, "x"), later);
        let x = granted(x);
        let (done, later) = run(&mut table, &mut Release::new(&x.lease), later);
        done.expect("finished").expect("x releases");
        let (s, later) = run(&mut table, &mut once(strategy, Mode::Shared, "s"), later);
        granted(s);
        let (released, _) = run(&mut table, &mut Release::new(&a.lease), later);
        let e = released.expect("finished").expect_err("lost");
        assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    }
}
