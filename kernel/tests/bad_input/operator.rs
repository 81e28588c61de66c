//! The operator commands: inspect, purge, forced release, stale-lock detection.

use super::prelude::*;

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
            cells
                .iter()
                .all(|c| c.value == "token=3 owner=forced-release forced=2"),
            "{strategy}: only the counter is left, moved on by the forced release: {cells:?}"
        );
        // The removed holder hears of it at its next renewal.
        let e = err(drive(&mut h, "A", Renew::new(&a.lease)), "force-released");
        assert_eq!(e.kind(), ErrorKind::Lost, "{strategy}: {e}");
        // The next grant's token is larger.
        let b = hold(&mut h, strategy, "b");
        assert_eq!(b.lease.token(), 4, "{strategy}");
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
    // B notices its ticket is gone and starts over; it then gets the lock (token 4: the forced
    // release took 2 and 3).
    let g = h.finish(&mut b).expect("B acquires");
    assert_eq!(g.lease.token(), 4);
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
        t=61000ms P: delete "job"/"_LOCK_a:1:0000000000000001" at version 1 quorum
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

/// A fencing counter no build of baton wrote (edited by hand, or left by a table layout this
/// build does not know, as a later one keeping the counter elsewhere would mark it): every
/// strategy fails at once with a store error naming the value, grants nothing, and leaves
/// nothing of its own. Unique insert used to take the value for "no counter yet", claim from
/// that, and report the lock busy until its wait ran out.
#[test]
fn an_unreadable_counter_fails_every_strategy_at_once() {
    for strategy in ALL {
        let mut h = Harness::new();
        h.execute(
            "X",
            &Command::Put {
                row: NAME.into(),
                column: "_LOCK_".into(),
                value: "moved=fence".into(),
                ttl: None,
                consistency: Consistency::Quorum,
            },
        );
        let started = h.now();
        let mut a = Actor::new(
            "A",
            acquire(strategy, "a", |o| {
                o.wait = Wait::Timeout(Duration::from_secs(10));
            }),
        );
        let e = err(h.finish(&mut a), "an unreadable counter");
        assert_eq!(e.kind(), ErrorKind::StoreError, "{strategy}: {e}");
        assert!(
            e.message()
                .contains(r#"malformed fencing counter "moved=fence""#),
            "{strategy}: the message names the value: {e}"
        );
        assert_eq!(h.now(), started, "{strategy}: failed without waiting");
        assert_eq!(
            h.table.stored_cells(),
            1,
            "{strategy}: only the counter is left"
        );
    }
}

/// An operator's forced release with a column prefix that `_LOCK_` starts with (options the
/// admin operations take without validation) on a name unique insert holds: neither the shared
/// counter nor unique insert's record counts as one of its entries, so nothing is removed.
#[test]
fn a_forced_release_never_takes_a_reserved_cell_for_an_entry() {
    let mut h = Harness::new();
    let a = hold(&mut h, Strategy::UniqueInsert, "a");
    let before = h.table.read(NAME, &ColumnFilter::All, h.now());
    for prefix in ["_LOCK", "_", "lo", "l"] {
        let mut o = opts(Strategy::ColumnPrefix, 0);
        o.prefix.prefix = prefix.into();
        let removed = drive(&mut h, "F", ForceRelease::new(name(NAME), &o)).expect("force");
        assert!(removed.is_empty(), "{prefix:?}: {removed:?}");
        assert_eq!(
            h.table.read(NAME, &ColumnFilter::All, h.now()),
            before,
            "{prefix:?}"
        );
    }
    drive(&mut h, "A", Release::new(&a.lease)).expect("still ours");
}
