//! The `baton` command on every server store: PostgreSQL, MariaDB and Cassandra, at the URLs the
//! test command exports (`BATON_POSTGRES_URL`, `BATON_MYSQL_URL`, `BATON_CASSANDRA_URL`). A test
//! whose URL is unset is skipped, unless `BATON_REQUIRE_SERVICES=1`, when it fails.
//!
//! On each store: a job runs under a lock while a second `run` is refused; `locks` lists the
//! holder; `release --force` breaks the lock and its holder stops the job and exits 70; `purge`
//! runs; and the lock can then be taken again with a larger fencing token. The databases outlive
//! a test run, so every lock name is new.

use crate::common;

use common::*;

/// Runs a job under `lock` at once (no wait) and returns the fencing token it was given.
fn run_for_token(world: &World, lock: &str) -> u64 {
    let out = world.output(&[
        "run",
        "--lock",
        lock,
        "--no-wait",
        "--",
        "sh",
        "-c",
        "echo $BATON_FENCING_TOKEN",
    ]);
    out.expect_code(0);
    out.stdout
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("not a token ({e}); {out:#?}"))
}

fn every_command_on(var: &str, store: &str) {
    let Some(url) = store_url(var) else { return };
    let mut world = World::new(&format!("store-{store}"));
    world.store = url;
    let lock = fresh_name(&format!("cli-{store}"));

    let first_token = run_for_token(&world, &lock);

    // A TTL the holder's keep-alive (every third of it) finds the break within, and long
    // enough that its renewals outlast a slow store: with 2 s, a renewal on a new connection
    // (seconds to open, over TLS, on the slow 2-core machines the suite runs on) came too late
    // and the lease was gone before `locks` looked.
    let script = "trap 'exit 0' TERM; touch \"$READY\"; while :; do sleep 0.02; done";
    let holder = world.hold(&lock, &["--ttl", "10s", "--grace", "5s"], script);
    world
        .output(&["run", "--lock", &lock, "--no-wait", "--", "true"])
        .expect_code(75);

    let listed = world.output(&["locks", "--json"]);
    listed.expect_code(0);
    let json = listed.json();
    let entry = json["locks"]
        .as_array()
        .unwrap_or_else(|| panic!("no locks array; {listed:#?}"))
        .iter()
        .find(|l| l["name"] == lock.as_str())
        .unwrap_or_else(|| panic!("{lock} is not listed; {listed:#?}"))
        .clone();
    assert_eq!(entry["pid"], holder.pid(), "{entry}");
    if store.starts_with("cassandra") {
        // An operator's listing at ONE, from one replica (the store URL says QUORUM).
        let at_one = world.output(&["locks", "--json", "--consistency", "one"]);
        at_one.expect_code(0);
        let listed = at_one.json();
        let names: Vec<&str> = listed["locks"]
            .as_array()
            .unwrap_or_else(|| panic!("no locks array; {at_one:#?}"))
            .iter()
            .filter_map(|l| l["name"].as_str())
            .collect();
        assert!(
            names.contains(&lock.as_str()),
            "{lock} not listed at ONE; {at_one:#?}"
        );
    }

    world
        .output(&["release", "--force", &lock])
        .expect_code(0)
        .expect_stdout(&format!("released lock \"{lock}\""))
        .expect_stdout(&format!("pid {}", holder.pid()));
    holder.finish().expect_code(70).expect_stderr("lease lost");

    world.output(&["purge"]).expect_code(0);

    let again = run_for_token(&world, &lock);
    assert!(
        again > first_token + 1,
        "the holder's grant and the forced release each took a token: {again} after {first_token}"
    );
    assert!(!live_locks(&world).contains(&lock));
}

#[test]
fn every_command_on_postgres() {
    every_command_on("BATON_POSTGRES_URL", "postgres");
}

#[test]
fn every_command_on_mariadb() {
    every_command_on("BATON_MYSQL_URL", "mariadb");
}

#[test]
fn every_command_on_cassandra() {
    every_command_on("BATON_CASSANDRA_URL", "cassandra");
}

#[test]
fn every_command_on_postgres_over_verified_tls_with_a_password_file() {
    every_command_on("BATON_POSTGRES_TLS_URL", "postgres-tls");
}

#[test]
fn every_command_on_mariadb_over_verified_tls_with_a_password_file() {
    every_command_on("BATON_MYSQL_TLS_URL", "mariadb-tls");
}

/// `url` without its `password_file=` parameter.
fn without_password_file(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.starts_with("password_file="))
        .collect();
    format!("{base}?{}", kept.join("&"))
}

/// MariaDB's TLS-only user with its password in `BATON_STORE_PASSWORD`; a wrong one is said to
/// be refused, and no password shows in any output, `--json` included.
#[test]
fn a_password_from_the_environment_and_none_ever_shown() {
    let Some(url) = store_url("BATON_MYSQL_TLS_URL") else {
        return;
    };
    let world = World::new("password-env");
    let url = without_password_file(&url);
    let lock = fresh_name("cli-env-password");
    let run = |password: &str| {
        let mut cmd = bare_baton(&world.path("home"));
        cmd.env("BATON_STORE_PASSWORD", password).args([
            "--store",
            &url,
            "run",
            "--lock",
            &lock,
            "--no-wait",
            "--",
            "true",
        ]);
        Out::of(cmd.output().expect("baton runs"))
    };
    run("baton-tls").expect_code(0);
    let secret = "Wr0ng-env-pa55";
    let refused = run(secret);
    assert_ne!(refused.code, Some(0), "{refused:#?}");
    refused.expect_stderr("Access denied");
    assert!(!format!("{refused:?}").contains(secret), "{refused:#?}");
    // A password in the URL: not in `locks --json`, not in an error.
    let inline = url.replacen("baton_tls@", &format!("baton_tls:{secret}@"), 1);
    for args in [&["locks", "--json"][..], &["locks"][..]] {
        let mut cmd = bare_baton(&world.path("home"));
        cmd.args(["--store", &inline]).args(args);
        let out = Out::of(cmd.output().expect("baton runs"));
        assert!(!format!("{out:?}").contains(secret), "{out:#?}");
    }
}

#[test]
fn every_command_on_cassandra_over_verified_tls() {
    every_command_on("BATON_CASSANDRA_TLS_URL", "cassandra-tls");
}
