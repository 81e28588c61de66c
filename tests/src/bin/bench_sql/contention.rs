//! Clients contending for one lock: throughput, fairness and commands per acquisition
//! ([`contended`]), and hand-off latency ([`handoffs`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use baton::{Locker, LockerBuilder, RetryPolicy, Strategy};
use baton_tests::conformance::util::CountingStore;

use crate::{percentiles, Error};

/// A locker as a separate process would have one: its own store and pool.
pub(crate) fn contender(url: &str, strategy: Strategy) -> Result<Locker, Error> {
    counted_contender(url, strategy).map(|(locker, _)| locker)
}

/// A [`contender`], and its store, which counts the commands the locker sends.
pub(crate) fn counted_contender(
    url: &str,
    strategy: Strategy,
) -> Result<(Locker, CountingStore), Error> {
    let store = CountingStore::new(baton::open_store(url)?);
    let locker = LockerBuilder::new(Arc::new(store.clone()))
        .strategy(strategy)
        .keep_alive(false)
        .ttl(Duration::from_secs(60))
        .retry(RetryPolicy {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(20),
            max_attempts: None,
            ..RetryPolicy::default()
        })
        .wait_timeout(Duration::from_secs(60))
        .build()?;
    Ok((locker, store))
}

/// The time from a release returning to the next holder's `lock()` returning, `n` times, with
/// `waiters + 1` clients looping lock, hold 1 ms, release on one name (so `waiters` wait while
/// one holds): p50 and p99.
pub(crate) async fn handoffs(
    url: &str,
    strategy: Strategy,
    waiters: usize,
    n: usize,
) -> Result<(Duration, Duration), Error> {
    let mut lockers = Vec::new();
    for _ in 0..=waiters {
        let locker = contender(url, strategy)?;
        locker.inspect("handoff").await?; // connect before the clock starts
        lockers.push(locker);
    }
    let released: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let samples: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = lockers
        .into_iter()
        .map(|locker| {
            let (released, samples, stop) = (
                Arc::clone(&released),
                Arc::clone(&samples),
                Arc::clone(&stop),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let mut guard = locker.lock("handoff").await?;
                    let granted = Instant::now();
                    if let Some(at) = released
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take()
                    {
                        let mut samples = samples.lock().unwrap_or_else(PoisonError::into_inner);
                        samples.push(granted.saturating_duration_since(at));
                        if samples.len() >= n {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    guard.release().await?;
                    *released.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                }
                Ok::<(), baton::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(percentiles(samples))
}

/// The acquisitions of each of `clients` clients looping lock + release on one lock for `for_`.
pub(crate) async fn contended(
    url: &str,
    strategy: Strategy,
    clients: usize,
    for_: Duration,
) -> Result<(Vec<u64>, u64), Error> {
    let mut lockers = Vec::new();
    let mut stores = Vec::new();
    for _ in 0..clients {
        let (locker, store) = counted_contender(url, strategy)?;
        locker.inspect("contended").await?; // connect before the clock starts
        lockers.push(locker);
        stores.push(store);
    }
    let sent = |stores: &[CountingStore]| stores.iter().map(CountingStore::executed).sum::<u64>();
    let before = sent(&stores);
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = lockers
        .into_iter()
        .map(|locker| {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut count = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut guard = locker.lock("contended").await?;
                    count += 1;
                    guard.release().await?;
                }
                Ok::<u64, baton::Error>(count)
            })
        })
        .collect();
    tokio::time::sleep(for_).await;
    stop.store(true, Ordering::Relaxed);
    let mut counts = Vec::with_capacity(tasks.len());
    for task in tasks {
        counts.push(task.await??);
    }
    Ok((counts, sent(&stores) - before))
}
