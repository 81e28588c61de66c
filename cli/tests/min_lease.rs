//! `baton run --min-lease`: a lock granted with little of its lease left (the store answered the
//! acquisition late) is renewed before the command starts, and the command is not started at
//! all when the store is too slow to renew in time. On PostgreSQL (`BATON_POSTGRES_URL`) and
//! MariaDB (`BATON_MYSQL_URL`), through a proxy on loopback that holds chosen replies back; a
//! test whose URL is unset is skipped, unless `BATON_REQUIRE_SERVICES=1`, when it fails.
//!
//! The lease counts from when the acquisition's claim was sent, so a claim answered 2.6 s late
//! leaves a 4 s lease with under 1.4 s: what a store in trouble (a lock wait, a failover, a
//! retried statement) does to a grant.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{fresh_name, store_url, World, DEADLINE};

/// A TCP proxy on 127.0.0.1 to a database. The statements that write a lock record (their
/// parameters carry `owner=`: an acquisition's claim, a renewal's compare-and-set) each take the
/// next of the proxy's delays: the first reply after such a statement is held back that long.
/// Once the delays are used up, everything passes at once.
struct SlowProxy {
    port: u16,
    delays: Arc<Mutex<VecDeque<Duration>>>,
}

/// What marks a statement that writes a lock record: the record's first field.
const NEEDLE: &[u8] = b"owner=";

impl SlowProxy {
    fn start(upstream: String, delays: &[Duration]) -> SlowProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let delays = Arc::new(Mutex::new(delays.iter().copied().collect::<VecDeque<_>>()));
        let shared = Arc::clone(&delays);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                connect(client, server, Arc::clone(&shared));
            }
        });
        SlowProxy { port, delays }
    }

    /// `url` with its host and port replaced by the proxy's, and without TLS (the proxy reads
    /// the statements).
    fn url(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").unwrap();
        let (auth, path) = rest.split_once('/').unwrap_or((rest, ""));
        let user = auth
            .rsplit_once('@')
            .map(|(u, _)| format!("{u}@"))
            .unwrap_or_default();
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let mut params: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty() && !p.starts_with("sslmode=") && !p.starts_with("ssl-mode="))
            .collect();
        params.push(if scheme.starts_with("postgres") {
            "sslmode=disable"
        } else {
            "ssl-mode=disabled"
        });
        format!(
            "{scheme}://{user}127.0.0.1:{}/{path}?{}",
            self.port,
            params.join("&")
        )
    }

    /// How many delays are still to be used.
    fn unused(&self) -> usize {
        self.delays.lock().unwrap().len()
    }
}

/// Copies bytes both ways between `client` and `server`, holding back the reply to a statement
/// that writes a lock record while delays remain.
fn connect(client: TcpStream, server: TcpStream, delays: Arc<Mutex<VecDeque<Duration>>>) {
    // When the next reply may pass, if it is to be held.
    let hold_until: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let (mut from_client, mut to_server) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (mut from_server, mut to_client) = (server, client);
    let hold = Arc::clone(&hold_until);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from_client.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            if chunk.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
                if let Some(delay) = delays.lock().unwrap().pop_front() {
                    // Set before the statement goes on, so its reply cannot slip through.
                    *hold.lock().unwrap() = Some(Instant::now() + delay);
                }
            }
            if to_server.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Write);
    });
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from_server.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let until = hold_until.lock().unwrap().take();
            if let Some(until) = until {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
            }
            if to_client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
    });
}

/// `host:port` of `url`.
fn address(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let auth = rest.split_once('/').map_or(rest, |(a, _)| a);
    let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    host.split('?').next().unwrap_or(host).to_owned()
}

/// A world whose store is the database at `$var`, through a proxy with `delays`.
fn slow_world(var: &str, test: &str, delays: &[Duration]) -> Option<(World, SlowProxy)> {
    let url = store_url(var)?;
    let mut world = World::new(test);
    // The table is created (and the connection warmed) before any delay is armed.
    world.store = url.clone();
    world.output(&["locks"]).expect_code(0);
    let proxy = SlowProxy::start(address(&url), delays);
    world.store = proxy.url(&url);
    Some((world, proxy))
}

/// Long enough for what must fit in it to survive a paused test process (seen at 0.4 s here):
/// a late grant leaves 1.4 s of it, in which the renewal must land.
const TTL: &str = "4s";
/// The claim's reply comes this late (well inside the store's 5 s statement timeout): the
/// lease is granted with under 1.4 s of its 3.96 s left.
const LATE_GRANT: Duration = Duration::from_millis(2_600);

/// The claim is answered late; the renewal after it at once. The command starts only after that
/// renewal, with more than half the TTL left, and runs to its end.
fn a_late_grant_is_renewed_before_the_command_starts(var: &str, store: &str) {
    let Some((world, proxy)) = slow_world(var, &format!("late-{store}"), &[LATE_GRANT]) else {
        return;
    };
    let lock = fresh_name(&format!("min-lease-{store}"));
    let started = Instant::now();
    let out = world.output(&[
        "run",
        "--lock",
        &lock,
        "--ttl",
        TTL,
        "--",
        "sh",
        "-c",
        "echo \"$BATON_LEASE_LEFT_MS\"; sleep 0.3; echo done",
    ]);
    assert_eq!(proxy.unused(), 0, "the claim was not held back; {out:#?}");
    assert!(started.elapsed() >= LATE_GRANT, "{out:#?}");
    out.expect_code(0).expect_stdout("done");
    let left: u64 = out.stdout.lines().next().unwrap().parse().unwrap();
    // The default --min-lease is 50% of the 4 s TTL; the late grant left under 1.4 s.
    assert!(
        left >= 2_000,
        "the command started with only {left} ms of its lease left; {out:#?}"
    );
    assert!(left < 4_000, "{out:#?}");
}

/// The claim is answered late, and so is the renewal after it: later than the lease lasts. The
/// command is not started (without --min-lease it started, then was stopped when the lease ran
/// out moments later), baton exits 69 saying why, and the lock is free again.
fn a_store_too_slow_to_renew_starts_nothing(var: &str, store: &str) {
    // The renewal's reply comes after the lease (1.4 s left at the grant) has ended.
    let delays = [LATE_GRANT, Duration::from_millis(2_500)];
    let Some((world, proxy)) = slow_world(var, &format!("slow-{store}"), &delays) else {
        return;
    };
    let lock = fresh_name(&format!("min-lease-{store}"));
    let ran = world.path("ran");
    let out = world.output(&[
        "run",
        "--lock",
        &lock,
        "--ttl",
        TTL,
        "--grace",
        "5s",
        "--",
        "sh",
        "-c",
        &format!("touch '{}'; sleep 3", ran.display()),
    ]);
    assert_eq!(proxy.unused(), 0, "a reply was not held back; {out:#?}");
    assert!(
        !ran.exists(),
        "the command was started on a lease about to end; {out:#?}"
    );
    out.expect_code(69)
        .expect_stderr("the command was not run")
        .expect_stderr("--min-lease 50%")
        .expect_stderr("hint:");
    // Released (or expired): the next run gets it.
    let start = Instant::now();
    loop {
        let next = world.output(&["run", "--lock", &lock, "--no-wait", "--", "true"]);
        if next.code == Some(0) {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the lock stayed taken; {next:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn postgres_a_late_grant_is_renewed_before_the_command_starts() {
    a_late_grant_is_renewed_before_the_command_starts("BATON_POSTGRES_URL", "postgres");
}

#[test]
fn postgres_a_store_too_slow_to_renew_starts_nothing() {
    a_store_too_slow_to_renew_starts_nothing("BATON_POSTGRES_URL", "postgres");
}

#[test]
fn mariadb_a_late_grant_is_renewed_before_the_command_starts() {
    a_late_grant_is_renewed_before_the_command_starts("BATON_MYSQL_URL", "mariadb");
}

#[test]
fn mariadb_a_store_too_slow_to_renew_starts_nothing() {
    a_store_too_slow_to_renew_starts_nothing("BATON_MYSQL_URL", "mariadb");
}
