//! The reference implementation of the storage model.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use super::command::{Cell, ColumnFilter, Command, ObjectGuard, Reply, Turn, Write};
use crate::reserved::TURN_COLUMN;
use crate::time::Instant;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    value: String,
    expires_at: Option<Instant>,
    stamp: u64,
}

impl Entry {
    fn is_live(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|e| now < e)
    }
}

/// An in-memory lock table that applies [`Command`]s at a given instant of the store's clock.
///
/// It is the definition of the storage model: single-copy and linearizable, so every
/// consistency level is trivially met. Expired cells stay in the table, invisible to reads and
/// replaced by writes, until a [`Command::Purge`] removes them, as on the SQL stores. Plain
/// writes apply only over older versions ([`Command::stamped`]); a delete removes the cell
/// (no tombstone is kept, as on SQL), so a late put may recreate a deleted cell.
///
/// Costs: every command is `O(log n)` in the number of cells plus the size of its answer.
#[derive(Clone, Debug, Default)]
pub struct MemoryTable {
    cells: BTreeMap<(String, String), Entry>,
    /// The last stamp [`MemoryTable::apply`] gave a command.
    last_stamp: u64,
}

impl MemoryTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies `command` at store time `now` and returns the reply. Never fails. Commands are
    /// stamped in the order they arrive, which is the order they were sent when, as in one
    /// process, a command is applied as soon as it is sent.
    pub fn apply(&mut self, command: &Command, now: Instant) -> Reply {
        self.last_stamp += 1;
        self.apply_stamped(command, now, self.last_stamp)
    }

    /// Applies `command` at store time `now` with the stamp its executor gave it when it was
    /// sent (a simulated client's clock, say), for executors that can deliver commands late.
    pub fn apply_stamped(&mut self, command: &Command, now: Instant, stamp: u64) -> Reply {
        self.last_stamp = self.last_stamp.max(stamp);
        match command {
            Command::Read { row, filter, .. } => Reply::Cells(self.read(row, filter, now)),
            Command::Put {
                row,
                column,
                value,
                ttl,
                ..
            } => {
                self.put_over_older(row, column, value, *ttl, now, stamp);
                Reply::Written
            }
            Command::Delete { row, column, .. } => {
                self.delete_up_to(row, column, stamp);
                Reply::Written
            }
            Command::Vacate {
                row, column, read, ..
            } => {
                let before = self.read(row, read, now);
                self.delete_up_to(row, column, stamp);
                Reply::Cells(before)
            }
            Command::DeleteVersion {
                row,
                column,
                stamp: version,
                ..
            } => {
                self.delete_up_to(row, column, *version);
                Reply::Written
            }
            Command::InsertIfAbsent {
                row,
                column,
                value,
                ttl,
                ..
            } => match self.live(row, column, now) {
                Some(current) => Reply::Conditional {
                    applied: false,
                    current: Some(current.value.clone()),
                },
                None => {
                    self.put(row, column, value, *ttl, now, stamp);
                    Reply::Conditional {
                        applied: true,
                        current: None,
                    }
                }
            },
            Command::CompareAndSet {
                row,
                column,
                expected,
                new,
                ttl,
                ..
            } => {
                let current = self.live(row, column, now).map(|e| e.value.clone());
                if current.as_deref() != Some(expected.as_str()) {
                    return Reply::Conditional {
                        applied: false,
                        current,
                    };
                }
                match new {
                    Some(value) => self.put(row, column, value, *ttl, now, stamp),
                    None => {
                        self.cells.remove(&(row.clone(), column.clone()));
                    }
                }
                Reply::Conditional {
                    applied: true,
                    current: None,
                }
            }
            Command::Claim {
                row,
                column,
                value,
                ttl,
                counter,
                counter_expected,
                counter_next,
                turn,
                ..
            } => {
                let current = self.live(row, column, now).map(|e| e.value.clone());
                let guard = self.live(row, counter, now).map(|e| e.value.clone());
                let found = self.live(row, TURN_COLUMN, now).map(|e| e.value.as_str());
                let turn_holds = match turn {
                    None => true,
                    Some(Turn::Free) => found.is_none(),
                    Some(Turn::Ours(ours)) => found == Some(ours.as_str()),
                };
                if current.is_some() || guard != *counter_expected || !turn_holds {
                    return Reply::Guarded {
                        applied: false,
                        current,
                        guard,
                    };
                }
                if matches!(turn, Some(Turn::Ours(_))) {
                    self.cells.remove(&(row.clone(), TURN_COLUMN.into()));
                }
                self.put(row, column, value, *ttl, now, stamp);
                self.put(row, counter, counter_next, None, now, stamp);
                Reply::Guarded {
                    applied: true,
                    current: Some(value.clone()),
                    guard: Some(counter_next.clone()),
                }
            }
            Command::GuardedSet {
                row,
                column,
                expected,
                new,
                ttl,
                guard,
                guard_value,
                ..
            } => {
                let current = self.live(row, column, now).map(|e| e.value.clone());
                let found = self.live(row, guard, now).map(|e| e.value.clone());
                if current.as_deref() != Some(expected.as_str())
                    || found.as_deref() != Some(guard_value.as_str())
                {
                    return Reply::Guarded {
                        applied: false,
                        current,
                        guard: found,
                    };
                }
                match new {
                    Some(value) => self.put(row, column, value, *ttl, now, stamp),
                    None => {
                        self.cells.remove(&(row.clone(), column.clone()));
                    }
                }
                Reply::Guarded {
                    applied: true,
                    current: new.clone(),
                    guard: found,
                }
            }
            Command::SetObject {
                row,
                column,
                expected,
                value,
                guard,
                ..
            } => {
                let current = self.live(row, column, now).map(|e| e.value.clone());
                let (lock, counter, guard_holds) = match guard {
                    ObjectGuard::Held {
                        column: lock_column,
                        value: lock_value,
                        counter,
                        counter_value,
                    } => {
                        let lock = self.live(row, lock_column, now).map(|e| e.value.clone());
                        let found = self.live(row, counter, now).map(|e| e.value.clone());
                        let holds = lock.as_deref() == Some(lock_value.as_str())
                            && found.as_deref() == Some(counter_value.as_str());
                        (lock, found, holds)
                    }
                    ObjectGuard::Free {
                        column: lock_column,
                    } => {
                        let lock = self.live(row, lock_column, now).map(|e| e.value.clone());
                        let free = lock.is_none();
                        (lock, None, free)
                    }
                };
                let object_ok = match (expected, &current) {
                    (None, None) => true,
                    (Some(prefix), Some(v)) => v.starts_with(prefix.as_str()),
                    _ => false,
                };
                if !(object_ok && guard_holds) {
                    return Reply::Object {
                        applied: false,
                        current,
                        lock,
                        counter,
                    };
                }
                self.put(row, column, value, None, now, stamp);
                Reply::Object {
                    applied: true,
                    current: Some(value.clone()),
                    lock,
                    counter,
                }
            }
            Command::Batch {
                row, writes, after, ..
            } => {
                let stamp = stamp.max(after.saturating_add(1));
                self.last_stamp = self.last_stamp.max(stamp);
                for write in writes {
                    match write {
                        Write::Put { column, value, ttl } => {
                            self.put_over_older(row, column, value, *ttl, now, stamp)
                        }
                        Write::Delete { column } => self.delete_up_to(row, column, stamp),
                    }
                }
                Reply::Written
            }
            Command::Purge { row } => Reply::Purged(self.purge(row.as_deref(), now)),
            Command::Scan { after, limit, .. } => {
                let rows = self
                    .live_rows(now)
                    .into_iter()
                    .filter(|r| after.as_ref().is_none_or(|a| r > a))
                    .take(usize::try_from(*limit).unwrap_or(usize::MAX).max(1))
                    .map(|r| {
                        let cells = self.read(&r, &ColumnFilter::All, now);
                        (r, cells)
                    })
                    .collect();
                Reply::Rows(rows)
            }
        }
    }

    /// The live cells of `row` passing `filter` at `now`, sorted by column.
    pub fn read(&self, row: &str, filter: &ColumnFilter, now: Instant) -> Vec<Cell> {
        self.row_entries(row)
            .filter(|((_, column), entry)| filter.matches(column) && entry.is_live(now))
            .map(|((_, column), entry)| Cell {
                column: column.clone(),
                value: entry.value.clone(),
                ttl_remaining: entry.expires_at.map(|e| e.saturating_duration_since(now)),
                stamp: entry.stamp,
            })
            .collect()
    }

    /// Every row that has at least one live cell at `now`, sorted.
    pub fn live_rows(&self, now: Instant) -> Vec<String> {
        let mut rows: Vec<String> = Vec::new();
        for ((row, _), entry) in &self.cells {
            if entry.is_live(now) && rows.last() != Some(row) {
                rows.push(row.clone());
            }
        }
        rows
    }

    /// The number of cells stored, live or expired (for tests of purging).
    pub fn stored_cells(&self) -> usize {
        self.cells.len()
    }

    /// The earliest instant after `now` at which some cell expires, if any (lets a driver
    /// wake waiters when a lock times out rather than only when it is released).
    pub fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.cells
            .values()
            .filter_map(|e| e.expires_at)
            .filter(|e| *e > now)
            .min()
    }

    fn row_entries<'a>(
        &'a self,
        row: &str,
    ) -> impl Iterator<Item = (&'a (String, String), &'a Entry)> + 'a {
        let start = (String::from(row), String::new());
        let row = String::from(row);
        self.cells
            .range(start..)
            .take_while(move |((r, _), _)| *r == row)
    }

    fn live(&self, row: &str, column: &str, now: Instant) -> Option<&Entry> {
        self.cells
            .get(&(String::from(row), String::from(column)))
            .filter(|e| e.is_live(now))
    }

    fn put(
        &mut self,
        row: &str,
        column: &str,
        value: &str,
        ttl: Option<Duration>,
        now: Instant,
        stamp: u64,
    ) {
        let entry = Entry {
            value: String::from(value),
            expires_at: ttl.map(|t| now.saturating_add(t)),
            stamp,
        };
        self.cells
            .insert((String::from(row), String::from(column)), entry);
    }

    /// A plain put: applied only over an older version (or no cell at all).
    fn put_over_older(
        &mut self,
        row: &str,
        column: &str,
        value: &str,
        ttl: Option<Duration>,
        now: Instant,
        stamp: u64,
    ) {
        let key = (String::from(row), String::from(column));
        if self.cells.get(&key).is_none_or(|e| e.stamp < stamp) {
            self.put(row, column, value, ttl, now, stamp);
        }
    }

    /// A plain delete: removes the cell if its version is at most `stamp`.
    fn delete_up_to(&mut self, row: &str, column: &str, stamp: u64) {
        let key = (String::from(row), String::from(column));
        if self.cells.get(&key).is_some_and(|e| e.stamp <= stamp) {
            self.cells.remove(&key);
        }
    }

    fn purge(&mut self, row: Option<&str>, now: Instant) -> Vec<(String, String)> {
        let expired: Vec<(String, String)> = self
            .cells
            .iter()
            .filter(|((r, _), e)| row.is_none_or(|want| want == r) && !e.is_live(now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &expired {
            self.cells.remove(key);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Consistency, ReadConsistency, SerialConsistency};
    use alloc::string::ToString;
    use alloc::vec;

    fn t(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }
    fn put(col: &str, val: &str, ttl_ms: Option<u64>) -> Command {
        Command::Put {
            row: "r".into(),
            column: col.into(),
            value: val.into(),
            ttl: ttl_ms.map(Duration::from_millis),
            consistency: Consistency::Quorum,
        }
    }
    fn read(filter: ColumnFilter) -> Command {
        Command::Read {
            row: "r".into(),
            filter,
            consistency: ReadConsistency::Plain(Consistency::Quorum),
        }
    }
    fn iia(val: &str) -> Command {
        Command::InsertIfAbsent {
            row: "r".into(),
            column: "c".into(),
            value: val.into(),
            ttl: Some(Duration::from_millis(10)),
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        }
    }
    fn cas(expected: &str, new: Option<&str>) -> Command {
        Command::CompareAndSet {
            row: "r".into(),
            column: "c".into(),
            expected: expected.into(),
            new: new.map(|s| s.to_string()),
            ttl: Some(Duration::from_millis(10)),
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        }
    }

    #[test]
    fn ttl_expires_by_store_time_and_purge_removes() {
        let mut m = MemoryTable::new();
        m.apply(&put("a", "1", Some(10)), t(0));
        m.apply(&put("b", "2", None), t(0));
        let cells = m.read("r", &ColumnFilter::All, t(9));
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].ttl_remaining, Some(Duration::from_millis(1)));
        assert_eq!(m.read("r", &ColumnFilter::All, t(10)).len(), 1);
        assert_eq!(m.stored_cells(), 2);
        assert_eq!(
            m.apply(&Command::Purge { row: None }, t(10)),
            Reply::Purged(vec![("r".into(), "a".into())])
        );
        assert_eq!(m.stored_cells(), 1);
    }

    #[test]
    fn prefix_and_exact_filters() {
        let mut m = MemoryTable::new();
        for c in ["l_1", "l_2", "data", "l"] {
            m.apply(&put(c, "v", None), t(0));
        }
        let cols = |f| match m.clone().apply(&read(f), t(0)) {
            Reply::Cells(c) => c.into_iter().map(|c| c.column).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(cols(ColumnFilter::Prefix("l_".into())), vec!["l_1", "l_2"]);
        assert_eq!(cols(ColumnFilter::Exact("data".into())), vec!["data"]);
        assert_eq!(cols(ColumnFilter::All).len(), 4);
    }

    #[test]
    fn insert_if_absent_replaces_only_expired_cells() {
        let mut m = MemoryTable::new();
        assert_eq!(
            m.apply(&iia("x"), t(0)),
            Reply::Conditional {
                applied: true,
                current: None
            }
        );
        assert_eq!(
            m.apply(&iia("y"), t(5)),
            Reply::Conditional {
                applied: false,
                current: Some("x".into())
            }
        );
        assert_eq!(
            m.apply(&iia("y"), t(10)),
            Reply::Conditional {
                applied: true,
                current: None
            }
        );
    }

    #[test]
    fn compare_and_set_checks_the_live_value() {
        let mut m = MemoryTable::new();
        m.apply(&iia("x"), t(0));
        assert_eq!(
            m.apply(&cas("z", Some("y")), t(1)),
            Reply::Conditional {
                applied: false,
                current: Some("x".into())
            }
        );
        assert_eq!(
            m.apply(&cas("x", Some("y")), t(1)),
            Reply::Conditional {
                applied: true,
                current: None
            }
        );
        // The TTL restarts at the write.
        assert_eq!(m.read("r", &ColumnFilter::All, t(10)).len(), 1);
        assert_eq!(
            m.apply(&cas("y", None), t(12)),
            Reply::Conditional {
                applied: false,
                current: None
            }
        );
        m.apply(&iia("w"), t(12));
        assert_eq!(
            m.apply(&cas("w", None), t(13)),
            Reply::Conditional {
                applied: true,
                current: None
            }
        );
        assert_eq!(m.stored_cells(), 0);
    }

    #[test]
    fn plain_writes_apply_by_stamp_not_by_arrival() {
        let mut m = MemoryTable::new();
        let del = |stamp: u64| Command::DeleteVersion {
            row: "r".into(),
            column: "c".into(),
            stamp,
            consistency: Consistency::Quorum,
        };
        let delete = Command::Delete {
            row: "r".into(),
            column: "c".into(),
            consistency: Consistency::Quorum,
        };
        m.apply_stamped(&put("c", "new", None), t(0), 20);
        // A put and a delete sent earlier (smaller stamps) arrive late: no effect.
        m.apply_stamped(&put("c", "old", None), t(1), 10);
        m.apply_stamped(&delete, t(1), 15);
        let cells = m.read("r", &ColumnFilter::All, t(2));
        assert_eq!(
            (cells[0].value.as_str(), cells[0].stamp),
            ("new", 20),
            "{cells:?}"
        );
        // Deleting an older version leaves the newer one; the version read is removed.
        m.apply(&del(19), t(3));
        assert_eq!(m.read("r", &ColumnFilter::All, t(3)).len(), 1);
        m.apply(&del(20), t(3));
        assert!(m.read("r", &ColumnFilter::All, t(3)).is_empty());
        // Without a tombstone, a late put recreates a deleted cell (it only adds a contender).
        m.apply_stamped(&put("c", "old", None), t(4), 10);
        assert_eq!(m.read("r", &ColumnFilter::All, t(4)).len(), 1);
        // `apply` stamps in arrival order, after every stamp seen.
        m.apply(&put("c", "next", None), t(5));
        assert!(m.read("r", &ColumnFilter::All, t(5))[0].stamp > 20);
    }

    #[test]
    fn live_rows_and_next_expiry() {
        let mut m = MemoryTable::new();
        m.apply(&put("a", "1", Some(10)), t(0));
        m.apply(
            &Command::Put {
                row: "s".into(),
                column: "a".into(),
                value: "1".into(),
                ttl: Some(Duration::from_millis(20)),
                consistency: Consistency::One,
            },
            t(0),
        );
        assert_eq!(m.live_rows(t(5)), vec!["r".to_string(), "s".to_string()]);
        assert_eq!(m.live_rows(t(15)), vec!["s".to_string()]);
        assert_eq!(m.next_expiry(t(5)), Some(t(10)));
        assert_eq!(m.next_expiry(t(10)), Some(t(20)));
    }
}
