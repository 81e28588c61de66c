//! Three replicas (Cassandra's model): QUORUM writes and reads with client-side timestamps,
//! per-replica clocks and lag, and lightweight transactions.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_kernel::strategy::unique::TURN_COLUMN;
use baton_kernel::{
    Cell, ColumnFilter, Command, Instant, MemoryTable, ObjectGuard, ReadConsistency, Reply,
    SplitMix64, Turn, Write,
};

use super::{shift, timeout, unavailable, Fate, ObjectChange, SimStore, MS, SEC};

/// A cell version on one replica: last write wins by timestamp (a tombstone wins a tie), and
/// expiry is an absolute time on the writing coordinator's clock in whole seconds.
#[derive(Clone, Debug)]
struct Version {
    ts: u64,
    value: Option<String>,
    /// Expiry, ns of the coordinator's clock, already truncated to whole seconds.
    expires: Option<u64>,
}

impl Version {
    fn beats(&self, old: &Version) -> bool {
        self.ts > old.ts || (self.ts == old.ts && self.value.is_none())
    }
}

#[derive(Default)]
struct Replica {
    cells: BTreeMap<(String, String), Version>,
    /// Writes on their way to this replica: (apply time, key, version).
    pending: Vec<(u64, (String, String), Version)>,
}

impl Replica {
    /// The versions of `row`'s cells this replica has at `at`, without catching up (the
    /// writes due by then applied to a copy).
    fn view(&self, row: &str, at: u64) -> BTreeMap<String, Version> {
        let mut view: BTreeMap<String, Version> = BTreeMap::new();
        for ((rw, col), v) in self.cells.range((row.to_string(), String::new())..) {
            if rw != row {
                break;
            }
            view.insert(col.clone(), v.clone());
        }
        for (t, (rw, col), v) in &self.pending {
            if *t <= at && rw == row && view.get(col).is_none_or(|old| v.beats(old)) {
                view.insert(col.clone(), v.clone());
            }
        }
        view
    }

    fn catch_up(&mut self, now: u64) {
        let (due, later): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|(t, _, _)| *t <= now);
        self.pending = later;
        for (_, key, v) in due {
            if self.cells.get(&key).is_none_or(|old| v.beats(old)) {
                self.cells.insert(key, v);
            }
        }
    }
}

/// The TTL the Cassandra store sends for `ttl`, in whole seconds, and the expiry a node
/// computes from it: the coordinator's clock truncated to whole seconds, plus that many
/// seconds. Mirrors `baton_statements::cql::ttl_seconds`, which rounds up and
/// adds one second for the truncation.
pub fn cql_expiry(coordinator_now: u64, ttl: Duration) -> u64 {
    let ttl_ns = u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX);
    let seconds = ttl_ns.div_ceil(SEC) + 1;
    (coordinator_now / SEC) * SEC + seconds * SEC
}

/// `command` with its TTL replaced by what Cassandra keeps when a coordinator whose clock reads
/// `now` writes it (see [`cql_expiry`]).
fn whole_second_ttl(command: &Command, now: u64) -> Command {
    let mut command = command.clone();
    if let Command::InsertIfAbsent { ttl, .. }
    | Command::CompareAndSet { ttl, .. }
    | Command::Claim { ttl, .. }
    | Command::GuardedSet { ttl, .. } = &mut command
    {
        if let Some(t) = ttl {
            *t = Duration::from_nanos(cql_expiry(now, *t) - now);
        }
    }
    command
}

/// A Paxos proposal accepted by a minority, which the next round on its row completes or
/// supersedes.
enum Proposal {
    /// A conditional command as its first round decided it: its TTL computed and its
    /// conditions judged on that round's coordinator's clock (`now`), the turn as that round
    /// read it (`turn_holds`). Cassandra commits the accepted mutation as decided, its cells'
    /// expiry fixed by the first coordinator; nothing else changes the row's conditional cells
    /// meanwhile (every Paxos operation on the row completes or supersedes the proposal first),
    /// so applying the command later at the first round's `now` gives what was decided.
    Command {
        command: Command,
        now: u64,
        turn_holds: Option<bool>,
    },
    /// An object write whose conditions held when it was proposed: Cassandra commits the
    /// accepted mutation as it was decided (a later round checks nothing again), and the
    /// object cell cannot have moved since (every object write is a Paxos round on the row,
    /// which would have completed or superseded it first).
    Object {
        /// The write, with its conditions already met (the object cell exactly as found, a
        /// guard that holds).
        write: Command,
        /// The change it makes, as decided.
        change: ObjectChange,
    },
}

/// Three replicas of the plain cells, written and read at QUORUM, with client-side timestamps
/// and one replica lagging behind by up to `lag`. Each node has its own clock offset, and
/// expiry is decided in whole seconds on the coordinator's clock, as Cassandra does.
/// Conditional cells live in a linearizable Paxos register (a [`MemoryTable`]), as Cassandra's
/// lightweight transactions give; they are never written with plain commands. A proposal
/// accepted by a minority waits in `proposal` until the next Paxos operation on its row
/// completes or supersedes it.
pub struct Replicated {
    replicas: [Replica; 3],
    paxos: MemoryTable,
    /// A conditional command accepted by one replica only: (row, what it does, stamp).
    proposal: Option<(String, Proposal, u64)>,
    /// Object cell changes not yet taken.
    changes: Vec<ObjectChange>,
    lagging: usize,
    lag: u64,
    /// Each node's clock offset from simulated time, ns.
    offsets: [i64; 3],
    arrivals: u64,
    /// Minority proposals completed by a later round.
    pub completed: u64,
}

impl Replicated {
    /// A store whose replica `lagging` applies writes up to `lag` late, with node clock offsets
    /// drawn up to `max_offset` ns either way.
    pub fn new(lagging: usize, lag: Duration, max_offset: u64, rng: &mut SplitMix64) -> Self {
        let mut offsets = [0i64; 3];
        for o in &mut offsets {
            *o = rng.below(2 * max_offset + 1) as i64 - max_offset as i64;
        }
        Replicated {
            replicas: Default::default(),
            paxos: MemoryTable::new(),
            proposal: None,
            changes: Vec::new(),
            lagging: lagging % 3,
            lag: u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX),
            offsets,
            arrivals: 0,
            completed: 0,
        }
    }

    fn delay(&self, replica: usize, rng: &mut SplitMix64) -> u64 {
        if replica == self.lagging {
            rng.below(self.lag.max(1))
        } else {
            rng.below(2_000_000)
        }
    }

    fn node_now(&self, node: usize, at: u64) -> u64 {
        shift(at, self.offsets[node])
    }

    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        row: &str,
        writes: &[(String, Option<String>, Option<Duration>)],
        at: u64,
        ts: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        let coordinator = rng.below(3) as usize;
        let now = self.node_now(coordinator, at);
        // Which replicas get it: all, or (dropped) at most one, which is less than a quorum.
        let reach: Vec<usize> = match fate {
            Fate::Dropped => (0..3).filter(|_| rng.below(3) == 0).take(1).collect(),
            _ => (0..3).collect(),
        };
        let mut acks: Vec<u64> = Vec::new();
        for &r in &reach {
            let when = at + self.delay(r, rng);
            acks.push(when);
            for (column, value, ttl) in writes {
                let v = Version {
                    ts,
                    value: value.clone(),
                    expires: ttl.filter(|_| value.is_some()).map(|t| cql_expiry(now, t)),
                };
                self.replicas[r]
                    .pending
                    .push((when, (row.to_string(), column.clone()), v));
            }
        }
        acks.sort_unstable();
        match fate {
            Fate::Normal | Fate::Duplicated => (Reply::Written, acks[1]),
            Fate::LostReply => (timeout(), acks[1]),
            Fate::Dropped | Fate::Late | Fate::Minority => (timeout(), at),
            Fate::Unavailable => (unavailable(), at),
        }
    }

    fn read(
        &mut self,
        row: &str,
        filter: &ColumnFilter,
        at: u64,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        let coordinator = rng.below(3) as usize;
        let now = self.node_now(coordinator, at);
        let skip = usize::try_from(rng.below(3)).unwrap_or(0);
        let mut merged: BTreeMap<String, Version> = BTreeMap::new();
        let mut done = at;
        for r in (0..3).filter(|r| *r != skip) {
            let when = at + self.delay(r, rng) / 4;
            done = done.max(when);
            let replica = &mut self.replicas[r];
            replica.catch_up(when);
            for ((rw, col), v) in replica.cells.range((row.to_string(), String::new())..) {
                if rw != row {
                    break;
                }
                if filter.matches(col) && merged.get(col).is_none_or(|old| v.beats(old)) {
                    merged.insert(col.clone(), v.clone());
                }
            }
        }
        let mut cells: Vec<Cell> = merged
            .into_iter()
            .filter_map(|(column, v)| {
                let live = v.expires.is_none_or(|e| now < e);
                let value = v.value.filter(|_| live)?;
                Some(Cell {
                    column,
                    value,
                    // CQL's TTL() is the expiry in whole seconds minus the coordinator's
                    // clock in whole seconds.
                    ttl_remaining: v
                        .expires
                        .map(|e| Duration::from_secs((e / SEC).saturating_sub(now / SEC))),
                    stamp: v.ts,
                })
            })
            .collect();
        cells.extend(self.paxos.read(row, filter, Instant::from_nanos(now)));
        cells.sort_by(|a, b| a.column.cmp(&b.column));
        (Reply::Cells(cells), done)
    }

    /// Before a Paxos operation on `row`: a proposal accepted by a minority is completed (its
    /// acceptor is in this round's quorum) or superseded.
    fn settle_proposal(&mut self, row: Option<&str>, at: u64, rng: &mut SplitMix64) {
        let Some((prow, _, _)) = &self.proposal else {
            return;
        };
        if row.is_some_and(|r| r != prow) {
            return;
        }
        if let Some((_, proposal, stamp)) = self.proposal.take() {
            if rng.below(2) == 0 {
                let now = self.node_now(rng.below(3) as usize, at);
                match proposal {
                    Proposal::Command {
                        command,
                        now: decided_at,
                        turn_holds,
                    } => {
                        let _ = self.paxos_commit(&command, at, decided_at, stamp, turn_holds, rng);
                    }
                    Proposal::Object { write, mut change } => {
                        let _ = self
                            .paxos
                            .apply_stamped(&write, Instant::from_nanos(now), stamp);
                        change.at = at;
                        self.changes.push(change);
                    }
                }
                self.completed += 1;
            }
        }
    }

    /// A Paxos round's step: `command` applied to the Paxos state at the coordinator's `now`.
    /// A claim's turn condition ([`Turn`]) is on a plain cell (the turn is written with plain
    /// puts): the round reads it from a quorum, and a claim that takes our turn deletes it on
    /// every replica at the round's timestamp, as the batch's conditional delete does.
    fn paxos_apply(
        &mut self,
        command: &Command,
        at: u64,
        now: u64,
        stamp: u64,
        rng: &mut SplitMix64,
    ) -> Reply {
        let turn_holds = self.turn_holds(command, at, now);
        self.paxos_commit(command, at, now, stamp, turn_holds, rng)
    }

    /// Whether a claim's turn condition holds, read from a quorum of the plain cells as a
    /// round at `at` on a coordinator whose clock reads `now` does (`None`: no turn).
    fn turn_holds(&self, command: &Command, at: u64, now: u64) -> Option<bool> {
        let Command::Claim {
            row,
            turn: Some(turn),
            ..
        } = command
        else {
            return None;
        };
        let skip = usize::try_from(at % 3).unwrap_or(0);
        let found = self
            .plain_cells(row, skip, at, now)
            .into_iter()
            .find(|c| c.column == TURN_COLUMN)
            .map(|c| c.value);
        Some(match turn {
            Turn::Free => found.is_none(),
            Turn::Ours(ours) => found.as_deref() == Some(ours.as_str()),
        })
    }

    /// [`Self::paxos_apply`] with the turn already judged (`turn_holds`, as
    /// [`Self::turn_holds`] gives it).
    fn paxos_commit(
        &mut self,
        command: &Command,
        at: u64,
        now: u64,
        stamp: u64,
        turn_holds: Option<bool>,
        rng: &mut SplitMix64,
    ) -> Reply {
        let (
            Command::Claim {
                row,
                column,
                counter,
                turn: Some(turn),
                ..
            },
            Some(holds),
        ) = (command, turn_holds)
        else {
            return self
                .paxos
                .apply_stamped(command, Instant::from_nanos(now), stamp);
        };
        if !holds {
            let value_of = |c: &str| {
                self.paxos
                    .read(
                        row,
                        &ColumnFilter::Exact(c.to_string()),
                        Instant::from_nanos(now),
                    )
                    .into_iter()
                    .next()
                    .map(|cell| cell.value)
            };
            return Reply::Guarded {
                applied: false,
                current: value_of(column),
                guard: value_of(counter),
            };
        }
        let mut unturned = command.clone();
        if let Command::Claim { turn, .. } = &mut unturned {
            *turn = None;
        }
        let reply = self
            .paxos
            .apply_stamped(&unturned, Instant::from_nanos(now), stamp);
        if matches!(turn, Turn::Ours(_)) && matches!(reply, Reply::Guarded { applied: true, .. }) {
            let row = row.clone();
            let _ = self.write(
                &row,
                &[(TURN_COLUMN.to_string(), None, None)],
                at,
                stamp,
                Fate::Normal,
                rng,
            );
        }
        reply
    }

    /// The live cells of `row` as a quorum (every replica but `skip`) has them at `at`, merged
    /// by timestamp, with expiry judged by a coordinator whose clock reads `now`: what a Paxos
    /// round reads of the plain cells. Catches no replica up.
    fn plain_cells(&self, row: &str, skip: usize, at: u64, now: u64) -> Vec<Cell> {
        let mut merged: BTreeMap<String, Version> = BTreeMap::new();
        for (r, replica) in self.replicas.iter().enumerate() {
            if r == skip {
                continue;
            }
            for (col, v) in replica.view(row, at) {
                if merged.get(&col).is_none_or(|old| v.beats(old)) {
                    merged.insert(col, v);
                }
            }
        }
        merged
            .into_iter()
            .filter_map(|(column, v)| {
                let live = v.expires.is_none_or(|e| now < e);
                let value = v.value.filter(|_| live)?;
                Some(Cell {
                    column,
                    value,
                    ttl_remaining: v
                        .expires
                        .map(|e| Duration::from_secs((e / SEC).saturating_sub(now / SEC))),
                    stamp: v.ts,
                })
            })
            .collect()
    }

    /// An object write's conditional step ([`Command::SetObject`], Cassandra's conditional
    /// batch on the partition): the object cell and the counter from the Paxos state, the lock
    /// cell from it too when it is conditional (unique insert's), from a quorum of replicas
    /// when it is a plain cell (bakery's tickets, column prefix's entries). Returns the reply,
    /// and, when the conditions hold, the write to commit and the change it makes.
    fn object_step(
        &self,
        command: &Command,
        at: u64,
        now: u64,
        skip: usize,
    ) -> (Reply, Option<(Command, ObjectChange)>) {
        let Command::SetObject {
            row,
            column,
            expected,
            value,
            guard,
            serial,
            consistency,
        } = command
        else {
            return (timeout(), None);
        };
        let mut cells = self.plain_cells(row, skip, at, now);
        for c in self
            .paxos
            .read(row, &ColumnFilter::All, Instant::from_nanos(now))
        {
            cells.retain(|p| p.column != c.column);
            cells.push(c);
        }
        let value_of = |col: &str| {
            cells
                .iter()
                .find(|c| c.column == col)
                .map(|c| c.value.clone())
        };
        let current = value_of(column);
        let (lock, counter, holds) = match guard {
            ObjectGuard::Held {
                column: lock_column,
                value: lock_value,
                counter,
                counter_value,
            } => {
                let lock = value_of(lock_column);
                let found = value_of(counter);
                let holds = lock.as_deref() == Some(lock_value.as_str())
                    && found.as_deref() == Some(counter_value.as_str());
                (lock, found, holds)
            }
            ObjectGuard::Free {
                column: lock_column,
            } => {
                let lock = value_of(lock_column);
                let free = lock.is_none();
                (lock, None, free)
            }
        };
        let object_ok = match (expected, &current) {
            (None, None) => true,
            (Some(prefix), Some(v)) => v.starts_with(prefix.as_str()),
            _ => false,
        };
        if !(object_ok && holds) {
            let reply = Reply::Object {
                applied: false,
                current,
                lock,
                counter,
            };
            return (reply, None);
        }
        // The conditions are met: the write as Paxos commits it (the object cell exactly as
        // found; a guard on a column nothing writes, which always holds).
        let write = Command::SetObject {
            row: row.clone(),
            column: column.clone(),
            expected: current.clone(),
            value: value.clone(),
            guard: ObjectGuard::Free {
                column: String::from("\u{0}paxos-decided"),
            },
            serial: *serial,
            consistency: *consistency,
        };
        let change = ObjectChange {
            row: row.clone(),
            decided: at,
            at,
            before: current,
            after: Some(value.clone()),
            cells: cells.into_iter().map(|c| (c.column, c.value)).collect(),
            write: true,
        };
        let reply = Reply::Object {
            applied: true,
            current: Some(value.clone()),
            lock,
            counter,
        };
        (reply, Some((write, change)))
    }
}

impl SimStore for Replicated {
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        stamp: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        if fate == Fate::Unavailable {
            return (unavailable(), at);
        }
        match command {
            Command::Put {
                row,
                column,
                value,
                ttl,
                ..
            } => {
                let w = [(column.clone(), Some(value.clone()), *ttl)];
                self.write(row, &w, at, stamp, fate, rng)
            }
            Command::Delete { row, column, .. } => {
                self.write(row, &[(column.clone(), None, None)], at, stamp, fate, rng)
            }
            // Cassandra runs a release as a quorum read, then the delete: two requests, the
            // delete's fate deciding what the client hears.
            Command::Vacate {
                row, column, read, ..
            } => {
                let (cells, done) = self.read(row, read, at, rng);
                let (written, done) =
                    self.write(row, &[(column.clone(), None, None)], done, stamp, fate, rng);
                match written {
                    Reply::Written => (cells, done),
                    failed => (failed, done),
                }
            }
            Command::DeleteVersion {
                row,
                column,
                stamp: version,
                ..
            } => self.write(
                row,
                &[(column.clone(), None, None)],
                at,
                *version,
                fate,
                rng,
            ),
            Command::Batch {
                row, writes, after, ..
            } => {
                let stamp = stamp.max(after.saturating_add(1));
                let w: Vec<_> = writes
                    .iter()
                    .map(|w| match w {
                        Write::Put { column, value, ttl } => {
                            (column.clone(), Some(value.clone()), *ttl)
                        }
                        Write::Delete { column } => (column.clone(), None, None),
                    })
                    .collect();
                self.write(row, &w, at, stamp, fate, rng)
            }
            Command::Read {
                row,
                filter,
                consistency: ReadConsistency::Plain(_),
            } => {
                if matches!(fate, Fate::Dropped | Fate::Late) {
                    return (timeout(), at);
                }
                let (reply, done) = self.read(row, filter, at, rng);
                let reply = if fate == Fate::LostReply {
                    timeout()
                } else {
                    reply
                };
                (reply, done)
            }
            // An object write: a conditional batch on the partition (Paxos), whose guard may
            // read plain cells.
            Command::SetObject { row, .. } => {
                self.settle_proposal(Some(row), at, rng);
                if matches!(fate, Fate::Dropped | Fate::Late) {
                    return (timeout(), at);
                }
                let done = at + MS + rng.below(4 * MS);
                let now = self.node_now(rng.below(3) as usize, at);
                let skip = rng.below(3) as usize;
                let (reply, write) = self.object_step(command, at, now, skip);
                let Some((write, change)) = write else {
                    // Nothing to propose: the conditions did not hold.
                    let reply = if fate == Fate::LostReply {
                        timeout()
                    } else {
                        reply
                    };
                    return (reply, done);
                };
                if fate == Fate::Minority {
                    self.proposal = Some((row.clone(), Proposal::Object { write, change }, stamp));
                    let reply = if rng.below(2) == 0 {
                        timeout()
                    } else {
                        unavailable()
                    };
                    return (reply, done);
                }
                let _ = self
                    .paxos
                    .apply_stamped(&write, Instant::from_nanos(now), stamp);
                self.changes.push(change);
                let reply = if fate == Fate::LostReply {
                    timeout()
                } else {
                    reply
                };
                (reply, done)
            }
            // Serial reads, conditional commands and purges go through Paxos.
            _ => {
                self.settle_proposal(command.row(), at, rng);
                if matches!(fate, Fate::Dropped | Fate::Late) {
                    return (timeout(), at);
                }
                let done = at + MS + rng.below(4 * MS);
                if fate == Fate::Minority && command.is_conditional() {
                    // Decided here: the TTL and the conditions on this round's coordinator's
                    // clock, the turn as this round reads it.
                    let row = command.row().unwrap_or_default().to_string();
                    let now = self.node_now(rng.below(3) as usize, at);
                    let command = whole_second_ttl(command, now);
                    let turn_holds = self.turn_holds(&command, at, now);
                    self.proposal = Some((
                        row,
                        Proposal::Command {
                            command,
                            now,
                            turn_holds,
                        },
                        stamp,
                    ));
                    let reply = if rng.below(2) == 0 {
                        timeout()
                    } else {
                        unavailable()
                    };
                    return (reply, done);
                }
                let coordinator = rng.below(3) as usize;
                let now = self.node_now(coordinator, at);
                let command = whole_second_ttl(command, now);
                let mut reply = self.paxos_apply(&command, at, now, stamp, rng);
                // A serial read of a whole row reads the plain cells too (a Paxos round reads
                // the partition from a quorum): what an object write's read-back judges its
                // guard by.
                if let (
                    Command::Read {
                        row,
                        filter: ColumnFilter::All,
                        consistency: ReadConsistency::Serial(_),
                    },
                    Reply::Cells(cells),
                ) = (&command, &mut reply)
                {
                    let skip = usize::try_from(at % 3).unwrap_or(0);
                    for plain in self.plain_cells(row, skip, at, now) {
                        if !cells.iter().any(|c| c.column == plain.column) {
                            cells.push(plain);
                        }
                    }
                    cells.sort_by(|a, b| a.column.cmp(&b.column));
                }
                let reply = if fate == Fate::LostReply {
                    timeout()
                } else {
                    reply
                };
                (reply, done)
            }
        }
    }

    fn take_object_changes(&mut self) -> Vec<ObjectChange> {
        std::mem::take(&mut self.changes)
    }

    fn arrival_stamp(&mut self) -> u64 {
        self.arrivals += 1;
        self.arrivals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_kernel::{Consistency, SerialConsistency};

    fn serial_read(row: &str) -> Command {
        Command::Read {
            row: row.to_string(),
            filter: ColumnFilter::All,
            consistency: ReadConsistency::Serial(SerialConsistency::Serial),
        }
    }

    /// A conditional insert accepted by a minority at 0 s with a TTL of 10 s, completed by a
    /// round 30 s later, commits as its first round decided: its cell expired at 11 s (10 s
    /// rounded up, plus a second for the truncation) and is not live at 30 s. Judged again at
    /// the completing round, as the simulator once did, it would live until 41 s.
    #[test]
    fn a_minority_proposal_commits_as_its_first_round_decided() {
        let insert = Command::InsertIfAbsent {
            row: "r".into(),
            column: "lock".into(),
            value: "a".into(),
            ttl: Some(Duration::from_secs(10)),
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        };
        let mut completions = 0;
        for seed in 0..64 {
            let mut rng = SplitMix64::new(seed);
            let mut store = Replicated::new(0, Duration::ZERO, 0, &mut rng);
            let _ = store.execute(&insert, SEC, 1, Fate::Minority, &mut rng);
            let (reply, _) = store.execute(&serial_read("r"), 30 * SEC, 2, Fate::Normal, &mut rng);
            let Reply::Cells(cells) = reply else {
                panic!("a read answers cells, got {reply:?}");
            };
            assert!(cells.is_empty(), "seed {seed}: {cells:?} outlived its TTL");
            // The same insert decided at 25 s and completed at 30 s is still live then.
            let mut store = Replicated::new(0, Duration::ZERO, 0, &mut rng);
            let _ = store.execute(&insert, 25 * SEC, 1, Fate::Minority, &mut rng);
            let (reply, _) = store.execute(&serial_read("r"), 30 * SEC, 2, Fate::Normal, &mut rng);
            completions += store.completed;
            if store.completed == 1 {
                assert!(
                    matches!(&reply, Reply::Cells(c) if c.len() == 1 && c[0].value == "a"),
                    "seed {seed}: {reply:?}"
                );
            }
        }
        assert!(completions > 0, "no seed completed a proposal");
    }
}
