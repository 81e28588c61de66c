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
//!   (keep-alive off), through the kernel and the tokio host (a multi-thread runtime with 2
//!   workers, unless `--workers` says otherwise).
//! - **in store**: p50 of the part of each lock+release spent inside `Store::execute`.
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
//! - **hand-off**: p50 and p99 of the time from a release returning to the next holder's
//!   `lock()` returning, with each of `--waiters` waiters (clients hold the lock 1 ms).
//!
//! Options: `--iterations N` (default 300), `--contended-secs S` (default 2), `--clients
//! 1,8,32`, `--waiters 2,8,32`, `--handoffs N` (default 200), `--stores sqlite,postgres,mysql`,
//! `--strategies unique-insert,bakery,…`, `--workers N` (the runtime's worker threads, default
//! 2; 0 runs everything on one current-thread runtime). At the end it prints one Markdown table per store, as
//! in the README's "Performance".

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use baton::{
    Command, Locker, LockerBuilder, Reply, RetryPolicy, Store, StoreFuture, Strategy, Write,
};
use baton_tests::conformance::target::unique_table;
use baton_tests::conformance::util::CountingStore;
use baton_tests::conformance::{drop_table, Backend};
use tokio::sync::watch;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Commands with the replies they got and how long the store took.
type Log = Vec<(Command, Reply, Duration)>;

/// A store that forwards to another and, while recording, keeps each command and its reply.
#[derive(Clone)]
struct Recorder {
    inner: Arc<dyn Store>,
    log: Arc<Mutex<Option<Log>>>,
}

impl Recorder {
    fn start(&self) {
        *self.slot() = Some(Vec::new());
    }

    fn stop(&self) -> Log {
        self.slot().take().unwrap_or_default()
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Log>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for Recorder {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            let recording = self.slot().is_some();
            let copy = recording.then(|| command.clone());
            let started = Instant::now();
            let reply = self.inner.execute(command).await;
            let took = started.elapsed();
            if let Some(command) = copy {
                if let Some(log) = self.slot().as_mut() {
                    log.push((command, reply.clone(), took));
                }
            }
            reply
        })
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Replays a captured command sequence with fresh values each iteration, chaining every
/// compare-and-set to the value the replay itself wrote last, so conditionals apply exactly as
/// they did when captured.
struct Replay {
    template: Vec<(Command, Reply)>,
    /// The value each `(row, column)` holds now, as far as the replay knows.
    last: HashMap<(String, String), String>,
}

impl Replay {
    fn new(template: Vec<(Command, Reply)>) -> Replay {
        let mut replay = Replay {
            template: Vec::new(),
            last: HashMap::new(),
        };
        // The table holds what the captured sequence left behind.
        for (command, _) in &template {
            replay.note(command);
        }
        replay.template = template;
        replay
    }

    /// Compare-and-sets that put every cell the template compare-and-sets without a TTL (the
    /// fencing counter) back to its value in `to`, where the replay changed it; noted as
    /// applied.
    fn restore(&mut self, to: &HashMap<(String, String), String>) -> Vec<Command> {
        let mut out = Vec::new();
        let mut restored = std::collections::HashSet::new();
        for (command, _) in &self.template {
            let counter = match command {
                Command::CompareAndSet {
                    row,
                    column,
                    ttl: None,
                    serial,
                    consistency,
                    ..
                } => Some((row, column, serial, consistency)),
                Command::Claim {
                    row,
                    counter,
                    serial,
                    consistency,
                    ..
                } => Some((row, counter, serial, consistency)),
                _ => None,
            };
            if let Some((row, column, serial, consistency)) = counter {
                let key = (row.clone(), column.clone());
                if let (Some(now), Some(then)) = (self.last.get(&key), to.get(&key)) {
                    if now != then && restored.insert(key.clone()) {
                        out.push(Command::CompareAndSet {
                            row: row.clone(),
                            column: column.clone(),
                            expected: now.clone(),
                            new: Some(then.clone()),
                            ttl: None,
                            serial: *serial,
                            consistency: *consistency,
                        });
                    }
                }
            }
        }
        for command in &out {
            self.note(command);
        }
        out
    }

    /// Tracks the values `command` writes.
    fn note(&mut self, command: &Command) {
        match command {
            Command::Put {
                row, column, value, ..
            }
            | Command::InsertIfAbsent {
                row, column, value, ..
            } => {
                self.last
                    .insert((row.clone(), column.clone()), value.clone());
            }
            Command::CompareAndSet {
                row, column, new, ..
            } => match new {
                Some(v) => {
                    self.last.insert((row.clone(), column.clone()), v.clone());
                }
                None => {
                    self.last.remove(&(row.clone(), column.clone()));
                }
            },
            Command::Delete { row, column, .. } | Command::Vacate { row, column, .. } => {
                self.last.remove(&(row.clone(), column.clone()));
            }
            Command::Claim {
                row,
                column,
                value,
                counter,
                counter_next,
                ..
            } => {
                self.last
                    .insert((row.clone(), column.clone()), value.clone());
                self.last
                    .insert((row.clone(), counter.clone()), counter_next.clone());
            }
            Command::GuardedSet {
                row, column, new, ..
            } => match new {
                Some(v) => {
                    self.last.insert((row.clone(), column.clone()), v.clone());
                }
                None => {
                    self.last.remove(&(row.clone(), column.clone()));
                }
            },
            Command::Batch { row, writes, .. } => {
                for w in writes {
                    match w {
                        Write::Put { column, value, .. } => {
                            self.last
                                .insert((row.clone(), column.clone()), value.clone());
                        }
                        Write::Delete { column } => {
                            self.last.remove(&(row.clone(), column.clone()));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The commands of iteration `i`, with the replies they should get.
    fn iteration(&mut self, i: u64) -> Vec<(Command, Reply)> {
        let fresh = |v: &str| format!("{v}#{i}");
        let mut out = Vec::with_capacity(self.template.len());
        for (command, reply) in self.template.clone() {
            let command = match command {
                Command::Put {
                    row,
                    column,
                    value,
                    ttl,
                    consistency,
                } => Command::Put {
                    value: fresh(&value),
                    row,
                    column,
                    ttl,
                    consistency,
                },
                Command::InsertIfAbsent {
                    row,
                    column,
                    value,
                    ttl,
                    serial,
                    consistency,
                } => Command::InsertIfAbsent {
                    value: fresh(&value),
                    row,
                    column,
                    ttl,
                    serial,
                    consistency,
                },
                Command::CompareAndSet {
                    row,
                    column,
                    expected,
                    new,
                    ttl,
                    serial,
                    consistency,
                } => Command::CompareAndSet {
                    expected: self
                        .last
                        .get(&(row.clone(), column.clone()))
                        .cloned()
                        .unwrap_or(expected),
                    new: new.as_deref().map(fresh),
                    row,
                    column,
                    ttl,
                    serial,
                    consistency,
                },
                Command::Claim {
                    row,
                    column,
                    value,
                    ttl,
                    counter,
                    counter_expected,
                    counter_next,
                    serial,
                    consistency,
                } => Command::Claim {
                    value: fresh(&value),
                    counter_expected: self
                        .last
                        .get(&(row.clone(), counter.clone()))
                        .cloned()
                        .or(counter_expected),
                    counter_next: fresh(&counter_next),
                    row,
                    column,
                    ttl,
                    counter,
                    serial,
                    consistency,
                },
                Command::GuardedSet {
                    row,
                    column,
                    expected,
                    new,
                    ttl,
                    guard,
                    guard_value,
                    serial,
                    consistency,
                } => Command::GuardedSet {
                    expected: self
                        .last
                        .get(&(row.clone(), column.clone()))
                        .cloned()
                        .unwrap_or(expected),
                    guard_value: self
                        .last
                        .get(&(row.clone(), guard.clone()))
                        .cloned()
                        .unwrap_or(guard_value),
                    new: new.as_deref().map(fresh),
                    row,
                    column,
                    ttl,
                    guard,
                    serial,
                    consistency,
                },
                Command::Batch {
                    row,
                    writes,
                    consistency,
                    after,
                } => Command::Batch {
                    after,
                    writes: writes
                        .into_iter()
                        .map(|w| match w {
                            Write::Put { column, value, ttl } => Write::Put {
                                value: fresh(&value),
                                column,
                                ttl,
                            },
                            other => other,
                        })
                        .collect(),
                    row,
                    consistency,
                },
                other => other,
            };
            self.note(&command);
            out.push((command, reply));
        }
        out
    }
}

/// Whether `got` is the same kind of reply as `want` (and, for conditionals, equally applied).
fn same_outcome(want: &Reply, got: &Reply) -> bool {
    match (want, got) {
        (Reply::Conditional { applied: a, .. }, Reply::Conditional { applied: b, .. })
        | (Reply::Guarded { applied: a, .. }, Reply::Guarded { applied: b, .. }) => a == b,
        (Reply::Failed(_), _) | (_, Reply::Failed(_)) => false,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// p50 and p99 of `samples`.
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    if samples.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99))
}

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
}

fn counts(value: &str) -> Result<Vec<usize>, Error> {
    Ok(value
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<usize>, _>>()?)
}

fn settings() -> Result<Settings, Error> {
    let mut s = Settings {
        iterations: 300,
        contended: Duration::from_secs(2),
        clients: vec![1, 8, 32],
        waiters: vec![2, 8, 32],
        handoffs: 200,
        workers: 2,
        stores: vec!["sqlite".into(), "postgres".into(), "mysql".into()],
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
            "--clients" => s.clients = counts(&value)?,
            "--waiters" => s.waiters = counts(&value)?,
            "--handoffs" => s.handoffs = value.parse()?,
            "--workers" => s.workers = value.parse()?,
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

/// The base URL of `store` (without `table=`), or `None` with the reason it is skipped.
fn base_url(store: &str) -> Result<String, String> {
    let var = match store {
        "sqlite" => "BATON_SQLITE_URL",
        "postgres" => "BATON_POSTGRES_URL",
        "mysql" => "BATON_MYSQL_URL",
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
    floor: (Duration, Duration),
    /// Two single-row `UPDATE` commits by a plain client, interleaved with the lock's iterations.
    updates: Option<(Duration, Duration)>,
    /// Acquisitions per second, Jain's fairness index and storage commands per acquisition,
    /// per client count.
    throughput: Vec<(usize, f64, f64, f64)>,
    /// Hand-off p50 and p99, per number of waiters.
    handoff: Vec<(usize, Duration, Duration)>,
}

async fn bench_strategy(
    backend: Backend,
    base: &str,
    strategy: Strategy,
    s: &Settings,
) -> Result<Row, Error> {
    let table = unique_table();
    let result = bench_table(base, &table, strategy, s).await;
    drop_table(backend, base, &table);
    result
}

async fn bench_table(
    base: &str,
    table: &str,
    strategy: Strategy,
    s: &Settings,
) -> Result<Row, Error> {
    let url = with_table(base, table);
    let recorder = Recorder {
        inner: baton::open_store(&url)?,
        log: Arc::new(Mutex::new(None)),
    };
    let locker = LockerBuilder::new(Arc::new(recorder.clone()))
        .strategy(strategy)
        .keep_alive(false)
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
        .map(|(c, r, _)| (c, r))
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
    let mut floor_samples = Vec::with_capacity(s.iterations as usize);
    for i in 0..s.iterations {
        recorder.start();
        let started = Instant::now();
        let mut guard = locker.lock("bench").await?;
        guard.release().await?;
        lock_samples.push(started.elapsed());
        let log = recorder.stop();
        if log.len() != round_trips {
            return Err(format!(
                "iteration {i} took {} round trips, the captured one {round_trips}",
                log.len()
            )
            .into());
        }
        in_store.push(log.iter().map(|(_, _, took)| *took).sum());
        for (command, _, _) in &log {
            replay.note(command);
        }
        let locker_state = replay.last.clone();

        let commands = replay.iteration(i);
        let started = Instant::now();
        for (command, want) in commands {
            let shown = format!("{command:?}");
            let got = recorder.inner.execute(command).await;
            if !same_outcome(&want, &got) {
                return Err(format!(
                    "the floor replay diverged: {shown} gave {got:?}, captured {want:?}"
                )
                .into());
            }
        }
        floor_samples.push(started.elapsed());
        if let Some(took) = plain.two_updates().await? {
            update_samples.push(took);
        }
        for command in replay.restore(&locker_state) {
            let reply = recorder.inner.execute(command).await;
            if !matches!(reply, Reply::Conditional { applied: true, .. }) {
                return Err(format!("restoring the fencing counter failed: {reply:?}").into());
            }
        }
    }
    let lock = percentiles(lock_samples);
    let in_store = percentiles(in_store);
    let floor = percentiles(floor_samples);
    let updates = (!update_samples.is_empty()).then(|| percentiles(update_samples));
    plain.finish().await?;
    let wire = wire_round_trips(&locker, base, s.iterations.min(200)).await?;

    let mut throughput = Vec::new();
    for &clients in &s.clients {
        let (counts, commands) = contended(&url, strategy, clients, s.contended).await?;
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
        let (p50, p99) = handoffs(&url, strategy, waiters, s.handoffs).await?;
        handoff.push((waiters, p50, p99));
    }
    Ok(Row {
        strategy,
        round_trips,
        wire,
        lock,
        in_store,
        floor,
        updates,
        throughput,
        handoff,
    })
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

/// A plain client on one connection of the same driver: two autocommitted single-row `UPDATE`s
/// of a table of its own, the cost of two durable commits with nothing else around them.
enum PlainClient {
    None,
    Postgres(sqlx::PgConnection, String),
    MySql(sqlx::MySqlConnection, String),
}

impl PlainClient {
    async fn connect(base: &str) -> Result<PlainClient, Error> {
        use sqlx::Connection;
        let table = format!("bench_plain_{}", std::process::id());
        let create = format!("CREATE TABLE IF NOT EXISTS {table} (id int primary key, v bigint)");
        let insert = format!("INSERT INTO {table} VALUES (1, 0)");
        Ok(match base.split("://").next() {
            Some("postgres" | "postgresql") => {
                let mut c = sqlx::PgConnection::connect(base).await?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "{create}; {insert} ON CONFLICT DO NOTHING"
                )))
                .execute(&mut c)
                .await?;
                PlainClient::Postgres(c, table)
            }
            Some("mysql" | "mariadb") => {
                let mut c = sqlx::MySqlConnection::connect(base).await?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "{create}; {insert} ON DUPLICATE KEY UPDATE v = v"
                )))
                .execute(&mut c)
                .await?;
                PlainClient::MySql(c, table)
            }
            _ => PlainClient::None,
        })
    }

    /// How long two single-row `UPDATE` commits took, one after the other.
    async fn two_updates(&mut self) -> Result<Option<Duration>, Error> {
        let started = Instant::now();
        match self {
            PlainClient::None => return Ok(None),
            PlainClient::Postgres(c, table) => {
                let sql = format!("UPDATE {table} SET v = v + 1 WHERE id = $1");
                for _ in 0..2 {
                    sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                        .bind(1)
                        .execute(&mut *c)
                        .await?;
                }
            }
            PlainClient::MySql(c, table) => {
                let sql = format!("UPDATE {table} SET v = v + 1 WHERE id = ?");
                for _ in 0..2 {
                    sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                        .bind(1)
                        .execute(&mut *c)
                        .await?;
                }
            }
        }
        Ok(Some(started.elapsed()))
    }

    async fn finish(self) -> Result<(), Error> {
        match self {
            PlainClient::None => {}
            PlainClient::Postgres(mut c, table) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {table}")))
                    .execute(&mut c)
                    .await?;
            }
            PlainClient::MySql(mut c, table) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE IF EXISTS {table}")))
                    .execute(&mut c)
                    .await?;
            }
        }
        Ok(())
    }
}

/// A locker as a separate process would have one: its own store and pool.
fn contender(url: &str, strategy: Strategy) -> Result<Locker, Error> {
    counted_contender(url, strategy).map(|(locker, _)| locker)
}

/// A [`contender`], and its store, which counts the commands the locker sends.
fn counted_contender(url: &str, strategy: Strategy) -> Result<(Locker, CountingStore), Error> {
    let store = CountingStore::new(baton::open_store(url)?);
    let locker = LockerBuilder::new(Arc::new(store.clone()))
        .strategy(strategy)
        .keep_alive(false)
        .ttl(Duration::from_secs(60))
        .retry(RetryPolicy {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(20),
            max_attempts: None,
            ..RetryPolicy::default()
        })
        .wait_timeout(Duration::from_secs(60))
        .build()?;
    Ok((locker, store))
}

/// The time from a release returning to the next holder's `lock()` returning, `n` times, with
/// `waiters + 1` clients looping lock, hold 1 ms, release on one name (so `waiters` wait while
/// one holds): p50 and p99.
async fn handoffs(
    url: &str,
    strategy: Strategy,
    waiters: usize,
    n: usize,
) -> Result<(Duration, Duration), Error> {
    let mut lockers = Vec::new();
    for _ in 0..=waiters {
        let locker = contender(url, strategy)?;
        locker.inspect("handoff").await?; // connect before the clock starts
        lockers.push(locker);
    }
    let released: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let samples: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = lockers
        .into_iter()
        .map(|locker| {
            let (released, samples, stop) = (
                Arc::clone(&released),
                Arc::clone(&samples),
                Arc::clone(&stop),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let mut guard = locker.lock("handoff").await?;
                    let granted = Instant::now();
                    if let Some(at) = released
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take()
                    {
                        let mut samples = samples.lock().unwrap_or_else(PoisonError::into_inner);
                        samples.push(granted.saturating_duration_since(at));
                        if samples.len() >= n {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    guard.release().await?;
                    *released.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                }
                Ok::<(), baton::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(percentiles(samples))
}

/// The acquisitions of each of `clients` clients looping lock + release on one lock for `for_`.
async fn contended(
    url: &str,
    strategy: Strategy,
    clients: usize,
    for_: Duration,
) -> Result<(Vec<u64>, u64), Error> {
    let mut lockers = Vec::new();
    let mut stores = Vec::new();
    for _ in 0..clients {
        let (locker, store) = counted_contender(url, strategy)?;
        locker.inspect("contended").await?; // connect before the clock starts
        lockers.push(locker);
        stores.push(store);
    }
    let sent = |stores: &[CountingStore]| stores.iter().map(CountingStore::executed).sum::<u64>();
    let before = sent(&stores);
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = lockers
        .into_iter()
        .map(|locker| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut count = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut guard = locker.lock("contended").await?;
                    count += 1;
                    guard.release().await?;
                }
                Ok::<u64, baton::Error>(count)
            })
        })
        .collect();
    tokio::time::sleep(for_).await;
    stop.store(true, Ordering::Relaxed);
    let mut counts = Vec::with_capacity(tasks.len());
    for task in tasks {
        counts.push(task.await??);
    }
    Ok((counts, sent(&stores) - before))
}

/// The database's own lock, `iterations` times on one connection: p50 and p99, and its name.
async fn db_lock(
    store: &str,
    base: &str,
    iterations: u64,
) -> Result<(&'static str, (Duration, Duration)), Error> {
    use sqlx::Connection;
    let mut samples = Vec::with_capacity(iterations as usize);
    let name = match store {
        "postgres" => {
            let mut conn = sqlx::PgConnection::connect(base).await?;
            for _ in 0..iterations + 20 {
                let started = Instant::now();
                sqlx::query("SELECT pg_advisory_lock($1)")
                    .bind(ADVISORY_KEY)
                    .execute(&mut conn)
                    .await?;
                sqlx::query("SELECT pg_advisory_unlock($1)")
                    .bind(ADVISORY_KEY)
                    .execute(&mut conn)
                    .await?;
                samples.push(started.elapsed());
            }
            "pg_advisory_lock+unlock"
        }
        "mysql" => {
            let mut conn = sqlx::MySqlConnection::connect(base).await?;
            for _ in 0..iterations + 20 {
                let started = Instant::now();
                sqlx::query("SELECT GET_LOCK(?, 10)")
                    .bind("baton-bench")
                    .execute(&mut conn)
                    .await?;
                sqlx::query("SELECT RELEASE_LOCK(?)")
                    .bind("baton-bench")
                    .execute(&mut conn)
                    .await?;
                samples.push(started.elapsed());
            }
            "GET_LOCK+RELEASE_LOCK"
        }
        _ => {
            use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
            use std::str::FromStr as _;
            let options = SqliteConnectOptions::from_str(base.split('?').next().unwrap_or(base))?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
            let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
            for _ in 0..iterations + 20 {
                let started = Instant::now();
                sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await?;
                sqlx::query("COMMIT").execute(&mut conn).await?;
                samples.push(started.elapsed());
            }
            "BEGIN IMMEDIATE+COMMIT"
        }
    };
    // The first 20 were warm-up.
    Ok((name, percentiles(samples.split_off(20))))
}

/// The same advisory lock + unlock from a raw blocking client, PostgreSQL's own `pgbench`
/// (libpq, prepared statements, one connection) on the same server for two seconds: its mean
/// latency, the floor a driver can reach. `None` when `pgbench` is not installed.
fn pgbench_advisory(url: &str) -> Option<Duration> {
    let script = std::env::temp_dir().join(format!("baton-bench-{}.sql", std::process::id()));
    std::fs::write(
        &script,
        format!("SELECT pg_advisory_lock({ADVISORY_KEY});\nSELECT pg_advisory_unlock({ADVISORY_KEY});\n"),
    )
    .ok()?;
    let out = std::process::Command::new("pgbench")
        .args(["-n", "-M", "prepared", "-c", "1", "-T", "2", "-f"])
        .arg(&script)
        .arg(url)
        .output()
        .ok();
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out?.stdout).into_owned();
    let ms: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("latency average = "))?
        .trim_end_matches(" ms")
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs_f64(ms / 1e3))
}

/// The PostgreSQL advisory lock key of the benchmark.
const ADVISORY_KEY: i64 = 0x0ba7_0b0b;

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
        let backend = match store.as_str() {
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
        let mut rows = Vec::new();
        for &strategy in &s.strategies {
            let row = bench_strategy(backend, &base, strategy, &s).await?;
            println!("{}", line(&row, db));
            rows.push(row);
        }
        let mut table = markdown(store, lock_name, db, &rows, &s);
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
        if store == "sqlite" && std::env::var("BATON_SQLITE_URL").is_err() {
            let path = base.trim_start_matches("sqlite://").to_owned();
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{path}{suffix}"));
            }
        }
    }
    println!("\n{}", tables.join("\n"));
    println!("{LEGEND}");
    Ok(())
}

const LEGEND: &str =
    "times in ms, p50/p99. wire rt: data segments the client sent to the server per \
uncontended lock+release (statements, pings, anything: `ss` data_segs_out), next to cmds: the \
kernel's storage commands. floor: the same commands issued straight to Store::execute; / floor and \
/ db lock: lock+release p50 over the floor's and over the database's own lock (which writes \
nothing durable). 2 UPDATEs: two single-row UPDATE commits by a plain sqlx connection, \
interleaved with the lock's iterations. per s: acquisitions per second with 1, 8 and 32 clients \
(each its own store and pool) looping lock+release on one name; Jain: Jain's fairness index of \
their counts (1 = even). hand-off: from a release returning to the next holder's lock() \
returning, with 2, 8 and 32 waiters (clients hold 1 ms). Retry policy of the contending clients: \
1 ms doubling to 20 ms, with jitter.";

/// One line of progress per strategy.
fn line(r: &Row, db: (Duration, Duration)) -> String {
    format!(
        "{:<14} wire {:>4} cmds {} | lock {} / {} | in store {} | floor {} | 2 UPDATEs {} | db lock {} | {}",
        r.strategy.as_str(),
        r.wire.map_or("-".into(), |w| format!("{w:.1}")),
        r.round_trips,
        ms(r.lock.0),
        ms(r.lock.1),
        ms(r.in_store.0),
        ms(r.floor.0),
        r.updates.map_or("-".into(), |u| ms(u.0)),
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

/// The store's Markdown table, for the README.
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
    out
}
