//! `Acquire::cleanup`: what a caller abandoning an acquisition midway must execute.

use std::time::Duration;

use baton_kernel::{
    Acquire, Command, Instant, LockName, LockOptions, MemoryTable, Operation, OwnerId, Poll,
    Strategy, Wait,
};

fn acquire(strategy: Strategy, host: &str) -> Acquire {
    let opts = LockOptions {
        strategy,
        wait: Wait::Timeout(Duration::from_secs(60)),
        acquisition: 7,
        ..LockOptions::default()
    };
    let owner = OwnerId::new(host, 1, 1).expect("owner");
    Acquire::new(LockName::new("job").expect("name"), owner, opts).expect("options")
}

/// Drives `op` until it waits (or finishes); returns whether it finished.
fn run_until_wait(table: &mut MemoryTable, op: &mut Acquire, now: Instant) -> bool {
    loop {
        match op.poll(now) {
            Poll::Execute(id, command) => {
                let reply = table.apply(&command, now);
                op.handle(id, reply);
            }
            Poll::WaitUntil(_) => return false,
            Poll::Ready(r) => {
                r.expect("grant");
                return true;
            }
        }
    }
}

#[test]
fn a_waiter_abandoned_midway_removes_only_its_own_cell() {
    for strategy in Strategy::ALL {
        let mut table = MemoryTable::new();
        let now = Instant::from_nanos(1);
        let mut holder = acquire(strategy, "a");
        assert!(
            holder.cleanup().is_none(),
            "{strategy}: nothing written yet"
        );
        assert!(
            run_until_wait(&mut table, &mut holder, now),
            "{strategy}: uncontended"
        );
        assert!(
            holder.cleanup().is_none(),
            "{strategy}: granted: release instead"
        );

        let mut waiter = acquire(strategy, "b");
        assert!(
            !run_until_wait(&mut table, &mut waiter, now),
            "{strategy}: waits"
        );
        let cleanup = waiter.cleanup();
        match (strategy, &cleanup) {
            // Unique insert never wrote a cell (its insert was refused): nothing to do.
            (Strategy::UniqueInsert, None) => {}
            // Column prefix deleted its column before backing off: nothing to do.
            (Strategy::ColumnPrefix, None) => {}
            // Bakery keeps its ticket while it waits in the queue.
            (Strategy::Bakery, Some(Command::Delete { column, .. })) => {
                assert!(column.ends_with("b:1:0000000000000001"), "{column}");
                table.apply(cleanup.as_ref().expect("some"), now);
            }
            other => panic!("{strategy}: unexpected cleanup {other:?}"),
        }
        let rows = table.read("job", &baton_kernel::ColumnFilter::All, now);
        assert!(
            rows.iter().all(|c| !c.column.contains("b:1:")),
            "{strategy}: {rows:?}"
        );
        assert!(
            rows.iter()
                .any(|c| c.column.contains("a:1:") || c.column == "lock"),
            "{strategy}: holder kept"
        );
    }
}

#[test]
fn a_claim_in_flight_is_cleaned_up_by_compare_and_set() {
    let mut op = acquire(Strategy::UniqueInsert, "a");
    let Poll::Execute(_, Command::Claim { value, .. }) = op.poll(Instant::from_nanos(1)) else {
        panic!("the claim first")
    };
    match op.cleanup() {
        Some(Command::CompareAndSet {
            expected,
            new: None,
            ..
        }) => assert_eq!(expected, value),
        other => panic!("unexpected {other:?}"),
    }
}
