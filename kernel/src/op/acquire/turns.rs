//! Unique insert's *turns* ([`LockOptions::turns`](crate::LockOptions::turns)): the next grant
//! reserved for one waiter, so that on a store that cannot wake waiters (Cassandra) the client
//! that releases and locks again at once stops winning every hand-off, and waiters do not send
//! claims that meet each other's.
//!
//! Why claims must not meet: with Paxos v1 (Cassandra's default), a conditional write whose
//! ballot another's pre-empts on the same partition sleeps a random 0-99 ms in the coordinator
//! before it tries again. A release that meets a waiter's claim pays that too: with 8 clients
//! looping on one name, waiters that claimed whenever a look found the lock free left 2% of
//! releases over 10 ms and the mean release at 2.5 times its median.
//!
//! - **The cell.** [`TURN_COLUMN`] in the lock's row holds one waiter's turn value (its owner,
//!   acquisition and place, below), written with a plain put and a TTL of [`TURN_TTL`]. A
//!   waiter writes it when a look (below) finds no live turn and either the lock free or the
//!   lock held and itself passed over at least once (aging's count); it writes it again when
//!   its look finds its own turn with less than half of [`TURN_TTL`] left. Two waiters writing
//!   at once: the last write wins, and the other sees it at its next look.
//! - **Claims by turn.** A waiter's look that finds the lock free and no turn does not claim:
//!   it writes its turn and claims at its next look. Only a first attempt (a client looping on
//!   the name, or a new one) and a waiter whose wait ends within four round trips (which would
//!   leave its turn behind) claim without a turn of their own.
//! - **Every claim carries a condition on it** ([`Turn`]): no live turn, or, when our last
//!   look found ours, exactly ours, which the claim then removes in the same step. The looping
//!   releaser's claim therefore fails while someone is reserved (answered as not applied with
//!   the lock free and the counter as expected, which nothing else answers) and it becomes a
//!   waiter. The condition is on a cell of the same row, in the same step: an uncontended lock
//!   + release stays at two conditional writes.
//! - **The longest waiter first.** A waiter's *place* is the fencing counter's token when it
//!   first found the lock taken or reserved (`since=` in its turn value; the counter moves at
//!   every grant, so an earlier place means a longer wait, and no clocks are compared). A look
//!   that finds a later waiter's turn while the lock is held writes ours over it; on a free
//!   lock it leaves it (that waiter is claiming) and looks again at the reserved pace. A turn
//!   value without a place (an earlier build's) is never written over.
//! - **A turn left behind.** A waiter whose looks find the same other waiter's turn on a free
//!   lock for [`TURN_STALE_MIN`] (or eight of its round trips, if longer) takes it over: a
//!   waiter holding the turn looks about once a round trip and claims at once, so that turn's
//!   waiter is gone or stalled, and the lock would otherwise stay idle until the turn's TTL
//!   (a second, two at Cassandra after its whole-second rounding).
//! - **Looks.** With turns, a retry that ends a back-off (not one a wake-up started) reads the
//!   row first, at the plain consistency, and claims only if the lock is free and the turn is
//!   ours (or, for the first attempt after a contended lease, nobody's). A waiter's poll is
//!   then a read, which takes no part in Paxos.
//! - **The reserved waiter polls fast**: once a round trip (at least [`TURN_POLL_MIN`], at most
//!   an eighth of [`TURN_TTL`]); the others keep aging's pace.
//!
//! **Safety does not rest on it.** A claim still applies only if the lock cell is absent and
//! the counter holds exactly the value expected; the turn only adds a condition, so it can
//! make a claim fail, never succeed where it would not have. A lost, late or reordered write
//! of the turn (plain writes and conditional ones order by timestamps, not ballots, and a
//! client's clock may be skewed) misplaces a turn or makes claims wait for up to [`TURN_TTL`]
//! of the store's clock, nothing more: a reservation nobody refreshes stops blocking claims
//! when its TTL ends. A waiter that gives up while reserved leaves its turn to expire.
//! `Sabotage::TurnOverridesLock`, a waiter that takes its turn for a grant, is the broken
//! variant the simulator must catch.

use alloc::format;
use alloc::string::String;
use core::time::Duration;

use super::{Acquire, Phase};
use crate::error::{Error, ErrorKind};
use crate::model::{Cell, Command, ReadConsistency, Turn};
use crate::options::{Sabotage, Strategy};
use crate::reserved::TURN_COLUMN;
use crate::time::Instant;

/// How long a turn lives unless its waiter writes it again. Cassandra's TTLs are whole
/// seconds: a waiter that died while reserved holds up the others this long at most.
pub const TURN_TTL: Duration = Duration::from_secs(1);

/// The shortest time another waiter's turn stands on a free lock before a waiter takes it
/// over (see `Acquire::stale_after`): longer than a live waiter's pause (a round trip, which
/// a host's timer may round up to a millisecond), look and claim.
pub const TURN_STALE_MIN: Duration = Duration::from_millis(10);

/// The shortest wait between the reserved waiter's looks.
pub const TURN_POLL_MIN: Duration = Duration::from_micros(200);

/// The turn cell as our last look found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TurnSeen {
    /// No live turn.
    Nobody,
    /// Ours, with this much time to live left (`None`: no TTL).
    Ours(Option<Duration>),
    /// Another waiter's.
    Other,
    /// Another waiter's, which started waiting after us (a later counter in its `since=`):
    /// ours goes over it.
    Younger,
}

/// One acquisition's turn.
#[derive(Debug, Default)]
pub(super) struct Turns {
    /// We hold the turn as far as we know: we wrote it, and no look or claim since showed
    /// otherwise. A claim then expects it, and we poll at the reserved pace.
    pub(super) holding: bool,
    /// The turn cell as the last look found it, until the look's outcome is decided.
    pub(super) seen: Option<TurnSeen>,
    /// The first attempt looks before it claims: the locker's previous lease of the name was
    /// contended (it owes a courtesy), so a waiter may have taken the turn meanwhile.
    pub(super) look_first: bool,
    /// Our place among the waiters: the fencing counter's token when we first found the lock
    /// taken or reserved (`None` until then). Written in our turn value (`since=`); a waiter
    /// with an earlier place writes its turn over ours, so that the waiter that has waited
    /// longest takes the next grant. It orders by the store's counter, not by clocks.
    pub(super) since: Option<u64>,
    /// Our last look found a later waiter's turn on a free lock: we look at the reserved pace
    /// until we can write ours over it while the lock is held.
    pub(super) chasing: bool,
    /// Another waiter's turn that our looks have found on a free lock, and when they first did:
    /// a turn whose waiter does not claim for [`stale_after`](Acquire::stale_after) is taken
    /// over, so that a turn left behind holds the lock idle for that long, not its TTL.
    pub(super) free_turn: Option<(String, Instant)>,
}

impl Acquire {
    /// Whether this acquisition uses turns.
    pub(super) fn uses_turns(&self) -> bool {
        self.opts.turns == Some(true)
            && self.opts.strategy == Strategy::UniqueInsert
            && self.opts.sabotage() != Sabotage::FenceBlindWrite
    }

    /// The value our turn cell holds: our owner and acquisition, and our place.
    fn turn_value(&self) -> String {
        match self.turns.since {
            Some(since) => format!(
                "{} acq={:x} since={since}",
                self.owner.key(),
                self.opts.acquisition
            ),
            None => format!("{} acq={:x}", self.owner.key(), self.opts.acquisition),
        }
    }

    /// Takes our place among the waiters from the counter last seen (0 before the first
    /// grant of the name), once: before our first turn is written, so that our turn value
    /// never changes.
    pub(super) fn note_place(&mut self) {
        if self.turns.since.is_none() {
            self.turns.since = self
                .unique
                .counter_seen
                .as_deref()
                .and_then(|c| crate::record::Fence::decode(c).ok())
                .map_or(Some(0), |f| Some(f.token));
        }
    }

    /// How another waiter's turn value `value` compares with ours: younger when both carry a
    /// place and its place is later than ours.
    fn other_turn(&self, value: &str) -> TurnSeen {
        let place = value
            .rsplit_once(" since=")
            .and_then(|(_, n)| n.parse::<u64>().ok());
        match (self.turns.since, place) {
            (Some(ours), Some(theirs)) if ours < theirs => TurnSeen::Younger,
            _ => TurnSeen::Other,
        }
    }

    /// The turn condition of our next claim (`None` without turns).
    pub(super) fn turn_condition(&self) -> Option<Turn> {
        if !self.uses_turns() {
            return None;
        }
        Some(if self.turns.holding {
            Turn::Ours(self.turn_value())
        } else {
            Turn::Free
        })
    }

    /// A retry that ends a back-off: reads the row (plain) before claiming.
    pub(super) fn look(&mut self) {
        self.phase = Phase::UniqueLook;
        self.io.send(Command::Read {
            row: self.row(),
            filter: crate::model::ColumnFilter::All,
            consistency: ReadConsistency::Plain(self.opts.consistency),
        });
    }

    /// The look's cells: claim, wait (taking the turn if it is due), or wait for the waiter
    /// whose turn it is.
    pub(super) fn on_look(&mut self, cells: alloc::vec::Vec<Cell>, now: Instant) {
        let (mut current, mut counter, mut turn) = (None, None, TurnSeen::Nobody);
        let mut others_turn = String::new();
        let ours = self.turn_value();
        for cell in cells {
            if cell.column == self.column {
                current = Some(cell.value);
            } else if cell.column == self.columns.fence {
                counter = Some(cell.value);
            } else if cell.column == TURN_COLUMN {
                turn = if cell.value == ours {
                    TurnSeen::Ours(cell.ttl_remaining)
                } else {
                    others_turn = cell.value;
                    TurnSeen::Other
                };
            }
        }
        // A guess, as a hint's is: a claim from a stale one fails and shows the value.
        if counter.is_some() {
            self.unique.counter_seen.clone_from(&counter);
        }
        let reserved = !matches!(turn, TurnSeen::Nobody);
        if current.is_some() || reserved {
            self.note_place();
        }
        if let TurnSeen::Other = turn {
            turn = self.other_turn(&others_turn);
        }
        self.turns.chasing = current.is_none() && turn == TurnSeen::Younger;
        let stale = self.note_free_turn(current.is_none(), turn, others_turn, now);
        self.turns.holding = matches!(turn, TurnSeen::Ours(_));
        match current {
            Some(current) => {
                if self.turns.holding && self.opts.sabotage() == Sabotage::TurnOverridesLock {
                    return self.override_lock();
                }
                self.turns.seen = Some(turn);
                let seen = alloc::vec![counter.unwrap_or_else(|| current.clone())];
                self.unique_taken(current, seen, now);
            }
            // Another waiter's turn on a free lock, standing there too long: left behind.
            None if stale => self.take_turn(self.reserved_for_another()),
            // Another waiter's turn on a free lock: it is claiming now. A turn written over it
            // at this moment would only refuse its claim; an earlier waiter takes the turn over
            // while the lock is held (`wait_behind`).
            None if matches!(turn, TurnSeen::Other | TurnSeen::Younger) => {
                self.contended(now, self.reserved_for_another())
            }
            // A waiter's retry that finds the lock free and nobody's turn takes the turn and
            // claims at its next look, not racing the releaser's own claim (the module doc:
            // "Claims by turn"). The first attempt (a client looping on the name) claims at once.
            None if turn == TurnSeen::Nobody && self.attempts > 1 && self.time_for_a_turn(now) => {
                self.take_turn(self.free_for_the_turn());
            }
            None => self.claim(),
        }
    }

    /// Records another waiter's turn found on a free lock (`free`), and says whether the same
    /// turn has been there, the lock free at each of our looks, for
    /// [`stale_after`](Acquire::stale_after): its waiter is gone or stalled (a waiter holding
    /// the turn looks about once a round trip and claims at once).
    fn note_free_turn(&mut self, free: bool, turn: TurnSeen, value: String, now: Instant) -> bool {
        if !free || !matches!(turn, TurnSeen::Other | TurnSeen::Younger) {
            self.turns.free_turn = None;
            return false;
        }
        match &self.turns.free_turn {
            Some((seen, since)) if *seen == value => {
                now.saturating_duration_since(*since) >= self.stale_after()
            }
            _ => {
                self.turns.free_turn = Some((value, now));
                false
            }
        }
    }

    /// How long another waiter's turn may stand on a free lock before we take it over: eight
    /// of our round trips, at least [`TURN_STALE_MIN`].
    fn stale_after(&self) -> Duration {
        self.round_trip.saturating_mul(8).max(TURN_STALE_MIN)
    }

    /// Whether our wait has room for a turn before a claim: a write, a pause and a look (four
    /// of our round trips at least) before it ends. A waiter whose wait ends sooner claims at
    /// once rather than leave a turn that would hold the others' claims up for [`TURN_TTL`]
    /// after it gives up.
    fn time_for_a_turn(&self, now: Instant) -> bool {
        let needed = self.round_trip.max(TURN_POLL_MIN).saturating_mul(4);
        now.saturating_add(needed) < self.wait_deadline
    }

    /// The lock is held and our cell is not in the way: wait, taking the turn first if our
    /// last look found it due (nobody's and we were passed over, or ours and soon to end).
    pub(super) fn wait_behind(&mut self, busy: Error, now: Instant) {
        let due = match self.turns.seen.take() {
            Some(TurnSeen::Nobody) => self.fair.aging.passed_over(),
            Some(TurnSeen::Ours(left)) => left.is_none_or(|left| left < TURN_TTL / 2),
            Some(TurnSeen::Younger) => true,
            Some(TurnSeen::Other) | None => false,
        };
        if !due {
            return self.contended(now, busy);
        }
        self.take_turn(busy);
    }

    /// Writes our turn (a plain put with [`TURN_TTL`]); then waits at the reserved pace.
    fn take_turn(&mut self, busy: Error) {
        self.note_place();
        self.phase = Phase::TurnTake(busy);
        self.io.send(Command::Put {
            row: self.row(),
            column: TURN_COLUMN.into(),
            value: self.turn_value(),
            ttl: Some(TURN_TTL),
            consistency: self.opts.consistency,
        });
    }

    /// Our turn is written: wait for the lock at the reserved pace.
    pub(super) fn turn_taken(&mut self, busy: Error, now: Instant) {
        self.turns.holding = true;
        self.contended(now, busy);
    }

    /// A claim answered "not applied" with the lock free and the counter as expected: its turn
    /// condition failed (someone else's turn, or ours ended).
    pub(super) fn turn_refused(&mut self, now: Instant) {
        self.turns.holding = false;
        self.note_place();
        self.contended(now, self.reserved_for_another());
    }

    /// The wait before the next look of a waiter holding the turn, or chasing a later
    /// waiter's: about a round trip.
    pub(super) fn turn_pace(&self) -> Option<Duration> {
        (self.turns.holding || self.turns.chasing)
            .then(|| self.round_trip.clamp(TURN_POLL_MIN, TURN_TTL / 8))
    }

    fn free_for_the_turn(&self) -> Error {
        Error::new(
            ErrorKind::Busy,
            format!(
                "lock {:?} was free, and its next grant is being reserved for this waiter",
                self.name.as_str()
            ),
        )
    }

    fn reserved_for_another(&self) -> Error {
        Error::new(
            ErrorKind::Busy,
            format!(
                "the next grant of lock {:?} is reserved for another waiter",
                self.name.as_str()
            ),
        )
    }

    /// The broken variant: our record written over the holder's, then the counter moved.
    fn override_lock(&mut self) {
        self.new_record_value();
        self.phase = Phase::UniqueOverride;
        self.io.send(Command::Put {
            row: self.row(),
            column: self.column.clone(),
            value: self.value.clone(),
            ttl: Some(self.opts.ttl),
            consistency: self.opts.consistency,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Consistency, Reply, SerialConsistency};
    use crate::{
        Grant, LockName, LockOptions, MemoryTable, Operation, OwnerId, Poll, Release, Wait,
    };

    const T0: Instant = Instant::from_nanos(1_000_000_000);

    fn at(ms: u64) -> Instant {
        T0.saturating_add(Duration::from_millis(ms))
    }

    fn claim(turn: Option<Turn>, expected: Option<&str>) -> Command {
        Command::Claim {
            row: "job".into(),
            column: "lock".into(),
            value: "owner=a".into(),
            ttl: Some(Duration::from_secs(60)),
            counter: "_LOCK_".into(),
            counter_expected: expected.map(String::from),
            counter_next: "token=1 owner=a".into(),
            turn,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        }
    }

    fn put_turn(table: &mut MemoryTable, value: &str, now: Instant) {
        let put = Command::Put {
            row: "job".into(),
            column: TURN_COLUMN.into(),
            value: value.into(),
            ttl: Some(TURN_TTL),
            consistency: Consistency::Quorum,
        };
        assert_eq!(table.apply(&put, now), Reply::Written);
    }

    fn applied(reply: &Reply) -> bool {
        matches!(reply, Reply::Guarded { applied: true, .. })
    }

    #[test]
    fn the_memory_table_checks_a_claims_turn_and_removes_ours() {
        let mut table = MemoryTable::new();
        put_turn(&mut table, "b acq=1", T0);
        let refused = Reply::Guarded {
            applied: false,
            current: None,
            guard: None,
        };
        assert_eq!(table.apply(&claim(Some(Turn::Free), None), T0), refused);
        let other = claim(Some(Turn::Ours("c acq=2".into())), None);
        assert_eq!(table.apply(&other, T0), refused);
        // No condition: the turn is not looked at (a store that ignores turns).
        let mut ignoring = table.clone();
        assert!(applied(&ignoring.apply(&claim(None, None), T0)));
        // Ours: applied, and the turn is gone with it.
        let ours = claim(Some(Turn::Ours("b acq=1".into())), None);
        assert!(applied(&table.apply(&ours, T0)));
        assert!(table
            .read("job", &crate::ColumnFilter::All, T0)
            .iter()
            .all(|c| c.column != TURN_COLUMN));
        // A turn nobody refreshes stops counting when its TTL ends.
        let mut table = MemoryTable::new();
        put_turn(&mut table, "b acq=1", T0);
        assert!(!applied(
            &table.apply(&claim(Some(Turn::Free), None), at(999))
        ));
        assert!(applied(
            &table.apply(&claim(Some(Turn::Free), None), at(1_000))
        ));
    }

    /// Where an operation stopped: waiting until an instant, or done.
    enum Stop<T> {
        Waits(Instant),
        Done(crate::Result<T>),
    }

    fn drive<O: Operation>(op: &mut O, table: &mut MemoryTable, now: Instant) -> Stop<O::Output> {
        loop {
            match op.poll(now) {
                Poll::Execute(id, command) => op.handle(id, table.apply(&command, now)),
                Poll::WaitUntil(until) => return Stop::Waits(until),
                Poll::Ready(result) => return Stop::Done(result),
            }
        }
    }

    fn acquire(owner: u32, wait: Wait, acquisition: u64) -> Acquire {
        let opts = LockOptions {
            wait,
            turns: Some(true),
            acquisition,
            seed: u64::from(owner),
            ..LockOptions::default()
        };
        let owner = OwnerId::new("h", owner, 7).expect("valid");
        Acquire::new(LockName::new("job").expect("valid"), owner, opts).expect("valid")
    }

    fn granted(op: &mut Acquire, table: &mut MemoryTable, now: Instant) -> Grant {
        match drive(op, table, now) {
            Stop::Done(Ok(grant)) => grant,
            Stop::Done(Err(e)) => panic!("not granted: {e}"),
            Stop::Waits(_) => panic!("not granted: waits"),
        }
    }

    /// `grant` went to owner `n` (of `acquire`'s owners).
    fn assert_granted_to(grant: &Grant, n: u32) {
        let owner = OwnerId::new("h", n, 7).expect("valid");
        assert_eq!(grant.lease.owner().key(), owner.key());
    }

    /// Owner 1 holds the lock (acquisition 11) and owner 2 waits for it (acquisition 21,
    /// default wait of 30 s): the grant, the waiter, and when it looks next.
    fn held_with_a_waiter(table: &mut MemoryTable) -> (Grant, Acquire, Instant) {
        let wait = Wait::Timeout(Duration::from_secs(30));
        let holder = granted(&mut acquire(1, wait, 11), table, at(0));
        let mut waiter = acquire(2, wait, 21);
        let Stop::Waits(next) = drive(&mut waiter, table, at(0)) else {
            panic!("the waiter waits");
        };
        (holder, waiter, next)
    }

    fn release(grant: &Grant, table: &mut MemoryTable, now: Instant) {
        let mut op = Release::new(&grant.lease);
        assert!(matches!(drive(&mut op, table, now), Stop::Done(Ok(_))));
    }

    fn turn_of(table: &MemoryTable, now: Instant) -> Option<String> {
        table
            .read("job", &crate::ColumnFilter::All, now)
            .into_iter()
            .find(|c| c.column == TURN_COLUMN)
            .map(|c| c.value)
    }

    /// A waiter that saw the lock change hands takes the turn, the releaser's next claim is
    /// refused by it, and the waiter takes the lock, removing its turn.
    #[test]
    fn a_passed_over_waiter_takes_the_turn_and_the_next_grant() {
        let mut table = MemoryTable::new();
        let wait = Wait::Timeout(Duration::from_secs(30));
        let first = granted(&mut acquire(1, wait, 11), &mut table, at(0));
        let mut waiter = acquire(2, wait, 21);
        let Stop::Waits(mut next) = drive(&mut waiter, &mut table, at(0)) else {
            panic!("the waiter waits");
        };
        // The holder hands the lock to itself again while the waiter sleeps: the waiter's next
        // look finds another holder (passed over) and no turn, and takes it.
        release(&first, &mut table, at(1));
        let mut again = granted(&mut acquire(1, wait, 13), &mut table, at(1));
        let mut reserved = false;
        for _ in 0..20 {
            let Stop::Waits(until) = drive(&mut waiter, &mut table, next) else {
                panic!("the waiter waits while the lock is held");
            };
            next = until;
            if turn_of(&table, next).is_some() {
                reserved = true;
                break;
            }
            release(&again, &mut table, next);
            again = granted(&mut acquire(1, wait, 15), &mut table, next);
        }
        assert!(reserved, "the passed-over waiter never took the turn");
        assert!(waiter.turns.holding);
        // The waiter polls about once a round trip (none here: the minimum).
        let Stop::Waits(until) = drive(&mut waiter, &mut table, next) else {
            panic!("still held");
        };
        assert!(until <= next.saturating_add(TURN_POLL_MIN), "{until:?}");
        // The holder releases and tries again at once: the turn refuses it.
        release(&again, &mut table, until);
        match drive(&mut acquire(1, Wait::TryOnce, 17), &mut table, until) {
            Stop::Done(Err(e)) => {
                assert_eq!(e.kind(), crate::ErrorKind::Busy);
                assert!(e.message().contains("reserved for another waiter"), "{e}");
            }
            _ => panic!("the releaser took the lock reserved for the waiter"),
        }
        let grant = granted(&mut waiter, &mut table, until);
        assert_granted_to(&grant, 2);
        assert_eq!(turn_of(&table, until), None, "the turn outlived its grant");
    }

    /// The first command an acquisition sends.
    fn first_command(op: &mut Acquire, now: Instant) -> Command {
        match op.poll(now) {
            Poll::Execute(_, command) => command,
            _ => panic!("no command first"),
        }
    }

    /// After a contended lease the next acquisition looks before it claims, once (the courtesy
    /// a store that does not wake waiters is owed, paid as a look), and the one after claims at
    /// once.
    #[test]
    fn after_a_contended_lease_the_next_acquisition_looks_first_once() {
        let mut table = MemoryTable::new();
        let wait = Wait::Timeout(Duration::from_secs(30));
        let (first, mut waiter, next) = held_with_a_waiter(&mut table);
        release(&first, &mut table, at(1));
        let (contended, next) = granted_in_time(&mut waiter, &mut table, next);
        release(&contended, &mut table, next);
        let hint = || Some(contended.lease.fence_hint());
        let mut again = acquire(2, wait, 23).with_fence_hint(hint());
        assert!(matches!(
            first_command(&mut again, next),
            Command::Read { .. }
        ));
        let second = granted(
            &mut acquire(2, wait, 23).with_fence_hint(hint()),
            &mut table,
            next,
        );
        release(&second, &mut table, next);
        let mut third = acquire(2, wait, 25).with_fence_hint(Some(second.lease.fence_hint()));
        assert!(matches!(
            first_command(&mut third, next),
            Command::Claim { .. }
        ));
    }

    /// Drives `op` through its waits until it is granted: the grant and when.
    fn granted_in_time(
        op: &mut Acquire,
        table: &mut MemoryTable,
        from: Instant,
    ) -> (Grant, Instant) {
        let mut now = from;
        for _ in 0..100 {
            match drive(op, table, now) {
                Stop::Done(Ok(grant)) => return (grant, now),
                Stop::Done(Err(e)) => panic!("not granted: {e}"),
                Stop::Waits(until) => now = until,
            }
        }
        panic!("not granted after 100 waits");
    }

    /// A waiter's look that finds the lock free and nobody's turn takes the turn (a plain
    /// write) instead of claiming, and claims at its next look with the turn as the condition.
    #[test]
    fn a_waiter_that_finds_the_lock_free_takes_the_turn_before_it_claims() {
        let mut table = MemoryTable::new();
        let (first, mut waiter, next) = held_with_a_waiter(&mut table);
        release(&first, &mut table, at(1));
        // Its retry looks, finds the lock free and no turn: a put of its turn, no claim.
        let mut sent = alloc::vec::Vec::new();
        let mut now = next;
        let grant = loop {
            match waiter.poll(now) {
                Poll::Execute(id, command) => {
                    sent.push(command.clone());
                    waiter.handle(id, table.apply(&command, now));
                }
                Poll::WaitUntil(until) => now = until,
                Poll::Ready(result) => break result.expect("granted"),
            }
        };
        let kinds: alloc::vec::Vec<&str> = sent
            .iter()
            .map(|c| match c {
                Command::Read { .. } => "look",
                Command::Put { column, .. } if column == TURN_COLUMN => "turn",
                Command::Claim {
                    turn: Some(Turn::Ours(_)),
                    ..
                } => "claim ours",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds[..4],
            ["look", "turn", "look", "claim ours"],
            "{kinds:?}"
        );
        assert_granted_to(&grant, 2);
    }

    /// A waiter that started waiting earlier (an earlier counter) writes its turn over a later
    /// waiter's while the lock is held.
    #[test]
    fn the_waiter_that_waited_longest_takes_the_turn_over_a_later_one() {
        let mut table = MemoryTable::new();
        let wait = Wait::Timeout(Duration::from_secs(30));
        let (holder, mut old, old_next) = held_with_a_waiter(&mut table);
        // The lock changes hands once (the holder again): a later waiter arrives after that,
        // and its place is the later counter.
        release(&holder, &mut table, at(1));
        let holder = granted(&mut acquire(1, wait, 13), &mut table, at(1));
        let mut young = acquire(3, wait, 31);
        assert!(matches!(
            drive(&mut young, &mut table, at(1)),
            Stop::Waits(_)
        ));
        put_turn(
            &mut table,
            &format!("{} acq=1f since=99", young_key()),
            at(2),
        );
        // The earlier waiter's next look finds the later one's turn and writes its own over it.
        let Stop::Waits(_) = drive(&mut old, &mut table, old_next.max(at(2))) else {
            panic!("still held");
        };
        let turn = turn_of(&table, old_next.max(at(2))).expect("a turn");
        assert!(
            turn.contains("acq=15") && turn.contains("since=1"),
            "{turn}"
        );
        release(&holder, &mut table, at(3));
        let _ = young;
    }

    /// A waiter whose wait ends within a few round trips claims a free lock at once: a turn
    /// it left behind when it gives up would hold the others up for `TURN_TTL`.
    #[test]
    fn a_waiter_about_to_give_up_claims_without_a_turn() {
        let mut table = MemoryTable::new();
        let wait = Wait::Timeout(Duration::from_millis(50));
        let holder = granted(&mut acquire(1, wait, 11), &mut table, at(0));
        let mut waiter = acquire(2, wait, 21);
        assert!(matches!(
            drive(&mut waiter, &mut table, at(0)),
            Stop::Waits(_)
        ));
        release(&holder, &mut table, at(1));
        let late = at(50).saturating_sub(Duration::from_micros(500));
        let mut sent = alloc::vec::Vec::new();
        let granted = loop {
            match waiter.poll(late) {
                Poll::Execute(id, command) => {
                    sent.push(command.clone());
                    waiter.handle(id, table.apply(&command, late));
                }
                Poll::WaitUntil(until) => panic!("waits until {until:?}: {sent:?}"),
                Poll::Ready(result) => break result,
            }
        };
        assert!(granted.is_ok(), "{granted:?}");
        assert!(
            !sent
                .iter()
                .any(|c| matches!(c, Command::Put { column, .. } if column == TURN_COLUMN)),
            "{sent:?}"
        );
    }

    /// Another waiter's turn that stands on a free lock (its waiter gone) is taken over once
    /// our looks have found it there for `TURN_STALE_MIN`, not left to block every claim
    /// until its TTL.
    #[test]
    fn a_turn_left_on_a_free_lock_is_taken_over() {
        let mut table = MemoryTable::new();
        let (holder, mut waiter, next) = held_with_a_waiter(&mut table);
        release(&holder, &mut table, at(1));
        put_turn(&mut table, "gone acq=9 since=0", at(1));
        let mut now = next.max(at(2));
        let mut looks_before = 0;
        let grant = loop {
            match drive(&mut waiter, &mut table, now) {
                Stop::Done(result) => break result.expect("granted"),
                Stop::Waits(until) => {
                    if turn_of(&table, until).as_deref() == Some("gone acq=9 since=0") {
                        looks_before += 1;
                    }
                    now = until;
                }
            }
            assert!(
                now < at(2).saturating_add(TURN_TTL / 2),
                "still waiting at {now:?}"
            );
        };
        assert!(looks_before >= 1, "taken over at the first look");
        assert!(
            now >= at(2).saturating_add(TURN_STALE_MIN),
            "taken over at {now:?}, before the turn had stood TURN_STALE_MIN"
        );
        assert_granted_to(&grant, 2);
    }

    /// A later waiter's turn on a free lock is left alone (that waiter is claiming; a turn
    /// written over it now would only refuse its claim), and the earlier waiter looks again at
    /// the reserved pace, to take the turn over while the lock is next held.
    #[test]
    fn a_later_waiters_turn_on_a_free_lock_is_left_and_chased() {
        let mut table = MemoryTable::new();
        let (holder, mut old, old_next) = held_with_a_waiter(&mut table);
        let now = old_next.max(at(2));
        release(&holder, &mut table, at(1));
        let young = format!("{} acq=1f since=99", young_key());
        put_turn(&mut table, &young, at(1));
        let Stop::Waits(until) = drive(&mut old, &mut table, now) else {
            panic!("the earlier waiter took a lock reserved for the later one");
        };
        assert_eq!(turn_of(&table, now).as_deref(), Some(young.as_str()));
        assert!(until <= now.saturating_add(TURN_POLL_MIN), "{until:?}");
    }

    fn young_key() -> String {
        OwnerId::new("h", 3, 7).expect("valid").key()
    }
}
