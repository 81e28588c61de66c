//! **Unique insert** (seed 004, DBIx::Locker): one cell per lock, created only if absent.
//!
//! # Layout
//! Row = lock name. Column `lock` holds the owner record
//! (`owner=<id> ttl_ms=… cell_ttl_ms=… created_ms=…`) with a TTL; column `_LOCK_` holds the
//! fencing counter. Both are written only with conditional commands.
//!
//! # Algorithm
//! - Acquire: one *claim* ([`Command::Claim`](crate::Command::Claim)): insert-if-absent `lock`
//!   = our record (TTL = lease TTL) and compare-and-set the counter from the value last seen (a
//!   [`FenceHint`](crate::FenceHint), a failed claim's answer, or "no counter yet") to our token,
//!   both or neither. Applied: granted. Not applied, the lock free: the counter had moved, so claim
//!   again from the value the answer shows (once per attempt, at once). Not applied, the lock
//!   held: busy (try once), or back off and retry. A store that inserts the record alone (the
//!   claim allows it when the counter changed under it) is answered by moving the counter from
//!   the value the claim found, as a separate counter update. An expired record is invisible to
//!   the store's insert-if-absent, which replaces it in the same atomic step (Cassandra: the TTL
//!   removed it; SQL: the insert takes over the row whose `expires_at` has passed). The kernel
//!   never deletes another owner's record, expired or not.
//! - Renew: compare-and-set `lock` from our record to our record, with a fresh TTL; then read the
//!   row at serial consistency (our record there and the counter as our grant left it; otherwise
//!   `Lost`).
//! - Release: one guarded compare-and-set ([`Command::GuardedSet`](crate::Command::GuardedSet)):
//!   `lock` from our record to nothing, only while the counter is still at our grant. Not
//!   applied: `Lost` (the answer says why), and our record is removed alone if it is there.

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
//! - A claim moves the counter from an exact expected value, in the same step as the insert:
//!   a late or duplicated copy of a claim can apply only while the counter is still at that
//!   value, that is, while no one has been granted (nor force-released) the lock since the claim
//!   was built. So a late claim cannot put our record back after a forced release or another
//!   grant (`late_delivery.rs`: `a_late_claim_cannot_heal_a_force_released_lease`). A claim that
//!   timed out is settled by a serial read of the row: our record and our counter value there
//!   mean it applied; the lock free with the counter still expected means it did not (sent
//!   again); anything else is answered as a failed claim.
//! - Where a store inserted the record without moving the counter (the claim's allowed partial
//!   outcome; the simulator plays it as the weakest store, which inserts whatever the counter
//!   holds), the counter is moved from the value the claim found, after our record was in place,
//!   and a counter moved by another owner since aborts the attempt.
//! - The counter, not our record, tells a release whether the lock stayed ours: every grant and
//!   every forced release moves it before anyone else can act on the lock, and it never returns
//!   to an earlier value. So a release removes our record only while the counter is at our
//!   grant, in the same step, and says `Ok` only then; and a renewal reads it after its
//!   compare-and-set, so a holder learns of a forced release at its next renewal.
//!
//! Timestamp discipline: none of its own (conditional commands are ordered by Paxos ballots on
//! Cassandra, by row locks on SQL). Clock assumption: the holder's monotonic clock and the
//! store's (each Cassandra node's) differ by less than the drift margin over one lease.
//!
//! # Crash
//! A crashed holder's record expires after the TTL; the next insert-if-absent takes over.
//!
//! # Cost
//! Uncontended acquire: 1 round trip (the claim) when the counter is where the locker last saw
//! it, or on a name never locked; 2 when another locker moved it since (the first claim shows
//! its value). Release: 1 (the guarded compare-and-set). Renew: 2 (compare-and-set, serial
//! read). On Cassandra each is one lightweight transaction (a conditional batch in the lock's
//! partition for the claim and the release).

use alloc::string::String;

use crate::error::{Error, ErrorKind};
use crate::record::LockRecord;

pub use crate::reserved::{LOCK_COLUMN, TURN_COLUMN};

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
