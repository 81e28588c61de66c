//! SQLite locks exclude across processes sharing one database file. The test binary spawns
//! itself as the other process (the `child_holder` test, which does nothing unless spawned).

use std::time::{Duration, Instant};

use baton::{ErrorKind, LockRequest, Locker};

use crate::common::{sqlite_file, table};

const CHILD: &str = "BATON_SQL_TEST_CHILD";

/// In the child: lock `shared`, write the token to the marker file, hold, release.
#[tokio::test]
async fn child_holder() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = spec.splitn(2, '|');
    let (Some(url), Some(marker)) = (parts.next(), parts.next()) else {
        panic!("bad child spec {spec:?}")
    };
    let locker = Locker::open(url).expect("valid URL");
    let mut guard = locker
        .lock_with("shared", LockRequest::new().ttl(Duration::from_secs(30)))
        .await
        .expect("lock in the child");
    std::fs::write(marker, guard.token().to_string()).expect("marker");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(guard.is_held());
    guard.release().await.expect("release in the child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locks_exclude_across_processes() {
    let file = sqlite_file();
    let url = format!("sqlite://{}?table={}", file.display(), table());
    let marker = file.with_extension("marker");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["process::child_holder", "--exact", "--test-threads=1"])
        .env(CHILD, format!("{url}|{}", marker.display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn the child");
    let started = Instant::now();
    let child_token: u64 = loop {
        if let Ok(text) = std::fs::read_to_string(&marker) {
            if let Ok(token) = text.trim().parse() {
                break token;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the child never locked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let locker = Locker::open(&url).expect("valid URL");
    let e = locker
        .try_lock("shared")
        .await
        .expect_err("the child holds it");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    let waited = Instant::now();
    let mut guard = locker
        .lock_with(
            "shared",
            LockRequest::new().wait_timeout(Duration::from_secs(20)),
        )
        .await
        .expect("handed over when the child releases");
    assert!(guard.token() > child_token);
    assert!(
        waited.elapsed() > Duration::from_millis(500),
        "{:?}",
        waited.elapsed()
    );
    guard.release().await.expect("release");
    assert!(child.wait().expect("child").success(), "the child failed");
    let _ = std::fs::remove_file(&marker);
}
