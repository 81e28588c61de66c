//! Benchmark of the SQL stores: what a lock costs next to the statements it is made of, next to
//! the database's own lock, and under contention.
//!
//! ```text
//! scripts/postgres start; scripts/mariadb start
//! BATON_POSTGRES_URL=$(scripts/postgres url) BATON_MYSQL_URL=$(scripts/mariadb url) \
//!   cargo run --release -p baton-tests --bin bench_sql [-- --iterations 300 --contended-secs 2]
//! ```
//!
//! Stores: SQLite always (`BATON_SQLITE_URL`, or a temporary file), PostgreSQL with
//! `BATON_POSTGRES_URL`, MariaDB with `BATON_MYSQL_URL`; each strategy in a fresh table. Per store
//! and strategy it prints:
//!
//! - **wire rt**: data segments the client sent to the server per uncontended lock+release,
//!   counted on the socket (`baton_tests::wire`, from `ss`): every statement, ping or other
//!   request; **cmds**: the kernel's storage commands of one lock+release.
//! - **lock+release**: p50 and p99 of one uncontended `Locker::lock` + `Guard::release`
//!   (keep-alive off unless `--keep-alive on`), through the kernel and the tokio host (a multi-thread runtime with 2
//!   workers, unless `--workers` says otherwise).
//! - **in store**: p50 of the part of each lock+release spent inside `Store::execute`; in the
//!   progress line, the p50s of the time outside it, in the kernel and the host: before the
//!   first command reaches the store, between commands (summed), after the last reply.
//! - **floor**: the same storage commands issued straight to the same store with
//!   `Store::execute` (same statements, same connections), without the kernel or the host. The
//!   commands are those a recording wrapper captured from one steady-state lock+release; each
//!   iteration replays them with fresh values, chained so every conditional applies as it did.
//!   Locker and floor iterations alternate, so both meet the same database conditions.
//! - **/ floor**, **/ db lock**: lock+release p50 over the floor's, and over the database's own
//!   lock on one connection: `pg_advisory_lock` + `pg_advisory_unlock` on PostgreSQL,
//!   `GET_LOCK` + `RELEASE_LOCK` on MariaDB, `BEGIN IMMEDIATE` + `COMMIT` on SQLite. On
//!   PostgreSQL, the same advisory lock from a raw blocking client (`pgbench`, libpq) when it is
//!   installed, next to sqlx's.
//! - **2 UPDATEs**: two single-row `UPDATE` commits by a plain sqlx connection, interleaved with
//!   the lock's iterations.
//! - **per s** and **Jain**: acquisitions per second with each of `--clients` clients (each its
//!   own store and pool, as separate processes would have) looping lock + release on one lock,
//!   retrying 1 ms doubling to 20 ms, Jain's fairness index of their counts, and the storage
//!   commands all clients sent per acquisition (what waiting costs the store).
//! - **database lock per s**, in each table's heading: the database's own lock with as many
//!   clients, each on its own connection, looping lock + unlock of one key: how much of one
//!   client's rate a lock that the server queues and hands over itself keeps on this machine.
//! - **hand-off**: p50 and p99 of the time from a release returning to the next holder's
//!   `lock()` returning, with each of `--waiters` waiters (clients hold the lock 1 ms).
//! - **CPU per operation** (PostgreSQL and MariaDB, Linux): over `--cpu N` back-to-back
//!   lock+releases and as many pairs of the plain client's `UPDATE`s, the wall time, this
//!   process's CPU time and context switches, and the database server's CPU time, each per
//!   operation (module `cpu`).
//! - **In blocks** (PostgreSQL, MariaDB and a SQLite file): p50 of lock+release and of the plain client's two
//!   `UPDATE`s over `--blocks N` of each, run in alternating blocks of 20. The interleaved
//!   columns above alternate one of each, so that both meet the same database conditions; but
//!   there the store's connection also serves the floor's replay, while the plain client's
//!   connection waits idle between its turns. In blocks, each client runs warm in its own loop,
//!   as a program that locks in a loop does, and drift still cancels out. With
//!   `BATON_SHEDLOCK_CLASSPATH` set (`scripts/shedlock classpath`), a third client in the
//!   same rotation on PostgreSQL and MariaDB: ShedLock's JDBC provider over a HikariCP pool,
//!   lock + unlock of one name, in a Java child of its own (module `shedlock`), and baton's
//!   lock+release over ShedLock's.
//!
//! Options: `--iterations N` (default 300), `--contended-secs S` (default 2), `--clients
//! 1,8,32`, `--waiters 2,8,32`, `--handoffs N` (default 200), `--stores sqlite,postgres,mysql`,
//! `--strategies unique-insert,bakery,…`, `--workers N` (the runtime's worker threads, default
//! 2; 0 runs everything on one current-thread runtime), `--cpu N` (default 1000; 0 skips it),
//! `--blocks N` (default 1000; 0 skips it), `--keep-alive on|off` (default off: the measured
//! locker does not renew; on, as the library's default, each guard also runs its renewal task).
//! At the end it prints one Markdown table
//! per store, as in docs/performance.md (paste them there).
//!
//! Modules: `floor` (the recorded commands replayed without the kernel), `baselines` (the plain
//! client's UPDATEs and the database's own lock), `cpu` (CPU time and context switches per
//! operation), `shedlock` (the peer's child process); throughput, fairness and hand-off come from `baton_tests::contention`, shared
//! with `bench_cassandra`.

mod baselines;
mod cpu;
mod floor;
mod shedlock;

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{Command, Locker, LockerBuilder, Reply, Strategy};

use baton_tests::conformance::target::unique_table;
use baton_tests::conformance::{drop_table, Backend};

use baselines::{db_lock, db_lock_contended, pgbench_advisory, PlainClient};
use floor::{same_outcome, Recorder, Replay};
use shedlock::ShedLock;

use baton_tests::contention::{counts, percentiles, Contention, Error};

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}
struct Settings {
    iterations: u64,
    contended: Duration,
    clients: Vec<usize>,
    waiters: Vec<usize>,
    handoffs: usize,
    stores: Vec<String>,
    strategies: Vec<Strategy>,
    /// Worker threads of the runtime everything runs on (0: a current-thread runtime).
    workers: usize,
    /// Back-to-back operations of the CPU measurement (0: none).
    cpu: u64,
    /// Operations of each kind in the block measurement (0: none).
    blocks: u64,
    /// Whether the measured locker renews its leases (the library's default; off by default
    /// here, so that a lock+release is the two statements alone).
    keep_alive: bool,
}

fn settings() -> Result<Settings, Error> {
    let mut s = Settings {
        iterations: 300,
        contended: Duration::from_secs(2),
        clients: vec![1, 8, 32],
        waiters: vec![2, 8, 32],
        handoffs: 200,
        workers: 2,
        cpu: 1000,
        blocks: 1000,
        keep_alive: false,
        stores: ["sqlite", "postgres", "postgres-tls", "mysql", "mysql-tls"]
            .map(String::from)
            .to_vec(),
        strategies: vec![
            Strategy::UniqueInsert,
            Strategy::Bakery,
            Strategy::ColumnPrefix,
        ],
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--iterations" => s.iterations = value.parse()?,
            "--contended-secs" => s.contended = Duration::from_secs_f64(value.parse()?),
            "--clients" => s.clients = counts(&flag, &value)?,
            "--waiters" => s.waiters = counts(&flag, &value)?,
            "--handoffs" => s.handoffs = value.parse()?,
            "--workers" => s.workers = value.parse()?,
            "--cpu" => s.cpu = value.parse()?,
            "--blocks" => s.blocks = value.parse()?,
            "--keep-alive" => {
                s.keep_alive = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("--keep-alive takes on or off, not {value:?}").into()),
                }
            }
            "--stores" => s.stores = value.split(',').map(str::to_owned).collect(),
            "--strategies" => {
                s.strategies = value
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, baton::Error>>()?;
            }
            _ => return Err(format!("unknown option {flag}").into()),
        }
    }
    Ok(s)
}

/// A SQLite database file the benchmark made, removed with its `-wal` and `-shm` when dropped.
struct ScratchFile(String);

impl Drop for ScratchFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0));
        }
    }
}

/// The base URL of `store` (without `table=`), or `None` with the reason it is skipped.
fn base_url(store: &str) -> Result<String, String> {
    let var = match store {
        "sqlite" => "BATON_SQLITE_URL",
        "postgres" => "BATON_POSTGRES_URL",
        "mysql" => "BATON_MYSQL_URL",
        // The TLS-only users: verified TLS, the password from a file.
        "postgres-tls" => "BATON_POSTGRES_TLS_URL",
        "mysql-tls" => "BATON_MYSQL_TLS_URL",
        other => return Err(format!("unknown store {other}")),
    };
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Ok(url.trim().to_owned()),
        _ if store == "sqlite" => Ok(format!(
            "sqlite://{}",
            std::env::temp_dir()
                .join(format!("baton-bench-{}.db", std::process::id()))
                .display()
        )),
        _ => Err(format!("{var} is not set")),
    }
}

fn with_table(base: &str, table: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}table={table}")
}

struct Row {
    strategy: Strategy,
    round_trips: usize,
    /// Data segments sent to the server per lock+release (`None`: SQLite, or no `ss`).
    wire: Option<f64>,
    lock: (Duration, Duration),
    in_store: (Duration, Duration),
    /// p50 of the time spent outside `Store::execute`: before the first command, between
    /// commands (summed), after the last.
    outside: [Duration; 3],
    floor: (Duration, Duration),
    /// Two single-row `UPDATE` commits by a plain client, interleaved with the lock's iterations.
    updates: Option<(Duration, Duration)>,
    /// Acquisitions per second, Jain's fairness index and storage commands per acquisition,
    /// per client count.
    throughput: Vec<(usize, f64, f64, f64)>,
    /// Hand-off p50 and p99, per number of waiters.
    handoff: Vec<(usize, Duration, Duration)>,
    /// p50 of lock+release, of the plain client's two `UPDATE`s and of ShedLock's lock+unlock
    /// (when measured), in alternating blocks.
    blocks: Option<(Duration, Duration, Option<Duration>)>,
    /// CPU per operation: the lock+release's and the plain client's two `UPDATE`s'.
    cpu: Option<(cpu::Costs, cpu::Costs)>,
}

async fn bench_strategy(
    backend: Backend,
    base: &str,
    strategy: Strategy,
    s: &Settings,
    shedlock: Option<&mut ShedLock>,
) -> Result<Row, Error> {
    let table = unique_table();
    let result = bench_table(base, &table, strategy, s, shedlock).await;
    drop_table(backend, base, &table);
    result
}

async fn bench_table(
    base: &str,
    table: &str,
    strategy: Strategy,
    s: &Settings,
    shedlock: Option<&mut ShedLock>,
) -> Result<Row, Error> {
    let url = with_table(base, table);
    let recorder = Recorder::new(baton::open_store(&url)?);
    let locker = LockerBuilder::new(Arc::new(recorder.clone()))
        .strategy(strategy)
        .keep_alive(s.keep_alive)
        .ttl(Duration::from_secs(60))
        .build()?;
    // Warm up: connect, create the table, learn the fence hint (as a long-lived locker would).
    for _ in 0..20 {
        locker.lock("bench").await?.release().await?;
    }
    recorder.start();
    locker.lock("bench").await?.release().await?;
    let captured: Vec<(Command, Reply)> = recorder
        .stop()
        .into_iter()
        .map(|(c, r, _, _)| (c, r))
        .collect();
    let round_trips = captured.len();

    // Locker and floor iterations alternate, so both see the same database conditions (fsync
    // latency drifts). The locker's commands are recorded so the replay knows the table's
    // state; after each replay the fencing counter is put back (untimed) to what the locker's
    // fence hint expects.
    let mut replay = Replay::new(captured);
    let mut plain = PlainClient::connect(base).await?;
    let mut update_samples = Vec::with_capacity(s.iterations as usize);
    let mut lock_samples = Vec::with_capacity(s.iterations as usize);
    let mut in_store = Vec::with_capacity(s.iterations as usize);
    let mut outside: [Vec<Duration>; 3] = Default::default();
    let mut floor_samples = Vec::with_capacity(s.iterations as usize);
    for i in 0..s.iterations {
        recorder.start();
        let started = Instant::now();
        let mut guard = locker.lock("bench").await?;
        guard.release().await?;
        let ended = Instant::now();
        lock_samples.push(ended - started);
        let log = recorder.stop();
        if log.len() != round_trips {
            return Err(format!(
                "iteration {i} took {} round trips, the captured one {round_trips}",
                log.len()
            )
            .into());
        }
        in_store.push(log.iter().map(|(_, _, _, took)| *took).sum());
        let gaps = outside_store(started, &log, ended);
        for (part, gap) in outside.iter_mut().zip(gaps) {
            part.push(gap);
        }
        for (command, _, _, _) in &log {
            replay.note(command);
        }
        let locker_state = replay.known();

        let commands = replay.iteration(i);
        let started = Instant::now();
        for (command, want) in commands {
            // Kept for the error message; a clone, not a format, so the timing stays the store's.
            let shown = command.clone();
            let got = recorder.store().execute(command).await;
            if !same_outcome(&want, &got) {
                return Err(format!(
                    "the floor replay diverged: {shown:?} gave {got:?}, captured {want:?}"
                )
                .into());
            }
        }
        floor_samples.push(started.elapsed());
        if let Some(took) = plain.two_updates().await? {
            update_samples.push(took);
        }
        for command in replay.restore(&locker_state) {
            let reply = recorder.store().execute(command).await;
            if !matches!(reply, Reply::Conditional { applied: true, .. }) {
                return Err(format!("restoring the fencing counter failed: {reply:?}").into());
            }
        }
    }
    let lock = percentiles(lock_samples);
    let in_store = percentiles(in_store);
    let outside = outside.map(|part| percentiles(part).0);
    let floor = percentiles(floor_samples);
    let updates = (!update_samples.is_empty()).then(|| percentiles(update_samples));
    let server = match base.split("://").next() {
        Some("postgres" | "postgresql") => Some("postgres"),
        Some("mysql" | "mariadb") => Some("mariadbd"),
        _ => None,
    };
    let cpu = match server {
        Some(server) if s.cpu > 0 => {
            let meter = cpu::Meter::start(server);
            for _ in 0..s.cpu {
                locker.lock("bench").await?.release().await?;
            }
            let baton = meter.per_op(s.cpu);
            let meter = cpu::Meter::start(server);
            for _ in 0..s.cpu {
                plain.two_updates().await?;
            }
            Some((baton, meter.per_op(s.cpu)))
        }
        _ => None,
    };
    let blocks = if s.blocks > 0 && plain.exists() {
        Some(in_blocks(&locker, &mut plain, shedlock, s.blocks).await?)
    } else {
        None
    };
    plain.finish().await?;
    let wire = wire_round_trips(&locker, base, s.iterations.min(200)).await?;

    let contention = Contention::new(&url, strategy);
    let mut throughput = Vec::new();
    for &clients in &s.clients {
        let (counts, commands) = contention.contended(clients, s.contended).await?;
        let total: u64 = counts.iter().sum();
        let fairness = baton_tests::wire::jain(&counts);
        throughput.push((
            clients,
            total as f64 / s.contended.as_secs_f64(),
            fairness,
            commands as f64 / total.max(1) as f64,
        ));
    }
    let mut handoff = Vec::new();
    for &waiters in &s.waiters {
        let (p50, p99) = contention.handoffs(waiters, s.handoffs).await?;
        handoff.push((waiters, p50, p99));
    }
    Ok(Row {
        strategy,
        round_trips,
        wire,
        lock,
        in_store,
        outside,
        floor,
        updates,
        throughput,
        handoff,
        blocks,
        cpu,
    })
}

/// Where a lock+release that ran from `started` to `ended` spent its time outside the store,
/// from the commands it sent (`log`): before the first command reached the store, between
/// commands (summed: the reply's handling, the return from `lock()`, the release's start),
/// and after the last reply.
fn outside_store(started: Instant, log: &floor::Log, ended: Instant) -> [Duration; 3] {
    let (Some(first), Some(last)) = (log.first(), log.last()) else {
        return [ended - started, Duration::ZERO, Duration::ZERO];
    };
    let between = log
        .windows(2)
        .map(|w| w[1].2.saturating_duration_since(w[0].2 + w[0].3))
        .sum();
    [
        first.2.saturating_duration_since(started),
        between,
        ended.saturating_duration_since(last.2 + last.3),
    ]
}

/// Operations of one kind in a row, in [`in_blocks`].
const BLOCK: u64 = 20;

/// p50 of `n` lock+releases, of `n` pairs of the plain client's `UPDATE`s and of `n` of
/// ShedLock's lock+unlock (when it runs), in alternating blocks of [`BLOCK`]: each client warm
/// in its own loop, and drift shared.
async fn in_blocks(
    locker: &Locker,
    plain: &mut PlainClient,
    mut shedlock: Option<&mut ShedLock>,
    n: u64,
) -> Result<(Duration, Duration, Option<Duration>), Error> {
    let (mut lock, mut updates, mut peer) = (Vec::new(), Vec::new(), Vec::new());
    while (lock.len() as u64) < n {
        for _ in 0..BLOCK {
            let started = Instant::now();
            locker.lock("bench").await?.release().await?;
            lock.push(started.elapsed());
        }
        for _ in 0..BLOCK {
            if let Some(took) = plain.two_updates().await? {
                updates.push(took);
            }
        }
        if let Some(shedlock) = shedlock.as_deref_mut() {
            peer.extend(shedlock.block(BLOCK).await?);
        }
    }
    let peer = (!peer.is_empty()).then(|| percentiles(peer).0);
    Ok((percentiles(lock).0, percentiles(updates).0, peer))
}

/// Data segments the client sent to the server per uncontended lock+release, over `n` of them
/// (see `baton_tests::wire`); `None` for SQLite (no wire) or without `ss`.
async fn wire_round_trips(locker: &Locker, base: &str, n: u64) -> Result<Option<f64>, Error> {
    let port = match base.split("://").next() {
        Some("postgres" | "postgresql") => baton_tests::wire::port_of(base, 5432),
        Some("mysql" | "mariadb") => baton_tests::wire::port_of(base, 3306),
        _ => return Ok(None),
    };
    let Some(before) = baton_tests::wire::data_segments_to(port) else {
        return Ok(None);
    };
    for _ in 0..n {
        locker.lock("bench").await?.release().await?;
    }
    let after = baton_tests::wire::data_segments_to(port).unwrap_or(before);
    Ok(Some(after.saturating_sub(before) as f64 / n.max(1) as f64))
}

fn main() -> Result<(), Error> {
    let s = settings()?;
    let runtime = match s.workers {
        0 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()?,
    };
    runtime.block_on(run(s))
}

async fn run(s: Settings) -> Result<(), Error> {
    println!("{}", baton_tests::provenance::line("bench_sql"));
    println!(
        "baton SQL benchmark: {} iterations per measurement; throughput with {:?} clients for {:?}; hand-off with {:?} waiters, {} each; {} (build: {})",
        s.iterations,
        s.clients,
        s.contended,
        s.waiters,
        s.handoffs,
        match s.workers {
            0 => String::from("a current-thread runtime"),
            n => format!("a multi-thread runtime with {n} workers"),
        },
        if cfg!(debug_assertions) { "debug — use --release for real numbers" } else { "release" }
    );
    let mut tables = Vec::new();
    for store in &s.stores {
        let base = match base_url(store) {
            Ok(b) => b,
            Err(why) => {
                println!("\n{store}: skipped ({why})");
                continue;
            }
        };
        // The SQLite file this run made goes when the store's measurements end, failed or not.
        let _scratch = (store == "sqlite" && std::env::var("BATON_SQLITE_URL").is_err())
            .then(|| ScratchFile(base.trim_start_matches("sqlite://").to_owned()));
        let backend = match store.trim_end_matches("-tls") {
            "postgres" => Backend::Postgres,
            "mysql" => Backend::Mysql,
            _ => Backend::Sqlite,
        };
        let (lock_name, db) = db_lock(store, &base, s.iterations).await?;
        println!(
            "\n{store}: database lock ({lock_name}) p50 {} ms, p99 {} ms",
            ms(db.0),
            ms(db.1)
        );
        let mut db_rates = Vec::with_capacity(s.clients.len());
        for &clients in &s.clients {
            db_rates.push(db_lock_contended(store, &base, clients, s.contended).await?);
        }
        let db_rates = DbRates {
            clients: &s.clients,
            per_s: db_rates,
        };
        println!("{store}: database lock, {db_rates}");
        let first = first_use(&base, s.iterations.min(20)).await?;
        println!(
            "{store}: first use of a new store (connect, authenticate{}, check the table, lock+release) p50 {} ms",
            if store.ends_with("-tls") { ", TLS handshake" } else { "" },
            ms(first)
        );
        let raw = if store == "postgres" {
            pgbench_advisory(&base)
        } else {
            None
        };
        if let Some(raw) = raw {
            println!(
                "{store}: the same from a raw blocking client (pgbench, libpq): mean {} ms; baton's driver over it: {:.2}",
                ms(raw),
                db.0.as_secs_f64() / raw.as_secs_f64()
            );
        }
        let mut shedlock = match s.blocks {
            0 => None,
            _ => ShedLock::start(store, &base).await?,
        };
        let mut rows = Vec::new();
        for &strategy in &s.strategies {
            let row = bench_strategy(backend, &base, strategy, &s, shedlock.as_mut()).await?;
            println!("{}", line(&row, db));
            rows.push(row);
        }
        if let Some(shedlock) = shedlock {
            shedlock.finish().await?;
        }
        let mut table = markdown(store, lock_name, db, &rows, &s).replacen(
            ")\n",
            &format!(
                "; {db_rates}; first use of a new store p50 {} ms)\n",
                ms(first)
            ),
            1,
        );
        if let Some(raw) = raw {
            table = table.replacen(
                ")\n",
                &format!(
                    "; from a raw blocking client, pgbench over libpq: mean {} ms)\n",
                    ms(raw)
                ),
                1,
            );
        }
        tables.push(table);
    }
    println!("\n{}", tables.join("\n"));
    println!("{LEGEND}");
    Ok(())
}

/// The median cost of a new store's first lock+release (`n` times): a new connection (and TLS
/// handshake), authentication, the table check, and the lock itself.
async fn first_use(base: &str, n: u64) -> Result<Duration, Error> {
    let url = with_table(base, &format!("bench_first_{}", std::process::id()));
    // The table made once first, so that each measured use only checks it.
    let mut guard = baton::Locker::open(&url)?.lock("first use").await?;
    guard.release().await?;
    let mut samples = Vec::with_capacity(n as usize);
    for _ in 0..n.max(1) {
        let started = std::time::Instant::now();
        let locker = baton::Locker::open(&url)?;
        let mut guard = locker.lock("first use").await?;
        guard.release().await?;
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    Ok(samples[samples.len() / 2])
}

/// The database's own lock's acquisitions per second with each number of contending clients.
struct DbRates<'a> {
    clients: &'a [usize],
    per_s: Vec<f64>,
}

impl std::fmt::Display for DbRates<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |parts: Vec<String>| parts.join(" / ");
        write!(
            f,
            "per s with {} clients looping on one key: {}",
            join(self.clients.iter().map(usize::to_string).collect()),
            join(self.per_s.iter().map(|r| format!("{r:.0}")).collect())
        )
    }
}

const LEGEND: &str =
    "times in ms, p50/p99. wire rt: data segments the client sent to the server per \
uncontended lock+release (statements, pings, anything: `ss` data_segs_out), next to cmds: the \
kernel's storage commands. floor: the same commands issued straight to Store::execute; / floor and \
/ db lock: lock+release p50 over the floor's and over the database's own lock (which writes \
nothing durable). 2 UPDATEs: two single-row UPDATE commits by a plain sqlx connection, \
interleaved with the lock's iterations (in blocks: both again, in alternating blocks of 20). per s: acquisitions per second with 1, 8 and 32 clients \
(each its own store and pool) looping lock+release on one name; Jain: Jain's fairness index of \
their counts (1 = even). hand-off: from a release returning to the next holder's lock() \
returning, with 2, 8 and 32 waiters (clients hold 1 ms). Retry policy of the contending clients: \
1 ms doubling to 20 ms, with jitter. The database lock's per s, in each table's heading: the \
database's own lock with as many clients, each on its own connection, looping lock + unlock of \
one key (the server queues and hands it over itself, and writes nothing durable).";

/// One line of progress per strategy.
fn line(r: &Row, db: (Duration, Duration)) -> String {
    format!(
        "{:<14} wire {:>4} cmds {} | lock {} / {} | in store {} (outside, µs: {:.1} before, {:.1} between, {:.1} after) | floor {} | 2 UPDATEs {} | in blocks {} | db lock {} | {}",
        r.strategy.as_str(),
        r.wire.map_or("-".into(), |w| format!("{w:.1}")),
        r.round_trips,
        ms(r.lock.0),
        ms(r.lock.1),
        ms(r.in_store.0),
        r.outside[0].as_secs_f64() * 1e6,
        r.outside[1].as_secs_f64() * 1e6,
        r.outside[2].as_secs_f64() * 1e6,
        ms(r.floor.0),
        r.updates.map_or("-".into(), |u| ms(u.0)),
        r.blocks.map_or("-".into(), |(l, u, peer)| format!(
            "{} / {}{}",
            ms(l),
            ms(u),
            peer.map_or(String::new(), |p| format!(" / ShedLock {}", ms(p)))
        )),
        ms(db.0),
        r.throughput
            .iter()
            .map(|(c, per_s, jain, cmds)| {
                format!("{c} clients {per_s:.0}/s J {jain:.2} ({cmds:.1} cmds each)")
            })
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The store's Markdown table, for docs/performance.md.
fn markdown(
    store: &str,
    lock_name: &str,
    db: (Duration, Duration),
    rows: &[Row],
    s: &Settings,
) -> String {
    let clients: Vec<String> = s.clients.iter().map(usize::to_string).collect();
    let waiters: Vec<String> = s.waiters.iter().map(usize::to_string).collect();
    let mut out = format!(
        "{store} (database lock: {lock_name}, p50 {} ms)\n\n| strategy | wire rt | cmds | lock+release p50 / p99 | floor p50 | / floor | / db lock | 2 UPDATEs p50 | per s, {} clients | Jain {} | hand-off p50 / p99, {} waiters |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        ms(db.0),
        clients.join(" / "),
        clients[1..].join(" / "),
        waiters.join(" / "),
    );
    for r in rows {
        let ratio = |d: Duration| r.lock.0.as_secs_f64() / d.as_secs_f64().max(1e-12);
        out += &format!(
            "| {} | {} | {} | {} / {} | {} | {:.2} | {:.1} | {} | {} | {} | {} |\n",
            r.strategy.as_str(),
            r.wire.map_or("-".into(), |w| format!("{w:.1}")),
            r.round_trips,
            ms(r.lock.0),
            ms(r.lock.1),
            ms(r.floor.0),
            ratio(r.floor.0),
            ratio(db.0),
            r.updates.map_or("-".into(), |u| ms(u.0)),
            r.throughput
                .iter()
                .map(|(_, per_s, _, _)| format!("{per_s:.0}"))
                .collect::<Vec<_>>()
                .join(" / "),
            r.throughput
                .iter()
                .skip(1)
                .map(|(_, _, jain, _)| format!("{jain:.2}"))
                .collect::<Vec<_>>()
                .join(" / "),
            r.handoff
                .iter()
                .map(|(_, p50, p99)| format!("{} / {}", ms(*p50), ms(*p99)))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    out += &small_table(
        rows,
        |r| r.blocks,
        format!(
            "\n{store}, in alternating blocks of {BLOCK} ({} of each; ms, p50; ShedLock: its JDBC provider over HikariCP, `-` when not run)\n\n| strategy | lock+release | 2 UPDATEs | ratio | ShedLock | baton / ShedLock |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
            s.blocks
        ),
        |(lock, updates, peer)| {
            let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
            format!(
                "{} | {} | {:.2} | {} | {}",
                ms(lock),
                ms(updates),
                ratio(lock, updates),
                peer.map_or("-".into(), ms),
                peer.map_or("-".into(), |p| format!("{:.2}", ratio(lock, p)))
            )
        },
    );
    let costs = |c: &cpu::Costs| {
        format!(
            "{:.0} / {:.0} / {:.1} / {}",
            c.wall_us,
            c.client_us,
            c.switches,
            c.server_us.map_or("-".into(), |u| format!("{u:.0}"))
        )
    };
    out += &small_table(
        rows,
        |r| r.cpu,
        format!(
            "\n{store}, CPU per operation ({} back-to-back; µs, context switches of the client process)\n\n| strategy | lock+release: wall / client CPU / switches / server CPU | 2 UPDATEs: wall / client CPU / switches / server CPU |\n| --- | ---: | ---: |\n",
            s.cpu
        ),
        |(baton, plain)| format!("{} | {}", costs(&baton), costs(&plain)),
    );
    out
}

/// A small Markdown table: `heading`, then one row per strategy for which `part` has a
/// measurement, its cells from `cells`; nothing when no strategy has one.
fn small_table<T>(
    rows: &[Row],
    part: impl Fn(&Row) -> Option<T>,
    heading: String,
    cells: impl Fn(T) -> String,
) -> String {
    let mut out = String::new();
    for r in rows {
        if let Some(measured) = part(r) {
            if out.is_empty() {
                out = heading.clone();
            }
            out += &format!("| {} | {} |\n", r.strategy.as_str(), cells(measured));
        }
    }
    out
}
