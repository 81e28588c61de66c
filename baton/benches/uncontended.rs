//! Uncontended acquire + release through the [`Locker`], per strategy, on the memory store.
//!
//! `cargo bench -p baton` runs 20,000 iterations per strategy and prints a table of the time
//! per acquire+release and the storage round trips each costs. Under `cargo test --benches`
//! (no `--bench` argument) it runs 200, as a quick smoke test. Keep-alive is off, so no
//! background task runs; the runtime is current-thread, so the numbers are the driver's and
//! the kernel's own cost plus the memory store's mutex, with no I/O.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use baton::{Command, Locker, MemoryStore, Store, StoreFuture, Strategy};
use tokio::sync::watch;

/// The memory store, counting the commands it executes.
#[derive(Clone, Default)]
struct CountingStore {
    inner: MemoryStore,
    commands: Arc<AtomicU64>,
}

impl CountingStore {
    fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }
}

impl Store for CountingStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        self.commands.fetch_add(1, Ordering::Relaxed);
        self.inner.execute(command)
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn waiting(&self) {
        self.inner.waiting()
    }

    fn describe(&self) -> String {
        String::from("counting memory store")
    }
}

struct Row {
    strategy: Strategy,
    ns_per_cycle: f64,
    acquire_round_trips: f64,
    release_round_trips: f64,
}

async fn measure(strategy: Strategy, iterations: u64) -> baton::Result<Row> {
    let store = CountingStore::default();
    let locker = Locker::builder(store.clone())
        .strategy(strategy)
        .keep_alive(false)
        .build()?;
    // Warm up (and let unique insert learn its fence hint, as a long-lived locker would).
    for _ in 0..10 {
        locker.lock("bench").await?.release().await?;
    }
    let (mut acquire, mut release) = (0, 0);
    let started = Instant::now();
    for _ in 0..iterations {
        let before = store.commands();
        let mut guard = locker.lock("bench").await?;
        let acquired = store.commands();
        guard.release().await?;
        acquire += acquired - before;
        release += store.commands() - acquired;
    }
    let elapsed = started.elapsed();
    let n = iterations as f64;
    Ok(Row {
        strategy,
        ns_per_cycle: elapsed.as_nanos() as f64 / n,
        acquire_round_trips: acquire as f64 / n,
        release_round_trips: release as f64 / n,
    })
}

fn main() -> baton::Result<()> {
    let iterations = if std::env::args().any(|a| a == "--bench") {
        20_000
    } else {
        200
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| baton::Error::new(baton::ErrorKind::StoreError, e.to_string()))?;
    println!("uncontended acquire + release, memory store, {iterations} iterations per strategy");
    println!(
        "{:<14} | {:>22} | {:>23} | {:>23}",
        "strategy", "ns per acquire+release", "round trips per acquire", "round trips per release"
    );
    println!("{:-<14}-|-{:-<22}-|-{:-<23}-|-{:-<23}", "", "", "", "");
    for strategy in Strategy::ALL {
        let row = runtime.block_on(measure(strategy, iterations))?;
        println!(
            "{:<14} | {:>22.0} | {:>23.2} | {:>23.2}",
            row.strategy.as_str(),
            row.ns_per_cycle,
            row.acquire_round_trips,
            row.release_round_trips
        );
    }
    Ok(())
}
