//! The deterministic simulator.
//!
//! A run is a discrete-event simulation: clients run the kernel's operations against a
//! simulated store ([`store`]) over a simulated network, each reading its own drifting clock
//! ([`clock`]). Faults are drawn from the seed: delays and reordering between clients, replies
//! lost after the command applied, commands dropped, outages, client crashes without release,
//! pauses longer than the TTL, wall-clock skew and clock-rate drift, and a three-replica store
//! with one lagging replica. The [`check`] module judges the result.

pub mod check;
pub mod clock;
pub mod store;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use baton_kernel::{
    Acquire, Command, CommandId, ErrorKind, Instant, Lease, LockName, LockOptions, Operation,
    OwnerId, Poll, Release, Renew, Reply, RetryPolicy, Sabotage, SplitMix64, Strategy, Wait,
};

use check::{GrantRecord, Violation};
use clock::ClientClock;
use store::{Fate, Replicated, SimStore, SingleCopy};

const MS: u64 = 1_000_000;

/// The faults a run injects.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Probability that a command's reply is lost after it applied.
    pub lost_reply: f64,
    /// Probability that a command never applies (the client sees a timeout).
    pub dropped: f64,
    /// Probability that the store refuses a command as unavailable.
    pub unavailable: f64,
    /// Probability that a message takes a very long time (up to twice the TTL).
    pub long_delay: f64,
    /// Probability that a client crashes at some point of the run.
    pub crash: f64,
    /// Probability, per event a client handles, that it pauses for 1 to 2 TTLs first.
    pub pause: f64,
    /// Wall-clock skew between clients, up to this many ms either way.
    pub skew_ms: i64,
    /// Clock-rate error of clients, up to this many parts per million either way.
    pub drift_ppm: i64,
    /// Use the three-replica store with a lagging replica.
    pub replicated: bool,
}

impl Faults {
    /// Whether anything can go wrong (liveness is only checked when nothing can).
    pub fn any(&self) -> bool {
        self.lost_reply > 0.0
            || self.dropped > 0.0
            || self.unavailable > 0.0
            || self.long_delay > 0.0
            || self.crash > 0.0
            || self.pause > 0.0
            || self.skew_ms > 0
            || self.drift_ppm > 0
    }
}

/// Everything a run is made of; [`Config::from_seed`] draws one.
#[derive(Clone, Debug)]
pub struct Config {
    /// The strategy under test.
    pub strategy: Strategy,
    /// A deliberately broken variant, or none.
    pub sabotage: Sabotage,
    /// How many clients (2 to 16).
    pub clients: usize,
    /// Acquisitions each client attempts.
    pub acquisitions: u32,
    /// How many lock names the clients share (1 or 2).
    pub names: usize,
    /// Lease TTL.
    pub ttl: Duration,
    /// Faults.
    pub faults: Faults,
    /// Name of the fault profile, for reports.
    pub profile: &'static str,
    /// Each client reuses one owner id (with a fresh acquisition id each time) instead of
    /// drawing a new one per acquisition.
    pub reuse_owner: bool,
}

/// The fault profiles, in the order seeds cycle through them.
pub const PROFILES: [&str; 8] = [
    "none",
    "none+replicas",
    "network",
    "crashes",
    "pauses",
    "clocks",
    "all",
    "all+replicas",
];

impl Config {
    /// The configuration of run `seed` for `strategy`: seeds cycle through [`PROFILES`].
    pub fn from_seed(strategy: Strategy, sabotage: Sabotage, seed: u64) -> Config {
        let mut rng = SplitMix64::new(seed ^ 0xC0FF_EE00_D15E_A5E5);
        let profile = PROFILES[(seed % PROFILES.len() as u64) as usize];
        let network = Faults {
            lost_reply: 0.03,
            dropped: 0.03,
            unavailable: 0.02,
            long_delay: 0.02,
            ..Faults::default()
        };
        let clocks = Faults {
            skew_ms: 5_000,
            drift_ppm: 2_000,
            ..Faults::default()
        };
        let faults = match profile {
            "none" => Faults::default(),
            "none+replicas" => Faults {
                replicated: true,
                ..Faults::default()
            },
            "network" => network,
            "crashes" => Faults {
                crash: 0.3,
                ..Faults::default()
            },
            "pauses" => Faults {
                pause: 0.01,
                ..Faults::default()
            },
            "clocks" => clocks,
            _ => Faults {
                crash: 0.2,
                pause: 0.005,
                replicated: profile == "all+replicas",
                ..Faults {
                    skew_ms: clocks.skew_ms,
                    drift_ppm: clocks.drift_ppm,
                    ..network
                }
            },
        };
        Config {
            strategy,
            sabotage,
            clients: 2 + rng.below(15) as usize,
            acquisitions: 1 + rng.below(3) as u32,
            names: 1 + (rng.below(4) == 0) as usize,
            ttl: Duration::from_millis(200 + rng.below(1_800)),
            faults,
            profile,
            reuse_owner: (seed / PROFILES.len() as u64) % 2 == 1,
        }
    }
}

/// What a run found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// The configuration.
    pub config: Config,
    /// Safety violations.
    pub violations: Vec<Violation>,
    /// Liveness failure (only checked without faults).
    pub stuck: Option<String>,
    /// Grants delivered.
    pub grants: usize,
    /// Acquisitions that ended in an error, by kind.
    pub errors: Vec<(ErrorKind, usize)>,
    /// Events processed.
    pub events: u64,
    /// Simulated time at the end (ns).
    pub end: u64,
}

impl Outcome {
    /// Whether the run passed.
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && self.stuck.is_none()
    }
}

enum Event {
    Wake {
        client: usize,
        gen: u64,
    },
    Arrive {
        client: usize,
        op: u64,
        id: CommandId,
        command: Command,
        fate: Fate,
        sent: u64,
        timeout: u64,
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
}

enum State {
    Idle,
    Acquiring(Box<Acquire>),
    Holding {
        lease: Box<Lease>,
        until: u64,
    },
    Renewing {
        op: Box<Renew>,
        lease: Box<Lease>,
        until: u64,
    },
    Releasing(Box<Release>),
    Done,
}

struct Client {
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
    grants: Vec<GrantRecord>,
    errors: Vec<(ErrorKind, usize)>,
    processed: u64,
}

const MAX_EVENTS: u64 = 3_000_000;
const MAX_TIME: u64 = 3_600 * 1_000 * MS;

/// Runs the simulation of `seed` for `strategy` (and optionally a broken variant).
pub fn run(strategy: Strategy, sabotage: Sabotage, seed: u64) -> Outcome {
    run_config(Config::from_seed(strategy, sabotage, seed), seed)
}

/// Runs `cfg` with `seed`.
pub fn run_config(cfg: Config, seed: u64) -> Outcome {
    let mut rng = SplitMix64::new(seed);
    let store: Box<dyn SimStore> = if cfg.faults.replicated {
        Box::new(Replicated::new(
            rng.below(3) as usize,
            Duration::from_millis(5 + rng.below(300)),
        ))
    } else {
        Box::<SingleCopy>::default()
    };
    let names: Vec<LockName> = (0..cfg.names)
        .filter_map(|i| LockName::new(&format!("lock-{i}")).ok())
        .collect();
    let mut clients = Vec::new();
    for i in 0..cfg.clients {
        let ppm = signed(&mut rng, cfg.faults.drift_ppm);
        let skew = signed(&mut rng, cfg.faults.skew_ms);
        clients.push(Client {
            clock: ClientClock::new(rng.below(1_000_000 * MS), ppm, skew),
            state: State::Idle,
            left: cfg.acquisitions,
            crashed: false,
            op: 0,
            timer: 0,
            grant: None,
            name: names[i % names.len()].clone(),
            failed: 0,
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
        grants: Vec::new(),
        errors: Vec::new(),
        processed: 0,
    };
    for c in 0..sim.clients.len() {
        let start = sim.rng.below(20 * MS);
        sim.schedule(start, Event::Wake { client: c, gen: 0 });
        if chance(&mut sim.rng, sim.cfg.faults.crash) {
            let at = sim.rng.below(5_000 * MS);
            sim.schedule(at, Event::Crash { client: c });
        }
    }
    sim.run();
    sim.outcome(seed)
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

impl Sim {
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

    fn pause(&mut self) -> Option<u64> {
        if chance(&mut self.rng, self.cfg.faults.pause) {
            let ttl = u64::try_from(self.cfg.ttl.as_nanos()).unwrap_or(u64::MAX);
            Some(ttl + self.rng.below(ttl))
        } else {
            None
        }
    }

    fn one_way(&mut self) -> u64 {
        let ttl = u64::try_from(self.cfg.ttl.as_nanos()).unwrap_or(u64::MAX);
        if chance(&mut self.rng, self.cfg.faults.long_delay) {
            50 * MS + self.rng.below(2 * ttl)
        } else {
            100_000 + self.rng.below(5 * MS)
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Crash { client } => {
                let c = &mut self.clients[client];
                if !c.crashed && !matches!(c.state, State::Done) {
                    c.crashed = true;
                    if let Some(g) = c.grant.take() {
                        self.grants[g].end_at(self.now);
                    }
                }
            }
            Event::Wake { client, gen } => {
                if self.clients[client].crashed || self.clients[client].timer != gen {
                    return;
                }
                if let Some(p) = self.pause() {
                    self.clients[client].timer += 1;
                    let gen = self.clients[client].timer;
                    self.schedule(self.now + p, Event::Wake { client, gen });
                    return;
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
            } => {
                let (reply, done) = self.store.execute(&command, self.now, fate, &mut self.rng);
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
                    if let Some(p) = self.pause() {
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
                let c = &mut self.clients[client];
                match &mut c.state {
                    State::Acquiring(o) => o.handle(id, reply),
                    State::Renewing { op, .. } => op.handle(id, reply),
                    State::Releasing(o) => o.handle(id, reply),
                    _ => {}
                }
                self.step(client);
            }
        }
    }

    fn send(&mut self, client: usize, id: CommandId, command: Command) {
        let f = self.cfg.faults;
        let r = self.rng.next_u64() as f64 / u64::MAX as f64;
        let fate = if r < f.unavailable {
            Fate::Unavailable
        } else if r < f.unavailable + f.dropped {
            Fate::Dropped
        } else if r < f.unavailable + f.dropped + f.lost_reply {
            Fate::LostReply
        } else {
            Fate::Normal
        };
        let op = self.clients[client].op;
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
            },
        );
    }

    fn timer(&mut self, client: usize, local_deadline: Instant) {
        let c = &mut self.clients[client];
        c.timer += 1;
        let gen = c.timer;
        let at = c.clock.sim(local_deadline.as_nanos()).max(self.now);
        self.schedule(at, Event::Wake { client, gen });
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
                max: Duration::from_millis(200),
                max_attempts: None,
                ..RetryPolicy::default()
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
            ..LockOptions::default()
        }
    }

    fn hold_time(&mut self) -> u64 {
        let ttl = u64::try_from(self.cfg.ttl.as_nanos()).unwrap_or(u64::MAX);
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

    /// Runs client `i` until it waits for a reply or a timer.
    fn step(&mut self, i: usize) {
        loop {
            let local = Instant::from_nanos(self.clients[i].clock.local(self.now));
            let state = std::mem::replace(&mut self.clients[i].state, State::Done);
            match state {
                State::Done => return,
                State::Idle => {
                    if self.clients[i].left == 0 {
                        return;
                    }
                    let opts = self.options(i);
                    // Half the runs reuse one owner id per client, as the Rust API does (with a
                    // fresh acquisition id); the others draw a fresh owner id every time.
                    let nonce = if self.cfg.reuse_owner {
                        0x5eed_0000 + i as u64
                    } else {
                        self.rng.next_u64()
                    };
                    let owner = match OwnerId::new(&format!("h{i}"), 1000 + i as u32, nonce) {
                        Ok(o) => o,
                        Err(e) => panic!("simulator owner id: {e}"),
                    };
                    match Acquire::new(self.clients[i].name.clone(), owner, opts) {
                        Ok(op) => {
                            self.clients[i].op += 1;
                            self.clients[i].state = State::Acquiring(Box::new(op));
                        }
                        Err(e) => panic!("simulator options rejected: {e}"),
                    }
                }
                State::Acquiring(mut op) => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Acquiring(op);
                        return;
                    }
                    Some(Ok(grant)) => {
                        let c = &self.clients[i];
                        let end = c.clock.sim(grant.lease.deadline().as_nanos());
                        self.grants.push(GrantRecord {
                            client: i,
                            name: grant.lease.name().as_str().to_string(),
                            token: grant.lease.token(),
                            at: self.now,
                            belief: vec![(self.now, end)],
                        });
                        self.clients[i].grant = Some(self.grants.len() - 1);
                        let until = self.now + self.hold_time();
                        self.clients[i].state = State::Holding {
                            lease: Box::new(grant.lease),
                            until,
                        };
                    }
                    Some(Err(e)) => {
                        self.note_error(e.kind());
                        let c = &mut self.clients[i];
                        c.failed += 1;
                        c.left -= 1;
                        c.state = State::Idle;
                        c.timer += 1;
                        let gen = c.timer;
                        let at = self.now + self.rng.below(50 * MS);
                        return self.schedule(at, Event::Wake { client: i, gen });
                    }
                },
                State::Holding { lease, until } => {
                    let validity = lease.ttl().saturating_sub(lease.options().drift_margin());
                    let renew_at = lease.deadline().saturating_sub(validity * 2 / 3);
                    if self.now >= until || !lease.is_valid_at(local) {
                        if let Some(g) = self.clients[i].grant.take() {
                            self.grants[g].end_at(self.now);
                        }
                        self.clients[i].op += 1;
                        self.clients[i].state = State::Releasing(Box::new(Release::new(&lease)));
                    } else if local >= renew_at {
                        self.clients[i].op += 1;
                        self.clients[i].state = State::Renewing {
                            op: Box::new(Renew::new(&lease)),
                            lease,
                            until,
                        };
                    } else {
                        let c = &mut self.clients[i];
                        c.timer += 1;
                        let gen = c.timer;
                        let at = c.clock.sim(renew_at.as_nanos()).min(until).max(self.now);
                        c.state = State::Holding { lease, until };
                        return self.schedule(at, Event::Wake { client: i, gen });
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
                        if let Some(g) = self.clients[i].grant {
                            self.grants[g].belief.push((self.now, end));
                        }
                        self.clients[i].state = State::Holding {
                            lease: Box::new(renewed),
                            until,
                        };
                    }
                    Some(Err(_)) => {
                        // Lost: the belief already ends at the old deadline. Clean up.
                        if let Some(g) = self.clients[i].grant.take() {
                            self.grants[g].end_at(self.now);
                        }
                        self.clients[i].op += 1;
                        self.clients[i].state = State::Releasing(Box::new(Release::new(&lease)));
                    }
                },
                State::Releasing(mut op) => match self.pump(i, &mut *op, local) {
                    None => {
                        self.clients[i].state = State::Releasing(op);
                        return;
                    }
                    Some(_) => {
                        let c = &mut self.clients[i];
                        c.left -= 1;
                        c.state = State::Idle;
                        c.timer += 1;
                        let gen = c.timer;
                        let at = self.now + self.rng.below(50 * MS);
                        return self.schedule(at, Event::Wake { client: i, gen });
                    }
                },
            }
        }
    }

    fn note_error(&mut self, kind: ErrorKind) {
        match self.errors.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.errors.push((kind, 1)),
        }
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
        Outcome {
            seed,
            grants: self.grants.len(),
            errors: self.errors,
            events: self.processed,
            end: self.now,
            violations,
            stuck,
            config: self.cfg,
        }
    }
}

/// The command that replays one run.
pub fn replay_command(strategy: Strategy, sabotage: Sabotage, seed: u64) -> String {
    let mut cmd = format!(
        "cargo run --release -p baton-tests --bin simulate -- --strategy {strategy} --seed {seed}"
    );
    if sabotage != Sabotage::None {
        cmd.push_str(&format!(" --sabotage {sabotage:?}"));
    }
    cmd.push_str(" --verbose");
    cmd
}

/// Summary of many runs.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Runs.
    pub runs: u64,
    /// Runs that failed (safety or liveness).
    pub failed: Vec<Outcome>,
    /// Grants delivered in all runs.
    pub grants: u64,
    /// Events processed in all runs.
    pub events: u64,
}

/// Runs seeds `from..to` on `threads` threads, stopping early after `stop_after` failures.
pub fn run_many(
    strategy: Strategy,
    sabotage: Sabotage,
    from: u64,
    to: u64,
    threads: usize,
    stop_after: usize,
) -> Tally {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicU64::new(from);
    let failures = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut local = Tally::default();
                loop {
                    if failures.load(Ordering::Relaxed) >= stop_after {
                        break;
                    }
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= to {
                        break;
                    }
                    let out = run(strategy, sabotage, seed);
                    local.runs += 1;
                    local.grants += out.grants as u64;
                    local.events += out.events;
                    if !out.ok() {
                        failures.fetch_add(1, Ordering::Relaxed);
                        local.failed.push(out);
                    }
                }
                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                t.runs += local.runs;
                t.grants += local.grants;
                t.events += local.events;
                t.failed.extend(local.failed);
            });
        }
    });
    let mut t = tally.into_inner().unwrap_or_else(|p| p.into_inner());
    t.failed.sort_by_key(|o| o.seed);
    t
}
