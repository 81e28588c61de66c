//! Bad inputs and bad luck: invalid names and options, edge-case waits, misuse of leases
//! (renewing late, releasing twice, releasing a lock someone else holds), broken stores (dead,
//! rejecting, timing out), and the operator commands (inspect, purge, forced release).
//!
//! Tests marked `#[ignore = "kernel bug: ..."]` show a behaviour that contradicts the kernel's
//! own docs; each says which doc and what happens instead. Run them with
//! `cargo test -p baton-kernel --test bad_input -- --ignored`.

mod support;

use std::time::Duration;

use baton_kernel::{
    Acquire, ColumnFilter, EntryState, Error, ErrorKind, ForceRelease, Grant, Inspect, LockName,
    LockOptions, Purge, Release, Renew, RetryPolicy, Strategy, Wait, Write,
};
use support::*;

// -------------------------------------------------------------------------------------------
// Helpers

/// The options `who` ("a", "b", "c"...) uses for `strategy`, adjusted by `adjust`.
fn options(strategy: Strategy, who: &str, adjust: impl FnOnce(&mut LockOptions)) -> LockOptions {
    let created = match who {
        "a" => 1000,
        "b" => 2000,
        _ => 3000,
    };
    let mut o = opts(strategy, created);
    o.wait = Wait::TryOnce;
    adjust(&mut o);
    o
}

fn acquire(strategy: Strategy, who: &str, adjust: impl FnOnce(&mut LockOptions)) -> Acquire {
    Acquire::new(name(NAME), owner(who), options(strategy, who, adjust)).expect("valid options")
}

fn label(who: &str) -> &'static str {
    match who {
        "a" => "A",
        "b" => "B",
        _ => "C",
    }
}

/// `who` acquires the lock at once (try once) and returns the grant.
fn hold(h: &mut Harness, strategy: Strategy, who: &str) -> Grant {
    drive(h, label(who), acquire(strategy, who, |_| {}))
        .unwrap_or_else(|e| panic!("{who} should get the free lock: {e}"))
}

fn err<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) -> Error {
    r.expect_err(what)
}

/// The live entries of the lock, as Inspect reports them.
fn entries(h: &mut Harness, strategy: Strategy) -> Vec<baton_kernel::LockInfo> {
    drive(h, "I", Inspect::new(name(NAME), &opts(strategy, 0))).expect("inspect")
}

fn owners(h: &mut Harness, strategy: Strategy) -> Vec<String> {
    entries(h, strategy).into_iter().map(|e| e.owner).collect()
}

fn key(who: &str) -> String {
    owner(who).key()
}

const ALL: [Strategy; 3] = Strategy::ALL;

// -------------------------------------------------------------------------------------------
// Names

#[track_caller]
fn invalid_name(r: Result<LockName, Error>, rule: &[&str]) {
    let e = r.expect_err("the name breaks a rule");
    assert_eq!(e.kind(), ErrorKind::InvalidName, "{e}");
    for word in rule {
        assert!(e.message().contains(word), "{e:?} should name {word:?}");
    }
}

#[test]
fn empty_name_is_rejected() {
    invalid_name(LockName::new(""), &["empty"]);
    invalid_name(LockName::from_bytes(b""), &["empty"]);
}

#[test]
fn names_up_to_255_bytes_are_accepted_256_rejected() {
    let ok = "n".repeat(255);
    assert_eq!(LockName::new(&ok).map(|n| n.as_str().len()), Ok(255));
    assert_eq!(
        LockName::from_bytes(ok.as_bytes()).map(|n| n.as_str().len()),
        Ok(255)
    );
    let long = "n".repeat(256);
    invalid_name(LockName::new(&long), &["256 bytes", "maximum is 255"]);
    invalid_name(LockName::from_bytes(long.as_bytes()), &["256", "255"]);
    // Bytes, not characters: 127 two-byte characters + 1 byte = 255 bytes is fine.
    let multi = format!("{}x", "é".repeat(127));
    assert_eq!(multi.len(), 255);
    assert!(LockName::new(&multi).is_ok());
    invalid_name(LockName::new(&format!("{multi}x")), &["256 bytes"]);
}

#[test]
fn ten_megabyte_name_is_rejected_with_its_length() {
    let huge = vec![b'x'; 10 << 20];
    invalid_name(
        LockName::from_bytes(&huge),
        &["10485760 bytes", "maximum is 255"],
    );
    let huge = String::from_utf8(huge).expect("ascii");
    invalid_name(LockName::new(&huge), &["10485760 bytes"]);
}

#[test]
fn nul_is_rejected_with_its_position() {
    invalid_name(LockName::new("a\0b"), &["NUL", "byte 1"]);
    invalid_name(LockName::from_bytes(b"\0"), &["NUL", "byte 0"]);
    invalid_name(LockName::new("abc\0"), &["NUL", "byte 3"]);
}

#[test]
fn non_utf8_is_rejected_with_its_position() {
    invalid_name(LockName::from_bytes(&[0xff]), &["UTF-8", "byte 0"]);
    invalid_name(LockName::from_bytes(b"ok\xc3"), &["UTF-8", "byte 2"]);
    // An overlong encoding of '/' is not UTF-8 either.
    invalid_name(LockName::from_bytes(b"a\xc0\xaf"), &["UTF-8", "byte 1"]);
}

#[test]
fn other_characters_are_allowed() {
    for ok in [
        "digest 42",
        "users/émile",
        "a.b.c",
        " ",
        "\u{1F512}",
        "tab\there",
    ] {
        assert_eq!(LockName::new(ok).map(|n| n.to_string()), Ok(ok.to_string()));
    }
}

// -------------------------------------------------------------------------------------------
// TTLs and waits

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
                    .any(|c| c.ttl_remaining == Some(ttl) && c.column != "fence"),
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

// -------------------------------------------------------------------------------------------
// Renewal and release misuse

#[test]
fn renew_after_the_deadline_is_lost_without_a_command() {
    for strategy in ALL {
        let mut h = Harness::new();
        let a = hold(&mut h, strategy, "a");
        h.advance_to(a.lease.deadline());
        let mut renew = Actor::new("A", Renew::new(&a.lease));
        let e = err(h.finish(&mut renew), "late");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(e.message().contains("deadline"), "{strategy}: {e}");
        assert_eq!(renew.sent, 0, "{strategy}: no command after the deadline");
    }
}

#[test]
fn renew_in_time_extends_the_deadline() {
    for strategy in ALL {
        let mut h = Harness::new();
        let a = hold(&mut h, strategy, "a");
        h.advance(Duration::from_secs(30));
        let mut renew = Actor::new("A", Renew::new(&a.lease));
        let renewed = h.finish(&mut renew).expect("renewal in time");
        let rts = if strategy == Strategy::UniqueInsert {
            1
        } else {
            2
        };
        assert_eq!(renew.sent, rts, "{strategy}: documented renewal cost");
        assert_eq!(
            renewed.deadline(),
            ms(30_000).saturating_add(Duration::from_millis(59_399)),
            "{strategy}"
        );
        assert_eq!(renewed.token(), a.lease.token());
        // Past the first deadline, the store still has the cell (renewed at 30 s).
        h.advance(Duration::from_secs(40));
        assert_eq!(owners(&mut h, strategy), vec![key("a")], "{strategy}");
    }
}

/// Unique insert's release is a compare-and-set, so a second release of one lease finds the
/// record gone: `Lost`. The plain-write strategies delete their own cell, which reports nothing:
/// the kernel documents that their second release is a harmless `Ok` (the Rust API refuses a
/// second release itself, with `NotOwner`).
fn double_release(strategy: Strategy) {
    let mut h = Harness::new();
    let a = hold(&mut h, strategy, "a");
    drive(&mut h, "A", Release::new(&a.lease)).expect("first release");
    let second = drive(&mut h, "A", Release::new(&a.lease));
    if strategy == Strategy::UniqueInsert {
        let e = err(second, "the lease already ended");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(e.message().contains("already gone"), "{strategy}: {e}");
    } else {
        assert_eq!(second, Ok(()), "{strategy}: documented limit");
    }
    assert_eq!(owners(&mut h, strategy), Vec::<String>::new(), "{strategy}");
}

#[test]
fn double_release_unique() {
    double_release(Strategy::UniqueInsert);
}

#[test]
fn double_release_bakery() {
    double_release(Strategy::Bakery);
}

#[test]
fn double_release_prefix() {
    double_release(Strategy::ColumnPrefix);
}

#[test]
fn double_release_never_touches_the_next_holder() {
    for strategy in ALL {
        let mut h = Harness::new();
        let a = hold(&mut h, strategy, "a");
        drive(&mut h, "A", Release::new(&a.lease)).expect("first release");
        let b = hold(&mut h, strategy, "b");
        let _ = drive(&mut h, "A", Release::new(&a.lease));
        assert_eq!(owners(&mut h, strategy), vec![key("b")], "{strategy}");
        drive(&mut h, "B", Release::new(&b.lease)).expect("B still holds");
    }
}

#[test]
fn release_of_a_lock_taken_over_is_lost_and_keeps_the_holder() {
    for strategy in ALL {
        let mut h = Harness::new();
        let a = hold(&mut h, strategy, "a");
        h.advance(Duration::from_secs(61));
        let b = hold(&mut h, strategy, "b");
        let e = err(drive(&mut h, "A", Release::new(&a.lease)), "not A's");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(e.message().contains("token 1"), "{strategy}: {e}");
        let live = entries(&mut h, strategy);
        assert_eq!(live.len(), 1, "{strategy}: {live:?}");
        assert_eq!(live[0].owner, key("b"), "{strategy}");
        assert_eq!(live[0].token, Some(b.lease.token()), "{strategy}");
        // A's renewal is refused too.
        let e = err(drive(&mut h, "A", Renew::new(&a.lease)), "not A's");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        drive(&mut h, "B", Release::new(&b.lease)).expect("B's release");
    }
}

/// A holder whose lock was broken and given to B: unique insert's release (a compare-and-set)
/// reports `Lost`; the plain-write strategies' release (a delete of our own cell) cannot tell, and
/// Release documents that it returns `Ok` there (the holder learns of the break from its next
/// renewal instead). Either way B keeps the lock.
fn release_after_forced_release(strategy: Strategy) {
    let mut h = Harness::new();
    let a = hold(&mut h, strategy, "a");
    drive(
        &mut h,
        "op",
        ForceRelease::new(name(NAME), &opts(strategy, 0)),
    )
    .expect("force");
    let b = hold(&mut h, strategy, "b");
    let released = drive(&mut h, "A", Release::new(&a.lease));
    assert_eq!(owners(&mut h, strategy), vec![key("b")], "{strategy}");
    assert!(b.lease.is_valid_at(h.now()));
    if strategy == Strategy::UniqueInsert {
        let e = err(released, "A's lock was broken");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
    } else {
        assert_eq!(released, Ok(()), "{strategy}: documented limit");
        let e = err(
            drive(&mut h, "A", Renew::new(&a.lease)),
            "the renewal notices",
        );
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(e.message().contains("gone"), "{strategy}: {e}");
    }
}

#[test]
fn release_after_forced_release_unique() {
    release_after_forced_release(Strategy::UniqueInsert);
}

#[test]
fn release_after_forced_release_bakery() {
    release_after_forced_release(Strategy::Bakery);
}

#[test]
fn release_after_forced_release_prefix() {
    release_after_forced_release(Strategy::ColumnPrefix);
}

/// A renewal in flight when an operator breaks the lock: A's renewal sends its first command,
/// the operator removes A's entry, B acquires (token 2), then A's renewal finishes. ForceRelease's
/// docs promise that "the removed holder learns it lost the lock at its next renewal": A's next
/// renewal must be `Lost`, and B must be the only entry.
///
/// Unique insert renews with one compare-and-set, which took effect before the break, so the
/// racing renewal is `Ok` and the next one is `Lost`. Bakery and column prefix renew with a read
/// then a put: the put lands after the break and re-creates A's cell, so A's renewals keep
/// succeeding and A and B both hold valid leases.
fn renewal_racing_a_forced_release(strategy: Strategy) {
    let mut h = Harness::new();
    let a = hold(&mut h, strategy, "a");
    h.advance(Duration::from_secs(10));
    let mut renew = Actor::new("A", Renew::new(&a.lease));
    assert_eq!(h.step(&mut renew), Step::Sent, "A's renewal: first command");
    drive(
        &mut h,
        "op",
        ForceRelease::new(name(NAME), &opts(strategy, 0)),
    )
    .expect("force");
    let b = hold(&mut h, strategy, "b");
    let racing = h.finish(&mut renew);
    h.advance(Duration::from_secs(10));
    let lease = racing.clone().unwrap_or(a.lease);
    let next = drive(&mut h, "A", Renew::new(&lease));
    let live = owners(&mut h, strategy);
    assert!(b.lease.is_valid_at(h.now()));
    assert!(
        !matches!(&next, Ok(l) if l.is_valid_at(h.now())),
        "{strategy}: A renewed again ({}) while B holds token {}; racing renewal: {}; entries {live:?}",
        next.as_ref().map_or_else(|e| e.to_string(), Render::render),
        b.lease.token(),
        racing.as_ref().map_or_else(|e| e.to_string(), Render::render),
    );
    assert_eq!(live, vec![key("b")], "{strategy}");
    assert_eq!(
        next.map_err(|e| e.kind()),
        Err(ErrorKind::Lost),
        "{strategy}"
    );
}

#[test]
fn renewal_racing_a_forced_release_unique() {
    renewal_racing_a_forced_release(Strategy::UniqueInsert);
}

#[test]
fn renewal_racing_a_forced_release_bakery() {
    renewal_racing_a_forced_release(Strategy::Bakery);
}

#[test]
fn renewal_racing_a_forced_release_prefix() {
    renewal_racing_a_forced_release(Strategy::ColumnPrefix);
}

#[test]
fn release_with_mutation_is_checked() {
    let mut h = Harness::new();
    let u = hold(&mut h, Strategy::UniqueInsert, "a");
    let put = |column: &str| Write::Put {
        column: column.into(),
        value: "v".into(),
        ttl: None,
    };
    let e = Release::with_mutation(&u.lease, vec![put("data")]).expect_err("unique insert");
    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
    assert!(e.message().contains("column-prefix strategy"), "{e}");
    drive(&mut h, "A", Release::new(&u.lease)).expect("release");

    let mut h = Harness::new();
    let p = hold(&mut h, Strategy::ColumnPrefix, "a");
    for bad in ["_LOCK_", "_LOCK_x", ""] {
        let e = Release::with_mutation(&p.lease, vec![put(bad)]).expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{bad:?}: {e}");
    }
    let release = Release::with_mutation(&p.lease, vec![put("data")]).expect("a data column");
    drive(&mut h, "A", release).expect("release with mutation");
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" prefix "_LOCK_" quorum
        t=0ms A: <- cells ["_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=0ms A: batch "job" [put "data" = "v" ttl=none; delete "_LOCK_a:1:0000000000000001"] quorum
        t=0ms A: <- written
        t=0ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Broken stores

#[test]
fn dead_store_gives_store_unavailable_after_store_attempts_sends() {
    let first = |strategy: Strategy| match strategy {
        Strategy::UniqueInsert => r#"insert-if-absent of "job"/"lock""#.to_string(),
        Strategy::Bakery => format!(r#"write of "job"/"ticket/{}""#, key("a")),
        Strategy::ColumnPrefix => format!(r#"write of "job"/"_LOCK_{}""#, key("a")),
    };
    for strategy in ALL {
        for attempts in [1, 3, 5] {
            let mut h = Harness::new();
            h.always(any, Fault::Unavailable);
            let mut a = Actor::new("A", acquire(strategy, "a", |o| o.store_attempts = attempts));
            let e = err(h.finish(&mut a), "dead store");
            assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
            assert_eq!(
                a.sent, attempts,
                "{strategy}: one command, sent store_attempts times"
            );
            assert!(
                e.message().contains(&first(strategy))
                    && e.message().contains(&format!("failed {attempts} times"))
                    && e.message().contains("store down"),
                "{strategy}: the message names the command, the count and the cause: {e}"
            );
            assert_eq!(h.table.stored_cells(), 0);
        }
    }
}

#[test]
fn dead_store_fails_every_operation_cleanly() {
    for strategy in ALL {
        let mut h = Harness::new();
        let a = hold(&mut h, strategy, "a");
        h.always(any, Fault::Unavailable);
        let o = opts(strategy, 0);
        let kinds = [
            drive(&mut h, "A", Renew::new(&a.lease)).map(|_| ()),
            drive(&mut h, "A", Release::new(&a.lease)),
            drive(&mut h, "I", Inspect::new(name(NAME), &o)).map(|_| ()),
            drive(&mut h, "P", Purge::new(Some(name(NAME)), &o)).map(|_| ()),
            drive(&mut h, "F", ForceRelease::new(name(NAME), &o)).map(|_| ()),
        ];
        for k in kinds {
            assert_eq!(
                k.map_err(|e| e.kind()),
                Err(ErrorKind::StoreUnavailable),
                "{strategy}"
            );
        }
        h.heal();
        assert_eq!(owners(&mut h, strategy), vec![key("a")], "{strategy}");
    }
}

#[test]
fn rejected_command_is_a_store_error_at_once() {
    for strategy in ALL {
        let mut h = Harness::new();
        h.always(any, Fault::Reject);
        let mut a = Actor::new("A", acquire(strategy, "a", |_| {}));
        let e = err(h.finish(&mut a), "rejected");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{strategy}: {e}");
        assert_eq!(a.sent, 1, "{strategy}: not retried");
        assert!(
            e.message().contains("store refused the") && e.message().contains("permission denied"),
            "{strategy}: {e}"
        );
    }
}

/// Acquire's docs: "A failed acquisition leaves no cell of ours behind when the store is
/// reachable". Here the store rejects only the fencing-counter update.
fn rejected_fence_leaves_no_cell(strategy: Strategy) {
    let mut h = Harness::new();
    h.always(fence, Fault::Reject);
    let e = err(
        drive(&mut h, "A", acquire(strategy, "a", |_| {})),
        "rejected",
    );
    assert_eq!(e.kind(), ErrorKind::StoreError, "{strategy}: {e}");
    h.heal();
    assert_eq!(owners(&mut h, strategy), Vec::<String>::new(), "{strategy}");
}

#[test]
fn rejected_fence_leaves_no_cell_bakery() {
    rejected_fence_leaves_no_cell(Strategy::Bakery);
}

#[test]
fn rejected_fence_leaves_no_cell_unique() {
    rejected_fence_leaves_no_cell(Strategy::UniqueInsert);
}

#[test]
fn rejected_fence_leaves_no_cell_prefix() {
    rejected_fence_leaves_no_cell(Strategy::ColumnPrefix);
}

#[test]
/// Every conditional command times out but is never applied: each serial read-back shows it was
/// not, so the outcome is settled ("not applied"), not ambiguous: `StoreUnavailable`, and no cell
/// of ours is left behind.
fn conditional_commands_timing_out_unapplied_for_ever_are_store_unavailable() {
    for strategy in ALL {
        let mut h = Harness::new();
        h.always(conditional, Fault::TimeoutUnapplied);
        let mut a = Actor::new("A", acquire(strategy, "a", |_| {}));
        let e = err(h.finish(&mut a), "never applied");
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
        assert!(
            e.message().contains("showed it had not been applied"),
            "{strategy}: {e}"
        );
        // Unique insert: the lock insert itself; the others: the fencing counter.
        let column = if strategy == Strategy::ColumnPrefix {
            "_LOCK_"
        } else if strategy == Strategy::Bakery {
            "fence"
        } else {
            "lock"
        };
        assert!(
            e.message().contains(&format!("{column:?}")),
            "{strategy}: {e}"
        );
    }
}

#[test]
fn conditional_timeouts_are_sent_store_attempts_times_each_settled_by_a_serial_read() {
    let mut h = Harness::new();
    h.always(conditional, Fault::TimeoutUnapplied);
    let mut a = Actor::new("A", acquire(Strategy::UniqueInsert, "a", |_| {}));
    let e = err(h.finish(&mut a), "never applied");
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable);
    assert_transcript(
        &h,
        r#"
        t=0ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=0ms A: <- failed: timeout "timed out"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: read "job" exact "lock" serial
        t=6.949149ms A: <- cells []
        t=6.949149ms A: wait until t=12.033090ms
        t=12.033090ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=12.033090ms A: <- failed: timeout "timed out"
        t=12.033090ms A: wait until t=31.040697ms
        t=31.040697ms A: read "job" exact "lock" serial
        t=31.040697ms A: <- cells []
        t=31.040697ms A: wait until t=46.870000ms
        t=46.870000ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=46.870000ms A: <- failed: timeout "timed out"
        t=46.870000ms A: wait until t=75.918838ms
        t=75.918838ms A: read "job" exact "lock" serial
        t=75.918838ms A: <- cells []
        t=75.918838ms A: => error store_unavailable: store unavailable: insert-if-absent of "job"/"lock" failed 3 times, last: it timed out and a serial read showed it had not been applied
        "#,
    );
}

#[test]
fn a_store_timing_out_on_everything_is_ambiguous_after_a_conditional_send() {
    let mut h = Harness::new();
    h.always(any, Fault::TimeoutUnapplied);
    let mut a = Actor::new("A", acquire(Strategy::UniqueInsert, "a", |_| {}));
    let e = err(h.finish(&mut a), "never settles");
    assert_eq!(e.kind(), ErrorKind::Ambiguous, "{e}");
    assert!(e.message().contains("timed out"), "{e}");
    // The insert is sent once; the settling reads that time out count against store_attempts.
    // The insert may have been applied, so the acquisition then tries to remove its record
    // (compare-and-set to nothing), which is just as unsettled: 4 + 4 commands.
    assert_eq!(a.sent, 8);
    assert_transcript(
        &h,
        r#"
        t=0ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=0ms A: <- failed: timeout "timed out"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: read "job" exact "lock" serial
        t=6.949149ms A: <- failed: timeout "timed out"
        t=6.949149ms A: wait until t=27.284914ms
        t=27.284914ms A: read "job" exact "lock" serial
        t=27.284914ms A: <- failed: timeout "timed out"
        t=27.284914ms A: wait until t=103.315342ms
        t=103.315342ms A: read "job" exact "lock" serial
        t=103.315342ms A: <- failed: timeout "timed out"
        t=103.315342ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" then delete serial/quorum
        t=103.315342ms A: <- failed: timeout "timed out"
        t=103.315342ms A: wait until t=111.229994ms
        t=111.229994ms A: read "job" exact "lock" serial
        t=111.229994ms A: <- failed: timeout "timed out"
        t=111.229994ms A: wait until t=140.278832ms
        t=140.278832ms A: read "job" exact "lock" serial
        t=140.278832ms A: <- failed: timeout "timed out"
        t=140.278832ms A: wait until t=190.256093ms
        t=190.256093ms A: read "job" exact "lock" serial
        t=190.256093ms A: <- failed: timeout "timed out"
        t=190.256093ms A: => error ambiguous: insert-if-absent of "job"/"lock" timed out and reading back could not settle whether it was applied: timed out
        "#,
    );
}

/// The reply to A's release (a compare-and-set to nothing) is lost after the store applied it;
/// before A reads back, B takes the free lock. A's read-back finds B's record: this cannot be
/// told from a takeover, and Release documents the conservative answer, `Lost`. B keeps the lock.
#[test]
fn lost_release_reply_then_takeover_is_reported_lost_conservatively() {
    let mut h = Harness::new();
    let a = hold(&mut h, Strategy::UniqueInsert, "a");
    let mut release = Actor::new("A", Release::new(&a.lease));
    h.once("A", any, Fault::LoseReply);
    assert_eq!(h.step(&mut release), Step::Sent);
    let Step::Wait(read_back_at) = h.run(&mut release) else {
        panic!("A waits before reading back")
    };
    let b = hold(&mut h, Strategy::UniqueInsert, "b");
    h.advance_to(read_back_at);
    let result = h.finish(&mut release);
    assert_eq!(b.lease.token(), 2);
    let e = err(result, "conservative");
    assert_eq!(e.kind(), ErrorKind::Lost, "{}", h.transcript());
    assert!(e.message().contains("taken over by"), "{e}");
    assert_eq!(owners(&mut h, Strategy::UniqueInsert), vec![key("b")]);
}

// -------------------------------------------------------------------------------------------
// Inspect, purge, forced release

#[test]
fn inspect_shows_holder_and_waiters() {
    // Bakery: A holds ticket 1; B has ticket 2 and waits.
    let mut h = Harness::new();
    hold(&mut h, Strategy::Bakery, "a");
    let mut b = Actor::new(
        "B",
        acquire(Strategy::Bakery, "b", |o| {
            o.wait = Wait::Timeout(Duration::from_secs(10))
        }),
    );
    assert!(matches!(h.run(&mut b), Step::Wait(_)));
    let info: Vec<String> = entries(&mut h, Strategy::Bakery)
        .iter()
        .map(render_info)
        .collect();
    assert_eq!(
        info,
        vec![
            format!(
                r#""ticket/{a}" {a} held ticket=1 token=1 expires_in=60s"#,
                a = key("a")
            ),
            format!(
                r#""ticket/{b}" {b} waiting ticket=2 expires_in=60s"#,
                b = key("b")
            ),
        ]
    );

    for strategy in [Strategy::UniqueInsert, Strategy::ColumnPrefix] {
        let mut h = Harness::new();
        hold(&mut h, strategy, "a");
        h.advance(Duration::from_secs(5));
        let live = entries(&mut h, strategy);
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].owner, key("a"));
        assert_eq!(live[0].state, EntryState::Held);
        assert_eq!(live[0].token, Some(1));
        assert_eq!(live[0].created_unix_ms, Some(1000));
        assert_eq!(live[0].expires_in, Some(Duration::from_secs(55)));
    }
}

#[test]
fn inspect_of_a_unique_lock_reads_at_serial() {
    let mut h = Harness::new();
    entries(&mut h, Strategy::UniqueInsert);
    assert_transcript(
        &h,
        r#"
        t=0ms I: read "job" all serial
        t=0ms I: <- cells []
        t=0ms I: => entries []
        "#,
    );
}

#[test]
fn forced_release_removes_the_holder_keeps_the_counter() {
    for strategy in ALL {
        let mut h = Harness::new();
        let a = hold(&mut h, strategy, "a");
        let before = h.table.read(NAME, &ColumnFilter::All, h.now()).len();
        let removed = drive(
            &mut h,
            "F",
            ForceRelease::new(name(NAME), &opts(strategy, 0)),
        )
        .expect("force");
        assert_eq!(removed.len(), 1, "{strategy}: {removed:?}");
        assert_eq!(removed[0].owner, key("a"), "{strategy}");
        let cells = h.table.read(NAME, &ColumnFilter::All, h.now());
        assert_eq!(cells.len(), before - 1, "{strategy}: {cells:?}");
        assert!(
            cells.iter().all(|c| c.value.starts_with("token=1 ")),
            "{strategy}: only the counter is left: {cells:?}"
        );
        // The removed holder hears of it at its next renewal.
        let e = err(drive(&mut h, "A", Renew::new(&a.lease)), "force-released");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        // The next grant's token is larger.
        let b = hold(&mut h, strategy, "b");
        assert_eq!(b.lease.token(), 2, "{strategy}");
        // Forcing an unheld lock removes nothing.
        drive(&mut h, "B", Release::new(&b.lease)).expect("release");
        let removed = drive(
            &mut h,
            "F",
            ForceRelease::new(name(NAME), &opts(strategy, 0)),
        )
        .expect("force");
        assert!(removed.is_empty(), "{strategy}: {removed:?}");
    }
}

#[test]
fn forced_release_removes_every_bakery_entry() {
    let mut h = Harness::new();
    hold(&mut h, Strategy::Bakery, "a");
    let mut b = Actor::new(
        "B",
        acquire(Strategy::Bakery, "b", |o| {
            o.wait = Wait::Timeout(Duration::from_secs(10))
        }),
    );
    assert!(matches!(h.run(&mut b), Step::Wait(_)));
    let removed = drive(
        &mut h,
        "F",
        ForceRelease::new(name(NAME), &opts(Strategy::Bakery, 0)),
    )
    .expect("force");
    assert_eq!(removed.len(), 2);
    // B notices its ticket is gone and starts over; it then gets the lock.
    let g = h.finish(&mut b).expect("B acquires");
    assert_eq!(g.lease.token(), 2);
}

#[test]
fn purge_removes_expired_cells_and_keeps_the_counter() {
    for strategy in ALL {
        let mut h = Harness::new();
        hold(&mut h, strategy, "a");
        h.advance(Duration::from_secs(60));
        assert_eq!(h.table.stored_cells(), 2, "{strategy}: lock cell + counter");
        let removed = drive(
            &mut h,
            "P",
            Purge::new(Some(name(NAME)), &opts(strategy, 0)),
        )
        .expect("purge");
        let column = match strategy {
            Strategy::Bakery => format!("ticket/{}", key("a")),
            Strategy::UniqueInsert => "lock".to_string(),
            Strategy::ColumnPrefix => format!("_LOCK_{}", key("a")),
        };
        assert_eq!(removed, vec![(NAME.to_string(), column)], "{strategy}");
        assert_eq!(h.table.stored_cells(), 1, "{strategy}: the counter stays");
        let b = hold(&mut h, strategy, "b");
        assert_eq!(b.lease.token(), 2, "{strategy}");
    }
}

#[test]
fn purge_of_the_whole_table() {
    let mut h = Harness::new();
    for (n, strategy) in ["x", "y"].into_iter().zip(ALL) {
        let o = options(strategy, "a", |_| {});
        drive(
            &mut h,
            "A",
            Acquire::new(name(n), owner("a"), o).expect("valid"),
        )
        .expect("acquire");
    }
    h.advance(Duration::from_secs(60));
    let removed = drive(
        &mut h,
        "P",
        Purge::new(None, &opts(Strategy::UniqueInsert, 0)),
    )
    .expect("purge");
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert_eq!(h.table.stored_cells(), 2, "both counters stay");
}

#[test]
fn purge_removes_stale_prefix_columns_when_the_cell_ttl_is_longer() {
    let mut h = Harness::new();
    let cell_ttl = |o: &mut LockOptions| o.prefix.cell_ttl = Some(Duration::from_secs(120));
    drive(&mut h, "A", acquire(Strategy::ColumnPrefix, "a", cell_ttl)).expect("acquire");
    h.advance(Duration::from_secs(30));
    // Not stale yet: nothing to remove.
    let mut o = opts(Strategy::ColumnPrefix, 0);
    cell_ttl(&mut o);
    let removed = drive(&mut h, "P", Purge::new(Some(name(NAME)), &o)).expect("purge");
    assert!(removed.is_empty(), "{removed:?}");
    h.advance(Duration::from_secs(31));
    let live = entries(&mut h, Strategy::ColumnPrefix);
    assert_eq!(live[0].state, EntryState::Stale);
    h.clear_transcript();
    let removed = drive(&mut h, "P", Purge::new(Some(name(NAME)), &o)).expect("purge");
    assert_eq!(
        removed,
        vec![(NAME.to_string(), format!("_LOCK_{}", key("a")))]
    );
    assert!(entries(&mut h, Strategy::ColumnPrefix).is_empty());
    assert_transcript(
        &h,
        r#"
        t=61000ms P: purge "job"
        t=61000ms P: <- purged []
        t=61000ms P: read "job" prefix "_LOCK_" quorum
        t=61000ms P: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=1000" ttl=59s]
        t=61000ms P: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=61000ms P: <- written
        t=61000ms P: => removed ["job"/"_LOCK_a:1:0000000000000001"]
        t=61000ms I: read "job" prefix "_LOCK_" quorum
        t=61000ms I: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=61000ms I: => entries []
        "#,
    );
}

#[test]
fn fail_on_stale_lock_gives_stale_lock_and_leaves_nothing_of_ours() {
    let mut h = Harness::new();
    let stale_opts = |fail: bool| {
        move |o: &mut LockOptions| {
            o.prefix.cell_ttl = Some(Duration::from_secs(120));
            o.prefix.fail_on_stale_lock = fail;
        }
    };
    drive(
        &mut h,
        "A",
        acquire(Strategy::ColumnPrefix, "a", stale_opts(false)),
    )
    .expect("acquire");
    h.advance(Duration::from_secs(61));
    let e = err(
        drive(
            &mut h,
            "B",
            acquire(Strategy::ColumnPrefix, "b", stale_opts(true)),
        ),
        "stale column found",
    );
    assert_eq!(e.kind(), ErrorKind::StaleLock, "{e}");
    assert!(
        e.message().contains(&format!("_LOCK_{}", key("a"))) && e.message().contains("purge"),
        "{e}"
    );
    // B removed its own column; A's stale one is left for the operator.
    let live = entries(&mut h, Strategy::ColumnPrefix);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].owner, key("a"));
    assert_eq!(live[0].state, EntryState::Stale);
    // Without the flag, C takes over and removes it.
    let c = drive(
        &mut h,
        "C",
        acquire(Strategy::ColumnPrefix, "c", stale_opts(false)),
    )
    .expect("C acquires over the stale column");
    assert_eq!(c.lease.token(), 2);
    assert_eq!(owners(&mut h, Strategy::ColumnPrefix), vec![key("c")]);
}
