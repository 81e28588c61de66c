//! The Rust side of `scripts/c-bindings bench`: one uncontended lock+unlock through the blocking
//! API (what the C and C++ APIs call), timed the way `bench_lock_unlock` times it in C++.
//!
//!   cargo run --release -p baton-c --example lock_unlock -- URL ITERATIONS

use std::time::Instant;

fn main() -> baton::Result<()> {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| String::from("memory:"));
    let iterations: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000);
    let locker = baton::BlockingLocker::open(&url)?;
    let mut times = Vec::with_capacity(iterations);
    for i in 0..iterations + iterations / 10 {
        let start = Instant::now();
        let mut guard = locker.lock("bench")?;
        guard.release()?;
        if i >= iterations / 10 {
            times.push(start.elapsed().as_secs_f64() * 1e6); // after a warm-up tenth
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
    println!("rust {url} {iterations} {:.1} {:.1}", at(0.5), at(0.99));
    Ok(())
}
