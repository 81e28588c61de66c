//! Misused leases: renewing late, releasing twice, releasing a lock someone else holds or an operator broke.

use super::prelude::*;

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
        assert_eq!(renew.sent, 2, "{strategy}: documented renewal cost");
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
    // Every strategy says the lease had already ended: unique insert from its compare-and-set,
    // bakery and column prefix from the read before their delete.
    let e = err(second, "the lease already ended");
    assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
    assert!(
        e.message().contains("already gone") || e.message().contains("was gone"),
        "{strategy}: {e}"
    );
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
    let e = err(released, "A's lock was broken");
    assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
    let e = err(
        drive(&mut h, "A", Renew::new(&a.lease)),
        "a renewal notices too",
    );
    assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
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
/// Unique insert renews with a compare-and-set, which took effect before the break, then a read
/// of the counter, which comes after it: the racing renewal is already `Lost`. Bakery and column prefix renew with a read
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
    assert_eq!(
        next.map_err(|e| e.kind()),
        Err(ErrorKind::Lost),
        "{strategy}"
    );
    // A renewal that finds the lock broken reports it without touching the store (A may still
    // be acting until it hears); A's release, which follows a loss, removes whatever A left.
    let released = drive(&mut h, "A", Release::new(&lease));
    assert_eq!(
        released.map_err(|e| e.kind()),
        Err(ErrorKind::Lost),
        "{strategy}"
    );
    assert_eq!(
        owners(&mut h, strategy),
        vec![key("b")],
        "{strategy}: {live:?}"
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
    for bad in ["_LOCK_", "_LOCK_x", "", "lock"] {
        let e = Release::with_mutation(&p.lease, vec![put(bad)]).expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{bad:?}: {e}");
    }
    let e = Release::with_mutation(&p.lease, vec![put("lock")]).expect_err("lock");
    assert!(
        e.message().contains("reserved") && e.message().contains("unique insert's lock cell"),
        "{e}"
    );
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
        t=0ms A: read "job" prefix "_LOCK_" quorum
        t=0ms A: <- cells ["_LOCK_" = "token=1 owner=a:1:0000000000000001" ttl=none, "_LOCK_a:1:0000000000000001" = "owner=a:1:0000000000000001 ttl_ms=60000 cell_ttl_ms=60000 created_ms=1000" ttl=60s]
        t=0ms A: batch "job" [put "data" = "v" ttl=none; delete "_LOCK_a:1:0000000000000001"] quorum
        t=0ms A: <- written
        t=0ms A: => ok
        "#,
    );
}

/// With a custom column prefix, `_LOCK_` is not the lock's own counter, but it is every other
/// strategy's on the same name: a release's data column may not take it (a put would replace
/// the counter, a delete would take tokens back to 1), nor may an entry (lock id) or a prefix
/// name a reserved cell.
#[test]
fn reserved_cells_are_refused_with_a_custom_prefix() {
    let custom = |o: &mut LockOptions, prefix: &str, lock_id: Option<&str>| {
        o.prefix.prefix = prefix.into();
        o.prefix.lock_id = lock_id.map(String::from);
    };
    let mut h = Harness::new();
    let a = drive(
        &mut h,
        "A",
        acquire(Strategy::ColumnPrefix, "a", |o| custom(o, "t/", None)),
    )
    .expect("granted");
    for bad in ["_LOCK_", "lock"] {
        let delete = Write::Delete { column: bad.into() };
        let e = Release::with_mutation(&a.lease, vec![delete]).expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{bad:?}: {e}");
        assert!(e.message().contains("reserved"), "{e}");
    }
    drive(&mut h, "A", Release::new(&a.lease)).expect("release");
    let bad = [
        ("_LOCK", Some("_")),
        ("_", Some("LOCK_")),
        ("lo", Some("ck")),
        ("lock", None),
        // A proper prefix of a reserved cell would take it for an entry, whatever the id.
        ("_LOCK", Some("__")),
        ("_", None),
        ("l", None),
        ("loc", Some("kx")),
    ];
    for (prefix, id) in bad {
        let o = options(Strategy::ColumnPrefix, "a", |o| custom(o, prefix, id));
        let e = o.validate().expect_err(prefix);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{prefix:?} {id:?}: {e}");
        assert!(e.message().contains("reserved"), "{prefix:?} {id:?}: {e}");
    }
    // Near misses, and the default prefix, are fine.
    for (prefix, id) in [
        ("lock/", None),
        ("_LOCKS", Some("_")),
        ("_LOCK_", Some("x")),
        ("Lock", None),
        ("_lock", None),
    ] {
        options(Strategy::ColumnPrefix, "a", |o| custom(o, prefix, id))
            .validate()
            .expect(prefix);
    }
}
