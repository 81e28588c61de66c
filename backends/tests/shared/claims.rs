//! Scripts of storage commands that every store must answer as the kernel's reference table
//! does, shared by the SQL and Cassandra tests (included by path).

use std::time::Duration;

use baton::{Command, Consistency, SerialConsistency};
use baton_kernel::strategy::{unique::LOCK_COLUMN, COUNTER_COLUMN};
use baton_kernel::{ColumnFilter, ReadConsistency};

const LONG: Option<Duration> = Some(Duration::from_secs(600));

fn read(filter: ColumnFilter) -> Command {
    Command::Read {
        row: "job".into(),
        filter,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

fn cas(column: &str, expected: &str, new: Option<&str>) -> Command {
    Command::CompareAndSet {
        row: "job".into(),
        column: column.into(),
        expected: expected.into(),
        new: new.map(String::from),
        // No TTL: no counter ever has one, and a removal ignores it.
        ttl: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn claim(value: &str, expected: Option<&str>, next: &str) -> Command {
    Command::Claim {
        row: "job".into(),
        column: LOCK_COLUMN.into(),
        value: value.into(),
        ttl: LONG,
        counter: COUNTER_COLUMN.into(),
        counter_expected: expected.map(String::from),
        counter_next: next.into(),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn guarded(expected: &str, new: Option<&str>, guard_value: &str) -> Command {
    Command::GuardedSet {
        row: "job".into(),
        column: LOCK_COLUMN.into(),
        expected: expected.into(),
        new: new.map(String::from),
        ttl: LONG,
        guard: COUNTER_COLUMN.into(),
        guard_value: guard_value.into(),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

/// Unique insert's one-step commands in the orders late delivery and operators produce, on the
/// row `job` of an empty table. Each reply, and what the row holds after it, must be the
/// reference table's. The claim's "current" values are the live cells as the step found them,
/// held lock or not: a waiter claims again from the counter it was shown.
pub fn claims_and_guarded_releases() -> Vec<Command> {
    let (a1, b1, a2) = ("owner=a att=1", "owner=b att=1", "owner=a att=2");
    vec![
        // A name's first claim, and a second claimant while it is held.
        claim(a1, None, "token=1 owner=a"),
        claim(b1, None, "token=1 owner=b"),
        claim(b1, Some("token=1 owner=a"), "token=2 owner=b"),
        read(ColumnFilter::All),
        // A release, then the same release again (a resend, or a copy applied late).
        guarded(a1, None, "token=1 owner=a"),
        guarded(a1, None, "token=1 owner=a"),
        // A claim from an expectation that is old (no counter), then from the right one.
        claim(b1, None, "token=1 owner=b"),
        claim(b1, Some("token=1 owner=a"), "token=2 owner=b"),
        // A's claim from before B's grant, applied late: the counter has moved.
        claim(a2, Some("token=1 owner=a"), "token=2 owner=a"),
        // A renewal-like guarded change of B's record, then one guarded on an old counter.
        guarded(b1, Some(b1), "token=2 owner=b"),
        guarded(b1, Some("owner=b att=9"), "token=1 owner=a"),
        // A forced release: the counter moves on (no TTL, as every counter write), then the
        // record goes.
        cas(
            COUNTER_COLUMN,
            "token=2 owner=b",
            Some("token=3 owner=forced-release forced=1"),
        ),
        cas(LOCK_COLUMN, b1, None),
        // B's release after it: not applied, and the reply shows why.
        guarded(b1, None, "token=2 owner=b"),
        read(ColumnFilter::All),
        read(ColumnFilter::Prefix(COUNTER_COLUMN.into())),
        read(ColumnFilter::Exact(COUNTER_COLUMN.into())),
        // The next holder claims from the forced value.
        claim(
            a2,
            Some("token=3 owner=forced-release forced=1"),
            "token=4 owner=a forced=1",
        ),
        Command::Purge {
            row: Some("job".into()),
        },
        read(ColumnFilter::All),
        Command::Scan {
            after: None,
            limit: 10,
            consistency: Consistency::Quorum,
        },
    ]
}
