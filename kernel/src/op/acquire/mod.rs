//! Acquisition: one state machine running whichever strategy the options name.
//!
//! This module holds the machine and what the strategies share (starting attempts, backing off,
//! the fencing counter, abandoning an attempt); each strategy's own steps are in its module:
//! [`unique_insert`], [`bakery_queue`], [`column_prefix`].

mod bakery_queue;
mod column_prefix;
mod turns;
mod unique_insert;

use bakery_queue::BakeryAttempts;
use turns::Turns;
use unique_insert::UniqueClaims;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::aging::Aging;
use super::herd::Herd;
use super::io::{Io, IoPoll};
use super::{CommandId, Operation, Poll};
use crate::error::{unexpected, Error, ErrorKind, Result};
use crate::lease::{FenceHint, Grant, Lease, LeaseData};
use crate::model::{Cell, Command, ReadConsistency, Reply};
use crate::name::LockName;
use crate::options::{LockOptions, Sabotage, Strategy, Wait};
use crate::owner::OwnerId;
use crate::path::LockPath;
use crate::record::{encode_bakery, BakeryState, LockRecord};
use crate::retry::SplitMix64;
use crate::strategy::fence::{Bumped, FenceBump};
use crate::strategy::RowColumns;
use crate::time::Instant;

/// What to do after deleting our own cell.
#[derive(Clone, Debug)]
enum Then {
    /// Start a new attempt at once (our cell may have lapsed: continuity was broken).
    Restart,
    /// The lock is held: busy, or back off and retry.
    Contended(Error),
    /// Give up with this error.
    Fail(Error),
}

/// What to do when a sleep ends.
#[derive(Clone, Copy, Debug)]
enum Next {
    Start,
    BakeryCheck(u64),
    /// Column prefix: look again with our column kept as a waiting exclusive request.
    PrefixKept,
}

#[derive(Clone, Debug)]
enum Phase {
    Start,
    Sleep {
        until: Instant,
        then: Next,
    },
    /// Unique insert with turns, a retry at the end of a back-off: the row read before the
    /// claim (see `turns`).
    UniqueLook,
    /// Unique insert's claim: the lock cell and the counter in one step.
    UniqueClaim(FenceBump),
    /// Unique insert: our turn written, then a wait behind the holder (this busy error).
    TurnTake(Error),
    /// The broken variant `TurnOverridesLock`: our record written over the holder's.
    UniqueOverride,
    /// Unique insert's insert alone (only under the blind-counter broken variant, which needs
    /// the counter written apart).
    UniqueInsert,
    UniqueBlindDelete,
    /// Removing our own record of an earlier attempt that the store applied late.
    UniqueClearOwn,
    BakeryEnter,
    BakeryReadMax,
    BakeryTicket(u64),
    BakeryCheck(u64),
    BakeryRefresh(u64),
    /// Column prefix, a retry: the prefix read before our column is written (see
    /// `column_prefix`).
    PrefixLook,
    PrefixWrite,
    PrefixRead,
    Fence(FenceBump),
    /// Unique insert without a trustworthy guess of the counter: a serial read of the row,
    /// which gives the counter and shows our record is still the lock's (someone else moving
    /// the counter since our insert means it may not be: a forced release removed it).
    FenceRead,
    DeleteStale(u64),
    Abandon(Then),
    Done,
}

/// How long a command sent just before the end of a wait is waited for, at least
/// ([`Acquire::gives_up_on`]).
pub const GIVE_UP_GRACE: core::time::Duration = core::time::Duration::from_secs(1);
/// ... and at most (two of the store's last round trips in between).
pub const GIVE_UP_GRACE_MAX: core::time::Duration = core::time::Duration::from_secs(2);

/// Acquires a lock (try once, or wait up to a timeout) and returns a [`Grant`].
///
/// Create it with [`Acquire::new`], then drive it as [`Operation`] says. The round trips an
/// uncontended acquisition costs are listed in each strategy's docs ([`crate::strategy`]).
/// Errors: [`ErrorKind::Busy`] (try once, held), [`ErrorKind::TimedOut`] (waited the whole
/// timeout or used up the retry policy), [`ErrorKind::StaleLock`] (column prefix with
/// `fail_on_stale_lock`), and the store kinds. A failed acquisition leaves no cell of ours
/// behind when the store is reachable; when it is not, our cells expire with their TTL.
#[derive(Debug)]
pub struct Acquire {
    name: LockName,
    /// The row our cell is in: the name, or its root with paths.
    row: String,
    owner: OwnerId,
    opts: LockOptions,
    columns: RowColumns,
    column: String,
    /// The record of this acquisition (unique insert and column prefix; `att` is set per attempt).
    record: LockRecord,
    /// The value our cell holds now (a record, or the bakery state).
    value: String,
    io: Io,
    rng: SplitMix64,
    phase: Phase,
    started: Option<Instant>,
    wait_deadline: Instant,
    attempts: u32,
    polls: u32,
    /// Whether a cell of ours exists (a write of it succeeded and it was not cleaned up since).
    wrote: bool,
    cell_deadline: Instant,
    fence_hint: Option<FenceHint>,
    /// The fencing counter's value as our grant wrote it.
    fence_value: String,
    /// With paths: the largest token of the related paths' counters at our deciding read.
    fence_floor: u64,
    /// Our grant moved the counter from a forced release's value (see `LeaseData`).
    after_forced: bool,
    stale: Vec<(String, u64)>,
    /// The newest stamp the winning read returned (see [`Lease`]'s `newest_stamp`).
    newest_stamp: u64,
    data: Vec<Cell>,
    /// How long the last reply took.
    round_trip: core::time::Duration,
    /// Fairness: wake-ups, the herd, aging, the courtesy owed (the `herd`, `aging` modules).
    fair: Fairness,
    /// Unique insert's state.
    unique: UniqueClaims,
    /// Unique insert's turn (see `turns`).
    turns: Turns,
    /// Bakery's state.
    bakery: BakeryAttempts,
    /// The holder the last contended attempt found, named by a [`ErrorKind::TimedOut`] that
    /// ends the wait between attempts.
    last_holder: Option<String>,
    result: Option<Result<Grant>>,
}

/// What an acquisition keeps to be fair among waiters: whether and how a wake-up cut its wait
/// short (the herd), how often the lock changed hands while it waited (aging), and the
/// courtesy a fence hint says it owes.
#[derive(Debug, Default)]
pub(super) struct Fairness {
    pub(super) woken: bool,
    /// Which wake-ups this acquisition answers at once (see the `herd` module).
    pub(super) herd: Herd,
    /// Whether the current attempt was started by a wake-up (not by the end of a back-off).
    pub(super) woke_attempt: bool,
    /// Whether this acquisition waited for someone else (slept after finding the lock taken).
    pub(super) waited: bool,
    /// How often the lock changed hands while we waited (see the `aging` module).
    pub(super) aging: Aging,
    /// How long to wait before the first attempt (see [`Lease::fence_hint`]).
    pub(super) courtesy: Option<core::time::Duration>,
    /// Whether the current sleep is that courtesy, which no change at the store cuts short
    /// (our own release's notification would).
    pub(super) courteous: bool,
    /// How many acquisitions, this one included, owe the courtesy (from the hint), less the
    /// one this acquisition paid once it did.
    pub(super) courtesies: u8,
    /// Whether the store signalled a change while this acquisition waited (it wakes waiters at
    /// a release): how many courtesies a contended lease owes depends on it.
    pub(super) signalled: bool,
}

impl core::fmt::Debug for Io {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Io")
    }
}

impl Acquire {
    /// An acquisition of `name` by `owner`. Fails with [`ErrorKind::InvalidOption`] if an option
    /// is out of range.
    pub fn new(name: LockName, owner: OwnerId, opts: LockOptions) -> Result<Self> {
        opts.validate()?;
        if opts.paths {
            LockPath::from_name(name.clone())?;
        }
        let columns = RowColumns::at(&opts, name.as_str());
        let column = columns.my_column(&opts, &owner, name.as_str());
        let row = String::from(RowColumns::row_of(&opts, name.as_str()));
        let record = LockRecord {
            owner: owner.key(),
            ttl_ms: millis(opts.ttl),
            cell_ttl_ms: millis(opts.cell_ttl()),
            created_ms: opts.created_unix_ms,
            acq: opts.acquisition,
            att: 1,
            mode: opts.mode,
        };
        let value = match opts.strategy {
            Strategy::Bakery => encode_bakery(
                BakeryState::Entering,
                opts.mode,
                opts.created_unix_ms,
                opts.acquisition,
            ),
            _ => record.encode(),
        };
        Ok(Acquire {
            io: Io::new(opts.store_attempts, opts.retry),
            rng: SplitMix64::new(opts.seed),
            name,
            row,
            owner,
            columns,
            column,
            record,
            value,
            phase: Phase::Start,
            started: None,
            wait_deadline: Instant::ZERO,
            attempts: 0,
            polls: 0,
            wrote: false,
            cell_deadline: Instant::ZERO,
            fence_hint: None,
            fence_value: String::new(),
            fence_floor: 0,
            after_forced: false,
            stale: Vec::new(),
            newest_stamp: 0,
            data: Vec::new(),
            round_trip: core::time::Duration::ZERO,
            fair: Fairness::default(),
            unique: UniqueClaims::default(),
            turns: Turns::default(),
            bakery: BakeryAttempts::default(),
            last_holder: None,
            result: None,
            opts,
        })
    }

    /// Uses the fencing counter as a previous lease of this name left it: saves one round trip
    /// for unique insert when no one else took the lock since.
    pub fn with_fence_hint(mut self, hint: Option<FenceHint>) -> Self {
        self.bakery.forced_known = hint
            .as_ref()
            .map_or(0, |h| crate::record::forced_count(Some(&h.value)));
        self.unique.counter_seen = hint.as_ref().map(|h| h.value.clone());
        self.fair.courtesy = hint.as_ref().and_then(|h| h.courtesy);
        self.fair.courtesies = hint.as_ref().map_or(0, |h| h.courtesies);
        // After a contended lease, with turns, the first attempt looks before it claims
        // instead of a courtesy's sleep: a claim would be refused by the turn a waiter took
        // meanwhile, and with no turn taken the lock would only stay idle.
        self.turns.look_first = self.uses_turns() && self.fair.courtesies > 0;
        self.fence_hint = hint;
        self
    }

    /// The command that removes this acquisition's cell, for a caller abandoning it midway
    /// (a cancelled wait): `Some` while a cell of ours may exist, or a write of it may have been
    /// applied; `None` when there is nothing to clean up (not started, finished, or no cell).
    /// Executing it is always harmless: it removes only our own cell (unique insert: a
    /// compare-and-set against our exact record). After a grant, release the lease instead.
    pub fn cleanup(&self) -> Option<Command> {
        let in_flight = self.writing_my_cell() && !self.io.is_idle();
        let done = self.result.is_some();
        if done || !(self.wrote || in_flight || matches!(self.phase, Phase::Fence(_))) {
            return None;
        }
        Some(self.delete_command())
    }

    /// The lock being acquired.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// How many attempts it has started so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    fn row(&self) -> String {
        self.row.clone()
    }

    fn finish(&mut self, result: Result<Grant>) {
        self.phase = Phase::Done;
        let name = self.name.as_str();
        self.result = Some(result.map_err(|e| match e.lock() {
            Some(_) => e,
            None => e.with_lock(name),
        }));
    }

    fn checks_continuity(&self) -> bool {
        self.opts.sabotage() != Sabotage::NoContinuity
    }

    /// [`ErrorKind::Busy`]: the lock is `what` (for example "held by") the owner of `cell`,
    /// another owner's lock cell, who is named as the holder.
    fn busy_because_of(&self, what: &str, cell: &str) -> Error {
        let owner = self.columns.owner_part(cell);
        Error::new(
            ErrorKind::Busy,
            format!("lock {:?} is {what} {owner}", self.name.as_str()),
        )
        .with_holder(owner)
    }

    /// Our cell is in place, written by a command sent at `sent`: a failed attempt must remove
    /// it, and it stays live until one lease validity after that send.
    fn cell_written(&mut self, sent: Instant) {
        self.wrote = true;
        self.cell_deadline = sent.saturating_add(self.opts.lease_validity());
    }

    fn lapsed(&self, now: Instant) -> bool {
        self.checks_continuity() && now >= self.cell_deadline
    }

    fn put(&self, value: String, ttl: core::time::Duration) -> Command {
        Command::Put {
            row: self.row(),
            column: self.column.clone(),
            value,
            ttl: Some(ttl),
            consistency: self.opts.consistency,
        }
    }

    fn read_row(&self, whole: bool) -> Command {
        Command::Read {
            row: self.row(),
            filter: self.columns.filter(whole),
            consistency: ReadConsistency::Plain(self.opts.consistency),
        }
    }

    fn start_attempt(&mut self, now: Instant) {
        if self.attempts > 0 {
            if self.opts.wait == Wait::TryOnce {
                let e = Error::new(
                    ErrorKind::Busy,
                    format!(
                        "could not acquire lock {:?} in one attempt",
                        self.name.as_str()
                    ),
                );
                return self.finish(Err(e));
            }
            // No attempt starts at the end of the wait: its commands would be given up on
            // (`gives_up_at`).
            if now >= self.wait_deadline || self.out_of_attempts() {
                return self.finish(Err(self.timed_out(now, "the lock stayed contended")));
            }
        }
        self.attempts += 1;
        self.polls = 0;
        match self.opts.strategy {
            Strategy::UniqueInsert => {
                self.unique.reclaims = 0;
                if self.opts.sabotage() == Sabotage::FenceBlindWrite {
                    // The broken variant writes the counter apart, after the insert.
                    self.new_record_value();
                    self.phase = Phase::UniqueInsert;
                    self.io.send(Command::InsertIfAbsent {
                        row: self.row(),
                        column: self.column.clone(),
                        value: self.value.clone(),
                        ttl: Some(self.opts.ttl),
                        serial: self.opts.serial,
                        consistency: self.opts.consistency,
                    });
                } else if self.uses_turns()
                    && ((self.attempts > 1 && !self.fair.woke_attempt)
                        || core::mem::take(&mut self.turns.look_first))
                {
                    // `attempts` counts this one: a retry that no wake-up started, or the
                    // first attempt after a contended lease.
                    self.look();
                } else {
                    self.claim();
                }
            }
            Strategy::Bakery => {
                // Known before our cell exists: a forced release that deletes this attempt's
                // cell reads it first and counts itself after that, so it is not counted here.
                self.bakery.forced_seen =
                    if self.opts.sabotage() == Sabotage::ForcedCountAfterEntering {
                        0
                    } else {
                        self.bakery.forced_known
                    };
                self.value = encode_bakery(
                    BakeryState::Entering,
                    self.opts.mode,
                    self.opts.created_unix_ms,
                    self.opts.acquisition,
                );
                self.phase = Phase::BakeryEnter;
                self.io.send(self.put(self.value.clone(), self.opts.ttl));
            }
            Strategy::ColumnPrefix => self.start_prefix_attempt(),
        }
    }

    /// When a caller who gave a timeout stops waiting for the store: the end of the wait, once
    /// the acquisition has started. `None` for one attempt ([`Wait::TryOnce`]) or a zero
    /// timeout: those wait for the store's answers to the attempt they make, each bounded by
    /// the host's command timeout and the store attempts ([`LockOptions::store_attempts`]).
    ///
    /// [`LockLife`](crate::LockLife) gives up then on a command still on its way, no attempt
    /// starts then, and no store failure is retried at or after it, so that a store that stops
    /// answering costs the caller no more than the wait.
    ///
    /// [`LockOptions::store_attempts`]: crate::LockOptions::store_attempts
    pub fn gives_up_at(&self) -> Option<Instant> {
        match self.opts.wait {
            Wait::Timeout(d) if !d.is_zero() && self.started.is_some() => Some(self.wait_deadline),
            _ => None,
        }
    }

    /// When a caller who gave a timeout stops waiting for the command sent at `sent` (and still
    /// on its way): at the end of the wait ([`Acquire::gives_up_at`]), or, for a command sent
    /// just before it, once the command has had [`GIVE_UP_GRACE`] (or two of the store's last
    /// round trips, up to [`GIVE_UP_GRACE_MAX`]) to answer: a store that answers completes its
    /// attempt (a grant, or `TimedOut` naming the holder), and only one that does not answer
    /// is given up on. An acquisition already failing (removing its cell after a store error)
    /// gets no grace: nothing its cleanup answers can change its outcome. `None` when the
    /// caller gave no timeout.
    pub fn gives_up_on(&self, sent: Instant) -> Option<Instant> {
        let end = self.gives_up_at()?;
        if self.failing().is_some() {
            return Some(end);
        }
        let grace = self
            .round_trip
            .saturating_mul(2)
            .clamp(GIVE_UP_GRACE, GIVE_UP_GRACE_MAX);
        Some(end.max(sent.saturating_add(grace)))
    }

    /// The error this acquisition is failing with while it removes its cell, if it is.
    pub fn failing(&self) -> Option<&Error> {
        match &self.phase {
            Phase::Abandon(Then::Fail(e)) => Some(e),
            _ => None,
        }
    }

    /// Attempts plus bakery queue polls: both count against `RetryPolicy::max_attempts`
    /// (ScaleOut's "retry count").
    fn out_of_attempts(&self) -> bool {
        let tries = self.attempts.saturating_add(self.bakery.tries_in_queue);
        self.opts.retry.max_attempts.is_some_and(|max| tries >= max)
    }

    /// How long this acquisition has been going at `now` (zero before it started).
    fn waited(&self, now: Instant) -> core::time::Duration {
        now.saturating_duration_since(self.started.unwrap_or(now))
    }

    /// [`ErrorKind::TimedOut`], naming the holder the last contended attempt found.
    fn timed_out(&self, now: Instant, why: &str) -> Error {
        let waited = self.waited(now);
        let e = Error::new(
            ErrorKind::TimedOut,
            format!(
                "timed out after {waited:?} and {} attempt(s) waiting for lock {:?}: {why}",
                self.attempts,
                self.name.as_str()
            ),
        );
        match &self.last_holder {
            Some(holder) => e.with_holder(holder.clone()),
            None => e,
        }
    }

    /// The lock is held by someone else and our cell (if any) is gone.
    fn contended(&mut self, now: Instant, busy: Error) {
        if self.opts.wait == Wait::TryOnce {
            return self.finish(Err(busy));
        }
        self.last_holder = busy.holder().map(String::from);
        if now >= self.wait_deadline || self.out_of_attempts() {
            return self.finish(Err(self.timed_out(now, busy.message())));
        }
        if core::mem::take(&mut self.fair.woke_attempt) {
            self.fair.herd.lost();
        }
        let backoff = self
            .opts
            .retry
            .delay(self.attempts.saturating_sub(1), &mut self.rng);
        // A store that wakes its waiters tells them when to try; aging is for polling ones.
        let hot_look = if self.uses_turns() {
            self.fair
                .aging
                .hot_look(self.round_trip, &self.opts.retry, &mut self.rng)
        } else {
            None
        };
        let delay = if let Some(pace) = self.turn_pace() {
            pace.min(backoff)
        } else if let Some(look) = hot_look {
            look.min(backoff)
        } else if self.fair.herd.woken() {
            backoff
        } else {
            let waited = self.waited(now);
            self.fair.aging.wait(
                waited,
                backoff,
                self.round_trip,
                &self.opts.retry,
                &mut self.rng,
            )
        };
        let until = now.saturating_add(delay).min(self.wait_deadline);
        self.fair.waited = true;
        self.phase = Phase::Sleep {
            until,
            then: Next::Start,
        };
    }

    /// Whether a wake-up during a sleep before `then` starts it at once. A new attempt is
    /// subject to the herd rule (see the `herd` module); a bakery waiter always looks at the
    /// queue again, since only the waiter whose turn it is goes on.
    fn answers_wake(&mut self, then: &Next, now: Instant) -> bool {
        match then {
            Next::Start => self.fair.herd.answer(now, self.round_trip, &mut self.rng),
            Next::BakeryCheck(_) | Next::PrefixKept => true,
        }
    }

    /// The command that deletes our own cell.
    fn delete_command(&self) -> Command {
        match self.opts.strategy {
            Strategy::UniqueInsert => Command::CompareAndSet {
                row: self.row(),
                column: self.column.clone(),
                expected: self.value.clone(),
                new: None,
                ttl: None,
                serial: self.opts.serial,
                consistency: self.opts.consistency,
            },
            _ => Command::Delete {
                row: self.row(),
                column: self.column.clone(),
                consistency: self.opts.consistency,
            },
        }
    }

    /// Deletes our own cell, then does `then`.
    fn abandon(&mut self, then: Then) {
        let command = self.delete_command();
        self.phase = Phase::Abandon(then);
        self.io.send(command);
    }

    /// A store error: clean up our cell if one may exist, then fail with `e` (if the cleanup
    /// fails too, the cell expires with its TTL).
    fn failed(&mut self, e: Error) {
        match &self.phase {
            Phase::Abandon(Then::Fail(first)) => {
                let first = first.clone();
                self.finish(Err(first));
            }
            Phase::Abandon(_) => self.finish(Err(e)),
            _ if self.wrote || (self.writing_my_cell() && self.io.maybe_applied()) => {
                self.abandon(Then::Fail(e))
            }
            _ => self.finish(Err(e)),
        }
    }

    /// Whether the command in flight writes our own cell.
    fn writing_my_cell(&self) -> bool {
        matches!(
            self.phase,
            Phase::UniqueInsert
                | Phase::UniqueClaim(_)
                | Phase::UniqueOverride
                | Phase::BakeryEnter
                | Phase::BakeryTicket(_)
                | Phase::BakeryRefresh(_)
                | Phase::PrefixWrite
        )
    }

    /// Bumps the fencing counter from `current`, which was read after our cell was in place
    /// when `fresh`.
    fn start_fence(&mut self, current: Option<String>, fresh: bool) {
        let bump = FenceBump::new(
            &self.row,
            &self.columns.fence,
            self.owner.key(),
            self.opts.acquisition,
            current.as_deref(),
            fresh,
            self.opts.consistency,
            self.opts.serial,
        );
        match bump {
            Ok(bump) => {
                let bump = bump
                    .blind(self.opts.sabotage() == Sabotage::FenceBlindWrite)
                    .shared(!self.opts.mode.is_exclusive())
                    .loose(self.opts.sabotage() == Sabotage::SharedRetriesAnyMove)
                    .above(if self.opts.sabotage() == Sabotage::TokenIgnoresRelated {
                        0
                    } else {
                        self.fence_floor
                    });
                self.io.send(bump.command());
                self.phase = Phase::Fence(bump);
            }
            Err(e) => self.abandon(Then::Fail(e)),
        }
    }

    fn won(&mut self, token: u64, now: Instant) {
        if self.lapsed(now) {
            return self.abandon(Then::Restart);
        }
        if let Some((column, stamp)) = self.stale.pop() {
            self.phase = Phase::DeleteStale(token);
            let command = delete_version(
                self.row(),
                column,
                stamp,
                self.opts.consistency,
                self.opts.sabotage(),
            );
            self.io.send(command);
            return;
        }
        let lease = Lease::new(LeaseData {
            name: self.name.clone(),
            owner: self.owner.clone(),
            token,
            deadline: self.cell_deadline,
            opts: self.opts.clone(),
            row: self.row(),
            column: self.column.clone(),
            value: self.value.clone(),
            fence_value: self.fence_value.clone(),
            after_forced: self.after_forced,
            newest_stamp: self.newest_stamp,
            courtesies: match (
                self.fair.waited || self.bakery.tries_in_queue > 0,
                self.fair.signalled,
            ) {
                (true, true) => crate::lease::COURTESIES,
                // With turns too (the courtesy is then a look): owed by the next 8 instead,
                // a client looping on a contended name looked before each claim, which cost
                // more than the claims a turn refuses (bench_cassandra, 8 clients, 2026-12-03:
                // 48-51% of one client's rate against 69-72%).
                (true, false) => 1,
                (false, _) => self.fair.courtesies,
            },
            round_trip: self.round_trip,
        });
        let row = core::mem::take(&mut self.data);
        self.finish(Ok(Grant { lease, row }));
    }

    fn on_reply(&mut self, reply: Reply, sent: Instant, now: Instant) {
        self.round_trip = now.saturating_duration_since(sent);
        match core::mem::replace(&mut self.phase, Phase::Done) {
            phase @ (Phase::UniqueLook
            | Phase::UniqueClaim(_)
            | Phase::TurnTake(_)
            | Phase::UniqueOverride
            | Phase::UniqueInsert
            | Phase::UniqueClearOwn
            | Phase::UniqueBlindDelete) => self.on_unique_reply(phase, reply, sent, now),
            phase @ (Phase::BakeryEnter
            | Phase::BakeryReadMax
            | Phase::BakeryTicket(_)
            | Phase::BakeryCheck(_)
            | Phase::BakeryRefresh(_)) => self.on_bakery_reply(phase, reply, sent, now),
            phase @ (Phase::PrefixLook | Phase::PrefixWrite | Phase::PrefixRead) => {
                self.on_prefix_reply(phase, reply, sent, now)
            }
            phase => self.on_shared_reply(phase, reply, sent, now),
        }
    }

    /// A reply in a phase every strategy shares (the counter, stale cells, abandoning).
    fn on_shared_reply(&mut self, phase: Phase, reply: Reply, _sent: Instant, now: Instant) {
        match (phase, reply) {
            (Phase::DeleteStale(token), Reply::Written) => self.won(token, now),
            (Phase::Fence(mut bump), reply) => match bump.on_reply(reply) {
                Ok(Bumped::Token(token)) => {
                    self.fence_value = bump.next_value();
                    self.after_forced = bump.follows_forced();
                    self.won(token, now)
                }
                // Another owner moved the counter during our grant: a second holder, or a forced
                // release. Never take a token interleaved with another grant: start again.
                Ok(Bumped::Moved(_)) => self.abandon(Then::Restart),
                Ok(Bumped::Retry) if self.lapsed(now) => self.abandon(Then::Restart),
                Ok(Bumped::Retry) if self.opts.strategy == Strategy::UniqueInsert => {
                    self.read_fence();
                }
                Ok(Bumped::Retry) => {
                    self.io.send(bump.command());
                    self.phase = Phase::Fence(bump);
                }
                Err(e) => self.abandon(Then::Fail(e)),
            },
            (Phase::FenceRead, Reply::Cells(cells)) => {
                let still_ours = cells
                    .iter()
                    .any(|c| c.column == self.column && c.value == self.value);
                if !still_ours || self.lapsed(now) {
                    return self.abandon(Then::Restart);
                }
                let fence = cells
                    .into_iter()
                    .find(|c| c.column == self.columns.fence)
                    .map(|c| c.value);
                self.start_fence(fence, true);
            }
            (Phase::Abandon(then), Reply::Written | Reply::Conditional { .. }) => {
                self.wrote = false;
                match then {
                    Then::Restart => self.start_attempt(now),
                    Then::Contended(busy) => self.contended(now, busy),
                    Then::Fail(e) => self.finish(Err(e)),
                }
            }
            (phase, reply) => self.unexpected_reply(&phase, &reply),
        }
    }

    /// A reply that does not fit the phase: an internal error.
    fn unexpected_reply(&mut self, phase: &Phase, reply: &Reply) {
        self.finish(Err(unexpected(
            &format!("command of acquire phase {phase:?}"),
            reply,
        )));
    }
}

/// The delete of another owner's cell at the version a read returned (blind under the
/// deliberately broken variant).
pub(crate) fn delete_version(
    row: String,
    column: String,
    stamp: u64,
    consistency: crate::model::Consistency,
    sabotage: Sabotage,
) -> Command {
    if sabotage == Sabotage::BlindStaleDelete {
        return Command::Delete {
            row,
            column,
            consistency,
        };
    }
    Command::DeleteVersion {
        row,
        column,
        stamp,
        consistency,
    }
}

pub(crate) fn millis(d: core::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Operation for Acquire {
    type Output = Grant;

    fn poll(&mut self, now: Instant) -> Poll<Grant> {
        if self.started.is_none() {
            self.started = Some(now);
            self.wait_deadline = match self.opts.wait {
                Wait::TryOnce => now,
                Wait::Timeout(d) => now.saturating_add(d),
            };
            if let Some(until) = self.gives_up_at() {
                self.io.stop_retrying_at(until);
            }
        }
        loop {
            if let Some(result) = &self.result {
                return Poll::Ready(result.clone());
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Done(Ok(reply), sent) => self.on_reply(reply, sent, now),
                IoPoll::Done(Err(e), _) => self.failed(e),
                IoPoll::Idle => match core::mem::replace(&mut self.phase, Phase::Done) {
                    // A contended lock's courtesy: the waiters woken by our last release go
                    // first (a change at the store ends it early).
                    Phase::Start => match self.fair.courtesy.take() {
                        Some(wait)
                            if self.opts.wait != Wait::TryOnce
                                && !wait.is_zero()
                                && !self.turns.look_first =>
                        {
                            self.fair.courteous = true;
                            self.fair.courtesies = self.fair.courtesies.saturating_sub(1);
                            self.phase = Phase::Sleep {
                                until: now.saturating_add(wait).min(self.wait_deadline),
                                then: Next::Start,
                            };
                        }
                        _ => {
                            // With turns, the look first is the courtesy paid (counted as the
                            // sleep is, so that it ends as a courtesy does).
                            if self.turns.look_first {
                                self.fair.courtesies = self.fair.courtesies.saturating_sub(1);
                            }
                            self.start_attempt(now)
                        }
                    },
                    Phase::Sleep { until, then }
                        if now < until && (!self.fair.woken || !self.answers_wake(&then, now)) =>
                    {
                        self.fair.woken = false;
                        self.phase = Phase::Sleep { until, then };
                        return Poll::WaitUntil(until);
                    }
                    Phase::Sleep { then, .. } => {
                        self.fair.woke_attempt = core::mem::take(&mut self.fair.woken);
                        self.fair.courteous = false;
                        match then {
                            Next::Start => self.start_attempt(now),
                            Next::BakeryCheck(ticket) => self.bakery_check(ticket, now),
                            Next::PrefixKept => self.prefix_kept_check(now),
                        }
                    }
                    phase => self.finish(Err(Error::new(
                        ErrorKind::Internal,
                        format!(
                            "internal error: acquire phase {phase:?} has no command outstanding"
                        ),
                    ))),
                },
            }
        }
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.io.handle(id, reply);
    }

    fn wake(&mut self) {
        if matches!(self.phase, Phase::Sleep { .. }) && !self.fair.courteous {
            self.fair.woken = true;
            self.fair.signalled = true;
        }
    }
}
