//! The fault harness's checker, shown to catch a lock that lets two workers in
//! (`docs/faults-design.md`). Three `chaos_worker` processes run against one register: first
//! with a fake lock (no lock at all, tokens of their own), which the checker must find unsafe
//! (fenced violations and overlaps); then with baton's lock on one SQLite file for each
//! strategy, which it must find clean. The network faults themselves run in `scripts/chaos`
//! (network namespaces need root and take minutes; the test command runs its short mix).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use baton_tests::chaos::{check, history, register};

const WORKERS: usize = 3;

/// Runs `WORKERS` workers with `extra` arguments for `seconds` against a fresh register and
/// returns its report.
fn run(dir: &Path, label: &str, extra: &[&str], seconds: u64) -> check::Report {
    let history_path = dir.join(format!("{label}.history"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind the register");
    let addr = listener.local_addr().expect("address").to_string();
    let file = std::fs::File::create(&history_path).expect("history file");
    runtime.spawn(register::serve(listener, file));
    let mark = |label: &str| {
        runtime.block_on(async {
            let mut c = baton_tests::chaos::client::RegisterClient::connect(&addr)
                .await
                .expect("register");
            c.request(&format!("mark {label}")).await.expect("mark");
        })
    };
    mark("start");
    let children: Vec<_> = (0..WORKERS)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_chaos_worker"))
                .args(["--register", &addr, "--client", &format!("{label}-{i}")])
                .args(["--seconds", &seconds.to_string(), "--hold-ms", "20"])
                .args(extra)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start chaos_worker")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("chaos_worker");
        assert!(
            out.status.success(),
            "chaos_worker failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    mark("stop");
    // The register decided everything the workers sent before answering them; give its file
    // writes a moment only through the runtime's shutdown.
    runtime.shutdown_timeout(Duration::from_secs(5));
    let text = std::fs::read_to_string(&history_path).expect("history");
    check::check(&history::parse(&text).expect("parse history"))
}

#[test]
fn the_checker_catches_a_fake_lock_and_passes_a_real_one() {
    let dir = std::env::temp_dir().join(format!("baton-chaos-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");

    let fake = run(&dir, "fake", &["--fake"], 2);
    eprintln!("fake lock:\n{fake}");
    assert!(!fake.safe(), "the checker missed a fake lock:\n{fake}");
    assert!(fake.fenced_violations > 0, "{fake}");
    assert!(fake.unfenced_overlaps > 0, "{fake}");
    assert!(fake.token_regressions > 0, "{fake}");

    for strategy in ["unique-insert", "bakery", "column-prefix"] {
        let db = dir.join(format!("{strategy}.db"));
        let url = format!("sqlite://{}", db.display());
        let real = run(
            &dir,
            strategy,
            &["--url", &url, "--strategy", strategy, "--ttl-ms", "5000"],
            2,
        );
        eprintln!("{strategy} on SQLite:\n{real}");
        assert!(real.safe(), "{strategy}: {real}");
        assert_eq!(real.unfenced_overlaps, 0, "{strategy}: {real}");
        assert!(real.sections >= WORKERS as u64, "{strategy}: {real}");
        assert_eq!(real.losses_happened, 0, "{strategy}: {real}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
