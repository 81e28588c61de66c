//! `ListLocks`: every lock of the table, whatever its strategy, page after page.

use std::time::Duration;

use baton_kernel::{
    Acquire, EntryState, Instant, ListLocks, LockName, LockOptions, MemoryTable, Operation,
    OwnerId, Poll, Result, Strategy,
};

fn run<O: Operation>(table: &mut MemoryTable, op: &mut O, now: Instant) -> Result<O::Output> {
    loop {
        match op.poll(now) {
            Poll::Execute(id, command) => {
                let reply = table.apply(&command, now);
                op.handle(id, reply);
            }
            Poll::WaitUntil(t) => panic!("unexpected wait until {t:?}"),
            Poll::Ready(result) => return result,
        }
    }
}

fn take(table: &mut MemoryTable, name: &str, strategy: Strategy, host: &str, now: Instant) -> u64 {
    let opts = LockOptions {
        strategy,
        ttl: Duration::from_secs(60),
        ..LockOptions::default()
    };
    let owner = OwnerId::new(host, 7, 42).expect("owner");
    let mut op = Acquire::new(LockName::new(name).expect("name"), owner, opts).expect("options");
    run(table, &mut op, now)
        .expect("uncontended acquire")
        .lease
        .token()
}

#[test]
fn lists_every_strategy_and_skips_released_locks() {
    let mut table = MemoryTable::new();
    let now = Instant::from_nanos(1_000_000);
    take(&mut table, "a-bakery", Strategy::Bakery, "h1", now);
    take(&mut table, "b-unique", Strategy::UniqueInsert, "h2", now);
    take(&mut table, "c-prefix", Strategy::ColumnPrefix, "h3", now);
    let mut list = ListLocks::new(&LockOptions::default());
    let found = run(&mut table, &mut list, now).expect("listing");
    let summary: Vec<(String, Strategy, EntryState, Option<u64>, String)> = found
        .iter()
        .map(|i| {
            (
                i.name.clone(),
                i.strategy,
                i.state,
                i.token,
                i.owner.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "a-bakery".into(),
                Strategy::Bakery,
                EntryState::Held,
                Some(1),
                "h1:7:000000000000002a".into()
            ),
            (
                "b-unique".into(),
                Strategy::UniqueInsert,
                EntryState::Held,
                Some(1),
                "h2:7:000000000000002a".into()
            ),
            (
                "c-prefix".into(),
                Strategy::ColumnPrefix,
                EntryState::Held,
                Some(1),
                "h3:7:000000000000002a".into()
            ),
        ]
    );
    // After the TTL the entries are gone; the fencing counters stay but are not locks.
    let later = now.saturating_add(Duration::from_secs(61));
    let mut list = ListLocks::new(&LockOptions::default());
    assert_eq!(run(&mut table, &mut list, later).expect("listing"), vec![]);
}

#[test]
fn pages_through_large_tables() {
    let mut table = MemoryTable::new();
    let now = Instant::from_nanos(1);
    for i in 0..600 {
        take(
            &mut table,
            &format!("lock-{i:04}"),
            Strategy::UniqueInsert,
            "h",
            now,
        );
    }
    let mut list = ListLocks::new(&LockOptions::default());
    let found = run(&mut table, &mut list, now).expect("listing");
    assert_eq!(found.len(), 600);
    assert!(
        found.windows(2).all(|w| w[0].name < w[1].name),
        "sorted, no duplicates"
    );
}
