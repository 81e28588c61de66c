//! `baton locks`, `baton purge` and `baton release --force`.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{live_locks, wait_until, World};

#[test]
fn locks_lists_holders_as_a_table_and_as_json() {
    let world = World::new("locks");
    world
        .output(&["locks"])
        .expect_code(0)
        .expect_stdout("no live locks");
    assert_eq!(
        world.output(&["locks", "--json"]).json()["locks"],
        serde_json::json!([])
    );

    let release = world.path("release");
    let a = world.hold_until_file("nightly-digest", &[], &release);
    let b = world.hold_until_file("report 7", &["--strategy", "bakery"], &release);

    let table = world.output(&["locks"]);
    table.expect_code(0);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", table.stdout);
    for header in [
        "STRATEGY",
        "STATE",
        "HOST",
        "PID",
        "AGE",
        "EXPIRES IN",
        "TOKEN",
    ] {
        assert!(lines[0].contains(header), "{}", table.stdout);
    }
    let digest = lines
        .iter()
        .find(|l| l.starts_with("nightly-digest"))
        .unwrap();
    assert!(digest.contains("unique-insert"), "{digest}");
    assert!(digest.contains(&a.pid().to_string()), "{digest}");
    assert!(table.stdout.contains("report 7"), "{}", table.stdout);

    let json = world.output(&["locks", "--json"]).json();
    let locks = json["locks"].as_array().unwrap();
    let entry = |name: &str| locks.iter().find(|l| l["name"] == name).unwrap().clone();
    let digest = entry("nightly-digest");
    assert_eq!(digest["strategy"], "unique-insert");
    assert_eq!(digest["state"], "held");
    assert_eq!(digest["pid"], a.pid());
    assert!(digest["host"].as_str().is_some_and(|h| !h.is_empty()));
    assert!(digest["token"].as_u64().is_some_and(|t| t >= 1));
    assert!(digest["expires_in_ms"]
        .as_u64()
        .is_some_and(|ms| ms <= 60_000));
    assert!(digest["age_ms"].as_u64().is_some());
    let report = entry("report 7");
    assert_eq!(report["strategy"], "bakery");
    assert_eq!(report["pid"], b.pid());

    std::fs::write(&release, "").unwrap();
    a.finish().expect_code(0);
    b.finish().expect_code(0);
    assert!(live_locks(&world).is_empty());
}

#[test]
fn release_force_breaks_the_lock_and_says_whose_it_was() {
    let world = World::new("release");
    let release = world.path("release");
    for strategy in ["unique-insert", "bakery", "column-prefix"] {
        let lock = format!("broken-{strategy}");
        let holder = world.hold_until_file(&lock, &["--strategy", strategy], &release);
        let out = world.output(&["release", "--force", &lock]);
        out.expect_code(0)
            .expect_stdout(&format!("released lock \"{lock}\" ({strategy})"))
            .expect_stdout(&format!("pid {}", holder.pid()))
            .expect_stdout("token");
        assert!(!live_locks(&world).contains(&lock));
        // The holder finds out at its next renewal (60 s TTL: a while); end it now.
        drop(holder);
    }
    // JSON, and a lock nobody holds.
    let holder = world.hold_until_file("j", &[], &release);
    let json = world.output(&["release", "--force", "j", "--json"]).json();
    assert_eq!(json["name"], "j");
    assert_eq!(json["released"][0]["pid"], holder.pid());
    world
        .output(&["release", "--force", "j"])
        .expect_code(0)
        .expect_stdout("is not held");
    drop(holder);
}

#[test]
fn release_without_force_is_refused() {
    let world = World::new("noforce");
    world
        .output(&["release", "x"])
        .expect_code(64)
        .expect_stderr("needs --force")
        .expect_stderr("baton release --force x");
}

#[test]
fn purge_removes_expired_entries_and_says_which() {
    let world = World::new("purge");
    world
        .output(&["purge"])
        .expect_code(0)
        .expect_stdout("nothing to purge");
    // A holder that vanished without releasing: its entry stays until it expires.
    let holder = world.hold_until_file("abandoned", &["--ttl", "1s"], &world.path("never"));
    holder.signal("KILL");
    let _ = holder.finish();
    wait_until("the abandoned lock to expire", || {
        !live_locks(&world).contains(&String::from("abandoned"))
    });
    let out = world.output(&["purge"]);
    out.expect_code(0)
        .expect_stdout("removed 1 expired entry")
        .expect_stdout("abandoned");
    world
        .output(&["purge", "--json"])
        .expect_code(0)
        .expect_stdout("{\"removed\":[]}");
    // The next holder's token is still larger than the purged one's.
    let token = world.output(&[
        "run",
        "--lock",
        "abandoned",
        "--",
        "sh",
        "-c",
        "echo $BATON_FENCING_TOKEN",
    ]);
    token.expect_code(0);
    assert!(
        token.stdout.trim().parse::<u64>().unwrap() >= 2,
        "{token:#?}"
    );
}

#[test]
fn purge_json_lists_what_it_removed() {
    let world = World::new("purgejson");
    let holder = world.hold_until_file("gone", &["--ttl", "1s"], &world.path("never"));
    holder.signal("KILL");
    let _ = holder.finish();
    wait_until("the lock to expire", || live_locks(&world).is_empty());
    let json = world.output(&["purge", "--lock", "gone", "--json"]).json();
    let removed = json["removed"].as_array().unwrap();
    assert_eq!(removed.len(), 1, "{json}");
    assert_eq!(removed[0]["name"], "gone");
}

/// Issue 43: `baton run --shared` runs readers side by side, a writer waits for them, a
/// semaphore admits `--permits` runs, and `baton locks` shows each holder's mode.
#[test]
fn shared_runs_and_permits_share_the_lock_and_show_their_mode() {
    let world = World::new("modes");
    let release = world.path("release");
    for strategy in ["bakery", "column-prefix"] {
        let lock = format!("catalog-{strategy}");
        let shared = ["--strategy", strategy, "--shared"];
        let a = world.hold_until_file(&lock, &shared, &release);
        let b = world.hold_until_file(&lock, &shared, &release);
        world
            .output(&[
                "run",
                "-l",
                &lock,
                "--strategy",
                strategy,
                "-n",
                "--",
                "true",
            ])
            .expect_code(75);
        let json = world.output(&["locks", "--json"]).json();
        let mine: Vec<_> = json["locks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["name"] == lock.as_str())
            .cloned()
            .collect();
        assert_eq!(mine.len(), 2, "{json}");
        for entry in &mine {
            assert_eq!(entry["mode"], "shared", "{json}");
            assert_eq!(entry["state"], "held", "{json}");
        }
        let table = world.output(&["locks"]);
        assert!(
            table.stdout.lines().next().unwrap().contains("MODE"),
            "{}",
            table.stdout
        );
        std::fs::write(&release, "").unwrap();
        a.finish().expect_code(0);
        b.finish().expect_code(0);
        std::fs::remove_file(&release).unwrap();

        let lock = format!("encoders-{strategy}");
        let permits = ["--strategy", strategy, "--permits", "2"];
        let a = world.hold_until_file(&lock, &permits, &release);
        let b = world.hold_until_file(&lock, &permits, &release);
        let mut third = vec!["run", "-l", &lock, "-n"];
        third.extend(permits);
        third.extend(["--", "true"]);
        world.output(&third).expect_code(75);
        let mut other_size = vec!["run", "-l", &lock, "-n", "--strategy", strategy];
        other_size.extend(["--permits", "3", "--", "true"]);
        world
            .output(&other_size)
            .expect_code(64)
            .expect_stderr("counted(2)");
        std::fs::write(&release, "").unwrap();
        a.finish().expect_code(0);
        b.finish().expect_code(0);
        std::fs::remove_file(&release).unwrap();
    }
    world
        .output(&["run", "-l", "x", "--shared", "--", "true"])
        .expect_code(64)
        .expect_stderr("bakery or column-prefix");
    world
        .output(&[
            "run",
            "-l",
            "x",
            "--strategy",
            "bakery",
            "--permits",
            "0",
            "--",
            "true",
        ])
        .expect_code(64);
    world
        .output(&[
            "run",
            "-l",
            "x",
            "--strategy",
            "bakery",
            "--shared",
            "--permits",
            "2",
            "--",
            "true",
        ])
        .expect_code(64);
}

/// Issue 43: `baton run --paths` locks a tree: a run on `app` waits for one on `app.cache`, a
/// run on `app.db` does not; `baton locks` names each path; `release --force --paths` breaks
/// exactly one path.
#[test]
fn path_runs_cover_their_subtree() {
    let world = World::new("paths");
    let release = world.path("release");
    for strategy in ["bakery", "column-prefix"] {
        let tree = ["--strategy", strategy, "--paths"];
        // A short lease: the broken holder hears of it at its next renewal.
        let mut held = tree.to_vec();
        held.extend(["--ttl", "3s"]);
        let cache = world.hold_until_file("app.cache", &held, &release);
        let on = |lock: &str| {
            let mut args = vec!["run", "-l", lock, "-n"];
            args.extend(tree);
            args.extend(["--", "true"]);
            world.output(&args).code
        };
        assert_eq!(on("app"), Some(75), "{strategy}: the parent waits");
        assert_eq!(on("app.cache.users"), Some(75), "{strategy}: a child waits");
        assert_eq!(on("app.db"), Some(0), "{strategy}: a sibling runs");
        assert_eq!(on("apple"), Some(0), "{strategy}: a prefix is no parent");
        let json = world.output(&["locks", "--json"]).json();
        let names: Vec<&str> = json["locks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["name"].as_str())
            .collect();
        assert_eq!(names, ["app.cache"], "{json}");
        world
            .output(&["release", "--force", "--paths", "app.cache"])
            .expect_code(0)
            .expect_stdout("released lock \"app.cache\"");
        assert_eq!(
            cache.finish().code,
            Some(70),
            "{strategy}: its holder was told"
        );
    }
    world
        .output(&[
            "run",
            "-l",
            "a..b",
            "--strategy",
            "bakery",
            "--paths",
            "--",
            "true",
        ])
        .expect_code(64);
}

/// Issue 43: `release --force NAME --holder OWNER` breaks one reader; the other keeps running.
#[test]
fn release_force_holder_breaks_one_reader_only() {
    let world = World::new("holder");
    let release = world.path("release");
    for strategy in ["bakery", "column-prefix"] {
        let lock = format!("catalog-{strategy}");
        let shared = ["--strategy", strategy, "--shared", "--ttl", "3s"];
        let a = world.hold_until_file(&lock, &shared, &release);
        let b = world.hold_until_file(&lock, &shared, &release);
        let json = world.output(&["locks", "--json"]).json();
        let owner_of = |pid: u32| {
            json["locks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["name"] == lock.as_str() && l["pid"] == pid)
                .map(|l| l["owner"].as_str().unwrap().to_owned())
                .unwrap_or_else(|| panic!("no entry of pid {pid}: {json}"))
        };
        let owner = owner_of(a.pid());
        world
            .output(&["release", "--force", &lock, "--holder", &owner])
            .expect_code(0)
            .expect_stdout(&format!("released lock \"{lock}\""));
        let expires_in = |world: &World| {
            world.output(&["locks", "--json"]).json()["locks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["name"] == lock.as_str() && l["pid"] == b.pid())
                .and_then(|l| l["expires_in_ms"].as_u64())
        };
        assert_eq!(
            a.finish().code,
            Some(70),
            "{strategy}: the broken reader stops"
        );
        // The other reader renews after the break (its entry's time to live, falling between
        // renewals, goes up again), then ends normally.
        let mut last = expires_in(&world).expect("b still holds");
        wait_until("the other reader renewed after the break", || {
            let now = expires_in(&world).expect("b still holds");
            let renewed = now > last;
            last = now;
            renewed
        });
        std::fs::write(&release, "").unwrap();
        assert_eq!(
            b.finish().code,
            Some(0),
            "{strategy}: the other reader kept its lock"
        );
        std::fs::remove_file(&release).unwrap();
        world
            .output(&["release", "--force", &lock, "--holder", "nobody:1:00"])
            .expect_code(0)
            .expect_stdout("not held");
    }
}
