//! A worker process for the multi-process and crash tests (`tests/multiprocess.rs`).
//!
//! ```text
//! lock_worker sections --url URL --strategy S --name NAME --sections N --out FILE --counter FILE
//!                      [--ttl-ms 10000] [--limit-s 300]
//! lock_worker hold --url URL --strategy S --name NAME [--ttl-ms 2000] [--limit-s 120]
//! ```
//!
//! `sections` runs N critical sections on lock NAME. In each it appends
//! `token enter_ns exit_ns held` to FILE (see `baton_tests::multiproc::Section`) and increments
//! the number in the plain file COUNTER, which only the lock protects. A failed acquisition
//! (store unavailable, timeout...) is counted and retried; a failed release is counted. The last
//! stdout line is the summary (`done sections=N lock_errors=… release_errors=…`).
//!
//! `hold` acquires NAME with keep-alive on and prints `held <token> <sent_ns>` (`sent_ns`: wall
//! clock just before the acquire was sent), then `renewed <sent_ns>` after each renewal the
//! keep-alive makes (`sent_ns`: when that renewal was sent, from the lease's new deadline), and
//! sleeps until killed (or until `--limit-s`, then exits 0; `lost` and exit 3 if the lease is
//! lost first).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use baton::{ErrorKind, LockRequest, Locker, RetryPolicy, Strategy};
use baton_tests::multiproc::{wall_ns, Section, WorkerSummary};

struct Args {
    mode: String,
    url: String,
    strategy: Strategy,
    name: String,
    sections: u64,
    out: Option<PathBuf>,
    counter: Option<PathBuf>,
    ttl: Duration,
    limit: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut argv = std::env::args().skip(1);
    let mode = argv.next().ok_or("missing mode: sections or hold")?;
    let mut flags = BTreeMap::new();
    while let Some(flag) = argv.next() {
        let key = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {flag:?}"))?
            .to_owned();
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        flags.insert(key, value);
    }
    let mut take = |key: &str| flags.remove(key);
    let number = |v: Option<String>, key: &str, default: u64| -> Result<u64, String> {
        v.map_or(Ok(default), |v| {
            v.parse()
                .map_err(|_| format!("--{key} {v:?} is not a number"))
        })
    };
    let args = Args {
        url: take("url").ok_or("missing --url")?,
        strategy: take("strategy")
            .ok_or("missing --strategy")?
            .parse()
            .map_err(|e: baton::Error| e.to_string())?,
        name: take("name").ok_or("missing --name")?,
        sections: number(take("sections"), "sections", 0)?,
        out: take("out").map(PathBuf::from),
        counter: take("counter").map(PathBuf::from),
        ttl: Duration::from_millis(number(
            take("ttl-ms"),
            "ttl-ms",
            if mode == "hold" { 2_000 } else { 10_000 },
        )?),
        limit: Duration::from_secs(number(
            take("limit-s"),
            "limit-s",
            if mode == "hold" { 120 } else { 300 },
        )?),
        mode,
    };
    if let Some(unknown) = flags.keys().next() {
        return Err(format!("unknown flag --{unknown}"));
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("lock_worker: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("lock_worker: no runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match args.mode.as_str() {
            "sections" => sections(&args).await,
            "hold" => hold(&args).await,
            other => Err(format!("unknown mode {other:?}: sections or hold")),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lock_worker: {e}");
            ExitCode::FAILURE
        }
    }
}

fn locker(args: &Args) -> Result<Locker, String> {
    let store = baton::open_store(&args.url).map_err(|e| e.to_string())?;
    baton::LockerBuilder::new(store)
        .strategy(args.strategy)
        .ttl(args.ttl)
        .retry(RetryPolicy {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(20),
            max_attempts: None,
            ..RetryPolicy::default()
        })
        .wait_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}

/// Whether a failed acquisition is worth retrying (the store or the wait failed, not the
/// request).
fn retryable(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::StoreUnavailable
            | ErrorKind::StoreError
            | ErrorKind::Ambiguous
            | ErrorKind::TimedOut
    )
}

async fn sections(args: &Args) -> Result<ExitCode, String> {
    let out_path = args.out.as_ref().ok_or("missing --out")?;
    let counter_path = args.counter.as_ref().ok_or("missing --counter")?;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out_path)
        .map_err(|e| format!("cannot open {}: {e}", out_path.display()))?;
    let locker = locker(args)?;
    let give_up = Instant::now() + args.limit;
    let mut summary = WorkerSummary::default();
    let mut reported = 0;
    while summary.sections < args.sections {
        if Instant::now() >= give_up {
            return Err(format!(
                "gave up after {:?} with {} of {} sections; {}",
                args.limit,
                summary.sections,
                args.sections,
                summary.line()
            ));
        }
        let called = Instant::now();
        let mut guard = match locker
            .lock_with(&args.name, LockRequest::new().keep_alive(true))
            .await
        {
            Ok(g) => g,
            Err(e) if retryable(e.kind()) => {
                *summary
                    .lock_errors
                    .entry(e.kind().as_str().to_owned())
                    .or_insert(0) += 1;
                if reported < 20 {
                    reported += 1;
                    eprintln!(
                        "{} lock failed after {:?}: {e}",
                        wall_ns(),
                        called.elapsed()
                    );
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            Err(e) => return Err(format!("lock: {e}")),
        };
        let enter = wall_ns();
        // The critical section: an unprotected read-modify-write of a plain file.
        let text =
            std::fs::read_to_string(counter_path).map_err(|e| format!("read counter: {e}"))?;
        let n: u64 = text.trim().parse().map_err(|_| {
            format!("the counter file holds {text:?} (torn by a concurrent write?)")
        })?;
        std::fs::write(counter_path, (n + 1).to_string())
            .map_err(|e| format!("write counter: {e}"))?;
        let exit = wall_ns();
        let held = guard.is_held();
        let section = Section {
            token: guard.token(),
            enter,
            exit,
            held,
        };
        out.write_all(section.line().as_bytes())
            .map_err(|e| format!("write {}: {e}", out_path.display()))?;
        summary.sections += 1;
        let releasing = Instant::now();
        if let Err(e) = guard.release().await {
            *summary
                .release_errors
                .entry(e.kind().as_str().to_owned())
                .or_insert(0) += 1;
            if reported < 20 {
                reported += 1;
                eprintln!(
                    "{} release failed after {:?}: {e}",
                    wall_ns(),
                    releasing.elapsed()
                );
            }
        }
    }
    println!("{}", summary.line());
    Ok(ExitCode::SUCCESS)
}

async fn hold(args: &Args) -> Result<ExitCode, String> {
    let locker = locker(args)?;
    let sent = wall_ns();
    let guard = locker
        .lock_with(&args.name, LockRequest::new().keep_alive(true))
        .await
        .map_err(|e| format!("lock: {e}"))?;
    let mut stdout = std::io::stdout();
    let say = |stdout: &mut std::io::Stdout, line: String| {
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    };
    say(&mut stdout, format!("held {} {sent}", guard.token()));
    let give_up = Instant::now() + args.limit;
    let mut deadline = guard.lease().deadline();
    while Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if !guard.is_held() {
            say(&mut stdout, String::from("lost"));
            return Ok(ExitCode::from(3));
        }
        let lease = guard.lease();
        if lease.deadline() != deadline {
            deadline = lease.deadline();
            // deadline = (renewal sent) + validity, on the locker's clock.
            let validity = lease.options().lease_validity();
            let sent_at = deadline.saturating_sub(validity);
            let ago = locker.clock().now().saturating_duration_since(sent_at);
            say(
                &mut stdout,
                format!("renewed {}", wall_ns().saturating_sub(ago.as_nanos())),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
