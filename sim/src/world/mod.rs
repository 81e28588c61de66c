//! One simulated run: the event queue, the workers (each living one lock's life at a time, the
//! kernel's `LockLife`), the operator, and the network between them and the store.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use baton_kernel::{
    Command, CommandId, ErrorKind, FenceHint, ForceRelease, Instant, LockName, LockOptions, Mode,
    Operation, Poll, PrefixOptions, Purge, Reply, RetryPolicy, Sabotage, SplitMix64, Wait,
};

mod network;
mod operator;
mod optimistic;
mod worker;

use super::check::{self, GrantRecord};
use super::clock::ClientClock;
use super::objects::{self, LeaseRef, ObjectCallRecord, ObjectRun};
use super::store::{Fate, ObjectChange, Replicated, SimStore, SingleCopy};
use super::{Config, FaultCounts, Modes, Outcome};

const MS: u64 = 1_000_000;
const MAX_EVENTS: u64 = 3_000_000;
const MAX_TIME: u64 = 3_600 * 1_000 * MS;

enum Event {
    Wake {
        client: usize,
        gen: u64,
    },
    Cancel {
        client: usize,
        op: u64,
    },
    Arrive {
        client: usize,
        op: u64,
        id: CommandId,
        command: Command,
        fate: Fate,
        sent: u64,
        timeout: u64,
        stamp: u64,
    },
    /// A command applied after its client gave up on it (or a second time); its reply goes
    /// nowhere.
    ApplyLate {
        command: Command,
        stamp: u64,
    },
    Deliver {
        client: usize,
        op: u64,
        id: CommandId,
        reply: Reply,
        paused: bool,
    },
    Crash {
        client: usize,
    },
    /// A change notice from the store (PostgreSQL's `NOTIFY`) reaches a client.
    Notice {
        client: usize,
    },
}

enum State {
    Idle,
    /// A worker's lock, from its acquisition to the end of its life.
    Living(Box<worker::Worker>),
    /// A worker's optimistic increment of its name's object, without the lock.
    Optimistic(Box<optimistic::Optimistic>),
    Purging(Box<Purge>),
    Forcing {
        op: Box<ForceRelease>,
        started: u64,
    },
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Worker,
    Operator,
}

struct Client {
    role: Role,
    clock: ClientClock,
    state: State,
    left: u32,
    crashed: bool,
    /// Generation of the current operation (replies to older ones are dropped).
    op: u64,
    /// Generation of the current timer.
    timer: u64,
    /// The change notices that reached it: its store's change counter.
    changes: u64,
    name: LockName,
    failed: u32,
    /// The fencing counter as the last lease left it, for the next acquisition.
    hint: Option<FenceHint>,
    /// Lives that gave up and whose cleanup is still under way while the next one runs: only
    /// under [`Sabotage::GaveUpFreesSlot`] (a host keeps driving such a life as the current
    /// one, and starts the next acquisition of its slot only once it is done).
    ghosts: Vec<worker::Ghost>,
    /// The object write call under way ([`Sim::object_calls`]), whose cells its `SetObject`
    /// commands carry.
    call: Option<usize>,
}

/// Which cell a grant rests on, for matching a forced release's entries to grants: the owner
/// and the exact value (unique per acquisition and attempt).
#[derive(PartialEq, Eq)]
struct GrantOwner {
    owner: String,
    value: String,
}

struct Sim {
    cfg: Config,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    events: Vec<Option<Event>>,
    rng: SplitMix64,
    /// The operator's choices of one holder to break (`ForceRelease::holder`), drawn apart so
    /// that seeds found before that choice existed replay as they did until it is made.
    holder_rng: SplitMix64,
    store: Box<dyn SimStore>,
    clients: Vec<Client>,
    names: Vec<LockName>,
    grants: Vec<GrantRecord>,
    owners: Vec<GrantOwner>,
    /// Cells a forced release removed, and when it started: a grant resting on one of them that
    /// is delivered later is broken too (the operator removed its cell mid-grant).
    broken: Vec<(GrantOwner, u64)>,
    errors: Vec<(ErrorKind, usize)>,
    /// Acquisitions that gave up at the end of their wait with a command on its way.
    gave_up: usize,
    releases: Vec<(Option<ErrorKind>, usize)>,
    faults: FaultCounts,
    processed: u64,
    /// Event log, when tracing.
    trace: Option<Vec<String>>,
    /// Object write calls.
    object_calls: Vec<ObjectCallRecord>,
    /// Every change of an object cell the store made, in order.
    object_changes: Vec<ObjectChange>,
    /// The lease of each grant (same index as `grants`).
    leases: Vec<LeaseRef>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `cfg` with `seed`.
pub fn run_config(cfg: Config, seed: u64) -> Outcome {
    run_inner(cfg, seed, false).0
}

/// Runs `cfg` with `seed` and returns the log of every event, for replaying a failure.
pub fn run_traced(cfg: Config, seed: u64) -> (Outcome, Vec<String>) {
    run_inner(cfg, seed, true)
}

fn run_inner(cfg: Config, seed: u64, traced: bool) -> (Outcome, Vec<String>) {
    let mut rng = SplitMix64::new(seed);
    let ttl = nanos(cfg.ttl);
    let store_clock = ttl / 1_000_000 * cfg.faults.store_clock_ppm;
    let store: Box<dyn SimStore> = if cfg.faults.replicated {
        let lagging = rng.below(3) as usize;
        let lag = Duration::from_millis(5 + rng.below(300));
        Box::new(Replicated::new(lagging, lag, store_clock / 2, &mut rng))
    } else {
        let chance = if store_clock > 0 { 0.01 } else { 0.0 };
        let mut single = SingleCopy::new(store_clock, chance);
        single.crash_chance = cfg.faults.server_crash;
        single.unflushed_grants = cfg.sabotage == Sabotage::UnflushedGrants;
        Box::new(single)
    };
    let names: Vec<LockName> = if cfg.paths {
        let tree: &[&str] = if cfg.names > 1 {
            &["r", "r.a", "r.a.x", "r.b", "s", "s.a"]
        } else {
            &["r", "r.a", "r.a.x", "r.b"]
        };
        tree.iter().filter_map(|n| LockName::new(n).ok()).collect()
    } else {
        (0..cfg.names)
            .filter_map(|i| LockName::new(&format!("lock-{i}")).ok())
            .collect()
    };
    let mut clients = Vec::new();
    let operator = cfg.faults.operators;
    for i in 0..cfg.clients + usize::from(operator) {
        let ppm = signed(&mut rng, cfg.faults.drift_ppm);
        let skew = signed(&mut rng, cfg.faults.skew_ms);
        let role = if i < cfg.clients {
            Role::Worker
        } else {
            Role::Operator
        };
        clients.push(Client {
            role,
            clock: ClientClock::new(rng.below(1_000_000 * MS), ppm, skew),
            state: State::Idle,
            left: if role == Role::Worker {
                // Without faults, readers keep coming: a stream a writer must get through.
                if i > 0 && cfg.modes == Modes::ReadersWriters && !cfg.faults.any() {
                    cfg.acquisitions + 6
                } else {
                    cfg.acquisitions
                }
            } else {
                0
            },
            crashed: false,
            op: 0,
            timer: 0,
            changes: 0,
            name: names[i % names.len()].clone(),
            failed: 0,
            hint: None,
            ghosts: Vec::new(),
            call: None,
        });
    }
    let mut sim = Sim {
        cfg,
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        events: Vec::new(),
        rng,
        holder_rng: SplitMix64::new(seed ^ 0x0E4E_401D_E400_0043),
        store,
        clients,
        names,
        grants: Vec::new(),
        owners: Vec::new(),
        broken: Vec::new(),
        errors: Vec::new(),
        gave_up: 0,
        releases: Vec::new(),
        faults: FaultCounts::default(),
        processed: 0,
        trace: traced.then(Vec::new),
        object_calls: Vec::new(),
        object_changes: Vec::new(),
        leases: Vec::new(),
    };
    for c in 0..sim.clients.len() {
        let start = sim.rng.below(20 * MS);
        sim.schedule(start, Event::Wake { client: c, gen: 0 });
        if sim.clients[c].role == Role::Worker && chance(&mut sim.rng, sim.cfg.faults.crash) {
            let at = sim.rng.below(5_000 * MS);
            sim.schedule(at, Event::Crash { client: c });
        }
    }
    sim.run();
    let log = sim.trace.take().unwrap_or_default();
    (sim.outcome(seed), log)
}

fn signed(rng: &mut SplitMix64, bound: i64) -> i64 {
    if bound <= 0 {
        return 0;
    }
    rng.below(2 * bound as u64 + 1) as i64 - bound
}

fn chance(rng: &mut SplitMix64, p: f64) -> bool {
    p > 0.0 && (rng.next_u64() as f64 / u64::MAX as f64) < p
}

fn tally<K: PartialEq>(list: &mut Vec<(K, usize)>, key: K) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => list.push((key, 1)),
    }
}

impl Sim {
    fn log(&mut self, client: usize, what: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            t.push(format!(
                "{:>12.3}ms c{client}: {}",
                self.now as f64 / 1e6,
                what()
            ));
        }
    }

    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.events.push(Some(event));
        self.queue
            .push(Reverse((at, self.seq, self.events.len() - 1)));
    }

    fn run(&mut self) {
        while let Some(Reverse((at, _, slot))) = self.queue.pop() {
            self.processed += 1;
            if self.processed > MAX_EVENTS || at > MAX_TIME {
                break;
            }
            self.now = at;
            let Some(event) = self.events[slot].take() else {
                continue;
            };
            self.handle(event);
        }
    }

    fn ttl(&self) -> u64 {
        nanos(self.cfg.ttl)
    }

    /// Whether client `c` stops for a while before handling its next event: `Some(how long)`.
    /// A suspended host's clock stops too under the broken `ClockStopsInSuspend`.
    fn pause(&mut self, c: usize) -> Option<u64> {
        let ttl = self.ttl();
        if chance(&mut self.rng, self.cfg.faults.pause) {
            self.faults.pauses += 1;
            return Some(ttl + self.rng.below(ttl));
        }
        if chance(&mut self.rng, self.cfg.faults.suspend) {
            self.faults.suspends += 1;
            let d = ttl + self.rng.below(2 * ttl);
            if self.cfg.sabotage == Sabotage::ClockStopsInSuspend {
                self.clients[c].clock.stop_for(d);
            }
            return Some(d);
        }
        None
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Crash { client } => {
                self.log(client, || "CRASH".into());
                let c = &mut self.clients[client];
                if !c.crashed && !matches!(c.state, State::Done) {
                    c.crashed = true;
                    self.faults.crashes += 1;
                    self.crash_worker(client);
                }
            }
            Event::Wake { client, gen } => {
                if self.clients[client].crashed || self.clients[client].timer != gen {
                    return;
                }
                if let Some(p) = self.pause(client) {
                    self.clients[client].timer += 1;
                    let gen = self.clients[client].timer;
                    self.schedule(self.now + p, Event::Wake { client, gen });
                    return;
                }
                self.step(client);
            }
            Event::Cancel { client, op } => self.cancel(client, op),
            Event::Notice { client } => {
                let c = &self.clients[client];
                if c.crashed || !matches!(c.state, State::Living(_)) {
                    return;
                }
                if let Some(p) = self.pause(client) {
                    self.schedule(self.now + p, Event::Notice { client });
                    return;
                }
                self.notice(client);
            }
            Event::Arrive {
                client,
                op,
                id,
                command,
                fate,
                sent,
                timeout,
                stamp,
            } => {
                let stamp = self.stamp_at_store(stamp);
                let (reply, done) =
                    self.store
                        .execute(&command, self.now, stamp, fate, &mut self.rng);
                self.log(client, || {
                    format!("store {fate:?} stamp {stamp}: {command:?} -> {reply:?}")
                });
                self.take_object_changes();
                self.notify(&command);
                let ttl = self.ttl();
                match fate {
                    Fate::Late => {
                        let at = sent + timeout + self.rng.below(ttl);
                        self.schedule(at.max(self.now), Event::ApplyLate { command, stamp });
                    }
                    Fate::Duplicated => {
                        let at = self.now + self.rng.below(ttl);
                        // An object write the store refused, and answered, is never executed
                        // again: a second copy is only ever the client's own resend after a
                        // timeout (`Late`), since drivers resend and speculate only idempotent
                        // statements and baton marks conditional ones non-idempotent. One that
                        // applied is sent again, and must find the object moved on.
                        let refused_object = matches!(command, Command::SetObject { .. })
                            && matches!(reply, Reply::Object { applied: false, .. });
                        if !refused_object {
                            self.schedule(at, Event::ApplyLate { command, stamp });
                        }
                    }
                    _ => {}
                }
                let at = if matches!(reply, Reply::Failed(_)) && fate != Fate::Unavailable {
                    // A timeout reaches the client after its deadline, and never before the
                    // store has applied or dropped the command.
                    (sent + timeout).max(done)
                } else {
                    done + self.one_way()
                };
                self.schedule(
                    at,
                    Event::Deliver {
                        client,
                        op,
                        id,
                        reply,
                        paused: false,
                    },
                );
            }
            Event::ApplyLate { command, stamp } => {
                let stamp = self.stamp_at_store(stamp);
                let reply =
                    self.store
                        .execute(&command, self.now, stamp, Fate::Normal, &mut self.rng);
                self.log(usize::MAX, || {
                    format!("store LATE stamp {stamp}: {command:?} -> {reply:?}")
                });
                self.take_object_changes();
                self.notify(&command);
            }
            Event::Deliver {
                client,
                op,
                id,
                reply,
                paused,
            } => {
                let c = &self.clients[client];
                let to_ghost = c.ghosts.iter().any(|g| g.op == op);
                if c.crashed || (c.op != op && !to_ghost) {
                    return;
                }
                if !paused {
                    if let Some(p) = self.pause(client) {
                        self.schedule(
                            self.now + p,
                            Event::Deliver {
                                client,
                                op,
                                id,
                                reply,
                                paused: true,
                            },
                        );
                        return;
                    }
                }
                self.log(client, || format!("<- {reply:?}"));
                if to_ghost {
                    return self.deliver_to_ghost(client, op, id, reply);
                }
                match &mut self.clients[client].state {
                    State::Living(_) => return self.deliver(client, id, reply),
                    State::Purging(o) => o.handle(id, reply),
                    State::Forcing { op, .. } => op.handle(id, reply),
                    State::Optimistic(o) => o.handle(id, reply),
                    _ => {}
                }
                self.step(client);
            }
        }
    }

    fn timer_at(&mut self, client: usize, at: u64) {
        let c = &mut self.clients[client];
        c.timer += 1;
        let gen = c.timer;
        self.schedule(at.max(self.now), Event::Wake { client, gen });
    }

    fn timer(&mut self, client: usize, local_deadline: Instant) {
        let at = self.clients[client].clock.sim(local_deadline.as_nanos());
        self.timer_at(client, at);
    }

    fn options(&mut self, client: usize) -> LockOptions {
        let faults = self.cfg.faults.any();
        let wait = if faults {
            Wait::Timeout(Duration::from_millis(500 + self.rng.below(5_000)))
        } else {
            Wait::Timeout(Duration::from_secs(600))
        };
        let mode = match self.cfg.modes {
            Modes::Exclusive => Mode::Exclusive,
            // Without faults, one writer (client 0) among a stream of readers: the fairness
            // check (`check::overtaken`) holds column prefix, which orders writers among
            // themselves by courtesy and aging, not FIFO, to its promise for a lone writer.
            Modes::ReadersWriters if !faults => {
                if client == 0 {
                    Mode::Exclusive
                } else {
                    Mode::Shared
                }
            }
            Modes::ReadersWriters if self.rng.below(4) == 0 => Mode::Exclusive,
            Modes::ReadersWriters => Mode::Shared,
            Modes::Semaphore(n) => Mode::Counted(n),
        };
        LockOptions {
            strategy: self.cfg.strategy,
            ttl: self.cfg.ttl,
            mode,
            paths: self.cfg.paths,
            turns: Some(self.cfg.turns),
            wait,
            retry: RetryPolicy {
                initial: Duration::from_millis(5),
                max: self.cfg.retry_max,
                max_attempts: None,
                ..RetryPolicy::default()
            },
            prefix: PrefixOptions {
                cell_ttl: self.cfg.cell_ttl,
                ..PrefixOptions::default()
            },
            created_unix_ms: self.clients[client].clock.wall_ms(self.now),
            seed: self.rng.next_u64(),
            acquisition: if self.cfg.reuse_owner {
                self.rng.next_u64() | 1
            } else {
                0
            },
            sabotage: self.cfg.sabotage,
            store_attempts: 3,
            drift_margin: self
                .cfg
                .faults
                .margin_percent
                .map(|p| self.cfg.ttl * p / 100),
            ..LockOptions::default()
        }
    }

    /// Polls `op` for client `i`: sends its command or sets its timer and returns `None`, or
    /// returns its result.
    fn pump<O: Operation>(
        &mut self,
        i: usize,
        op: &mut O,
        local: Instant,
    ) -> Option<baton_kernel::Result<O::Output>> {
        match op.poll(local) {
            Poll::Execute(id, command) => {
                self.send(i, id, command);
                None
            }
            Poll::WaitUntil(t) => {
                if t != Instant::MAX {
                    self.timer(i, t);
                }
                None
            }
            Poll::Ready(result) => Some(result),
        }
    }

    /// Client `i` is done with one acquisition: the next starts after a short while.
    fn next_round(&mut self, i: usize) {
        let c = &mut self.clients[i];
        c.left = c.left.saturating_sub(1);
        c.state = State::Idle;
        let at = self.now + self.rng.below(50 * MS);
        self.timer_at(i, at);
    }

    /// Runs client `i` until it waits for a reply or a timer.
    fn step(&mut self, i: usize) {
        loop {
            let local = Instant::from_nanos(self.clients[i].clock.local(self.now));
            let state = std::mem::replace(&mut self.clients[i].state, State::Done);
            match state {
                State::Done => return,
                State::Idle if self.clients[i].role == Role::Operator => {
                    return self.operate(i);
                }
                State::Idle => {
                    if self.clients[i].left == 0 {
                        self.clients[i].state = State::Done;
                        return;
                    }
                    // With objects, a third of the rounds increment the object without the lock.
                    if self.cfg.objects && self.rng.below(3) == 0 {
                        self.start_optimistic(i);
                        return self.drive_optimistic(i);
                    }
                    self.start_life(i);
                    return self.drive(i);
                }
                State::Living(w) => {
                    self.clients[i].state = State::Living(w);
                    return self.drive(i);
                }
                State::Optimistic(o) => {
                    self.clients[i].state = State::Optimistic(o);
                    return self.drive_optimistic(i);
                }
                State::Purging(mut op) => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Purging(op);
                        return;
                    }
                    Some(_) => self.clients[i].state = State::Idle,
                },
                State::Forcing { mut op, started } => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Forcing { op, started };
                        return;
                    }
                    Some(result) => {
                        self.log(i, || format!("forced release: {result:?}"));
                        // Whatever it sent a removal for may be gone, even if it then failed.
                        for info in op.attempted().to_vec() {
                            self.faults.forced += 1;
                            self.mark_forced(info.owner, info.value, started);
                        }
                        self.clients[i].state = State::Idle;
                    }
                },
            }
            if matches!(self.clients[i].state, State::Idle)
                && self.clients[i].role == Role::Operator
            {
                return self.operator_sleep(i);
            }
        }
    }

    /// Takes the object cell changes the store just made into the run's history.
    fn take_object_changes(&mut self) {
        let changes = self.store.take_object_changes();
        for change in changes {
            self.log(usize::MAX, || {
                format!(
                    "OBJECT {} {:?} -> {:?}{}",
                    change.row,
                    change.before,
                    change.after,
                    if change.write {
                        format!(" (decided at {:.3}ms)", change.decided as f64 / 1e6)
                    } else {
                        " (server crash)".into()
                    }
                )
            });
            self.object_changes.push(change);
        }
    }

    fn outcome(self, seed: u64) -> Outcome {
        let mut violations = check::check(&self.grants, self.cfg.paths);
        let (object_violations, object_counts) = objects::check(&ObjectRun {
            calls: &self.object_calls,
            changes: &self.object_changes,
            grants: &self.grants,
            leases: &self.leases,
        });
        violations.extend(object_violations);
        let stuck = if self.cfg.faults.any() {
            None
        } else if let Some(unfair) = check::overtaken(
            &self.grants,
            self.cfg.strategy,
            self.cfg.modes,
            self.cfg.paths,
        ) {
            Some(unfair)
        } else if self.processed > MAX_EVENTS || self.now > MAX_TIME {
            Some(format!(
                "run did not finish: {} events, t={}s",
                self.processed,
                self.now / 1_000 / MS
            ))
        } else if let Some((i, c)) = self
            .clients
            .iter()
            .enumerate()
            .find(|(_, c)| c.left > 0 || c.failed > 0)
        {
            Some(format!(
                "client {i} did not acquire every time without faults: {} left, {} failed ({:?})",
                c.left, c.failed, self.errors
            ))
        } else {
            None
        };
        let mut faults = self.faults;
        faults.clock_steps = self.store.clock_steps();
        faults.split_claims = self.store.split_claims();
        (faults.server_crashes, faults.lost_commits) = self.store.server_crashes();
        Outcome {
            seed,
            grants: self.grants.len(),
            errors: self.errors,
            gave_up: self.gave_up,
            releases: self.releases,
            faults,
            objects: object_counts,
            events: self.processed,
            end: self.now,
            violations,
            stuck,
            config: self.cfg,
        }
    }
}
