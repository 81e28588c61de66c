//! **Column prefix** (seed 001, Astyanax's `ColumnPrefixDistributedRowLock`).
//!
//! # Layout
//! Row = lock name (it may also be the caller's data row: data columns live beside the lock
//! columns). Lock columns are `<prefix><owner id>` (or `<prefix><lock id>` with
//! [`PrefixOptions::lock_id`](crate::PrefixOptions::lock_id)), valued with the owner record,
//! whose `ttl_ms` is the lease length (Astyanax's `expireLockAfter`) and whose `cell_ttl_ms` is
//! the cell's TTL (`withTtl`, at least the lease). The column named exactly `<prefix>` is the
//! fencing counter. Lock columns are written with plain writes only.
//!
//! # Algorithm
//! 1. Put our lock column.
//! 2. Read every `<prefix>` column (or the whole row, with `read_row`). A column whose age by the
//!    store's clock (`cell_ttl − remaining TTL`) reached its lease TTL is *stale*: its holder's
//!    deadline has passed. Exactly one live, non-stale lock column, ours, and the reply arrived
//!    before our deadline: we won; bump the counter; delete stale columns on the way (or fail with
//!    [`ErrorKind::StaleLock`](crate::ErrorKind::StaleLock) under `fail_on_stale_lock`). A stale
//!    column is deleted *by version* ([`Command::DeleteVersion`](crate::Command::DeleteVersion)
//!    with the stamp the read returned): if its owner wrote it again since (a new acquisition
//!    reusing the owner id, with `cell_ttl > ttl`), the newer version survives.
//!    Any other non-stale column: delete ours, then busy or back off and retry.
//! 3. Release: delete our column (or, with a mutation, write the data columns and delete ours in
//!    one batch: Astyanax's `releaseWithMutation`).
//!
//! # Consistency needed
//! QUORUM writes and reads (intersecting replica sets), increasing write timestamps per client;
//! SERIAL for the counter.
//!
//! # Safety
//! If A and B both won, each one's read missed the other's column. Each read started after its
//! own write completed, so whichever read started second started after both writes completed and
//! must have seen the other column, unless that column had expired or been deleted. Neither
//! happens while its owner holds: continuity keeps it live until the owner's deadline, the owner
//! deletes it only when leaving, and others delete only stale columns, whose owners' deadlines
//! have passed. Contenders that collide both back off (the cost of this strategy under
//! contention: it is for rarely contended locks, as Astyanax says).
//!
//! # Late delivery
//! Fault model: any put or delete may be applied after the client heard a timeout, up to a TTL
//! later, or twice; operators purge and break locks while clients run. Plain writes carry stamps
//! given when sent and apply only over older versions (see [`Command::stamped`](crate::Command::stamped)),
//! so a late delete or re-write of ours never removes or rolls back our live column. Others never
//! delete our column blindly: a stale column is deleted at the version read
//! ([`Command::DeleteVersion`](crate::Command::DeleteVersion)), so when its owner takes the same
//! column again before the delete lands (an owner id reused with `cell_ttl > ttl`), the new
//! version survives. Each attempt writes a value of its own (`att=N`), so an operator's removal
//! aimed at an earlier attempt never matches this one. A late put that recreates a deleted
//! column only adds a contender.
//!
//! Timestamp discipline: client-side stamps, increasing per process; `release_with` stamps its
//! data above the newest stamp its `read_row` read returned, so successive holders' data writes
//! apply in order whatever their clocks. Clock assumption: the holder's monotonic clock and the
//! store's differ by less than the drift margin over one lease; staleness is judged from the
//! store's remaining TTL, never a client's clock.
//!
//! # Crash
//! A crashed holder's column blocks others until it is stale (after the lease TTL) and is
//! removed by the next acquirer, or by the store when its cell TTL runs out.
//!
//! # Cost
//! Uncontended acquire: 3 round trips (write, read, counter), plus one delete per stale column
//! found. Release: 1 command ([`Command::Vacate`](crate::Command::Vacate): ours deleted and
//! the lock columns read as the delete found them, so the release can say whether the lease was
//! intact; one round trip on PostgreSQL, two on Cassandra and MariaDB); with data to write, 2
//! (the read, then the batch with the data). Renew: 2 (read the lock columns, re-write ours).

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use super::RowColumns;
use crate::model::Cell;
use crate::record::LockRecord;

/// How the columns of one read sort out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Classified {
    /// Our column is present.
    pub ours: bool,
    /// Other live, non-stale lock columns, each with its value.
    pub others: Vec<(String, String)>,
    /// Stale lock columns, each with the stamp of the version found (delete exactly that).
    pub stale: Vec<(String, u64)>,
    /// The fencing counter's value.
    pub fence: Option<String>,
    /// Cells outside the lock prefix.
    pub data: Vec<Cell>,
}

/// Whether a lock column is stale: older, by the store's clock, than its lease TTL.
pub(crate) fn is_stale(cell: &Cell) -> bool {
    let (Ok(record), Some(remaining)) = (LockRecord::decode(&cell.value), cell.ttl_remaining)
    else {
        // No record or no TTL: we cannot age it, so it is not stale (the safe reading).
        return false;
    };
    let age = Duration::from_millis(record.cell_ttl_ms).saturating_sub(remaining);
    age >= Duration::from_millis(record.ttl_ms)
}

pub(crate) fn classify(columns: &RowColumns, cells: Vec<Cell>, my_column: &str) -> Classified {
    let mut out = Classified::default();
    for cell in cells {
        if cell.column == columns.fence {
            out.fence = Some(cell.value);
        } else if columns.counter_path(&cell.column).is_some() {
            // Another path's counter in the tree's row: neither an entry nor the caller's data.
        } else if cell.column == my_column {
            out.ours = true;
        } else if columns.is_entry(&cell.column) {
            if is_stale(&cell) {
                out.stale.push((cell.column, cell.stamp));
            } else {
                out.others.push((cell.column, cell.value));
            }
        } else {
            out.data.push(cell);
        }
    }
    out
}
