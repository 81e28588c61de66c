//! Column prefix's steps of an acquisition: our column written, then the prefix read.
//!
//! A retry first reads the prefix (the *look*), and writes its column only if no other live
//! column is there; a first attempt writes at once. Without the look, every waiter's retry
//! wrote a column for a round trip or two, and any attempt that read one of them backed off:
//! with 8 clients on one name, waiters' polls and wake-ups made most hand-offs collide (both
//! contenders back off, and the lock stays free until one of them retries). The look decides
//! nothing about the grant: the write and the read after it are the strategy's, as on a first
//! attempt. A look that misses a column only leads to that attempt; one that sees a column
//! about to go, only to a back-off. It costs a retry that finds the lock free one more round
//! trip, and a retry that finds it held one round trip instead of three writes and reads.
//!
//! Since waiters no longer write while the lock is held, nothing of theirs is in the way of a
//! client that releases and locks again at once; what keeps them in the race on a store that
//! cannot wake them is that a waiter passed over tries more often (the `aging` module).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{Acquire, Next, Phase, Then};
use crate::error::{Error, ErrorKind};
use crate::model::Reply;
use crate::options::{Sabotage, Wait};
use crate::path::LockPath;
use crate::record::entry_mode;
use crate::strategy::grant::{self, Place, Seen};
use crate::strategy::prefix;
use crate::time::Instant;

impl Acquire {
    /// Starts an attempt: a look first when it is a retry, else our column's write.
    pub(super) fn start_prefix_attempt(&mut self) {
        if self.attempts > 1 {
            // `attempts` counts this one.
            self.phase = Phase::PrefixLook;
            self.io.send(self.read_row(self.opts.prefix.read_row));
        } else {
            self.write_prefix_column();
        }
    }

    /// Writes our lock column, with a value of its own for this attempt: a forced release or a
    /// stale delete aimed at an earlier attempt's column never matches this one's.
    fn write_prefix_column(&mut self) {
        self.record.att = self.attempts;
        self.value = self.record.encode();
        self.phase = Phase::PrefixWrite;
        self.io
            .send(self.put(self.value.clone(), self.opts.cell_ttl()));
    }

    /// A reply to one of column prefix's commands.
    pub(super) fn on_prefix_reply(
        &mut self,
        phase: Phase,
        reply: Reply,
        sent: Instant,
        now: Instant,
    ) {
        match (phase, reply) {
            (Phase::PrefixLook, Reply::Cells(cells)) => {
                let found = prefix::classify(&self.columns, cells, &self.column);
                let first = match self.first_blocker(&found.others) {
                    Ok(first) => first,
                    Err(e) => return self.abandon(Then::Fail(e)),
                };
                match first {
                    // Nothing of ours to remove: back off again.
                    Some(other) => {
                        let busy = self.busy_because_of("held by", &other);
                        self.fair.aging.found(values(found.others));
                        self.contended(now, busy);
                    }
                    None => self.write_prefix_column(),
                }
            }
            (Phase::PrefixWrite, Reply::Written) => {
                self.cell_written(sent);
                self.phase = Phase::PrefixRead;
                self.io.send(self.read_row(self.opts.prefix.read_row));
            }
            (Phase::PrefixRead, Reply::Cells(cells)) => {
                self.newest_stamp = cells.iter().map(|c| c.stamp).max().unwrap_or(0);
                self.fence_floor = self.columns.related_floor(&cells, self.name.as_str());
                let found = prefix::classify(&self.columns, cells, &self.column);
                if !found.ours || self.lapsed(now) {
                    return self.abandon(Then::Restart);
                }
                match self.first_blocker(&found.others) {
                    Ok(Some(other)) => {
                        let busy = self.busy_because_of("held by", &other);
                        if self.keeps_request(&found.others, now) {
                            return self.keep_request(now, busy);
                        }
                        self.fair.aging.found(values(found.others));
                        return self.abandon(Then::Contended(busy));
                    }
                    Ok(None) => {}
                    Err(e) => return self.abandon(Then::Fail(e)),
                }
                if !found.stale.is_empty() && self.opts.prefix.fail_on_stale_lock {
                    let e = Error::new(
                        ErrorKind::StaleLock,
                        format!(
                            "lock {:?} has stale lock column(s) {:?}; purge them or acquire without fail_on_stale_lock",
                            self.name.as_str(),
                            found.stale
                        ),
                    );
                    return self.abandon(Then::Fail(e));
                }
                self.stale = found.stale;
                self.data = found.data;
                self.start_fence(found.fence, true);
            }
            (phase, reply) => self.unexpected_reply(&phase, &reply),
        }
    }
}

impl Acquire {
    /// Whether an exclusive request that found the lock held keeps its column as a request
    /// (writer preference, `docs/modes-design.md`): only when every live column in its way is
    /// shared or counted (another exclusive column is today's collision: both back off), and
    /// only while it may go on waiting. Never under [`Sabotage::ExclusiveDropsRequest`].
    fn keeps_request(&self, others: &[(String, String)], now: Instant) -> bool {
        self.opts.mode.is_exclusive()
            && self.opts.sabotage() != Sabotage::ExclusiveDropsRequest
            && self.opts.wait != Wait::TryOnce
            && now < self.wait_deadline
            && !self.out_of_attempts()
            && others
                .iter()
                .all(|(_, value)| entry_mode(value).is_some_and(|m| !m.is_exclusive()))
    }

    /// Keeps our column as a waiting exclusive request: every new shared or counted request
    /// that reads it backs off, so the holders drain. We look again after a queue poll,
    /// re-writing the column first when half its validity is gone (as a waiting bakery ticket
    /// is refreshed); a timeout deletes it like any other attempt's.
    fn keep_request(&mut self, now: Instant, busy: Error) {
        self.last_holder = busy.holder().map(String::from);
        let delay = self.opts.retry.queue_delay(self.polls, &mut self.rng);
        self.polls = self.polls.saturating_add(1);
        self.bakery.tries_in_queue = self.bakery.tries_in_queue.saturating_add(1);
        let refresh_at = self
            .cell_deadline
            .saturating_sub(self.opts.lease_validity() / 2);
        let until = now
            .saturating_add(delay)
            .min(refresh_at)
            .min(self.wait_deadline);
        self.fair.waited = true;
        self.phase = Phase::Sleep {
            until,
            then: Next::PrefixKept,
        };
    }

    /// The end of a kept request's sleep: re-write the column when it is due (or the wait is
    /// over: the read that ends it then sees a fresh column), else read the row again.
    pub(super) fn prefix_kept_check(&mut self, now: Instant) {
        let refresh_at = self
            .cell_deadline
            .saturating_sub(self.opts.lease_validity() / 2);
        if now >= refresh_at {
            self.phase = Phase::PrefixWrite;
            self.io
                .send(self.put(self.value.clone(), self.opts.cell_ttl()));
        } else {
            self.phase = Phase::PrefixRead;
            self.io.send(self.read_row(self.opts.prefix.read_row));
        }
    }

    /// The first of the other live lock columns `others` (column, value) that keeps us from
    /// holding in our mode: any of them for an exclusive request (the strategy's rule), an
    /// exclusive one for a shared request, a full semaphore's for a counted one
    /// ([`grant::blockers`], every other live column placed before us). An
    /// [`ErrorKind::InvalidOption`] error on a mode mix-up.
    fn first_blocker(&self, others: &[(String, String)]) -> crate::Result<Option<String>> {
        let me = LockPath::flat(self.name.clone());
        // With paths, each entry is on the path its column names (`None`: none, a conflict
        // with the whole tree); without, every entry is on our name.
        let tree = self.columns.counters.is_some();
        let paths: Vec<Option<LockPath>> = if tree {
            others
                .iter()
                .map(|(column, _)| {
                    self.columns
                        .path_part(column)
                        .and_then(|p| LockPath::new(p).ok())
                })
                .collect()
        } else {
            Vec::new()
        };
        let seen: Vec<Seen<'_>> = others
            .iter()
            .enumerate()
            .map(|(i, (_, value))| Seen {
                path: if tree { paths[i].as_ref() } else { Some(&me) },
                mode: entry_mode(value),
                place: Place::Before,
            })
            .collect();
        let blocking = grant::blockers(&me, self.opts.mode, &seen, self.opts.sabotage())
            .map_err(|e| e.with_lock(self.name.as_str()))?;
        Ok(blocking.first().map(|&i| others[i].0.clone()))
    }
}

/// The values of `(column, value)` pairs, for aging (which compares holders by value).
fn values(cells: Vec<(String, String)>) -> Vec<String> {
    cells.into_iter().map(|(_, value)| value).collect()
}
