//! Simulated stores: a single linearizable copy (the kernel's reference table), and a
//! three-replica store answering at QUORUM with one lagging replica.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_kernel::{
    Cell, ColumnFilter, Command, Failure, Instant, MemoryTable, ReadConsistency, Reply, SplitMix64,
    Write,
};

/// What the network does to one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

/// A simulated store. `at` is the store time (ns) the command reaches the coordinator; the
/// result is the reply and the store time it is ready to leave.
pub trait SimStore {
    /// Executes `command` with `fate`.
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64);
}

fn timeout() -> Reply {
    Reply::Failed(Failure::Timeout("simulated timeout".into()))
}

/// One linearizable copy: the kernel's reference table.
#[derive(Default)]
pub struct SingleCopy {
    table: MemoryTable,
}

impl SimStore for SingleCopy {
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        fate: Fate,
        _rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        match fate {
            Fate::Unavailable => (
                Reply::Failed(Failure::Unavailable("simulated outage".into())),
                at,
            ),
            Fate::Dropped => (timeout(), at),
            Fate::Normal => (self.table.apply(command, Instant::from_nanos(at)), at),
            Fate::LostReply => {
                let _ = self.table.apply(command, Instant::from_nanos(at));
                (timeout(), at)
            }
        }
    }
}

/// A cell version on one replica: last write wins by timestamp, deletes are tombstones.
#[derive(Clone, Debug)]
struct Version {
    ts: (u64, u64),
    value: Option<String>,
    expires: Option<u64>,
}

#[derive(Default)]
struct Replica {
    cells: BTreeMap<(String, String), Version>,
    /// Writes on their way to this replica: (apply time, key, version).
    pending: Vec<(u64, (String, String), Version)>,
}

impl Replica {
    fn catch_up(&mut self, now: u64) {
        let (due, later): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|(t, _, _)| *t <= now);
        self.pending = later;
        for (_, key, v) in due {
            let newer = self.cells.get(&key).is_none_or(|old| old.ts < v.ts);
            if newer {
                self.cells.insert(key, v);
            }
        }
    }
}

/// Three replicas of the plain cells, written and read at QUORUM; one replica lags behind by up
/// to `lag`. Conditional cells live in a linearizable Paxos register (a [`MemoryTable`]), as
/// Cassandra's lightweight transactions give; they are never written with plain commands.
pub struct Replicated {
    replicas: [Replica; 3],
    paxos: MemoryTable,
    lagging: usize,
    lag: u64,
    seq: u64,
}

impl Replicated {
    /// A store whose replica `lagging` applies writes up to `lag` ns late.
    pub fn new(lagging: usize, lag: Duration) -> Self {
        Replicated {
            replicas: Default::default(),
            paxos: MemoryTable::new(),
            lagging: lagging % 3,
            lag: u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX),
            seq: 0,
        }
    }

    fn delay(&self, replica: usize, rng: &mut SplitMix64) -> u64 {
        if replica == self.lagging {
            rng.below(self.lag.max(1))
        } else {
            rng.below(2_000_000)
        }
    }

    fn write(
        &mut self,
        row: &str,
        writes: &[Write],
        at: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        self.seq += 1;
        let ts = (at, self.seq);
        // Which replicas get it: all, or (dropped) at most one, which is less than a quorum.
        let reach: Vec<usize> = match fate {
            Fate::Dropped => (0..3).filter(|_| rng.below(3) == 0).take(1).collect(),
            _ => (0..3).collect(),
        };
        let mut acks: Vec<u64> = Vec::new();
        for &r in &reach {
            let when = at + self.delay(r, rng);
            acks.push(when);
            for w in writes {
                let (key, v) = match w {
                    Write::Put { column, value, ttl } => (
                        (row.to_string(), column.clone()),
                        Version {
                            ts,
                            value: Some(value.clone()),
                            expires: ttl.map(|t| {
                                at.saturating_add(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
                            }),
                        },
                    ),
                    Write::Delete { column } => (
                        (row.to_string(), column.clone()),
                        Version {
                            ts,
                            value: None,
                            expires: None,
                        },
                    ),
                };
                self.replicas[r].pending.push((when, key, v));
            }
        }
        acks.sort_unstable();
        match fate {
            Fate::Normal => (Reply::Written, acks[1]),
            Fate::LostReply => (timeout(), acks[1]),
            Fate::Dropped => (timeout(), at),
            Fate::Unavailable => (
                Reply::Failed(Failure::Unavailable("simulated outage".into())),
                at,
            ),
        }
    }

    fn read(
        &mut self,
        row: &str,
        filter: &ColumnFilter,
        at: u64,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
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
                if filter.matches(col) && merged.get(col).is_none_or(|old| old.ts < v.ts) {
                    merged.insert(col.clone(), v.clone());
                }
            }
        }
        let mut cells: Vec<Cell> = merged
            .into_iter()
            .filter_map(|(column, v)| {
                let live = v.expires.is_none_or(|e| at < e);
                let value = v.value.filter(|_| live)?;
                Some(Cell {
                    column,
                    value,
                    ttl_remaining: v
                        .expires
                        .map(|e| Duration::from_nanos(e.saturating_sub(at))),
                })
            })
            .collect();
        cells.extend(self.paxos.read(row, filter, Instant::from_nanos(at)));
        cells.sort_by(|a, b| a.column.cmp(&b.column));
        (Reply::Cells(cells), done)
    }
}

impl SimStore for Replicated {
    fn execute(
        &mut self,
        command: &Command,
        at: u64,
        fate: Fate,
        rng: &mut SplitMix64,
    ) -> (Reply, u64) {
        if fate == Fate::Unavailable {
            return (
                Reply::Failed(Failure::Unavailable("simulated outage".into())),
                at,
            );
        }
        match command {
            Command::Put {
                row,
                column,
                value,
                ttl,
                ..
            } => {
                let w = [Write::Put {
                    column: column.clone(),
                    value: value.clone(),
                    ttl: *ttl,
                }];
                self.write(row, &w, at, fate, rng)
            }
            Command::Delete { row, column, .. } => self.write(
                row,
                &[Write::Delete {
                    column: column.clone(),
                }],
                at,
                fate,
                rng,
            ),
            Command::Batch { row, writes, .. } => self.write(row, writes, at, fate, rng),
            Command::Read {
                row,
                filter,
                consistency: ReadConsistency::Plain(_),
            } => {
                if fate == Fate::Dropped {
                    return (timeout(), at);
                }
                let (reply, done) = self.read(row, filter, at, rng);
                (
                    if fate == Fate::LostReply {
                        timeout()
                    } else {
                        reply
                    },
                    done,
                )
            }
            // Serial reads, conditional commands and purges go through Paxos.
            _ => {
                if fate == Fate::Dropped {
                    return (timeout(), at);
                }
                let done = at + 1_000_000 + rng.below(4_000_000);
                let reply = self.paxos.apply(command, Instant::from_nanos(at));
                (
                    if fate == Fate::LostReply {
                        timeout()
                    } else {
                        reply
                    },
                    done,
                )
            }
        }
    }
}
