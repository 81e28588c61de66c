//! The fencing counter: one cell per lock name, changed only by compare-and-set.
//!
//! After a strategy has won, the winner moves the counter from `token=n owner=X` to
//! `token=n+1 owner=me` (or creates `token=1 owner=me` with insert-if-absent). The counter has
//! no TTL and is never deleted (purge and forced release leave it), so tokens keep increasing
//! for the life of the table.
//!
//! Why tokens increase in grant order: counter updates are linearizable, so the tokens are
//! increasing in the order the updates took effect. A holder's update takes effect after it won
//! and before its grant is delivered; the next holder can only win after the previous one
//! released or its cell expired, which is after the previous holder's deadline; a grant whose
//! update answered after the deadline is refused. So successive valid grants update the counter
//! in grant order.
//!
//! A counter that another owner moves *while we are being granted* is a sign of a second
//! holder (or of a forced release): once our expectation of the counter comes from a read made
//! after our lock cell was in place, a failed compare-and-set that shows another owner's value
//! is not retried quietly; the acquisition abandons its cell and starts again, so it never takes
//! a token interleaved with someone else's grant. Only an expectation that may simply be old (a
//! hint from an earlier lease, or none) gets one quiet retry. A failed compare-and-set that shows
//! *our own* next value means an earlier send of ours was applied (a reply lost, or Cassandra's
//! `Unavailable` after a quorum accepted the proposal): that is our token.
//!
//! What the counter cannot survive, and the library cannot detect: the counter cell deleted by
//! hand, the table dropped and recreated, a SQLite file that lost its last commits in a power
//! failure under `synchronous=NORMAL` (the SQL store opens SQLite with `synchronous=FULL` for
//! this reason), a failover to an asynchronous replica that had not received the last updates.
//! Each makes tokens start again from an older value; docs/safety.md.
//!
//! Cost: one conditional round trip when the counter value is known (read in the same round trip
//! as the lock entries, or from a [`FenceHint`](crate::FenceHint)); two when the guess is stale.

use alloc::string::String;

use crate::error::unexpected;
use crate::error::Result;
use crate::model::{Command, Consistency, Reply, SerialConsistency, Turn};
use crate::record::Fence;

/// What a reply to a counter update means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Bumped {
    /// The counter moved to our token.
    Token(u64),
    /// Our expectation was old: send [`FenceBump::command`] again.
    Retry,
    /// Another owner moved the counter during our grant (its value): abandon the attempt.
    Moved(String),
}

#[derive(Clone, Debug)]
pub(crate) struct FenceBump {
    row: String,
    column: String,
    owner: String,
    acq: u64,
    expected: Option<Fence>,
    /// `expected` as the store holds it, byte for byte: what a compare-and-set expects. Never
    /// `expected` encoded again, which differs from a value another version of baton wrote (a
    /// field this one does not know) or a person edited (another spacing): the counter would
    /// never match, and the lock could never be taken again.
    expected_text: Option<String>,
    /// Whether `expected` was read after our lock cell was in place (so a different value
    /// found now was written during our grant).
    fresh: bool,
    consistency: Consistency,
    serial: SerialConsistency,
    /// Deliberately broken variant: a plain write of the next token instead of a
    /// compare-and-set (tokens can then repeat).
    blind: bool,
    /// The grant is shared or counted: other holders' grants may move the counter during
    /// ours, and are not a sign of anything wrong (see [`FenceBump::shared`]).
    shared: bool,
    /// With paths: the largest token of the related paths' counters at our deciding read; our
    /// token is above it (see [`FenceBump::above`]).
    floor: u64,
    /// A forced release's bump: whether its value carries the last exclusive token forward
    /// (`x=`), and the one holder it breaks (`fb=`), see [`FenceBump::forced`].
    carry: bool,
    breaking: Option<String>,
    /// Deliberately broken variant ([`crate::Sabotage::SharedRetriesAnyMove`]).
    loose: bool,
}

impl FenceBump {
    /// `current` is the counter's value as last seen (`None`: believed absent); `fresh` says
    /// whether it was read after our lock cell was written.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        row: &str,
        column: &str,
        owner: String,
        acq: u64,
        current: Option<&str>,
        fresh: bool,
        consistency: Consistency,
        serial: SerialConsistency,
    ) -> Result<Self> {
        let expected = current.map(Fence::decode).transpose()?;
        Ok(FenceBump {
            row: row.into(),
            column: column.into(),
            owner,
            acq,
            expected,
            expected_text: current.map(String::from),
            fresh,
            consistency,
            serial,
            blind: false,
            shared: false,
            floor: 0,
            carry: false,
            breaking: None,
            loose: false,
        })
    }

    /// The deliberately broken variant (see [`crate::Sabotage::FenceBlindWrite`]).
    pub fn blind(mut self, blind: bool) -> Self {
        self.blind = blind;
        self
    }

    /// The value this bump writes.
    pub fn next_value(&self) -> String {
        let forced = self.expected.as_ref().map_or(0, |f| f.forced);
        let forced = if self.owner == crate::record::FORCED {
            // Wrapping: the count is only ever compared for equality (a forced release
            // happened since), so even past u64::MAX (a counter edited by hand) every forced
            // release still changes it.
            forced.wrapping_add(1)
        } else {
            forced
        };
        let exclusive = (self.shared || self.carry)
            .then(|| self.expected.as_ref().map_or(0, Fence::last_exclusive));
        // A shared grant carries forward which one holder the last forced release broke.
        let broke = if self.breaking.is_some() {
            self.breaking.clone()
        } else if self.shared {
            self.expected.as_ref().and_then(|f| f.broke.clone())
        } else {
            None
        };
        Fence {
            token: self.next_token(),
            owner: self.owner.clone(),
            acq: self.acq,
            forced,
            exclusive,
            broke,
        }
        .encode()
    }

    pub fn command(&self) -> Command {
        let next = self.next_value();
        if self.blind {
            return Command::Put {
                row: self.row.clone(),
                column: self.column.clone(),
                value: next,
                ttl: None,
                consistency: self.consistency,
            };
        }
        match &self.expected_text {
            None => Command::InsertIfAbsent {
                row: self.row.clone(),
                column: self.column.clone(),
                value: next,
                ttl: None,
                serial: self.serial,
                consistency: self.consistency,
            },
            Some(current) => Command::CompareAndSet {
                row: self.row.clone(),
                column: self.column.clone(),
                expected: current.clone(),
                new: Some(next),
                ttl: None,
                serial: self.serial,
                consistency: self.consistency,
            },
        }
    }

    /// Whether the counter value this bump replaces was written by a forced release: that
    /// release may have read our lock cell before it moved the counter, and may still remove
    /// it after our grant (its deletes come after its count).
    pub fn follows_forced(&self) -> bool {
        self.expected
            .as_ref()
            .is_some_and(|f| f.owner == crate::record::FORCED)
    }

    /// The counter's value this bump expects, as read (`None`: no counter cell yet).
    pub fn expected_text(&self) -> Option<&str> {
        self.expected_text.as_deref()
    }

    /// The token this bump takes.
    pub fn token(&self) -> u64 {
        self.next_token()
    }

    /// Unique insert's fenced acquire in one step: insert `value` into `column` if no live cell
    /// is there, and move the counter as [`FenceBump::command`] would, both or neither, if
    /// `turn` (a condition on the turn cell, see [`Turn`]) holds.
    pub fn claim(
        &self,
        column: &str,
        value: String,
        ttl: core::time::Duration,
        turn: Option<Turn>,
    ) -> Command {
        Command::Claim {
            row: self.row.clone(),
            column: column.into(),
            value,
            ttl: Some(ttl),
            counter: self.column.clone(),
            counter_expected: self.expected_text.clone(),
            counter_next: self.next_value(),
            turn,
            serial: self.serial,
            consistency: self.consistency,
        }
    }

    fn next_token(&self) -> u64 {
        self.expected
            .as_ref()
            .map_or(0, |f| f.token)
            .max(self.floor)
            .saturating_add(1)
    }

    /// A forced release's bump. `carry`: its value carries the last exclusive token forward
    /// (`x=`), so that it reads as no exclusive grant to shared holders of this name and to
    /// holders of related paths (with paths, or when it breaks one holder); `breaking`: the
    /// one holder it breaks (`fb=`), whose co-holders then keep their leases.
    pub fn forced(mut self, carry: bool, breaking: Option<String>) -> Self {
        self.carry = carry || breaking.is_some();
        self.breaking = breaking;
        self
    }

    /// With paths: the token taken is above `floor`, the largest token of the counters of the
    /// paths related to ours as our deciding read found them (`docs/modes-design.md`, "Counters
    /// with paths"): so an exclusive grant's token exceeds every earlier related grant's, and a
    /// shared grant's every earlier related exclusive grant's.
    pub fn above(mut self, floor: u64) -> Self {
        self.floor = floor;
        self
    }

    /// For a shared or counted grant: a fresh miss that shows only co-holders' grants since
    /// the value we expected (shared grants: the same forced count and the same last
    /// exclusive token, `x=`) is retried from the value it shows, since co-holders are granted
    /// beside us. A move by an exclusive grant or a forced release abandons the attempt, as for
    /// an exclusive grant.
    pub fn shared(mut self, shared: bool) -> Self {
        self.shared = shared;
        self
    }

    /// The deliberately broken variant of [`FenceBump::shared`]'s retry (see
    /// [`crate::Sabotage::SharedRetriesAnyMove`]).
    pub fn loose(mut self, loose: bool) -> Self {
        self.loose = loose;
        self
    }

    /// What `reply` to [`FenceBump::command`] means.
    pub fn on_reply(&mut self, reply: Reply) -> Result<Bumped> {
        match reply {
            Reply::Conditional { applied: true, .. } | Reply::Written => {
                Ok(Bumped::Token(self.next_token()))
            }
            Reply::Conditional {
                applied: false,
                current,
            } => {
                if current.as_deref() == Some(self.next_value().as_str()) {
                    // An earlier send of ours was applied after all.
                    return Ok(Bumped::Token(self.next_token()));
                }
                let found = current.as_deref().map(Fence::decode).transpose()?;
                // Only shared grants beside ours: no forced release and no exclusive grant
                // since the value we expected (an exclusive grant, or a forced release that
                // may have removed our entry, seen here as a co-holder's move, let a reader
                // take a token beside a writer: column prefix seed 849682 of the
                // readers-and-writers million).
                let by_a_co_holder = self.shared
                    && found.as_ref().is_some_and(|f| {
                        f.owner != crate::record::FORCED
                            && (self.loose
                                || self.expected.as_ref().is_some_and(|e| {
                                    f.forced == e.forced && f.last_exclusive() == e.last_exclusive()
                                }))
                    });
                if self.fresh && !by_a_co_holder {
                    return Ok(Bumped::Moved(current.unwrap_or_default()));
                }
                self.expected = found;
                self.expected_text = current;
                self.fresh = true;
                Ok(Bumped::Retry)
            }
            other => Err(unexpected("fencing counter update", &other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn shared_bump(expected: &str) -> FenceBump {
        FenceBump::new(
            "jobs",
            "_LOCK_",
            "h2:1002:00000000000000aa".to_string(),
            0,
            Some(expected),
            true,
            Consistency::Quorum,
            SerialConsistency::Serial,
        )
        .expect("valid counter")
        .shared(true)
    }

    fn missed(bump: &mut FenceBump, current: &str) -> Bumped {
        bump.on_reply(Reply::Conditional {
            applied: false,
            current: Some(current.to_string()),
        })
        .expect("decodes")
    }

    /// Column prefix seed 849682 of the readers-and-writers million: a reader's bump from a
    /// forced release's value missed, and the counter showed a writer's grant after a second
    /// forced count. Retrying from it let the reader take a token beside the writer.
    #[test]
    fn a_shared_bump_retries_only_after_co_holders() {
        let forced = "token=17 owner=forced-release forced=3";
        let writer = "token=19 owner=h1:1001:00000000000000bb forced=4";
        assert_eq!(
            missed(&mut shared_bump(forced), writer),
            Bumped::Moved(writer.to_string())
        );
        let exclusive = "token=19 owner=h1:1001:00000000000000bb forced=3";
        assert!(matches!(
            missed(&mut shared_bump(forced), exclusive),
            Bumped::Moved(_)
        ));
        let again = "token=18 owner=forced-release forced=4 x=17";
        assert!(matches!(
            missed(&mut shared_bump(forced), again),
            Bumped::Moved(_)
        ));
        // A co-holder's grant: same forced count, same last exclusive token.
        let reader = "token=18 owner=h3:1003:00000000000000cc forced=3 x=17";
        let mut bump = shared_bump(forced);
        assert_eq!(missed(&mut bump, reader), Bumped::Retry);
        assert_eq!(bump.token(), 19);
    }

    /// Found by the fuzzer (fuzz/corpus/lock_table/counter-future-field): a counter holding a
    /// field this version does not know (written by a later version, which the encodings allow,
    /// or by hand) was expected re-encoded, without the field, so no compare-and-set of it ever
    /// applied and no strategy could take the lock again. The bump expects the text as read.
    #[test]
    fn a_bump_expects_the_counter_as_read() {
        let read = "token=42 owner=web-1:4242:00000000deadbeef acq=5f0e1d2c3b4a6978 future=1";
        let mut bump = shared_bump(read);
        let expected = |c: Command| match c {
            Command::CompareAndSet { expected, .. } => Some(expected),
            Command::Claim {
                counter_expected, ..
            } => counter_expected,
            other => panic!("{other:?}"),
        };
        assert_eq!(expected(bump.command()).as_deref(), Some(read));
        let claim = bump.claim(
            "lock",
            "v".to_string(),
            core::time::Duration::from_secs(1),
            None,
        );
        assert_eq!(expected(claim).as_deref(), Some(read));
        // Retried from a value read in a reply: that text, too.
        let co_holder = "token=43 owner=h3:1003:00000000000000cc  x=42";
        assert_eq!(missed(&mut bump, co_holder), Bumped::Retry);
        assert_eq!(expected(bump.command()).as_deref(), Some(co_holder));
    }

    #[test]
    fn every_strategy_takes_a_lock_whose_counter_has_an_unknown_field() {
        use crate::{Acquire, Instant, LockName, LockOptions, MemoryTable, Operation, OwnerId};
        use crate::{Poll, Strategy, Wait};
        for strategy in Strategy::ALL {
            let mut table = MemoryTable::new();
            let now = Instant::from_nanos(1_000_000_000);
            let counter = "token=42 owner=web-1:4242:00000000deadbeef future=1";
            let _ = table.apply(
                &Command::Put {
                    row: "job".into(),
                    column: "_LOCK_".into(),
                    value: counter.into(),
                    ttl: None,
                    consistency: Consistency::Quorum,
                },
                now,
            );
            let opts = LockOptions {
                strategy,
                wait: Wait::TryOnce,
                ..LockOptions::default()
            };
            let owner = OwnerId::new("me", 1, 1).expect("valid");
            let name = LockName::new("job").expect("valid");
            let mut op = Acquire::new(name, owner, opts).expect("valid");
            let grant = loop {
                match op.poll(now) {
                    Poll::Execute(id, command) => op.handle(id, table.apply(&command, now)),
                    Poll::WaitUntil(_) => panic!("{strategy}: waits on a free lock"),
                    Poll::Ready(result) => break result,
                }
            };
            let grant = grant.unwrap_or_else(|e| panic!("{strategy}: {e}"));
            assert_eq!(grant.lease.token(), 43, "{strategy}");
        }
    }

    /// Found by the fuzzer (fuzz/corpus/lock_table/largest): a forced release of a lock whose
    /// counter says `forced=18446744073709551615` overflowed counting itself (a panic in a
    /// build with overflow checks). The count wraps, so it still changes.
    #[test]
    fn a_forced_release_counts_past_the_largest_count() {
        let read = "token=18446744073709551615 owner=forced-release forced=18446744073709551615 x=18446744073709551615";
        let bump = FenceBump::new(
            "job",
            "_LOCK_",
            crate::record::FORCED.to_string(),
            0,
            Some(read),
            true,
            Consistency::Quorum,
            SerialConsistency::Serial,
        )
        .expect("valid counter")
        .forced(true, None);
        let next = Fence::decode(&bump.next_value()).expect("decodes");
        assert_eq!((next.token, next.forced), (u64::MAX, 0));
    }
}
