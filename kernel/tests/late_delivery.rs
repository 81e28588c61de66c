//! Reproductions of the double grants a review found when a store applies a command after the
//! client gave up on it, and of the release and fencing findings that came with them. Each test
//! drives the operations by hand against the reference table and runs its scenario twice: with
//! the kernel as it is (safe), and with the behaviour before the fix (a deliberately broken
//! variant, or a store that orders writes by arrival), where the scenario must go wrong, so the
//! test is known to be able to fail.

use crate::support;

use std::time::Duration;

use baton_kernel::{
    Acquire, Command, Error, ErrorKind, ForceRelease, Grant, LockOptions, Purge, Release,
    RetryPolicy, Sabotage, Strategy, Wait,
};
use support::*;

fn options(strategy: Strategy, who: &str, acquisition: u64) -> LockOptions {
    LockOptions {
        wait: Wait::TryOnce,
        acquisition,
        ..opts(strategy, if who == "a" { 1000 } else { 2000 })
    }
}

fn acquire(strategy: Strategy, who: &str, acquisition: u64) -> Acquire {
    Acquire::new(name(NAME), owner(who), options(strategy, who, acquisition)).expect("valid")
}

fn held(r: Result<Grant, Error>) -> Grant {
    r.unwrap_or_else(|e| panic!("expected a grant, got {e}"))
}

/// Finding 1. A release's delete is held up (a pooler's queue); the client gives up, resends,
/// and later acquires again with the same owner id. The old delete then lands. Ordered by
/// arrival it removes the new, live cell and lets B in; ordered by stamps it changes nothing.
fn late_delete_of_the_same_owner(strategy: Strategy, arrival_stamps: bool) -> Result<Grant, Error> {
    let mut h = Harness::new();
    h.arrival_stamps = arrival_stamps;
    let first = held(drive(&mut h, "A", acquire(strategy, "a", 1)));
    h.once("A", delete, Fault::Late);
    drive(&mut h, "A", Release::new(&first.lease)).expect("the resent delete releases");
    let _second = held(drive(&mut h, "A", acquire(strategy, "a", 2)));
    assert_eq!(h.apply_late(), 1);
    drive(&mut h, "B", acquire(strategy, "b", 3))
}

#[test]
fn a_late_delete_never_removes_a_newer_cell_of_its_owner() {
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        let b = late_delete_of_the_same_owner(strategy, false);
        assert_eq!(
            b.map(|_| ()).map_err(|e| e.kind()),
            Err(ErrorKind::Busy),
            "{strategy}"
        );
        let b = late_delete_of_the_same_owner(strategy, true);
        assert!(
            b.is_ok(),
            "{strategy}: arrival order must show the double grant"
        );
    }
}

/// Finding 2. A's first insert is held up while H holds; A hears a timeout, reads back, finds
/// H and backs off. H releases; A's old insert lands and starts its TTL; A's second attempt
/// comes later. Taking the old record for this attempt's win starts A's deadline too late, so
/// C gets the lock at the old record's expiry while A still believes.
fn late_insert_of_an_earlier_attempt(sabotage: Sabotage) -> (bool, Result<Grant, Error>) {
    let mut h = Harness::new();
    let ttl = Duration::from_secs(1);
    let holder = held(drive(&mut h, "C", {
        let mut o = options(Strategy::UniqueInsert, "c", 9);
        o.ttl = ttl;
        Acquire::new(name(NAME), owner("c"), o).expect("valid")
    }));
    let mut o = options(Strategy::UniqueInsert, "a", 1);
    o.ttl = ttl;
    o.wait = Wait::Timeout(Duration::from_secs(10));
    o.retry = RetryPolicy {
        initial: Duration::from_millis(500),
        max: Duration::from_millis(500),
        ..RetryPolicy::default()
    };
    o.sabotage = sabotage;
    // A knows the counter as the holder's grant left it: its claim can then land after the
    // holder's release, which moves no counter.
    let hint = Some(holder.lease.fence_hint());
    let mut a = Actor::new(
        "A",
        Acquire::new(name(NAME), owner("a"), o)
            .expect("valid")
            .with_fence_hint(hint),
    );
    h.once("A", lock_cell, Fault::Late);
    // The insert times out; A reads the cell back, finds the holder, and backs off.
    let Step::Wait(read_back) = h.run(&mut a) else {
        panic!("A waits to read back:\n{}", h.transcript())
    };
    h.advance_to(read_back);
    let Step::Wait(retry_at) = h.run(&mut a) else {
        panic!("A backs off behind the holder:\n{}", h.transcript())
    };
    drive(&mut h, "C", Release::new(&holder.lease)).expect("release");
    assert_eq!(h.apply_late(), 1, "A's first insert lands now");
    let landed = h.now();
    h.advance_to(retry_at);
    let a = held(h.finish(&mut a));
    // Just after the old record's TTL ends at the store:
    h.advance_to(landed.saturating_add(ttl + Duration::from_millis(1)));
    let believes = a.lease.is_valid_at(h.now());
    let mut o = options(Strategy::UniqueInsert, "b", 7);
    o.ttl = ttl;
    let b = drive(
        &mut h,
        "B",
        Acquire::new(name(NAME), owner("b"), o).expect("valid"),
    );
    (believes, b)
}

#[test]
fn an_earlier_attempts_late_insert_is_not_taken_for_a_win() {
    let (believes, b) = late_insert_of_an_earlier_attempt(Sabotage::None);
    assert!(believes, "A's lease runs from its own attempt");
    assert_eq!(b.map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::Busy));
    let (believes, b) = late_insert_of_an_earlier_attempt(Sabotage::SameValueEveryAttempt);
    assert!(
        believes && b.is_ok(),
        "one value for every attempt must show the double grant"
    );
}

/// Finding 3. With a cell TTL longer than the lease, a purge reads A's stale column; before the
/// purge deletes it, A takes the lock again with the same owner id (the same column). A blind
/// delete then removes A's live column and lets B in; a delete of the version read does not.
fn purge_racing_a_new_acquisition(sabotage: Sabotage) -> Result<Grant, Error> {
    let mut h = Harness::new();
    let ttl = Duration::from_secs(1);
    let prefix_opts = |who: &str, acquisition: u64| {
        let mut o = options(Strategy::ColumnPrefix, who, acquisition);
        o.ttl = ttl;
        o.prefix.cell_ttl = Some(ttl * 3);
        o
    };
    let _stale = held(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), prefix_opts("a", 1)).expect("valid"),
    ));
    h.advance(Duration::from_millis(1500));
    let mut purge_opts = prefix_opts("p", 0);
    purge_opts.sabotage = sabotage;
    let mut p = Actor::new("P", Purge::new(Some(name(NAME)), &purge_opts));
    // The purge of expired cells, then the read that finds A's column stale (each sent and
    // answered); the delete is not sent yet.
    assert_eq!(h.step(&mut p), Step::Sent);
    assert_eq!(h.step(&mut p), Step::Sent);
    let _again = held(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), prefix_opts("a", 2)).expect("valid"),
    ));
    let removed = h.finish(&mut p).expect("purge");
    assert_eq!(removed.len(), 1, "{}", h.transcript());
    drive(
        &mut h,
        "B",
        Acquire::new(name(NAME), owner("b"), prefix_opts("b", 3)).expect("valid"),
    )
}

#[test]
fn purge_deletes_only_the_stale_version_it_read() {
    let b = purge_racing_a_new_acquisition(Sabotage::None);
    assert_eq!(b.map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::Busy));
    let b = purge_racing_a_new_acquisition(Sabotage::BlindStaleDelete);
    assert!(b.is_ok(), "a blind delete must show the double grant");
}

/// Finding 4a. A holds; an operator breaks the lock; B takes it; A's release reply is lost.
/// The record is gone either way, so the removal's answer cannot tell; the read before it can:
/// the counter moved since A's grant, so the lease was lost.
fn release_after_force_with_lost_reply(sabotage: Sabotage) -> Result<(), Error> {
    let mut h = Harness::new();
    let mut o = options(Strategy::UniqueInsert, "a", 1);
    o.sabotage = sabotage;
    let a = held(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), o).expect("valid"),
    ));
    let broken = drive(
        &mut h,
        "F",
        ForceRelease::new(name(NAME), &opts(Strategy::UniqueInsert, 0)),
    )
    .expect("forced release");
    assert_eq!(broken.len(), 1);
    let b = held(drive(&mut h, "B", acquire(Strategy::UniqueInsert, "b", 2)));
    assert!(
        b.lease.token() > a.lease.token() + 1,
        "the forced release moved the counter"
    );
    h.once("A", lock_cell, Fault::LoseReply);
    drive(&mut h, "A", Release::new(&a.lease))
}

#[test]
fn a_release_after_a_forced_release_is_never_ok() {
    let r = release_after_force_with_lost_reply(Sabotage::None);
    assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::Lost));
    let r = release_after_force_with_lost_reply(Sabotage::ReleaseSkipsCheck);
    assert_eq!(r, Ok(()), "trusting the removal must show the false Ok");
    // With its reply, the same release says Lost on every strategy (bakery and column prefix
    // used to say Ok).
    for strategy in Strategy::ALL {
        let mut h = Harness::new();
        let a = held(drive(&mut h, "A", acquire(strategy, "a", 1)));
        drive(
            &mut h,
            "F",
            ForceRelease::new(name(NAME), &opts(strategy, 0)),
        )
        .expect("force");
        let e = drive(&mut h, "A", Release::new(&a.lease)).expect_err("broken");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        assert!(e.message().contains("force"), "{strategy}: {e}");
    }
}

/// Finding 4b. The release's compare-and-set is applied but answered `Unavailable` (the
/// commit round failed after a quorum accepted it); the resend finds the record gone. That is
/// our own release: `Ok`, since the read before it found the lease intact (it used to be `Lost`).
#[test]
fn an_applied_release_answered_unavailable_is_ok() {
    let mut h = Harness::new();
    let a = held(drive(&mut h, "A", acquire(Strategy::UniqueInsert, "a", 1)));
    h.once("A", lock_cell, Fault::UnavailableApplied);
    let r = drive(&mut h, "A", Release::new(&a.lease));
    assert_eq!(r, Ok(()), "{}", h.transcript());
    // The resend found the record gone and the counter still at A's grant.
    assert!(
        h.transcript()
            .contains("not applied, current none, counter"),
        "{}",
        h.transcript()
    );
}

/// Finding 5. Another owner moves the fencing counter between A's winning read and A's own
/// counter update: a second grant, or a forced release. A must not take the next token quietly:
/// it abandons its cell and starts again.
#[test]
fn a_counter_moved_during_a_grant_restarts_the_acquisition() {
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        let mut h = Harness::new();
        let mut o = options(strategy, "a", 1);
        o.wait = Wait::Timeout(Duration::from_secs(10));
        let mut a = Actor::new("A", Acquire::new(name(NAME), owner("a"), o).expect("valid"));
        // Every step up to the counter update, which is held on its way.
        loop {
            assert_eq!(h.send_unapplied(&mut a), Step::Sent, "{}", h.transcript());
            if a.peek().is_some_and(fence) {
                break;
            }
            h.deliver(&mut a);
        }
        let column = "_LOCK_";
        h.execute(
            "X",
            &Command::InsertIfAbsent {
                row: NAME.into(),
                column: column.into(),
                value: "token=1 owner=x:1:0000000000000009".into(),
                ttl: None,
                serial: Default::default(),
                consistency: Default::default(),
            },
        );
        assert!(h.deliver(&mut a));
        assert_eq!(h.send_unapplied(&mut a), Step::Sent);
        assert!(
            matches!(a.peek(), Some(Command::Delete { column: c, .. }) if c.ends_with(&owner("a").key())),
            "{strategy}: A abandons its cell after the counter moved:\n{}",
            h.transcript()
        );
        let g = held(h.finish(&mut a));
        assert_eq!(
            g.lease.token(),
            2,
            "{strategy}: a fresh attempt takes the next token"
        );
    }
}

/// Finding 6 (data columns). A column-prefix holder that read the row writes its data with
/// `release_with` from a host whose clock is behind the previous holder's: the batch carries
/// the newest stamp the holder read, and the store stamps it above that, so the data is not
/// silently dropped as older than what the previous holder wrote.
#[test]
fn data_written_on_release_supersedes_the_previous_holders_whatever_the_clocks() {
    use baton_kernel::{Instant, MemoryTable, Operation, Poll, Reply, Write};
    let mut h = Harness::new();
    let mut o = options(Strategy::ColumnPrefix, "a", 1);
    o.prefix.read_row = true;
    // The previous holder's data, written from a clock far ahead (stamp 10^12).
    h.table.apply_stamped(
        &Command::Put {
            row: NAME.into(),
            column: "balance".into(),
            value: "100".into(),
            ttl: None,
            consistency: Default::default(),
        },
        h.now(),
        1_000_000_000_000,
    );
    let g = held(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), o).expect("valid"),
    ));
    assert_eq!(g.row.len(), 1, "the data cell was read with the lock");
    let writes = vec![Write::Put {
        column: "balance".into(),
        value: "90".into(),
        ttl: None,
    }];
    let mut release = Release::with_mutation(&g.lease, writes).expect("a data column");
    // The release reads, then sends its batch.
    let Poll::Execute(id, read) = release.poll(Instant::ZERO) else {
        panic!("the release reads first")
    };
    let reply = h.table.apply(&read, h.now());
    release.handle(id, reply);
    let Poll::Execute(_, batch) = release.poll(Instant::ZERO) else {
        panic!("then writes the batch")
    };
    let Command::Batch { after, .. } = &batch else {
        panic!("a batch: {batch:?}")
    };
    assert_eq!(
        *after, 1_000_000_000_000,
        "the newest stamp the holder read"
    );
    // Executed by a host whose clock is behind (stamp 5): still supersedes.
    let mut table: MemoryTable = h.table.clone();
    table.apply_stamped(&batch, h.now(), 5);
    let cells = table.read(
        NAME,
        &baton_kernel::ColumnFilter::Exact("balance".into()),
        h.now(),
    );
    assert_eq!(cells[0].value, "90", "{cells:?}");
    // Without the floor, the write would have been dropped as older.
    let mut unfloored = h.table.clone();
    if let Command::Batch {
        row,
        writes,
        consistency,
        ..
    } = batch
    {
        let plain = Command::Batch {
            row,
            writes,
            consistency,
            after: 0,
        };
        assert_eq!(unfloored.apply_stamped(&plain, h.now(), 5), Reply::Written);
    }
    let cells = unfloored.read(
        NAME,
        &baton_kernel::ColumnFilter::Exact("balance".into()),
        h.now(),
    );
    assert_eq!(cells[0].value, "100", "the lost update the floor prevents");
}

/// Finding 5 (one counter per name). A name granted by one strategy and then by another (a
/// misuse: they do not exclude each other) still gets increasing tokens, because every strategy
/// counts in the same cell (`_LOCK_`, with the default column prefix).
#[test]
fn every_strategy_counts_in_one_counter_per_name() {
    let mut h = Harness::new();
    let mut last = 0;
    for (i, strategy) in [
        Strategy::Bakery,
        Strategy::UniqueInsert,
        Strategy::ColumnPrefix,
        Strategy::UniqueInsert,
        Strategy::Bakery,
    ]
    .into_iter()
    .enumerate()
    {
        let g = held(drive(&mut h, "A", acquire(strategy, "a", i as u64 + 1)));
        assert!(
            g.lease.token() > last,
            "{strategy}: {} after {last}",
            g.lease.token()
        );
        last = g.lease.token();
        drive(&mut h, "A", Release::new(&g.lease)).expect("release");
    }
    assert_eq!(last, 5);
}

/// Found by the simulator (unique insert, seed 377902 and five others in a million), when the
/// record and the counter were written by separate commands. An operator removes A's record; B
/// takes the lock and releases it; then a copy of A's own insert, held up on its way, put A's
/// record back, and only the counter showed that B had held the lock. A claim carries the
/// counter value it expects, so the late copy now finds the counter moved and changes nothing;
/// the release still says `Lost` (the counter shows the forced release), under the broken
/// variant too, which has no removal to trust here.
fn release_after_own_late_claim(sabotage: Sabotage) -> (Vec<String>, Result<(), Error>) {
    let mut h = Harness::new();
    let mut o = options(Strategy::UniqueInsert, "a", 1);
    o.sabotage = sabotage;
    h.once("A", lock_cell, Fault::Late);
    let a = held(drive(
        &mut h,
        "A",
        Acquire::new(name(NAME), owner("a"), o).expect("valid"),
    ));
    drive(
        &mut h,
        "F",
        ForceRelease::new(name(NAME), &opts(Strategy::UniqueInsert, 0)),
    )
    .expect("forced release");
    let b = held(drive(&mut h, "B", acquire(Strategy::UniqueInsert, "b", 2)));
    drive(&mut h, "B", Release::new(&b.lease)).expect("B releases");
    assert_eq!(h.apply_late(), 1, "A's first claim arrives now");
    let cells: Vec<String> = h
        .table
        .read(NAME, &baton_kernel::ColumnFilter::All, h.now())
        .into_iter()
        .map(|c| c.value)
        .collect();
    assert!(
        !cells.iter().any(|v| v == a.lease.value()),
        "a late claim must not put A's record back:\n{}",
        h.transcript()
    );
    (cells, drive(&mut h, "A", Release::new(&a.lease)))
}

#[test]
fn a_late_claim_cannot_heal_a_force_released_lease() {
    for sabotage in [Sabotage::None, Sabotage::ReleaseSkipsCheck] {
        let (_, r) = release_after_own_late_claim(sabotage);
        assert_eq!(
            r.map_err(|e| e.kind()),
            Err(ErrorKind::Lost),
            "{sabotage:?}"
        );
    }
}

/// Found by the simulator (bakery, seed 551602 and nine others in a million). A forced release
/// reads waiter A's `entering` cell and counts itself in the fencing counter; A reads the queue
/// (and so sees that count); the forced release deletes A's cell and dies before its closing
/// count. B enters, does not see A, takes ticket 1 and is granted. A's ticket write then puts
/// its cell back with the same ticket, and A wins the tie. A must count forced releases from
/// before its `entering` write: it then sees one it cannot place, and starts again.
fn waiter_behind_a_forced_release_that_died(sabotage: Sabotage) -> Result<Grant, Error> {
    let mut h = Harness::new();
    let mut o = options(Strategy::Bakery, "a", 1);
    o.sabotage = sabotage;
    o.wait = Wait::Timeout(Duration::from_secs(10));
    let mut a = Actor::new("A", Acquire::new(name(NAME), owner("a"), o).expect("valid"));
    assert_eq!(h.step(&mut a), Step::Sent, "A writes entering");
    let mut f = Actor::new(
        "F",
        ForceRelease::new(name(NAME), &opts(Strategy::Bakery, 0)),
    );
    // F reads the row and counts itself; its delete of A's cell is held on its way.
    loop {
        assert_eq!(h.send_unapplied(&mut f), Step::Sent, "{}", h.transcript());
        if matches!(f.peek(), Some(Command::DeleteVersion { .. })) {
            break;
        }
        h.deliver(&mut f);
    }
    assert_eq!(h.step(&mut a), Step::Sent, "A reads the queue");
    assert_eq!(h.send_unapplied(&mut a), Step::Sent);
    assert!(h.apply(&mut f), "F deletes A's cell, then dies");
    let b = drive(&mut h, "B", acquire(Strategy::Bakery, "b", 2));
    let b = b.unwrap_or_else(|e| panic!("B: {e}\n{}", h.transcript()));
    let a = h.finish(&mut a);
    if let Ok(a) = &a {
        assert!(a.lease.token() > b.lease.token(), "{}", h.transcript());
    }
    a
}

#[test]
fn a_waiter_counts_forced_releases_from_before_its_entering_write() {
    let a = waiter_behind_a_forced_release_that_died(Sabotage::None);
    assert_eq!(
        a.map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::TimedOut),
        "B holds; A waits behind it"
    );
    let a = waiter_behind_a_forced_release_that_died(Sabotage::ForcedCountAfterEntering);
    assert!(
        a.is_ok(),
        "counting from the queue read must show the double grant"
    );
}

/// The million-seed run with objects found this one in the locks (column prefix seeds 802451,
/// profile "all+replicas", no objects in it, and 847630, "all"). A writes its entry; a forced
/// release reads the row, A's entry in it, and counts itself in the counter; A reads, wins, and
/// takes its token from the forced release's counter value; the forced release's delete of A's
/// entry lands after A's grant, and B is granted (the operator broke A's lock: allowed). A's
/// release in its own transaction rolls back, and the release here finds A's entry gone with
/// the counter moved only by a later grant and no forced release counted since A's grant: it
/// took that for its rolled-back release's removal and said `Ok`, though B held the lock during
/// A's grant (the forced release's closing count, which would have shown it, was held up). A grant whose token followed a forced release's count now never takes its entry
/// found gone for its own removal: `Lost`. (Before the fix this test fails with `Ok`.)
#[test]
fn a_grant_right_after_a_forced_release_is_not_released_ok_once_broken() {
    // (Bakery writes its ticket over its `entering` cell: the forced release's delete of the
    // version it read leaves the ticket, and the waiter counts from before it entered.)
    for strategy in [Strategy::ColumnPrefix] {
        let mut h = Harness::new();
        let mut a = Actor::new("A", acquire(strategy, "a", 1));
        assert_eq!(h.step(&mut a), Step::Sent, "A writes its entry");
        let mut f = Actor::new("F", ForceRelease::new(name(NAME), &opts(strategy, 0)));
        // F reads the row and counts itself; its delete of A's entry is held on its way.
        loop {
            assert_eq!(h.send_unapplied(&mut f), Step::Sent, "{}", h.transcript());
            if matches!(f.peek(), Some(Command::DeleteVersion { .. })) {
                break;
            }
            h.deliver(&mut f);
        }
        let a_grant = h.finish(&mut a);
        let a_grant = a_grant.unwrap_or_else(|e| panic!("A: {e}\n{}", h.transcript()));
        assert!(
            h.apply(&mut f),
            "F's delete of A's entry lands after A's grant"
        );
        h.deliver(&mut f);
        // F's closing count is held up on its way (a long delay) until A has released.
        assert_eq!(h.send_unapplied(&mut f), Step::Sent);
        assert!(matches!(f.peek(), Some(Command::CompareAndSet { .. })));
        let b = drive(&mut h, "B", acquire(strategy, "b", 2));
        let b = b.unwrap_or_else(|e| panic!("B: {e}\n{}", h.transcript()));
        assert!(b.lease.token() > a_grant.lease.token());
        // A's release in its transaction rolled back; the guard's drop releases here.
        let released = drive(&mut h, "A", Release::after_elsewhere(&a_grant.lease));
        assert_eq!(
            released.map_err(|e| e.kind()),
            Err(ErrorKind::Lost),
            "{strategy}: B held the lock during A's grant\n{}",
            h.transcript()
        );
        h.finish(&mut f).expect("the forced release");
    }
}
