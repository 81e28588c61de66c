//! Options of an acquisition, with their defaults and ranges.

use alloc::format;
use alloc::string::String;
use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::mode::Mode;
use crate::model::{Consistency, SerialConsistency};
use crate::reserved;
use crate::retry::RetryPolicy;

/// Which lock algorithm to run. Every name must be used with one strategy only: locks of
/// different strategies on the same name do not exclude each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// Lamport's bakery over plain cells (seed 000, QCassandraLock): FIFO-fair, no
    /// lightweight transaction on the lock cells. See [`crate::strategy::bakery`].
    Bakery,
    /// One cell created with insert-if-absent (seed 004, DBIx::Locker): the cheapest, and the
    /// default. See [`crate::strategy::unique`].
    #[default]
    UniqueInsert,
    /// Astyanax's column-prefix lock (seed 001): write a column, read the prefix, exactly one
    /// means acquired. See [`crate::strategy::prefix`].
    ColumnPrefix,
}

impl Strategy {
    /// Every strategy.
    pub const ALL: [Strategy; 3] = [
        Strategy::Bakery,
        Strategy::UniqueInsert,
        Strategy::ColumnPrefix,
    ];

    /// The stable name: `bakery`, `unique-insert`, `column-prefix`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Strategy::Bakery => "bakery",
            Strategy::UniqueInsert => "unique-insert",
            Strategy::ColumnPrefix => "column-prefix",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Strategy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bakery" => Ok(Strategy::Bakery),
            "unique-insert" | "unique_insert" | "unique" => Ok(Strategy::UniqueInsert),
            "column-prefix" | "column_prefix" | "prefix" => Ok(Strategy::ColumnPrefix),
            other => Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "unknown strategy {other:?}; expected bakery, unique-insert or column-prefix"
                ),
            )),
        }
    }
}

/// How long an acquisition may wait for a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wait {
    /// One attempt; a held lock gives [`ErrorKind::Busy`].
    TryOnce,
    /// Retry under the [`RetryPolicy`] until this much time has passed, then give
    /// [`ErrorKind::TimedOut`]. Zero means one attempt (reported as `TimedOut`);
    /// [`Duration::MAX`] waits forever.
    Timeout(Duration),
}

/// Options of the column-prefix strategy (Astyanax's `ColumnPrefixDistributedRowLock` knobs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrefixOptions {
    /// The prefix that tells lock columns from data columns (`withColumnPrefix`); default `_LOCK_`.
    /// The column named exactly the prefix holds the fencing counter. A prefix that `_LOCK_` or
    /// `lock` starts with (`_`, `_LOCK`, `lo`, `lock`...), other than the default, is refused:
    /// the lock would take every strategy's counter, or unique insert's lock cell, for one of
    /// its entries.
    pub prefix: String,
    /// TTL of the lock cell, at least the lease TTL (`withTtl`). A cell older than the lease TTL
    /// but still alive is *stale*. Default: the lease TTL, so cells vanish when leases end.
    pub cell_ttl: Option<Duration>,
    /// Fail with [`ErrorKind::StaleLock`] on finding a stale column instead of deleting it
    /// (`failOnStaleLock`).
    pub fail_on_stale_lock: bool,
    /// Read the whole row on acquire and return its data columns (`withDataColumns`,
    /// `acquireLockAndReadRow`).
    pub read_row: bool,
    /// Override the generated unique part of the lock column (`withLockId`). The caller then
    /// promises it is unique among concurrent contenders. (It cannot make the column `_LOCK_`
    /// or `lock`: the prefixes that could are refused.)
    pub lock_id: Option<String>,
}

impl Default for PrefixOptions {
    fn default() -> Self {
        PrefixOptions {
            prefix: String::from("_LOCK_"),
            cell_ttl: None,
            fail_on_stale_lock: false,
            read_row: false,
            lock_id: None,
        }
    }
}

/// Everything an acquisition needs besides the name and the owner.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockOptions {
    /// The algorithm.
    pub strategy: Strategy,
    /// Lease length: how long the lock lives without renewal. Between [`LockOptions::MIN_TTL`]
    /// and [`LockOptions::MAX_TTL`]; default 60 s.
    pub ttl: Duration,
    /// How long to wait for a held lock; default 30 s.
    pub wait: Wait,
    /// Backoff between attempts (and between polls of the bakery queue).
    pub retry: RetryPolicy,
    /// Consistency of plain reads and writes; default QUORUM.
    pub consistency: Consistency,
    /// Consistency of conditional commands and serial reads; default SERIAL.
    pub serial: SerialConsistency,
    /// How much earlier than the store the holder considers its lease over, to cover clock-rate
    /// drift between the holder's monotonic clock and the store's. Default: 1% of the TTL plus
    /// 1 ms. Must be less than the TTL.
    pub drift_margin: Option<Duration>,
    /// How many times one storage command is sent when the store is unavailable or times out,
    /// before the operation fails with [`ErrorKind::StoreUnavailable`]; default 3, at least 1.
    pub store_attempts: u32,
    /// Accept a plain consistency below a quorum ([`Consistency::One`]) for the bakery and
    /// column-prefix strategies. Their safety arguments need every read to see every write that
    /// completed before it (intersecting replica sets), which ONE does not give: with it two
    /// holders at once are possible whenever a replica misses a write. Off by default, and
    /// validation refuses ONE for those strategies unless this says the caller knows.
    pub allow_weak_consistency: bool,
    /// Column-prefix options.
    pub prefix: PrefixOptions,
    /// What the acquisition asks for: exclusive (the default), shared, or one of a semaphore's
    /// permits. Bakery and column prefix carry every mode; unique insert only exclusive
    /// (validation refuses the others). See `docs/modes-design.md`.
    pub mode: Mode,
    /// Names are paths (issue 43, seed 003's `foo.bar.woof`): a lock on `a.b` conflicts with
    /// `a.b`, its ancestors `a` and its descendants `a.b.*` (when either side is exclusive),
    /// and not with `a.c` or `ab`. The tree of a root lives in the root's row, so one read
    /// still decides, at today's round trips. Every user of a tree must turn it on: a flat lock
    /// on `a.b` and a path lock on `a.b` are different locks (as two strategies on one name
    /// are). Bakery and column prefix only; names must be valid [`LockPath`]s
    /// ([`ErrorKind::InvalidName`](crate::ErrorKind::InvalidName) otherwise). Off by default.
    ///
    /// [`LockPath`]: crate::LockPath
    pub paths: bool,
    /// Unique insert: reserve the next grant for a waiter that was passed over (a *turn*, in
    /// the row's `_NEXT_` cell), so that the client that releases and locks again at once
    /// does not win every hand-off on a store that cannot wake waiters. Only for stores that
    /// check a claim's [`Turn`](crate::Turn) condition; elsewhere the cell would be written
    /// and never honoured. Decides only who claims when, never whether a claim is granted.
    /// `None` (the default) is off for the kernel; a host fills it in from its store (the
    /// Rust API: `Store::honours_turns`, true for Cassandra).
    pub turns: Option<bool>,
    /// Wall-clock time of the acquisition in Unix milliseconds, recorded for people reading the
    /// lock table (age in `baton locks`). Never used to decide anything.
    pub created_unix_ms: u64,
    /// Seed of the backoff jitter. The Rust API draws a fresh one per acquisition.
    pub seed: u64,
    /// An id for this acquisition, written into its lock values (`acq=`) when not zero, so no two
    /// acquisitions ever write identical values even when they reuse an owner id. The Rust API
    /// draws a fresh one per acquisition and reuses owner ids (one column per process and
    /// concurrent use, so releases do not pile tombstones into a lock's row on Cassandra).
    /// Callers that leave it zero must give every acquisition a distinct [`OwnerId`](crate::OwnerId).
    pub acquisition: u64,
    /// Deliberately broken variants, for testing that the simulator catches unsafe algorithms.
    /// Exists only with the `sabotage` feature, which baton's own tests enable and the library
    /// never does.
    #[cfg(feature = "sabotage")]
    pub sabotage: Sabotage,
}

/// Deliberately broken variants of the algorithms (see [`LockOptions::sabotage`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(not(feature = "sabotage"), allow(dead_code))]
pub enum Sabotage {
    /// The real algorithms.
    #[default]
    None,
    /// Bakery that does not wait for contenders that are choosing a ticket.
    BakeryIgnoresEntering,
    /// Unique insert that deletes a record that looks expired by the client's wall clock.
    UniqueBlindDelete,
    /// Wins and renewals that do not check their reply arrived before the lease deadline.
    NoContinuity,
    /// The fencing counter written with a plain put of the next token, not compare-and-set.
    FenceBlindWrite,
    /// No drift margin: the holder believes until send time + TTL.
    NoDriftMargin,
    /// Stale column-prefix entries (acquire and purge) and forced releases delete the cell
    /// whatever its version, not the version they read.
    BlindStaleDelete,
    /// Unique insert writes the same value in every attempt of an acquisition, so an earlier
    /// attempt's insert applied late passes for this attempt's win.
    SameValueEveryAttempt,
    /// A release that does not read the lock before removing its entry, and trusts the removal:
    /// `Ok` when it applied, or (unique insert) when a send timed out and the record is gone.
    ReleaseSkipsCheck,
    /// Bakery: an attempt counts the forced releases it must watch for from its first read of
    /// the queue, after its `entering` write, instead of from before it.
    ForcedCountAfterEntering,
    /// For the simulator's executor: plain writes stamped in arrival order at the store, as if
    /// the store ordered them (server-side timestamps), not by the client when sent.
    ArrivalOrderStamps,
    /// For the simulator's driver: a client's monotonic clock stops while it is suspended
    /// (`CLOCK_MONOTONIC` on Linux), instead of counting the suspension (`CLOCK_BOOTTIME`).
    ClockStopsInSuspend,
    /// For the simulator's SQL store: every write commits without waiting for the disk, a claim
    /// that took the lock too (as if PostgreSQL's `synchronous_commit` were off for
    /// acquisitions as it is for releases), so a server crash can forget a granted lock.
    UnflushedGrants,
    /// For the lock's life ([`crate::LockLife`]): a renewed lease believed for a full validity
    /// from when the renewal's reply arrived, not from when it was sent (so a reply that took
    /// longer than the drift margin stretches the belief past the store's expiry).
    RenewalFromReplyTime,
    /// For the lock's life ([`crate::LockLife`]): after a release elsewhere (which may have
    /// rolled back), a release here that takes a lease found lost for freed by that release,
    /// and forgets a loss known before it (the rule before the simulator drove the life).
    ElsewhereReleaseTrusted,
    /// For the simulator's driver: the owner-id slot freed when an acquisition gives up
    /// ([`LifeEvent::GaveUp`](crate::LifeEvent::GaveUp)), before its cleanup is done (as if
    /// [`LifeEvent::frees_the_slot`](crate::LifeEvent::frees_the_slot) held for it), so that
    /// the next acquisition of the name reuses the column that cleanup removes.
    GaveUpFreesSlot,
    /// Objects ([`crate::LockLife::object`]): a holder's write that skips the lock check (its
    /// [`ObjectGuard::Held`](crate::ObjectGuard::Held) sent as a guard that always holds), so a
    /// stale holder's write lands while someone else holds the lock.
    ObjectWriteUnguarded,
    /// Objects ([`crate::ObjectOp`]): an optimistic update that skips the version check (it
    /// reads the current cell and writes over it whatever its version), so concurrent
    /// optimistic updates lose one another's increments.
    OptimisticUnversioned,
    /// Modes (issue 43): a shared or counted request that does not wait for exclusive entries
    /// placed before it (only for entering ones), so readers join a writer.
    SharedIgnoresExclusive,
    /// Modes: a semaphore that admits a request when `n` permits are taken before it (one
    /// more than it has).
    SemaphoreOverAdmits,
    /// Modes: a shared lease that never counts a move of the fencing counter as a loss, so a
    /// shared holder whose lease an exclusive grant replaced hears `Ok` from its release.
    SharedTrustsCounter,
    /// Modes, column prefix: an exclusive request that finds shared holders deletes its column
    /// and backs off (as it does for an exclusive holder) instead of keeping it as a request,
    /// so a stream of readers starves a writer.
    ExclusiveDropsRequest,
    /// Paths: a request that does not see entries on its ancestors (`a` for `a.b`), so a
    /// writer of `a.b` holds beside a writer of `a`.
    PathIgnoresAncestors,
    /// Paths: a request that does not see entries on its descendants (`a.b` for `a`).
    PathIgnoresDescendants,
    /// Paths: a grant's token taken from its own path's counter alone, not above the related
    /// paths' (so a writer of `a` may take a token below an earlier writer of `a.b`'s).
    TokenIgnoresRelated,
    /// Modes: a shared grant whose counter update missed retries from whatever grant moved the
    /// counter, an exclusive one or one after a forced release included (the rule before
    /// column prefix seed 849682), so a reader whose entry a forced release removed takes a
    /// token beside a writer.
    SharedRetriesAnyMove,
    /// Turns ([`LockOptions::turns`]): a waiter whose look finds the next grant reserved for
    /// it takes the lock without the lock cell's condition (writes its record over the
    /// holder's, then moves the counter), as if its turn were a grant.
    TurnOverridesLock,
}

#[cfg_attr(not(feature = "sabotage"), allow(dead_code))]
impl Sabotage {
    /// Every broken variant, for tests that each is caught.
    pub const ALL: [Sabotage; 26] = [
        Sabotage::BakeryIgnoresEntering,
        Sabotage::UniqueBlindDelete,
        Sabotage::NoContinuity,
        Sabotage::FenceBlindWrite,
        Sabotage::NoDriftMargin,
        Sabotage::BlindStaleDelete,
        Sabotage::SameValueEveryAttempt,
        Sabotage::ReleaseSkipsCheck,
        Sabotage::ForcedCountAfterEntering,
        Sabotage::ArrivalOrderStamps,
        Sabotage::ClockStopsInSuspend,
        Sabotage::UnflushedGrants,
        Sabotage::RenewalFromReplyTime,
        Sabotage::ElsewhereReleaseTrusted,
        Sabotage::GaveUpFreesSlot,
        Sabotage::ObjectWriteUnguarded,
        Sabotage::OptimisticUnversioned,
        Sabotage::SharedIgnoresExclusive,
        Sabotage::SemaphoreOverAdmits,
        Sabotage::SharedTrustsCounter,
        Sabotage::ExclusiveDropsRequest,
        Sabotage::PathIgnoresAncestors,
        Sabotage::PathIgnoresDescendants,
        Sabotage::TokenIgnoresRelated,
        Sabotage::SharedRetriesAnyMove,
        Sabotage::TurnOverridesLock,
    ];
}

impl LockOptions {
    /// The broken variant these options carry: always [`Sabotage::None`] without the `sabotage`
    /// feature.
    pub(crate) fn sabotage(&self) -> Sabotage {
        #[cfg(feature = "sabotage")]
        return self.sabotage;
        #[cfg(not(feature = "sabotage"))]
        Sabotage::None
    }

    /// The shortest TTL: shorter leases cannot outlive a store round trip.
    pub const MIN_TTL: Duration = Duration::from_millis(10);
    /// The longest TTL (30 days): a lease longer than that is a forgotten lock.
    pub const MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

    /// Checks every option, naming the first one out of range.
    pub fn validate(&self) -> Result<()> {
        if self.ttl < Self::MIN_TTL || self.ttl > Self::MAX_TTL {
            return Err(Error::invalid_option(format!(
                "ttl {:?} is out of range: it must be between {:?} and {:?}",
                self.ttl,
                Self::MIN_TTL,
                Self::MAX_TTL
            )));
        }
        if self.drift_margin() >= self.ttl {
            return Err(Error::invalid_option(format!(
                "drift margin {:?} must be less than the ttl {:?}",
                self.drift_margin(),
                self.ttl
            )));
        }
        if self.strategy != Strategy::UniqueInsert
            && self.consistency == Consistency::One
            && !self.allow_weak_consistency
        {
            return Err(Error::invalid_option(format!(
                "consistency ONE is below a quorum: the {} strategy needs its reads to see every completed write (QUORUM, LOCAL_QUORUM within one data centre, or ALL); set allow_weak_consistency to accept two holders at once when a replica misses a write",
                self.strategy
            )));
        }
        if self.store_attempts == 0 {
            return Err(Error::invalid_option("store_attempts must be at least 1"));
        }
        if let Mode::Counted(n) = self.mode {
            Mode::counted(i64::from(n))?;
        }
        if self.strategy == Strategy::UniqueInsert && self.paths {
            return Err(Error::invalid_option(
                "the unique-insert strategy takes flat names only (its one cell per name cannot see a tree); paths need the bakery or column-prefix strategy",
            ));
        }
        if self.strategy == Strategy::UniqueInsert && self.mode != Mode::Exclusive {
            return Err(Error::invalid_option(format!(
                "the unique-insert strategy takes exclusive locks only (its one cell per name has no room for a second holder); a {} lock needs the bakery or column-prefix strategy",
                self.mode
            )));
        }
        self.retry.validate()?;
        let p = &self.prefix;
        if p.prefix.is_empty() || p.prefix.len() > 64 || p.prefix.contains('\0') {
            return Err(Error::invalid_option(format!(
                "column prefix {:?} must be 1 to 64 bytes without NUL",
                p.prefix
            )));
        }
        if let Some(cell_ttl) = p.cell_ttl {
            if cell_ttl < self.ttl || cell_ttl > Self::MAX_TTL {
                return Err(Error::invalid_option(format!(
                    "cell ttl {cell_ttl:?} must be at least the lease ttl {:?} and at most {:?}",
                    self.ttl,
                    Self::MAX_TTL
                )));
            }
        }
        if self.strategy != Strategy::ColumnPrefix && *p != PrefixOptions::default() {
            return Err(Error::invalid_option(format!(
                "column-prefix options (prefix, cell ttl, fail_on_stale_lock, read_row, lock id) do not apply to the {} strategy",
                self.strategy
            )));
        }
        if let Some(id) = &p.lock_id {
            if id.is_empty() || id.len() > 128 || id.contains('\0') {
                return Err(Error::invalid_option(format!(
                    "lock id {id:?} must be 1 to 128 bytes without NUL"
                )));
            }
            // `<prefix>|...` is a tree's counter (paths), and with paths `|` ends the path.
            if id.contains(crate::strategy::PATH_END) {
                return Err(Error::invalid_option(format!(
                    "lock id {id:?} must not contain '|' (the lock table's separator of paths and owners)"
                )));
            }
        }
        // A prefix that a reserved name starts with would count that cell as one of its
        // entries (`_LOCK` sees `_LOCK_`, `lo` sees `lock`): inspect and forced release would
        // list and delete it, and a lock id could name it exactly. The default prefix is the
        // counter itself, and its entries are longer than it.
        if p.prefix != reserved::COUNTER_COLUMN {
            if let Some(cell) = reserved::starting_with(&p.prefix) {
                return Err(Error::invalid_option(format!(
                    "column prefix {:?} is reserved: the cell {cell:?} ({}) starts with it, so the lock would take that cell for one of its own; choose a prefix that none of the reserved cells (_LOCK_, lock, _NEXT_, _OBJECT_) starts with",
                    p.prefix,
                    reserved::why(cell)
                )));
            }
        }
        Ok(())
    }

    /// The drift margin in force (see [`LockOptions::drift_margin`]).
    pub fn drift_margin(&self) -> Duration {
        if self.sabotage() == Sabotage::NoDriftMargin {
            return Duration::ZERO;
        }
        self.drift_margin
            .unwrap_or(self.ttl / 100 + Duration::from_millis(1))
    }

    /// The cell TTL of column-prefix lock cells.
    pub(crate) fn cell_ttl(&self) -> Duration {
        match self.strategy {
            Strategy::ColumnPrefix => self.prefix.cell_ttl.unwrap_or(self.ttl),
            _ => self.ttl,
        }
    }

    /// How long a holder may believe in a lease after sending the write that granted or renewed
    /// it: the TTL minus the drift margin.
    pub fn lease_validity(&self) -> Duration {
        self.ttl.saturating_sub(self.drift_margin())
    }
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            strategy: Strategy::default(),
            ttl: Duration::from_secs(60),
            wait: Wait::Timeout(Duration::from_secs(30)),
            retry: RetryPolicy::default(),
            consistency: Consistency::Quorum,
            serial: SerialConsistency::Serial,
            drift_margin: None,
            store_attempts: 3,
            allow_weak_consistency: false,
            prefix: PrefixOptions::default(),
            mode: Mode::Exclusive,
            paths: false,
            turns: None,
            created_unix_ms: 0,
            seed: 0,
            acquisition: 0,
            #[cfg(feature = "sabotage")]
            sabotage: Sabotage::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_ttl(ttl: Duration) -> LockOptions {
        LockOptions {
            ttl,
            ..LockOptions::default()
        }
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(LockOptions::default().validate(), Ok(()));
    }

    #[test]
    fn ttl_range_is_enforced_with_a_message() {
        for bad in [
            Duration::ZERO,
            Duration::from_millis(9),
            LockOptions::MAX_TTL + Duration::from_secs(1),
            Duration::MAX,
        ] {
            let e = with_ttl(bad).validate().expect_err("out of range");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            assert!(e.message().contains("ttl"), "{e}");
        }
        assert_eq!(with_ttl(LockOptions::MIN_TTL).validate(), Ok(()));
        assert_eq!(with_ttl(LockOptions::MAX_TTL).validate(), Ok(()));
    }

    #[test]
    fn other_options_are_checked() {
        let bad = [
            LockOptions {
                drift_margin: Some(Duration::from_secs(60)),
                ..LockOptions::default()
            },
            LockOptions {
                store_attempts: 0,
                ..LockOptions::default()
            },
            LockOptions {
                prefix: PrefixOptions {
                    prefix: String::new(),
                    ..PrefixOptions::default()
                },
                ..LockOptions::default()
            },
            LockOptions {
                prefix: PrefixOptions {
                    cell_ttl: Some(Duration::from_secs(1)),
                    ..PrefixOptions::default()
                },
                ..LockOptions::default()
            },
            LockOptions {
                prefix: PrefixOptions {
                    lock_id: Some(String::new()),
                    ..PrefixOptions::default()
                },
                ..LockOptions::default()
            },
        ];
        for o in bad {
            assert_eq!(
                o.validate().map_err(|e| e.kind()),
                Err(ErrorKind::InvalidOption),
                "{o:?}"
            );
        }
    }

    #[test]
    fn consistency_below_a_quorum_needs_an_explicit_opt_in() {
        for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
            let mut o = LockOptions {
                strategy,
                consistency: Consistency::One,
                ..LockOptions::default()
            };
            let e = o.validate().expect_err("ONE is refused");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            assert!(
                e.message().contains("ONE") && e.message().contains("allow_weak_consistency"),
                "{e}"
            );
            o.allow_weak_consistency = true;
            assert_eq!(o.validate(), Ok(()));
        }
        // Unique insert decides by lightweight transactions at SERIAL: ONE only weakens the
        // commit, which serial reads still see.
        let o = LockOptions {
            consistency: Consistency::One,
            ..LockOptions::default()
        };
        assert_eq!(o.validate(), Ok(()));
    }

    #[test]
    fn strategy_names_round_trip() {
        for s in Strategy::ALL {
            assert_eq!(s.as_str().parse::<Strategy>(), Ok(s));
        }
        let e = "paxos".parse::<Strategy>().expect_err("unknown");
        assert!(e.message().contains("paxos"));
    }
}
