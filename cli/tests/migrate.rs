//! `baton migrate`: a two-row SQLite table moved to one row, held locks left for a later run.

#![allow(clippy::unwrap_used)]

use crate::common::{self, World};

#[test]
fn migrate_moves_a_two_row_table_and_leaves_held_locks_for_a_later_run() {
    let mut world = World::new("migrate");
    world.store.push_str("?layout=two-rows");
    world
        .output(&["run", "--lock", "a", "--", "true"])
        .expect_code(0);
    let release = world.path("release");
    let held = world.hold_until_file("b", &[], &release);

    // The held lock is left, and said so: status 75, run again.
    let first = world.output(&["migrate"]);
    first
        .expect_code(75)
        .expect_stdout("moved 1 counter(s)")
        .expect_stdout("\"b\"")
        .expect_stdout("run again");
    std::fs::write(&release, "").unwrap();
    held.finish().expect_code(0);

    let json = world.output(&["migrate", "--json"]).json();
    assert_eq!(json["finished"], true, "{json}");
    assert_eq!(json["moved"], 1, "{json}");
    assert_eq!(json["held"], serde_json::json!([]), "{json}");
    world
        .output(&["migrate"])
        .expect_code(0)
        .expect_stdout("one-row already");
    // Locks go on, tokens counting on from the moved counters.
    for lock in ["a", "b"] {
        let out = world.output(&[
            "run",
            "--lock",
            lock,
            "--",
            "sh",
            "-c",
            "echo $BATON_FENCING_TOKEN",
        ]);
        out.expect_code(0);
        let token: u64 = out.stdout.trim().parse().unwrap();
        assert!(token >= 2, "{lock}: token {token}");
    }
}

#[test]
fn migrate_needs_a_sql_store() {
    let home = std::env::temp_dir().join(format!("baton-migrate-memory-{}", std::process::id()));
    let out = common::Out::of(
        common::bare_baton(&home)
            .args(["--store", "memory:", "migrate"])
            .output()
            .unwrap(),
    );
    out.expect_code(64);
    assert!(out.stderr.contains("not one"), "{}", out.stderr);
}
