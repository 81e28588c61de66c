//! What a held lease's operations share ([`super::Renew`], [`super::Release`]): the errors
//! that say a lease is lost, the commands that read and remove the owner's own cell, and each
//! operation's I/O retry state.

use alloc::format;
use alloc::string::String;

use super::io::Io;
use crate::error::{Error, ErrorKind};
use crate::lease::Lease;
use crate::model::{Cell, Command, ReadConsistency, Write};
use crate::options::{Sabotage, Strategy};
use crate::path::LockPath;
use crate::record::{counter_says_lost, Fence};
use crate::retry::SplitMix64;
use crate::strategy::RowColumns;

pub(super) fn lost(lease: &Lease, why: &str) -> Error {
    Error::new(
        ErrorKind::Lost,
        format!(
            "lease on lock {:?} (token {}) is lost: {why}",
            lease.data.name.as_str(),
            lease.data.token
        ),
    )
    .with_lock(lease.data.name.as_str())
}

/// A loss for `why`, naming `holder` (the owner found holding the lock since) when there is one.
pub(super) fn lost_to(lease: &Lease, why: &str, holder: Option<String>) -> Error {
    match holder {
        Some(h) => lost(lease, why).with_holder(h),
        None => lost(lease, why),
    }
}

/// `e`, naming the lease's lock if it does not name one yet.
pub(super) fn named(e: Error, lease: &Lease) -> Error {
    match e.lock() {
        Some(_) => e,
        None => e.with_lock(lease.data.name.as_str()),
    }
}

/// The owner a counter value names, unless it is a forced release's.
pub(super) fn counter_owner(value: &str) -> Option<String> {
    Fence::decode(value)
        .ok()
        .filter(|f| f.owner != crate::record::FORCED)
        .map(|f| f.owner)
}

pub(super) fn delete_mine(lease: &Lease) -> Command {
    match lease.data.opts.strategy {
        Strategy::UniqueInsert => Command::CompareAndSet {
            row: lease.data.row.clone(),
            column: lease.data.column.clone(),
            expected: lease.data.value.clone(),
            new: None,
            ttl: None,
            serial: lease.data.opts.serial,
            consistency: lease.data.opts.consistency,
        },
        // A batch of one delete, which is a plain delete of our cell, but says that it ends a
        // holding (see `host::may_free_a_lock`): waiters are woken by it, and not by the
        // deletes of acquisitions backing off.
        _ => Command::Batch {
            row: lease.data.row.clone(),
            writes: alloc::vec![Write::Delete {
                column: lease.data.column.clone(),
            }],
            consistency: lease.data.opts.consistency,
            after: 0,
        },
    }
}

/// A fencing counter found moved in a way that says the lease was lost (see [`moved_counter`]).
pub(super) struct Moved {
    /// The counter's value.
    pub value: String,
    /// Whether it is the lease's own counter (with paths, not a related path's).
    pub own: bool,
}

/// The counter in `cells` that says `lease` was lost, if one does: its own counter moved as
/// [`counter_says_lost`] reads it (any move for an exclusive lease; a forced release or an
/// exclusive grant for a shared or counted one); with paths, also a related path's counter
/// holding a later conflicting grant: a token above ours for an exclusive lease, an exclusive
/// token (`x=`) above ours for a shared or counted one (`docs/modes-design.md`, "Counters with
/// paths"). Under [`Sabotage::SharedTrustsCounter`] a shared lease trusts every counter.
pub(super) fn moved_counter(lease: &Lease, cells: &[Cell]) -> Option<Moved> {
    let data = &lease.data;
    let columns = RowColumns::at(&data.opts, data.name.as_str());
    let shared = !data.opts.mode.is_exclusive();
    if shared && data.opts.sabotage() == Sabotage::SharedTrustsCounter {
        return None;
    }
    if let Some(c) = cells.iter().find(|c| {
        c.column == columns.fence
            && counter_says_lost(shared, &data.fence_value, &c.value, &data.owner.key())
    }) {
        return Some(Moved {
            value: c.value.clone(),
            own: true,
        });
    }
    columns.counters.as_ref()?;
    let me = LockPath::new(data.name.as_str()).ok()?;
    cells
        .iter()
        .find(|c| {
            let Some(q) = columns.counter_path(&c.column) else {
                return false;
            };
            if c.column == columns.fence || !LockPath::new(q).is_ok_and(|q| q.is_related(&me)) {
                return false;
            }
            match Fence::decode(&c.value) {
                // A forced release there removed that path's entries, not ours: its value
                // carries the path's last exclusive token forward (`x=`).
                Ok(f) if shared || f.owner == crate::record::FORCED => {
                    f.last_exclusive() > data.token
                }
                Ok(f) => f.token > data.token,
                // Unreadable: lost, the safe reading.
                Err(_) => true,
            }
        })
        .map(|c| Moved {
            value: c.value.clone(),
            own: false,
        })
}

/// The read of a lease's entries and fencing counter that renewal and release check: serial for
/// unique insert (its cells are written by compare-and-set only), plain for the others.
pub(super) fn check_read(lease: &Lease) -> Command {
    let columns = RowColumns::at(&lease.data.opts, lease.data.name.as_str());
    let consistency = match lease.data.opts.strategy {
        Strategy::UniqueInsert => ReadConsistency::Serial(lease.data.opts.serial),
        _ => ReadConsistency::Plain(lease.data.opts.consistency),
    };
    Command::Read {
        row: lease.data.row.clone(),
        filter: columns.filter(false),
        consistency,
    }
}

/// The cells [`check_read`] reads.
pub(super) fn check_read_filter(lease: &Lease) -> crate::model::ColumnFilter {
    RowColumns::at(&lease.data.opts, lease.data.name.as_str()).filter(false)
}

pub(crate) fn io_for(lease: &Lease) -> (Io, SplitMix64) {
    (
        Io::new(lease.data.opts.store_attempts, lease.data.opts.retry),
        SplitMix64::new(lease.data.opts.seed ^ lease.data.token),
    )
}

/// Why a lease is lost, from the fencing counter value found.
pub(crate) fn granted_since(value: &str) -> String {
    match Fence::decode(value) {
        Ok(f) if f.owner == crate::record::FORCED => {
            format!("the lock was force-released (counter at token {})", f.token)
        }
        Ok(f) => format!(
            "the lock was granted to {} (token {}) since",
            f.owner, f.token
        ),
        Err(_) => format!("the fencing counter holds {value:?}"),
    }
}
