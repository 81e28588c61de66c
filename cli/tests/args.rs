//! Arguments, help, errors, and where the store is.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{bare_baton, Out, World};

#[test]
fn bad_arguments_exit_64_naming_the_problem() {
    let world = World::new("badargs");
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--lock", "x", "--strategy", "nope", "--", "true"],
            "unknown strategy \"nope\"",
        ),
        (
            &["run", "--lock", "x", "--ttl", "5x", "--", "true"],
            "unknown unit \"x\"",
        ),
        (
            &["run", "--lock", "x", "--ttl", "5", "--", "true"],
            "has no unit",
        ),
        (&["run", "--lock", "x", "--ttl", "0s", "--", "true"], "zero"),
        (
            &["run", "--lock", "x", "--ttl=-5s", "--", "true"],
            "negative",
        ),
        (
            &["run", "--lock", "x", "--wait", "soon", "--", "true"],
            "not a duration",
        ),
        (
            &["run", "--lock", "x", "--grace", "1y", "--", "true"],
            "unknown unit \"y\"",
        ),
        (
            &[
                "run",
                "--lock",
                "x",
                "--no-wait",
                "--wait",
                "5s",
                "--",
                "true",
            ],
            "cannot be used with",
        ),
        (&["run", "--lock", "x"], "COMMAND"),
        (&["run", "--", "true"], "--lock"),
        (&["run", "--lock", "", "--", "true"], "lock name is empty"),
        (
            &["run", "--lock", "x", "--min-lease", "150%", "--", "true"],
            "for '--min-lease <PART>': \"150%\" is too much",
        ),
        (
            &["run", "--lock", "x", "--min-lease=-5%", "--", "true"],
            "for '--min-lease <PART>': \"-5%\" is negative",
        ),
        (
            &["run", "--lock", "x", "--min-lease", "half", "--", "true"],
            "for '--min-lease <PART>': \"half\" is not a duration",
        ),
        (
            &["run", "--lock", "x", "--min-lease", "50", "--", "true"],
            "\"50\" has no unit",
        ),
        (
            &["run", "--lock", "x", "--min-lease", "90s", "--", "true"],
            "--min-lease 1m30s is more than a lease can have left with --ttl 1m",
        ),
        (
            &["run", "--lock", "x", "--ttl", "1s", "--min-lease", "99%", "--", "true"],
            "--min-lease 99% (990ms) is more than a lease can have left with --ttl 1s: at most 989ms",
        ),
        (&["demo", "--workers", "0"], "0 is not in 1..=64"),
        (
            &["locks", "--consistency", "sometimes"],
            "unknown consistency level \"sometimes\": use one of one, quorum, local_quorum, all",
        ),
        // The world's store is a SQLite file: no levels there.
        (
            &["locks", "--consistency", "one"],
            "--consistency one applies to Cassandra stores only, not to sqlite:// stores",
        ),
        (&["nosuch"], "unrecognized subcommand"),
    ];
    for (args, needle) in cases {
        let out = world.output(args);
        out.expect_code(64).expect_stderr(needle);
    }
}

#[test]
fn bad_store_urls_exit_64_and_show_the_url_forms() {
    let world = World::new("badurl");
    for (url, needle) in [
        ("nosuch://x", "unknown scheme"),
        ("no scheme", "no scheme"),
        ("sqlite:relative.db", "malformed store URL"),
    ] {
        let out = Out::of(
            bare_baton(&world.dir)
                .args(["--store", url, "locks"])
                .output()
                .unwrap(),
        );
        out.expect_code(64)
            .expect_stderr(needle)
            .expect_stderr("sqlite:///absolute/path.db");
    }
}

#[test]
fn an_unusable_store_exits_69_with_a_hint() {
    let world = World::new("unusable");
    let out = Out::of(
        bare_baton(&world.dir)
            .args(["--store", "sqlite:///nonexistent-dir/sub/locks.db", "locks"])
            .output()
            .unwrap(),
    );
    out.expect_code(69)
        .expect_stderr("/nonexistent-dir/sub/locks.db")
        .expect_stderr("hint:");
    // `run` never starts the command when the store cannot be used.
    let ran = world.path("ran");
    let out = Out::of(
        bare_baton(&world.dir)
            .args([
                "--store",
                "sqlite:///nonexistent-dir/sub/locks.db",
                "run",
                "--lock",
                "x",
                "--",
                "touch",
            ])
            .arg(&ran)
            .output()
            .unwrap(),
    );
    out.expect_code(69);
    assert!(!ran.exists());
}

#[test]
fn every_subcommand_has_help_with_examples() {
    let world = World::new("help");
    for sub in ["run", "locks", "purge", "release", "demo"] {
        let out = world.output(&[sub, "--help"]);
        out.expect_code(0)
            .expect_stdout("Examples:")
            .expect_stdout("Exit status");
    }
    let run = world.output(&["run", "--help"]);
    for needle in [
        "75",
        "69",
        "64",
        "70",
        "BATON_FENCING_TOKEN",
        "--no-wait",
        "--grace",
        "--min-lease <PART>",
        "[default: 50%]",
        "BATON_LEASE_LEFT_MS",
    ] {
        run.expect_stdout(needle);
    }
    let top = world.output(&["--help"]);
    top.expect_code(0)
        .expect_stdout("BATON_STORE")
        .expect_stdout("Crontab")
        .expect_stdout("baton run --lock nightly-digest --no-wait");
    assert!(!top.stdout.contains("__watchdog") && !top.stdout.contains("__demo-worker"));
    world
        .output(&["--version"])
        .expect_code(0)
        .expect_stdout("baton");
}

#[test]
fn the_default_store_is_a_sqlite_file_in_the_users_data_directory() {
    let world = World::new("default");
    // HOME only: ~/.local/share/baton/locks.db, directory created.
    let out = Out::of(bare_baton(&world.dir).arg("locks").output().unwrap());
    out.expect_code(0).expect_stdout("no live locks");
    assert!(world.dir.join(".local/share/baton").is_dir());
    let db = world.dir.join(".local/share/baton/locks.db");
    assert!(db.exists(), "{out:#?}");
    // XDG_DATA_HOME wins over HOME.
    let xdg = world.path("xdg");
    let out = Out::of(
        bare_baton(&world.dir)
            .env("XDG_DATA_HOME", &xdg)
            .args(["run", "--lock", "d", "--", "true"])
            .output()
            .unwrap(),
    );
    out.expect_code(0);
    assert!(xdg.join("baton/locks.db").exists());
    // BATON_STORE wins over both.
    let chosen = world.path("chosen.db");
    let out = Out::of(
        bare_baton(&world.dir)
            .env("BATON_STORE", format!("sqlite://{}", chosen.display()))
            .args(["locks"])
            .output()
            .unwrap(),
    );
    out.expect_code(0).expect_stdout("chosen.db");
}

#[test]
fn no_colour_when_not_a_terminal() {
    let world = World::new("colour");
    let out = Out::of(
        world
            .baton(&["run", "--lock", "c", "--ttl", "5x", "--", "true"])
            .env_remove("NO_COLOR")
            .output()
            .unwrap(),
    );
    out.expect_code(64);
    let out = Out::of(
        world
            .baton(&["release", "c"])
            .env_remove("NO_COLOR")
            .output()
            .unwrap(),
    );
    out.expect_code(64);
    assert!(!out.stderr.contains('\x1b'), "{out:#?}");
}
