//! Tombstone hygiene on Cassandra: after 10,000 acquire/release cycles on one name, an acquire
//! reads no more than [`TOMBSTONE_BOUND`] tombstones.
//!
//! Each strategy runs 10,000 cycles (`BATON_TOMBSTONE_CYCLES` changes it) on a fresh table of
//! the cluster `BATON_CASSANDRA_URL` names, with **one owner id reused by every cycle and a fresh
//! acquisition id per cycle**: what the Rust API's `Locker` does once it reuses owner ids per
//! process (see `baton::cassandra`, "Tombstones"). Then one more acquire and release run with
//! CQL tracing on every command; Cassandra's trace events ("Read N live rows and M tombstone
//! cells") tell how many tombstones each replica read. Demands:
//! - every command of that acquire read at most [`TOMBSTONE_BOUND`] tombstones.
//!
//! It also prints the median cycle of the first and of the last 500, but asserts nothing about
//! time: latency over a long history is measured by `bench_cassandra --history 10000`.
//!
//! For contrast it also runs 300 cycles with a fresh owner id per cycle (the `Locker` of today)
//! and prints how many tombstones the next acquire reads then: one per earlier cycle, until
//! `gc_grace_seconds` passes.
//!
//! Unset `BATON_CASSANDRA_URL`: skipped with a line on stderr (a failure under
//! `BATON_REQUIRE_SERVICES=1`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton::baton_kernel::{Acquire, LockName, LockOptions, OwnerId, Release};
use baton::cassandra::CassandraStore;
use baton::{Clock, Command, Reply, RetryPolicy, Store, StoreFuture, Strategy};
use baton_tests::conformance::target::{skip_or_fail, unique_table};
use baton_tests::conformance::Backend;

/// The most tombstones one command of an acquire may read after the history: at most one per
/// owner column released within `gc_grace_seconds` (here: the one owner) plus unique insert's
/// `lock` cell, which is deleted at every release.
const TOMBSTONE_BOUND: u64 = 2;

fn cycles() -> usize {
    std::env::var("BATON_TOMBSTONE_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn options(strategy: Strategy, acquisition: u64) -> LockOptions {
    LockOptions {
        strategy,
        ttl: Duration::from_secs(30),
        retry: RetryPolicy {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(50),
            max_attempts: None,
            ..RetryPolicy::default()
        },
        acquisition,
        seed: acquisition.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        ..LockOptions::default()
    }
}

/// One acquire and release of `name` by `owner` on `store`; returns the time it took and the
/// lease's fence hint for the next cycle.
async fn cycle(
    store: &dyn Store,
    clock: &Clock,
    name: &str,
    owner: &OwnerId,
    opts: LockOptions,
    hint: Option<baton::baton_kernel::FenceHint>,
) -> (Duration, baton::baton_kernel::FenceHint) {
    let started = Instant::now();
    let mut acquire = Acquire::new(LockName::new(name).expect("name"), owner.clone(), opts)
        .expect("acquire")
        .with_fence_hint(hint);
    let grant = baton::drive(&mut acquire, store, clock)
        .await
        .unwrap_or_else(|e| panic!("acquire: {e}"));
    let mut release = Release::new(&grant.lease);
    baton::drive(&mut release, store, clock)
        .await
        .unwrap_or_else(|e| panic!("release: {e}"));
    (started.elapsed(), grant.lease.fence_hint())
}

/// What one traced command read: its kind, tombstones, live rows, and the server's warnings.
type Seen = (String, u64, u64, Vec<String>);

/// A store that runs every command with tracing and remembers what each read.
struct Traced {
    inner: CassandraStore,
    seen: Mutex<Vec<Seen>>,
}

impl Store for Traced {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            let kind = format!("{command:?}")
                .split([' ', '{'])
                .next()
                .unwrap_or("")
                .to_owned();
            match self.inner.trace(&command).await {
                Ok(trace) => {
                    self.seen.lock().expect("seen").push((
                        kind,
                        trace.tombstones,
                        trace.live_rows,
                        trace.warnings.clone(),
                    ));
                    trace.reply.unwrap_or(Reply::Written)
                }
                Err(e) => panic!("tracing {command:?}: {e}"),
            }
        })
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn base_url() -> Option<String> {
    match std::env::var("BATON_CASSANDRA_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            skip_or_fail(
                Backend::Cassandra,
                "BATON_CASSANDRA_URL is not set (scripts/cassandra start1; export BATON_CASSANDRA_URL=$(scripts/cassandra url1))",
            );
            None
        }
    }
}

fn table_url(base: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}table={}", unique_table())
}

async fn history(strategy: Strategy) {
    let Some(base) = base_url() else { return };
    let store = CassandraStore::open(&table_url(&base)).expect("open");
    store.ensure_schema().await.expect("schema");
    let clock = Clock::new();
    let owner = OwnerId::new("tombstones", std::process::id(), 0x7e57).expect("owner");
    let n = cycles();
    let window = (n / 20).clamp(1, 500);
    let mut times = Vec::with_capacity(n);
    let mut hint = None;
    let started = Instant::now();
    for i in 0..n {
        let (took, h) = cycle(
            &store,
            &clock,
            "hot",
            &owner,
            options(strategy, i as u64 + 1),
            hint.take(),
        )
        .await;
        times.push(took);
        hint = Some(h);
    }
    let elapsed = started.elapsed();
    let first = median(times[..window].to_vec());
    let last = median(times[n - window..].to_vec());

    // One more cycle, every command traced.
    let traced = Traced {
        inner: store.clone(),
        seen: Mutex::new(Vec::new()),
    };
    cycle(
        &traced,
        &clock,
        "hot",
        &owner,
        options(strategy, n as u64 + 1),
        hint,
    )
    .await;
    let seen = traced.seen.lock().expect("seen").clone();
    let worst = seen.iter().map(|(_, t, _, _)| *t).max().unwrap_or(0);
    println!(
        "{strategy}: {n} cycles in {elapsed:.1?}; median cycle {first:.2?} (first {window}) -> {last:.2?} (last {window}), ratio {:.2}; traced acquire+release: {}",
        last.as_secs_f64() / first.as_secs_f64(),
        seen.iter()
            .map(|(k, t, l, w)| format!("{k}: {l} live rows, {t} tombstones{}", if w.is_empty() { String::new() } else { format!(" (warnings: {w:?})") }))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert!(
        worst <= TOMBSTONE_BOUND,
        "{strategy}: a command of the acquire read {worst} tombstones after {n} cycles: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bakery_history_leaves_no_tombstones_in_the_way() {
    history(Strategy::Bakery).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_insert_history_leaves_no_tombstones_in_the_way() {
    history(Strategy::UniqueInsert).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_prefix_history_leaves_no_tombstones_in_the_way() {
    history(Strategy::ColumnPrefix).await;
}

/// For contrast (printed, and a sanity check of the measurement): fresh owner ids leave one
/// tombstone per cycle in the row until `gc_grace_seconds` passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_owner_ids_pile_up_tombstones() {
    let Some(base) = base_url() else { return };
    let store = Arc::new(CassandraStore::open(&table_url(&base)).expect("open"));
    store.ensure_schema().await.expect("schema");
    let clock = Clock::new();
    let n = 300;
    for i in 0..n {
        let owner = OwnerId::new("fresh", std::process::id(), 0x1000 + i).expect("owner");
        cycle(
            &*store,
            &clock,
            "hot",
            &owner,
            options(Strategy::Bakery, 0),
            None,
        )
        .await;
    }
    let trace = store
        .trace(&Command::Read {
            row: "hot".into(),
            filter: baton::baton_kernel::ColumnFilter::All,
            consistency: baton::baton_kernel::ReadConsistency::Plain(baton::Consistency::Quorum),
        })
        .await
        .expect("trace");
    println!(
        "bakery with a fresh owner id per cycle: after {n} cycles a row read meets {} tombstones ({} live rows)",
        trace.tombstones, trace.live_rows
    );
    assert!(
        trace.tombstones >= n / 2,
        "expected the fresh owners' tombstones to show in the trace: {trace:?}"
    );
}

/// The same through the public API: a `Locker` reuses its owner-id slot for sequential
/// acquisitions of a name, so 1,000 lock/release cycles leave at most one tombstone in the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locker_reuses_its_column() {
    let Some(base) = base_url() else { return };
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        let store = CassandraStore::open(&table_url(&base)).expect("open");
        store.ensure_schema().await.expect("schema");
        let locker = baton::Locker::builder(store.clone())
            .strategy(strategy)
            .retry(options(strategy, 1).retry)
            .build()
            .expect("locker");
        let n = (cycles() / 10).max(10);
        for _ in 0..n {
            let mut guard = locker.lock("hot").await.expect("lock");
            guard.release().await.expect("release");
        }
        let trace = store
            .trace(&Command::Read {
                row: "hot".into(),
                filter: baton::baton_kernel::ColumnFilter::All,
                consistency: baton::baton_kernel::ReadConsistency::Plain(
                    baton::Consistency::Quorum,
                ),
            })
            .await
            .expect("trace");
        println!(
            "{strategy} through a Locker: after {n} cycles a row read meets {} tombstones ({} live rows)",
            trace.tombstones, trace.live_rows
        );
        assert!(
            trace.tombstones <= 1,
            "{strategy}: {} tombstones after {n} Locker cycles: {trace:?}",
            trace.tombstones
        );
    }
}
