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
//! And a few variants that pin documented costs and paths the four do not cover.
//!
//! The scenarios themselves live in `support/scenarios.rs`, each a function named like its test
//! here, so that the WebAssembly build can play the very same code (`bindings-wasm/transcripts`;
//! `scripts/wasm-bindings transcripts` compares its transcripts with these byte for byte). A new
//! transcript test here needs its scenario there, under the same name.
//!
//! Every transcript was read against the strategy's documented algorithm and round-trip counts
//! (see `baton_kernel::strategy`) before it was pinned. Regenerate one with
//! `BLESS=/tmp/transcripts cargo test -p baton-kernel --test kernel transcripts::<name>`,
//! which writes it to `/tmp/transcripts/<name>.txt`; read it before pasting it.

use crate::support;

use support::{assert_transcript, scenarios};

// -------------------------------------------------------------------------------------------
// Bakery

#[test]
fn bakery_uncontended() {
    assert_transcript(
        &scenarios::bakery_uncontended(),
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
        t=1000ms A: vacate "job"/"ticket/a:1:0000000000000001" reading all quorum
        t=1000ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=59s]
        t=1000ms A: => ok
        "#,
    );
}

#[test]
fn bakery_handoff() {
    assert_transcript(
        &scenarios::bakery_handoff(),
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
        t=1001ms A: vacate "job"/"ticket/a:1:0000000000000001" reading all quorum
        t=1001ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=58999ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=59999ms]
        t=1001ms A: => ok
        t=1001ms B: wait until t=1006.949149ms
        t=1006.949149ms B: read "job" all quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=59993.050851ms]
        t=1006.949149ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => granted lease token=2 deadline=t=60399ms
        t=1006.949149ms B: vacate "job"/"ticket/b:1:0000000000000001" reading all quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=59993.050851ms]
        t=1006.949149ms B: => ok
        "#,
    );
}

#[test]
fn bakery_takeover() {
    assert_transcript(
        &scenarios::bakery_takeover(),
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
        t=62000ms A: vacate "job"/"ticket/a:1:0000000000000001" reading all quorum
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "ticket/b:1:0000000000000001" = "ticket=1 created_ms=2000" ttl=59s]
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn bakery_lost_replies() {
    assert_transcript(
        &scenarios::bakery_lost_replies(),
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
        t=2012.033090ms A: vacate "job"/"ticket/a:1:0000000000000001" reading all quorum
        t=2012.033090ms A: <- [store: cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=57994.916059ms], reply lost] failed: timeout "reply lost"
        t=2012.033090ms A: wait until t=2020.732175ms
        t=2020.732175ms A: vacate "job"/"ticket/a:1:0000000000000001" reading all quorum
        t=2020.732175ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=2020.732175ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Unique insert

#[test]
fn unique_uncontended() {
    assert_transcript(
        &scenarios::unique_uncontended(),
        r#"
        t=0ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" and "_LOCK_" is "token=1 owner=a:1:0000000000000001" then delete serial/quorum
        t=1000ms A: <- applied
        t=1000ms A: => ok
        "#,
    );
}

#[test]
fn unique_handoff() {
    assert_transcript(
        &scenarios::unique_handoff(),
        r#"
        t=0ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms B: claim "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s and "_LOCK_" if absent then "token=1 owner=b:1:0000000000000001" serial/quorum
        t=1000ms B: <- not applied, current "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000", counter "token=1 owner=a:1:0000000000000001"
        t=1000ms B: wait until t=1006.949149ms
        t=1001ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" and "_LOCK_" is "token=1 owner=a:1:0000000000000001" then delete serial/quorum
        t=1001ms A: <- applied
        t=1001ms A: => ok
        t=1001ms B: wait until t=1006.949149ms
        t=1006.949149ms B: claim "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s and "_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => granted lease token=2 deadline=t=60405.949149ms
        t=1006.949149ms B: cas "job"/"lock" if "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" and "_LOCK_" is "token=2 owner=b:1:0000000000000001" then delete serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => ok
        "#,
    );
}

#[test]
fn unique_takeover() {
    assert_transcript(
        &scenarios::unique_takeover(),
        r#"
        t=0ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=61000ms B: claim "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s and "_LOCK_" if absent then "token=1 owner=b:1:0000000000000001" serial/quorum
        t=61000ms B: <- not applied, current none, counter "token=1 owner=a:1:0000000000000001"
        t=61000ms B: claim "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s and "_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" serial/quorum
        t=61000ms B: <- applied
        t=61000ms B: => granted lease token=2 deadline=t=120399ms
        t=62000ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" and "_LOCK_" is "token=1 owner=a:1:0000000000000001" then delete serial/quorum
        t=62000ms A: <- not applied, current "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2", counter "token=2 owner=b:1:0000000000000001"
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn unique_lost_replies() {
    assert_transcript(
        &scenarios::unique_lost_replies(),
        r#"
        t=0ms A: claim "job"/"lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if absent then "token=1 owner=a:1:0000000000000001" serial/quorum
        t=0ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=0ms A: wait until t=6.949149ms
        t=6.949149ms A: read "job" all serial
        t=6.949149ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "lock" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59993.050851ms]
        t=6.949149ms A: => granted lease token=1 deadline=t=59399ms
        t=1006.949149ms B: claim "job"/"lock" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=60s and "_LOCK_" if absent then "token=1 owner=b:1:0000000000000001" serial/quorum
        t=1006.949149ms B: <- not applied, current "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000", counter "token=1 owner=a:1:0000000000000001"
        t=1006.949149ms B: => error busy: lock "job" is held by a:1:0000000000000001
        t=2006.949149ms A: cas "job"/"lock" if "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" and "_LOCK_" is "token=1 owner=a:1:0000000000000001" then delete serial/quorum
        t=2006.949149ms A: <- [store: applied, reply lost] failed: timeout "reply lost"
        t=2006.949149ms A: wait until t=2015.648234ms
        t=2015.648234ms A: read "job" all serial
        t=2015.648234ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=2015.648234ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Column prefix

#[test]
fn prefix_uncontended() {
    assert_transcript(
        &scenarios::prefix_uncontended(),
        r#"
        t=0ms A: put "job"/"_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s quorum
        t=0ms A: <- written
        t=0ms A: read "job" prefix "_LOCK_" quorum
        t=0ms A: <- cells ["_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=0ms A: insert-if-absent "job"/"_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none serial/quorum
        t=0ms A: <- applied
        t=0ms A: => granted lease token=1 deadline=t=59399ms
        t=1000ms A: vacate "job"/"_LOCK_a:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=1000ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=59s]
        t=1000ms A: => ok
        "#,
    );
}

#[test]
fn prefix_handoff() {
    assert_transcript(
        &scenarios::prefix_handoff(),
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
        t=1001ms A: vacate "job"/"_LOCK_a:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=1001ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=58999ms]
        t=1001ms A: => ok
        t=1001ms B: wait until t=1006.949149ms
        t=1006.949149ms B: read "job" prefix "_LOCK_" quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=1006.949149ms B: put "job"/"_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s quorum
        t=1006.949149ms B: <- written
        t=1006.949149ms B: read "job" prefix "_LOCK_" quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s]
        t=1006.949149ms B: cas "job"/"_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=b:1:0000000000000001" ttl=none serial/quorum
        t=1006.949149ms B: <- applied
        t=1006.949149ms B: => granted lease token=2 deadline=t=60405.949149ms
        t=1006.949149ms B: vacate "job"/"_LOCK_b:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=1006.949149ms B: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000 att=2" ttl=60s]
        t=1006.949149ms B: => ok
        "#,
    );
}

#[test]
fn prefix_takeover() {
    assert_transcript(
        &scenarios::prefix_takeover(),
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
        t=62000ms A: vacate "job"/"_LOCK_a:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=2000" ttl=59s]
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn prefix_lost_replies() {
    assert_transcript(
        &scenarios::prefix_lost_replies(),
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
        t=2012.033090ms A: vacate "job"/"_LOCK_a:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=2012.033090ms A: <- [store: cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=57994.916059ms], reply lost] failed: timeout "reply lost"
        t=2012.033090ms A: wait until t=2020.732175ms
        t=2020.732175ms A: vacate "job"/"_LOCK_a:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=2020.732175ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none]
        t=2020.732175ms A: => ok
        "#,
    );
}

// -------------------------------------------------------------------------------------------
// Variants that pin documented costs and paths not covered above

#[test]
fn unique_fence_hint() {
    assert_transcript(
        &scenarios::unique_fence_hint(),
        r#"
        t=1000ms A2: claim "job"/"lock" = "owner=a:1:0000000000000002 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=a:1:0000000000000002" serial/quorum
        t=1000ms A2: <- applied
        t=1000ms A2: => granted lease token=2 deadline=t=60399ms
        t=1000ms A2: cas "job"/"lock" if "owner=a:1:0000000000000002 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" and "_LOCK_" is "token=2 owner=a:1:0000000000000002" then delete serial/quorum
        t=1000ms A2: <- applied
        t=1000ms A2: => ok
        t=2000ms A3: claim "job"/"lock" = "owner=a:1:0000000000000003 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s and "_LOCK_" if "token=1 owner=a:1:0000000000000001" then "token=2 owner=a:1:0000000000000003" serial/quorum
        t=2000ms A3: <- not applied, current none, counter "token=2 owner=a:1:0000000000000002"
        t=2000ms A3: claim "job"/"lock" = "owner=a:1:0000000000000003 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000 att=2" ttl=60s and "_LOCK_" if "token=2 owner=a:1:0000000000000002" then "token=3 owner=a:1:0000000000000003" serial/quorum
        t=2000ms A3: <- applied
        t=2000ms A3: => granted lease token=3 deadline=t=61399ms
        "#,
    );
}

#[test]
fn prefix_stale_column_taken_over() {
    assert_transcript(
        &scenarios::prefix_stale_column_taken_over(),
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
        t=62000ms A: vacate "job"/"_LOCK_a:1:0000000000000001" reading prefix "_LOCK_" quorum
        t=62000ms A: <- cells ["_LOCK_" = "token=2 owner=b:1:0000000000000001" ttl=none, "_LOCK_b:1:0000000000000001" = "owner=b:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=120000 created_ms=2000" ttl=119s]
        t=62000ms A: => error lost: lease on lock "job" (token 1) is lost: the lock was granted to b:1:0000000000000001 (token 2) since
        "#,
    );
}

#[test]
fn bakery_waiter_refreshes_its_ticket() {
    assert_transcript(
        &scenarios::bakery_waiter_refreshes_its_ticket(),
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
        t=700ms A: vacate "job"/"ticket/a:1:0000000000000001" reading all quorum
        t=700ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "ticket/a:1:0000000000000001" = "ticket=1 created_ms=1000" ttl=700ms, "ticket/b:1:0000000000000001" = "ticket=2 created_ms=2000" ttl=794.500000ms]
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
