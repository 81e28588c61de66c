//! **Bakery** (seed 000, QCassandraLock): Lamport's bakery algorithm over plain cells.
//!
//! # Layout
//! Row = lock name. One cell per contender, column `ticket/<owner id>`, holding either
//! `entering` (Lamport's `entering[i] = true`) or `ticket=<n>` (Lamport's `number[i] = n`), with a
//! TTL. Column `_LOCK_` holds the fencing counter (conditional commands only; the `ticket/` cells
//! are only ever written with plain writes).
//!
//! QCassandraLock keeps `entering` and `ticket` in two rows; baton keeps them as two states of
//! one cell per contender. That makes each contender's (entering, ticket) pair one register,
//! read atomically, which is Lamport's algorithm with its per-process variables read together:
//! it lets one row read check every contender at once (with two cells, reading them in one
//! non-atomic row read is unsafe: a reader could see the ticket cell before it was written and
//! the entering cell after it was cleared). It also saves two round trips. No host registry:
//! owner ids are unique by their nonce, and ties are broken by [`OwnerId::tie_break`](crate::OwnerId::tie_break).
//!
//! # Algorithm
//! 1. Put our cell = `entering`.
//! 2. Read the row; `n` = 1 + the largest ticket seen.
//! 3. Put our cell = `ticket=n`. Its reply must arrive before the `entering` write's deadline
//!    (continuity), otherwise we abandon: delete the cell and start again.
//! 4. Read the row. We are blocked by any other contender that is `entering`, or that holds a
//!    ticket `(m, id) < (n, our id)`. Not blocked (and our cell is there with `ticket=n`, and the
//!    reply arrived before our deadline): we won; bump the fencing counter. Blocked: wait with
//!    backoff (capped by `RetryPolicy::queue_poll`, 100 ms by default: a waiter only reads, and
//!    the lock reaches it no sooner than its next read) and read again, re-writing our ticket
//!    (same value, fresh TTL) before it can expire.
//! 5. Release: delete our cell.
//!
//! # Consistency needed
//! Plain writes and reads at QUORUM (or LOCAL_QUORUM within one data centre, ALL, or any pair
//! of levels whose replica sets intersect), so that a write that completed is seen by every read
//! that starts later. Writes carry increasing timestamps from one client (a client's later delete
//! of its own cell must win over its earlier puts). The counter needs SERIAL.
//!
//! # Safety
//! Suppose A and B both hold, A with `(a, A) < (b, B)`. B's winning read (step 4) did not see A as
//! entering nor A's ticket. A's cell was continuously live from its `entering` write until A's
//! deadline (continuity), so B's read found it either `entering` (B blocked: contradiction) or
//! `ticket=a` (B blocked: contradiction), unless B's read completed before A's first write did.
//! Then A's step-2 read started after B's ticket write completed, saw `ticket=b`, and A chose
//! `a > b`: contradiction with `(a, A) < (b, B)`. A waiter's ticket re-writes keep it live only
//! if each re-write answered before the previous deadline; otherwise the waiter starts over with
//! a new ticket, since a gap might have let a larger ticket in.
//!
//! # Late delivery
//! Fault model: any put or delete may be applied after the client heard a timeout, up to a TTL
//! later, or twice. Every plain write carries a stamp given when it was sent (increasing within
//! the process, and only the owner writes its cell), and stores apply a put only over an older
//! version and a delete only over one at most as new (Cassandra's client timestamps; SQL's
//! `stamp` column). So a late `entering`, ticket or delete of ours never overwrites or removes a
//! newer state of our cell; the proof's "continuously live from its `entering` write until the
//! deadline" holds. A late write that finds our cell gone recreates it: that only adds a
//! contender, which blocks others until its TTL ends and never lets anyone pass.
//!
//! A forced release reads the row, counts itself in the fencing counter, then deletes the cells
//! at the versions it read, then counts itself again; it may die at any point. A waiter whose
//! cell it deleted may recreate it with a late write of its own (a ticket, a refresh), in a queue
//! that others entered meanwhile without seeing it. So each attempt takes, before its `entering`
//! write, a count of forced releases known to have happened (a fence hint, or any earlier read;
//! 0 at worst): a forced release that can delete this attempt's cell read it first, so it counted
//! itself after that count was taken. A read of the queue that shows a different count (more
//! forced releases; or fewer, from a reset counter or a stale hint, which tells nothing) starts the attempt over (before a ticket is chosen: write `entering` again, a version no
//! earlier forced release can delete). Counting from the first read of the queue instead, as a
//! first version did, misses a forced release that counted itself before that read and deleted
//! the cell after it (`Sabotage::ForcedCountAfterEntering`).
//!
//! Timestamp discipline: client-side stamps, increasing per process. Clock assumption: the
//! holder's monotonic clock and the store's (each replica's) differ by less than the drift margin
//! over one lease; wall clocks need not agree.
//!
//! # Crash
//! A crashed contender's cell expires after the TTL, and the queue moves on. A waiter paused past
//! its TTL loses its place and takes a new ticket.
//!
//! # Cost
//! Uncontended acquire: 5 round trips (entering, read, ticket, read, counter). Release: 1
//! command ([`Command::Vacate`](crate::Command::Vacate): our cell deleted, and the row read as
//! the delete found it, so the release can say whether the lease was intact): one round trip
//! on PostgreSQL, two (a read, then the delete) on Cassandra and MariaDB. Renew: 2 (read the
//! row, re-write our cell). FIFO-fair: tickets are served in order. Every poll of the
//! queue counts as a try against `RetryPolicy::max_attempts`.

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::error::Result;
use crate::mode::Mode;
use crate::model::Cell;
use crate::options::Sabotage;
use crate::owner::OwnerId;
use crate::path::LockPath;
use crate::record::{decode_bakery, entry_mode, BakeryState};
use crate::strategy::grant::{self, Place, Seen};
use crate::strategy::RowColumns;

/// Column prefix of contender cells.
pub const PREFIX: &str = "ticket/";

/// A contender found in a row read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Contender {
    pub column: alloc::string::String,
    pub owner: Option<OwnerId>,
    pub state: BakeryState,
    /// Its mode (`None`: a token this version does not know, taken as exclusive).
    pub mode: Option<Mode>,
    /// With paths, the path it is on (`None`: a column naming no valid path, which conflicts
    /// with the whole tree). Without paths, `None` and unused: every contender is on the row's
    /// one name.
    pub path: Option<LockPath>,
}

/// The contenders in `cells` (cells that do not parse are reported as `entering`, which blocks:
/// the safe reading of a value we do not understand), laid out as `columns` says.
pub(crate) fn contenders(cells: &[Cell], columns: &RowColumns) -> Vec<Contender> {
    cells
        .iter()
        .filter(|c| c.column.len() > PREFIX.len() && c.column.starts_with(PREFIX))
        .map(|c| Contender {
            column: c.column.clone(),
            owner: OwnerId::parse(columns.owner_part(&c.column)).ok(),
            state: decode_bakery(&c.value)
                .map(|(s, _)| s)
                .unwrap_or(BakeryState::Entering),
            mode: entry_mode(&c.value),
            path: columns
                .path_part(&c.column)
                .and_then(|p| LockPath::new(p).ok()),
        })
        .collect()
}

/// The largest ticket among `cells`.
pub(crate) fn max_ticket(cells: &[Cell], columns: &RowColumns) -> u64 {
    contenders(cells, columns)
        .iter()
        .filter_map(|c| match c.state {
            BakeryState::Ticket(n) => Some(n),
            BakeryState::Entering => None,
        })
        .max()
        .unwrap_or(0)
}

/// Whether `other` goes before us in the queue.
fn precedes(other: &Contender, ticket: u64, me: &OwnerId) -> bool {
    match (other.state, &other.owner) {
        (BakeryState::Ticket(m), Some(id)) => (m, id.tie_break(me)) < (ticket, Ordering::Equal),
        // An unparseable owner with a ticket: compare by ticket alone, ties block.
        (BakeryState::Ticket(m), None) => m <= ticket,
        (BakeryState::Entering, _) => false,
    }
}

/// The columns of the contenders that block us: `me` holding `ticket` in `my_column`, asking
/// for `mode` on `path` (every contender of a flat name's row is on that name; with paths, each
/// is on the path its column names, see [`RowColumns`]). Entering and
/// earlier contenders block as [`grant::blockers`] says: every one of them for an exclusive
/// request (today's rule), only exclusive ones for a shared one, and a full semaphore's.
/// `broken`: a deliberately broken variant the simulator must catch (not waiting for
/// entering contenders, [`Sabotage::BakeryIgnoresEntering`], or the grant rule's). An
/// [`ErrorKind::InvalidOption`](crate::ErrorKind::InvalidOption) error on a mode mix-up.
pub(crate) fn blockers(
    cells: &[Cell],
    (columns, my_column): (&RowColumns, &str),
    me: &OwnerId,
    (ticket, mode, path): (u64, Mode, &LockPath),
    broken: Sabotage,
) -> Result<Vec<alloc::string::String>> {
    let ignore_entering = broken == Sabotage::BakeryIgnoresEntering;
    let others: Vec<Contender> = contenders(cells, columns)
        .into_iter()
        .filter(|c| c.column != my_column)
        .filter(|c| !(ignore_entering && c.state == BakeryState::Entering))
        .collect();
    let tree = columns.counters.is_some();
    let seen: Vec<Seen<'_>> = others
        .iter()
        .map(|c| Seen {
            path: if tree { c.path.as_ref() } else { Some(path) },
            mode: c.mode,
            place: if c.state == BakeryState::Entering {
                Place::Entering
            } else if precedes(c, ticket, me) {
                Place::Before
            } else {
                Place::After
            },
        })
        .collect();
    Ok(grant::blockers(path, mode, &seen, broken)?
        .into_iter()
        .map(|i| others[i].column.clone())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec;

    fn cell(owner: &OwnerId, value: &str) -> Cell {
        Cell {
            column: format!("{PREFIX}{}", owner.key()),
            value: value.into(),
            ttl_remaining: None,
            stamp: 0,
        }
    }

    #[test]
    fn smaller_tickets_and_entering_block_ties_go_by_owner() {
        let a = OwnerId::new("a", 1, 1).expect("valid");
        let b = OwnerId::new("b", 1, 1).expect("valid");
        let col_b = format!("{PREFIX}{}", b.key());
        let name = LockPath::flat(crate::LockName::new("jobs").expect("valid"));
        let cells = vec![
            cell(&a, "ticket=3 created_ms=0"),
            cell(&b, "ticket=3 created_ms=0"),
        ];
        let x = |ticket| (ticket, Mode::Exclusive, &name);
        let flat = RowColumns::of(&crate::LockOptions {
            strategy: crate::Strategy::Bakery,
            ..crate::LockOptions::default()
        });
        assert_eq!(
            blockers(&cells, (&flat, &col_b), &b, x(3), Sabotage::None),
            Ok(vec![format!("{PREFIX}{}", a.key())])
        );
        let col_a = format!("{PREFIX}{}", a.key());
        assert_eq!(
            blockers(&cells, (&flat, &col_a), &a, x(3), Sabotage::None),
            Ok(Vec::<String>::new())
        );
        let cells = vec![
            cell(&a, "entering created_ms=0"),
            cell(&b, "ticket=1 created_ms=0"),
        ];
        assert_eq!(
            blockers(&cells, (&flat, &col_b), &b, x(1), Sabotage::None).map(|v| v.len()),
            Ok(1)
        );
        assert_eq!(
            blockers(
                &cells,
                (&flat, &col_b),
                &b,
                x(1),
                Sabotage::BakeryIgnoresEntering
            )
            .map(|v| v.len()),
            Ok(0)
        );
        assert_eq!(max_ticket(&cells, &flat), 1);
    }
}
