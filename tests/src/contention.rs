//! Clients contending for one lock, for the benchmarks (`bench_sql`, `bench_cassandra`):
//! throughput, fairness and commands per acquisition ([`Contention::contended`]), and hand-off
//! latency ([`Contention::handoffs`]). Each client is a [`Locker`] with a store of its own, as a
//! separate process would have.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use baton::{Locker, LockerBuilder, RetryPolicy, Strategy};

use crate::conformance::util::CountingStore;

/// What a benchmark's failure is.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// p50 and p99 of `samples` (zero for none).
pub fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    if samples.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99))
}

/// A benchmark's command line as `(flag, value)` pairs: every flag takes a value; the error
/// names a flag given without one.
pub fn flag_values(argv: impl Iterator<Item = String>) -> Result<Vec<(String, String)>, String> {
    let mut argv = argv.into_iter();
    let mut pairs = Vec::new();
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// A benchmark option's value as a whole number; the error names `flag`.
pub fn number(flag: &str, value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| format!("{flag} {value:?} is not a number"))
}

/// A benchmark option's comma-separated list of client counts (`--clients 1,8,32`), each at
/// least 1; the error names `flag`.
pub fn counts(flag: &str, value: &str) -> Result<Vec<usize>, String> {
    value
        .split(',')
        .map(|n| match n.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "{flag} {value:?}: {n:?} is not a count of at least 1"
            )),
        })
        .collect()
}

/// Where the contending clients lock, with which strategy, and how they retry.
#[derive(Clone, Debug)]
pub struct Contention {
    /// The store URL every client opens (its own store and pool each).
    pub url: String,
    /// The strategy of every client.
    pub strategy: Strategy,
    /// The retry policy of every client.
    pub retry: RetryPolicy,
    /// Whether every client reserves turns (`None`: as its store says).
    pub turns: Option<bool>,
    /// The database server's process name (`comm`: `java` for Cassandra), whose CPU time
    /// [`Contention::contended_counted`] reads (`None`: not read).
    pub server: Option<&'static str>,
}

impl Contention {
    /// Clients on `url` with `strategy`, retrying 1 ms doubling to 20 ms (with jitter).
    pub fn new(url: &str, strategy: Strategy) -> Contention {
        Contention {
            url: url.to_owned(),
            strategy,
            retry: RetryPolicy {
                initial: Duration::from_millis(1),
                max: Duration::from_millis(20),
                max_attempts: None,
                ..RetryPolicy::default()
            },
            turns: None,
            server: None,
        }
    }

    /// The same clients, reading the CPU time of the server processes named `name`.
    pub fn server(mut self, name: &'static str) -> Contention {
        self.server = Some(name);
        self
    }

    /// The same clients, reserving turns or not (`None`: as their store says).
    pub fn turns(mut self, turns: Option<bool>) -> Contention {
        self.turns = turns;
        self
    }

    /// The same clients with `retry` as their policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Contention {
        self.retry = retry;
        self
    }

    /// A client (keep-alive off, TTL and wait timeout 60 s), and its store, which counts the
    /// commands the locker sends.
    fn counted_contender(&self) -> Result<(Locker, CountingStore), Error> {
        let store = CountingStore::new(baton::open_store(&self.url)?);
        let mut builder = LockerBuilder::new(Arc::new(store.clone()))
            .strategy(self.strategy)
            .keep_alive(false)
            .ttl(Duration::from_secs(60))
            .retry(self.retry)
            .wait_timeout(Duration::from_secs(60));
        if let Some(on) = self.turns {
            builder = builder.turns(on);
        }
        let locker = builder.build()?;
        Ok((locker, store))
    }

    /// The time from a release returning to the next holder's `lock()` returning, `n` times,
    /// with `waiters + 1` clients looping lock, hold 1 ms, release on one name (so `waiters` wait
    /// while one holds): p50 and p99.
    pub async fn handoffs(&self, waiters: usize, n: usize) -> Result<(Duration, Duration), Error> {
        let mut lockers = Vec::new();
        for _ in 0..=waiters {
            let (locker, _) = self.counted_contender()?;
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
                            let mut samples =
                                samples.lock().unwrap_or_else(PoisonError::into_inner);
                            samples.push(granted.saturating_duration_since(at));
                            if samples.len() >= n {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        guard.release().await?;
                        *released.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(Instant::now());
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

    /// The acquisitions of each of `clients` clients looping lock + release on one lock for
    /// `for_`, and the storage commands they all sent meanwhile.
    pub async fn contended(
        &self,
        clients: usize,
        for_: Duration,
    ) -> Result<(Vec<u64>, u64), Error> {
        let run = self.contended_counted(clients, for_).await?;
        Ok((run.counts, run.commands))
    }

    /// As [`Contention::contended`], with the commands by kind and reply: where the waiting
    /// goes (a claim refused, a look, a turn written).
    pub async fn contended_counted(
        &self,
        clients: usize,
        for_: Duration,
    ) -> Result<ContendedRun, Error> {
        let mut lockers = Vec::new();
        let mut stores = Vec::new();
        for _ in 0..clients {
            let (locker, store) = self.counted_contender()?;
            locker.inspect("contended").await?; // connect before the clock starts
            lockers.push(locker);
            stores.push(store);
        }
        let sent =
            |stores: &[CountingStore]| stores.iter().map(CountingStore::executed).sum::<u64>();
        let by_kind = |stores: &[CountingStore]| {
            let mut all = BTreeMap::<String, u64>::new();
            for (kind, n) in stores.iter().flat_map(CountingStore::answered_by_kind) {
                *all.entry(kind).or_default() += n;
            }
            all
        };
        let (before, kinds_before) = (sent(&stores), by_kind(&stores));
        let server_ns = || self.server.and_then(crate::cpu::server_ns);
        let (server0, client0) = (server_ns(), crate::cpu::process_ns("self"));
        let stop = Arc::new(AtomicBool::new(false));
        let leases: Arc<Mutex<Vec<Held>>> = Arc::default();
        let tasks: Vec<_> = lockers
            .into_iter()
            .enumerate()
            .map(|(client, locker)| {
                let (stop, leases) = (Arc::clone(&stop), Arc::clone(&leases));
                tokio::spawn(async move {
                    let mut count = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut guard = locker.lock("contended").await?;
                        let granted = Instant::now();
                        count += 1;
                        guard.release().await?;
                        let released = Instant::now();
                        leases
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(Held {
                                client,
                                granted,
                                released,
                            });
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
        let client_ns = crate::cpu::process_ns("self").saturating_sub(client0);
        let server_ns = server_ns()
            .zip(server0)
            .map(|(after, before)| after.saturating_sub(before));
        let by_kind = by_kind(&stores)
            .into_iter()
            .map(|(kind, n)| {
                let was = kinds_before.get(&kind).copied().unwrap_or(0);
                (kind, n - was)
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let leases = std::mem::take(&mut *leases.lock().unwrap_or_else(PoisonError::into_inner));
        Ok(ContendedRun {
            counts,
            handoffs: HandOffs::of(leases),
            commands: sent(&stores) - before,
            by_kind,
            client_ns,
            server_ns,
        })
    }
}

/// What contending clients did ([`Contention::contended_counted`]).
#[derive(Clone, Debug)]
pub struct ContendedRun {
    /// Each client's acquisitions.
    pub counts: Vec<u64>,
    /// The gaps between one lease and the next, by whether the same client took it again.
    pub handoffs: HandOffs,
    /// The storage commands all clients sent meanwhile.
    pub commands: u64,
    /// Those answered, by the command's kind and the reply's
    /// ([`CountingStore::answered_by_kind`]).
    pub by_kind: BTreeMap<String, u64>,
    /// This process's CPU time meanwhile (every client's, and the runtime's), in nanoseconds.
    pub client_ns: u64,
    /// The server processes' CPU time meanwhile, if read ([`Contention::server`]).
    pub server_ns: Option<u64>,
}

impl ContendedRun {
    /// The CPU time per acquisition of the server (if read) and of the clients, in µs:
    /// `server 812 µs, clients 240 µs`.
    pub fn cpu_per_acquisition(&self) -> String {
        let acquisitions = self.counts.iter().sum::<u64>().max(1) as f64;
        let us = |ns: u64| format!("{:.0} µs", ns as f64 / 1e3 / acquisitions);
        format!(
            "server {}, clients {}",
            self.server_ns.map_or(String::from("-"), us),
            us(self.client_ns)
        )
    }

    /// The commands by kind and reply per acquisition, the most frequent first:
    /// `Claim Guarded(refused) 3.10, Read Cells 2.00, …`.
    pub fn per_acquisition(&self) -> String {
        let acquisitions = self.counts.iter().sum::<u64>().max(1) as f64;
        let mut kinds: Vec<_> = self.by_kind.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        kinds
            .into_iter()
            .map(|(kind, n)| format!("{kind} {:.2}", *n as f64 / acquisitions))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One lease of a contended run, as its client saw it.
#[derive(Clone, Copy, Debug)]
struct Held {
    client: usize,
    granted: Instant,
    released: Instant,
}

/// The gaps of a contended run: for each lease after the first, the time from the previous
/// lease's release returning to this one's `lock()` returning (a client's own release and its
/// next claim, or the release, a waiter's look and its claim), split by whether the client that
/// took it is the one that released; and how long leases were held (grant to release returned,
/// the release's round trip included). Throughput is one over the mean hold plus the mean gap.
#[derive(Clone, Debug, Default)]
pub struct HandOffs {
    /// Gaps where the releasing client took the lock again.
    pub again: Vec<Duration>,
    /// Gaps where another client took it.
    pub passed: Vec<Duration>,
    /// Every lease's hold.
    pub held: Vec<Duration>,
}

impl HandOffs {
    fn of(mut leases: Vec<Held>) -> HandOffs {
        leases.sort_by_key(|l| l.granted);
        let mut out = HandOffs::default();
        for pair in leases.windows(2) {
            let (before, next) = (pair[0], pair[1]);
            let gap = next.granted.saturating_duration_since(before.released);
            if next.client == before.client {
                out.again.push(gap);
            } else {
                out.passed.push(gap);
            }
        }
        out.held = leases
            .iter()
            .map(|l| l.released.saturating_duration_since(l.granted))
            .collect();
        out
    }

    /// `again 31% 0.95/1.20 ms, passed 2.10/1.60/9.80 ms, held 0.80/0.70/4.10 ms, over 10 ms
    /// 0.4%, longest 90 ms`: the share of leases the releaser took again, the mean (and p50 for another
    /// client's) and p99 gap of each kind, the
    /// hold's mean, p50 and p99, the share of holds and gaps over 10 ms and the longest gap (on Cassandra's
    /// Paxos v1, a conditional write that meets another on the same partition sleeps a random
    /// 0-100 ms before it tries again: those show here).
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mean = |v: &[Duration]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().map(|d| ms(*d)).sum::<f64>() / v.len() as f64
            }
        };
        let total = (self.again.len() + self.passed.len()).max(1);
        let (held50, held99) = percentiles(self.held.clone());
        let (passed50, passed99) = percentiles(self.passed.clone());
        let long = |v: &[Duration]| v.iter().filter(|d| **d > Duration::from_millis(10)).count();
        format!(
            "again {:.0}% {:.2}/{:.2} ms, passed {:.2}/{:.2}/{:.2} ms (mean/p50/p99); held {:.2}/{:.2}/{:.2} ms (mean/p50/p99); over 10 ms {:.1}% of holds, {:.1}% of gaps; longest gap {:.1} ms",
            100.0 * self.again.len() as f64 / total as f64,
            mean(&self.again),
            ms(percentiles(self.again.clone()).1),
            mean(&self.passed),
            ms(passed50),
            ms(passed99),
            mean(&self.held),
            ms(held50),
            ms(held99),
            100.0 * long(&self.held) as f64 / self.held.len().max(1) as f64,
            100.0 * (long(&self.again) + long(&self.passed)) as f64 / total as f64,
            ms(self
                .again
                .iter()
                .chain(&self.passed)
                .copied()
                .max()
                .unwrap_or_default()),
        )
    }
}
