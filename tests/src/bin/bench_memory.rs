//! The native side of the WebAssembly binding's bench (`scripts/wasm-bindings bench`): one
//! uncontended lock + release on the memory store, on a current-thread tokio runtime (one
//! thread, as JavaScript has), with keep-alive on as the JavaScript binding has by default.
//!
//! ```text
//! cargo run --release -p baton-tests --bin bench_memory [-- ITERATIONS]
//! ```
//!
//! Prints one line: `native iterations=N p50_ns=… p99_ns=… mean_ns=…` for each strategy.

use std::time::Instant;

use baton::{Locker, Strategy};

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
        .max(1);
    println!("{}", baton_tests::provenance::line("bench_memory"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("bench_memory: cannot start a runtime: {e}");
            std::process::exit(1)
        });
    runtime.block_on(async {
        for strategy in [
            Strategy::UniqueInsert,
            Strategy::Bakery,
            Strategy::ColumnPrefix,
        ] {
            let locker = Locker::builder(baton::MemoryStore::new())
                .strategy(strategy)
                .build()
                .unwrap_or_else(|e| {
                    eprintln!("bench_memory: {e}");
                    std::process::exit(1)
                });
            // Warm up: the first locks allocate the table's maps.
            for _ in 0..iterations / 10 {
                one(&locker).await;
            }
            let mut samples: Vec<u128> = Vec::with_capacity(iterations);
            let started = Instant::now();
            for _ in 0..iterations {
                let t = Instant::now();
                one(&locker).await;
                samples.push(t.elapsed().as_nanos());
            }
            let mean = started.elapsed().as_nanos() / iterations as u128;
            samples.sort_unstable();
            let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
            println!(
                "native strategy={} iterations={iterations} p50_ns={} p99_ns={} mean_ns={mean}",
                strategy.as_str(),
                at(0.5),
                at(0.99)
            );
        }
    });
}

async fn one(locker: &Locker) {
    match locker.lock("bench").await {
        Ok(mut guard) => {
            if let Err(e) = guard.release().await {
                eprintln!("bench_memory: release: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("bench_memory: lock: {e}");
            std::process::exit(1);
        }
    }
}
