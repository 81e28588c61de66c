//! One simulated run: the event queue, the clients, the operator, and the network between them
//! and the store.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use baton_kernel::{
    Acquire, Command, CommandId, ErrorKind, FenceHint, ForceRelease, Instant, Lease, LockName,
    LockOptions, Operation, OwnerId, Poll, PrefixOptions, Purge, Release, Renew, Reply,
    RetryPolicy, Sabotage, SplitMix64, Wait,
};

mod network;
mod operator;

use super::check::{self, GrantRecord};
use super::clock::ClientClock;
use super::store::{Fate, Replicated, SimStore, SingleCopy};
use super::{Config, FaultCounts, Outcome};

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
    Acquiring(Box<Acquire>),
    /// Sending a cancelled acquisition's cleanup; the next reply ends it.
    Cleaning,
    Holding {
        lease: Box<Lease>,
        until: u64,
    },
    Renewing {
        op: Box<Renew>,
        lease: Box<Lease>,
        until: u64,
    },
    Releasing {
        op: Box<Release>,
        grant: Option<usize>,
    },
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
    /// Index of the current grant in the log.
    grant: Option<usize>,
    name: LockName,
    failed: u32,
    /// The fencing counter as the last lease left it, for the next acquisition.
    hint: Option<FenceHint>,
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
    store: Box<dyn SimStore>,
    clients: Vec<Client>,
    names: Vec<LockName>,
    grants: Vec<GrantRecord>,
    owners: Vec<GrantOwner>,
    /// Cells a forced release removed, and when it started: a grant resting on one of them that
    /// is delivered later is broken too (the operator removed its cell mid-grant).
    broken: Vec<(GrantOwner, u64)>,
    errors: Vec<(ErrorKind, usize)>,
    releases: Vec<(Option<ErrorKind>, usize)>,
    faults: FaultCounts,
    processed: u64,
    /// Event log, when tracing.
    trace: Option<Vec<String>>,
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
    let names: Vec<LockName> = (0..cfg.names)
        .filter_map(|i| LockName::new(&format!("lock-{i}")).ok())
        .collect();
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
                cfg.acquisitions
            } else {
                0
            },
            crashed: false,
            op: 0,
            timer: 0,
            grant: None,
            name: names[i % names.len()].clone(),
            failed: 0,
            hint: None,
        });
    }
    let mut sim = Sim {
        cfg,
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        events: Vec::new(),
        rng,
        store,
        clients,
        names,
        grants: Vec::new(),
        owners: Vec::new(),
        broken: Vec::new(),
        errors: Vec::new(),
        releases: Vec::new(),
        faults: FaultCounts::default(),
        processed: 0,
        trace: traced.then(Vec::new),
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
                    if let Some(g) = c.grant.take() {
                        self.grants[g].end_at(self.now);
                    }
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
                if c.crashed || !matches!(c.state, State::Acquiring(_)) {
                    return;
                }
                if let Some(p) = self.pause(client) {
                    self.schedule(self.now + p, Event::Notice { client });
                    return;
                }
                self.log(client, || "NOTICE".into());
                if let State::Acquiring(o) = &mut self.clients[client].state {
                    o.wake();
                }
                self.step(client);
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
                self.notify(Some(client), &command);
                let ttl = self.ttl();
                match fate {
                    Fate::Late => {
                        let at = sent + timeout + self.rng.below(ttl);
                        self.schedule(at.max(self.now), Event::ApplyLate { command, stamp });
                    }
                    Fate::Duplicated => {
                        let at = self.now + self.rng.below(ttl);
                        self.schedule(at, Event::ApplyLate { command, stamp });
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
                self.notify(None, &command);
            }
            Event::Deliver {
                client,
                op,
                id,
                reply,
                paused,
            } => {
                if self.clients[client].crashed || self.clients[client].op != op {
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
                let c = &mut self.clients[client];
                match &mut c.state {
                    State::Acquiring(o) => o.handle(id, reply),
                    State::Renewing { op, .. } => op.handle(id, reply),
                    State::Releasing { op, .. } => op.handle(id, reply),
                    State::Purging(o) => o.handle(id, reply),
                    State::Forcing { op, .. } => op.handle(id, reply),
                    State::Cleaning => {
                        c.state = State::Idle;
                        c.left = c.left.saturating_sub(1);
                    }
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
        LockOptions {
            strategy: self.cfg.strategy,
            ttl: self.cfg.ttl,
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

    fn hold_time(&mut self) -> u64 {
        let ttl = self.ttl();
        match self.rng.below(10) {
            0..=6 => self.rng.below(50 * MS),
            7 | 8 => 50 * MS + self.rng.below(ttl),
            _ => ttl + self.rng.below(2 * ttl),
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

    fn start_acquisition(&mut self, i: usize) {
        let opts = self.options(i);
        // Half the runs reuse one owner id per client, as the Rust API does (with a fresh
        // acquisition id); the others draw a fresh owner id every time.
        let nonce = if self.cfg.reuse_owner {
            0x5eed_0000 + i as u64
        } else {
            self.rng.next_u64()
        };
        let owner = match OwnerId::new(&format!("h{i}"), 1000 + i as u32, nonce) {
            Ok(o) => o,
            Err(e) => panic!("simulator owner id: {e}"),
        };
        let hint = self.clients[i].hint.clone();
        let op = match Acquire::new(self.clients[i].name.clone(), owner, opts) {
            Ok(op) => op.with_fence_hint(hint),
            Err(e) => panic!("simulator options rejected: {e}"),
        };
        self.clients[i].op += 1;
        if chance(&mut self.rng, self.cfg.faults.cancel) {
            let at = self.now + self.rng.below(self.ttl() * 3 / 2);
            let op = self.clients[i].op;
            self.schedule(at, Event::Cancel { client: i, op });
        }
        self.clients[i].state = State::Acquiring(Box::new(op));
    }

    /// A caller gives up on an acquisition midway: as the Rust API's dropped `lock()` future,
    /// it sends the acquisition's cleanup command, if any, and moves on when it is answered.
    fn cancel(&mut self, i: usize, op: u64) {
        let c = &self.clients[i];
        if c.crashed || c.op != op {
            return;
        }
        let State::Acquiring(acquire) = &c.state else {
            return;
        };
        self.faults.cancelled += 1;
        let cleanup = acquire.cleanup();
        tally(&mut self.errors, ErrorKind::TimedOut);
        match cleanup {
            Some(command) => {
                let c = &mut self.clients[i];
                c.op += 1;
                c.timer += 1;
                c.state = State::Cleaning;
                self.send(i, CommandId(0), command);
            }
            None => self.next_round(i),
        }
    }

    /// Runs client `i` until it waits for a reply or a timer.
    fn step(&mut self, i: usize) {
        loop {
            let local = Instant::from_nanos(self.clients[i].clock.local(self.now));
            let state = std::mem::replace(&mut self.clients[i].state, State::Done);
            match state {
                State::Done => return,
                State::Cleaning => {
                    self.clients[i].state = State::Cleaning;
                    return;
                }
                State::Idle if self.clients[i].role == Role::Operator => {
                    return self.operate(i);
                }
                State::Idle => {
                    if self.clients[i].left == 0 {
                        self.clients[i].state = State::Done;
                        return;
                    }
                    self.start_acquisition(i);
                }
                State::Acquiring(mut op) => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Acquiring(op);
                        return;
                    }
                    Some(Ok(grant)) => {
                        let lease = grant.lease;
                        let end = self.clients[i].clock.sim(lease.deadline().as_nanos());
                        self.log(i, || {
                            format!(
                                "GRANTED token {} believes until {:.3}ms",
                                lease.token(),
                                end as f64 / 1e6
                            )
                        });
                        self.grants.push(GrantRecord {
                            client: i,
                            name: lease.name().as_str().to_string(),
                            token: lease.token(),
                            at: self.now,
                            belief: vec![(self.now, end)],
                            forced_at: None,
                            released: None,
                        });
                        let who = GrantOwner {
                            owner: lease.owner().key(),
                            value: lease.value().to_string(),
                        };
                        if let Some((_, at)) = self.broken.iter().find(|(b, _)| *b == who) {
                            let g = self.grants.len() - 1;
                            self.grants[g].forced_at = Some(*at);
                        }
                        self.owners.push(who);
                        let c = &mut self.clients[i];
                        c.grant = Some(self.grants.len() - 1);
                        c.hint = Some(lease.fence_hint());
                        let until = self.now + self.hold_time();
                        self.clients[i].state = State::Holding {
                            lease: Box::new(lease),
                            until,
                        };
                    }
                    Some(Err(e)) => {
                        self.log(i, || format!("acquire failed: {e}"));
                        tally(&mut self.errors, e.kind());
                        self.clients[i].failed += 1;
                        return self.next_round(i);
                    }
                },
                State::Holding { lease, until } => {
                    let valid = lease.is_valid_at(local);
                    if valid {
                        // The client believes until its own clock reads the deadline (which a
                        // clock stopped in a suspension puts later).
                        let end = self.clients[i].clock.sim(lease.deadline().as_nanos());
                        if let Some(g) = self.clients[i].grant {
                            self.grants[g].belief.push((self.now, end));
                        }
                    }
                    let renew_at = lease.renew_at();
                    if self.now >= until || !valid {
                        self.start_release(i, &lease);
                    } else if local >= renew_at {
                        self.clients[i].op += 1;
                        self.clients[i].state = State::Renewing {
                            op: Box::new(Renew::new(&lease)),
                            lease,
                            until,
                        };
                    } else {
                        let at = self.clients[i].clock.sim(renew_at.as_nanos()).min(until);
                        self.clients[i].state = State::Holding { lease, until };
                        return self.timer_at(i, at);
                    }
                }
                State::Renewing {
                    mut op,
                    lease,
                    until,
                } => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Renewing { op, lease, until };
                        return;
                    }
                    Some(Ok(renewed)) => {
                        let end = self.clients[i].clock.sim(renewed.deadline().as_nanos());
                        self.log(i, || {
                            format!("renewed, believes until {:.3}ms", end as f64 / 1e6)
                        });
                        if let Some(g) = self.clients[i].grant {
                            self.grants[g].belief.push((self.now, end));
                        }
                        self.clients[i].state = State::Holding {
                            lease: Box::new(renewed),
                            until,
                        };
                    }
                    Some(Err(e)) if e.kind() != ErrorKind::Lost => {
                        self.log(i, || format!("renewal failed: {e}"));
                        // The keep-alive tries again while the lease is valid.
                        self.clients[i].state = State::Holding { lease, until };
                        let at = self.now + 5 * MS + self.rng.below(20 * MS);
                        return self.timer_at(i, at);
                    }
                    Some(Err(e)) => {
                        self.log(i, || format!("renewal: {e}"));
                        // Lost: the belief already ends at the old deadline. Clean up.
                        self.start_release(i, &lease);
                    }
                },
                State::Releasing { mut op, grant } => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Releasing { op, grant };
                        return;
                    }
                    Some(result) => {
                        self.log(i, || format!("released: {result:?}"));
                        let kind = result.as_ref().err().map(|e| e.kind());
                        tally(&mut self.releases, kind);
                        if let Some(g) = grant {
                            self.grants[g].released = Some(result.map_err(|e| e.kind()));
                        }
                        return self.next_round(i);
                    }
                },
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

    /// Client `i` stops believing in `lease` now and releases it.
    fn start_release(&mut self, i: usize, lease: &Lease) {
        let grant = self.clients[i].grant.take();
        if let Some(g) = grant {
            self.grants[g].end_at(self.now);
        }
        self.clients[i].op += 1;
        self.clients[i].state = State::Releasing {
            op: Box::new(Release::new(lease)),
            grant,
        };
    }

    fn outcome(self, seed: u64) -> Outcome {
        let violations = check::check(&self.grants);
        let stuck = if self.cfg.faults.any() {
            None
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
            releases: self.releases,
            faults,
            events: self.processed,
            end: self.now,
            violations,
            stuck,
            config: self.cfg,
        }
    }
}
