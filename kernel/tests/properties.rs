//! Property test: random interleavings of 2 to 4 clients locking one name over a
//! [`MemoryTable`](baton_kernel::MemoryTable), with random time advances, slow replies, lost
//! replies, commands that reach the store late, unavailable stores, early wake-ups, renewals and holders that overstay their lease.
//!
//! Checked after every step:
//! - mutual exclusion: at most one client holds a lease that is valid at `now` (a holder stops
//!   counting once it sends its release, or once its renewal says `Lost`);
//! - fencing: every grant's token is larger than every token granted before;
//! - a grant arrives valid (its deadline is after the moment it is delivered).
//!
//! And at the end: once every cell has expired, a fresh client gets the lock at once.
//!
//! Randomness is the kernel's own `SplitMix64`; a failure names its seed, and
//! `PROPERTY_SEED=<seed>` replays that one seed alone. The same checker, run against the
//! deliberately broken variants (`Sabotage`), must find a violation: that shows it has teeth.

use crate::support;

use std::time::Duration;

use baton_kernel::{
    Acquire, Error, ErrorKind, Instant, Lease, LockOptions, Operation, OwnerId, Release, Renew,
    RetryPolicy, Sabotage, SplitMix64, Strategy, Wait,
};
use support::{any, name, Actor, Fault, Harness, Render, Step, NAME};

const WHO: [&str; 4] = ["c0", "c1", "c2", "c3"];

struct Rng(SplitMix64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }
    /// True with probability `percent`%.
    fn chance(&mut self, percent: u64) -> bool {
        self.0.below(100) < percent
    }
    /// A duration in `[0, max)`, to the microsecond.
    fn upto(&mut self, max: Duration) -> Duration {
        let us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX).max(1);
        Duration::from_micros(self.0.below(us))
    }
}

enum Phase {
    Idle {
        at: Instant,
    },
    Acquiring(Box<Actor<Acquire>>),
    Holding {
        lease: Lease,
        release_at: Instant,
        renew_at: Instant,
    },
    Renewing {
        actor: Actor<Renew>,
        lease: Lease,
        release_at: Instant,
    },
    Releasing(Actor<Release>),
}

struct Client {
    who: &'static str,
    phase: Phase,
}

/// One world: its parameters and what happened.
struct World {
    seed: u64,
    strategy: Strategy,
    ttl: Duration,
    cell_ttl: Option<Duration>,
    sabotage: Sabotage,
    rng: Rng,
    h: Harness,
    clients: Vec<Client>,
    nonce: u64,
    last_token: u64,
    grants: u32,
    log: Vec<String>,
}

/// Runs one operation by one action: deliver a held reply, or poll (sending a command whose
/// reply is either delivered at once or held for later). Returns its result once it is done.
fn poke<O>(
    h: &mut Harness,
    rng: &mut Rng,
    actor: &mut Actor<O>,
    may_wake: bool,
) -> Option<Result<O::Output, Error>>
where
    O: Operation,
    O::Output: Render,
{
    if actor.has_unapplied() && rng.chance(50) {
        // The store applies it now; the reply is still on its way back.
        h.apply(actor);
        return None;
    }
    if h.deliver(actor) {
        return None;
    }
    if let Some(t) = actor.waiting {
        if h.now() < t {
            if !(may_wake && rng.chance(10)) {
                return None;
            }
            actor.op.wake();
        }
    }
    // Applied and answered at once, applied with a slow reply, or slow to reach the store.
    let step = match rng.below(100) {
        0..55 => h.step(actor),
        55..80 => h.send(actor),
        _ => h.send_unapplied(actor),
    };
    match step {
        Step::Done => actor.result.clone(),
        _ => None,
    }
}

/// When the actor next needs attention: now if a reply is held, its wait otherwise.
fn due<O: Operation>(actor: &Actor<O>, now: Instant) -> Instant {
    if actor.has_pending() {
        return now;
    }
    actor.waiting.unwrap_or(now)
}

impl World {
    fn new(seed: u64, sabotage: Sabotage, strategy: Option<Strategy>) -> World {
        let mut rng = Rng(SplitMix64::new(seed));
        let strategy = strategy.unwrap_or(Strategy::ALL[(seed % 3) as usize]);
        let ttl = Duration::from_millis([20, 50, 100][rng.below(3) as usize]);
        let cell_ttl = (strategy == Strategy::ColumnPrefix && rng.chance(50)).then_some(ttl * 2);
        let n = 2 + rng.below(3) as usize;
        let clients = WHO[..n]
            .iter()
            .map(|who| Client {
                who,
                phase: Phase::Idle { at: Instant::ZERO },
            })
            .collect();
        let mut h = Harness::new();
        h.record = false;
        World {
            seed,
            strategy,
            ttl,
            cell_ttl,
            sabotage,
            rng,
            h,
            clients,
            nonce: 0,
            last_token: 0,
            grants: 0,
            log: Vec::new(),
        }
    }

    fn options(&mut self) -> LockOptions {
        let wait = if self.rng.chance(30) {
            Wait::TryOnce
        } else {
            Wait::Timeout(self.rng.upto(self.ttl * 4))
        };
        let mut o = LockOptions {
            strategy: self.strategy,
            ttl: self.ttl,
            wait,
            retry: RetryPolicy {
                initial: Duration::from_millis(1),
                max: self.ttl / 4,
                max_attempts: None,
                ..RetryPolicy::default()
            },
            created_unix_ms: self.h.now().as_nanos() / 1_000_000,
            seed: self.rng.0.next_u64(),
            sabotage: self.sabotage,
            ..LockOptions::default()
        };
        o.prefix.cell_ttl = self.cell_ttl;
        o
    }

    fn note(&mut self, who: &str, what: String) {
        let line = format!("{:?} {who}: {what}", self.h.now());
        self.log.push(line);
    }

    fn fail(&self, why: String) -> String {
        let tail = self.log.len().saturating_sub(40);
        format!(
            "seed {} ({}, ttl {:?}, cell ttl {:?}, {} clients, {:?}): {why}\nlast events:\n{}",
            self.seed,
            self.strategy,
            self.ttl,
            self.cell_ttl,
            self.clients.len(),
            self.sabotage,
            self.log[tail..].join("\n")
        )
    }

    /// The next instant some client needs attention.
    fn next_due(&self) -> Instant {
        let now = self.h.now();
        self.clients
            .iter()
            .map(|c| match &c.phase {
                Phase::Idle { at } => *at,
                Phase::Acquiring(a) => due(a, now),
                Phase::Holding {
                    release_at,
                    renew_at,
                    ..
                } => (*release_at).min(*renew_at),
                Phase::Renewing { actor, .. } => due(actor, now),
                Phase::Releasing(a) => due(a, now),
            })
            .min()
            .unwrap_or(now)
    }

    /// Moves client `i` one action forward.
    fn act(&mut self, i: usize) -> Result<(), String> {
        let now = self.h.now();
        let who = self.clients[i].who;
        if self.rng.chance(4) {
            self.h.once(who, any, Fault::LoseReply);
        } else if self.rng.chance(2) {
            self.h.once(who, any, Fault::Unavailable);
        }
        let phase = std::mem::replace(&mut self.clients[i].phase, Phase::Idle { at: now });
        let next = match phase {
            Phase::Idle { at } if now < at => Phase::Idle { at },
            Phase::Idle { .. } => {
                self.nonce += 1;
                let owner = OwnerId::new(who, 1, self.nonce).expect("valid host");
                let opts = self.options();
                let op = Acquire::new(name(NAME), owner, opts).expect("valid options");
                self.note(who, "acquire".into());
                Phase::Acquiring(Box::new(Actor::new(who, op)))
            }
            Phase::Acquiring(mut actor) => {
                match poke(&mut self.h, &mut self.rng, &mut actor, true) {
                    None => Phase::Acquiring(actor),
                    Some(Ok(grant)) => {
                        let lease = grant.lease;
                        self.note(who, format!("granted {}", lease.render()));
                        if lease.token() <= self.last_token {
                            return Err(self.fail(format!(
                                "{who} got token {} after token {} was granted",
                                lease.token(),
                                self.last_token
                            )));
                        }
                        if !lease.is_valid_at(now) {
                            return Err(self.fail(format!(
                                "{who} was granted a lease already over: {}",
                                lease.render()
                            )));
                        }
                        self.last_token = lease.token();
                        self.grants += 1;
                        // Hold for up to 1.5 TTL: some holders overstay.
                        let release_at = now.saturating_add(self.rng.upto(self.ttl * 3 / 2));
                        let renew_at = now.saturating_add(self.rng.upto(self.ttl));
                        Phase::Holding {
                            lease,
                            release_at,
                            renew_at,
                        }
                    }
                    Some(Err(e)) => {
                        self.note(who, format!("acquire failed: {e}"));
                        Phase::Idle {
                            at: now.saturating_add(self.rng.upto(self.ttl)),
                        }
                    }
                }
            }
            Phase::Holding {
                lease,
                release_at,
                renew_at,
            } => {
                if now >= release_at {
                    self.note(who, "release".into());
                    Phase::Releasing(Actor::new(who, Release::new(&lease)))
                } else if now >= renew_at {
                    self.note(who, "renew".into());
                    Phase::Renewing {
                        actor: Actor::new(who, Renew::new(&lease)),
                        lease,
                        release_at,
                    }
                } else {
                    Phase::Holding {
                        lease,
                        release_at,
                        renew_at,
                    }
                }
            }
            Phase::Renewing {
                mut actor,
                lease,
                release_at,
            } => match poke(&mut self.h, &mut self.rng, &mut actor, false) {
                None => Phase::Renewing {
                    actor,
                    lease,
                    release_at,
                },
                Some(Ok(renewed)) => {
                    self.note(who, format!("renewed {}", renewed.render()));
                    let renew_at = now.saturating_add(self.rng.upto(self.ttl));
                    Phase::Holding {
                        lease: renewed,
                        release_at,
                        renew_at,
                    }
                }
                Some(Err(e)) if e.kind() == ErrorKind::Lost => {
                    self.note(who, format!("renewal: {e}"));
                    Phase::Idle { at: now }
                }
                Some(Err(e)) => {
                    // The lease stands until its current deadline.
                    self.note(who, format!("renewal failed: {e}"));
                    Phase::Holding {
                        lease,
                        release_at,
                        renew_at: now.saturating_add(self.rng.upto(self.ttl)),
                    }
                }
            },
            Phase::Releasing(mut actor) => {
                match poke(&mut self.h, &mut self.rng, &mut actor, false) {
                    None => Phase::Releasing(actor),
                    Some(result) => {
                        let result = result.map_or_else(|e| e.to_string(), |()| "ok".into());
                        self.note(who, format!("released: {result}"));
                        Phase::Idle {
                            at: now.saturating_add(self.rng.upto(self.ttl)),
                        }
                    }
                }
            }
        };
        self.clients[i].phase = next;
        self.check()
    }

    /// Mutual exclusion among the leases their holders may act on now.
    fn check(&self) -> Result<(), String> {
        let now = self.h.now();
        let holders: Vec<String> = self
            .clients
            .iter()
            .filter_map(|c| match &c.phase {
                Phase::Holding { lease, .. } | Phase::Renewing { lease, .. }
                    if lease.is_valid_at(now) =>
                {
                    Some(format!("{} ({})", c.who, lease.render()))
                }
                _ => None,
            })
            .collect();
        if holders.len() > 1 {
            return Err(self.fail(format!(
                "two valid leases at {now:?}: {}",
                holders.join(", ")
            )));
        }
        Ok(())
    }

    fn run(&mut self, steps: u32) -> Result<(), String> {
        for _ in 0..steps {
            if self.rng.chance(30) {
                let d = self.rng.upto(self.ttl / 5);
                self.h.advance(d);
            }
            let due = self.next_due();
            if due > self.h.now() {
                self.h.advance_to(due);
            }
            let i = self.rng.below(self.clients.len() as u64) as usize;
            self.act(i)?;
        }
        // Liveness: once every cell has expired, a newcomer gets the lock at once.
        self.h.heal();
        self.h
            .advance(self.cell_ttl.unwrap_or(self.ttl) * 3 + Duration::from_millis(1));
        let mut o = self.options();
        o.wait = Wait::TryOnce;
        o.sabotage = Sabotage::None;
        let op = Acquire::new(name(NAME), OwnerId::new("late", 1, 0).expect("valid"), o)
            .expect("valid options");
        let mut actor = Actor::new("late", op);
        let grant = self
            .h
            .finish(&mut actor)
            .map_err(|e| self.fail(format!("a newcomer could not get the idle lock: {e}")))?;
        if grant.lease.token() <= self.last_token {
            return Err(self.fail(format!(
                "the newcomer's token {} is not above {}",
                grant.lease.token(),
                self.last_token
            )));
        }
        Ok(())
    }
}

const STEPS: u32 = 400;

fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    (0..600).collect()
}

#[test]
fn no_two_valid_leases_and_tokens_increase() {
    let mut grants = 0;
    for seed in seeds() {
        let mut world = World::new(seed, Sabotage::None, None);
        if let Err(e) = world.run(STEPS) {
            panic!("{e}");
        }
        grants += world.grants;
    }
    // The schedules must actually grant locks, or the test proves nothing.
    assert!(grants > 4000, "only {grants} grants in all");
}

/// The checker finds each deliberately broken variant within a few seeds.
#[test]
fn the_checker_catches_sabotaged_variants() {
    let cases = [
        (Sabotage::BakeryIgnoresEntering, Strategy::Bakery),
        (Sabotage::UniqueBlindDelete, Strategy::UniqueInsert),
        (Sabotage::NoContinuity, Strategy::UniqueInsert),
        (Sabotage::NoContinuity, Strategy::ColumnPrefix),
        (Sabotage::NoContinuity, Strategy::Bakery),
    ];
    for (sabotage, strategy) in cases {
        let caught = (0..300).find(|&seed| {
            World::new(seed, sabotage, Some(strategy))
                .run(STEPS)
                .is_err()
        });
        assert!(
            caught.is_some(),
            "{sabotage:?} on {strategy} went unnoticed for 300 seeds"
        );
    }
}

#[test]
/// Not a check: prints how much the schedules exercise (grants, commands, failures) and which
/// seeds catch each sabotaged variant, for tuning the generator.
#[ignore = "not a check: statistics for tuning the schedules (run with --nocapture)"]
fn stats() {
    for strategy in Strategy::ALL {
        let (mut grants, mut lost, mut fails, mut cmds) = (0, 0, 0, 0);
        for seed in 0..150 {
            let mut w = World::new(seed, Sabotage::None, Some(strategy));
            w.run(STEPS).expect("ok");
            grants += w.grants;
            cmds += w.h.commands;
            lost += w.log.iter().filter(|l| l.contains("lost")).count();
            fails += w.log.iter().filter(|l| l.contains("failed")).count();
        }
        println!("{strategy}: grants {grants} commands {cmds} lost {lost} failed {fails}");
    }
    for (sabotage, strategy) in [
        (Sabotage::BakeryIgnoresEntering, Strategy::Bakery),
        (Sabotage::UniqueBlindDelete, Strategy::UniqueInsert),
        (Sabotage::NoContinuity, Strategy::UniqueInsert),
        (Sabotage::NoContinuity, Strategy::ColumnPrefix),
        (Sabotage::NoContinuity, Strategy::Bakery),
    ] {
        let caught: Vec<u64> = (0..300)
            .filter(|&seed| {
                World::new(seed, sabotage, Some(strategy))
                    .run(STEPS)
                    .is_err()
            })
            .collect();
        println!(
            "{sabotage:?} {strategy}: caught by {} seeds, first {:?}",
            caught.len(),
            caught.first()
        );
        if let Some(&s) = caught.first() {
            let e = World::new(s, sabotage, Some(strategy))
                .run(STEPS)
                .expect_err("x");
            println!("{}", e.lines().next().unwrap_or(""));
        }
    }
}
