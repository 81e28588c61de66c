//! A worker process for the tree test (`tests/tree.rs`, issue 43): readers, writers and
//! semaphore holders on one store, each marking the file system while it holds.
//!
//! ```text
//! tree_worker --url URL --strategy S --role reader|writer|permit --sections N --dir DIR
//!             [--seed K] [--hold-ms 3] [--ttl-ms 10000] [--limit-s 300]
//! ```
//!
//! Readers and writers lock the paths `app`, `app.cache`, `app.cache.users` (one after another,
//! from `seed`) with paths on, shared and exclusive; permit holders take one of 3 permits of
//! `pool`. While it holds, a worker keeps a marker file in DIR, `held|<role>|<path>|<pid>|<k>`
//! (a writer's first with `O_EXCL` on `held|w|<path>`), and looks at the others: a writer that
//! finds any marker of a related path, a reader that finds a writer's, or a permit holder that
//! finds three others is a violation, printed as `VIOLATION ...` (exit 4). Each section is
//! appended to `DIR/log` as `<role> <path> <enter_ns> <exit_ns> <token>`. The last stdout line
//! is `done sections=N`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use baton::{ErrorKind, LockRequest, Locker, Mode, RetryPolicy, Strategy};
use baton_tests::multiproc::wall_ns;

/// The tree the readers and writers lock, and the semaphore's name and size.
pub const TREE: [&str; 3] = ["app", "app.cache", "app.cache.users"];
const POOL: &str = "pool";
const PERMITS: u32 = 3;

struct Args {
    url: String,
    strategy: Strategy,
    role: String,
    sections: u64,
    dir: PathBuf,
    seed: u64,
    hold: Duration,
    ttl: Duration,
    limit: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut flags = BTreeMap::new();
    let mut argv = std::env::args().skip(1);
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
        role: take("role").ok_or("missing --role")?,
        sections: number(take("sections"), "sections", 10)?,
        dir: take("dir").map(PathBuf::from).ok_or("missing --dir")?,
        seed: number(take("seed"), "seed", 0)?,
        hold: Duration::from_millis(number(take("hold-ms"), "hold-ms", 3)?),
        ttl: Duration::from_millis(number(take("ttl-ms"), "ttl-ms", 10_000)?),
        limit: Duration::from_secs(number(take("limit-s"), "limit-s", 300)?),
    };
    if let Some(unknown) = flags.keys().next() {
        return Err(format!("unknown flag --{unknown}"));
    }
    if !["reader", "writer", "permit"].contains(&args.role.as_str()) {
        return Err(format!("--role {:?}: reader, writer or permit", args.role));
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tree_worker: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tree_worker: no runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.starts_with("VIOLATION") => {
            println!("{e}");
            ExitCode::from(4)
        }
        Err(e) => {
            eprintln!("tree_worker: {e}");
            ExitCode::FAILURE
        }
    }
}

fn locker(args: &Args) -> Result<Locker, String> {
    let store = baton::open_store(&args.url).map_err(|e| e.to_string())?;
    baton::LockerBuilder::new(store)
        .strategy(args.strategy)
        .paths(true)
        .ttl(args.ttl)
        .retry(RetryPolicy {
            initial: Duration::from_millis(2),
            max: Duration::from_millis(20),
            max_attempts: None,
            ..RetryPolicy::default()
        })
        .wait_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())
}

/// A marker's parts: role letter, path.
fn marker_parts(file: &str) -> Option<(&str, &str)> {
    let mut parts = file.strip_prefix("held|")?.split('|');
    Some((parts.next()?, parts.next()?))
}

fn related(a: &str, b: &str) -> bool {
    let under = |long: &str, short: &str| {
        long.len() > short.len() && long.starts_with(short) && long.as_bytes()[short.len()] == b'.'
    };
    a == b || under(a, b) || under(b, a)
}

/// The markers in `dir` other than `mine`, as (role, path).
fn others(dir: &Path, mine: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))? {
        let name = entry
            .map_err(|e| format!("read {}: {e}", dir.display()))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if mine.contains(&name) {
            continue;
        }
        if let Some((role, path)) = marker_parts(&name) {
            found.push((role.to_owned(), path.to_owned()));
        }
    }
    Ok(found)
}

async fn run(args: &Args) -> Result<(), String> {
    let locker = locker(args)?;
    let pid = std::process::id();
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(args.dir.join("log"))
        .map_err(|e| format!("open log: {e}"))?;
    let give_up = Instant::now() + args.limit;
    let mut done = 0;
    while done < args.sections {
        if Instant::now() >= give_up {
            return Err(format!(
                "gave up after {:?} with {done} sections",
                args.limit
            ));
        }
        let (path, request, letter) = match args.role.as_str() {
            "permit" => (POOL, LockRequest::new().mode(Mode::Counted(PERMITS)), "c"),
            role => {
                let path = TREE[((args.seed + done) % TREE.len() as u64) as usize];
                let request = if role == "writer" {
                    LockRequest::new()
                } else {
                    LockRequest::new().shared()
                };
                (path, request, if role == "writer" { "w" } else { "r" })
            }
        };
        let mut guard = match locker.lock_with(path, request).await {
            Ok(g) => g,
            Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::StoreUnavailable) => {
                eprintln!("tree_worker {pid}: {e}; trying again");
                continue;
            }
            Err(e) => return Err(format!("lock {path}: {e}")),
        };
        let enter = wall_ns();
        let mut mine = vec![format!("held|{letter}|{path}|{pid}|{done}")];
        if letter == "w" {
            // O_EXCL: a second writer of this very path cannot create it.
            let exclusive = format!("held|w|{path}");
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(args.dir.join(&exclusive))
                .map_err(|e| format!("VIOLATION writer {pid} on {path}: {exclusive}: {e}"))?;
            mine.push(exclusive);
        }
        std::fs::write(args.dir.join(&mine[0]), b"").map_err(|e| format!("write marker: {e}"))?;
        let found = others(&args.dir, &mine)?;
        let clash = found.iter().find(|(role, other)| match letter {
            "w" => role != "c" && related(other, path),
            "r" => role == "w" && related(other, path),
            _ => false,
        });
        if let Some((role, other)) = clash {
            return Err(format!(
                "VIOLATION {} {pid} on {path} found a {role} marker on {other}",
                args.role
            ));
        }
        if letter == "c" {
            let holders = found.iter().filter(|(role, _)| role == "c").count() + 1;
            if holders > PERMITS as usize {
                return Err(format!(
                    "VIOLATION permit {pid}: {holders} holders of {PERMITS} permits"
                ));
            }
        }
        tokio::time::sleep(args.hold).await;
        for marker in mine.iter().rev() {
            std::fs::remove_file(args.dir.join(marker))
                .map_err(|e| format!("remove marker {marker}: {e}"))?;
        }
        let exit = wall_ns();
        // One write of the whole line: appends from many processes then never interleave.
        let line = format!("{} {path} {enter} {exit} {}\n", args.role, guard.token());
        log.write_all(line.as_bytes())
            .map_err(|e| format!("write log: {e}"))?;
        if let Err(e) = guard.release().await {
            eprintln!("tree_worker {pid}: release of {path}: {e}");
        }
        done += 1;
    }
    println!("done sections={done}");
    Ok(())
}
