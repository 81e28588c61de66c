//! Four workers take turns on one lock held in the in-memory store, each doing a short
//! "critical section" that is checked for overlaps, then a forced break and a try-lock.
//!
//! `cargo run -p baton --example quickstart`

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::{ErrorKind, LockRequest, Locker, MemoryStore, Strategy};

#[tokio::main]
async fn main() -> baton::Result<()> {
    let store = MemoryStore::new();
    for strategy in Strategy::ALL {
        let locker = Locker::builder(store.clone())
            .strategy(strategy)
            .ttl(Duration::from_secs(10))
            .wait_timeout(Duration::from_secs(30))
            .build()?;
        // One name per strategy: a name must always be used with the same strategy.
        let name = format!("nightly-digest-{strategy}");
        let inside = Arc::new(AtomicU32::new(0));
        let overlaps = Arc::new(AtomicU32::new(0));
        let mut workers = Vec::new();
        for worker in 0..4 {
            let (locker, inside, overlaps, name) = (
                locker.clone(),
                inside.clone(),
                overlaps.clone(),
                name.clone(),
            );
            workers.push(tokio::spawn(async move {
                let mut tokens = Vec::new();
                for _ in 0..3 {
                    let mut guard = locker.lock(&name).await?;
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    tokens.push(guard.token());
                    tokio::time::sleep(Duration::from_millis(2)).await; // the protected work
                    inside.fetch_sub(1, Ordering::SeqCst);
                    guard.release().await?;
                }
                Ok::<_, baton::Error>((worker, tokens))
            }));
        }
        let mut all = Vec::new();
        for w in workers {
            let (worker, tokens) = w
                .await
                .map_err(|e| baton::Error::new(ErrorKind::StoreError, e.to_string()))??;
            println!("{strategy:>14}  worker {worker} got tokens {tokens:?}");
            all.extend(tokens);
        }
        all.sort_unstable();
        all.dedup();
        println!(
            "{strategy:>14}  {} grants, {} distinct tokens, overlaps seen: {}",
            4 * 3,
            all.len(),
            overlaps.load(Ordering::SeqCst)
        );
    }

    // Operators: see who holds a lock, and break it on purpose.
    let locker = Locker::new(store);
    let guard = locker.lock("report 42").await?;
    for info in locker.inspect("report 42").await? {
        println!(
            "report 42 is {} by {} (token {:?})",
            info.state.as_str(),
            info.owner,
            info.token
        );
    }
    match locker.try_lock("report 42").await {
        Err(e) if e.kind() == ErrorKind::Busy => println!("try_lock: {e}"),
        other => println!("try_lock unexpectedly gave {:?}", other.map(|g| g.token())),
    }
    let removed = locker.force_release("report 42").await?;
    println!(
        "forced release removed {} entry; the next grant's token is larger:",
        removed.len()
    );
    let next = locker
        .lock_with("report 42", LockRequest::new().try_once())
        .await?;
    println!("  token {} > {}", next.token(), guard.token());
    Ok(())
}
