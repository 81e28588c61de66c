//! Benchmark of baton at scale: many held locks on one table, and many clients on one name.
//!
//! ```text
//! bench_scale --url URL [--label NAME] [--held 100000] [--holders 4] [--ttl-secs 60]
//!             [--samples 500] [--window-secs TTL/3] [--expired yes|no]
//!             [--curve 1,2,4,8,16,32,64] [--curve-secs 5] [--strategy unique-insert]
//!             [--server postgres|mariadbd|java|none] [--baton PATH] [--plots DIR]
//! ```
//!
//! On a table of its own (`table=` added to `--url`), in this order:
//! - **idle**: p50 and p99 of `Locker::lock` + `Guard::release` of `--samples` new names, one
//!   after the other, on the empty table;
//! - **curve**: then, with each of `--curve` clients looping lock + release on one name for
//!   `--curve-secs` (each its own store and connection): acquisitions per second, Jain's
//!   fairness index and the fewest and most of one client;
//! - **fill**: `--holders` holder processes (this program again, `hold`) take `--held` distinct
//!   names between them, 64 at a time each, with keep-alive on and a TTL of `--ttl-secs`, and
//!   keep them: progress on stderr each second;
//! - **renewals**: for one renewal period from the end of the fill (a third of the TTL, or
//!   `--window-secs`), in which every lease renews once: the storage commands the holders send
//!   (all renewals; one renewal is two), per second, the leases they lost by then (a renewal
//!   that did not get through in time), those commands by kind and reply (a timed-out
//!   compare-and-set settled by a read, say), and the CPU of the database server (every process
//!   named `--server`; by default from the URL's scheme) and of the holders, in cores;
//! - **held**: meanwhile, the same p50 and p99 of new names beside the held ones;
//! - **listing**: `baton locks --json` over the full table (its time, and how many it listed;
//!   on Cassandra also with `--consistency one`),
//!   then `baton purge --json` over it while every name is held (a scan that removes nothing);
//! - **expired** (unless `--expired no`): the holders exit without releasing, their leases run
//!   out (`--ttl-secs`), then `baton purge --json` (its time, how many entries it removed, and
//!   how many names `baton locks` lists after it). On Cassandra the cells' own TTLs remove
//!   them, so there is nothing left to purge.
//!
//! Output: the Markdown tables (those of docs/performance.md, "Scale"), headed by the commit
//! (`git describe` of the working directory); with `--plots DIR`, the curve as
//! `DIR/scale-LABEL-rate.svg` and `DIR/scale-LABEL-fairness.svg`.
//!
//! A holder is `bench_scale hold URL PREFIX COUNT TTL_SECS STRATEGY`.
//!
//! `--baton` is the `baton` command to time (default: `baton` beside this program, as
//! `cargo build --release -p baton-cli` leaves it). The table is left in the database, empty.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command as Process, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{Guard, Locker, LockerBuilder, Strategy};
use baton_tests::conformance::target::unique_table;
use baton_tests::conformance::util::CountingStore;
use baton_tests::contention::{counts, flag_values, number, percentiles, Contention};
use baton_tests::cpu::{process_ns, server_ns};
use baton_tests::plot::{svg, Series};
use baton_tests::wire::jain;

type Failure = Box<dyn std::error::Error + Send + Sync>;

struct Args {
    url: String,
    label: String,
    held: usize,
    holders: usize,
    ttl: Duration,
    samples: usize,
    window: Option<Duration>,
    expired: bool,
    curve: Vec<usize>,
    curve_secs: Duration,
    strategy: Strategy,
    server: Option<String>,
    baton: std::path::PathBuf,
    plots: Option<std::path::PathBuf>,
}

fn parse_args(argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.join("baton")))
        .unwrap_or_else(|| "baton".into());
    let mut args = Args {
        url: String::new(),
        label: String::new(),
        held: 100_000,
        holders: 4,
        ttl: Duration::from_secs(60),
        samples: 500,
        window: None,
        expired: true,
        curve: vec![1, 2, 4, 8, 16, 32, 64],
        curve_secs: Duration::from_secs(5),
        strategy: Strategy::UniqueInsert,
        server: None,
        baton: beside,
        plots: None,
    };
    for (flag, value) in flag_values(argv)? {
        let number = || number(&flag, &value);
        match flag.as_str() {
            "--url" => args.url = value.clone(),
            "--label" => args.label = value.clone(),
            "--held" => args.held = number()? as usize,
            "--holders" => args.holders = number()?.max(1) as usize,
            "--ttl-secs" => args.ttl = Duration::from_secs(number()?.max(3)),
            "--samples" => args.samples = number()?.max(10) as usize,
            "--window-secs" => args.window = Some(Duration::from_secs(number()?.max(1))),
            "--expired" => {
                args.expired = match value.as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(format!("--expired takes yes or no, not {value:?}")),
                }
            }
            "--curve" => args.curve = counts(&flag, &value)?,
            "--curve-secs" => args.curve_secs = Duration::from_secs(number()?.max(1)),
            "--strategy" => {
                args.strategy = value.parse().map_err(|e: baton::Error| e.to_string())?
            }
            "--server" => args.server = Some(value.clone()).filter(|v| v != "none"),
            "--baton" => args.baton = value.into(),
            "--plots" => args.plots = Some(value.into()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.url.is_empty() {
        return Err(String::from("no store: pass --url"));
    }
    let scheme = args.url.split(':').next().unwrap_or_default().to_owned();
    if args.label.is_empty() {
        args.label.clone_from(&scheme);
    }
    if args.server.is_none() {
        args.server = match scheme.as_str() {
            "postgres" | "postgresql" => Some("postgres".into()),
            "mysql" | "mariadb" => Some("mariadbd".into()),
            "cassandra" => Some("java".into()),
            _ => None,
        };
    }
    Ok(args)
}

/// `url` with `table=NAME` added.
fn with_table(url: &str, table: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}table={table}")
}

/// `Locker::lock` + `Guard::release` of `n` new names (`PREFIX-i`), one after the other: p50
/// and p99.
async fn new_names(
    locker: &Locker,
    prefix: &str,
    n: usize,
) -> Result<(Duration, Duration), Failure> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        let mut guard = locker.lock(&format!("{prefix}-{i}")).await?;
        guard.release().await?;
        samples.push(start.elapsed());
    }
    Ok(percentiles(samples))
}

/// A holder process: takes `count` names `PREFIX-i` (64 at a time) with keep-alive on, saying
/// `got N` on stdout every second meanwhile and `held N` once it holds them all, then every second `sent N` (the storage commands sent so far) and `lost
/// N` (the leases its keep-alive could not keep), until
/// its stdin closes; then it exits at once, releasing nothing (its leases run out).
async fn hold(
    url: &str,
    prefix: &str,
    count: usize,
    ttl: Duration,
    strategy: Strategy,
) -> Result<(), Failure> {
    let store = CountingStore::new(baton::open_store(url)?);
    let locker = LockerBuilder::new(Arc::new(store.clone()))
        .strategy(strategy)
        .keep_alive(true)
        .ttl(ttl)
        .build()?;
    let mut guards: Vec<Guard> = Vec::with_capacity(count);
    let mut next = 0;
    let mut said = Instant::now();
    while next < count {
        if said.elapsed() >= Duration::from_secs(1) {
            println!("got {}", guards.len());
            said = Instant::now();
        }
        let batch: Vec<_> = (next..count.min(next + 64))
            .map(|i| {
                let locker = locker.clone();
                let name = format!("{prefix}-{i}");
                tokio::spawn(async move { locker.lock(&name).await })
            })
            .collect();
        next += batch.len();
        for task in batch {
            guards.push(task.await??);
        }
    }
    println!("held {}", guards.len());
    // Stdin closing (the bench ending or dying) ends the holder.
    let (closed_tx, mut closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        let _ = closed_tx.send(());
    });
    loop {
        println!("sent {}", store.executed());
        let kinds: Vec<String> = store
            .answered_by_kind()
            .into_iter()
            .map(|(kind, n)| format!("{kind}={n}"))
            .collect();
        println!("kinds {}", kinds.join(", "));
        println!(
            "lost {}",
            guards.iter().filter(|g| g.loss().is_some()).count()
        );
        std::io::stdout().flush()?;
        tokio::select! {
            _ = &mut closed => break,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
    // Leave without dropping the guards: a drop would release them.
    std::process::exit(0);
}

/// The holder processes and what they last said.
struct Holders {
    children: Vec<Child>,
    held: Vec<Arc<AtomicU64>>,
    sent: Vec<Arc<AtomicU64>>,
    lost: Vec<Arc<AtomicU64>>,
    /// Each holder's last `kinds` line.
    kinds: Vec<Arc<std::sync::Mutex<String>>>,
}

impl Holders {
    fn start(args: &Args, url: &str) -> Result<Holders, Failure> {
        let exe = std::env::current_exe()?;
        let mut holders = Holders {
            children: Vec::new(),
            held: Vec::new(),
            sent: Vec::new(),
            lost: Vec::new(),
            kinds: Vec::new(),
        };
        for h in 0..args.holders {
            let share = args.held / args.holders + usize::from(h < args.held % args.holders);
            let mut child = Process::new(&exe)
                .args(["hold", url, &format!("held{h}"), &share.to_string()])
                .arg(args.ttl.as_secs().to_string())
                .arg(args.strategy.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()?;
            let [held, sent, lost] = [(); 3].map(|()| Arc::new(AtomicU64::new(0)));
            let kinds = Arc::new(std::sync::Mutex::new(String::new()));
            let out = child.stdout.take().ok_or("a holder without stdout")?;
            let (h2, s2, l2) = (Arc::clone(&held), Arc::clone(&sent), Arc::clone(&lost));
            let k2 = Arc::clone(&kinds);
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some(text) = line.strip_prefix("kinds ") {
                        if let Ok(mut k) = k2.lock() {
                            text.clone_into(&mut k);
                        }
                        continue;
                    }
                    let (word, n) = line.split_once(' ').unwrap_or((&line, "0"));
                    let n = n.parse().unwrap_or(0);
                    match word {
                        "got" | "held" => h2.store(n, Ordering::SeqCst),
                        "sent" => s2.store(n, Ordering::SeqCst),
                        "lost" => l2.store(n, Ordering::SeqCst),
                        _ => {}
                    }
                }
            });
            holders.children.push(child);
            holders.held.push(held);
            holders.sent.push(sent);
            holders.lost.push(lost);
            holders.kinds.push(kinds);
        }
        Ok(holders)
    }

    /// The commands all holders had sent and seen answered, by the command's kind and the
    /// reply's, as they last said.
    fn kinds(&self) -> std::collections::BTreeMap<String, u64> {
        let mut sum = std::collections::BTreeMap::new();
        for said in &self.kinds {
            let text = said.lock().map(|t| t.clone()).unwrap_or_default();
            for (kind, n) in text.split(", ").filter_map(|kv| kv.rsplit_once('=')) {
                *sum.entry(kind.to_owned()).or_insert(0) += n.parse::<u64>().unwrap_or(0);
            }
        }
        sum
    }

    fn total(counters: &[Arc<AtomicU64>]) -> u64 {
        counters.iter().map(|c| c.load(Ordering::SeqCst)).sum()
    }

    /// Whether every holder is still running.
    fn alive(&mut self) -> bool {
        self.children
            .iter_mut()
            .all(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Their CPU time so far, in nanoseconds.
    fn cpu_ns(&self) -> u64 {
        self.children
            .iter()
            .map(|c| process_ns(&c.id().to_string()))
            .sum()
    }

    /// Closes their stdin and waits for them to exit.
    fn stop(mut self) -> Result<(), Failure> {
        for child in &mut self.children {
            drop(child.stdin.take());
        }
        for child in &mut self.children {
            child.wait()?;
        }
        Ok(())
    }
}

/// Runs the `baton` command with `sub` on `url`: a table cell with its time in seconds and the
/// occurrences of `needle` in its output, or with its time and exit status when it fails (the
/// failure is the figure: its message is on stderr). Not finding the command fails the bench.
fn timed_baton(args: &Args, url: &str, sub: &[&str], needle: &str) -> Result<String, Failure> {
    let start = Instant::now();
    let out = Process::new(&args.baton)
        .arg("--store")
        .arg(url)
        .args(sub)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| {
            format!(
                "{}: {e} (build it: cargo build --release -p baton-cli, or pass --baton)",
                args.baton.display()
            )
        })?;
    let took = start.elapsed().as_secs_f64();
    if !out.status.success() {
        eprintln!("bench_scale: baton {sub:?} failed: {}", out.status);
        return Ok(format!("failed after {took:.1} ({})", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(format!("{took:.2} ({})", text.matches(needle).count()))
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

async fn bench(args: Args) -> Result<(), Failure> {
    let table = unique_table();
    let url = with_table(&args.url, &table);
    let locker = LockerBuilder::new(baton::open_store(&url)?)
        .strategy(args.strategy)
        .keep_alive(false)
        .build()?;
    locker.inspect("warm-up").await?; // connect, and create the table
    eprintln!(
        "bench_scale: table {table}; idle: {} new names",
        args.samples
    );
    let idle = new_names(&locker, "idle", args.samples).await?;

    // The curve on the table still empty: what one name gives, apart from the held ones.
    let mut curve = Vec::new();
    for &clients in &args.curve {
        eprintln!("bench_scale: {clients} clients on one name");
        // A client that gives up (the store overloaded) ends that point, not the bench.
        match Contention::new(&url, args.strategy)
            .contended(clients, args.curve_secs)
            .await
        {
            Ok((per_client, _)) => curve.push((clients, Ok(per_client))),
            Err(e) => {
                eprintln!("bench_scale: {clients} clients: {e}");
                curve.push((clients, Err(e.to_string())));
            }
        }
    }

    let fill_start = Instant::now();
    let mut holders = Holders::start(&args, &url)?;
    let mut shown = Instant::now();
    loop {
        let held = Holders::total(&holders.held);
        if held >= args.held as u64 {
            break;
        }
        if !holders.alive() {
            return Err("a holder process exited before holding its names".into());
        }
        if shown.elapsed() >= Duration::from_secs(1) {
            eprintln!(
                "bench_scale: filling: {held} of {} names held, {:.0} s",
                args.held,
                fill_start.elapsed().as_secs_f64()
            );
            shown = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fill = fill_start.elapsed();
    eprintln!(
        "bench_scale: {} held after {:.1} s",
        args.held,
        fill.as_secs_f64()
    );
    // One renewal period from the end of the fill: every lease renews once in it (each
    // renews a third of its validity after its last renewal, and all were taken before it
    // began), so the rate is the steady one, and the new names are timed beside it.
    let window = args.window.unwrap_or(args.ttl / 3);
    eprintln!(
        "bench_scale: renewals for {} s, new names beside them",
        window.as_secs()
    );
    let server = args.server.as_deref();
    let (kinds0, sent0, server0, holders0, at0) = (
        holders.kinds(),
        Holders::total(&holders.sent),
        server.and_then(server_ns),
        holders.cpu_ns(),
        Instant::now(),
    );
    let loaded = new_names(&locker, "loaded", args.samples).await?;
    tokio::time::sleep(window.saturating_sub(at0.elapsed())).await;
    let secs = at0.elapsed().as_secs_f64();
    let renewals = (Holders::total(&holders.sent) - sent0) as f64 / secs;
    let by_kind: Vec<String> = holders
        .kinds()
        .into_iter()
        .map(|(kind, n)| {
            let before = kinds0.get(&kind).copied().unwrap_or(0);
            (kind, n.saturating_sub(before))
        })
        .filter(|(_, n)| *n > 0)
        .map(|(kind, n)| format!("{kind} {:.1}", n as f64 / secs))
        .collect();
    let server_cores = match (server.and_then(server_ns), server0) {
        (Some(b), Some(a)) => format!("{:.2}", b.saturating_sub(a) as f64 / 1e9 / secs),
        _ => String::from("n/a"),
    };
    let holder_cores = holders.cpu_ns().saturating_sub(holders0) as f64 / 1e9 / secs;
    let lost = Holders::total(&holders.lost);

    eprintln!("bench_scale: baton locks, then baton purge, over the full table");
    let mut listing = timed_baton(&args, &url, &["locks", "--json"], "\"name\":")?;
    if url.starts_with("cassandra://") {
        // Also from one replica: what an operator does when a quorum's range reads time out.
        let sub = ["locks", "--json", "--consistency", "one"];
        listing = format!(
            "{listing}; at ONE {}",
            timed_baton(&args, &url, &sub, "\"name\":")?
        );
    }
    let purge_held = timed_baton(&args, &url, &["purge", "--json"], "\"name\":")?;
    holders.stop()?;
    let purge_expired = if args.expired {
        eprintln!(
            "bench_scale: holders gone; waiting {} s for their leases to end",
            args.ttl.as_secs()
        );
        tokio::time::sleep(args.ttl + Duration::from_secs(1)).await;
        let purged = timed_baton(&args, &url, &["purge", "--json"], "\"name\":")?;
        // What purge left: the listing shows no held name any more.
        let left = timed_baton(&args, &url, &["locks", "--json"], "\"name\":")?;
        format!("{purged}; then `baton locks` {left}")
    } else {
        String::from("not run")
    };

    println!(
        "\nbench_scale at {}, {} holders, TTL {} s, {}\n",
        baton_tests::provenance::commit(),
        args.holders,
        args.ttl.as_secs(),
        args.strategy
    );
    println!("| store | held | new name p50 / p99, idle (ms) | with the held (ms) | fill (s) | renewal commands/s | server CPU (cores) | holders CPU (cores) | leases lost | `baton locks` (s, listed) | `baton purge`, all held (s, removed) | `baton purge`, all expired (s, removed) |");
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    println!(
        "| {} | {} | {} / {} | {} / {} | {:.1} | {:.0} | {} | {:.2} | {lost} | {listing} | {purge_held} | {purge_expired} |",
        args.label,
        args.held,
        ms(idle.0),
        ms(idle.1),
        ms(loaded.0),
        ms(loaded.1),
        fill.as_secs_f64(),
        renewals,
        server_cores,
        holder_cores,
    );
    println!(
        "\nThe renewal period's commands by kind and reply, per s (all holders): {}",
        by_kind.join("; ")
    );
    println!("\n| store | clients | per s | Jain | min–max per client |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let secs = args.curve_secs.as_secs_f64();
    let mut rate = Vec::new();
    let mut fairness = Vec::new();
    for (clients, per_client) in &curve {
        let per_client = match per_client {
            Ok(per_client) => per_client,
            Err(e) => {
                let what = e.split(':').next().unwrap_or_default();
                println!("| {} | {clients} | failed: {what} | | |", args.label);
                continue;
            }
        };
        let total: u64 = per_client.iter().sum();
        let (min, max) = (
            per_client.iter().min().copied().unwrap_or(0),
            per_client.iter().max().copied().unwrap_or(0),
        );
        let j = jain(per_client);
        println!(
            "| {} | {clients} | {:.0} | {j:.2} | {min}–{max} |",
            args.label,
            total as f64 / secs
        );
        rate.push((*clients as f64, total as f64 / secs));
        fairness.push((*clients as f64, j));
    }
    if let Some(dir) = &args.plots {
        std::fs::create_dir_all(dir)?;
        let name = |what: &str| dir.join(format!("scale-{}-{what}.svg", args.label));
        let title = format!("{}, {}: clients on one name", args.label, args.strategy);
        let one = |points| {
            [Series {
                name: args.strategy.to_string(),
                points,
            }]
        };
        std::fs::write(
            name("rate"),
            svg(&title, "clients", "acquisitions per second", &one(rate)),
        )?;
        std::fs::write(
            name("fairness"),
            svg(&title, "clients", "Jain's index", &one(fairness)),
        )?;
        eprintln!("bench_scale: plots in {}", dir.display());
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let mut argv = std::env::args().skip(1).peekable();
    let result = if argv.peek().map(String::as_str) == Some("hold") {
        let v: Vec<String> = argv.skip(1).collect();
        let number = |i: usize| v.get(i).and_then(|n| n.parse::<u64>().ok());
        let strategy = v.get(4).and_then(|s| s.parse::<Strategy>().ok());
        match (v.first(), v.get(1), number(2), number(3), strategy) {
            (Some(url), Some(prefix), Some(count), Some(ttl), Some(strategy)) => {
                let (count, ttl) = (count as usize, Duration::from_secs(ttl));
                hold(url, prefix, count, ttl, strategy).await
            }
            _ => Err("usage: bench_scale hold URL PREFIX COUNT TTL_SECS STRATEGY".into()),
        }
    } else {
        match parse_args(argv) {
            Ok(args) => bench(args).await,
            Err(e) => Err(e.into()),
        }
    };
    if let Err(e) = result {
        eprintln!("bench_scale: {e}");
        std::process::exit(1);
    }
}
