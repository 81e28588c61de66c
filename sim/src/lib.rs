//! The deterministic simulator: the `simulate` command and the `simulator` test share it.
//!
//! It runs many clients against a simulated store on a simulated clock, with injected faults,
//! and checks every run for its safety properties and one liveness property:
//! - no two clients ever believe they hold the same lock at the same instant (each client's
//!   belief ends at its lease deadline, as measured by its own drifting clock);
//! - fencing tokens strictly increase in the order grants are delivered;
//! - objects (on half the seeds): versions strictly increase, no update is lost, every locked
//!   write applied while its writer's lease held the lock in the store and nobody else believed
//!   it held it, and every acknowledged increment applied exactly once ([`objects`]);
//! - with no faults, every client acquires every time it asks.
//!
//! Every run is a pure function of its seed: a failure prints the command that replays it.
//!
//! A run is a discrete-event simulation (the `world` module): each worker lives one lock at a
//! time as every host does, as a [`LockLife`](baton_kernel::LockLife) driven by the host loop
//! of the Rust API (one command at a time, its timers kept while a command is on its way,
//! change notices by the kernel's [`ChangeWatch`](baton_kernel::host::ChangeWatch), cancellation
//! with the command on its way kept or forgotten), against a simulated store ([`store`]) over a
//! simulated network, reading its own drifting clock ([`clock`]). So the renewal schedule and
//! its retries, the loss at the deadline while a renewal hangs, releases, releases in the
//! holder's own transaction (committed or rolled back) and the cleanup of a cancelled
//! acquisition all run as they run in every language; fence hints carry from one lease to the
//! next acquisition. Holders keep their locks for a while (sometimes past the TTL), with
//! keep-alive or without, and sometimes ask for a renewal. An operator runs purges and forced
//! releases among them. Faults are drawn from the seed; the [`check`] module judges what each
//! holder was told: the intervals its life reported the lease held. On half the seeds the
//! workers also keep counters in their names' objects, locked and optimistic, and the
//! [`objects`] module judges every object write the store applied.
//!
//! The fault model, and the real fault each stands for:
//!
//! | fault | real cause |
//! | --- | --- |
//! | delays up to twice the TTL, reordering | congested networks, GC pauses of a coordinator |
//! | reply lost after the command applied | a connection reset after the server committed |
//! | command dropped | a packet lost before the server, a write reaching less than a quorum |
//! | `Unavailable` | no connection, not enough live replicas |
//! | command applied after the client's timeout, up to one TTL later, after its read-back | a statement queued in PgBouncer or ProxySQL, bytes left in a closed socket's buffer, a request in a Cassandra coordinator's queue |
//! | command applied twice | a retransmission, a driver's speculative retry |
//! | Paxos proposal accepted by one replica, answered `Timeout` or `Unavailable`, completed or superseded by the next round | Cassandra's lightweight transactions when replicas fail between rounds |
//! | client crash without release | `kill -9`, a host lost |
//! | SQL server crash losing the commits since the last one that waited for the disk (releases, backing-off deletes), all or all but a first part | PostgreSQL's `synchronous_commit = off` commits not yet flushed by the WAL writer when the server dies |
//! | pause of 1 to 2 TTLs | a stop-the-world GC, a swapped-out process |
//! | suspension of 1 to 3 TTLs | a laptop or VM suspended; the client's clock keeps counting (`CLOCK_BOOTTIME`), or stops under the broken `ClockStopsInSuspend` |
//! | wall-clock skew up to 5 s, clock-rate drift up to 2 000 ppm (6 000 in the `clock-edge` profile) | unsynchronised hosts, bad oscillators |
//! | client-side write stamps from each client's skewed wall clock | Cassandra's client timestamps (and the SQL stores' `stamp` column) |
//! | store clock steps (SQL) and per-node clock offsets with whole-second TTLs (Cassandra) | NTP stepping a database server; Cassandra nodes' clocks and `nowInSec` truncation |
//! | a lagging replica | a slow or overloaded Cassandra node |
//! | purges and forced releases racing clients, column-prefix cell TTL longer than the lease | operators running `baton purge` and `baton release --force` |
//! | waits cancelled midway, the command on the way kept or dropped | a caller's timeout around `lock()`, an aborted task |
//! | a release in the holder's transaction, committed or rolled back | `Guard::release_in` and the bindings' equivalents |
//! | a claim applied in two steps (the lock cell inserted whatever the counter holds, the counter then left when it does not match) | weaker than PostgreSQL's one statement, which inserts the lock cell alone only when the counter is created by someone else in the same instant |

#![forbid(unsafe_code)]

pub mod check;
pub mod clock;
pub mod objects;
pub mod store;
mod world;

use std::time::Duration;

use baton_kernel::{ErrorKind, Sabotage, SplitMix64, Strategy};

use check::Violation;
use objects::ObjectCounts;

pub use world::{run_config, run_traced};

/// The faults a run injects.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Probability that a command's reply is lost after it applied.
    pub lost_reply: f64,
    /// Probability that a command never applies (the client sees a timeout).
    pub dropped: f64,
    /// Probability that the store refuses a command as unavailable.
    pub unavailable: f64,
    /// Probability that a command is applied after the client's timeout (and read-back).
    pub late: f64,
    /// Probability that a command is applied a second time later.
    pub duplicated: f64,
    /// Probability that a conditional command's proposal is accepted by a minority only
    /// (replicated store).
    pub minority: f64,
    /// Probability that a message takes a very long time (up to twice the TTL).
    pub long_delay: f64,
    /// Probability that a client crashes at some point of the run.
    pub crash: f64,
    /// Probability, per command, that the SQL server crashes and comes back just before it,
    /// losing the commits that had not reached the disk (single copy only).
    pub server_crash: f64,
    /// Probability, per event a client handles, that it pauses for 1 to 2 TTLs first.
    pub pause: f64,
    /// Probability, per event a client handles, that its host is suspended for 1 to 3 TTLs.
    pub suspend: f64,
    /// Wall-clock skew between clients, up to this many ms either way.
    pub skew_ms: i64,
    /// Clock-rate error of clients, up to this many parts per million either way.
    pub drift_ppm: i64,
    /// Store clocks: steps of the single copy's clock, and offsets of replicas' clocks, up to
    /// this many parts per million of the TTL either way.
    pub store_clock_ppm: u64,
    /// Use the three-replica store (Cassandra's model).
    pub replicated: bool,
    /// An operator runs purges and forced releases; column prefix uses a cell TTL longer than
    /// the lease.
    pub operators: bool,
    /// Probability that an acquisition is cancelled midway.
    pub cancel: f64,
    /// A drift margin of this many percent of the TTL instead of the default (1% + 1 ms).
    pub margin_percent: Option<u32>,
}

impl Faults {
    /// Whether anything can go wrong (liveness is only checked when nothing can).
    pub fn any(&self) -> bool {
        self.lost_reply > 0.0
            || self.dropped > 0.0
            || self.unavailable > 0.0
            || self.late > 0.0
            || self.duplicated > 0.0
            || self.minority > 0.0
            || self.long_delay > 0.0
            || self.crash > 0.0
            || self.server_crash > 0.0
            || self.pause > 0.0
            || self.suspend > 0.0
            || self.skew_ms > 0
            || self.drift_ppm > 0
            || self.store_clock_ppm > 0
            || self.operators
            || self.cancel > 0.0
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
    /// Column prefix: the cell TTL, when longer than the lease.
    pub cell_ttl: Option<Duration>,
    /// Faults.
    pub faults: Faults,
    /// Name of the fault profile, for reports.
    pub profile: &'static str,
    /// Each client reuses one owner id (with a fresh acquisition id each time) instead of
    /// drawing a new one per acquisition.
    pub reuse_owner: bool,
    /// The cap on a waiter's backoff (20 ms or 200 ms: short caps poll a freed lock closely).
    pub retry_max: Duration,
    /// Whether the store sends change notices (PostgreSQL's `NOTIFY`; in-process wake-ups).
    /// On in every generated run; off, a store that only answers, as MariaDB, SQLite and
    /// Cassandra do to other processes.
    pub notices: bool,
    /// Whether the workers use their names' objects (issue 42): holders increment a counter
    /// with locked updates, and some rounds increment it optimistically, without the lock.
    /// Drawn for half the seeds, apart from everything else, so the other half run as before.
    pub objects: bool,
    /// What the acquisitions ask for (issue 43): drawn apart from everything else, for a
    /// quarter of the bakery and column-prefix seeds each way, on seeds without objects.
    pub modes: Modes,
    /// Names are paths of a small tree per root (`r`, `r.a`, `r.a.x`, `r.b`; a second root
    /// `s`, `s.a` with two names), locked with [`LockOptions::paths`]: drawn apart from
    /// everything else for half the bakery and column-prefix seeds without objects.
    ///
    /// [`LockOptions::paths`]: baton_kernel::LockOptions::paths
    pub paths: bool,
    /// Unique insert: the acquisitions reserve turns ([`LockOptions::turns`]), drawn apart
    /// from everything else for half the unique-insert seeds on the replicated store (always
    /// under its broken variant): Cassandra's, the one store that honours turns. The single
    /// store, as the SQL stores, ignores a claim's turn condition.
    ///
    /// [`LockOptions::turns`]: baton_kernel::LockOptions::turns
    pub turns: bool,
}

/// The modes of one run's acquisitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modes {
    /// Every acquisition exclusive (as before modes).
    Exclusive,
    /// Readers and writers: each acquisition shared, or exclusive one time in four.
    ReadersWriters,
    /// Every acquisition one of a semaphore's permits (every name has this many).
    Semaphore(u32),
}

/// The fault profiles, in the order seeds cycle through them.
pub const PROFILES: [&str; 12] = [
    "none",
    "none+replicas",
    "network",
    "late",
    "late+replicas",
    "crashes",
    "pauses",
    "clocks",
    "clock-edge",
    "operators",
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
        let late = Faults {
            late: 0.05,
            duplicated: 0.03,
            minority: 0.05,
            ..Faults::default()
        };
        let clocks = Faults {
            skew_ms: 5_000,
            drift_ppm: 2_000,
            store_clock_ppm: 2_000,
            ..Faults::default()
        };
        let faults = match profile {
            "none" => Faults::default(),
            "none+replicas" => Faults {
                replicated: true,
                ..Faults::default()
            },
            "network" => network,
            "late" => late,
            "late+replicas" => Faults {
                replicated: true,
                ..late
            },
            "crashes" => Faults {
                crash: 0.3,
                server_crash: 0.01,
                ..Faults::default()
            },
            "pauses" => Faults {
                pause: 0.01,
                suspend: 0.005,
                ..Faults::default()
            },
            "clocks" => Faults {
                replicated: rng.below(2) == 0,
                ..clocks
            },
            // Clocks far off, with a drift margin configured to match (as a user who knows
            // their clocks are bad sets it): client clock rates off by up to 6%, store clocks
            // moving by up to 0.5% of the TTL, an 8% margin, and renewals failing often enough
            // that leases run to their deadlines. Without the margin this double-grants.
            "clock-edge" => Faults {
                skew_ms: 5_000,
                drift_ppm: 60_000,
                store_clock_ppm: 5_000,
                margin_percent: Some(8),
                dropped: 0.15,
                lost_reply: 0.05,
                pause: 0.01,
                replicated: rng.below(2) == 0,
                ..Faults::default()
            },
            "operators" => Faults {
                operators: true,
                cancel: 0.2,
                ..Faults::default()
            },
            _ => Faults {
                lost_reply: network.lost_reply,
                dropped: network.dropped,
                unavailable: network.unavailable,
                long_delay: network.long_delay,
                late: late.late / 2.0,
                duplicated: late.duplicated,
                minority: late.minority,
                crash: 0.2,
                server_crash: 0.005,
                pause: 0.005,
                suspend: 0.003,
                skew_ms: clocks.skew_ms,
                drift_ppm: clocks.drift_ppm,
                store_clock_ppm: clocks.store_clock_ppm,
                replicated: profile == "all+replicas",
                operators: true,
                cancel: 0.1,
                margin_percent: None,
            },
        };
        let ttl = Duration::from_millis(200 + rng.below(1_800));
        let objects = SplitMix64::new(seed ^ 0x0B1E_C7C0_C0FF_EE42).below(2) == 0;
        let cell_ttl = (faults.operators && strategy == Strategy::ColumnPrefix)
            .then(|| ttl * (2 + rng.below(3) as u32));
        Config {
            strategy,
            sabotage,
            clients: 2 + rng.below(15) as usize,
            acquisitions: 1 + rng.below(3) as u32,
            names: 1 + (rng.below(4) == 0) as usize,
            ttl,
            cell_ttl,
            faults,
            profile,
            reuse_owner: (seed / PROFILES.len() as u64) % 2 == 1,
            // Short caps only where liveness is not checked: contenders that collide and retry
            // every few milliseconds can starve one another (column prefix, by design).
            retry_max: Duration::from_millis(if faults.any() && rng.below(2) == 0 {
                20
            } else {
                200
            }),
            notices: true,
            objects,
            paths: !objects
                && strategy != Strategy::UniqueInsert
                && SplitMix64::new(seed ^ 0x7A7E_5EED_0000_0043).below(2) == 0,
            turns: strategy == Strategy::UniqueInsert
                && faults.replicated
                && (sabotage == Sabotage::TurnOverridesLock
                    || SplitMix64::new(seed ^ 0x7E44_0000_0000_0045).below(2) == 0),
            modes: if objects || strategy == Strategy::UniqueInsert {
                Modes::Exclusive
            } else {
                let mut draw = SplitMix64::new(seed ^ 0x5EA4_ED0C_0A7E_D143);
                match draw.below(4) {
                    0 | 1 => Modes::Exclusive,
                    2 => Modes::ReadersWriters,
                    _ => Modes::Semaphore(1 + draw.below(3) as u32),
                }
            },
        }
    }
}

/// How many faults of each class a run injected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Replies lost after the command applied.
    pub lost_reply: u64,
    /// Commands that never applied.
    pub dropped: u64,
    /// Commands refused as unavailable.
    pub unavailable: u64,
    /// Commands applied after the client's timeout.
    pub late: u64,
    /// Commands applied twice.
    pub duplicated: u64,
    /// Proposals accepted by a minority (of which some were completed by a later round).
    pub minority: u64,
    /// Messages delayed by up to twice the TTL.
    pub long_delay: u64,
    /// Client crashes.
    pub crashes: u64,
    /// SQL server crashes.
    pub server_crashes: u64,
    /// Commits that had not reached the disk, lost in them.
    pub lost_commits: u64,
    /// Client pauses.
    pub pauses: u64,
    /// Host suspensions.
    pub suspends: u64,
    /// Store clock steps.
    pub clock_steps: u64,
    /// Claims applied in two steps that inserted the lock cell and left the counter.
    pub split_claims: u64,
    /// Purges run by the operator.
    pub purges: u64,
    /// Forced releases that removed an entry.
    pub forced: u64,
    /// Acquisitions cancelled midway.
    pub cancelled: u64,
    /// Change notices (`NOTIFY`) lost on their way to a waiter.
    pub lost_notices: u64,
    /// Change notices delivered twice.
    pub duplicated_notices: u64,
}

impl FaultCounts {
    /// The counts with their names, for tables.
    pub fn named(&self) -> [(&'static str, u64); 19] {
        [
            ("lost reply", self.lost_reply),
            ("dropped", self.dropped),
            ("unavailable", self.unavailable),
            ("late", self.late),
            ("duplicated", self.duplicated),
            ("minority", self.minority),
            ("long delay", self.long_delay),
            ("crash", self.crashes),
            ("server crash", self.server_crashes),
            ("lost commit", self.lost_commits),
            ("pause", self.pauses),
            ("suspend", self.suspends),
            ("clock step", self.clock_steps),
            ("split claim", self.split_claims),
            ("purge", self.purges),
            ("forced", self.forced),
            ("cancelled", self.cancelled),
            ("lost notice", self.lost_notices),
            ("double notice", self.duplicated_notices),
        ]
    }

    fn add(&mut self, o: &FaultCounts) {
        self.lost_reply += o.lost_reply;
        self.dropped += o.dropped;
        self.unavailable += o.unavailable;
        self.late += o.late;
        self.duplicated += o.duplicated;
        self.minority += o.minority;
        self.long_delay += o.long_delay;
        self.crashes += o.crashes;
        self.server_crashes += o.server_crashes;
        self.lost_commits += o.lost_commits;
        self.pauses += o.pauses;
        self.suspends += o.suspends;
        self.clock_steps += o.clock_steps;
        self.split_claims += o.split_claims;
        self.purges += o.purges;
        self.forced += o.forced;
        self.cancelled += o.cancelled;
        self.lost_notices += o.lost_notices;
        self.duplicated_notices += o.duplicated_notices;
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
    /// Acquisitions whose wait ran out with a command on its way ([`LifeEvent::GaveUp`]):
    /// counted in `errors` too; their cleanups were driven to the end.
    ///
    /// [`LifeEvent::GaveUp`]: baton_kernel::LifeEvent::GaveUp
    pub gave_up: usize,
    /// Releases by what they returned (`None`: `Ok`).
    pub releases: Vec<(Option<ErrorKind>, usize)>,
    /// Faults injected.
    pub faults: FaultCounts,
    /// The object workload's figures.
    pub objects: ObjectCounts,
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

/// Runs the simulation of `seed` for `strategy` (and optionally a broken variant).
pub fn run(strategy: Strategy, sabotage: Sabotage, seed: u64) -> Outcome {
    run_config(Config::from_seed(strategy, sabotage, seed), seed)
}

/// Which seeds a long run takes: those of one fault profile, and with every run's modes forced
/// (`simulate --profile P --modes M`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Only {
    /// Only the seeds of this profile (an index into [`PROFILES`]).
    pub profile: Option<usize>,
    /// Every run with these modes (and no objects, as mode runs are drawn).
    pub modes: Option<Modes>,
}

impl Only {
    /// The configuration of run `seed`, with the modes forced when asked.
    pub fn config(&self, strategy: Strategy, sabotage: Sabotage, seed: u64) -> Config {
        let mut config = Config::from_seed(strategy, sabotage, seed);
        if let Some(modes) = self.modes {
            config.modes = modes;
            config.objects = false;
            config.paths = strategy != Strategy::UniqueInsert
                && SplitMix64::new(seed ^ 0x7A7E_5EED_0000_0043).below(2) == 0;
        }
        config
    }
}

/// The modes named on the command line: `exclusive`, `readers-writers`, `semaphore` (of 1 to 3
/// permits, drawn per seed as the mixed runs draw them: given as `semaphore:N`, exactly N).
pub fn parse_modes(text: &str) -> Result<Option<Modes>, String> {
    match text {
        "mixed" => Ok(None),
        "exclusive" => Ok(Some(Modes::Exclusive)),
        "readers-writers" => Ok(Some(Modes::ReadersWriters)),
        _ => match text.strip_prefix("semaphore:").map(str::parse::<u32>) {
            Some(Ok(n)) if (1..=16).contains(&n) => Ok(Some(Modes::Semaphore(n))),
            _ => Err(format!(
                "unknown modes {text:?}; one of mixed, exclusive, readers-writers, semaphore:N (N from 1 to 16)"
            )),
        },
    }
}

/// The name of a broken variant on the command line.
pub fn sabotage_name(s: Sabotage) -> String {
    format!("{s:?}")
}

/// The broken variant named `name` (`None` for `none`).
pub fn parse_sabotage(name: &str) -> Result<Sabotage, String> {
    if name.eq_ignore_ascii_case("none") {
        return Ok(Sabotage::None);
    }
    Sabotage::ALL
        .into_iter()
        .find(|s| sabotage_name(*s) == name)
        .ok_or_else(|| {
            let names: Vec<String> = Sabotage::ALL.into_iter().map(sabotage_name).collect();
            format!("unknown sabotage {name:?}; one of {}", names.join(", "))
        })
}

/// The command that replays one run.
pub fn replay_command(strategy: Strategy, sabotage: Sabotage, seed: u64) -> String {
    let mut cmd = format!(
        "cargo run --release -p baton-sim --bin simulate -- --strategy {strategy} --seed {seed}"
    );
    if sabotage != Sabotage::None {
        cmd.push_str(&format!(" --sabotage {}", sabotage_name(sabotage)));
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
    /// Waits that ran out with a command on its way, in all runs.
    pub gave_up: u64,
    /// Events processed in all runs.
    pub events: u64,
    /// Faults injected in all runs.
    pub faults: FaultCounts,
    /// The object workload's figures over all runs.
    pub objects: ObjectCounts,
    /// Runs with the object workload.
    pub object_runs: u64,
    /// Releases by result over all runs (`None`: `Ok`).
    pub releases: Vec<(Option<ErrorKind>, u64)>,
}

impl Tally {
    fn add(&mut self, out: &Outcome) {
        self.runs += 1;
        self.grants += out.grants as u64;
        self.gave_up += out.gave_up as u64;
        self.events += out.events;
        self.faults.add(&out.faults);
        self.objects.add(&out.objects);
        self.object_runs += u64::from(out.config.objects);
        for (kind, n) in &out.releases {
            self.count_releases(*kind, *n as u64);
        }
    }

    fn merge(&mut self, other: Tally) {
        self.runs += other.runs;
        self.grants += other.grants;
        self.gave_up += other.gave_up;
        self.events += other.events;
        self.faults.add(&other.faults);
        self.objects.add(&other.objects);
        self.object_runs += other.object_runs;
        for (kind, n) in other.releases {
            self.count_releases(kind, n);
        }
        self.failed.extend(other.failed);
    }

    fn count_releases(&mut self, kind: Option<ErrorKind>, n: u64) {
        match self.releases.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, m)) => *m += n,
            None => self.releases.push((kind, n)),
        }
    }
}

/// The seed of the `k`th run: `k` itself, or with a profile (an index into [`PROFILES`]) the
/// `k`th seed of that profile.
pub fn seed_of(k: u64, profile: Option<usize>) -> u64 {
    match profile {
        Some(p) => k * PROFILES.len() as u64 + p as u64,
        None => k,
    }
}

/// The index in [`PROFILES`] of the profile named `name`.
pub fn parse_profile(name: &str) -> Result<usize, String> {
    PROFILES
        .iter()
        .position(|p| *p == name)
        .ok_or_else(|| format!("unknown profile {name:?}; one of {}", PROFILES.join(", ")))
}

/// Runs the seeds of runs `from..to` ([`seed_of`], in `profile` if one is given) on `threads`
/// threads, stopping early after `stop_after` failures; `progress` is called now and then with
/// the number of runs done.
#[allow(clippy::too_many_arguments)]
pub fn run_many_with(
    strategy: Strategy,
    sabotage: Sabotage,
    from: u64,
    to: u64,
    only: Only,
    threads: usize,
    stop_after: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Tally {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicU64::new(from);
    let done = AtomicU64::new(0);
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
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= to {
                        break;
                    }
                    let seed = seed_of(k, only.profile);
                    let out = run_config(only.config(strategy, sabotage, seed), seed);
                    local.add(&out);
                    if !out.ok() {
                        failures.fetch_add(1, Ordering::Relaxed);
                        local.failed.push(out);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_multiple_of(1_000) {
                        progress(n);
                    }
                }
                tally.lock().unwrap_or_else(|p| p.into_inner()).merge(local);
            });
        }
    });
    let mut t = tally.into_inner().unwrap_or_else(|p| p.into_inner());
    t.failed.sort_by_key(|o| o.seed);
    t
}

/// [`run_many_with`] without progress reports.
pub fn run_many(
    strategy: Strategy,
    sabotage: Sabotage,
    from: u64,
    to: u64,
    threads: usize,
    stop_after: usize,
) -> Tally {
    run_many_with(
        strategy,
        sabotage,
        from,
        to,
        Only::default(),
        threads,
        stop_after,
        &|_| {},
    )
}
