//! Transcript tests: the exact storage commands each strategy emits in four scenarios, pinned as
//! full transcripts so that any change in what the kernel sends shows up as a diff.
//!
//! Scenarios, for each of bakery, unique insert and column prefix:
//! - (a) uncontended acquire + release;
//! - (b) contended handoff: B waits, A releases, B acquires with a larger token;
//! - (c) an expired holder taken over: A's TTL runs out at the store, B acquires, A's late
//!   release is `Lost` and leaves B's lock alone;
//! - (d) lost replies: the store applies a command but the operation hears a timeout; conditional
//!   commands are settled by a serial read, plain ones are sent again.
//!
//! Every transcript was read against the strategy's documented algorithm and round-trip counts
//! (see `baton_kernel::strategy`) before it was pinned. Regenerate one with
//! `BLESS=/tmp/transcripts cargo test -p baton-kernel --test transcripts <name>`, which writes
//! it to `/tmp/transcripts/<name>.txt`; read it before pasting it.

mod support;

use std::time::Duration;

use baton_kernel::{
    Acquire, ColumnFilter, ErrorKind, Grant, Inspect, LockOptions, OwnerId, Release, Strategy, Wait,
};
use support::*;

fn acquire(who: &str, strategy: Strategy, wait: Wait) -> Acquire {
    let (host, created) = match who {
        "A" => ("a", 1000),
        "B" => ("b", 2000),
        _ => ("c", 3000),
    };
    let opts = LockOptions {
        wait,
        ..opts(strategy, created)
    };
    Acquire::new(name(NAME), owner(host), opts).expect("valid options")
}

fn granted(r: Result<Grant, baton_kernel::Error>) -> Grant {
    r.unwrap_or_else(|e| panic!("expected a grant, got {e}"))
}

/// The live lock entries of the row, as `Inspect` reports them (without recording).
fn entries(h: &mut Harness, strategy: Strategy) -> Vec<baton_kernel::LockInfo> {
    let record = h.record;
    h.record = false;
    let info = drive(h, "inspect", Inspect::new(name(NAME), &opts(strategy, 0))).expect("inspect");
    h.record = record;
    info
}

// -------------------------------------------------------------------------------------------
// Scenarios

/// (a) A acquires an uncontended lock at t=0 and releases it at t=1s. Checks the round trips
/// against the strategy's documented cost (`acquire_rts`; release: 2 for every strategy, which
/// reads before it removes).
fn uncontended(strategy: Strategy, acquire_rts: u32) -> Harness {
    let release_rts = 2;
    let mut h = Harness::new();
    let grant = granted(drive(&mut h, "A", acquire("A", strategy, Wait::TryOnce)));
    assert_eq!(grant.lease.token(), 1);
    assert_eq!(
        h.commands, acquire_rts,
        "round trips of an uncontended acquire"
    );
    h.advance(Duration::from_secs(1));
    drive(&mut h, "A", Release::new(&grant.lease)).expect("release");
    assert_eq!(
        h.commands,
        acquire_rts + release_rts,
        "round trips of a release"
    );
    assert!(entries(&mut h, strategy).is_empty());
    h
}

/// (b) A holds; B (waiting up to 10 s) tries at t=1s and backs off; A releases at t=1.001s;
/// B retries when its backoff ends and gets the lock with token 2; B releases.
fn handoff(strategy: Strategy) -> Harness {
    let mut h = Harness::new();
    let a = granted(drive(&mut h, "A", acquire("A", strategy, Wait::TryOnce)));
    h.advance(Duration::from_secs(1));
    let mut b = Actor::new(
        "B",
        acquire("B", strategy, Wait::Timeout(Duration::from_secs(10))),
    );
    let Step::Wait(wake) = h.run(&mut b) else {
        panic!("B should wait while A holds")
    };
    assert!(wake > h.now());
    h.advance(Duration::from_millis(1));
    assert!(h.now() < wake, "A releases before B's backoff ends");
    drive(&mut h, "A", Release::new(&a.lease)).expect("A's release");
    let b_grant = granted(h.finish(&mut b));
    assert!(b_grant.lease.token() > a.lease.token());
    assert_eq!(b_grant.lease.token(), 2);
    drive(&mut h, "B", Release::new(&b_grant.lease)).expect("B's release");
    h
}

/// (c) A acquires at t=0 (TTL 60 s) and stops. At t=61s its cell has expired at the store;
/// B acquires. A's release at t=62s is `Lost` and B's lock stays.
fn takeover(strategy: Strategy) -> Harness {
    let mut h = Harness::new();
    let a = granted(drive(&mut h, "A", acquire("A", strategy, Wait::TryOnce)));
    h.advance(Duration::from_secs(61));
    assert!(!a.lease.is_valid_at(h.now()));
    let b = granted(drive(&mut h, "B", acquire("B", strategy, Wait::TryOnce)));
    assert!(b.lease.token() > a.lease.token());
    h.advance(Duration::from_secs(1));
    let e = drive(&mut h, "A", Release::new(&a.lease)).expect_err("A's lease is gone");
    assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    let live = entries(&mut h, strategy);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].owner, owner("b").key());
    assert_eq!(live[0].token, Some(b.lease.token()));
    assert!(b.lease.is_valid_at(h.now()));
    h
}

/// (d) The store applies A's first lock-cell write and its fencing-counter update, but A hears a
/// timeout each time; later the reply to A's release is lost too. B tries once in between and
/// is refused: one holder throughout.
fn lost_replies(strategy: Strategy, first_write: Matcher) -> Harness {
    let mut h = Harness::new();
    h.once("A", first_write, Fault::LoseReply);
    h.once("A", fence, Fault::LoseReply);
    let a = granted(drive(&mut h, "A", acquire("A", strategy, Wait::TryOnce)));
    assert_eq!(a.lease.token(), 1);
    let live = entries(&mut h, strategy);
    assert_eq!(live.len(), 1, "exactly one entry: {live:?}");
    assert_eq!(live[0].owner, owner("a").key());
    assert_eq!(live[0].token, Some(1));
    h.advance(Duration::from_secs(1));
    let e = drive(&mut h, "B", acquire("B", strategy, Wait::TryOnce)).expect_err("A holds");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    h.advance(Duration::from_secs(1));
    h.once("A", removal, Fault::LoseReply);
    drive(&mut h, "A", Release::new(&a.lease)).expect("release settles as applied");
    assert!(entries(&mut h, strategy).is_empty());
    // Only the fencing counter remains.
    let cells = h.table.read(NAME, &ColumnFilter::All, h.now());
    assert_eq!(cells.len(), 1, "{cells:?}");
    h
}

// -------------------------------------------------------------------------------------------
// Bakery

#[test]
fn bakery_uncontended() {
    // Documented: 5 round trips (entering, read, ticket, read, counter); release 1.
    let h = uncontended(Strategy::Bakery, 5);
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s]
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms A: read "job" all quorum
        t=1000ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=59s]
        t=1000ms A: delete "job"/"ticket/a:1:0000000000000001" quorum
        t=1000ms A: <- written
        t=1000ms A: => ok
        "#,
    );
}

#[test]
fn bakery_handoff() {
    let h = handoff(Strategy::Bakery);
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s]
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms B: put "job"/"ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=60s quorum
        t=1000ms B: <- written
        t=1000ms B: read "job" all quorum
        t=1000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=59s, "ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=60s]
        t=1000ms B: put "job"/"ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=60s quorum
        t=1000ms B: <- written
        t=1000ms B: read "job" all quorum
        t=1000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=59s, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=60s]
        t=1000ms B: wait until t=1006.949149ms
        t=1001ms A: read "job" all quorum
        t=1001ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=58999ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=59999ms]
        t=1001ms A: delete "job"/"ticket/a:1:0000000000000001" quorum
        t=1001ms A: <- written
        t=1001ms A: => ok
        t=1001ms B: wait until t=1006.949149ms
        t=1006.949149ms B: read "job" all quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=59993.050851ms]
        t=1006.949149ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => granted lease token=2 deadline=t=60399ms
        t=1006.949149ms B: read "job" all quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=59993.050851ms]
        t=1006.949149ms B: delete "job"/"ticket/b:1:0000000000000001" quorum
        t=1006.949149ms B: <- written
        t=1006.949149ms B: => ok
        "#,
    );
}

#[test]
fn bakery_takeover() {
    let h = takeover(Strategy::Bakery);
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s]
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=61000ms B: put "job"/"ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=60s quorum
        t=61000ms B: <- written
        t=61000ms B: read "job" all quorum
        t=61000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=60s]
        t=61000ms B: put "job"/"ticket/b:1:0000000000000001" = "ticket=1 created_ms=2000" ttl=60s quorum
        t=61000ms B: <- written
        t=61000ms B: read "job" all quorum
        t=61000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=1 created_ms=2000" ttl=60s]
        t=61000ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=61000ms B: <- applied
        t=61000ms B: => granted lease token=2 deadline=t=120399ms
        t=62000ms A: read "job" all quorum
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=1 created_ms=2000" ttl=59s]
        t=62000ms A: delete "job"/"ticket/a:1:0000000000000001" quorum
        t=62000ms A: <- written
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn bakery_lost_replies() {
    let h = lost_replies(Strategy::Bakery, ticket_put);
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=60s]
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s quorum
        t=0ms A: <- [store: written, reply lost] failed: timeout "reply lost"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s quorum
        t=6.949149ms A: <- written
        t=6.949149ms A: read "job" all quorum
        t=6.949149ms A: <- cells ["ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=60s]
        t=6.949149ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=6.949149ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=6.949149ms A: wait until t=12.033090ms
        t=12.033090ms A: read "job" exact "_LOCK_" serial
        t=12.033090ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=12.033090ms A: => granted lease token=1 deadline=t=59399ms
        t=1012.033090ms B: put "job"/"ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=60s quorum
        t=1012.033090ms B: <- written
        t=1012.033090ms B: read "job" all quorum
        t=1012.033090ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=58994.916059ms, "ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=60s]
        t=1012.033090ms B: put "job"/"ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=60s quorum
        t=1012.033090ms B: <- written
        t=1012.033090ms B: read "job" all quorum
        t=1012.033090ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=58994.916059ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=60s]
        t=1012.033090ms B: delete "job"/"ticket/b:1:0000000000000001" quorum
        t=1012.033090ms B: <- written
        t=1012.033090ms B: => error busy: lock "job" is held or queued for by a:1:0000000000000001
        t=2012.033090ms A: read "job" all quorum
        t=2012.033090ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=57994.916059ms]
        t=2012.033090ms A: delete "job"/"ticket/a:1:0000000000000001" quorum
        t=2012.033090ms A: <- [store: written, reply lost] failed: timeout "reply lost"
        t=2012.033090ms A: wait until t=2020.732175ms
        t=2020.732175ms A: delete "job"/"ticket/a:1:0000000000000001" quorum
        t=2020.732175ms A: <- written
        t=2020.732175ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Unique insert

#[test]
fn unique_uncontended() {
    // Documented: "2 round trips (insert + counter) when the counter's value is known from a
    // FenceHint, 3 otherwise". On a fresh table the counter does not exist yet and its
    // insert-if-absent succeeds at once: 2 round trips without a hint (the doc's "3 otherwise"
    // holds once the counter exists: see `unique_handoff`, where B needs 3).
    let h = uncontended(Strategy::UniqueInsert, 3);
    assert_transcript(
        &h,
        r#"
        t=0ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=0ms A: <- applied
        t=0ms A: read "job" all serial
        t=0ms A: <- cells ["lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms A: read "job" all serial
        t=1000ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59s]
        t=1000ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" then delete serial/quorum
        t=1000ms A: <- applied
        t=1000ms A: => ok
        "#,
    );
}

#[test]
fn unique_handoff() {
    let h = handoff(Strategy::UniqueInsert);
    assert_transcript(
        &h,
        r#"
        t=0ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=0ms A: <- applied
        t=0ms A: read "job" all serial
        t=0ms A: <- cells ["lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms B: insert-if-absent "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s serial/quorum
        t=1000ms B: <- not applied, current "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000"
        t=1000ms B: wait until t=1006.949149ms
        t=1001ms A: read "job" all serial
        t=1001ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=58999ms]
        t=1001ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" then delete serial/quorum
        t=1001ms A: <- applied
        t=1001ms A: => ok
        t=1001ms B: wait until t=1006.949149ms
        t=1006.949149ms B: insert-if-absent "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: read "job" all serial
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s]
        t=1006.949149ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => granted lease token=2 deadline=t=60405.949149ms
        t=1006.949149ms B: read "job" all serial
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s]
        t=1006.949149ms B: cas "job"/"lock" if "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" then delete serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => ok
        "#,
    );
}

#[test]
fn unique_takeover() {
    let h = takeover(Strategy::UniqueInsert);
    assert_transcript(
        &h,
        r#"
        t=0ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=0ms A: <- applied
        t=0ms A: read "job" all serial
        t=0ms A: <- cells ["lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=61000ms B: insert-if-absent "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s serial/quorum
        t=61000ms B: <- applied
        t=61000ms B: read "job" all serial
        t=61000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s]
        t=61000ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=61000ms B: <- applied
        t=61000ms B: => granted lease token=2 deadline=t=120399ms
        t=62000ms A: read "job" all serial
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=59s]
        t=62000ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" then delete serial/quorum
        t=62000ms A: <- not applied, current "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000"
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn unique_lost_replies() {
    let h = lost_replies(Strategy::UniqueInsert, lock_cell);
    assert_transcript(
        &h,
        r#"
        t=0ms A: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=0ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: read "job" exact "lock" serial
        t=6.949149ms A: <- cells ["lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59993.050851ms]
        t=6.949149ms A: read "job" all serial
        t=6.949149ms A: <- cells ["lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59993.050851ms]
        t=6.949149ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=6.949149ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=6.949149ms A: wait until t=12.033090ms
        t=12.033090ms A: read "job" exact "_LOCK_" serial
        t=12.033090ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=12.033090ms A: => granted lease token=1 deadline=t=59399ms
        t=1012.033090ms B: insert-if-absent "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s serial/quorum
        t=1012.033090ms B: <- not applied, current "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000"
        t=1012.033090ms B: => error busy: lock "job" is held by a:1:0000000000000001
        t=2012.033090ms A: read "job" all serial
        t=2012.033090ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=57987.966910ms]
        t=2012.033090ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" then delete serial/quorum
        t=2012.033090ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=2012.033090ms A: wait until t=2020.732175ms
        t=2020.732175ms A: read "job" exact "lock" serial
        t=2020.732175ms A: <- cells []
        t=2020.732175ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Column prefix

#[test]
fn prefix_uncontended() {
    // Documented: 3 round trips (write, read, counter); release 1.
    let h = uncontended(Strategy::ColumnPrefix, 3);
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
        t=1000ms A: read "job" prefix "_LOCK_" quorum
        t=1000ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59s]
        t=1000ms A: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=1000ms A: <- written
        t=1000ms A: => ok
        "#,
    );
}

#[test]
fn prefix_handoff() {
    let h = handoff(Strategy::ColumnPrefix);
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
        t=1000ms B: put "job"/"_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s quorum
        t=1000ms B: <- written
        t=1000ms B: read "job" prefix "_LOCK_" quorum
        t=1000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59s, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s]
        t=1000ms B: delete "job"/"_LOCK_b:1:0000000000000001" quorum
        t=1000ms B: <- written
        t=1000ms B: wait until t=1006.949149ms
        t=1001ms A: read "job" prefix "_LOCK_" quorum
        t=1001ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=58999ms]
        t=1001ms A: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=1001ms A: <- written
        t=1001ms A: => ok
        t=1001ms B: wait until t=1006.949149ms
        t=1006.949149ms B: put "job"/"_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s quorum
        t=1006.949149ms B: <- written
        t=1006.949149ms B: read "job" prefix "_LOCK_" quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s]
        t=1006.949149ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => granted lease token=2 deadline=t=60405.949149ms
        t=1006.949149ms B: read "job" prefix "_LOCK_" quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s]
        t=1006.949149ms B: delete "job"/"_LOCK_b:1:0000000000000001" quorum
        t=1006.949149ms B: <- written
        t=1006.949149ms B: => ok
        "#,
    );
}

#[test]
fn prefix_takeover() {
    let h = takeover(Strategy::ColumnPrefix);
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
        t=61000ms B: put "job"/"_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s quorum
        t=61000ms B: <- written
        t=61000ms B: read "job" prefix "_LOCK_" quorum
        t=61000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s]
        t=61000ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=61000ms B: <- applied
        t=61000ms B: => granted lease token=2 deadline=t=120399ms
        t=62000ms A: read "job" prefix "_LOCK_" quorum
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=59s]
        t=62000ms A: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=62000ms A: <- written
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn prefix_lost_replies() {
    let h = lost_replies(Strategy::ColumnPrefix, put);
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s quorum
        t=0ms A: <- [store: written, reply lost] failed: timeout "reply lost"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: put "job"/"_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s quorum
        t=6.949149ms A: <- written
        t=6.949149ms A: read "job" prefix "_LOCK_" quorum
        t=6.949149ms A: <- cells ["_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=6.949149ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=6.949149ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=6.949149ms A: wait until t=12.033090ms
        t=12.033090ms A: read "job" exact "_LOCK_" serial
        t=12.033090ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=12.033090ms A: => granted lease token=1 deadline=t=59399ms
        t=1012.033090ms B: put "job"/"_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s quorum
        t=1012.033090ms B: <- written
        t=1012.033090ms B: read "job" prefix "_LOCK_" quorum
        t=1012.033090ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=58994.916059ms, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s]
        t=1012.033090ms B: delete "job"/"_LOCK_b:1:0000000000000001" quorum
        t=1012.033090ms B: <- written
        t=1012.033090ms B: => error busy: lock "job" is held by a:1:0000000000000001
        t=2012.033090ms A: read "job" prefix "_LOCK_" quorum
        t=2012.033090ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=57994.916059ms]
        t=2012.033090ms A: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=2012.033090ms A: <- [store: written, reply lost] failed: timeout "reply lost"
        t=2012.033090ms A: wait until t=2020.732175ms
        t=2020.732175ms A: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=2020.732175ms A: <- written
        t=2020.732175ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Variants that pin documented costs and paths not covered above

/// Unique insert with a [`FenceHint`](baton_kernel::FenceHint): the documented 2 round trips
/// when the hint is current (insert + compare-and-set of the counter), 3 when it is stale (the
/// compare-and-set fails and names the current value, then succeeds).
#[test]
fn unique_fence_hint() {
    let mut h = Harness::new();
    let o = opts(Strategy::UniqueInsert, 1000);
    let first = granted(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), o.clone()).expect("valid"),
    ));
    drive(&mut h, "A", Release::new(&first.lease)).expect("release");
    h.clear_transcript();

    h.advance(Duration::from_secs(1));
    let before = h.commands;
    let again = Acquire::new(
        name(NAME),
        OwnerId::new("a", 1, 2).expect("valid"),
        o.clone(),
    )
    .expect("valid")
    .with_fence_hint(Some(first.lease.fence_hint()));
    let second = granted(drive(&mut h, "A2", again));
    assert_eq!(second.lease.token(), 2);
    assert_eq!(h.commands - before, 2, "a current hint: 2 round trips");
    drive(&mut h, "A2", Release::new(&second.lease)).expect("release");

    // The first lease's hint is now stale (token 2 was issued since).
    h.advance(Duration::from_secs(1));
    let before = h.commands;
    let stale = Acquire::new(name(NAME), OwnerId::new("a", 1, 3).expect("valid"), o)
        .expect("valid")
        .with_fence_hint(Some(first.lease.fence_hint()));
    let third = granted(drive(&mut h, "A3", stale));
    assert_eq!(third.lease.token(), 3);
    // The failed update shows a counter moved since the hint, possibly after our insert: the
    // row is read back (serial) to check our record is still the lock's before taking a token.
    assert_eq!(h.commands - before, 4, "a stale hint: 4 round trips");
    assert_transcript(
        &h,
        r#"
        t=1000ms A2: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000002 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=1000ms A2: <- applied
        t=1000ms A2: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=a:1:0000000000000002" ttl=none serial/quorum
        t=1000ms A2: <- applied
        t=1000ms A2: => granted lease token=2 deadline=t=60399ms
        t=1000ms A2: read "job" all serial
        t=1000ms A2: <- cells ["_LOCK_" = "token=2 owner=a:1:0000000000000002" ttl=none, "lock" = "owner=a:1:0000000000000002 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=1000ms A2: cas "job"/"lock" if "owner=a:1:0000000000000002 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" then delete serial/quorum
        t=1000ms A2: <- applied
        t=1000ms A2: => ok
        t=2000ms A3: insert-if-absent "job"/"lock" = "owner=a:1:0000000000000003 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s serial/quorum
        t=2000ms A3: <- applied
        t=2000ms A3: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=a:1:0000000000000003" ttl=none serial/quorum
        t=2000ms A3: <- not applied, current "token=2 owner=a:1:0000000000000002"
        t=2000ms A3: read "job" all serial
        t=2000ms A3: <- cells ["_LOCK_" = "token=2 owner=a:1:0000000000000002" ttl=none, "lock" = "owner=a:1:0000000000000003 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=2000ms A3: cas "job"/"_LOCK_" if "token=2 owner=a:1:0000000000000002" then "token=3 owner=a:1:0000000000000003" ttl=none serial/quorum
        t=2000ms A3: <- applied
        t=2000ms A3: => granted lease token=3 deadline=t=61399ms
        "#,
    );
}

/// Column prefix with a cell TTL longer than the lease: A's column outlives A's lease and is
/// *stale*. B wins over it (a stale column does not block), bumps the counter, and deletes the
/// stale column on the way: 3 round trips + 1 delete per stale column, as documented. A's late
/// release is `Lost` and does not touch B's column.
#[test]
fn prefix_stale_column_taken_over() {
    let mut h = Harness::new();
    let with_cell_ttl = |created| {
        let mut o = opts(Strategy::ColumnPrefix, created);
        o.prefix.cell_ttl = Some(Duration::from_secs(120));
        o.wait = Wait::TryOnce;
        o
    };
    let a = granted(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), with_cell_ttl(1000)).expect("valid"),
    ));
    h.advance(Duration::from_secs(61));
    let before = h.commands;
    let b = granted(drive(
        &mut h,
        "B",
        Acquire::new(name(NAME), owner("b"), with_cell_ttl(2000)).expect("valid"),
    ));
    assert_eq!(h.commands - before, 4);
    assert_eq!(b.lease.token(), 2);
    h.advance(Duration::from_secs(1));
    let e = drive(&mut h, "A", Release::new(&a.lease)).expect_err("A's lease is over");
    assert_eq!(e.kind(), ErrorKind::Lost);
    let live = entries(&mut h, Strategy::ColumnPrefix);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].owner, owner("b").key());
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=1000" ttl=120s quorum
        t=0ms A: <- written
        t=0ms A: read "job" prefix "_LOCK_" quorum
        t=0ms A: <- cells ["_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=1000" ttl=120s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=61000ms B: put "job"/"_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=2000" ttl=120s quorum
        t=61000ms B: <- written
        t=61000ms B: read "job" prefix "_LOCK_" quorum
        t=61000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=1000" ttl=59s, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=2000" ttl=120s]
        t=61000ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=61000ms B: <- applied
        t=61000ms B: delete "job"/"_LOCK_a:1:0000000000000001" at version 1 quorum
        t=61000ms B: <- written
        t=61000ms B: => granted lease token=2 deadline=t=120399ms
        t=62000ms A: read "job" prefix "_LOCK_" quorum
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=2000" ttl=119s]
        t=62000ms A: delete "job"/"_LOCK_a:1:0000000000000001" quorum
        t=62000ms A: <- written
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

/// Bakery with a 1 s TTL: B queues behind A, polls the row with growing backoff (capped by the
/// retry policy's `queue_poll`, 100 ms), and re-writes its ticket (same value, fresh TTL) once
/// half its validity has gone, as step 4 of the documented algorithm says; A renews (documented: 2 round trips, read + re-write) and then
/// releases, and B gets the lock.
#[test]
fn bakery_waiter_refreshes_its_ticket() {
    let mut h = Harness::new();
    let short = |created, wait| LockOptions {
        ttl: Duration::from_secs(1),
        wait,
        ..opts(Strategy::Bakery, created)
    };
    let a = granted(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), short(1000, Wait::TryOnce)).expect("valid"),
    ));
    let mut b = Actor::new(
        "B",
        Acquire::new(
            name(NAME),
            owner("b"),
            short(2000, Wait::Timeout(Duration::from_secs(10))),
        )
        .expect("valid"),
    );
    assert!(matches!(h.run_until(&mut b, ms(400)), Step::Wait(_)));
    h.advance_to(ms(400));
    let before = h.commands;
    let renewed = drive(&mut h, "A", baton_kernel::Renew::new(&a.lease)).expect("renewal");
    assert_eq!(h.commands - before, 2, "bakery renewal: 2 round trips");
    assert!(matches!(h.run_until(&mut b, ms(700)), Step::Wait(_)));
    h.advance_to(ms(700));
    drive(&mut h, "A", Release::new(&renewed)).expect("release");
    let b_grant = granted(h.finish(&mut b));
    assert_eq!(b_grant.lease.token(), 2);
    assert_transcript(
        &h,
        r#"
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=1s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "entering created_ms=1000" ttl=1s]
        t=0ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=1s quorum
        t=0ms A: <- written
        t=0ms A: read "job" all quorum
        t=0ms A: <- cells ["ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=1s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=989ms
        t=0ms B: put "job"/"ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=1s quorum
        t=0ms B: <- written
        t=0ms B: read "job" all quorum
        t=0ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=1s, "ticket/b:1:0000000000000001" = "entering created_ms=2000" ttl=1s]
        t=0ms B: put "job"/"ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=1s quorum
        t=0ms B: <- written
        t=0ms B: read "job" all quorum
        t=0ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=1s, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=1s]
        t=0ms B: wait until t=6.949149ms
        t=6.949149ms B: read "job" all quorum
        t=6.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=993.050851ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=993.050851ms]
        t=6.949149ms B: wait until t=17.117031ms
        t=17.117031ms B: read "job" all quorum
        t=17.117031ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=982.882969ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=982.882969ms]
        t=17.117031ms B: wait until t=55.132245ms
        t=55.132245ms B: read "job" all quorum
        t=55.132245ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=944.867755ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=944.867755ms]
        t=55.132245ms B: wait until t=118.449457ms
        t=118.449457ms B: read "job" all quorum
        t=118.449457ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=881.550543ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=881.550543ms]
        t=118.449457ms B: wait until t=191.071552ms
        t=191.071552ms B: read "job" all quorum
        t=191.071552ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=808.928448ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=808.928448ms]
        t=191.071552ms B: wait until t=253.543128ms
        t=253.543128ms B: read "job" all quorum
        t=253.543128ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=746.456872ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=746.456872ms]
        t=253.543128ms B: wait until t=326.940778ms
        t=326.940778ms B: read "job" all quorum
        t=326.940778ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=673.059222ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=673.059222ms]
        t=326.940778ms B: wait until t=393.344615ms
        t=393.344615ms B: read "job" all quorum
        t=393.344615ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=606.655385ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=606.655385ms]
        t=393.344615ms B: wait until t=450.057530ms
        t=400ms A: read "job" all quorum
        t=400ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=600ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=600ms]
        t=400ms A: put "job"/"ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=1s quorum
        t=400ms A: <- written
        t=400ms A: => lease token=1 deadline=t=1389ms
        t=400ms B: wait until t=450.057530ms
        t=450.057530ms B: read "job" all quorum
        t=450.057530ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=949.942470ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=549.942470ms]
        t=450.057530ms B: wait until t=494.500000ms
        t=494.500000ms B: put "job"/"ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=1s quorum
        t=494.500000ms B: <- written
        t=494.500000ms B: read "job" all quorum
        t=494.500000ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=905.500000ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=1s]
        t=494.500000ms B: wait until t=549.677997ms
        t=549.677997ms B: read "job" all quorum
        t=549.677997ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=850.322003ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=944.822003ms]
        t=549.677997ms B: wait until t=647.671701ms
        t=647.671701ms B: read "job" all quorum
        t=647.671701ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=752.328299ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=846.828299ms]
        t=647.671701ms B: wait until t=743.572681ms
        t=700ms A: read "job" all quorum
        t=700ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=700ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=794.500000ms]
        t=700ms A: delete "job"/"ticket/a:1:0000000000000001" quorum
        t=700ms A: <- written
        t=700ms A: => ok
        t=700ms B: wait until t=743.572681ms
        t=743.572681ms B: read "job" all quorum
        t=743.572681ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=750.927319ms]
        t=743.572681ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=743.572681ms B: <- applied
        t=743.572681ms B: => granted lease token=2 deadline=t=1483.500000ms
        "#,
    );
}
