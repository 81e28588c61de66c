//! `baton demo`: worker processes contend for one lock and never overlap.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::World;

#[test]
fn demo_with_three_workers_shows_no_overlap() {
    let world = World::new("demo");
    let out = world.output(&["demo", "--workers", "3"]);
    out.expect_code(0)
        .expect_stdout("overlaps 0")
        .expect_stdout("tokens increasing: yes")
        .expect_stdout("WORKER")
        .expect_stdout("wait p50");
    // Progress: a line per acquisition when not on a terminal.
    assert_eq!(
        out.stdout.matches("acquired the lock").count(),
        15,
        "{}",
        out.stdout
    );
    // The demo leaves no lock behind.
    assert!(common::live_locks(&world).is_empty());
}

#[test]
fn demo_json_summary() {
    let world = World::new("demojson");
    let out = world.output(&[
        "demo",
        "--workers",
        "3",
        "--rounds",
        "3",
        "--strategy",
        "bakery",
        "--json",
    ]);
    out.expect_code(0);
    let summary = out.json();
    assert_eq!(summary["overlaps"], 0);
    assert_eq!(summary["interval_overlaps"], 0);
    assert_eq!(summary["acquisitions"], 9);
    assert_eq!(summary["tokens_increasing"], true);
    assert_eq!(summary["strategy"], "bakery");
    let workers = summary["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3);
    assert!(workers.iter().all(|w| w["acquisitions"] == 3));
}

#[test]
fn demo_refuses_an_in_process_store() {
    let world = World::new("demomem");
    let out = common::Out::of(
        common::bare_baton(&world.dir)
            .args(["--store", "memory:", "demo"])
            .output()
            .unwrap(),
    );
    out.expect_code(64).expect_stderr("inside one process");
}
