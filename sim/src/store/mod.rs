//! Simulated stores: one copy with the server's clock deciding expiry (SQL's model), and three
//! replicas written and read at QUORUM with client-side timestamps and per-replica clocks
//! (Cassandra's model).
//!
//! Both apply plain writes by their stamps (see `Command::stamped`), as the real stores do: a
//! write that arrives late never undoes a newer write of the same owner. The stamp comes with
//! the command, set by the simulated client when it sent it (its own wall clock, skewed), or,
//! under the deliberately broken `ArrivalOrderStamps`, by the store when the command arrives.

use baton_kernel::{Command, Failure, Reply, SplitMix64};

mod replicated;
mod single;

pub use replicated::{cql_expiry, Replicated};
pub use single::{flushes, split_claim, SingleCopy};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// What the network and the store do to one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fate {
    /// Applied, answered.
    Normal,
    /// Applied, but the reply is lost: the client sees a timeout.
    LostReply,
    /// Never reaches the store (or, replicated, reaches fewer replicas than a quorum):
    /// the client sees a timeout.
    Dropped,
    /// Refused before doing anything: the client sees "unavailable".
    Unavailable,
    /// Held up (a pooler's queue, a socket buffer, a coordinator's queue): the client sees a
    /// timeout, and the store applies the command later, up to one TTL after that timeout,
    /// typically after the client's read-back.
    Late,
    /// Applied and answered, and applied once more later (a retransmission).
    Duplicated,
    /// Replicated store, conditional commands: the Paxos proposal is accepted by one replica
    /// only; the client sees a timeout or `Unavailable`; the next Paxos round on the partition
    /// either completes it or supersedes it.
    Minority,
}

/// A change of an object cell ([`baton_kernel::OBJECT_COLUMN`]) in a store's history, for the
/// object checker ([`super::objects`]): every object write the store applied, and every object
/// cell a server crash took back.
#[derive(Clone, Debug)]
pub struct ObjectChange {
    /// The row.
    pub row: String,
    /// Simulated time (ns) of the conditional step that decided the write: when the store
    /// checked its guard (for a Paxos proposal accepted by a minority and completed by a later
    /// round, the step that accepted it, its linearization point).
    pub decided: u64,
    /// Simulated time (ns) the cell changed.
    pub at: u64,
    /// The object cell before (`None`: no cell).
    pub before: Option<String>,
    /// The object cell after.
    pub after: Option<String>,
    /// The row's live cells as the deciding step saw them (lock cells, the fencing counter):
    /// what the checker judges the writer's lock by. Empty for a crash.
    pub cells: Vec<(String, String)>,
    /// Whether a write made it (`false`: a server crash took the cell back or replayed it).
    pub write: bool,
}

/// A simulated store. `at` is the simulated time (ns) the command reaches the store, `stamp`
/// its write stamp; the result is the reply and the simulated time it is ready to leave.
pub trait SimStore {
    /// The object cell changes since the last call, oldest first.
    fn take_object_changes(&mut self) -> Vec<ObjectChange>;

    /// Executes `command` with `fate`.
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        stamp: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64);

    /// The next stamp when the store stamps writes itself (arrival order).
    fn arrival_stamp(&mut self) -> u64;

    /// How many times the store's clock stepped.
    fn clock_steps(&self) -> u64 {
        0
    }

    /// Claims applied in two steps that left the counter (see [`split_claim`]).
    fn split_claims(&self) -> u64 {
        0
    }

    /// Server crashes, and the commits they lost (see [`flushes`]).
    fn server_crashes(&self) -> (u64, u64) {
        (0, 0)
    }
}

fn timeout() -> Reply {
    Reply::Failed(Failure::Timeout("simulated timeout".into()))
}

fn unavailable() -> Reply {
    Reply::Failed(Failure::Unavailable("simulated outage".into()))
}

/// A store clock that steps: the store's reading is simulated time plus an offset that jumps
/// now and then (NTP stepping a database server's wall clock).
#[derive(Clone, Debug, Default)]
pub struct SteppingClock {
    offset: i64,
    /// Largest step, ns, either way.
    pub max_step: u64,
    /// Steps so far.
    pub steps: u64,
}

impl SteppingClock {
    /// A clock that steps by up to `max_step` ns either way.
    pub fn new(max_step: u64) -> Self {
        SteppingClock {
            max_step,
            ..SteppingClock::default()
        }
    }

    /// The store's time at simulated time `t` (after maybe stepping, with probability `p`).
    pub fn read(&mut self, t: u64, p: f64, rng: &mut SplitMix64) -> u64 {
        if self.max_step > 0 && chance(rng, p) {
            let step = rng.below(2 * self.max_step + 1) as i64 - self.max_step as i64;
            self.offset += step;
            // Keep the total within the same bound: a clock kept in sync steps back again.
            let bound = self.max_step as i64;
            self.offset = self.offset.clamp(-bound, bound);
            self.steps += 1;
        }
        shift(t, self.offset)
    }
}

fn shift(t: u64, offset: i64) -> u64 {
    u64::try_from(i128::from(t) + i128::from(offset)).unwrap_or(0)
}

fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    p > 0.0 && (rng.next_u64() as f64 / u64::MAX as f64) < p
}
