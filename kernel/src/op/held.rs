//! What a held lease's operations share ([`super::Renew`], [`super::Release`]): the errors
//! that say a lease is lost, the commands that read and remove the owner's own cell, and each
//! operation's I/O retry state.

use alloc::format;
use alloc::string::String;

use super::io::Io;
use crate::error::{Error, ErrorKind};
use crate::lease::Lease;
use crate::model::{Command, ReadConsistency, Write};
use crate::options::Strategy;
use crate::record::Fence;
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

/// The read of a lease's entries and fencing counter that renewal and release check: serial for
/// unique insert (its cells are written by compare-and-set only), plain for the others.
pub(super) fn check_read(lease: &Lease) -> Command {
    let columns = RowColumns::of(&lease.data.opts);
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
    RowColumns::of(&lease.data.opts).filter(false)
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
