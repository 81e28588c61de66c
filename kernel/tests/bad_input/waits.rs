//! TTL ranges, zero and endless waits, and giving up after the most attempts.

use super::prelude::*;

#[test]
fn ttl_range_is_checked_by_acquire_new() {
    let day = Duration::from_secs(24 * 3600);
    let cases = [
        (Duration::ZERO, false),
        (Duration::from_millis(9), false),
        (Duration::from_millis(10), true),
        (day * 30, true),
        (day * 30 + Duration::from_secs(1), false),
        (Duration::MAX, false),
    ];
    for strategy in ALL {
        for (ttl, ok) in cases {
            let o = options(strategy, "a", |o| o.ttl = ttl);
            match Acquire::new(name(NAME), owner("a"), o) {
                Ok(_) => assert!(ok, "{strategy}: ttl {ttl:?} should be refused"),
                Err(e) => {
                    assert!(!ok, "{strategy}: ttl {ttl:?} should be accepted: {e}");
                    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
                    assert!(
                        e.message().contains("ttl") && e.message().contains(&format!("{ttl:?}")),
                        "{strategy}: the message names the ttl and its value: {e}"
                    );
                }
            }
        }
    }
}

#[test]
fn extreme_valid_ttls_work_end_to_end() {
    for strategy in ALL {
        for ttl in [LockOptions::MIN_TTL, LockOptions::MAX_TTL] {
            let mut h = Harness::new();
            let grant = drive(&mut h, "A", acquire(strategy, "a", |o| o.ttl = ttl))
                .unwrap_or_else(|e| panic!("{strategy} {ttl:?}: {e}"));
            // Deadline = send time (0) + ttl - (ttl / 100 + 1 ms).
            let margin = ttl / 100 + Duration::from_millis(1);
            assert_eq!(grant.lease.deadline(), ms(0).saturating_add(ttl - margin));
            let cells = h.table.read(NAME, &ColumnFilter::All, h.now());
            assert!(
                cells
                    .iter()
                    .any(|c| c.ttl_remaining == Some(ttl) && c.column != "_LOCK_"),
                "{strategy}: the lock cell carries the ttl: {cells:?}"
            );
            drive(&mut h, "A", Release::new(&grant.lease)).expect("release");
        }
    }
}

#[test]
fn zero_wait_timeout_on_a_held_lock_times_out_after_one_attempt() {
    for strategy in ALL {
        let mut h = Harness::new();
        hold(&mut h, strategy, "a");
        h.advance(Duration::from_secs(1));
        let mut b = Actor::new(
            "B",
            acquire(strategy, "b", |o| o.wait = Wait::Timeout(Duration::ZERO)),
        );
        let e = err(h.finish(&mut b), "A holds");
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{strategy}: {e}");
        assert_eq!(b.op.attempts(), 1, "{strategy}");
        assert!(
            e.message().contains("1 attempt(s)") && e.message().contains(&key("a")),
            "{strategy}: {e}"
        );
        assert_eq!(h.now(), ms(1000), "{strategy}: no waiting at all");
        assert_eq!(owners(&mut h, strategy), vec![key("a")], "{strategy}");
    }
}

#[test]
fn try_once_on_a_held_lock_is_busy() {
    for strategy in ALL {
        let mut h = Harness::new();
        hold(&mut h, strategy, "a");
        let e = err(drive(&mut h, "B", acquire(strategy, "b", |_| {})), "held");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        assert!(e.message().contains(&key("a")), "{strategy}: {e}");
        assert_eq!(owners(&mut h, strategy), vec![key("a")], "{strategy}");
    }
}

#[test]
fn wait_forever_is_accepted_and_waits() {
    for strategy in ALL {
        let mut h = Harness::new();
        // Far from the epoch, so that now + Duration::MAX must saturate.
        h.advance(Duration::from_secs(1_000_000));
        let a = hold(&mut h, strategy, "a");
        let mut b = Actor::new(
            "B",
            acquire(strategy, "b", |o| o.wait = Wait::Timeout(Duration::MAX)),
        );
        let Step::Wait(t) = h.run(&mut b) else {
            panic!("{strategy}: B waits while A holds")
        };
        assert!(
            t < h.now().saturating_add(Duration::from_secs(2)),
            "{strategy}"
        );
        h.advance_to(t);
        assert!(matches!(h.run(&mut b), Step::Wait(_)), "{strategy}");
        drive(&mut h, "A", Release::new(&a.lease)).expect("release");
        let g = h.finish(&mut b).expect("B gets it after A's release");
        assert_eq!(g.lease.token(), 2, "{strategy}");
    }
}

/// RetryPolicy's docs: `max_attempts` is "the most acquisition attempts", and ScaleOut's
/// polling retry (count x interval) is `RetryPolicy { initial: interval, max: interval,
/// max_attempts: Some(count) }`. Unique insert and column prefix give up after `count` tries.
fn gives_up_after_max_attempts(strategy: Strategy) {
    let mut h = Harness::new();
    hold(&mut h, strategy, "a");
    let mut b = Actor::new(
        "B",
        acquire(strategy, "b", |o| {
            o.wait = Wait::Timeout(Duration::MAX);
            o.retry = RetryPolicy {
                initial: Duration::from_millis(10),
                max: Duration::from_millis(10),
                max_attempts: Some(3),
                ..RetryPolicy::default()
            };
        }),
    );
    for _ in 0..1000 {
        match h.run(&mut b) {
            Step::Wait(t) => h.advance_to(t),
            _ => break,
        }
    }
    let result = b
        .result
        .clone()
        .unwrap_or_else(|| panic!("{strategy}: still waiting at {}", at(h.now())));
    let e = err(result, "A holds throughout");
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{strategy}: {e}");
    assert!(
        h.now() <= ms(100),
        "{strategy}: 3 tries 10 ms apart, gave up at {}",
        at(h.now())
    );
}

#[test]
fn unique_gives_up_after_max_attempts() {
    gives_up_after_max_attempts(Strategy::UniqueInsert);
}

#[test]
fn prefix_gives_up_after_max_attempts() {
    gives_up_after_max_attempts(Strategy::ColumnPrefix);
}

#[test]
fn bakery_gives_up_after_max_attempts() {
    gives_up_after_max_attempts(Strategy::Bakery);
}

/// A unique-insert claim made without knowing the counter finds the lock free but the counter
/// elsewhere, and claims again from the counter it was shown; another client is granted (and
/// releases) in between. A try-once attempt then fails `Busy`, saying what happened rather
/// than that the lock is held (it is free again).
#[test]
fn a_grant_between_two_claims_is_busy_and_says_so() {
    let mut h = Harness::new();
    let b = hold(&mut h, Strategy::UniqueInsert, "b");
    drive(&mut h, "B", Release::new(&b.lease)).expect("release");
    let mut a = Actor::new("A", acquire(Strategy::UniqueInsert, "a", |_| {}));
    // A's first claim expects no counter: not applied, the lock free, the counter at B's grant.
    assert_eq!(h.step(&mut a), Step::Sent);
    assert!(a.peek().is_none(), "the first claim was answered");
    // C is granted and releases before A's second claim reaches the store.
    let c = hold(&mut h, Strategy::UniqueInsert, "c");
    drive(&mut h, "C", Release::new(&c.lease)).expect("release");
    let e = h.finish(&mut a).expect_err("busy");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(
        e.message()
            .contains("moved between this attempt's two claims"),
        "{e}"
    );
    assert!(owners(&mut h, Strategy::UniqueInsert).is_empty());
}
