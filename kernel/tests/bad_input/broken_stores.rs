//! Broken stores: dead, rejecting, timing out, losing replies.

use super::prelude::*;

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
            // An insert answered `Unavailable` may still have been accepted (Cassandra's
            // commit round), so unique insert also tries to remove it, as many times.
            let commands = if strategy == Strategy::UniqueInsert {
                2
            } else {
                1
            };
            assert_eq!(
                a.sent,
                commands * attempts,
                "{strategy}: each command sent store_attempts times"
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
        let column = if strategy == Strategy::UniqueInsert {
            "lock"
        } else {
            "_LOCK_"
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
        t=0ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=0ms A: <- failed: timeout "timed out"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: read "job" all serial
        t=6.949149ms A: <- cells []
        t=6.949149ms A: wait until t=12.033090ms
        t=12.033090ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=12.033090ms A: <- failed: timeout "timed out"
        t=12.033090ms A: wait until t=31.040697ms
        t=31.040697ms A: read "job" all serial
        t=31.040697ms A: <- cells []
        t=31.040697ms A: wait until t=46.870000ms
        t=46.870000ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=46.870000ms A: <- failed: timeout "timed out"
        t=46.870000ms A: wait until t=75.918838ms
        t=75.918838ms A: read "job" all serial
        t=75.918838ms A: <- cells []
        t=75.918838ms A: => error store_unavailable: store unavailable: insert-if-absent of "job"/"lock" with its counter failed 3 times, last: it timed out and a serial read showed it had not been applied
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
        t=0ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=0ms A: <- failed: timeout "timed out"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: read "job" all serial
        t=6.949149ms A: <- failed: timeout "timed out"
        t=6.949149ms A: wait until t=27.284914ms
        t=27.284914ms A: read "job" all serial
        t=27.284914ms A: <- failed: timeout "timed out"
        t=27.284914ms A: wait until t=103.315342ms
        t=103.315342ms A: read "job" all serial
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
        t=190.256093ms A: => error ambiguous: insert-if-absent of "job"/"lock" with its counter timed out and reading back could not settle whether it was applied: timed out
        "#,
    );
}

/// The reply to A's release (a compare-and-set to nothing, guarded by the counter) is lost
/// after the store applied it; before A reads back, B takes the free lock. The read finds B's
/// record and B's grant in the counter, with no forced release counted since A's: A's record
/// went away by A's own removal (or its expiry), after A stopped acting, so the release is
/// `Ok`. B keeps the lock.
#[test]
fn lost_release_reply_then_takeover_is_a_release() {
    let mut h = Harness::new();
    let a = hold(&mut h, Strategy::UniqueInsert, "a");
    let mut release = Actor::new("A", Release::new(&a.lease));
    h.once("A", lock_cell, Fault::LoseReply);
    assert_eq!(
        h.step(&mut release),
        Step::Sent,
        "the guarded compare-and-set"
    );
    let Step::Wait(read_back_at) = h.run(&mut release) else {
        panic!("A waits before reading back")
    };
    let b = hold(&mut h, Strategy::UniqueInsert, "b");
    h.advance_to(read_back_at);
    let result = h.finish(&mut release);
    assert_eq!(b.lease.token(), 2);
    assert_eq!(result, Ok(()), "{}", h.transcript());
    assert_eq!(owners(&mut h, Strategy::UniqueInsert), vec![key("b")]);
}

/// After a forced release, the read before the removal finds the counter moved: `Lost`, naming
/// the grant that came since.
#[test]
fn release_finding_another_owner_directly_is_lost() {
    let mut h = Harness::new();
    let a = hold(&mut h, Strategy::UniqueInsert, "a");
    drive(
        &mut h,
        "F",
        ForceRelease::new(name(NAME), &opts(Strategy::UniqueInsert, 0)),
    )
    .expect("forced release");
    let b = hold(&mut h, Strategy::UniqueInsert, "b");
    let e = err(drive(&mut h, "A", Release::new(&a.lease)), "granted since");
    assert_eq!(e.kind(), ErrorKind::Lost, "{}", h.transcript());
    assert!(e.message().contains("granted to b:"), "{e}");
    assert_eq!(b.lease.token(), 4, "the forced release took tokens 2 and 3");
    assert_eq!(owners(&mut h, Strategy::UniqueInsert), vec![key("b")]);
}
