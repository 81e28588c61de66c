//! Leases: what a grant gives the holder, and what renewal and release need.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use crate::model::Cell;
use crate::name::LockName;
use crate::options::{LockOptions, Strategy};
use crate::owner::OwnerId;
use crate::time::Instant;

/// A granted lock: name, owner, fencing token and deadline.
///
/// The holder may act as the lock's owner only while [`Lease::is_valid_at`] holds for its own
/// monotonic clock. The deadline is the instant the acquiring command was sent, plus the TTL,
/// minus the drift margin; the store keeps the lock cell alive at least until the command was
/// applied plus the TTL, which is later. Renewal moves the deadline the same way.
///
/// Cheap to clone: the holder, its view and the machine share one copy (a reference count);
/// a renewal that moves the deadline copies it first if it is shared.
#[derive(Clone, PartialEq, Eq)]
pub struct Lease {
    pub(crate) data: Arc<LeaseData>,
}

/// What a [`Lease`] holds, shared by its clones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaseData {
    pub(crate) name: LockName,
    pub(crate) owner: OwnerId,
    pub(crate) token: u64,
    pub(crate) deadline: Instant,
    pub(crate) opts: LockOptions,
    /// The row and column of our cell, and the exact value we wrote (compare-and-set needs it).
    pub(crate) row: String,
    pub(crate) column: String,
    pub(crate) value: String,
    /// The fencing counter's value as the grant wrote it.
    pub(crate) fence_value: String,
    /// The grant moved the counter from a forced release's value: that forced release, counted
    /// in `fence_value`, may have read our lock cell before the grant and removed it after, so
    /// our cell found gone is never taken for our own removal (see `Release`).
    pub(crate) after_forced: bool,
    /// The newest stamp among the cells the winning read returned: a release with a mutation
    /// stamps its writes above it.
    pub(crate) newest_stamp: u64,
    /// How many of the locker's next acquisitions of the name owe a courtesy (see
    /// [`Lease::fence_hint`]): after an acquisition that had to wait for someone else (more
    /// than one attempt, or a place in the bakery's queue), [`COURTESIES`] when the store woke
    /// it meanwhile and 1 when it did not; one fewer than its own hint's when it won at once
    /// after a courtesy; none when it owed none.
    pub(crate) courtesies: u8,
    /// How long the acquisition's last command took to be answered.
    pub(crate) round_trip: Duration,
}

impl Lease {
    pub(crate) fn new(data: LeaseData) -> Self {
        Lease {
            data: Arc::new(data),
        }
    }

    /// The same lease with its deadline moved (a renewal); copies the data if it is shared.
    pub(crate) fn with_deadline(mut self, deadline: Instant) -> Self {
        Arc::make_mut(&mut self.data).deadline = deadline;
        self
    }
}

/// Shown as the struct it was before its data was shared: `Lease { name: …, … }`.
impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &*self.data;
        f.debug_struct("Lease")
            .field("name", &d.name)
            .field("owner", &d.owner)
            .field("token", &d.token)
            .field("deadline", &d.deadline)
            .field("opts", &d.opts)
            .field("row", &d.row)
            .field("column", &d.column)
            .field("value", &d.value)
            .field("fence_value", &d.fence_value)
            .field("after_forced", &d.after_forced)
            .field("newest_stamp", &d.newest_stamp)
            .field("courtesies", &d.courtesies)
            .field("round_trip", &d.round_trip)
            .finish()
    }
}

impl Lease {
    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.data.name
    }

    /// Who holds it (this acquisition).
    pub fn owner(&self) -> &OwnerId {
        &self.data.owner
    }

    /// The fencing token: strictly larger than every token granted before for this name, on
    /// every strategy and store. Show it to the protected resource so it can refuse a stale
    /// holder. A shared or counted lease's token is larger than every earlier exclusive
    /// grant's, and distinct from its co-holders' (see `docs/modes-design.md`).
    pub fn token(&self) -> u64 {
        self.data.token
    }

    /// The mode this lease holds the lock in.
    pub fn mode(&self) -> crate::Mode {
        self.data.opts.mode
    }

    /// The instant (caller's monotonic clock) after which the holder must stop acting as owner.
    pub fn deadline(&self) -> Instant {
        self.data.deadline
    }

    /// When a keep-alive should renew: once a third of the validity has passed, at
    /// `deadline - 2/3 * (ttl - drift_margin)`, which leaves two thirds for retries. Every
    /// binding's keep-alive uses this one schedule.
    pub fn renew_at(&self) -> Instant {
        self.data
            .deadline
            .saturating_sub(self.data.opts.lease_validity() * 2 / 3)
    }

    /// Whether the lease is still valid at `now`.
    pub fn is_valid_at(&self, now: Instant) -> bool {
        now < self.data.deadline
    }

    /// The strategy that granted it.
    pub fn strategy(&self) -> Strategy {
        self.data.opts.strategy
    }

    /// The TTL it was granted (and is renewed) with.
    pub fn ttl(&self) -> Duration {
        self.data.opts.ttl
    }

    /// The options it was acquired with (renewal and release use the same ones).
    pub fn options(&self) -> &LockOptions {
        &self.data.opts
    }

    /// The lock cell's column in the lock table.
    pub fn column(&self) -> &str {
        &self.data.column
    }

    /// The exact value this lease's lock cell holds (what renewal and release compare with);
    /// [`LockInfo::value`] shows the same for an entry in a listing.
    pub fn value(&self) -> &str {
        &self.data.value
    }

    /// A hint for the next acquisition of the same name: the fencing counter as this lease
    /// left it, which saves the unique-insert strategy one round trip when it is still current.
    ///
    /// It also carries the *courtesy* of a contended lock: when this lease had to wait for
    /// someone else, the next acquisition of the name by the same locker first waits two of this
    /// lease's round trips (or until the store signals a change), so that the waiters woken by
    /// this lease's release get their turn before the releaser takes the lock again. Without
    /// it, a process that releases and locks again in a loop wins nearly every hand-off, since
    /// its claim reaches the store before the woken waiters' do.
    ///
    /// Where the store wakes waiters at a release (PostgreSQL's `NOTIFY`, the memory store),
    /// the courtesy is owed by the next [`COURTESIES`] acquisitions, not only the next one: a
    /// lease won at once after a courtesy (no waiter took the lock meanwhile) passes on one
    /// fewer, and one that had to wait and was woken passes on all of them again. Owed by the
    /// next acquisition only, a looping releaser's first uncontended lease ended it: from there
    /// it never waited again, and won the following hand-offs too (measured on PostgreSQL with 8
    /// clients looping on one name: the releaser took the lock again in 70-80% of the
    /// hand-offs, in runs of 100-300, and Jain's index varied from 0.59 to 0.96). Where waiters
    /// poll instead (MariaDB, SQLite, Cassandra across processes), they come on their own
    /// back-off, not at the release, and a courtesy mostly leaves the lock idle: there only the
    /// next acquisition owes one (with 8 clients, owing 8 took MariaDB's unique insert to 49% of
    /// one client's rate and SQLite's to 41%, in one run each, against 59-65% and 75-90%). An
    /// uncontended lock costs nothing: its next acquisition does not wait. Once its other
    /// clients have gone, a lock that was contended costs at most [`COURTESIES`] courtesies.
    pub fn fence_hint(&self) -> FenceHint {
        FenceHint {
            value: self.data.fence_value.clone(),
            courtesy: (self.data.courtesies > 0)
                .then(|| self.data.round_trip.saturating_mul(2).min(MAX_COURTESY)),
            courtesies: self.data.courtesies,
        }
    }
}

/// The longest courtesy wait (see [`Lease::fence_hint`]).
const MAX_COURTESY: Duration = Duration::from_millis(50);

/// How many acquisitions after a contended one that the store woke owe a courtesy while none
/// is contended (see [`Lease::fence_hint`]).
pub const COURTESIES: u8 = 8;

/// The fencing counter as a previous lease left it, and the courtesy owed after a contended
/// lease (see [`Lease::fence_hint`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FenceHint {
    pub(crate) value: String,
    pub(crate) courtesy: Option<Duration>,
    /// How many acquisitions, this one included, owe the courtesy.
    pub(crate) courtesies: u8,
}

/// What a successful acquisition returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The lease.
    pub lease: Lease,
    /// With column prefix and [`PrefixOptions::read_row`](crate::PrefixOptions::read_row): the
    /// row's data columns (every live cell outside the lock prefix), read in the same round trip
    /// that verified the lock. Empty otherwise.
    pub row: Vec<Cell>,
}

/// Where a lock entry stands, as seen by [`Inspect`](crate::Inspect).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryState {
    /// The owner holds the lock (for bakery: the smallest ticket with nobody choosing).
    Held,
    /// Bakery: holds a ticket and waits for smaller ones.
    Waiting,
    /// Bakery: choosing a ticket.
    Entering,
    /// Column prefix: older than its lease TTL but not yet removed by the store.
    Stale,
    /// Column prefix: a contender that has not (or not yet) won.
    Contending,
}

impl EntryState {
    /// Stable lowercase name.
    pub const fn as_str(self) -> &'static str {
        match self {
            EntryState::Held => "held",
            EntryState::Waiting => "waiting",
            EntryState::Entering => "entering",
            EntryState::Stale => "stale",
            EntryState::Contending => "contending",
        }
    }
}

/// One live entry of a lock, as listed by [`Inspect`](crate::Inspect) and returned by
/// [`ForceRelease`](crate::ForceRelease) and [`Purge`](crate::Purge).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    /// The lock name (row).
    pub name: String,
    /// The strategy whose layout the entry follows.
    pub strategy: Strategy,
    /// The column holding the entry.
    pub column: String,
    /// The owner id as written (`host:pid:nonce`), or the column's unique part for column-prefix
    /// locks written with a custom lock id.
    pub owner: String,
    /// Where the entry stands.
    pub state: EntryState,
    /// The fencing token, when the counter shows it was issued to this owner.
    pub token: Option<u64>,
    /// Bakery ticket.
    pub ticket: Option<u64>,
    /// When it was written, Unix milliseconds by the writer's wall clock (informational).
    pub created_unix_ms: Option<u64>,
    /// The acquisition id written in the entry ([`LockOptions::acquisition`](crate::LockOptions::acquisition)), 0 when none.
    pub acquisition: u64,
    /// What the entry asks for or holds as: exclusive, shared, or a semaphore's permit
    /// (`None`: a mode this version cannot read, which the strategies treat as exclusive).
    pub mode: Option<crate::Mode>,
    /// The entry's value as stored (see the `record` encodings in docs/sql-store.md, "The lock table").
    pub value: String,
    /// Time left before the store expires it, by the store's clock.
    pub expires_in: Option<Duration>,
}
