//! `simulate`: runs the deterministic simulator from the command line.
//!
//! ```text
//! cargo run --release -p baton-tests --bin simulate -- [--strategy S|all] [--seed N | --seeds COUNT [--from N]]
//!                                                      [--sabotage NAME] [--threads T] [--verbose]
//! ```
//! `--seeds 1000000` is the long mode. `--seed N --verbose` replays one run and prints it.

use std::process::ExitCode;
use std::time::Instant as WallInstant;

use baton_kernel::{Sabotage, Strategy};
use baton_tests::sim::{self, replay_command};

struct Args {
    strategies: Vec<Strategy>,
    seed: Option<u64>,
    from: u64,
    seeds: u64,
    sabotage: Sabotage,
    threads: usize,
    verbose: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        strategies: Strategy::ALL.to_vec(),
        seed: None,
        from: 0,
        seeds: 10_000,
        sabotage: Sabotage::None,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        verbose: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--strategy" => {
                let v = value()?;
                a.strategies = if v == "all" { Strategy::ALL.to_vec() } else { vec![v.parse().map_err(|e| format!("{e}"))?] };
            }
            "--seed" => a.seed = Some(value()?.parse().map_err(|_| "--seed takes a number".to_string())?),
            "--seeds" => a.seeds = value()?.parse().map_err(|_| "--seeds takes a number".to_string())?,
            "--from" => a.from = value()?.parse().map_err(|_| "--from takes a number".to_string())?,
            "--threads" => a.threads = value()?.parse().map_err(|_| "--threads takes a number".to_string())?,
            "--sabotage" => {
                a.sabotage = match value()?.as_str() {
                    "None" | "none" => Sabotage::None,
                    "BakeryIgnoresEntering" => Sabotage::BakeryIgnoresEntering,
                    "UniqueBlindDelete" => Sabotage::UniqueBlindDelete,
                    "NoContinuity" => Sabotage::NoContinuity,
                    other => return Err(format!("unknown sabotage {other:?}")),
                }
            }
            "--verbose" => a.verbose = true,
            "-h" | "--help" => {
                return Err("usage: simulate [--strategy bakery|unique-insert|column-prefix|all] [--seed N | --seeds COUNT [--from N]] [--sabotage NAME] [--threads T] [--verbose]".into())
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut failed = false;
    if let Some(seed) = args.seed {
        for &strategy in &args.strategies {
            let out = sim::run(strategy, args.sabotage, seed);
            let c = &out.config;
            println!(
                "{strategy} seed {seed}: profile {}, {} clients x {} acquisitions on {} name(s), ttl {:?}: {} grants, errors {:?}, {} events, {:.1}s simulated",
                c.profile, c.clients, c.acquisitions, c.names, c.ttl, out.grants, out.errors, out.events, out.end as f64 / 1e9
            );
            if args.verbose {
                println!("  faults: {:?}", c.faults);
            }
            for v in &out.violations {
                println!("  VIOLATION: {v}");
            }
            if let Some(s) = &out.stuck {
                println!("  STUCK: {s}");
            }
            failed |= !out.ok();
        }
        return if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    println!("| strategy | seeds | failed | grants | events | seconds |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for &strategy in &args.strategies {
        let started = WallInstant::now();
        let t = sim::run_many(
            strategy,
            args.sabotage,
            args.from,
            args.from + args.seeds,
            args.threads,
            10,
        );
        println!(
            "| {strategy} | {} | {} | {} | {} | {:.1} |",
            t.runs,
            t.failed.len(),
            t.grants,
            t.events,
            started.elapsed().as_secs_f64()
        );
        for out in &t.failed {
            for v in &out.violations {
                println!("  seed {}: {v}", out.seed);
            }
            if let Some(s) = &out.stuck {
                println!("  seed {}: stuck: {s}", out.seed);
            }
            println!(
                "  replay: {}",
                replay_command(strategy, args.sabotage, out.seed)
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
