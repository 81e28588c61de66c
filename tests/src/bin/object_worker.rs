//! A worker process for the object tests (`tests/objects.rs`): increments one counter object.
//!
//! ```text
//! object_worker URL STRATEGY NAME locked|optimistic N [TTL_MS]
//! ```
//!
//! `locked`: N times `get_and_lock` (waiting), then `update_locked_and_release(n + 1)` (or
//! `insert_locked` then `unlock` for the first). `optimistic`: N times `get`, then
//! `update_optimistic(n + 1, version)` (or `insert` when there is none), retried on
//! `VersionMismatch`, `Busy` and `AlreadyExists`. After each acknowledged increment it prints
//! `ok <value written>` and flushes, so a test that kills it knows exactly which increments were
//! acknowledged. Store errors that leave the increment undone are retried; one that may have
//! applied it (`Ambiguous`) is printed as `ambiguous` and not retried. The last line is
//! `done ok=N ambiguous=M retries=R`.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use baton::{ErrorKind, LockRequest, LockerBuilder, RetryPolicy, Strategy};

fn number(bytes: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("the counter holds {bytes:?}, not a number"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("object_worker: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let [url, strategy, name, mode, n, rest @ ..] = argv.as_slice() else {
        return Err("usage: object_worker URL STRATEGY NAME locked|optimistic N [TTL_MS]".into());
    };
    let strategy: Strategy = strategy.parse().map_err(|e| format!("{e}"))?;
    let n: u64 = n.parse().map_err(|_| format!("{n:?} is not a number"))?;
    let ttl = Duration::from_millis(
        rest.first()
            .map_or(Ok(10_000), |t| t.parse())
            .map_err(|_| "TTL_MS is not a number")?,
    );
    let locker = LockerBuilder::new(baton::open_store(url).map_err(|e| e.to_string())?)
        .strategy(strategy)
        .ttl(ttl)
        .wait_timeout(Duration::from_secs(120))
        .retry(RetryPolicy {
            initial: Duration::from_millis(2),
            max: Duration::from_millis(50),
            ..RetryPolicy::default()
        })
        .build()
        .map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    let (mut ok, mut ambiguous, mut retries) = (0u64, 0u64, 0u64);
    // Back-off after a conflict, growing with conflicts in a row (what a user's retry loop does
    // under contention: retrying at once only collides again).
    let mut in_a_row = 0u32;
    let mut jitter = u64::from(std::process::id()).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    while ok + ambiguous < n {
        let outcome = match mode.as_str() {
            "locked" => locked(&locker, name).await,
            "optimistic" => optimistic(&locker, name).await,
            other => return Err(format!("unknown mode {other:?}")),
        };
        match outcome {
            Ok(value) => {
                in_a_row = 0;
                ok += 1;
                writeln!(out, "ok {value}")
                    .and_then(|()| out.flush())
                    .map_err(|e| e.to_string())?;
            }
            Err(e) if e.kind() == ErrorKind::Ambiguous => {
                ambiguous += 1;
                writeln!(out, "ambiguous")
                    .and_then(|()| out.flush())
                    .map_err(|e| e.to_string())?;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::VersionMismatch
                        | ErrorKind::Busy
                        | ErrorKind::AlreadyExists
                        | ErrorKind::ObjectNotFound
                        | ErrorKind::StoreUnavailable
                        | ErrorKind::TimedOut
                        | ErrorKind::Lost
                ) =>
            {
                retries += 1;
                in_a_row = in_a_row.saturating_add(1);
                jitter ^= jitter << 13;
                jitter ^= jitter >> 7;
                jitter ^= jitter << 17;
                let cap_us = 500u64 << in_a_row.min(6);
                tokio::time::sleep(Duration::from_micros(jitter % cap_us)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    writeln!(out, "done ok={ok} ambiguous={ambiguous} retries={retries}").map_err(|e| e.to_string())
}

/// One locked increment: the value written.
async fn locked(locker: &baton::Locker, name: &str) -> baton::Result<u64> {
    let mut object = locker.get_and_lock_with(name, LockRequest::new()).await?;
    match object.value() {
        None => {
            object.insert_locked("1").await?;
            // The insert applied under the lock (the store checked it): whatever the release
            // finds, the increment is done.
            let _ = object.unlock().await;
            Ok(1)
        }
        Some(bytes) => {
            let next = number(bytes).map_err(|m| baton::Error::new(ErrorKind::StoreError, m))? + 1;
            object.update_locked_and_release(next.to_string()).await?;
            Ok(next)
        }
    }
}

/// One optimistic increment attempt: the value written.
async fn optimistic(locker: &baton::Locker, name: &str) -> baton::Result<u64> {
    match locker.get(name).await? {
        None => locker.insert(name, "1").await.map(|_| 1),
        Some(current) => {
            let next = number(&current.value)
                .map_err(|m| baton::Error::new(ErrorKind::StoreError, m))?
                + 1;
            locker
                .update_optimistic(name, next.to_string(), current.version)
                .await
                .map(|_| next)
        }
    }
}
