//! Scripts of storage commands that every store must answer as the kernel's reference table
//! does, shared by the SQL and Cassandra tests (included by path).

use std::time::Duration;

use baton::{Command, Consistency, SerialConsistency};
use baton_kernel::strategy::{unique::LOCK_COLUMN, COUNTER_COLUMN};
use baton_kernel::{ColumnFilter, ReadConsistency};

const LONG: Option<Duration> = Some(Duration::from_secs(600));

fn read(filter: ColumnFilter) -> Command {
    read_in("job", filter)
}

fn read_in(row: &str, filter: ColumnFilter) -> Command {
    Command::Read {
        row: row.into(),
        filter,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

fn cas(column: &str, expected: &str, new: Option<&str>) -> Command {
    cas_in("job", column, expected, new)
}

fn cas_in(row: &str, column: &str, expected: &str, new: Option<&str>) -> Command {
    Command::CompareAndSet {
        row: row.into(),
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
    claim_in("job", LONG, value, expected, next)
}

fn claim_in(
    row: &str,
    ttl: Option<Duration>,
    value: &str,
    expected: Option<&str>,
    next: &str,
) -> Command {
    Command::Claim {
        row: row.into(),
        column: LOCK_COLUMN.into(),
        value: value.into(),
        ttl,
        counter: COUNTER_COLUMN.into(),
        counter_expected: expected.map(String::from),
        counter_next: next.into(),
        turn: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn guarded(expected: &str, new: Option<&str>, guard_value: &str) -> Command {
    guarded_in("job", expected, new, guard_value)
}

fn guarded_in(row: &str, expected: &str, new: Option<&str>, guard_value: &str) -> Command {
    Command::GuardedSet {
        row: row.into(),
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

/// The stamp of a [`Command::DeleteVersion`] in a script that stands for the stamp of its cell
/// in the reply to the read before it, which only the store running the script knows: see
/// [`with_read_stamp`]. (A stamp no read returned is not something the kernel sends; on
/// Cassandra one above the clock would leave a tombstone that hides later writes of the cell.)
pub const READ_STAMP: u64 = 0;

/// `command`, with a [`READ_STAMP`] replaced by the stamp its cell has in `last`, the reply to
/// the command before it on the same store.
pub fn with_read_stamp(command: &Command, last: Option<&baton::Reply>) -> Command {
    match (command, last) {
        (
            Command::DeleteVersion {
                row,
                column,
                stamp: READ_STAMP,
                consistency,
            },
            Some(baton::Reply::Cells(cells)),
        ) => Command::DeleteVersion {
            row: row.clone(),
            column: column.clone(),
            stamp: cells
                .iter()
                .find(|c| &c.column == column)
                .map(|c| c.stamp)
                .expect("the read before a delete-version returns its cell"),
            consistency: *consistency,
        },
        (
            Command::DeleteVersion {
                stamp: READ_STAMP, ..
            },
            other,
        ) => panic!("a delete-version of the read stamp must follow a read, not {other:?}"),
        _ => command.clone(),
    }
}

/// Every way a `lock` cell is removed, each after a grant, on the row `removals`: a release
/// (a guarded delete), the removal of an own record (a compare-and-set to nothing), a plain
/// delete, a batch delete, the delete of a version, a vacate, and a forced release. The counter
/// must survive each one as the reference table says, and the next claim, made from it, gets
/// the next token. A layout that keeps the counter in the lock's own row (see
/// `docs/one-row-claim.md`) is checked by this script.
///
/// `plain_writes: false` leaves out the removals stamped by the client (delete, batch, delete
/// of a version, vacate): the kernel never sends them to `lock` (its name is reserved), and on
/// Cassandra they would meet a cell written by a lightweight transaction at the server's ballot
/// time, so the outcome would depend on how the two clocks agree.
pub fn removals_keep_the_counter(plain_writes: bool) -> Vec<Command> {
    const ROW: &str = "removals";
    let token = |n: u32| format!("token={n} owner=a");
    let owner = |n: u32| format!("owner=a att={n}");
    let counter = || read_in(ROW, ColumnFilter::Exact(COUNTER_COLUMN.into()));
    let claim_after = |n: u32| {
        let expected = (n > 1).then(|| token(n - 1));
        claim_in(ROW, LONG, &owner(n), expected.as_deref(), &token(n))
    };
    let removals: Vec<Command> = vec![
        guarded_in(ROW, &owner(1), None, &token(1)),
        cas_in(ROW, LOCK_COLUMN, &owner(2), None),
        Command::Delete {
            row: ROW.into(),
            column: LOCK_COLUMN.into(),
            consistency: Consistency::Quorum,
        },
        Command::Batch {
            row: ROW.into(),
            writes: vec![baton_kernel::Write::Delete {
                column: LOCK_COLUMN.into(),
            }],
            consistency: Consistency::Quorum,
            after: 0,
        },
        // The version just read (see `with_read_stamp`): as a forced release removes it.
        Command::DeleteVersion {
            row: ROW.into(),
            column: LOCK_COLUMN.into(),
            stamp: READ_STAMP,
            consistency: Consistency::Quorum,
        },
        Command::Vacate {
            row: ROW.into(),
            column: LOCK_COLUMN.into(),
            read: ColumnFilter::All,
            consistency: Consistency::Quorum,
        },
    ];
    let kept = if plain_writes { removals.len() } else { 2 };
    let mut script = Vec::new();
    let mut n = 0;
    for removal in removals.into_iter().take(kept) {
        n += 1;
        script.push(claim_after(n));
        script.push(read_in(ROW, ColumnFilter::Exact(LOCK_COLUMN.into())));
        script.push(removal);
        script.push(counter());
        script.push(read_in(ROW, ColumnFilter::All));
    }
    // A forced release: the counter moves on first, then the record goes; the next claim is
    // made from the forced value and gets a larger token.
    n += 1;
    script.push(claim_after(n));
    let forced = format!("token={} owner=forced-release forced=1", n + 1);
    script.push(cas_in(ROW, COUNTER_COLUMN, &token(n), Some(&forced)));
    script.push(cas_in(ROW, LOCK_COLUMN, &owner(n), None));
    script.push(counter());
    script.push(claim_in(
        ROW,
        LONG,
        &owner(n + 2),
        Some(&forced),
        &format!("token={} owner=a", n + 2),
    ));
    script.push(read_in(ROW, ColumnFilter::All));
    script
}

/// Expectations that differ from what is stored only in case or in trailing spaces, on the row
/// `bytes`: none of them matches. Values compare as bytes (MariaDB: a `NO PAD` binary
/// collation), the counter's as the lock's.
pub fn expectations_compare_bytes() -> Vec<Command> {
    const ROW: &str = "bytes";
    let (ours, token) = ("owner=a", "token=1 owner=a");
    let mut script = vec![claim_in(ROW, LONG, ours, None, token)];
    for wrong in ["OWNER=A", "owner=a ", "Owner=a"] {
        script.push(guarded_in(ROW, wrong, None, token));
        script.push(cas_in(ROW, LOCK_COLUMN, wrong, None));
    }
    for wrong in ["TOKEN=1 owner=a", "token=1 owner=a ", "token=1 owner=A"] {
        script.push(guarded_in(ROW, ours, None, wrong));
        script.push(cas_in(ROW, COUNTER_COLUMN, wrong, Some("token=9")));
    }
    script.push(read_in(ROW, ColumnFilter::All));
    script.push(guarded_in(ROW, ours, None, token));
    for wrong in ["TOKEN=1 owner=a", "token=1 owner=a ", "token=1 owner=A"] {
        script.push(claim_in(
            ROW,
            LONG,
            "owner=b",
            Some(wrong),
            "token=2 owner=b",
        ));
    }
    script.push(claim_in(
        ROW,
        LONG,
        "owner=b",
        Some(token),
        "token=2 owner=b",
    ));
    script.push(read_in(ROW, ColumnFilter::All));
    script
}

/// A holder that stalled past its lease, on the row `late`: `before` grants it a lock of `ttl`.
/// Once that lock has expired, `after` delivers the stalled holder's renewal and release: an
/// expired record is nobody's, so neither applies (a renewal that did would bring back a lease
/// its holder had lost). Then another client is granted the lock from the counter the first
/// one left, and the stalled holder's commands arrive again, with its first claim: none
/// applies, and the other holder's cell and counter stay.
pub fn late_after_expiry(ttl: Duration) -> (Vec<Command>, Vec<Command>) {
    const ROW: &str = "late";
    let (a, b) = ("owner=a att=1", "owner=b att=1");
    let (ta, tb) = ("token=1 owner=a", "token=2 owner=b");
    let before = vec![claim_in(ROW, Some(ttl), a, None, ta)];
    let after = vec![
        read_in(ROW, ColumnFilter::All),
        guarded_in(ROW, a, Some(a), ta),
        guarded_in(ROW, a, None, ta),
        cas_in(ROW, LOCK_COLUMN, a, Some(a)),
        read_in(ROW, ColumnFilter::All),
        claim_in(ROW, LONG, b, Some(ta), tb),
        guarded_in(ROW, a, None, ta),
        guarded_in(ROW, a, Some(a), ta),
        claim_in(ROW, Some(ttl), a, None, ta),
        cas_in(ROW, LOCK_COLUMN, a, None),
        read_in(ROW, ColumnFilter::All),
    ];
    (before, after)
}

/// The lock cell of [`late_after_expiry`], to wait on until it has expired.
pub fn late_lock() -> Command {
    read_in("late", ColumnFilter::Exact(LOCK_COLUMN.into()))
}

/// The counter among other cells, on the row `mixed`: a name's first counter made by
/// insert-if-absent (no row yet, then again while it exists, then beside a live lock), and
/// reads and a vacate of a row whose data cells sort on both sides of `_LOCK_` and `lock`
/// (bytes: `A` < `_A` < `_LOCK_` < `lock` < `ticket/1` < `zz`). Then a released name that holds
/// only its counter, as a scan lists it.
pub fn the_counter_among_other_cells() -> Vec<Command> {
    const ROW: &str = "mixed";
    let put = |column: &str| Command::Put {
        row: ROW.into(),
        column: column.into(),
        value: format!("data {column}"),
        ttl: None,
        consistency: Consistency::Quorum,
    };
    let first_counter = |value: &str| Command::InsertIfAbsent {
        row: ROW.into(),
        column: COUNTER_COLUMN.into(),
        value: value.into(),
        ttl: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    };
    let mut script = vec![
        first_counter("token=1 owner=a"),
        first_counter("token=1 owner=b"),
        read_in(ROW, ColumnFilter::Exact(COUNTER_COLUMN.into())),
        claim_in(
            ROW,
            LONG,
            "owner=a",
            Some("token=1 owner=a"),
            "token=2 owner=a",
        ),
        first_counter("token=1 owner=c"),
    ];
    for column in ["A", "_A", "ticket/1", "zz"] {
        script.push(put(column));
    }
    for filter in [
        ColumnFilter::All,
        ColumnFilter::Prefix("_".into()),
        ColumnFilter::Prefix(COUNTER_COLUMN.into()),
        ColumnFilter::Prefix("l".into()),
        ColumnFilter::Prefix("lock".into()),
        ColumnFilter::Exact(COUNTER_COLUMN.into()),
        ColumnFilter::Exact(LOCK_COLUMN.into()),
    ] {
        script.push(read_in(ROW, filter));
    }
    script.push(Command::Vacate {
        row: ROW.into(),
        column: "ticket/1".into(),
        read: ColumnFilter::All,
        consistency: Consistency::Quorum,
    });
    script.push(guarded_in(ROW, "owner=a", None, "token=2 owner=a"));
    for column in ["A", "_A", "zz"] {
        script.push(Command::Delete {
            row: ROW.into(),
            column: column.into(),
            consistency: Consistency::Quorum,
        });
    }
    script.push(read_in(ROW, ColumnFilter::All));
    script.push(Command::Scan {
        after: None,
        limit: 100,
        consistency: Consistency::Quorum,
    });
    script
}

/// Expired cells beside counters, on names under `scan/` (SQL only: Cassandra removes an
/// expired cell by itself, so it has nothing to purge where the reference lists it, and it pages
/// a scan in token order, which the reference does not model). `before` makes, with `ttl`
/// where it says short:
///
/// - `scan/1`: a lock released, so only its counter is left;
/// - `scan/2`: a short lock beside its counter;
/// - `scan/3`: only a short data cell;
/// - `scan/4`: a held lock and its counter;
/// - `scan/5`: only a counter, made by insert-if-absent.
///
/// Once the short cells have expired ([`expired_probe`]), `after` lists the names a page at a
/// time (`scan/3`, all of whose cells have expired, is in no page), renews the expired lock
/// (not applied) and purges `scan/2` twice: the first lists its expired lock and keeps the
/// counter, the second finds nothing. A claim from that counter then gets the next token.
#[allow(
    dead_code,
    reason = "SQL only; the Cassandra tests include this file too"
)]
pub fn expired_beside_counters(ttl: Duration) -> (Vec<Command>, Vec<Command>) {
    let short = Some(ttl);
    let before = vec![
        claim_in("scan/1", LONG, "owner=a", None, "token=1 owner=a"),
        guarded_in("scan/1", "owner=a", None, "token=1 owner=a"),
        claim_in("scan/2", short, "owner=b", None, "token=1 owner=b"),
        Command::Put {
            row: "scan/3".into(),
            column: "data".into(),
            value: "short".into(),
            ttl: short,
            consistency: Consistency::Quorum,
        },
        claim_in("scan/4", LONG, "owner=d", None, "token=1 owner=d"),
        Command::InsertIfAbsent {
            row: "scan/5".into(),
            column: COUNTER_COLUMN.into(),
            value: "token=1 owner=e".into(),
            ttl: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        },
    ];
    let page = |after: Option<&str>, limit: u32| Command::Scan {
        after: after.map(String::from),
        limit,
        consistency: Consistency::Quorum,
    };
    let purge = || Command::Purge {
        row: Some("scan/2".into()),
    };
    let after = vec![
        page(Some("scan/"), 1),
        page(Some("scan/1"), 2),
        page(Some("scan/2"), 2),
        page(Some("scan/4"), 1),
        page(Some("scan/5"), 1),
        cas_in("scan/2", LOCK_COLUMN, "owner=b", Some("owner=b")),
        purge(),
        read_in("scan/2", ColumnFilter::All),
        read_in("scan/2", ColumnFilter::Exact(COUNTER_COLUMN.into())),
        purge(),
        Command::Purge {
            row: Some("scan/3".into()),
        },
        page(Some("scan/1"), 3),
        claim_in(
            "scan/2",
            LONG,
            "owner=c",
            Some("token=1 owner=b"),
            "token=2 owner=c",
        ),
        read_in("scan/2", ColumnFilter::All),
    ];
    (before, after)
}

/// A read that is empty once the short cells of [`expired_beside_counters`] have expired.
#[allow(
    dead_code,
    reason = "SQL only; the Cassandra tests include this file too"
)]
pub fn expired_probe() -> Vec<Command> {
    vec![
        read_in("scan/2", ColumnFilter::Exact(LOCK_COLUMN.into())),
        read_in("scan/3", ColumnFilter::All),
    ]
}
