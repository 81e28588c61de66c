//! The bakery's steps of an acquisition: entering, choosing a ticket, and reading the queue
//! until our turn.

use super::{Acquire, Next, Phase, Then};
use crate::model::{Cell, Reply};
use crate::options::{Sabotage, Wait};
use crate::record::{encode_bakery, BakeryState};
use crate::strategy::bakery;
use crate::time::Instant;

impl Acquire {
    /// How many forced releases the counter in `cells` has seen (remembered in `forced_known`).
    fn forced_in(&mut self, cells: &[Cell]) -> u64 {
        let fence = cells
            .iter()
            .find(|c| c.column == self.columns.fence)
            .map(|c| c.value.as_str());
        let forced = crate::record::forced_count(fence);
        self.bakery.forced_known = forced;
        forced
    }

    pub(super) fn bakery_check(&mut self, ticket: u64, now: Instant) {
        let validity = self.opts.lease_validity();
        let refresh_at = self.cell_deadline.saturating_sub(validity / 2);
        if now >= refresh_at {
            self.phase = Phase::BakeryRefresh(ticket);
            self.io.send(self.put(self.value.clone(), self.opts.ttl));
        } else {
            self.phase = Phase::BakeryCheck(ticket);
            self.io.send(self.read_row(false));
        }
    }

    /// A reply to one of the bakery's commands.
    pub(super) fn on_bakery_reply(
        &mut self,
        phase: Phase,
        reply: Reply,
        sent: Instant,
        now: Instant,
    ) {
        let validity = self.opts.lease_validity();
        match (phase, reply) {
            (Phase::BakeryEnter, Reply::Written) => {
                self.cell_written(sent);
                self.phase = Phase::BakeryReadMax;
                self.io.send(self.read_row(false));
            }
            (Phase::BakeryReadMax, Reply::Cells(cells)) => {
                let forced = self.forced_in(&cells);
                if self.opts.sabotage() == Sabotage::ForcedCountAfterEntering {
                    self.bakery.forced_seen = forced;
                } else if forced != self.bakery.forced_seen {
                    // A forced release we cannot place before our `entering` write (or a reset
                    // counter, or a hint from another one): it may delete that version of our cell. Write `entering` again (a newer version,
                    // which only a forced release counted after this read can delete), then
                    // read the queue again. We hold no ticket yet, so nothing else is lost.
                    self.bakery.forced_seen = forced;
                    self.phase = Phase::BakeryEnter;
                    self.io.send(self.put(self.value.clone(), self.opts.ttl));
                    return;
                }
                let ticket = bakery::max_ticket(&cells, &self.columns).saturating_add(1);
                self.value = encode_bakery(
                    BakeryState::Ticket(ticket),
                    self.opts.mode,
                    self.opts.created_unix_ms,
                    self.opts.acquisition,
                );
                self.phase = Phase::BakeryTicket(ticket);
                self.io.send(self.put(self.value.clone(), self.opts.ttl));
            }
            (Phase::BakeryTicket(ticket) | Phase::BakeryRefresh(ticket), Reply::Written) => {
                // The write must have landed while the previous state of our cell was live.
                if self.lapsed(now) {
                    return self.abandon(Then::Restart);
                }
                self.cell_deadline = sent.saturating_add(validity);
                self.phase = Phase::BakeryCheck(ticket);
                self.io.send(self.read_row(false));
            }
            (Phase::BakeryCheck(ticket), Reply::Cells(cells)) => {
                let mine = cells
                    .iter()
                    .find(|c| c.column == self.column)
                    .map(|c| c.value.as_str());
                if mine != Some(self.value.as_str())
                    || self.lapsed(now)
                    || self.forced_in(&cells) != self.bakery.forced_seen
                {
                    return self.abandon(Then::Restart);
                }
                let me = crate::path::LockPath::flat(self.name.clone());
                let blockers = match bakery::blockers(
                    &cells,
                    (&self.columns, &self.column),
                    &self.owner,
                    (ticket, self.opts.mode, &me),
                    self.opts.sabotage(),
                ) {
                    Ok(blockers) => blockers,
                    Err(e) => return self.abandon(Then::Fail(e.with_lock(self.name.as_str()))),
                };
                let Some(first) = blockers.first() else {
                    self.fence_floor = self.columns.related_floor(&cells, self.name.as_str());
                    let fence = cells
                        .into_iter()
                        .find(|c| c.column == self.columns.fence)
                        .map(|c| c.value);
                    return self.start_fence(fence, true);
                };
                let busy = self.busy_because_of("held or queued for by", first);
                if self.opts.wait == Wait::TryOnce
                    || now >= self.wait_deadline
                    || self.out_of_attempts()
                {
                    return self.abandon(Then::Contended(busy));
                }
                let delay = self.opts.retry.queue_delay(self.polls, &mut self.rng);
                self.polls = self.polls.saturating_add(1);
                self.bakery.tries_in_queue = self.bakery.tries_in_queue.saturating_add(1);
                let refresh_at = self.cell_deadline.saturating_sub(validity / 2);
                let until = now
                    .saturating_add(delay)
                    .min(refresh_at)
                    .min(self.wait_deadline);
                self.phase = Phase::Sleep {
                    until,
                    then: Next::BakeryCheck(ticket),
                };
            }
            (phase, reply) => self.unexpected_reply(&phase, &reply),
        }
    }
}

/// Bakery's state across the attempts of one acquisition.
#[derive(Debug, Default)]
pub(super) struct BakeryAttempts {
    /// Queue polls over all attempts, a waiting bakery ticket's or a kept column-prefix
    /// request's (they count as tries for the retry policy).
    pub(super) tries_in_queue: u32,
    /// Bakery: how many forced releases the latest counter value we know of counted (a fence
    /// hint, or our latest read). It was read before the next attempt's `entering` write.
    pub(super) forced_known: u64,
    /// Bakery: `forced_known` when this attempt wrote `entering`. No forced release able to
    /// delete this attempt's cell is counted in it (it reads the cell first, then counts
    /// itself). A later read counting a different number: a forced release may have deleted our
    /// cell and a late write of ours recreated it, so others may have passed us unseen (or the
    /// counter was reset, and the number tells nothing).
    pub(super) forced_seen: u64,
}
