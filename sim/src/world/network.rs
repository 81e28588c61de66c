//! The network between clients and the store: each command's fate (applied, lost reply,
//! dropped, refused, late, duplicated, accepted by a minority), its write stamp, and delays.

use baton_kernel::{Command, CommandId, Sabotage};

use super::super::store::Fate;
use super::{chance, Event, Sim, MS};

impl Sim {
    pub(super) fn one_way(&mut self) -> u64 {
        let ttl = self.ttl();
        if chance(&mut self.rng, self.cfg.faults.long_delay) {
            self.faults.long_delay += 1;
            50 * MS + self.rng.below(2 * ttl)
        } else {
            100_000 + self.rng.below(5 * MS)
        }
    }

    /// The stamp a command is applied with: the client's, or (broken variant) the store's
    /// arrival order.
    pub(super) fn stamp_at_store(&mut self, stamp: u64) -> u64 {
        if self.cfg.sabotage == Sabotage::ArrivalOrderStamps {
            self.store.arrival_stamp()
        } else {
            stamp
        }
    }

    pub(super) fn send(&mut self, client: usize, id: CommandId, command: Command) {
        let op = self.clients[client].op;
        self.send_as(client, op, id, command);
    }

    /// [`Sim::send`] for operation `op` of `client` (an earlier one than its current, for a
    /// ghost's cleanup).
    pub(super) fn send_as(&mut self, client: usize, op: u64, id: CommandId, command: Command) {
        self.log(client, || format!("send {command:?}"));
        // An object write carries the cell of the client's call under way.
        if let (Command::SetObject { value, .. }, Some(k)) = (&command, self.clients[client].call) {
            let cells = &mut self.object_calls[k].cells;
            if !cells.contains(value) {
                cells.push(value.clone());
            }
        }
        let f = self.cfg.faults;
        let minority = if f.replicated && command.is_conditional() {
            f.minority
        } else {
            0.0
        };
        let r = self.rng.next_u64() as f64 / u64::MAX as f64;
        let table = [
            (f.unavailable, Fate::Unavailable),
            (f.dropped, Fate::Dropped),
            (f.lost_reply, Fate::LostReply),
            (f.late, Fate::Late),
            (f.duplicated, Fate::Duplicated),
            (minority, Fate::Minority),
        ];
        let mut fate = Fate::Normal;
        let mut edge = 0.0;
        for (p, candidate) in table {
            edge += p;
            if r < edge {
                fate = candidate;
                break;
            }
        }
        let counter = match fate {
            Fate::Unavailable => Some(&mut self.faults.unavailable),
            Fate::Dropped => Some(&mut self.faults.dropped),
            Fate::LostReply => Some(&mut self.faults.lost_reply),
            Fate::Late => Some(&mut self.faults.late),
            Fate::Duplicated => Some(&mut self.faults.duplicated),
            Fate::Minority => Some(&mut self.faults.minority),
            Fate::Normal => None,
        };
        if let Some(n) = counter {
            *n += 1;
        }
        let stamp = self.clients[client].clock.stamp(self.now);
        let timeout = 50 * MS + self.rng.below(500 * MS);
        let at = self.now + self.one_way();
        self.schedule(
            at,
            Event::Arrive {
                client,
                op,
                id,
                command,
                fate,
                sent: self.now,
                timeout,
                stamp,
            },
        );
    }

    /// The store's change notices for a write that reached it: every client is told, as
    /// PostgreSQL's `NOTIFY` tells every listening session, the writer too (its host absorbs
    /// its own change when the notice comes while the write is on its way, by the kernel's
    /// rule: `ChangeWatch`; one that comes later wakes it for nothing). Worse than PostgreSQL, which notifies only at a release's
    /// commit: every write notifies, whether or not it applied (spurious wake-ups), and each
    /// notice takes a message's delay (late ones included), may be lost or may come twice. A
    /// notice can only make a waiter look again, never grant anything.
    pub(super) fn notify(&mut self, command: &Command) {
        if !self.cfg.notices || matches!(command, Command::Read { .. }) {
            return;
        }
        for client in 0..self.clients.len() {
            if chance(&mut self.rng, self.cfg.faults.dropped) {
                self.faults.lost_notices += 1;
                continue;
            }
            let copies = if chance(&mut self.rng, self.cfg.faults.duplicated) {
                self.faults.duplicated_notices += 1;
                2
            } else {
                1
            };
            for _ in 0..copies {
                let at = self.now + self.one_way();
                self.schedule(at, Event::Notice { client });
            }
        }
    }
}
