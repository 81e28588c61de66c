//! The three lock algorithms, and what they share.
//!
//! Every strategy keeps one lock in one row of the lock table (the row key is the lock name)
//! and writes only its own cells there. What they share:
//!
//! - **Continuity.** A holder's belief rests on its own cell staying live at the store. Every
//!   write of that cell records when it was sent; the holder's deadline is that instant plus
//!   the TTL minus the drift margin, which is before the store can expire it. A step that
//!   relies on the cell (a win, a renewal) counts only if its reply arrived *before* the
//!   current deadline, so the cell cannot have expired, and been replaced by someone else's,
//!   in between. A plain re-write that arrives too late is treated as lost and deleted.
//! - **Fencing** (one counter cell per name, [`COUNTER_COLUMN`]): after winning, a holder bumps a per-name counter cell by
//!   compare-and-set. Counter updates are linearizable and only winners make them, so tokens
//!   strictly increase in the order leases are granted.
//! - **No decisions on clocks.** Expiry is the store's TTL; the only clock the kernel compares
//!   is the caller's monotonic one, against deadlines it computed itself.

pub mod bakery;
pub(crate) mod fence;
pub(crate) mod grant;
pub mod prefix;
pub mod unique;

use alloc::format;
use alloc::string::String;

use crate::model::ColumnFilter;
use crate::options::{LockOptions, Strategy};
use crate::owner::OwnerId;

/// Where a strategy keeps its cells within a lock's row: which columns are entries, and which
/// is the fencing counter. (Not the SQL table's layout, one row or two, which is
/// `baton_statements::sql::Layout`.)
///
/// With paths ([`LockOptions::paths`], `docs/modes-design.md`), the row is the path's root and
/// holds the whole tree: entries are `<entries><path>|<owner>`, and each path has a counter of
/// its own, `<counter>|<path>` (a path is never empty and never contains `|`, so no entry's
/// column starts with `<entries>|` and a counter is never taken for an entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowColumns {
    /// Columns that are lock entries start with this (unique insert: exactly `lock`).
    pub entries: String,
    /// The fencing counter's column (with paths: the lock's own path's counter).
    pub fence: String,
    pub strategy: Strategy,
    /// With paths: what the tree's counters start with (`<counter>|`).
    pub counters: Option<String>,
}

/// The separator between an entry's path and its owner, with paths.
pub(crate) const PATH_END: char = '|';

pub use crate::reserved::COUNTER_COLUMN;

impl RowColumns {
    /// The columns of a lock on `name`: [`RowColumns::of`], with its own counter when paths
    /// are on.
    pub fn at(opts: &LockOptions, name: &str) -> RowColumns {
        let mut columns = Self::of(opts);
        if opts.paths {
            let counters = format!("{}{PATH_END}", columns.fence);
            columns.fence = format!("{counters}{name}");
            columns.counters = Some(counters);
        }
        columns
    }

    /// The row a lock on `name` lives in: its root with paths, else the name.
    pub fn row_of<'a>(opts: &LockOptions, name: &'a str) -> &'a str {
        if opts.paths {
            name.split(crate::path::LockPath::SEPARATOR)
                .next()
                .unwrap_or(name)
        } else {
            name
        }
    }

    /// The columns of a row, as the listing reads them (no lock of its own: with paths, the
    /// counters of the tree, none of them ours).
    pub fn of(opts: &LockOptions) -> RowColumns {
        let mut columns = Self::flat(opts);
        if opts.paths {
            columns.counters = Some(format!("{}{PATH_END}", columns.fence));
        }
        columns
    }

    fn flat(opts: &LockOptions) -> RowColumns {
        match opts.strategy {
            Strategy::UniqueInsert => RowColumns {
                entries: String::from(unique::LOCK_COLUMN),
                fence: String::from(COUNTER_COLUMN),
                strategy: opts.strategy,
                counters: None,
            },
            Strategy::Bakery => RowColumns {
                entries: String::from(bakery::PREFIX),
                fence: String::from(COUNTER_COLUMN),
                strategy: opts.strategy,
                counters: None,
            },
            Strategy::ColumnPrefix => RowColumns {
                entries: opts.prefix.prefix.clone(),
                fence: opts.prefix.prefix.clone(),
                strategy: opts.strategy,
                counters: None,
            },
        }
    }

    /// The column this acquisition of `name` writes.
    pub fn my_column(&self, opts: &LockOptions, owner: &OwnerId, name: &str) -> String {
        let who = match (self.strategy, &opts.prefix.lock_id) {
            (Strategy::UniqueInsert, _) => return self.entries.clone(),
            (Strategy::ColumnPrefix, Some(id)) => id.clone(),
            _ => owner.key(),
        };
        if self.counters.is_some() {
            format!("{}{name}{PATH_END}{who}", self.entries)
        } else {
            format!("{}{who}", self.entries)
        }
    }

    /// With paths, the path an entry column is on (`None` for a column that names none: a flat
    /// lock's entry in the root's row, which conflicts with the whole tree). Without paths,
    /// `None` (every entry is on the row's one name).
    pub fn path_part<'a>(&self, column: &'a str) -> Option<&'a str> {
        self.counters.as_ref()?;
        let rest = column.get(self.entries.len()..)?;
        rest.split_once(PATH_END).map(|(path, _)| path)
    }

    /// With paths, the largest token among the counters in `cells` of the paths related to
    /// `path` other than itself (0 without paths, or when there are none): the floor of a
    /// grant's token.
    pub fn related_floor(&self, cells: &[crate::model::Cell], path: &str) -> u64 {
        let Ok(me) = crate::path::LockPath::new(path) else {
            return 0;
        };
        cells
            .iter()
            .filter_map(|c| {
                let q = self.counter_path(&c.column)?;
                let related =
                    q != path && crate::path::LockPath::new(q).is_ok_and(|q| q.is_related(&me));
                related.then(|| crate::record::Fence::decode(&c.value).map_or(0, |f| f.token))
            })
            .max()
            .unwrap_or(0)
    }

    /// With paths, the path a tree counter column counts for.
    pub fn counter_path<'a>(&self, column: &'a str) -> Option<&'a str> {
        column.strip_prefix(self.counters.as_deref()?)
    }

    /// Whether `column` is a lock entry (not the fence, not a data column).
    pub fn is_entry(&self, column: &str) -> bool {
        match self.strategy {
            Strategy::UniqueInsert => column == self.entries,
            // A reserved cell is never an entry, even for options that skipped validation (the
            // admin operations take them as given).
            _ => {
                column.len() > self.entries.len()
                    && column.starts_with(self.entries.as_str())
                    && !crate::reserved::is_reserved(column)
                    // A tree's counter (`<counter>|<path>`) is never an entry, for a flat lock
                    // on its root's name either: no owner key or lock id starts with `|`.
                    && !column[self.entries.len()..].starts_with(PATH_END)
                    && self
                        .counters
                        .as_deref()
                        .is_none_or(|counters| !column.starts_with(counters))
            }
        }
    }

    /// The owner part of an entry column.
    pub fn owner_part<'a>(&self, column: &'a str) -> &'a str {
        let rest = match self.strategy {
            Strategy::UniqueInsert => return "",
            _ => column.get(self.entries.len()..).unwrap_or(""),
        };
        match self.counters {
            Some(_) => rest.split_once(PATH_END).map_or(rest, |(_, owner)| owner),
            None => rest,
        }
    }

    /// The filter that reads entries and the fence together.
    pub fn filter(&self, whole_row: bool) -> ColumnFilter {
        match self.strategy {
            _ if whole_row => ColumnFilter::All,
            Strategy::ColumnPrefix => ColumnFilter::Prefix(self.entries.clone()),
            // Unique insert and bakery keep nothing but their own cells in the row.
            _ => ColumnFilter::All,
        }
    }
}
