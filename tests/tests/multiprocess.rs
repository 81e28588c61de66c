//! Locks across processes, on the stores other processes can reach (SQLite, PostgreSQL,
//! MariaDB), with the `lock_worker` binary.
//!
//! - `sections::*`: 8 workers × N critical sections on one lock, per store and strategy; the
//!   shared counter must equal 8 × N, no two sections may overlap in time, and tokens must
//!   strictly increase with entry time (see `baton_tests::multiproc`).
//! - `killed_holder::*`: a holder with keep-alive is killed with SIGKILL after a renewal; the
//!   lock is taken over only once a full TTL has passed since that renewal was sent, within a
//!   generous bound after the kill, and with a larger token.
//!
//! Stores come from `BATON_SQLITE_URL` (default: a temporary file), `BATON_POSTGRES_URL` and
//! `BATON_MYSQL_URL`, as for the conformance suite. `BATON_MULTIPROC_SECTIONS` sets N for every
//! strategy (default 200).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use baton::{ErrorKind, LockRequest, LockerBuilder, Strategy};
use baton_tests::conformance::target::quick_retry;
use baton_tests::conformance::util::ready;
use baton_tests::conformance::{Backend, Target};
use baton_tests::multiproc::{check, wall_ns, Run, RunSpec};

const WORKERS: usize = 8;

/// Critical sections per worker: `BATON_MULTIPROC_SECTIONS`, or 200 (the 8 x 200, for
/// every strategy: about 20 s for bakery, the slowest, on PostgreSQL on two cores).
fn sections_per_worker() -> u64 {
    std::env::var("BATON_MULTIPROC_SECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn sections(backend: Backend, strategy: Strategy) {
    let Some(target) = Target::from_env(backend) else {
        return;
    };
    let table = target.table();
    let url = table.url().expect("a database table has a URL").to_owned();
    let n = sections_per_worker();
    let run = Run::start(
        env!("CARGO_BIN_EXE_lock_worker").as_ref(),
        RunSpec {
            url,
            strategy: strategy.to_string(),
            workers: WORKERS,
            sections: n,
            ttl: Duration::from_secs(10),
            limit: Duration::from_secs(300),
        },
    )
    .expect("start the workers");
    let outcome = run
        .finish()
        .unwrap_or_else(|e| panic!("{backend} {strategy}: {e}"));
    println!("{backend} {strategy}: {outcome}");
    let problems = check(&outcome, WORKERS as u64 * n);
    assert!(
        problems.is_empty(),
        "{backend} {strategy} ({}): {}",
        table.name(),
        problems.join("\n")
    );
}

macro_rules! sections_tests {
    ($($module:ident => $backend:expr),*) => {$(
        mod $module {
            use super::*;
            #[test]
            fn unique_insert() {
                sections($backend, Strategy::UniqueInsert);
            }
            #[test]
            fn bakery() {
                sections($backend, Strategy::Bakery);
            }
            #[test]
            fn column_prefix() {
                sections($backend, Strategy::ColumnPrefix);
            }
        }
    )*};
}

mod sections {
    use super::*;
    sections_tests!(sqlite => Backend::Sqlite, postgres => Backend::Postgres, mysql => Backend::Mysql);
}

/// How much earlier than the TTL a takeover may be seen (timestamp truncation; both clocks are
/// this machine's).
const CLOCK_SLACK: Duration = Duration::from_millis(5);

fn killed_holder(backend: Backend) {
    let Some(target) = Target::from_env(backend) else {
        return;
    };
    let threads: Vec<_> = Strategy::ALL
        .into_iter()
        .map(|strategy| {
            let table = target.table();
            std::thread::spawn(move || killed_holder_with(&table, strategy))
        })
        .collect();
    let failures: Vec<String> = threads
        .into_iter()
        .zip(Strategy::ALL)
        .filter_map(|(t, strategy)| {
            t.join().err().map(|e| {
                format!(
                    "{backend} {strategy}: {}",
                    baton_tests::conformance::util::panic_message(&*e)
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn killed_holder_with(table: &baton_tests::conformance::Table, strategy: Strategy) {
    let ttl = Duration::from_secs(2);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Connected before the holder starts, so the kill follows its renewal at once and the
    // takeover below is not slowed by connecting.
    let locker = runtime.block_on(ready(
        LockerBuilder::new(table.client())
            .strategy(strategy)
            .retry(quick_retry()),
    ));

    let url = table.url().expect("a database table has a URL");
    let mut child = Command::new(env!("CARGO_BIN_EXE_lock_worker"))
        .arg("hold")
        .args(["--url", url])
        .args(["--strategy", strategy.as_str()])
        .args(["--name", "crash"])
        .args(["--ttl-ms", &ttl.as_millis().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the holder");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut next_line = |limit: Duration, what: &str| -> String {
        match lines.recv_timeout(limit) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("the holder did not print {what} within {limit:?}");
            }
        }
    };
    let held = next_line(Duration::from_secs(30), "held");
    let holder_token: u64 = held
        .split_whitespace()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("unexpected holder line {held:?}"));
    let renewed = next_line(Duration::from_secs(30), "renewed");
    let renew_sent: u128 = renewed
        .strip_prefix("renewed ")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("unexpected holder line {renewed:?}"));

    let killed_at = Instant::now();
    child.kill().expect("SIGKILL the holder");
    let status = child.wait().expect("reap the holder");
    assert!(!status.success(), "the holder exited by itself: {status}");

    runtime.block_on(async {
        // Right after the kill, the dead holder's lock is still in force.
        // (A try answered before the last renewal's send time + TTL found it held.)
        let e = locker.try_lock("crash").await.map(|g| g.token());
        if wall_ns() < renew_sent + ttl.as_nanos() {
            let e = e.expect_err("the killed holder's lock is still in force");
            assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
        }
        let guard = locker
            .lock_with(
                "crash",
                LockRequest::new().wait_timeout(ttl + Duration::from_secs(20)),
            )
            .await
            .expect("the lock is free once the dead holder's TTL passed");
        let granted = wall_ns();
        let after_kill = killed_at.elapsed();
        let since_renewal = Duration::from_nanos(
            u64::try_from(granted.saturating_sub(renew_sent)).unwrap_or(u64::MAX),
        );
        assert!(
            since_renewal + CLOCK_SLACK >= ttl,
            "taken over {since_renewal:?} after the dead holder's last renewal was sent, before its TTL {ttl:?}"
        );
        assert!(
            after_kill <= ttl + Duration::from_secs(10),
            "the lock stayed blocked {after_kill:?} after its holder was killed (TTL {ttl:?})"
        );
        assert!(
            guard.token() > holder_token,
            "{holder_token} then {}",
            guard.token()
        );
        println!(
            "{} {strategy}: taken over {after_kill:?} after the kill, {since_renewal:?} after the last renewal was sent",
            table.backend()
        );
    });
}

mod killed_holder {
    use super::*;
    #[test]
    fn sqlite() {
        killed_holder(Backend::Sqlite);
    }
    #[test]
    fn postgres() {
        killed_holder(Backend::Postgres);
    }
    #[test]
    fn mysql() {
        killed_holder(Backend::Mysql);
    }
}
