//! `baton demo`: worker processes contend for one lock; the summary shows they never overlapped.
//!
//! Each worker is this same binary (hidden subcommand `__demo-worker`), so the lock really is
//! shared between processes through the store. A worker takes the lock `--rounds` times; inside
//! it, it creates a marker file with `O_EXCL` (finding it already there means another worker is
//! inside: an overlap), holds the lock for `--hold`, removes the marker and releases. It reports
//! each step on its standard output as a line:
//!
//! ```text
//! acquired <token> <wait µs> <entered, Unix µs> <marker overlap 0|1>
//! released <token> <left, Unix µs> <lease still held 0|1>
//! ```
//!
//! The parent shows progress from those lines, then checks the recorded intervals for overlaps
//! (a second check that does not rely on the marker) and that fencing tokens increase in the
//! order the lock was granted.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::{LockRequest, RetryPolicy};
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::args::{DemoArgs, DemoWorkerArgs};
use crate::duration::human;
use crate::exit::{CliError, LOST, OK, OS_ERROR};
use crate::output::{print, print_json, say, table, Style};
use crate::process::Forwarded;
use crate::store;

/// A worker's lease: long enough that a slow machine never loses it during a short hold.
const WORKER_TTL: Duration = Duration::from_secs(10);
/// How long a worker waits for its turn before giving up (exit 75).
const WORKER_WAIT: Duration = Duration::from_secs(60);

/// One line a worker reported.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Acquired {
        token: u64,
        wait: Duration,
        entered_us: u64,
        marker_overlap: bool,
    },
    Released {
        token: u64,
        left_us: u64,
        held: bool,
    },
}

impl Event {
    fn parse(line: &str) -> Option<Event> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
        match fields.first() {
            Some(&"acquired") => Some(Event::Acquired {
                token: num(1)?,
                wait: Duration::from_micros(num(2)?),
                entered_us: num(3)?,
                marker_overlap: num(4)? != 0,
            }),
            Some(&"released") => Some(Event::Released {
                token: num(1)?,
                left_us: num(2)?,
                held: num(3)? != 0,
            }),
            _ => None,
        }
    }
}

/// One turn of one worker inside the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Turn {
    worker: usize,
    token: u64,
    wait: Duration,
    entered_us: u64,
    left_us: Option<u64>,
}

/// What the demo found.
#[derive(Debug, Serialize)]
struct Summary {
    store: String,
    lock: String,
    strategy: &'static str,
    elapsed_ms: u64,
    workers: Vec<WorkerSummary>,
    acquisitions: usize,
    overlaps: usize,
    marker_overlaps: usize,
    interval_overlaps: usize,
    leases_lost: usize,
    tokens_increasing: bool,
    first_token: Option<u64>,
    last_token: Option<u64>,
    wait_p50_ms: f64,
    wait_p99_ms: f64,
}

/// One worker's line of the summary.
#[derive(Debug, Serialize)]
struct WorkerSummary {
    worker: usize,
    pid: Option<u32>,
    acquisitions: usize,
    exit_status: Option<i32>,
    wait_p50_ms: f64,
    wait_p99_ms: f64,
}

/// The `p`-th percentile (nearest rank) of sorted durations; zero for none.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 10.0).round() / 10.0
}

/// How many turns began before an earlier one ended (by the recorded wall-clock intervals).
fn interval_overlaps(turns: &[Turn]) -> usize {
    let mut sorted: Vec<&Turn> = turns.iter().collect();
    sorted.sort_by_key(|t| t.entered_us);
    let mut overlaps = 0;
    let mut busy_until = 0u64;
    for turn in sorted {
        if turn.entered_us < busy_until {
            overlaps += 1;
        }
        // A turn that never reported leaving counts as lasting to the end.
        busy_until = busy_until.max(turn.left_us.unwrap_or(u64::MAX));
    }
    overlaps
}

/// Whether tokens strictly increase in the order turns began.
fn tokens_increase(turns: &[Turn]) -> bool {
    let mut sorted: Vec<&Turn> = turns.iter().collect();
    sorted.sort_by_key(|t| t.entered_us);
    sorted.windows(2).all(|w| w[0].token < w[1].token)
}

fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `baton demo`.
pub async fn demo(store_url: &str, args: &DemoArgs) -> Result<u8, CliError> {
    if store::is_in_process(store_url) {
        return Err(CliError::usage(format!(
            "the demo's workers are separate processes, and {store_url} is a store inside one process"
        ))
        .hint("use the default store (no --store), or one such as --store sqlite:///tmp/baton-demo.db"));
    }
    let mut signals = Forwarded::install()?;
    // Open and touch the store first, so a bad or unreachable store is reported once, not by
    // every worker.
    let locker = store::open(store_url)?;
    locker
        .inspect_with(&args.lock, args.strategy)
        .await
        .map_err(|e| CliError::from_baton("cannot use the lock store", &e))?;
    let described = locker.store().describe();

    let dir = std::env::temp_dir().join(format!("baton-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(OS_ERROR, format!("cannot create {}: {e}", dir.display())))?;
    let scratch = Scratch(dir);
    let marker = scratch.0.join("inside");

    let exe = std::env::current_exe()
        .map_err(|e| CliError::new(OS_ERROR, format!("cannot find baton's own executable: {e}")))?;
    let progress_to_stdout = !args.json;
    let live = if progress_to_stdout {
        std::io::stdout().is_terminal()
    } else {
        std::io::stderr().is_terminal()
    };
    let style = if progress_to_stdout {
        Style::stdout()
    } else {
        Style::stderr()
    };
    let progress = |text: &str| {
        if progress_to_stdout {
            let _ = print(text);
        } else {
            eprint!("{text}");
        }
    };
    progress(&format!(
        "{} {} workers take lock {:?} {} times each ({}, hold {}) on {described}\n",
        style.bold("baton demo:"),
        args.workers,
        args.lock,
        args.rounds,
        args.strategy,
        human(args.hold)
    ));

    let started = Instant::now();
    let (events_tx, mut events) = mpsc::unbounded_channel::<(usize, Option<String>)>();
    let mut children = Vec::new();
    for worker in 1..=args.workers as usize {
        let mut child = Command::new(&exe)
            .arg("--store")
            .arg(store_url)
            .arg("__demo-worker")
            .arg("--lock")
            .arg(&args.lock)
            .arg("--rounds")
            .arg(args.rounds.to_string())
            .arg("--hold-us")
            .arg(args.hold.as_micros().to_string())
            .arg("--strategy")
            .arg(args.strategy.as_str())
            .arg("--marker")
            .arg(&marker)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                CliError::new(
                    OS_ERROR,
                    format!("cannot start demo worker {worker} ({}): {e}", exe.display()),
                )
            })?;
        if let Some(stdout) = child.stdout.take() {
            let tx = events_tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if tx.send((worker, Some(line))).is_err() {
                        return;
                    }
                }
                let _ = tx.send((worker, None));
            });
        }
        children.push(child);
    }
    drop(events_tx);

    let total = args.workers as usize * args.rounds as usize;
    let mut turns: Vec<Turn> = Vec::new();
    let mut open: HashMap<usize, usize> = HashMap::new();
    let mut marker_overlaps = 0;
    let mut leases_lost = 0;
    let mut finished = 0;
    let mut holder: Option<(usize, u64)> = None;
    while finished < children.len() {
        let (worker, line) = tokio::select! {
            next = events.recv() => match next {
                Some(next) => next,
                None => break,
            },
            sig = signals.recv() => {
                if live {
                    progress("\n");
                }
                say(&format!("{sig} received: stopping the demo's workers"));
                return Ok(128 + sig as u8);
            }
        };
        let Some(line) = line else {
            finished += 1;
            continue;
        };
        match Event::parse(&line) {
            Some(Event::Acquired {
                token,
                wait,
                entered_us,
                marker_overlap,
            }) => {
                open.insert(worker, turns.len());
                turns.push(Turn {
                    worker,
                    token,
                    wait,
                    entered_us,
                    left_us: None,
                });
                holder = Some((worker, token));
                if marker_overlap {
                    marker_overlaps += 1;
                    if live {
                        progress("\n");
                    }
                    progress(&format!(
                        "{} worker {worker} entered (token {token}) while another worker was inside\n",
                        style.red("OVERLAP:")
                    ));
                }
                if live {
                    progress(&format!(
                        "\r\x1b[K{}/{total} acquisitions · worker {worker} holds the lock (token {token}, waited {}) · overlaps {marker_overlaps}",
                        turns.len(),
                        human(wait)
                    ));
                } else {
                    progress(&format!(
                        "worker {worker} acquired the lock: token {token}, waited {}\n",
                        human(wait)
                    ));
                }
            }
            Some(Event::Released {
                token: _,
                left_us,
                held,
            }) => {
                if let Some(index) = open.remove(&worker) {
                    turns[index].left_us = Some(left_us);
                }
                if !held {
                    leases_lost += 1;
                }
                if holder.is_some_and(|(w, _)| w == worker) {
                    holder = None;
                }
            }
            None => progress(&format!("worker {worker}: {line}\n")),
        }
    }
    if live {
        progress(&format!(
            "\r\x1b[K{}/{total} acquisitions · all workers done · overlaps {marker_overlaps}\n",
            turns.len()
        ));
    }
    let mut statuses = Vec::new();
    for child in &mut children {
        let pid = child.id();
        let status = child.wait().await.ok();
        statuses.push((pid, status));
    }
    let elapsed = started.elapsed();
    drop(scratch);

    let interval_overlaps = interval_overlaps(&turns);
    let overlaps = marker_overlaps.max(interval_overlaps);
    let tokens_increasing = tokens_increase(&turns);
    let mut waits: Vec<Duration> = turns.iter().map(|t| t.wait).collect();
    waits.sort();
    let mut by_start: Vec<&Turn> = turns.iter().collect();
    by_start.sort_by_key(|t| t.entered_us);
    let workers: Vec<WorkerSummary> = statuses
        .iter()
        .enumerate()
        .map(|(i, (pid, status))| {
            let worker = i + 1;
            let mut waits: Vec<Duration> = turns
                .iter()
                .filter(|t| t.worker == worker)
                .map(|t| t.wait)
                .collect();
            waits.sort();
            WorkerSummary {
                worker,
                pid: *pid,
                acquisitions: waits.len(),
                exit_status: status.and_then(|s| s.code()),
                wait_p50_ms: ms(percentile(&waits, 50.0)),
                wait_p99_ms: ms(percentile(&waits, 99.0)),
            }
        })
        .collect();
    let summary = Summary {
        store: described,
        lock: args.lock.clone(),
        strategy: args.strategy.as_str(),
        elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        acquisitions: turns.len(),
        overlaps,
        marker_overlaps,
        interval_overlaps,
        leases_lost,
        tokens_increasing,
        first_token: by_start.first().map(|t| t.token),
        last_token: by_start.last().map(|t| t.token),
        wait_p50_ms: ms(percentile(&waits, 50.0)),
        wait_p99_ms: ms(percentile(&waits, 99.0)),
        workers,
    };
    if args.json {
        print_json(&summary)?;
    } else {
        print(&render(&summary, &waits, Style::stdout()))?;
    }

    if let Some(failed) = summary
        .workers
        .iter()
        .find(|w| w.exit_status != Some(i32::from(OK)))
    {
        let status = failed
            .exit_status
            .and_then(|c| u8::try_from(c).ok())
            .filter(|&c| c != OK)
            .unwrap_or(OS_ERROR);
        return Err(CliError::new(
            status,
            format!(
                "demo worker {} failed (exit status {}); see its message above",
                failed.worker,
                failed.exit_status.map_or_else(
                    || String::from("none: killed by a signal"),
                    |c| c.to_string()
                )
            ),
        ));
    }
    if overlaps > 0 || !tokens_increasing || turns.len() != total {
        return Err(CliError::new(
            LOST,
            format!(
                "the demo saw {overlaps} overlap(s), tokens {}increasing, {} of {total} acquisitions",
                if tokens_increasing { "" } else { "not " },
                turns.len()
            ),
        ));
    }
    Ok(OK)
}

/// The summary for people.
fn render(s: &Summary, waits: &[Duration], style: Style) -> String {
    let rows: Vec<Vec<String>> = s
        .workers
        .iter()
        .map(|w| {
            vec![
                w.worker.to_string(),
                w.pid.map_or_else(|| String::from("-"), |p| p.to_string()),
                w.acquisitions.to_string(),
                human(Duration::from_secs_f64(w.wait_p50_ms / 1000.0)),
                human(Duration::from_secs_f64(w.wait_p99_ms / 1000.0)),
            ]
        })
        .collect();
    let mut out = String::from("\n");
    out.push_str(&table(
        style,
        &["WORKER", "PID", "ACQUISITIONS", "WAIT P50", "WAIT P99"],
        &rows,
    ));
    out.push('\n');
    let overlaps = format!("overlaps {}", s.overlaps);
    out.push_str(&format!(
        "{} (marker file {}, intersecting intervals {})\n",
        if s.overlaps == 0 {
            style.green(&overlaps)
        } else {
            style.red(&overlaps)
        },
        s.marker_overlaps,
        s.interval_overlaps
    ));
    let range = match (s.first_token, s.last_token) {
        (Some(first), Some(last)) => {
            format!(" ({first} → {last} in the order the lock was granted)")
        }
        _ => String::new(),
    };
    out.push_str(&format!(
        "tokens increasing: {}{range}\n",
        if s.tokens_increasing {
            style.green("yes")
        } else {
            style.red("no")
        }
    ));
    out.push_str(&format!(
        "wait p50 {}, p99 {} over {} acquisitions; {} leases lost; {} in all\n",
        human(percentile(waits, 50.0)),
        human(percentile(waits, 99.0)),
        s.acquisitions,
        s.leases_lost,
        human(Duration::from_millis(s.elapsed_ms))
    ));
    out
}

/// One demo worker (`baton __demo-worker`): takes the lock `rounds` times, reporting each turn.
pub async fn worker(store_url: &str, args: &DemoWorkerArgs) -> Result<u8, CliError> {
    let locker = store::open(store_url)?;
    let request = LockRequest::new()
        .strategy(args.strategy)
        .ttl(WORKER_TTL)
        .wait_timeout(WORKER_WAIT)
        .retry(RetryPolicy {
            initial: Duration::from_millis(2),
            max: Duration::from_millis(25),
            max_attempts: None,
            ..RetryPolicy::default()
        });
    let hold = Duration::from_micros(args.hold_us);
    for round in 0..args.rounds {
        let asked = Instant::now();
        let mut guard = locker
            .lock_with(&args.lock, request.clone())
            .await
            .map_err(|e| CliError::from_baton("demo worker cannot acquire the lock", &e))?;
        let wait = asked.elapsed();
        let entered_us = unix_us();
        let marker_overlap = enter(&args.marker)?;
        print(&format!(
            "acquired {} {} {entered_us} {}\n",
            guard.token(),
            wait.as_micros(),
            u8::from(marker_overlap)
        ))?;
        tokio::time::sleep(hold).await;
        let held = guard.is_held();
        if !marker_overlap {
            let _ = std::fs::remove_file(&args.marker);
        }
        let left_us = unix_us();
        print(&format!(
            "released {} {left_us} {}\n",
            guard.token(),
            u8::from(held)
        ))?;
        guard
            .release()
            .await
            .map_err(|e| CliError::from_baton("demo worker could not release the lock", &e))?;
        // Work outside the lock for a while, so the others get their turns (unique insert is
        // not FIFO: a worker that asked again at once would often win again).
        if round + 1 < args.rounds {
            tokio::time::sleep(hold / 2 + jitter(hold)).await;
        }
    }
    Ok(OK)
}

/// A random duration below `max` (std's randomly keyed hasher is random enough for spacing).
fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let max_us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX).max(1);
    Duration::from_micros(random % max_us)
}

/// Creates the marker; true if it was already there (another worker is inside).
fn enter(marker: &Path) -> Result<bool, CliError> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(marker)
    {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(true),
        Err(e) => Err(CliError::new(
            OS_ERROR,
            format!("demo worker cannot create {}: {e}", marker.display()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(worker: usize, token: u64, entered_us: u64, left_us: u64) -> Turn {
        Turn {
            worker,
            token,
            wait: Duration::ZERO,
            entered_us,
            left_us: Some(left_us),
        }
    }

    #[test]
    fn events_round_trip_through_lines() {
        assert_eq!(
            Event::parse("acquired 7 1500 1000 0"),
            Some(Event::Acquired {
                token: 7,
                wait: Duration::from_micros(1500),
                entered_us: 1000,
                marker_overlap: false
            })
        );
        assert_eq!(
            Event::parse("released 7 2000 1"),
            Some(Event::Released {
                token: 7,
                left_us: 2000,
                held: true
            })
        );
        assert_eq!(Event::parse("acquired x"), None);
        assert_eq!(Event::parse("hello"), None);
    }

    #[test]
    fn overlaps_and_token_order_are_found() {
        let clean = [turn(1, 1, 0, 10), turn(2, 2, 10, 20), turn(1, 3, 25, 30)];
        assert_eq!(interval_overlaps(&clean), 0);
        assert!(tokens_increase(&clean));
        let overlapping = [turn(1, 1, 0, 10), turn(2, 2, 5, 20), turn(3, 3, 15, 30)];
        assert_eq!(interval_overlaps(&overlapping), 2);
        let reordered = [turn(1, 2, 0, 10), turn(2, 1, 10, 20)];
        assert!(!tokens_increase(&reordered));
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let waits: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&waits, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&waits, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
        assert_eq!(percentile(&waits[..1], 99.0), Duration::from_millis(1));
    }
}
