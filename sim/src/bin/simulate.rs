//! `simulate`: runs the deterministic simulator from the command line.
//!
//! ```text
//! cargo run --release -p baton-sim --bin simulate -- [--strategy S|all] [--seed N | --seeds COUNT [--from N]]
//!                                                      [--sabotage NAME] [--profile P] [--modes M] [--threads T] [--verbose]
//! ```
//! `--seeds 1000000` is the long mode: a progress bar on standard error, then a summary table
//! (seeds per second, grants, violations), the faults injected by class, what releases
//! returned, and the object workload's writes (applied, refused, ambiguous). `--profile P` runs only the seeds of one fault profile (`--seeds` of them).
//! `--modes M` forces every run's modes (issue 43): `readers-writers` or `semaphore:N` (bakery
//! and column prefix), `exclusive`, or `mixed` (the default: drawn per seed).
//! `--seed N --verbose` replays one run and prints it. Exits 1 if any run failed.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant as WallInstant;

use baton_kernel::{Sabotage, Strategy};
use baton_sim::{self as sim, parse_sabotage, replay_command, FaultCounts, Tally};

struct Args {
    strategies: Vec<Strategy>,
    seed: Option<u64>,
    from: u64,
    seeds: u64,
    sabotage: Sabotage,
    /// Only the seeds of this fault profile (an index into `PROFILES`).
    profile: Option<usize>,
    /// Every run with these modes (issue 43); `None`: drawn per seed.
    modes: Option<sim::Modes>,
    threads: usize,
    verbose: bool,
}

const USAGE: &str = "usage: simulate [--strategy bakery|unique-insert|column-prefix|all] [--seed N | --seeds COUNT [--from N]] [--sabotage NAME] [--profile P] [--modes mixed|exclusive|readers-writers|semaphore:N] [--threads T] [--verbose]";

fn parse() -> Result<Args, String> {
    let mut a = Args {
        strategies: Strategy::ALL.to_vec(),
        seed: None,
        from: 0,
        seeds: 10_000,
        sabotage: Sabotage::None,
        profile: None,
        modes: None,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        verbose: false,
    };
    let number = |flag: &str, v: String| {
        v.parse::<u64>()
            .map_err(|_| format!("{flag} takes a number, not {v:?}"))
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--strategy" => {
                let v = value()?;
                a.strategies = if v == "all" {
                    Strategy::ALL.to_vec()
                } else {
                    vec![v.parse().map_err(|e| format!("{e}"))?]
                };
            }
            "--seed" => a.seed = Some(number(&flag, value()?)?),
            "--seeds" => a.seeds = number(&flag, value()?)?,
            "--from" => a.from = number(&flag, value()?)?,
            "--threads" => a.threads = number(&flag, value()?)?.max(1) as usize,
            "--sabotage" => a.sabotage = parse_sabotage(&value()?)?,
            "--profile" => a.profile = Some(sim::parse_profile(&value()?)?),
            "--modes" => a.modes = sim::parse_modes(&value()?)?,
            "--verbose" => a.verbose = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if a.modes.is_some_and(|m| m != sim::Modes::Exclusive)
        && a.strategies.contains(&Strategy::UniqueInsert)
    {
        return Err(
            "--modes other than exclusive needs --strategy bakery or column-prefix (unique insert takes exclusive locks only)"
                .into(),
        );
    }
    Ok(a)
}

fn replay(args: &Args, seed: u64) -> bool {
    let mut failed = false;
    for &strategy in &args.strategies {
        let config = sim::Only {
            profile: None,
            modes: args.modes,
        }
        .config(strategy, args.sabotage, seed);
        let (out, log) = sim::run_traced(config, seed);
        if args.verbose {
            for line in &log {
                println!("{line}");
            }
        }
        let c = &out.config;
        println!(
            "{strategy} seed {seed}: profile {}, {} clients x {} acquisitions on {} name(s), ttl {:?}{}: {} grants, errors {:?}, releases {:?}, {} events, {:.1}s simulated",
            c.profile,
            c.clients,
            c.acquisitions,
            c.names,
            c.ttl,
            c.cell_ttl.map(|t| format!(", cell ttl {t:?}")).unwrap_or_default(),
            out.grants,
            out.errors,
            out.releases,
            out.events,
            out.end as f64 / 1e9
        );
        if c.objects {
            println!("  objects: {:?}", out.objects);
        }
        if args.verbose {
            println!("  faults configured: {:?}", c.faults);
            let injected: Vec<String> = out
                .faults
                .named()
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            println!("  faults injected: {}", injected.join(", "));
        }
        for v in &out.violations {
            println!("  VIOLATION: {v}");
        }
        if let Some(s) = &out.stuck {
            println!("  STUCK: {s}");
        }
        failed |= !out.ok();
    }
    failed
}

/// Draws the progress bar for `done` of `total` seeds.
fn progress(label: &str, done: u64, total: u64, started: WallInstant, tty: bool) {
    let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
    let eta = (total.saturating_sub(done)) as f64 / rate.max(1e-9);
    let width = 30usize;
    let filled = (done as f64 / total.max(1) as f64 * width as f64) as usize;
    let bar: String = "#".repeat(filled.min(width)) + &"-".repeat(width - filled.min(width));
    let line = format!("{label:<14} [{bar}] {done}/{total} seeds, {rate:.0}/s, {eta:.0}s left");
    let mut err = std::io::stderr();
    if tty {
        let _ = write!(err, "\r{line}");
    } else {
        let _ = writeln!(err, "{line}");
    }
    let _ = err.flush();
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = args.seed {
        return if replay(&args, seed) {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let tty = std::io::stderr().is_terminal();
    let mut results: Vec<(Strategy, Tally, f64)> = Vec::new();
    for &strategy in &args.strategies {
        let started = WallInstant::now();
        let step = (args.seeds / 20).max(1_000);
        let last = AtomicU64::new(0);
        let label = strategy.to_string();
        let report = |done: u64| {
            let shown = last.load(Ordering::Relaxed);
            if tty || done >= shown + step {
                last.store(done, Ordering::Relaxed);
                progress(&label, done, args.seeds, started, tty);
            }
        };
        let t = sim::run_many_with(
            strategy,
            args.sabotage,
            args.from,
            args.from + args.seeds,
            sim::Only {
                profile: args.profile,
                modes: args.modes,
            },
            args.threads,
            10,
            &report,
        );
        progress(&label, t.runs, args.seeds, started, tty);
        if tty {
            eprintln!();
        }
        results.push((strategy, t, started.elapsed().as_secs_f64()));
    }
    print_tables(&args, &results)
}

fn print_tables(args: &Args, results: &[(Strategy, Tally, f64)]) -> ExitCode {
    if args.sabotage != Sabotage::None {
        println!("broken variant: {:?}\n", args.sabotage);
    }
    println!("| strategy | seeds | seeds/s | grants | waits given up, store silent | violations | failed runs | releases ok / lost / ambiguous / other |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut failed = false;
    for (strategy, t, secs) in results {
        let violations: usize = t.failed.iter().map(|o| o.violations.len()).sum();
        let count = |want: Option<baton_kernel::ErrorKind>| {
            t.releases
                .iter()
                .filter(|(k, _)| *k == want)
                .map(|(_, n)| *n)
                .sum::<u64>()
        };
        let ok = count(None);
        let lost = count(Some(baton_kernel::ErrorKind::Lost));
        let ambiguous = count(Some(baton_kernel::ErrorKind::Ambiguous));
        let total: u64 = t.releases.iter().map(|(_, n)| *n).sum();
        println!(
            "| {strategy} | {} | {:.0} | {} | {} | {violations} | {} | {ok} / {lost} / {ambiguous} / {} |",
            t.runs,
            t.runs as f64 / secs.max(1e-9),
            t.grants,
            t.gave_up,
            t.failed.len(),
            total - ok - lost - ambiguous
        );
    }
    println!();
    let names: Vec<&str> = FaultCounts::default()
        .named()
        .iter()
        .map(|(k, _)| *k)
        .collect();
    println!("| faults injected | {} |", names.join(" | "));
    println!("| --- |{}", " ---: |".repeat(names.len()));
    for (strategy, t, _) in results {
        let row: Vec<String> = t
            .faults
            .named()
            .iter()
            .map(|(_, n)| n.to_string())
            .collect();
        println!("| {strategy} | {} |", row.join(" | "));
    }
    println!();
    println!("| object writes | seeds with objects | locked applied | locked lost | optimistic applied | optimistic busy | optimistic mismatched | ambiguous (applied) | acknowledged |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (strategy, t, _) in results {
        let o = &t.objects;
        println!(
            "| {strategy} | {} | {} | {} | {} | {} | {} | {} ({}) | {} |",
            t.object_runs,
            o.locked_applied,
            o.locked_lost,
            o.optimistic_applied,
            o.busy,
            o.mismatched,
            o.ambiguous,
            o.ambiguous_applied,
            o.acknowledged
        );
    }
    for (strategy, t, _) in results {
        for out in &t.failed {
            println!();
            for v in &out.violations {
                println!(
                    "  {strategy} seed {} ({}): {v}",
                    out.seed, out.config.profile
                );
            }
            if let Some(s) = &out.stuck {
                println!(
                    "  {strategy} seed {} ({}): stuck: {s}",
                    out.seed, out.config.profile
                );
            }
            println!(
                "  replay: {}",
                replay_command(*strategy, args.sabotage, out.seed)
            );
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
