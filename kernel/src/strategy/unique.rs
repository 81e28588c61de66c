//! **Unique insert** (seed 004, DBIx::Locker): one cell per lock, created only if absent.
//!
//! # Layout
//! Row = lock name. Column `lock` holds the owner record
//! (`owner=<id> ttl_ms=… cell_ttl_ms=… created_ms=…`) with a TTL; column `_LOCK_` holds the
//! fencing counter. Both are written only with conditional commands.
//!
//! # Algorithm
//! - Acquire: insert-if-absent `lock` = our record, TTL = lease TTL. Applied: bump the fencing
//!   counter, granted. Not applied: the reply names the holder; busy (try once) or back off and
//!   retry. An expired record is invisible to the store's insert-if-absent, which replaces it in
//!   the same atomic step (Cassandra: the TTL removed it; SQL: the insert takes over the row whose
//!   `expires_at` has passed). The kernel never deletes another owner's record, expired or not.
//! - Renew: compare-and-set `lock` from our record to our record, with a fresh TTL; then read the
//!   row at serial consistency (our record there and the counter as our grant left it; otherwise
//!   `Lost`).
//! - Release: read the row at serial consistency (our record there and the counter as our grant
//!   left it: `Ok`; otherwise `Lost`), then compare-and-set `lock` from our record to nothing.
//!
//! # Consistency needed
//! Linearizable conditional commands on one cell: Cassandra lightweight transactions at
//! SERIAL/LOCAL_SERIAL (commit at QUORUM), a unique key and single-statement upserts on SQL.
//!
//! # Safety
//! At any store instant at most one live `lock` cell exists, and insert-if-absent succeeds only
//! when there is none, so at most one acquisition's record is live at a time. A holder believes
//! in its lease only until *send time + TTL − margin*, earlier than the store can expire the
//! record (*apply time + TTL*), so while a holder believes, its record is the live one and no
//! insert can succeed. Renewal is conditional on the record still being ours, so it cannot
//! revive an expired lock. A timed-out insert is settled by a serial read: our record (unique per
//! acquisition, thanks to the nonce) is there or it is not.
//!
//! # Late delivery
//! Fault model: any command may be applied after the client heard a timeout, and after its
//! read-back (a statement queued in a pooler, a request in a coordinator's queue); a Paxos
//! proposal accepted by a minority may be completed by a later round, even after an
//! `Unavailable` answer. Why that cannot make a second holder:
//! - Every attempt inserts a value of its own (`att=N` in the record). A late insert of an earlier
//!   attempt is never taken for this attempt's win: it is recognised as ours and removed by
//!   compare-and-set, and the deadline counts from the first send of the value the lease rests on,
//!   which the store cannot have applied earlier.
//! - Renewal and release are compare-and-sets against that exact value, so a late one can only
//!   touch our own record, and a late renewal cannot revive an expired lock.
//! - Before taking a token without a current [`FenceHint`](crate::FenceHint), a grant reads the
//!   row back at serial consistency: our record must still be the lock's (a forced release may
//!   have removed it), and the counter it reads is then moved by compare-and-set; a counter moved
//!   by another owner after that read aborts the attempt.
//! - A late or duplicated copy of our own insert can put our record back after a forced release
//!   removed it (and after another client held the lock), so a compare-and-set finding our
//!   exact value does not prove the lock stayed ours. The counter does: every grant and every
//!   forced release moves it before anyone else can act on the lock, and it never returns to an
//!   earlier value. So a release reads it first, and says `Ok` only if it is still our grant's;
//!   and a renewal reads it after its compare-and-set, so the broken holder learns of a forced
//!   release at its next renewal in that case too.
//!
//! Timestamp discipline: none of its own (conditional commands are ordered by Paxos ballots on
//! Cassandra, by row locks on SQL). Clock assumption: the holder's monotonic clock and the
//! store's (each Cassandra node's) differ by less than the drift margin over one lease.
//!
//! # Crash
//! A crashed holder's record expires after the TTL; the next insert-if-absent takes over.
//!
//! # Cost
//! Uncontended acquire: 2 round trips (insert + counter) when the counter's value is known from a
//! [`FenceHint`](crate::FenceHint) (a locker keeps one per name); 3 without one (insert, serial
//! read of the row, counter); 4 when the hint is stale. Release: 2 (serial read, compare-and-set).
//! Renew: 2 (compare-and-set, serial read).

use alloc::string::String;

use crate::error::{Error, ErrorKind};
use crate::record::LockRecord;

/// The column holding the lock record.
pub const LOCK_COLUMN: &str = "lock";

/// The error for an insert that found `current` in the way.
pub(crate) fn busy(name: &str, current: Option<&str>) -> Error {
    let holder = current
        .and_then(|v| LockRecord::decode(v).ok())
        .map(|r| r.owner);
    match holder {
        Some(owner) => Error::new(
            ErrorKind::Busy,
            alloc::format!("lock {name:?} is held by {owner}"),
        )
        .with_holder(owner),
        None => Error::new(ErrorKind::Busy, alloc::format!("lock {name:?} is held")),
    }
}

/// Whether a record looks expired by the *client's* wall clock. Only the deliberately broken
/// variant used to test the simulator consults this; the real algorithm never does.
pub(crate) fn looks_expired(value: &str, wall_now_ms: u64) -> bool {
    LockRecord::decode(value).is_ok_and(|r| r.created_ms.saturating_add(r.ttl_ms) <= wall_now_ms)
}

/// The owner named by a record, or the raw value if it does not parse.
pub(crate) fn owner_of(value: &str) -> String {
    LockRecord::decode(value)
        .map(|r| r.owner)
        .unwrap_or_else(|_| String::from(value))
}
