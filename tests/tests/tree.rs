//! Issue 43 on real stores: readers and writers of one tree, and a semaphore, across processes
//! (`tree_worker`), on every store the environment names (SQLite always; PostgreSQL, MariaDB
//! and Cassandra from `BATON_POSTGRES_URL`, `BATON_MYSQL_URL`, `BATON_CASSANDRA_URL`), for
//! both strategies that carry modes and paths.
//!
//! - 8 processes, 3 writers and 5 readers, lock `app`, `app.cache` and `app.cache.users` with
//!   paths on (every pair related): each worker checks markers while it holds (a writer finds
//!   no marker of a related path, a reader no writer's), and the test checks the logged
//!   intervals: no writer's overlaps any other section, and readers do overlap (the largest
//!   number of simultaneous readers is printed, and must be at least 2);
//! - 5 processes share a semaphore of 3 permits: never a fourth holder, in the markers or in
//!   the intervals;
//! - bad input gives typed errors on the store: an empty segment, a trailing dot, a mode
//!   mix-up, 0 permits.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use baton::{ErrorKind, LockRequest, Mode, Strategy};
use baton_tests::conformance::{Backend, Target};

const STRATEGIES: [Strategy; 2] = [Strategy::Bakery, Strategy::ColumnPrefix];

/// One logged section: role, path, enter, exit.
struct Section {
    role: String,
    path: String,
    enter: u128,
    exit: u128,
}

fn spawn(url: &str, strategy: Strategy, role: &str, sections: u64, dir: &Path, seed: u64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tree_worker"))
        .args([
            "--url",
            url,
            "--strategy",
            &strategy.to_string(),
            "--role",
            role,
        ])
        .args([
            "--sections",
            &sections.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        // Readers hold longer than a round trip, so that they meet even on a slow store.
        .args(["--hold-ms", if role == "reader" { "20" } else { "3" }])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start tree_worker")
}

fn related(a: &str, b: &str) -> bool {
    let under = |long: &str, short: &str| {
        long.len() > short.len() && long.starts_with(short) && long.as_bytes()[short.len()] == b'.'
    };
    a == b || under(a, b) || under(b, a)
}

/// The most sections of `role` that were in progress at one instant.
fn most_at_once(sections: &[Section], role: &str) -> usize {
    let mut events: Vec<(u128, i32)> = sections
        .iter()
        .filter(|s| s.role == role)
        .flat_map(|s| [(s.enter, 1), (s.exit, -1)])
        .collect();
    // Exits before enters at one instant: touching sections do not overlap.
    events.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

fn tree(backend: Backend, strategy: Strategy) {
    let Some(target) = Target::from_env(backend) else {
        return;
    };
    let table = target.table();
    let url = table
        .url()
        .expect("a store other processes reach")
        .to_owned();
    let dir = std::env::temp_dir().join(format!("baton-tree-{}", table.name()));
    std::fs::create_dir_all(&dir).expect("marker dir");
    let mut workers: Vec<(String, Child)> = Vec::new();
    for (i, role) in [
        "writer", "writer", "writer", "reader", "reader", "reader", "reader", "reader",
    ]
    .into_iter()
    .enumerate()
    {
        workers.push((role.into(), spawn(&url, strategy, role, 12, &dir, i as u64)));
    }
    for i in 0..5 {
        workers.push(("permit".into(), spawn(&url, strategy, "permit", 8, &dir, i)));
    }
    let mut failures = Vec::new();
    for (role, child) in workers {
        let out = child.wait_with_output().expect("wait for tree_worker");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !stdout.contains("done sections=") {
            failures.push(format!("{role}: {:?}: {stdout}", out.status.code()));
        }
    }
    let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{backend} {strategy}: {}",
        failures.join("\n")
    );
    let sections: Vec<Section> = log
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            Section {
                role: f[0].into(),
                path: f[1].into(),
                enter: f[2].parse().expect("enter"),
                exit: f[3].parse().expect("exit"),
            }
        })
        .collect();
    assert_eq!(
        sections.len(),
        3 * 12 + 5 * 12 + 5 * 8,
        "{backend} {strategy}: every section logged"
    );
    for (i, a) in sections.iter().enumerate() {
        for b in &sections[i + 1..] {
            let overlap = a.enter < b.exit && b.enter < a.exit;
            let conflict = (a.role == "writer" || b.role == "writer")
                && a.role != "permit"
                && b.role != "permit"
                && related(&a.path, &b.path);
            assert!(
                !(overlap && conflict),
                "{backend} {strategy}: a {} on {} and a {} on {} overlapped",
                a.role,
                a.path,
                b.role,
                b.path
            );
        }
    }
    let readers = most_at_once(&sections, "reader");
    let permits = most_at_once(&sections, "permit");
    println!(
        "{backend} {strategy}: at most {readers} readers at once (of 5), {permits} permit holders at once (of 3 permits, 5 processes)"
    );
    assert!(
        readers >= 2,
        "{backend} {strategy}: readers never shared the tree"
    );
    assert!(
        permits <= 3,
        "{backend} {strategy}: {permits} holders of 3 permits"
    );
}

fn bad_input(backend: Backend, strategy: Strategy) {
    let Some(target) = Target::from_env(backend) else {
        return;
    };
    let table = target.table();
    let locker = table
        .locker(strategy)
        .paths(true)
        .build()
        .expect("valid options");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        for bad in ["a..b", "a.", ".a"] {
            let e = locker.try_lock(bad).await.expect_err(bad);
            assert_eq!(
                e.kind(),
                ErrorKind::InvalidName,
                "{backend} {strategy} {bad}: {e}"
            );
        }
        assert_eq!(
            locker.semaphore("pool", 0).expect_err("0 permits").kind(),
            ErrorKind::InvalidOption
        );
        let held = locker
            .lock_with("pool", LockRequest::new().mode(Mode::Counted(3)))
            .await
            .expect("a permit");
        let e = locker
            .lock_with("pool", LockRequest::new().shared().try_once())
            .await
            .expect_err("shared on a semaphore");
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidOption,
            "{backend} {strategy}: {e}"
        );
        let e = locker
            .lock_with("pool", LockRequest::new().mode(Mode::Counted(4)).try_once())
            .await
            .expect_err("another size");
        assert_eq!(
            e.kind(),
            ErrorKind::InvalidOption,
            "{backend} {strategy}: {e}"
        );
        drop(held);
    });
}

macro_rules! store_tests {
    ($($module:ident => $backend:expr),*) => {$(
        mod $module {
            use super::*;
            #[test]
            fn bakery_tree() {
                tree($backend, Strategy::Bakery);
            }
            #[test]
            fn column_prefix_tree() {
                tree($backend, Strategy::ColumnPrefix);
            }
            #[test]
            fn bad_input_is_typed() {
                for strategy in STRATEGIES {
                    bad_input($backend, strategy);
                }
            }
        }
    )*};
}

store_tests!(
    sqlite => Backend::Sqlite,
    postgres => Backend::Postgres,
    mysql => Backend::Mysql,
    cassandra => Backend::Cassandra
);
