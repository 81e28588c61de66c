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
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowColumns {
    /// Columns that are lock entries start with this (unique insert: exactly `lock`).
    pub entries: String,
    /// The fencing counter's column.
    pub fence: String,
    pub strategy: Strategy,
}

pub use crate::reserved::COUNTER_COLUMN;

impl RowColumns {
    pub fn of(opts: &LockOptions) -> RowColumns {
        match opts.strategy {
            Strategy::UniqueInsert => RowColumns {
                entries: String::from(unique::LOCK_COLUMN),
                fence: String::from(COUNTER_COLUMN),
                strategy: opts.strategy,
            },
            Strategy::Bakery => RowColumns {
                entries: String::from(bakery::PREFIX),
                fence: String::from(COUNTER_COLUMN),
                strategy: opts.strategy,
            },
            Strategy::ColumnPrefix => RowColumns {
                entries: opts.prefix.prefix.clone(),
                fence: opts.prefix.prefix.clone(),
                strategy: opts.strategy,
            },
        }
    }

    /// The column this acquisition writes.
    pub fn my_column(&self, opts: &LockOptions, owner: &OwnerId) -> String {
        match self.strategy {
            Strategy::UniqueInsert => self.entries.clone(),
            Strategy::Bakery => format!("{}{}", self.entries, owner.key()),
            Strategy::ColumnPrefix => match &opts.prefix.lock_id {
                Some(id) => format!("{}{id}", self.entries),
                None => format!("{}{}", self.entries, owner.key()),
            },
        }
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
            }
        }
    }

    /// The owner part of an entry column.
    pub fn owner_part<'a>(&self, column: &'a str) -> &'a str {
        match self.strategy {
            Strategy::UniqueInsert => "",
            _ => &column[self.entries.len().min(column.len())..],
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
