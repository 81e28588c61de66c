//! Benchmark of the Cassandra store, per strategy.
//!
//! ```text
//! bench_cassandra [--url URL] [--label NAME] [--iterations 300] [--contended-secs 10]
//!                 [--clients 1,8,32] [--waiters 2,8,32] [--handoffs 100]
//!                 [--strategies bakery,unique-insert,column-prefix] [--max-backoff-ms 1000]
//!                 [--history 10000] [--turns store|on|off[,...]] [--rounds 1]
//! ```
//!
//! `--url` defaults to `BATON_CASSANDRA_URL`. For each strategy, on a fresh table:
//! - **uncontended**: p50 and p99 of `Locker::lock` + `Guard::release` on a free lock, and the
//!   number of storage round trips one such cycle makes (counted by a recording store);
//! - **floor**: the same CQL statements issued raw on the same session
//!   ([`CassandraStore::execute_raw`]), cycle after cycle, on a row of their own (fencing-counter
//!   updates re-chained so that every one applies, as in the real cycle): what the cycle costs
//!   without the kernel, the driver loop and the guard;
//! - **history**: `--history` more lock + release cycles of one `Locker` on one name (0 skips
//!   them), and the median cycle of the last 500 over that of the first 500: tombstone hygiene
//!   shown as latency (deleted cells piling up in the row every acquire reads would make later
//!   cycles slower; `tests/tests/cassandra_tombstones.rs` counts the tombstones themselves);
//! - **contended**: with each of `--clients`, that many lockers (each its own session, as
//!   separate processes would have) locking and releasing one name for `--contended-secs`:
//!   acquisitions per second, fairness (Jain's index over the clients' counts, 1.0 = perfectly
//!   even) and the fewest and most acquisitions of one client; and the storage commands they
//!   all sent per acquisition, by the command's kind and the reply's (a claim refused, a look,
//!   a turn written: where the waiting goes), with the CPU time per acquisition of the nodes
//!   (every `java` process on the machine) and of the clients (this process);
//! - **hand-off**: with each of `--waiters`, p50 and p99 of the time from a release returning
//!   to the next holder's `lock()` returning, over `--handoffs` hand-offs (0 skips them; holders
//!   keep the lock 1 ms).
//!
//! The contending clients retry as the locker does by default (10 ms doubling, with jitter)
//! up to `--max-backoff-ms` (default 1 s, the default policy's cap).
//!
//! `--turns` lists variants of unique insert's turns (`LockOptions::turns`) to run one after
//! the other for each strategy: `store` (the default: as the store says, on for Cassandra),
//! `on` or `off`; each row's strategy column names its variant. `--rounds N` runs the whole
//! list N times, alternating, so that a variant and its baseline share the run's conditions.
//!
//! Output: each strategy's table rows as it finishes, then the Markdown tables (those of
//! docs/performance.md, "Cassandra").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton::cassandra::CassandraStore;
use baton::{Command, LockRequest, RetryPolicy, Store, StoreFuture, Strategy};
use baton_tests::conformance::target::unique_table;
use baton_tests::contention::{counts, flag_values, number, percentiles, Contention};

struct Args {
    url: String,
    label: String,
    iterations: usize,
    contended: Duration,
    clients: Vec<usize>,
    waiters: Vec<usize>,
    handoffs: usize,
    strategies: Vec<Strategy>,
    max_backoff: Duration,
    history: usize,
    turns: Vec<Option<bool>>,
    rounds: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: std::env::var("BATON_CASSANDRA_URL").unwrap_or_default(),
        label: String::from("cassandra"),
        iterations: 300,
        contended: Duration::from_secs(10),
        clients: vec![1, 8, 32],
        waiters: vec![2, 8, 32],
        handoffs: 100,
        strategies: Strategy::ALL.to_vec(),
        max_backoff: RetryPolicy::default().max,
        history: 10_000,
        turns: vec![None],
        rounds: 1,
    };
    for (flag, value) in flag_values(std::env::args().skip(1))? {
        let number = || number(&flag, &value);
        match flag.as_str() {
            "--url" => args.url = value.clone(),
            "--label" => args.label = value.clone(),
            "--iterations" => args.iterations = number()?.max(10) as usize,
            "--contended-secs" => args.contended = Duration::from_secs(number()?.max(1)),
            "--clients" => args.clients = counts(&flag, &value)?,
            "--waiters" => args.waiters = counts(&flag, &value)?,
            "--handoffs" => args.handoffs = number()? as usize,
            "--strategies" => {
                args.strategies = value
                    .split(',')
                    .map(|s| s.parse().map_err(|e: baton::Error| e.to_string()))
                    .collect::<Result<_, _>>()?
            }
            "--max-backoff-ms" => args.max_backoff = Duration::from_millis(number()?.max(2)),
            "--history" => args.history = number()? as usize,
            "--rounds" => args.rounds = number()?.max(1) as usize,
            "--turns" => {
                args.turns = value
                    .split(',')
                    .map(|v| match v {
                        "store" => Ok(None),
                        "on" => Ok(Some(true)),
                        "off" => Ok(Some(false)),
                        other => Err(format!("--turns: {other:?} is not store, on or off")),
                    })
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.url.is_empty() {
        return Err(String::from(
            "no cluster: pass --url or set BATON_CASSANDRA_URL (scripts/cassandra url1)",
        ));
    }
    Ok(args)
}

/// A store that forwards to the Cassandra store and, while on, records the commands.
struct Recorder {
    inner: CassandraStore,
    on: AtomicBool,
    log: Mutex<Vec<Command>>,
}

impl Store for Recorder {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        if self.on.load(Ordering::SeqCst) {
            self.log
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(command.clone());
        }
        self.inner.execute(command)
    }
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn waiting(&self) {
        self.inner.waiting()
    }
    fn honours_turns(&self) -> bool {
        self.inner.honours_turns()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// The locker's default backoff (10 ms doubling to 1 s, with jitter), with `max` as its cap.
/// Under contention on one name a long cap matters on Cassandra: every retry of a contender is
/// a Paxos round that competes with the holder's release.
fn quick_retry(max: Duration) -> RetryPolicy {
    RetryPolicy {
        max,
        ..RetryPolicy::default()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

struct Contended {
    clients: usize,
    per_s: f64,
    jain: f64,
    min: u64,
    max: u64,
    /// The commands all clients sent per acquisition, by kind and reply
    /// ([`baton_tests::contention::ContendedRun::per_acquisition`]).
    split: String,
    /// CPU per acquisition, the nodes' and the clients'
    /// ([`baton_tests::contention::ContendedRun::cpu_per_acquisition`]).
    cpu: String,
    /// The gaps between leases, by whether the releaser took the lock again
    /// ([`baton_tests::contention::HandOffs::summary`]).
    gaps: String,
}

struct Result1 {
    /// The strategy, and the turns variant when it was chosen (`--turns`).
    strategy: String,
    p50: Duration,
    p99: Duration,
    round_trips: usize,
    /// Lightweight transactions among them.
    lwts: usize,
    /// Requests sent to port 9042 per lock+release (`ss`), if measured.
    wire: Option<f64>,
    floor_p50: Duration,
    /// Per client count: acquisitions per second, Jain's index, and the fewest and most
    /// acquisitions of one client.
    throughput: Vec<Contended>,
    /// Per waiter count: hand-off p50 and p99.
    handoff: Vec<(usize, Duration, Duration)>,
    /// Median cycle of the first and of the last window of the history, and its cycles.
    history: Option<(Duration, Duration, usize)>,
}

impl Result1 {
    /// The Markdown row of the main table.
    fn row(&self, label: &str) -> String {
        let join = |parts: Vec<String>| parts.join(" / ");
        let per_s = join(
            self.throughput
                .iter()
                .map(|c| format!("{:.0}", c.per_s))
                .collect(),
        );
        let jain = join(
            self.throughput
                .iter()
                .filter(|c| c.clients > 1)
                .map(|c| format!("{:.2}", c.jain))
                .collect(),
        );
        let spread = self
            .throughput
            .iter()
            .rfind(|c| c.clients > 1)
            .map_or(String::from("-"), |c| format!("{}–{}", c.min, c.max));
        let handoff = self
            .handoff
            .iter()
            .map(|(_, p50, p99)| format!("{} / {}", ms(*p50), ms(*p99)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "| {label} | {} | {} | {} | {} | {} / {} | {} | {:.2} | {per_s} | {jain} | {spread} | {} |",
            &self.strategy,
            self.wire.map_or("-".into(), |w| format!("{w:.1}")),
            self.round_trips,
            self.lwts,
            ms(self.p50),
            ms(self.p99),
            ms(self.floor_p50),
            self.p50.as_secs_f64() / self.floor_p50.as_secs_f64(),
            if handoff.is_empty() { String::from("-") } else { handoff },
        )
    }

    /// The lines of the commands-per-acquisition table: where contending clients' commands
    /// went, per client count.
    fn split_rows(&self, label: &str) -> Vec<String> {
        self.throughput
            .iter()
            .map(|c| {
                format!(
                    "| {label} | {} | {} | {} | {} | {} |",
                    self.strategy, c.clients, c.cpu, c.gaps, c.split
                )
            })
            .collect()
    }

    /// The Markdown row of the history table, if the history ran.
    fn history_row(&self, label: &str) -> Option<String> {
        let (first, last, n) = self.history?;
        Some(format!(
            "| {label} | {} | {n} | {} | {} | {:.2} |",
            &self.strategy,
            ms(first),
            ms(last),
            last.as_secs_f64() / first.as_secs_f64()
        ))
    }
}

fn table_url(base: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}table={}", unique_table())
}

/// The fencing counter's column (every strategy's, with the default column prefix).
fn fence_column(_strategy: Strategy) -> &'static str {
    baton_kernel::strategy::COUNTER_COLUMN
}

/// `commands` moved to row `row`, with fencing-counter updates re-chained from `fence` so each
/// one applies (as it does in a real cycle); updates `fence` to the last value written.
fn rewrite(
    commands: &[Command],
    row: &str,
    strategy: Strategy,
    fence: &mut Option<String>,
    n: u64,
) -> Vec<Command> {
    let fence_col = fence_column(strategy);
    // The lock value the floor's claim wrote, for its guarded release.
    let claimed = &mut None::<String>;
    commands
        .iter()
        .map(|c| {
            let fence_update = match c {
                Command::InsertIfAbsent {
                    column,
                    ttl,
                    serial,
                    consistency,
                    ..
                }
                | Command::CompareAndSet {
                    column,
                    ttl,
                    serial,
                    consistency,
                    ..
                } if column == fence_col => Some((column.clone(), *ttl, *serial, *consistency)),
                _ => None,
            };
            if let Some((column, ttl, serial, consistency)) = fence_update {
                let next = format!("token={n} owner=floor:1:0000000000000001");
                let command = match fence.replace(next.clone()) {
                    None => Command::InsertIfAbsent {
                        row: row.to_owned(),
                        column,
                        value: next,
                        ttl,
                        serial,
                        consistency,
                    },
                    Some(expected) => Command::CompareAndSet {
                        row: row.to_owned(),
                        column,
                        expected,
                        new: Some(next),
                        ttl,
                        serial,
                        consistency,
                    },
                };
                return command;
            }
            let mut c = c.clone();
            match &mut c {
                // The claim and the guarded release chained like the counter updates above, so
                // that each applies as in the real cycle.
                Command::Claim {
                    row: r,
                    value,
                    counter_expected,
                    counter_next,
                    ..
                } => {
                    *r = row.to_owned();
                    *value = format!("owner=floor:1:0000000000000001 n={n}");
                    let next = format!("token={n} owner=floor:1:0000000000000001");
                    *counter_expected = fence.replace(next.clone());
                    *counter_next = next;
                    *claimed = Some(value.clone());
                }
                Command::GuardedSet {
                    row: r,
                    expected,
                    guard_value,
                    ..
                } => {
                    *r = row.to_owned();
                    if let Some(v) = claimed.take() {
                        *expected = v;
                    }
                    if let Some(f) = fence.clone() {
                        *guard_value = f;
                    }
                }
                Command::Read { row: r, .. }
                | Command::Put { row: r, .. }
                | Command::Delete { row: r, .. }
                | Command::Vacate { row: r, .. }
                | Command::Batch { row: r, .. }
                | Command::InsertIfAbsent { row: r, .. }
                | Command::CompareAndSet { row: r, .. } => *r = row.to_owned(),
                _ => {}
            }
            c
        })
        .collect()
}

async fn bench(args: &Args, strategy: Strategy, turns: Option<bool>) -> Result<Result1, String> {
    let url = table_url(&args.url);
    let store = CassandraStore::open(&url).map_err(|e| e.to_string())?;
    store.ensure_schema().await.map_err(|e| e.to_string())?;
    let recorder = Arc::new(Recorder {
        inner: store.clone(),
        on: AtomicBool::new(false),
        log: Mutex::new(Vec::new()),
    });
    let mut builder = baton::LockerBuilder::new(recorder.clone())
        .strategy(strategy)
        .ttl(Duration::from_secs(10))
        .retry(quick_retry(args.max_backoff));
    if let Some(on) = turns {
        builder = builder.turns(on);
    }
    let locker = builder.build().map_err(|e| e.to_string())?;

    // Record one uncontended cycle (after a warm-up) to learn its statements.
    let warm = 20;
    for i in 0..warm {
        recorder.on.store(i + 1 == warm, Ordering::SeqCst);
        let mut guard = locker
            .lock_with("uncontended", LockRequest::new())
            .await
            .map_err(|e| format!("lock: {e}"))?;
        guard.release().await.map_err(|e| format!("release: {e}"))?;
    }
    recorder.on.store(false, Ordering::SeqCst);
    let cycle = recorder
        .log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();

    // Uncontended lock + release, alternating with the floor (the same statements, raw, on the
    // same session, on a row of their own), so both see the same cluster state and noise.
    let floor_row = format!("floor-{strategy}");
    let mut fence = None;
    let mut times = Vec::with_capacity(args.iterations);
    let mut floor = Vec::with_capacity(args.iterations);
    for i in 0..args.iterations {
        let started = Instant::now();
        let mut guard = locker
            .lock_with("uncontended", LockRequest::new())
            .await
            .map_err(|e| format!("lock: {e}"))?;
        guard.release().await.map_err(|e| format!("release: {e}"))?;
        times.push(started.elapsed());

        let commands = rewrite(&cycle, &floor_row, strategy, &mut fence, i as u64 + 1);
        let started = Instant::now();
        for c in &commands {
            store
                .execute_raw(c)
                .await
                .map_err(|e| format!("raw {c:?}: {e}"))?;
        }
        floor.push(started.elapsed());
    }
    let (p50, p99) = percentiles(times);
    let floor_p50 = percentiles(floor).0;

    // Requests on the wire per cycle (every connection to the port counts: nothing else runs).
    let port = baton_tests::wire::port_of(&args.url, 9042);
    let wire = match baton_tests::wire::data_segments_to(port) {
        Some(before) => {
            let n = args.iterations.clamp(1, 200);
            for _ in 0..n {
                let mut guard = locker
                    .lock_with("uncontended", LockRequest::new())
                    .await
                    .map_err(|e| format!("lock: {e}"))?;
                guard.release().await.map_err(|e| format!("release: {e}"))?;
            }
            baton_tests::wire::data_segments_to(port)
                .map(|after| after.saturating_sub(before) as f64 / n as f64)
        }
        None => None,
    };

    // History: many cycles on one name; does the last window run as fast as the first?
    let history = if args.history == 0 {
        None
    } else {
        let mut cycles = Vec::with_capacity(args.history);
        for _ in 0..args.history {
            let started = Instant::now();
            let mut guard = locker
                .lock("history")
                .await
                .map_err(|e| format!("lock: {e}"))?;
            guard.release().await.map_err(|e| format!("release: {e}"))?;
            cycles.push(started.elapsed());
        }
        let window = (args.history / 20).clamp(1, 500);
        let first = percentiles(cycles[..window].to_vec()).0;
        let last = percentiles(cycles[cycles.len() - window..].to_vec()).0;
        Some((first, last, args.history))
    };

    // Contended: clients on one name, each with its own session; then hand-offs.
    let contention = Contention::new(&url, strategy)
        .server("java")
        .retry(quick_retry(args.max_backoff))
        .turns(turns);
    let mut throughput = Vec::with_capacity(args.clients.len());
    for &clients in &args.clients {
        let run = contention
            .contended_counted(clients, args.contended)
            .await
            .map_err(|e| format!("{clients} contending clients: {e}"))?;
        let counts = &run.counts;
        throughput.push(Contended {
            clients,
            per_s: counts.iter().sum::<u64>() as f64 / args.contended.as_secs_f64(),
            jain: baton_tests::wire::jain(counts),
            min: counts.iter().copied().min().unwrap_or(0),
            max: counts.iter().copied().max().unwrap_or(0),
            split: run.per_acquisition(),
            cpu: run.cpu_per_acquisition(),
            gaps: run.handoffs.summary(),
        });
    }
    let mut handoff = Vec::new();
    if args.handoffs > 0 {
        for &waiters in &args.waiters {
            let (p50, p99) = contention
                .handoffs(waiters, args.handoffs)
                .await
                .map_err(|e| format!("hand-offs with {waiters} waiters: {e}"))?;
            handoff.push((waiters, p50, p99));
        }
    }
    Ok(Result1 {
        strategy: match turns {
            None => strategy.to_string(),
            Some(true) => format!("{strategy}, turns on"),
            Some(false) => format!("{strategy}, turns off"),
        },
        p50,
        p99,
        round_trips: cycle.len(),
        lwts: cycle.iter().filter(|c| c.is_conditional()).count(),
        wire,
        floor_p50,
        throughput,
        handoff,
        history,
    })
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench_cassandra: {e}");
            std::process::exit(2);
        }
    };
    println!("{}", baton_tests::provenance::line("bench_cassandra"));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench_cassandra: no runtime: {e}");
            std::process::exit(2);
        }
    };
    let mut results = Vec::new();
    let runs = (0..args.rounds).flat_map(|_| {
        args.strategies
            .iter()
            .flat_map(|&s| args.turns.iter().map(move |&t| (s, t)))
    });
    for (strategy, turns) in runs {
        match runtime.block_on(bench(&args, strategy, turns)) {
            Ok(r) => {
                // Progress: each strategy's rows as it finishes (the tables below repeat them).
                println!("{}", r.row(&args.label));
                if let Some(row) = r.history_row(&args.label) {
                    println!("{row}");
                }
                results.push(r);
            }
            Err(e) => {
                eprintln!("bench_cassandra: {strategy}: {e}");
                std::process::exit(1);
            }
        }
    }
    println!();
    let list = |xs: &[usize]| {
        xs.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let many: Vec<usize> = args.clients.iter().copied().filter(|&c| c > 1).collect();
    println!(
        "| cluster | strategy | wire rt | cmds | LWTs | lock+release p50 / p99 | floor p50 | / floor | per s, {} clients | Jain {} | min–max per client, {} | hand-off p50 / p99, {} waiters |",
        list(&args.clients),
        list(&many),
        many.last().map_or(String::from("-"), |c| format!("{c} clients")),
        if args.handoffs > 0 { list(&args.waiters) } else { String::from("no") },
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in &results {
        println!("{}", r.row(&args.label));
    }
    println!();
    println!("Storage commands per acquisition, by the command's kind and the reply's, all contending clients:");
    println!();
    println!("| cluster | strategy | clients | CPU per acquisition (nodes: every `java` process) | gaps between leases | commands per acquisition |");
    println!("| --- | --- | ---: | --- | --- | --- |");
    for r in &results {
        for row in r.split_rows(&args.label) {
            println!("{row}");
        }
    }
    let history: Vec<String> = results
        .iter()
        .filter_map(|r| r.history_row(&args.label))
        .collect();
    if !history.is_empty() {
        println!();
        println!("| cluster | strategy | history cycles | first median ms | last median ms | last / first |");
        println!("| --- | --- | --- | --- | --- | --- |");
        for row in history {
            println!("{row}");
        }
    }
}
