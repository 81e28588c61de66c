//! Benchmark of shared, exclusive and path locks (issue 43, points 3 and 9).
//!
//! ```text
//! bench_modes [--iterations 300] [--writer-rounds 50] [--stores sqlite,postgres,mysql,cassandra]
//! ```
//!
//! Stores: SQLite always (a temporary file, or `BATON_SQLITE_URL`), PostgreSQL, MariaDB and
//! Cassandra when `BATON_POSTGRES_URL`, `BATON_MYSQL_URL`, `BATON_CASSANDRA_URL` are set; each
//! strategy that carries modes (bakery, column prefix) on a fresh table, keep-alive off.
//!
//! - **Uncontended**, alternating one iteration of each: lock + release of a flat name
//!   exclusive (today's lock), of the 3-level path `app.cache.users` exclusive and shared (a
//!   locker with paths on), and of a flat name shared. Round trips are the storage commands
//!   sent, counted by a wrapping store.
//! - **A writer among readers**: 8 readers take the shared lock of `feed` one after another
//!   without pause, each holding it 5 ms, so that it is never free of readers; a writer asks
//!   for it exclusive every 20 ms, holds it 1 ms, and the time from asking to holding is
//!   measured over `--writer-rounds` rounds (p50, p99, max): bounded, since a waiting writer
//!   is not overtaken by new readers.
//!
//! Output: one line per measurement as it ends, then the Markdown tables of
//! docs/performance.md, "Modes and paths".

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{Command, LockRequest, Locker, LockerBuilder, Store, StoreFuture, Strategy};
use baton_tests::conformance::{Backend, Target};
use baton_tests::contention::percentiles;

type Error = Box<dyn std::error::Error + Send + Sync>;

const STRATEGIES: [Strategy; 2] = [Strategy::Bakery, Strategy::ColumnPrefix];
const READERS: usize = 8;

/// A store that counts the commands sent through it.
struct Counting {
    inner: Arc<dyn Store>,
    sent: AtomicU64,
}

impl Store for Counting {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.inner.execute(command)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn max_object_bytes(&self) -> usize {
        self.inner.max_object_bytes()
    }
}

struct Args {
    iterations: usize,
    writer_rounds: usize,
    stores: Vec<Backend>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        iterations: 300,
        writer_rounds: 50,
        stores: vec![
            Backend::Sqlite,
            Backend::Postgres,
            Backend::Mysql,
            Backend::Cassandra,
        ],
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse().map_err(|_| format!("bad {flag} {value:?}"));
        match flag.as_str() {
            "--iterations" => args.iterations = number()?,
            "--writer-rounds" => args.writer_rounds = number()?,
            "--stores" => {
                args.stores = value
                    .split(',')
                    .map(|s| match s {
                        "sqlite" => Ok(Backend::Sqlite),
                        "postgres" => Ok(Backend::Postgres),
                        "mysql" => Ok(Backend::Mysql),
                        "cassandra" => Ok(Backend::Cassandra),
                        other => Err(format!("unknown store {other:?}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    Ok(args)
}

/// Round trips per lock + release, and p50.
struct Measured {
    round_trips: f64,
    p50: Duration,
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// The four uncontended cases, in table order.
const CASES: [&str; 4] = [
    "flat exclusive",
    "path exclusive",
    "path shared",
    "flat shared",
];

struct Row {
    store: Backend,
    strategy: Strategy,
    cases: Vec<Measured>,
    writer: (Duration, Duration, Duration),
    reader_grants: u64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args = parse_args()?;
    println!("{}", baton_tests::provenance::line("bench_modes"));
    println!(
        "baton modes benchmark: {} iterations, {} writer rounds ({})",
        args.iterations,
        args.writer_rounds,
        if cfg!(debug_assertions) {
            "debug build: use --release for real numbers"
        } else {
            "release"
        }
    );
    let mut rows = Vec::new();
    for &backend in &args.stores {
        let Some(target) = Target::from_env(backend) else {
            continue;
        };
        for strategy in STRATEGIES {
            let table = target.table();
            let cases = uncontended(table.client(), strategy, args.iterations).await?;
            let line: Vec<String> = CASES
                .iter()
                .zip(&cases)
                .map(|(name, m)| format!("{name} {} ms ({:.1} rt)", ms(m.p50), m.round_trips))
                .collect();
            println!("{backend} {strategy}: {}", line.join(", "));
            let (writer, reader_grants) =
                writer_among_readers(table.client(), strategy, args.writer_rounds).await?;
            println!(
                "{backend} {strategy}: a writer among {READERS} readers waits p50 {} ms, p99 {} ms, max {} ms ({reader_grants} reader grants meanwhile)",
                ms(writer.0),
                ms(writer.1),
                ms(writer.2)
            );
            rows.push(Row {
                store: backend,
                strategy,
                cases,
                writer,
                reader_grants,
            });
        }
    }
    println!("\n{}", markdown(&rows, &args));
    Ok(())
}

async fn uncontended(
    client: Arc<dyn Store>,
    strategy: Strategy,
    iterations: usize,
) -> Result<Vec<Measured>, Error> {
    let counting = Arc::new(Counting {
        inner: client,
        sent: AtomicU64::new(0),
    });
    let store: Arc<dyn Store> = counting.clone();
    let build = |paths: bool| {
        LockerBuilder::new(Arc::clone(&store))
            .strategy(strategy)
            .keep_alive(false)
            .paths(paths)
            .build()
    };
    let (flat, tree) = (build(false)?, build(true)?);
    let cases: [(&Locker, &str, LockRequest); 4] = [
        (&flat, "jobs", LockRequest::new()),
        (&tree, "app.cache.users", LockRequest::new()),
        (&tree, "app.cache.users", LockRequest::new().shared()),
        (&flat, "catalog", LockRequest::new().shared()),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    let mut sent = vec![0u64; cases.len()];
    let warmup = iterations / 10;
    for i in 0..warmup + iterations {
        for (k, (locker, name, request)) in cases.iter().enumerate() {
            let before = counting.sent.load(Ordering::Relaxed);
            let started = Instant::now();
            let mut guard = locker.lock_with(name, request.clone()).await?;
            guard.release().await?;
            let took = started.elapsed();
            if i >= warmup {
                times[k].push(took);
                sent[k] += counting.sent.load(Ordering::Relaxed) - before;
            }
        }
    }
    Ok(times
        .into_iter()
        .zip(sent)
        .map(|(t, s)| {
            let n = t.len().max(1) as f64;
            let (p50, _) = percentiles(t);
            Measured {
                round_trips: s as f64 / n,
                p50,
            }
        })
        .collect())
}

/// The writer's waits (p50, p99, max) among a stream of readers, and the readers' grants.
async fn writer_among_readers(
    client: Arc<dyn Store>,
    strategy: Strategy,
    rounds: usize,
) -> Result<((Duration, Duration, Duration), u64), Error> {
    let locker = LockerBuilder::new(client)
        .strategy(strategy)
        .keep_alive(false)
        .wait_timeout(Duration::from_secs(60))
        .build()?;
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..READERS {
        let (locker, stop, grants) = (locker.clone(), Arc::clone(&stop), Arc::clone(&grants));
        readers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let mut guard = locker.lock_shared("feed").await?;
                grants.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
                guard.release().await?;
            }
            Ok::<(), baton::Error>(())
        }));
    }
    // Let the stream start before the first writer asks.
    while grants.load(Ordering::Relaxed) < READERS as u64 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let before = grants.load(Ordering::Relaxed);
    let mut waits = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let asked = Instant::now();
        let mut guard = locker.lock("feed").await?;
        waits.push(asked.elapsed());
        tokio::time::sleep(Duration::from_millis(1)).await;
        guard.release().await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let during = grants.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.await??;
    }
    let max = waits.iter().copied().max().unwrap_or_default();
    let (p50, p99) = percentiles(waits);
    Ok(((p50, p99, max), during))
}

fn markdown(rows: &[Row], args: &Args) -> String {
    let mut out = format!(
        "Uncontended lock + release, {} alternating iterations (keep-alive off; ms; rt: storage commands):\n\n\
         | store | strategy | flat exclusive: rt | p50 | path exclusive: rt | p50 | path shared: rt | p50 | flat shared: rt | p50 |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        args.iterations
    );
    for r in rows {
        out.push_str(&format!("| {} | {} |", r.store, r.strategy));
        for m in &r.cases {
            out.push_str(&format!(" {:.1} | {} |", m.round_trips, ms(m.p50)));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\nA writer among {READERS} readers that never leave the lock free (each holds 5 ms, then asks again), {} rounds (ms):\n\n\
         | store | strategy | writer wait p50 | p99 | max | reader grants meanwhile |\n\
         | --- | --- | ---: | ---: | ---: | ---: |\n",
        args.writer_rounds
    ));
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.store,
            r.strategy,
            ms(r.writer.0),
            ms(r.writer.1),
            ms(r.writer.2),
            r.reader_grants
        ));
    }
    out
}
