//! `baton run`: exit statuses, busy and timed-out locks, lease loss, signals, the watchdog,
//! mutual exclusion between runs, and the command's environment.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{live_locks, process_gone, wait_until, World};

#[test]
fn the_commands_exit_status_becomes_batons() {
    let world = World::new("status");
    for (script, code) in [
        ("exit 0", 0),
        ("exit 3", 3),
        ("exit 255", 255),
        // Death by a signal: 128 + the signal's number, as shells report it.
        ("kill -TERM $$", 143),
        ("kill -KILL $$", 137),
    ] {
        world
            .output(&["run", "--lock", "status", "--", "sh", "-c", script])
            .expect_code(code);
    }
    // Each run released the lock.
    assert!(live_locks(&world).is_empty());
}

#[test]
fn the_command_sees_its_token_and_lock_and_tokens_increase() {
    let world = World::new("token");
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let out = world.output(&[
            "run",
            "--lock",
            "digest 42",
            "--",
            "sh",
            "-c",
            "echo \"$BATON_FENCING_TOKEN|$BATON_LOCK\"",
        ]);
        out.expect_code(0);
        let (token, lock) = out.stdout.trim().split_once('|').unwrap();
        assert_eq!(lock, "digest 42");
        tokens.push(token.parse::<u64>().unwrap());
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn no_wait_on_a_held_lock_exits_75_without_running_the_command() {
    let world = World::new("busy");
    let release = world.path("release");
    let holder = world.hold_until_file("nightly", &[], &release);
    let ran = world.path("ran");
    let out = world.output(&[
        "run",
        "--lock",
        "nightly",
        "--no-wait",
        "--",
        "touch",
        ran.to_str().unwrap(),
    ]);
    out.expect_code(75)
        .expect_stderr("lock \"nightly\" is busy")
        .expect_stderr(&format!("pid {}", holder.pid()))
        .expect_stderr("hint:");
    assert!(!ran.exists(), "the command ran although the lock was busy");
    std::fs::write(&release, "").unwrap();
    holder.finish().expect_code(0);
    // Free again: the same run now succeeds.
    world
        .output(&[
            "run",
            "--lock",
            "nightly",
            "--no-wait",
            "--",
            "touch",
            ran.to_str().unwrap(),
        ])
        .expect_code(0);
    assert!(ran.exists());
}

#[test]
fn a_wait_that_times_out_exits_75() {
    let world = World::new("timeout");
    let release = world.path("release");
    let holder = world.hold_until_file("slow", &[], &release);
    let started = Instant::now();
    let out = world.output(&["run", "--lock", "slow", "--wait", "300ms", "--", "true"]);
    out.expect_code(75).expect_stderr("timed out after 300ms");
    assert!(started.elapsed() >= Duration::from_millis(300));
    std::fs::write(&release, "").unwrap();
    holder.finish().expect_code(0);
}

#[test]
fn a_waiting_run_gets_the_lock_when_it_is_released() {
    let world = World::new("handoff");
    let release = world.path("release");
    let holder = world.hold_until_file("handoff", &[], &release);
    let waiter = world.spawn(&[
        "run",
        "--lock",
        "handoff",
        "--wait",
        "20s",
        "--",
        "sh",
        "-c",
        "echo got $BATON_FENCING_TOKEN",
    ]);
    std::fs::write(&release, "").unwrap();
    holder.finish().expect_code(0);
    waiter.finish().expect_code(0).expect_stdout("got 2");
}

#[test]
fn a_lost_lease_sends_sigterm_and_exits_70() {
    let world = World::new("lost");
    let marker = world.path("terminated");
    let script = format!(
        "trap 'echo term > \"{}\"; exit 0' TERM; touch \"$READY\"; while :; do sleep 0.02; done",
        marker.display()
    );
    // The keep-alive renews every third of the TTL and finds the lock broken within it; 5 s,
    // not less, so that renewals outlast a loaded machine (with 1 s the lease once expired by
    // itself before the forced release: "not held: nothing to release").
    let holder = world.hold("job", &["--ttl", "5s", "--grace", "10s"], &script);
    let broken = world.output(&["release", "--force", "job"]);
    broken
        .expect_code(0)
        .expect_stdout("released lock \"job\"")
        .expect_stdout(&format!("pid {}", holder.pid()));
    let out = holder.finish();
    out.expect_code(70)
        .expect_stderr("lease lost")
        .expect_stderr("SIGTERM");
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "term");
}

#[test]
fn a_command_ignoring_sigterm_gets_sigkill_after_the_grace_period() {
    let world = World::new("grace");
    let pid_file = world.path("pid");
    let script = format!(
        "trap '' TERM; echo $$ > \"{}\"; touch \"$READY\"; while :; do sleep 0.02; done",
        pid_file.display()
    );
    let holder = world.hold("stubborn", &["--ttl", "5s", "--grace", "200ms"], &script);
    world
        .output(&["release", "--force", "stubborn"])
        .expect_code(0);
    holder
        .finish()
        .expect_code(70)
        .expect_stderr("sending SIGKILL");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(process_gone(pid), "the command survived its lost lease");
}

fn signal_is_forwarded(signal: &str) {
    let world = World::new(&format!("sig{signal}"));
    let marker = world.path("got");
    let script = format!(
        "trap 'echo {signal} > \"{}\"; exit 7' {signal}; touch \"$READY\"; while :; do sleep 0.02; done",
        marker.display()
    );
    let holder = world.hold("sig", &[], &script);
    holder.signal(signal);
    // The command's own status (from its trap) comes back.
    holder
        .finish()
        .expect_code(7)
        .expect_stderr(&format!("SIG{signal} received"));
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), signal);
    // The lock was released: nothing listed, and a --no-wait run gets it at once.
    assert!(live_locks(&world).is_empty());
    world
        .output(&["run", "--lock", "sig", "--no-wait", "--", "true"])
        .expect_code(0);
}

#[test]
fn sigterm_reaches_the_command_and_the_lock_is_released() {
    signal_is_forwarded("TERM");
}

#[test]
fn sigint_reaches_the_command_and_the_lock_is_released() {
    signal_is_forwarded("INT");
}

#[test]
fn a_signal_while_waiting_ends_baton_without_running_the_command() {
    let world = World::new("sigwait");
    let release = world.path("release");
    // Bakery, because its waiters show in the store: that is how this test knows the waiter
    // is waiting (and has its signal handlers) before signalling it.
    let holder = world.hold_until_file("w", &["--strategy", "bakery"], &release);
    let ran = world.path("ran");
    let waiter = world.spawn(&[
        "run",
        "--lock",
        "w",
        "--strategy",
        "bakery",
        "--ttl",
        "2s",
        "--wait",
        "forever",
        "--",
        "touch",
        ran.to_str().unwrap(),
    ]);
    wait_until("the waiter's ticket", || {
        let out = world.output(&["locks", "--json"]);
        out.json()["locks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["pid"] == waiter.pid() && l["state"] != "held")
    });
    waiter.signal("TERM");
    waiter
        .finish()
        .expect_code(143)
        .expect_stderr("the command was not run");
    assert!(!ran.exists());
    std::fs::write(&release, "").unwrap();
    holder.finish().expect_code(0);
}

#[test]
fn the_watchdog_stops_the_command_when_baton_is_killed() {
    let world = World::new("watchdog");
    let marker = world.path("terminated");
    let pid_file = world.path("pid");
    let script = format!(
        "trap 'echo term > \"{}\"; exit 0' TERM; echo $$ > \"{}\"; touch \"$READY\"; while :; do sleep 0.02; done",
        marker.display(),
        pid_file.display()
    );
    let holder = world.hold("orphan", &["--grace", "5s"], &script);
    holder.signal("KILL");
    let out = holder.finish();
    assert_eq!(out.code, None, "baton was killed");
    wait_until("the watchdog to stop the command", || marker.exists());
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until("the command to end", || process_gone(pid));
}

#[test]
fn two_runs_on_one_lock_never_overlap() {
    let world = World::new("exclusion");
    let log = world.path("log");
    let script = format!(
        "echo \"enter $BATON_FENCING_TOKEN\" >> '{log}'; sleep 0.05; echo \"exit $BATON_FENCING_TOKEN\" >> '{log}'",
        log = log.display()
    );
    let runs: Vec<_> = (0..6)
        .map(|_| {
            world.spawn(&[
                "run", "--lock", "shared", "--wait", "30s", "--", "sh", "-c", &script,
            ])
        })
        .collect();
    for run in runs {
        run.finish().expect_code(0);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 12, "{text}");
    // Without overlap, every enter is followed by the same holder's exit.
    let mut last_token = 0;
    for pair in lines.chunks(2) {
        let enter = pair[0].strip_prefix("enter ").expect(&text);
        let exit = pair[1].strip_prefix("exit ").expect(&text);
        assert_eq!(enter, exit, "overlapping runs:\n{text}");
        let token: u64 = enter.parse().unwrap();
        assert!(token > last_token, "tokens must increase:\n{text}");
        last_token = token;
    }
}

#[test]
fn a_missing_command_exits_127_and_releases_the_lock() {
    let world = World::new("missing");
    world
        .output(&["run", "--lock", "m", "--", "/nonexistent/command"])
        .expect_code(127)
        .expect_stderr("command not found");
    world
        .output(&["run", "--lock", "m", "--no-wait", "--", "true"])
        .expect_code(0);
}

#[test]
fn other_strategies_run_too() {
    let world = World::new("strategies");
    for strategy in ["bakery", "column-prefix", "unique-insert"] {
        let lock = format!("s-{strategy}");
        world
            .output(&[
                "run",
                "--lock",
                &lock,
                "--strategy",
                strategy,
                "--",
                "sh",
                "-c",
                "exit 4",
            ])
            .expect_code(4);
    }
}

#[test]
fn standard_input_from_a_pipe_reaches_the_command() {
    use std::io::Write;
    let world = World::new("stdin");
    let mut child = world
        .baton(&["run", "--lock", "in", "--", "cat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = common::Out::of(child.wait_with_output().unwrap());
    out.expect_code(0).expect_stdout("hello");
}
