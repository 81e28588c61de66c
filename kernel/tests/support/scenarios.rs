//! The transcript scenarios, each a fixed sequence of kernel operations driven against the
//! [`Harness`], returning the harness with its transcript. Shared, not copied:
//!
//! - the native test `kernel/tests/transcripts.rs` pins each scenario's transcript;
//! - the WebAssembly crate `bindings-wasm/transcripts` compiles this very file for wasm32 and
//!   plays every scenario in Node, and `scripts/wasm-bindings transcripts` compares its
//!   transcripts with the native ones byte for byte.
//!
//! A scenario's name is the name of its test in `transcripts.rs` (that test's `BLESS` file is
//! `<name>.txt`), and every test there is one of these scenarios: the comparison fails when the
//! two sets of names differ. Nothing here may touch the operating system (no clock, no threads,
//! no environment, no files): it runs in WebAssembly too.

use std::time::Duration;

use baton_kernel::{
    Acquire, ColumnFilter, ErrorKind, Grant, Inspect, LockOptions, OwnerId, Release, Strategy, Wait,
};

use super::*;

/// A scenario: plays its operations on a fresh harness and returns it, transcript and all.
pub type Scenario = fn() -> Harness;

/// Every scenario: its name (its test's in `transcripts.rs`) and the function that plays it.
pub fn all() -> Vec<(&'static str, Scenario)> {
    vec![
        ("bakery_uncontended", bakery_uncontended),
        ("bakery_handoff", bakery_handoff),
        ("bakery_takeover", bakery_takeover),
        ("bakery_lost_replies", bakery_lost_replies),
        ("unique_uncontended", unique_uncontended),
        ("unique_handoff", unique_handoff),
        ("unique_takeover", unique_takeover),
        ("unique_lost_replies", unique_lost_replies),
        ("prefix_uncontended", prefix_uncontended),
        ("prefix_handoff", prefix_handoff),
        ("prefix_takeover", prefix_takeover),
        ("prefix_lost_replies", prefix_lost_replies),
        ("unique_fence_hint", unique_fence_hint),
        (
            "prefix_stale_column_taken_over",
            prefix_stale_column_taken_over,
        ),
        (
            "bakery_waiter_refreshes_its_ticket",
            bakery_waiter_refreshes_its_ticket,
        ),
    ]
}

/// Plays the scenario called `name` and returns its transcript; `None` if there is none.
pub fn transcript(name: &str) -> Option<String> {
    all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, play)| play().transcript())
}

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
// The four scenarios, for any strategy

/// (a) A acquires an uncontended lock at t=0 and releases it at t=1s. Checks the round trips
/// against the strategy's documented cost (`acquire_rts`; release: 1 command for every
/// strategy: unique insert's removal checks the counter in the same step, the others' reads the
/// row in the same step).
fn uncontended(strategy: Strategy, acquire_rts: u32) -> Harness {
    let release_rts = 1;
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

pub fn bakery_uncontended() -> Harness {
    // Documented: 5 round trips (entering, read, ticket, read, counter); release 1.
    uncontended(Strategy::Bakery, 5)
}

pub fn bakery_handoff() -> Harness {
    handoff(Strategy::Bakery)
}

pub fn bakery_takeover() -> Harness {
    takeover(Strategy::Bakery)
}

pub fn bakery_lost_replies() -> Harness {
    lost_replies(Strategy::Bakery, ticket_put)
}

// -------------------------------------------------------------------------------------------
// Unique insert

pub fn unique_uncontended() -> Harness {
    // Documented: "2 round trips (insert + counter) when the counter's value is known from a
    // FenceHint, 3 otherwise". On a fresh table the counter does not exist yet and its
    // insert-if-absent succeeds at once: 2 round trips without a hint (the doc's "3 otherwise"
    // holds once the counter exists: see `unique_handoff`, where B needs 3).
    uncontended(Strategy::UniqueInsert, 1)
}

pub fn unique_handoff() -> Harness {
    handoff(Strategy::UniqueInsert)
}

pub fn unique_takeover() -> Harness {
    takeover(Strategy::UniqueInsert)
}

pub fn unique_lost_replies() -> Harness {
    lost_replies(Strategy::UniqueInsert, lock_cell)
}

// -------------------------------------------------------------------------------------------
// Column prefix

pub fn prefix_uncontended() -> Harness {
    // Documented: 3 round trips (write, read, counter); release 1.
    uncontended(Strategy::ColumnPrefix, 3)
}

pub fn prefix_handoff() -> Harness {
    handoff(Strategy::ColumnPrefix)
}

pub fn prefix_takeover() -> Harness {
    takeover(Strategy::ColumnPrefix)
}

pub fn prefix_lost_replies() -> Harness {
    lost_replies(Strategy::ColumnPrefix, put)
}

// -------------------------------------------------------------------------------------------
// Variants that pin documented costs and paths not covered above

/// Unique insert with a [`FenceHint`](baton_kernel::FenceHint): the documented 1 round trip
/// when the hint is current (one claim: the record and the counter together), 2 when it is
/// stale (the claim fails and names the counter's value, and the second claim succeeds).
pub fn unique_fence_hint() -> Harness {
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
    assert_eq!(h.commands - before, 1, "a current hint: 1 round trip");
    drive(&mut h, "A2", Release::new(&second.lease)).expect("release");

    // The first lease's hint is now stale (token 2 was issued since).
    h.advance(Duration::from_secs(1));
    let before = h.commands;
    let stale = Acquire::new(name(NAME), OwnerId::new("a", 1, 3).expect("valid"), o)
        .expect("valid")
        .with_fence_hint(Some(first.lease.fence_hint()));
    let third = granted(drive(&mut h, "A3", stale));
    assert_eq!(third.lease.token(), 3);
    // The failed claim changed nothing and shows the counter's value: claim again from it.
    assert_eq!(h.commands - before, 2, "a stale hint: 2 round trips");
    h
}

/// Column prefix with a cell TTL longer than the lease: A's column outlives A's lease and is
/// *stale*. B wins over it (a stale column does not block), bumps the counter, and deletes the
/// stale column on the way: 3 round trips + 1 delete per stale column, as documented. A's late
/// release is `Lost` and does not touch B's column.
pub fn prefix_stale_column_taken_over() -> Harness {
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
    h
}

/// Bakery with a 1 s TTL: B queues behind A, polls the row with growing backoff (capped by the
/// retry policy's `queue_poll`, 100 ms), and re-writes its ticket (same value, fresh TTL) once
/// half its validity has gone, as step 4 of the documented algorithm says; A renews (documented: 2 round trips, read + re-write) and then
/// releases, and B gets the lock.
pub fn bakery_waiter_refreshes_its_ticket() -> Harness {
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
    h
}
