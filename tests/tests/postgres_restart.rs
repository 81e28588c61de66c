//! PostgreSQL stopped and started again in the middle of a multi-process run.
//!
//! Eight `lock_worker` processes run critical sections on one lock (unique insert) while this
//! test stops the server with `scripts/postgres stop`, keeps it down for a moment, and starts
//! it again with `scripts/postgres start`. Demands:
//! - during the outage callers get store errors of the retryable kinds (`StoreUnavailable`,
//!   or `Ambiguous` for a command cut off mid-flight), at least one `StoreUnavailable`, and
//!   never a plain `StoreError` (which would say "do not retry"); a release may also be
//!   `Lost`, when the outage held it up past its lease's deadline;
//! - nobody believes it holds the lock when it does not: the sections' intervals never
//!   overlap, every section ended with its guard still held, tokens increase, and the shared
//!   counter has every increment;
//! - the run completes after the restart.
//!
//! It restarts the server with `scripts/postgres`, so it runs when `BATON_POSTGRES_URL` names
//! the server that script manages (127.0.0.1:5432), or any server with
//! `BATON_POSTGRES_RESTART=1` (which says it is that one); `BATON_POSTGRES_RESTART=0` skips it.
//! PostgreSQL is started again even if the test fails. It lives in its own test binary, and
//! cargo runs test binaries one at a time, so no other test of the same `cargo test` uses
//! PostgreSQL while it is down (another `cargo test` running at the same time would notice).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use baton_tests::conformance::target::skip_or_fail;
use baton_tests::conformance::{Backend, Target};
use baton_tests::multiproc::{check, Run, RunSpec};

const WORKERS: usize = 8;
const SECTIONS: u64 = 100;

/// Whether `url` names the server `scripts/postgres` runs (127.0.0.1 or localhost, port 5432).
fn managed_by_script(url: &str) -> bool {
    let authority = url
        .split_once("://")
        .map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    matches!(host_port, "127.0.0.1:5432" | "localhost:5432")
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres")
}

fn postgres(action: &str) -> Result<(), String> {
    let out = Command::new(script())
        .arg(action)
        .output()
        .map_err(|e| format!("cannot run scripts/postgres {action}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "scripts/postgres {action} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Starts PostgreSQL again when dropped, unless it already was: the server must be running
/// after this test, whatever happened.
struct Restart {
    started: bool,
}

impl Drop for Restart {
    fn drop(&mut self) {
        if !self.started {
            if let Err(e) = postgres("start") {
                eprintln!("could not start PostgreSQL again: {e}");
            }
        }
    }
}

#[test]
fn workers_survive_a_postgres_restart() {
    let Some(target) = Target::from_env(Backend::Postgres) else {
        return;
    };
    let url = std::env::var("BATON_POSTGRES_URL").unwrap_or_default();
    match std::env::var("BATON_POSTGRES_RESTART").as_deref() {
        Ok("1") => {}
        Ok("0") => {
            eprintln!("skipping the PostgreSQL restart test: BATON_POSTGRES_RESTART=0");
            return;
        }
        _ if managed_by_script(&url) => {}
        _ => {
            skip_or_fail(
                Backend::Postgres,
                "BATON_POSTGRES_URL is not the server scripts/postgres manages (127.0.0.1:5432), so the restart test would not restart it; set BATON_POSTGRES_RESTART=1 if it is",
            );
            return;
        }
    }
    let table = target.table();
    let run = Run::start(
        env!("CARGO_BIN_EXE_lock_worker").as_ref(),
        RunSpec {
            url: table.url().expect("a database URL").to_owned(),
            strategy: String::from("unique-insert"),
            workers: WORKERS,
            sections: SECTIONS,
            ttl: Duration::from_secs(5),
            limit: Duration::from_secs(240),
        },
    )
    .expect("start the workers");

    // Let the run get going, then take the server away for a while.
    let deadline = Instant::now() + Duration::from_secs(120);
    while run.progress() < 150 {
        assert!(
            Instant::now() < deadline,
            "the workers made no progress before the restart: {} sections",
            run.progress()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut restart = Restart { started: false };
    let before = run.progress();
    let stopped_at = Instant::now();
    postgres("stop").expect("stop PostgreSQL");
    // Down until a caller of lock() has been told so (the workers report failed calls on
    // stderr; a release, which reads before it removes, may be the first to fail, and the
    // demand is on lock calls).
    let deadline = Instant::now() + Duration::from_secs(60);
    while run.lock_errors_reported() == 0 {
        assert!(
            Instant::now() < deadline,
            "no worker reported a failed lock call within 60 s of stopping PostgreSQL ({} other failed calls)",
            run.errors_reported()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = run.progress();
    postgres("start").expect("start PostgreSQL");
    restart.started = true;
    let outage = stopped_at.elapsed();
    drop(restart);

    let outcome = run.finish().unwrap_or_else(|e| panic!("{e}"));
    println!(
        "postgres restart: {outcome}; {before} sections before the stop, {} during the {outage:.1?} outage",
        during - before
    );
    let problems = check(&outcome, WORKERS as u64 * SECTIONS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    let lock_errors = outcome.lock_errors();
    let release_errors = outcome.release_errors();
    let errors = outcome.error_lines.join("\n");
    assert!(
        lock_errors.get("store_unavailable").copied().unwrap_or(0) > 0,
        "no caller was told the store was unavailable during the outage: lock errors {lock_errors:?}\n{errors}"
    );
    // A lock call fails with a retryable store kind. A release may also say `lost`, when the
    // outage held it up past its lease's deadline (baton_kernel::Release). (A release cut off
    // after it applied, whose read-back finds the next holder, is `Ok`: see the same docs.)
    let unexpected: Vec<String> = lock_errors
        .keys()
        .filter(|k| !matches!(k.as_str(), "store_unavailable" | "ambiguous"))
        .map(|k| format!("lock {k}"))
        .chain(
            release_errors
                .keys()
                .filter(|k| !matches!(k.as_str(), "store_unavailable" | "ambiguous" | "lost"))
                .map(|k| format!("release {k}")),
        )
        .collect();
    assert!(
        unexpected.is_empty(),
        "errors of unexpected kinds during a restart: {unexpected:?}\n{errors}"
    );
    if !outcome.error_lines.is_empty() {
        println!("failed calls during the outage:\n{errors}");
    }
}
