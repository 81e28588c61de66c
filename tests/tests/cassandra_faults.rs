//! Node failures on the three-node Cassandra cluster (replication factor 3), with the
//! `lock_worker` binary.
//!
//! 1. **One node killed mid-run.** For every strategy at once (a table each), 4 worker processes
//!    run 100 critical sections each on one lock. When the runs are under way this test kills
//!    node 2 with SIGKILL (`scripts/cassandra kill-node 2`), lets them go on against the two
//!    survivors (QUORUM and SERIAL still have 2 of 3 replicas), and starts it again
//!    (`scripts/cassandra restart-node 2`). Demands, per strategy: every process finishes all
//!    its sections; no two sections overlap in time, every section ended with its lease still
//!    held, tokens increase with entry time, and the shared counter has every increment
//!    (`baton_tests::multiproc::check`); failed acquisitions are only of the retryable kinds,
//!    and failed releases only unavailable, ambiguous, or `Lost` (a release held up past its
//!    lease's deadline while the cluster recovered).
//! 2. **Two nodes down.** With a holder of each strategy in place (keep-alive on, 3 s TTL), nodes
//!    2 and 3 are killed. Then every attempt to lock fails with `StoreUnavailable` and a message
//!    saying the store is unavailable (not `Busy`, not a timeout, never a grant), and each holder
//!    knows it lost its lease by the time its deadline passes: nobody believes it holds a lock.
//!    Nodes 2 and 3 are started again afterwards (also when the test fails).
//!
//! It kills nodes, so it needs the cluster `scripts/cassandra start3` manages, named by
//! `BATON_CASSANDRA3_URL` (`$(scripts/cassandra url3)`); unset, it is skipped with a line on
//! stderr (a failure under `BATON_REQUIRE_SERVICES=1`). Its own test binary keeps other tests
//! off the cluster while nodes are down.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use baton::cassandra::CassandraStore;
use baton::{ErrorKind, Locker, RetryPolicy, Strategy};
use baton_tests::conformance::target::{skip_or_fail, unique_table};
use baton_tests::conformance::Backend;
use baton_tests::multiproc::{check, Run, RunSpec};

const WORKERS: usize = 4;
const SECTIONS: u64 = 100;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/cassandra")
}

fn cassandra(args: &[&str]) -> Result<(), String> {
    let out = Command::new(script())
        .args(args)
        .output()
        .map_err(|e| format!("cannot run scripts/cassandra {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "scripts/cassandra {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Starts the listed nodes again when dropped: the cluster must be whole after this test.
struct Revive(Vec<&'static str>);

impl Drop for Revive {
    fn drop(&mut self) {
        for node in self.0.drain(..) {
            if let Err(e) = cassandra(&["restart-node", node]) {
                eprintln!("could not restart Cassandra node {node}: {e}");
            }
        }
    }
}

fn url3() -> Option<String> {
    match std::env::var("BATON_CASSANDRA3_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            skip_or_fail(
                Backend::Cassandra,
                "BATON_CASSANDRA3_URL is not set (scripts/cassandra start3; export BATON_CASSANDRA3_URL=$(scripts/cassandra url3)); the fault tests kill and restart its nodes",
            );
            None
        }
    }
}

fn table_url(base: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}table={}", unique_table())
}

/// Creates the table before several processes race to create it.
fn create(url: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(CassandraStore::open(url).expect("open").ensure_schema())
        .unwrap_or_else(|e| panic!("create the table at {url}: {e}"));
}

#[test]
fn cassandra_node_failures() {
    let Some(base) = url3() else { return };
    let started = Instant::now();
    one_node_killed_mid_run(&base);
    println!("one node killed: done after {:.1?}", started.elapsed());
    two_nodes_down(&base);
    println!("two nodes down: done after {:.1?}", started.elapsed());
}

fn one_node_killed_mid_run(base: &str) {
    let runs: Vec<(Strategy, Run)> = Strategy::ALL
        .into_iter()
        .map(|strategy| {
            let url = table_url(base);
            create(&url);
            let run = Run::start(
                env!("CARGO_BIN_EXE_lock_worker").as_ref(),
                RunSpec {
                    url,
                    strategy: strategy.to_string(),
                    workers: WORKERS,
                    sections: SECTIONS,
                    ttl: Duration::from_secs(10),
                    limit: Duration::from_secs(600),
                },
            )
            .expect("start the workers");
            (strategy, run)
        })
        .collect();

    let progress = |runs: &[(Strategy, Run)]| -> Vec<usize> {
        runs.iter().map(|(_, r)| r.progress()).collect()
    };
    // Under way: every strategy has run some sections.
    let deadline = Instant::now() + Duration::from_secs(180);
    while progress(&runs).iter().any(|p| *p < 20) {
        assert!(
            Instant::now() < deadline,
            "the workers made too little progress before the kill: {:?}",
            progress(&runs)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = progress(&runs);
    let mut revive = Revive(vec!["2"]);
    cassandra(&["kill-node", "2"]).expect("kill node 2");
    let killed = Instant::now();
    // Keep it down while the runs go on (a while, or until the runs are mostly done).
    while killed.elapsed() < Duration::from_secs(15)
        && progress(&runs)
            .iter()
            .any(|p| (*p as u64) < WORKERS as u64 * SECTIONS * 3 / 4)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let during = progress(&runs);
    revive.0.clear();
    cassandra(&["restart-node", "2"]).expect("restart node 2");
    let down_for = killed.elapsed();
    drop(revive);

    let mut failures = Vec::new();
    for (i, (strategy, run)) in runs.into_iter().enumerate() {
        let outcome = match run.finish() {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{strategy}: {e}"));
                continue;
            }
        };
        println!(
            "{strategy} with node 2 killed: {outcome}; {} sections before the kill, {} while it was down ({down_for:.1?} including its restart)",
            before[i],
            during[i] - before[i]
        );
        let problems = check(&outcome, WORKERS as u64 * SECTIONS);
        if !problems.is_empty() {
            failures.push(format!("{strategy}: {}", problems.join("; ")));
        }
        // Acquisitions may fail and be retried (store unavailable, ambiguous, or a wait that
        // outlasted the outage); a release may be unavailable, ambiguous, or `Lost` if it was
        // held up past its lease's deadline. Anything else is a bug.
        let mut unexpected: Vec<String> = outcome
            .lock_errors()
            .into_keys()
            .filter(|k| !matches!(k.as_str(), "store_unavailable" | "ambiguous" | "timed_out"))
            .collect();
        unexpected.extend(
            outcome
                .release_errors()
                .into_keys()
                .filter(|k| !matches!(k.as_str(), "store_unavailable" | "ambiguous" | "lost")),
        );
        if !unexpected.is_empty() {
            failures.push(format!(
                "{strategy}: errors of unexpected kinds {unexpected:?} (lock errors {:?}, release errors {:?})",
                outcome.lock_errors(),
                outcome.release_errors()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Waits until node 1 reports `count` nodes down (`DN` in `nodetool status`).
fn wait_until_down(count: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let out = Command::new(script())
            .args(["nodetool", "1", "status"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        if out.lines().filter(|l| l.starts_with("DN")).count() >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node 1 did not see {count} nodes down within {limit:?}: {out}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn two_nodes_down(base: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let ttl = Duration::from_secs(3);
        let quick = RetryPolicy {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(100),
            max_attempts: None,
            ..RetryPolicy::default()
        };
        let mut holders = Vec::new();
        let mut contenders = Vec::new();
        for strategy in Strategy::ALL {
            let url = table_url(base);
            let store = CassandraStore::open(&url).expect("open");
            store.ensure_schema().await.expect("schema");
            let holder = Locker::builder(store)
                .strategy(strategy)
                .ttl(ttl)
                .retry(quick)
                .build()
                .expect("locker");
            let guard = holder.lock("outage").await.expect("lock before the outage");
            holders.push((strategy, holder, guard));
            let contender = Locker::builder(CassandraStore::open(&url).expect("open"))
                .strategy(strategy)
                .ttl(ttl)
                .retry(quick)
                .wait_timeout(Duration::from_secs(5))
                .build()
                .expect("locker");
            // Connected (and the table checked) before the outage.
            contender.inspect("warm-up").await.expect("inspect");
            contenders.push((strategy, contender));
        }

        let revive = Revive(vec!["2", "3"]);
        cassandra(&["kill-node", "2"]).expect("kill node 2");
        cassandra(&["kill-node", "3"]).expect("kill node 3");
        let killed = Instant::now();
        // Until the survivor's failure detector marks them down, its requests wait for the
        // dead replicas and time out (maybe applied, rightly); after that it refuses at once
        // with "not enough replicas", which is what callers should see.
        wait_until_down(2, Duration::from_secs(60));
        println!("nodes 2 and 3 marked down after {:.1?}", killed.elapsed());

        let mut failures = Vec::new();
        for (strategy, contender) in &contenders {
            for attempt in ["try_lock", "lock"] {
                let result = if attempt == "try_lock" {
                    contender.try_lock("outage").await
                } else {
                    contender.lock("outage").await
                };
                match result {
                    Ok(g) => failures.push(format!(
                        "{strategy}: {attempt} was granted (token {}) with two of three nodes down",
                        g.token()
                    )),
                    Err(e)
                        if e.kind() == ErrorKind::StoreUnavailable
                            && e.message().contains("store unavailable") =>
                    {
                        println!("{strategy} {attempt} with two nodes down: {e}");
                    }
                    Err(e) => failures.push(format!(
                        "{strategy}: {attempt} failed with {:?}, not a clear StoreUnavailable: {e}",
                        e.kind()
                    )),
                }
            }
        }
        // Every holder finds out by its deadline: its renewals cannot reach a quorum.
        let deadline = ttl + Duration::from_millis(500);
        tokio::time::sleep(deadline.saturating_sub(killed.elapsed())).await;
        for (strategy, _, guard) in &holders {
            if guard.is_held() {
                failures.push(format!(
                    "{strategy}: the holder still believes it holds the lock {:?} after the outage began (TTL {ttl:?})",
                    killed.elapsed()
                ));
            }
        }
        drop(holders);
        drop(contenders);
        drop(revive);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}
