//! `ListLocks`: every lock of the table, whatever its strategy, page after page; `ListPage`:
//! the same, one page at a time.

use std::time::Duration;

use baton_kernel::{
    Acquire, Command, EntryState, ErrorKind, Failure, Inspect, Instant, ListLocks, ListPage,
    LockName, LockOptions, MemoryTable, Operation, OwnerId, Poll, Reply, Result, Strategy,
    LIST_PAGE_ROWS,
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

/// A table of `count` unique-insert locks, `lock-0000` on.
fn numbered_locks(count: usize, now: Instant) -> MemoryTable {
    let mut table = MemoryTable::new();
    for i in 0..count {
        let name = format!("lock-{i:04}");
        take(&mut table, &name, Strategy::UniqueInsert, "h", now);
    }
    table
}

/// A table holding `a-bakery`, `b-unique` and `c-prefix`, each locked with the strategy it
/// names by hosts `h1`, `h2` and `h3`.
fn one_lock_of_each_strategy(now: Instant) -> MemoryTable {
    let mut table = MemoryTable::new();
    take(&mut table, "a-bakery", Strategy::Bakery, "h1", now);
    take(&mut table, "b-unique", Strategy::UniqueInsert, "h2", now);
    take(&mut table, "c-prefix", Strategy::ColumnPrefix, "h3", now);
    table
}

#[test]
fn lists_every_strategy_and_skips_released_locks() {
    let now = Instant::from_nanos(1_000_000);
    let mut table = one_lock_of_each_strategy(now);
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
    let now = Instant::from_nanos(1);
    let mut table = numbered_locks(600, now);
    let mut list = ListLocks::new(&LockOptions::default());
    let found = run(&mut table, &mut list, now).expect("listing");
    assert_eq!(found.len(), 600);
    assert!(
        found.windows(2).all(|w| w[0].name < w[1].name),
        "sorted, no duplicates"
    );
}

#[test]
fn pages_one_at_a_time_as_the_whole_listing() {
    let now = Instant::from_nanos(1);
    // Two full pages and a short one.
    let rows = 2 * LIST_PAGE_ROWS as usize + 3;
    let mut table = numbered_locks(rows, now);
    let opts = LockOptions::default();
    let whole = run(&mut table, &mut ListLocks::new(&opts), now).expect("listing");
    let mut pages = Vec::new();
    let mut page = ListPage::first(&opts);
    loop {
        let got = run(&mut table, &mut page, now).expect("page");
        pages.push(got.clone());
        match got.next {
            Some(after) => page = ListPage::after(&opts, after),
            None => break,
        }
    }
    // A short page is not the end (a scan sent again asks for fewer rows): an empty one is.
    let sizes: Vec<usize> = pages.iter().map(|p| p.rows).collect();
    assert_eq!(
        sizes,
        vec![LIST_PAGE_ROWS as usize, LIST_PAGE_ROWS as usize, 3, 0]
    );
    let paged: Vec<_> = pages.into_iter().flat_map(|p| p.entries).collect();
    assert_eq!(paged, whole);
    assert_eq!(paged.len(), rows);

    // A table of exactly one page: the page is full, so a second (empty) one ends it.
    let mut table = MemoryTable::new();
    for i in 0..LIST_PAGE_ROWS {
        take(&mut table, &format!("n-{i:04}"), Strategy::Bakery, "h", now);
    }
    let first = run(&mut table, &mut ListPage::first(&opts), now).expect("page");
    assert_eq!(first.entries.len(), LIST_PAGE_ROWS as usize);
    let after = first.next.expect("a full page has a next");
    let second = run(&mut table, &mut ListPage::after(&opts, after), now).expect("page");
    assert_eq!(
        (second.rows, second.entries.len(), second.next),
        (0, 0, None)
    );
}

#[test]
fn inspecting_any_strategy_reads_one_row_as_the_listing_does() {
    let now = Instant::from_nanos(1_000_000);
    let mut table = one_lock_of_each_strategy(now);
    let opts = LockOptions::default();
    let listed = run(&mut table, &mut ListLocks::new(&opts), now).expect("listing");
    for name in ["a-bakery", "b-unique", "c-prefix", "nobody"] {
        let mut inspect = Inspect::any_strategy(LockName::new(name).expect("name"), &opts);
        let found = run(&mut table, &mut inspect, now).expect("inspection");
        let expected: Vec<_> = listed.iter().filter(|e| e.name == name).cloned().collect();
        assert_eq!(found, expected, "{name}");
        assert_eq!(found.len(), usize::from(name != "nobody"), "{name}");
    }
}

/// Runs `op` on `table`, answering a timeout to every scan that asks for more than `max_rows`
/// rows (a store whose big pages take longer than its own timeout), sleeping through the
/// retries' backoff.
fn run_small_pages_only<O: Operation>(
    table: &mut MemoryTable,
    op: &mut O,
    max_rows: u32,
    mut now: Instant,
) -> (Result<O::Output>, Vec<u32>) {
    let mut asked = Vec::new();
    loop {
        match op.poll(now) {
            Poll::Execute(id, command) => {
                let reply = match &command {
                    Command::Scan { limit, .. } => {
                        asked.push(*limit);
                        if *limit > max_rows {
                            Reply::Failed(Failure::Timeout("read timed out".into()))
                        } else {
                            table.apply(&command, now)
                        }
                    }
                    _ => table.apply(&command, now),
                };
                op.handle(id, reply);
            }
            Poll::WaitUntil(t) => now = t,
            Poll::Ready(result) => return (result, asked),
        }
    }
}

#[test]
fn a_scan_that_times_out_is_sent_again_smaller_and_the_listing_is_whole() {
    let now = Instant::from_nanos(1);
    let mut table = numbered_locks(600, now);
    let opts = LockOptions::default();
    // Pages of 256 time out; 128 fit: every page is asked for at 256, then at 128.
    let (found, asked) = run_small_pages_only(&mut table, &mut ListLocks::new(&opts), 128, now);
    let found = found.expect("listing");
    assert_eq!(found.len(), 600);
    assert!(found.windows(2).all(|w| w[0].name < w[1].name));
    assert!(asked.contains(&128), "{asked:?}");
    assert!(asked.iter().all(|&l| l == 256 || l == 128), "{asked:?}");
    // Pages of 16 time out too: three sends (256, 128, 64), then the store is unavailable.
    let (failed, asked) = run_small_pages_only(&mut table, &mut ListLocks::new(&opts), 8, now);
    let e = failed.expect_err("no page fits");
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}");
    assert_eq!(asked, vec![256, 128, 64]);
}
