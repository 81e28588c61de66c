//! One copy (SQL's model): the kernel's reference table, applied at the store's own clock.

use baton_kernel::{
    ColumnFilter, Command, Instant, MemoryTable, Reply, SplitMix64, Write, OBJECT_COLUMN,
};

use super::{chance, timeout, unavailable, Fate, ObjectChange, SimStore, SteppingClock};

/// One copy (SQL's model): the kernel's reference table, applied at the store's own clock.
#[derive(Default)]
pub struct SingleCopy {
    table: MemoryTable,
    /// The server's clock.
    pub clock: SteppingClock,
    /// Probability of a clock step per command.
    pub step_chance: f64,
    /// Probability that a claim is applied in two steps, the lock cell and then the counter
    /// (see [`split_claim`]), rather than both or neither.
    pub split_chance: f64,
    /// Claims applied in two steps that inserted the lock cell and left the counter.
    pub split_claims: u64,
    /// Probability, per command, that the server crashed and came back just before it,
    /// losing every commit since the last one that waited for the disk (see [`flushes`]).
    pub crash_chance: f64,
    /// The broken `UnflushedGrants`: no commit waits for the disk, not even a grant's.
    pub unflushed_grants: bool,
    /// Server crashes so far.
    pub crashes: u64,
    /// Commits lost in them.
    pub lost_commits: u64,
    /// The table as the last commit that waited for the disk left it, and the commits since,
    /// which have not: what a crash goes back to, and what it may keep a first part of.
    unflushed: Option<(MemoryTable, Vec<Commit>)>,
    arrivals: u64,
    /// Simulated time of the command being executed.
    at: u64,
    /// Rows that have had an object write, watched across crashes.
    object_rows: Vec<String>,
    /// Object cell changes not yet taken.
    changes: Vec<ObjectChange>,
}

impl SingleCopy {
    /// A store whose clock steps by up to `max_step` ns either way, with probability
    /// `step_chance` per command.
    pub fn new(max_step: u64, step_chance: f64) -> Self {
        SingleCopy {
            clock: SteppingClock::new(max_step),
            step_chance,
            split_chance: 0.25,
            ..SingleCopy::default()
        }
    }
}

/// A commit that did not wait for the disk, as applied: replayed as it was when a crash keeps it.
struct Commit {
    command: Command,
    now: Instant,
    stamp: u64,
    split: bool,
}

impl SingleCopy {
    /// Applies `command`, as one commit: with server crashes on, first maybe crashes, and
    /// afterwards remembers whether the commit reached the disk.
    fn apply(
        &mut self,
        command: &Command,
        now: Instant,
        stamp: u64,
        rng: &mut SplitMix64,
    ) -> Reply {
        // The SQL stores ignore a claim's turn condition (`Turn`'s contract allows it).
        let unturned;
        let command = match command {
            Command::Claim { turn: Some(_), .. } => {
                let mut claim = command.clone();
                if let Command::Claim { turn, .. } = &mut claim {
                    *turn = None;
                }
                unturned = claim;
                &unturned
            }
            _ => command,
        };
        let split = matches!(command, Command::Claim { .. }) && chance(rng, self.split_chance);
        if self.crash_chance <= 0.0 {
            return self.commit_watched(command, now, stamp, split);
        }
        if chance(rng, self.crash_chance) {
            self.crash(now, rng);
        }
        // Whether a claim's lock cell holds its value already (an earlier copy of the claim
        // inserted it): this one then inserts nothing.
        let had = match command {
            Command::Claim {
                row, column, value, ..
            } => self
                .table
                .read(row, &ColumnFilter::Exact(column.clone()), now)
                .iter()
                .any(|c| &c.value == value),
            _ => false,
        };
        let before = self.unflushed.is_none().then(|| self.table.clone());
        let reply = self.commit_watched(command, now, stamp, split);
        match flushes(command, &reply, had) {
            // Nothing to lose.
            None => {}
            Some(true) if !self.unflushed_grants => self.unflushed = None,
            Some(_) => {
                let commit = Commit {
                    command: command.clone(),
                    now,
                    stamp,
                    split,
                };
                match (&mut self.unflushed, before) {
                    (Some((_, tail)), _) => tail.push(commit),
                    (None, Some(table)) => self.unflushed = Some((table, vec![commit])),
                    (None, None) => {}
                }
            }
        }
        reply
    }

    /// The server crashes and comes back: the commits that had not reached the disk are lost,
    /// all but a first part of them that the WAL writer had flushed in the meantime (as many as
    /// the seed draws, from none to all).
    fn crash(&mut self, now: Instant, rng: &mut SplitMix64) {
        self.crashes += 1;
        let Some((table, tail)) = self.unflushed.take() else {
            return;
        };
        let objects_before: Vec<Option<String>> = self
            .object_rows
            .iter()
            .map(|row| object_cell(&self.table, row, now))
            .collect();
        let kept = rng.below(tail.len() as u64 + 1) as usize;
        self.lost_commits += (tail.len() - kept) as u64;
        self.table = table;
        // Replayed, not new: the split claims among them were counted when first applied.
        let split_claims = self.split_claims;
        for c in &tail[..kept] {
            let _ = self.commit(&c.command, c.now, c.stamp, c.split);
        }
        self.split_claims = split_claims;
        // An object write that had not reached the disk (only under the broken
        // `UnflushedGrants`: object writes wait for it) is taken back.
        for (row, before) in self.object_rows.iter().zip(objects_before) {
            let after = object_cell(&self.table, row, now);
            if after != before {
                self.changes.push(ObjectChange {
                    row: row.clone(),
                    decided: self.at,
                    at: self.at,
                    before,
                    after,
                    cells: Vec::new(),
                    write: false,
                });
            }
        }
    }

    /// [`SingleCopy::commit`], noting an object write that applied, with the row as its step
    /// saw it.
    fn commit_watched(
        &mut self,
        command: &Command,
        now: Instant,
        stamp: u64,
        split: bool,
    ) -> Reply {
        let Command::SetObject { row, .. } = command else {
            return self.commit(command, now, stamp, split);
        };
        let cells = self.table.read(row, &ColumnFilter::All, now);
        let before = cells
            .iter()
            .find(|c| c.column == OBJECT_COLUMN)
            .map(|c| c.value.clone());
        let reply = self.commit(command, now, stamp, split);
        if let Reply::Object {
            applied: true,
            current,
            ..
        } = &reply
        {
            if !self.object_rows.contains(row) {
                self.object_rows.push(row.clone());
            }
            self.changes.push(ObjectChange {
                row: row.clone(),
                decided: self.at,
                at: self.at,
                before,
                after: current.clone(),
                cells: cells.into_iter().map(|c| (c.column, c.value)).collect(),
                write: true,
            });
        }
        reply
    }

    fn commit(&mut self, command: &Command, now: Instant, stamp: u64, split: bool) -> Reply {
        if split {
            let reply = split_claim(&mut self.table, command, now, stamp);
            if matches!(&reply, Reply::Guarded { applied: false, current: Some(v), .. } if matches!(command, Command::Claim { value, .. } if value == v))
            {
                self.split_claims += 1;
            }
            return reply;
        }
        self.table.apply_stamped(command, now, stamp)
    }
}

/// Whether PostgreSQL's store, on its own connections, makes `command`'s commit wait for the
/// disk (`None`: a read, or a claim that inserted nothing: nothing a crash could lose). `had`:
/// the claim's lock cell held its value before (an earlier copy of it inserted it).
///
/// Releases (`Vacate`, a guarded or compare-and-delete, a batch of deletes), an acquisition's
/// removal of its own or a stale cell (`Delete`, `DeleteVersion`) and a claim that inserted
/// nothing do not wait: a crash can lose them, and it loses with them every later commit until
/// one that waits. Everything that writes a cell waits, and with it everything before it in
/// the log. (Some of these are flushed by the real store, a compare-and-delete or a batch of
/// several deletes: counted as unflushed here, they only lose more deletes.)
pub fn flushes(command: &Command, reply: &Reply, had: bool) -> Option<bool> {
    Some(match command {
        Command::Read { .. } | Command::Scan { .. } => return None,
        Command::Vacate { .. } | Command::Delete { .. } | Command::DeleteVersion { .. } => false,
        Command::CompareAndSet { new, .. } | Command::GuardedSet { new, .. } => new.is_some(),
        Command::Batch { writes, .. } => writes.iter().any(|w| !matches!(w, Write::Delete { .. })),
        // The lock cell was inserted when the reply shows it holds the claim's value; one that
        // inserted nothing has nothing to lose.
        Command::Claim { value, .. } => {
            if had || !matches!(reply, Reply::Guarded { current: Some(v), .. } if v == value) {
                return None;
            }
            true
        }
        // An object write waits for the disk when it wrote; a refused one wrote nothing.
        Command::SetObject { .. } => {
            if !matches!(reply, Reply::Object { applied: true, .. }) {
                return None;
            }
            true
        }
        // Put, InsertIfAbsent, Purge, and any command added later until it is placed here.
        _ => true,
    })
}

/// The weakest claim the kernel accepts from a store (`Command::Claim`'s partial outcome):
/// the lock cell's insert-if-absent, whatever the counter holds, then the counter's
/// compare-and-set only if the insert was applied; the reply says which parts were.
/// PostgreSQL's one statement is stronger (it checks the counter before inserting), so a
/// kernel safe against this is safe against it.
pub fn split_claim(table: &mut MemoryTable, command: &Command, now: Instant, stamp: u64) -> Reply {
    let Command::Claim {
        row,
        column,
        value,
        ttl,
        counter,
        counter_expected,
        counter_next,
        serial,
        consistency,
        // The SQL stores do not honour turns (see `Turn`); `SingleCopy::apply` takes them off.
        turn: _,
    } = command
    else {
        return table.apply_stamped(command, now, stamp);
    };
    let insert = Command::InsertIfAbsent {
        row: row.clone(),
        column: column.clone(),
        value: value.clone(),
        ttl: *ttl,
        serial: *serial,
        consistency: *consistency,
    };
    let inserted = matches!(
        table.apply_stamped(&insert, now, stamp),
        Reply::Conditional { applied: true, .. }
    );
    let bump = match counter_expected {
        None => Command::InsertIfAbsent {
            row: row.clone(),
            column: counter.clone(),
            value: counter_next.clone(),
            ttl: None,
            serial: *serial,
            consistency: *consistency,
        },
        Some(expected) => Command::CompareAndSet {
            row: row.clone(),
            column: counter.clone(),
            expected: expected.clone(),
            new: Some(counter_next.clone()),
            ttl: None,
            serial: *serial,
            consistency: *consistency,
        },
    };
    let bumped = inserted
        && matches!(
            table.apply_stamped(&bump, now, stamp),
            Reply::Conditional { applied: true, .. }
        );
    let value_of = |c: &str| {
        table
            .read(row, &ColumnFilter::Exact(c.to_string()), now)
            .into_iter()
            .next()
            .map(|cell| cell.value)
    };
    Reply::Guarded {
        applied: inserted && bumped,
        current: value_of(column),
        guard: value_of(counter),
    }
}

/// The object cell of `row` in `table` (object cells have no TTL).
fn object_cell(table: &MemoryTable, row: &str, now: Instant) -> Option<String> {
    table
        .read(row, &ColumnFilter::Exact(OBJECT_COLUMN.to_string()), now)
        .into_iter()
        .next()
        .map(|c| c.value)
}

impl SimStore for SingleCopy {
    fn take_object_changes(&mut self) -> Vec<ObjectChange> {
        std::mem::take(&mut self.changes)
    }

    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        stamp: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        let now = Instant::from_nanos(self.clock.read(at, self.step_chance, rng));
        self.at = at;
        match fate {
            Fate::Unavailable => (unavailable(), at),
            Fate::Dropped | Fate::Late => (timeout(), at),
            Fate::Normal | Fate::Duplicated | Fate::Minority => {
                (self.apply(command, now, stamp, rng), at)
            }
            Fate::LostReply => {
                let _ = self.apply(command, now, stamp, rng);
                (timeout(), at)
            }
        }
    }

    fn arrival_stamp(&mut self) -> u64 {
        self.arrivals += 1;
        self.arrivals
    }

    fn clock_steps(&self) -> u64 {
        self.clock.steps
    }

    fn split_claims(&self) -> u64 {
        self.split_claims
    }

    fn server_crashes(&self) -> (u64, u64) {
        (self.crashes, self.lost_commits)
    }
}
