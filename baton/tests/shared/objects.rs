//! Scripts of object writes ([`Command::SetObject`]) that every store must answer as the
//! kernel's reference table does, shared by the SQL and Cassandra tests (included by path).
//! Object cells are written as the kernel writes them: `<version>;<writer>;<base64 value>`,
//! the version 20 digits, so that `version;` is a prefix of the cell.

use std::time::Duration;

use baton::{Command, Consistency, SerialConsistency};
use baton_kernel::strategy::{unique::LOCK_COLUMN, COUNTER_COLUMN};
use baton_kernel::{ColumnFilter, ObjectGuard, ReadConsistency};

/// The object's cell (the kernel's `_OBJECT_`).
pub const OBJECT: &str = "_OBJECT_";

pub const LONG: Option<Duration> = Some(Duration::from_secs(600));

/// The prefix every cell of `version` starts with.
pub fn version(version: u64) -> String {
    format!("{version:020};")
}

/// An object cell: `version`, written by `writer`, holding `value` (base64 text, or `-`).
pub fn cell(v: u64, writer: &str, value: &str) -> String {
    format!("{}{writer};{value}", version(v))
}

/// Base64 text of `bytes` bytes of data (its alphabet and padding; the stores only compare
/// and keep it).
pub fn base64_of(bytes: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let len = bytes.div_ceil(3) * 4;
    let pad = (3 - bytes % 3) % 3;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut text: String = (0..len - pad)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(ALPHABET[(x % 64) as usize])
        })
        .collect();
    text.push_str(&"=".repeat(pad));
    text
}

pub fn set(row: &str, expected: Option<&str>, value: &str, guard: ObjectGuard) -> Command {
    Command::SetObject {
        row: row.into(),
        column: OBJECT.into(),
        expected: expected.map(String::from),
        value: value.into(),
        guard,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

/// A held guard on unique insert's pair of cells.
pub fn held(lock: &str, counter: &str) -> ObjectGuard {
    held_by(LOCK_COLUMN, lock, counter)
}

/// A held guard on the lock cell `column` (a column-prefix entry, say) and the counter.
pub fn held_by(column: &str, lock: &str, counter: &str) -> ObjectGuard {
    ObjectGuard::Held {
        column: column.into(),
        value: lock.into(),
        counter: COUNTER_COLUMN.into(),
        counter_value: counter.into(),
    }
}

pub fn free() -> ObjectGuard {
    ObjectGuard::Free {
        column: LOCK_COLUMN.into(),
    }
}

pub fn read(row: &str, filter: ColumnFilter) -> Command {
    Command::Read {
        row: row.into(),
        filter,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

/// Unique insert's claim of `row`'s lock (its lock cell and counter, both by Paxos on
/// Cassandra).
pub fn claim(
    row: &str,
    ttl: Option<Duration>,
    owner: &str,
    expected: Option<&str>,
    next: &str,
) -> Command {
    Command::Claim {
        row: row.into(),
        column: LOCK_COLUMN.into(),
        value: owner.into(),
        ttl,
        counter: COUNTER_COLUMN.into(),
        counter_expected: expected.map(String::from),
        counter_next: next.into(),
        turn: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

/// Unique insert's release of `row`'s lock.
pub fn release(row: &str, owner: &str, counter: &str) -> Command {
    Command::GuardedSet {
        row: row.into(),
        column: LOCK_COLUMN.into(),
        expected: owner.into(),
        new: None,
        ttl: None,
        guard: COUNTER_COLUMN.into(),
        guard_value: counter.into(),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

/// Inserts, updates by version and by whole value, and every way a guard fails, on the rows
/// `obj`, `obj-free` and `obj-prefix`. Each reply, and what the rows hold after it, must be the
/// reference table's.
pub fn objects_and_their_guards() -> Vec<Command> {
    const ROW: &str = "obj";
    let (a, b) = ("owner=a att=1", "owner=b att=1");
    let (ta, tb) = ("token=1 owner=a", "token=2 owner=b");
    let v1 = cell(1, "a1.1", "QQ==");
    let v2 = cell(2, "a1.2", "QUI=");
    let v3 = cell(3, "a1.3", "-");
    let v4 = cell(4, "c1.1", "QUJD");
    vec![
        // Held by a: an insert applies; a second insert finds the object there.
        claim(ROW, LONG, a, None, ta),
        set(ROW, None, &v1, held(a, ta)),
        set(ROW, None, &cell(1, "a1.9", "Qg=="), held(a, ta)),
        read(ROW, ColumnFilter::All),
        // An update by version applies; the same version again does not (the cell moved on).
        set(ROW, Some(&version(1)), &v2, held(a, ta)),
        set(
            ROW,
            Some(&version(1)),
            &cell(2, "a1.9", "Qg=="),
            held(a, ta),
        ),
        // Versions compare as text of bytes: a prefix that differs in its last byte, or is
        // longer than the cell's, does not match.
        set(ROW, Some(&format!("{}x", version(2))), &v3, held(a, ta)),
        set(ROW, Some(&format!("{v2}=")), &v3, held(a, ta)),
        set(ROW, Some("00000000000000000002:"), &v3, held(a, ta)),
        // The whole value as the expectation (a prefix of itself).
        set(ROW, Some(&v2), &v3, held(a, ta)),
        // The guard: another lock value, another counter, each alone in the way.
        set(ROW, Some(&version(3)), &v4, held(b, ta)),
        set(ROW, Some(&version(3)), &v4, held(a, tb)),
        set(ROW, Some(&version(3)), &v4, held("OWNER=A ATT=1", ta)),
        set(ROW, Some(&version(9)), &v4, held(b, tb)),
        // A free guard while the lock is held.
        set(ROW, Some(&version(3)), &v4, free()),
        read(ROW, ColumnFilter::All),
        // Released: a held write finds no lock cell; a free one applies.
        release(ROW, a, ta),
        set(ROW, Some(&version(3)), &v4, held(a, ta)),
        set(ROW, Some(&version(3)), &v4, free()),
        // Held by b from the counter a left: b's writes apply, a's do not.
        claim(ROW, LONG, b, Some(ta), tb),
        set(ROW, Some(&version(4)), &cell(5, "b1.1", "-"), held(a, ta)),
        set(ROW, Some(&version(4)), &cell(5, "b1.1", "-"), held(b, tb)),
        set(ROW, Some(&version(5)), &cell(6, "x", "Qw=="), free()),
        read(ROW, ColumnFilter::All),
        read(ROW, ColumnFilter::Exact(OBJECT.into())),
        // A name never locked: a free insert applies (no lock row at all), once; a held write
        // finds neither lock cell nor counter; an update expects a cell that is not there.
        set("obj-free", Some(&version(0)), &v1, free()),
        set("obj-free", None, &v1, held(a, ta)),
        set("obj-free", None, &v1, free()),
        set("obj-free", None, &v2, free()),
        set("obj-free", Some(&version(1)), &v2, held(a, ta)),
        read("obj-free", ColumnFilter::All),
        // A lock cell that a plain write made (a column-prefix entry): guarded as well, and
        // left as it was.
        Command::Put {
            row: "obj-prefix".into(),
            column: "_LOCK_a".into(),
            value: a.into(),
            ttl: LONG,
            consistency: Consistency::Quorum,
        },
        Command::InsertIfAbsent {
            row: "obj-prefix".into(),
            column: COUNTER_COLUMN.into(),
            value: ta.into(),
            ttl: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        },
        set("obj-prefix", None, &v1, held_by("_LOCK_a", b, ta)),
        set("obj-prefix", None, &v1, held_by("_LOCK_a", a, ta)),
        set(
            "obj-prefix",
            Some(&version(1)),
            &v2,
            held_by("_LOCK_a", a, ta),
        ),
        read("obj-prefix", ColumnFilter::All),
        Command::Scan {
            after: None,
            limit: 10,
            consistency: Consistency::Quorum,
        },
    ]
}

/// A lock of `ttl` that expires under an object, on the row `obj-expiry`: `before` claims it and
/// writes the object; once the lock has expired, `after` finds that its holder's write is
/// refused (no live lock cell, though the counter is still the grant's) and an unlocked write
/// applies, as does an insert elsewhere... then another claim makes the free guard fail again.
pub fn expired_lock(ttl: Duration) -> (Vec<Command>, Vec<Command>) {
    const ROW: &str = "obj-expiry";
    let (a, ta) = ("owner=a att=1", "token=1 owner=a");
    let before = vec![
        claim(ROW, Some(ttl), a, None, ta),
        set(ROW, None, &cell(1, "a1.1", "QQ=="), held(a, ta)),
        set(ROW, Some(&version(1)), &cell(2, "a1.2", "QQ=="), free()),
    ];
    let after = vec![
        read(ROW, ColumnFilter::All),
        set(
            ROW,
            Some(&version(1)),
            &cell(2, "a1.2", "QQ=="),
            held(a, ta),
        ),
        set(ROW, Some(&version(1)), &cell(2, "z", "QUE="), free()),
        claim(ROW, LONG, "owner=b", Some(ta), "token=2 owner=b"),
        set(ROW, Some(&version(2)), &cell(3, "z", "QUE="), free()),
        read(ROW, ColumnFilter::All),
    ];
    (before, after)
}

/// The lock cell of [`expired_lock`], to wait on until it has expired.
pub fn expired_lock_cell() -> Command {
    read("obj-expiry", ColumnFilter::Exact(LOCK_COLUMN.into()))
}

/// A value of `bytes` bytes in base64, inserted and then replaced on the row `obj-big` (free,
/// then held), and read back whole.
pub fn big_values(bytes: usize) -> Vec<Command> {
    const ROW: &str = "obj-big";
    let (a, ta) = ("owner=a att=1", "token=1 owner=a");
    let first = cell(1, "a1.1", &base64_of(bytes));
    let mut second = cell(2, "a1.2", &base64_of(bytes));
    // Not the same text as the first past the version (the generator is deterministic).
    second.replace_range(second.len() - 8.., "AAAAAA==");
    vec![
        set(ROW, None, &first, free()),
        read(ROW, ColumnFilter::Exact(OBJECT.into())),
        claim(ROW, LONG, a, None, ta),
        set(ROW, Some(&version(1)), &second, held(a, ta)),
        set(ROW, Some(&version(1)), &second, held(a, ta)),
        read(ROW, ColumnFilter::All),
    ]
}
