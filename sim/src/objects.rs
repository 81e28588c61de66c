//! The object checker (seed 002's objects, issue 42): what the store did to each object cell,
//! judged against who wrote it, under which lease, and what each caller was told.
//!
//! Workers keep a decimal counter in their lock names' objects: holders increment it with a
//! locked update (a read, then an update of what they read, under their lease), and others
//! increment it optimistically without the lock (a read, then an update naming the version
//! read, again after a version mismatch or a busy lock). The store reports every change of an
//! object cell ([`ObjectChange`]), with the row as the deciding step saw it. On every seed:
//!
//! - **versions strictly increase**: every write moves the cell's version up (a removal
//!   included: a removed object keeps its version and goes on from it), and nothing else ever
//!   moves it (a server crash never takes it back);
//! - **no lost update**: every applied write of the counter replaces value `n` (0 for no
//!   object) with `n + 1`, or removes the object: each increment was computed from the value
//!   it replaces, so none overwrote another's;
//! - **the guard is the truth**: when the store applied a locked write (a holder's, or the
//!   lock an optimistic write takes on bakery and column prefix), the writer's lease held the
//!   lock in the store's state (its lock cell live with its value, the fencing counter at its
//!   token); when it applied unique insert's unlocked write, no lock cell was live;
//! - **nobody else held the lock**: at that instant no other grant of the name was believed
//!   (the checker's beliefs, [`super::check`]), unless an operator had broken it before;
//! - **the exact accounting**: every acknowledged write (`Ok`) applied exactly once, and is the
//!   version it was told; a write applied at most once; a write whose caller was told anything
//!   but `Ok` or `Ambiguous` never applied (not before, not after the answer); a write of a
//!   call cut short by its client's crash may have applied once. So the final counter equals
//!   the acknowledged increments, plus those that ended `Ambiguous` and applied, plus those of
//!   crashed callers that applied (counted since the last removal), and the checker states the
//!   three figures when it does not;
//! - **unique cells**: no two calls send the same cell (a writer's id names the write, so a
//!   read-back that finds a write's cell proves that write applied).

use std::collections::HashMap;

use baton_kernel::ErrorKind;

use super::check::{GrantRecord, Violation};
use super::store::ObjectChange;

/// What an object write asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// An insert of `1`.
    Insert,
    /// An update to the next value.
    Update,
    /// A removal.
    Remove,
}

/// Who made a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// A holder's call ([`baton_kernel::LockLife::object`]).
    Locked,
    /// An unlocked call ([`baton_kernel::ObjectOp`]).
    Optimistic,
}

/// One object write call, as the simulation saw it.
#[derive(Clone, Debug)]
pub struct ObjectCallRecord {
    /// The client.
    pub client: usize,
    /// The lock name.
    pub name: String,
    /// Locked or optimistic.
    pub kind: CallKind,
    /// What it asked for.
    pub request: Request,
    /// The grant whose lease it writes under: the holder's, or the lock the optimistic call
    /// took for its write (bakery, column prefix); `None`: unique insert's unlocked write.
    pub grant: Option<usize>,
    /// When it was asked for (simulated ns).
    pub started: u64,
    /// What it returned and when: the version written, or the error's kind (`None`: its client
    /// crashed first).
    pub outcome: Option<(u64, Result<u64, ErrorKind>)>,
    /// The cells its writes carried (a call may write again after finding the cell moved).
    pub cells: Vec<String>,
}

/// The lease a locked write is made under: its lock cell and token.
#[derive(Clone, Debug)]
pub struct LeaseRef {
    /// The lock cell's column.
    pub column: String,
    /// Its exact value.
    pub value: String,
    /// The fencing token.
    pub token: u64,
}

/// Figures of the object workload of one run or many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    /// Locked writes the store applied.
    pub locked_applied: u64,
    /// Locked writes refused because the lease was lost.
    pub locked_lost: u64,
    /// Optimistic writes the store applied.
    pub optimistic_applied: u64,
    /// Optimistic writes refused because someone held the lock.
    pub busy: u64,
    /// Optimistic writes refused for a version mismatch (or an insert of an existing object).
    pub mismatched: u64,
    /// Writes whose caller was told `Ambiguous`.
    pub ambiguous: u64,
    /// ... of which the store had applied (or applied later).
    pub ambiguous_applied: u64,
    /// Writes acknowledged (`Ok`).
    pub acknowledged: u64,
}

impl ObjectCounts {
    pub(super) fn add(&mut self, o: &ObjectCounts) {
        self.locked_applied += o.locked_applied;
        self.locked_lost += o.locked_lost;
        self.optimistic_applied += o.optimistic_applied;
        self.busy += o.busy;
        self.mismatched += o.mismatched;
        self.ambiguous += o.ambiguous;
        self.ambiguous_applied += o.ambiguous_applied;
        self.acknowledged += o.acknowledged;
    }
}

/// The fencing counter's column for every strategy in the simulator (column prefix runs with
/// its default prefix, whose counter is the prefix itself).
const COUNTER: &str = baton_kernel::strategy::COUNTER_COLUMN;

/// Unique insert's lock cell.
const LOCK: &str = "lock";

/// An object cell decoded: version, and the counter (`None`: removed; `Some(None)`: a value
/// that is not a decimal counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    version: u64,
    value: Option<Option<u64>>,
}

/// Decodes `<20-digit version>;<writer>;<base64>` or `<version>~<writer>;-`, independently of
/// the kernel's decoder.
fn decode(cell: &str) -> Option<Cell> {
    let version: u64 = cell.get(..20)?.parse().ok()?;
    let separator = cell.get(20..21)?;
    let (_, value) = cell.get(21..)?.split_once(';')?;
    match separator {
        "~" => Some(Cell {
            version,
            value: None,
        }),
        ";" => {
            let bytes = base64(value)?;
            let n = std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| t.parse().ok());
            Some(Cell {
                version,
                value: Some(n),
            })
        }
        _ => None,
    }
}

fn base64(text: &str) -> Option<Vec<u8>> {
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => continue,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    Some(out)
}

fn version_of(cell: Option<&str>) -> u64 {
    cell.and_then(decode).map_or(0, |c| c.version)
}

/// The counter a cell holds: 0 for none or a removed object.
fn count_of(cell: Option<&str>) -> Option<u64> {
    match cell.map(decode) {
        None => Some(0),
        Some(None) => None,
        Some(Some(c)) => match c.value {
            None => Some(0),
            Some(v) => v,
        },
    }
}

fn ms(t: u64) -> f64 {
    t as f64 / 1e6
}

/// Everything the object checker needs of one run.
pub struct ObjectRun<'a> {
    /// The write calls.
    pub calls: &'a [ObjectCallRecord],
    /// Every change of an object cell, in the order the store made them.
    pub changes: &'a [ObjectChange],
    /// The grants (beliefs, forced releases).
    pub grants: &'a [GrantRecord],
    /// The lease of each grant, by index.
    pub leases: &'a [LeaseRef],
}

fn violation(rule: &'static str, name: &str, detail: String) -> Violation {
    Violation::Object {
        rule,
        name: name.to_string(),
        detail,
    }
}

/// Checks the object history of one run; returns the violations and the figures.
pub fn check(run: &ObjectRun<'_>) -> (Vec<Violation>, ObjectCounts) {
    let mut out = Vec::new();
    let mut counts = ObjectCounts::default();
    let mut by_cell: HashMap<(&str, &str), usize> = HashMap::new();
    for (k, call) in run.calls.iter().enumerate() {
        for cell in &call.cells {
            if let Some(&other) = by_cell.get(&(call.name.as_str(), cell.as_str())) {
                if other != k {
                    let a = &run.calls[other];
                    out.push(violation(
                        "unique cells",
                        &call.name,
                        format!(
                            "client {} ({:?} {:?}) and client {} ({:?} {:?}) sent the same object cell {cell:?}: a read-back cannot tell their writes apart",
                            a.client, a.kind, a.request, call.client, call.kind, call.request
                        ),
                    ));
                }
            } else {
                by_cell.insert((call.name.as_str(), cell.as_str()), k);
            }
        }
    }
    let mut applied: Vec<Vec<usize>> = vec![Vec::new(); run.calls.len()];
    let mut last: HashMap<&str, Option<&str>> = HashMap::new();
    for (c, change) in run.changes.iter().enumerate() {
        let row = change.row.as_str();
        let (before, after) = (change.before.as_deref(), change.after.as_deref());
        let seen = last.get(row).copied().unwrap_or(None);
        if seen != before {
            out.push(violation(
                "store history",
                row,
                format!(
                    "at t={}ms the object cell went from {before:?}, but the last change left {seen:?}",
                    ms(change.at)
                ),
            ));
        }
        last.insert(row, after);
        let (v0, v1) = (version_of(before), version_of(after));
        if !change.write {
            if v1 < v0 || (after.is_none() && before.is_some()) {
                out.push(violation(
                    "versions increase",
                    row,
                    format!(
                        "a server crash at t={}ms took the object from version {v0} back to {v1} ({after:?})",
                        ms(change.at)
                    ),
                ));
            }
            continue;
        }
        let Some(cell) = after else {
            out.push(violation(
                "store history",
                row,
                format!("an object write at t={}ms left no cell", ms(change.at)),
            ));
            continue;
        };
        let call = by_cell.get(&(row, cell)).copied();
        let who = call.map_or_else(
            || "an unknown writer".to_string(),
            |k| {
                let w = &run.calls[k];
                format!(
                    "client {} ({:?} {:?} asked at t={}ms)",
                    w.client,
                    w.kind,
                    w.request,
                    ms(w.started)
                )
            },
        );
        if v1 <= v0 {
            out.push(violation(
                "versions increase",
                row,
                format!(
                    "the write of {who} applied at t={}ms took the object from version {v0} to {v1}",
                    ms(change.at)
                ),
            ));
        }
        let removed = decode(cell).is_some_and(|d| d.value.is_none());
        if !removed {
            match (count_of(before), count_of(after)) {
                (Some(n), Some(m)) if m == n + 1 => {}
                (n, m) => out.push(violation(
                    "no lost update",
                    row,
                    format!(
                        "the write of {who} applied at t={}ms replaced counter {n:?} (version {v0}) with {m:?} (version {v1}): it was not computed from the value it replaced, so an increment was lost",
                        ms(change.at)
                    ),
                )),
            }
        }
        let Some(k) = call else {
            out.push(violation(
                "store history",
                row,
                format!(
                    "the store applied an object cell {cell:?} at t={}ms that no call sent",
                    ms(change.at)
                ),
            ));
            continue;
        };
        applied[k].push(c);
        let w = &run.calls[k];
        match w.kind {
            CallKind::Locked => counts.locked_applied += 1,
            CallKind::Optimistic => counts.optimistic_applied += 1,
        }
        judge_guard(run, w, change, &who, &mut out);
    }

    // The accounting, call by call.
    let mut final_figures: HashMap<&str, (u64, u64, u64)> = HashMap::new();
    for (k, call) in run.calls.iter().enumerate() {
        let name = call.name.as_str();
        let outcome = call.outcome.map(|(_, r)| r);
        match outcome {
            Some(Ok(_)) => counts.acknowledged += 1,
            Some(Err(ErrorKind::Ambiguous)) => {
                counts.ambiguous += 1;
                counts.ambiguous_applied += u64::from(!applied[k].is_empty());
            }
            Some(Err(ErrorKind::Busy)) if call.kind == CallKind::Optimistic => counts.busy += 1,
            Some(Err(ErrorKind::VersionMismatch | ErrorKind::AlreadyExists))
                if call.kind == CallKind::Optimistic =>
            {
                counts.mismatched += 1
            }
            Some(Err(ErrorKind::Lost)) if call.kind == CallKind::Locked => counts.locked_lost += 1,
            _ => {}
        }
        let describe = || {
            format!(
                "client {} ({:?} {:?} asked at t={}ms{})",
                call.client,
                call.kind,
                call.request,
                ms(call.started),
                call.outcome.map_or_else(
                    || ", its client crashed before the answer".to_string(),
                    |(t, r)| format!(", told {r:?} at t={}ms", ms(t))
                )
            )
        };
        if applied[k].len() > 1 {
            let times: Vec<String> = applied[k]
                .iter()
                .map(|&c| format!("t={}ms", ms(run.changes[c].at)))
                .collect();
            out.push(violation(
                "applied once",
                name,
                format!(
                    "the write of {} applied {} times: {}",
                    describe(),
                    applied[k].len(),
                    times.join(", ")
                ),
            ));
        }
        match outcome {
            Some(Ok(version)) => {
                let Some(&c) = applied[k].first() else {
                    out.push(violation(
                        "no acknowledged update lost",
                        name,
                        format!(
                            "the write of {} was acknowledged, but the store never applied it",
                            describe()
                        ),
                    ));
                    continue;
                };
                let written = version_of(run.changes[c].after.as_deref());
                if written != version {
                    out.push(violation(
                        "no acknowledged update lost",
                        name,
                        format!(
                            "the write of {} was told version {version}, but the store wrote version {written}",
                            describe()
                        ),
                    ));
                }
            }
            Some(Err(ErrorKind::Ambiguous)) | None => {}
            Some(Err(kind)) => {
                if let Some(&c) = applied[k].first() {
                    out.push(violation(
                        "no acknowledged update lost",
                        name,
                        format!(
                            "the write of {} was told {kind:?}, which says it was not applied, but the store applied it at t={}ms (decided at t={}ms)",
                            describe(),
                            ms(run.changes[c].at),
                            ms(run.changes[c].decided)
                        ),
                    ));
                }
            }
        }
    }
    // The final counter against the accounting, since each name's last removal.
    let mut since_removal: HashMap<&str, Vec<usize>> = HashMap::new();
    for change in run.changes.iter().filter(|c| c.write) {
        let row = change.row.as_str();
        let cell = change.after.as_deref().unwrap_or("");
        let list = since_removal.entry(row).or_default();
        if decode(cell).is_some_and(|d| d.value.is_none()) {
            list.clear();
        } else if let Some(&k) = by_cell.get(&(row, cell)) {
            list.push(k);
        }
    }
    for (row, ks) in &since_removal {
        let figures = final_figures.entry(row).or_default();
        for &k in ks {
            match run.calls[k].outcome.map(|(_, r)| r) {
                Some(Ok(_)) => figures.0 += 1,
                Some(Err(ErrorKind::Ambiguous)) => figures.1 += 1,
                _ => figures.2 += 1,
            }
        }
        let end = last.get(row).copied().unwrap_or(None);
        let Some(n) = count_of(end) else {
            continue;
        };
        let (a, b, c) = *figures;
        if n != a + b + c {
            out.push(violation(
                "exact count",
                row,
                format!(
                    "the counter ends at {n} (version {}): acknowledged increments {a}, applied after an ambiguous answer {b}, applied by callers that crashed before the answer (or were told otherwise, each named above) {c}",
                    version_of(end)
                ),
            ));
        }
    }
    (out, counts)
}

/// The store applied `call`'s write (`change`): the writer's lease held the lock in the store's
/// state, and no other grant was believed, unless an operator had broken it.
fn judge_guard(
    run: &ObjectRun<'_>,
    call: &ObjectCallRecord,
    change: &ObjectChange,
    who: &str,
    out: &mut Vec<Violation>,
) {
    let cell = |col: &str| {
        change
            .cells
            .iter()
            .find(|(c, _)| c == col)
            .map(|(_, v)| v.as_str())
    };
    let t = change.decided;
    match call.grant {
        Some(g) => {
            let lease = &run.leases[g];
            let lock = cell(&lease.column);
            let counter = cell(COUNTER);
            let token = counter
                .and_then(|v| v.strip_prefix("token="))
                .and_then(|v| v.split(' ').next())
                .and_then(|v| v.parse::<u64>().ok());
            if lock != Some(lease.value.as_str()) || token != Some(lease.token) {
                out.push(violation(
                    "the guard is the truth",
                    &call.name,
                    format!(
                        "the locked write of {who} applied at t={}ms while the store did not hold its lease (token {}): its lock cell {:?} held {lock:?}, not {:?}; the counter held {counter:?}",
                        ms(t),
                        lease.token,
                        lease.column,
                        lease.value
                    ),
                ));
            }
        }
        None => {
            if let Some(holder) = cell(LOCK) {
                out.push(violation(
                    "the guard is the truth",
                    &call.name,
                    format!(
                        "the unlocked write of {who} applied at t={}ms while the lock cell held {holder:?}",
                        ms(t)
                    ),
                ));
            }
        }
    }
    for (g, other) in run.grants.iter().enumerate() {
        if Some(g) == call.grant || other.name != call.name {
            continue;
        }
        let believed = other.belief.iter().any(|(s, e)| *s <= t && t < *e);
        let broken = other.forced_at.is_some_and(|f| f <= t);
        if believed && !broken {
            out.push(violation(
                "nobody else held the lock",
                &call.name,
                format!(
                    "the {} write of {who} applied at t={}ms while client {} believed it held the lock (token {}, granted at t={}ms)",
                    if call.grant.is_some() { "locked" } else { "unlocked" },
                    ms(t),
                    other.client,
                    other.token,
                    ms(other.at)
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_decode_independently() {
        let c = decode("00000000000000000007;ab.1;MTI=").expect("decodes");
        assert_eq!(
            c,
            Cell {
                version: 7,
                value: Some(Some(12))
            }
        );
        let r = decode("00000000000000000008~ab.2;-").expect("decodes");
        assert_eq!(r.value, None);
        assert_eq!(count_of(Some("00000000000000000008~ab.2;-")), Some(0));
        assert_eq!(count_of(None), Some(0));
    }
}
