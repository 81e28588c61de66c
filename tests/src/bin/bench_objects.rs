//! Benchmark of objects beside locks (issue 42, point 8): what seed 002's two pairs cost on
//! each store, next to two statements of the same shape.
//!
//! ```text
//! bench_objects [--iterations 300] [--stores sqlite,postgres,mysql,cassandra]
//!               [--strategies unique-insert,bakery,column-prefix]
//! ```
//!
//! Stores: SQLite always (a temporary file, or `BATON_SQLITE_URL`), PostgreSQL, MariaDB and
//! Cassandra when `BATON_POSTGRES_URL`, `BATON_MYSQL_URL`, `BATON_CASSANDRA_URL` are set; each
//! strategy on a fresh table, keep-alive off, uncontended. Per store and strategy, alternating
//! one iteration of each so all three meet the same database conditions:
//!
//! - **locked**: `get_and_lock` + `update_locked_and_release` of one object;
//! - **optimistic**: `get` + `update_optimistic` of another;
//! - **2 statements**: a read of one cell and a conditional write of it (the shape of the
//!   optimistic pair without its lock check: SQL `SELECT` + `UPDATE … WHERE value = ?`,
//!   Cassandra `SELECT` + `UPDATE … IF value = ?`), through the same store and connections.
//!
//! Round trips are the storage commands each pair sent, counted by a wrapping store. Output:
//! one line per measurement as it ends, then the Markdown table of docs/performance.md,
//! "Objects".

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{
    Command, Consistency, LockerBuilder, Reply, SerialConsistency, Store, StoreFuture, Strategy,
};
use baton_tests::conformance::{Backend, Target};
use baton_tests::contention::percentiles;

type Error = Box<dyn std::error::Error + Send + Sync>;

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
    stores: Vec<Backend>,
    strategies: Vec<Strategy>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        iterations: 300,
        stores: vec![
            Backend::Sqlite,
            Backend::Postgres,
            Backend::Mysql,
            Backend::Cassandra,
        ],
        strategies: vec![Strategy::UniqueInsert],
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--iterations" => {
                args.iterations = value.parse().map_err(|_| format!("bad {flag} {value:?}"))?
            }
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
            "--strategies" => {
                args.strategies = value
                    .split(',')
                    .map(|s| s.parse().map_err(|e| format!("{e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    Ok(args)
}

/// One measurement: p50, p99, and round trips per operation.
struct Measured {
    p50: Duration,
    p99: Duration,
    round_trips: f64,
}

fn measured(times: Vec<Duration>, sent: u64) -> Measured {
    let n = times.len().max(1) as f64;
    let (p50, p99) = percentiles(times.clone());
    Measured {
        p50,
        p99,
        round_trips: sent as f64 / n,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

struct Row {
    store: Backend,
    strategy: Strategy,
    locked: Measured,
    optimistic: Measured,
    plain: Measured,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args = parse_args()?;
    println!("{}", baton_tests::provenance::line("bench_objects"));
    println!(
        "baton objects benchmark: {} iterations, alternating ({})",
        args.iterations,
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
        for &strategy in &args.strategies {
            let row = bench(&target, backend, strategy, args.iterations).await?;
            println!(
                "{backend} {strategy}: locked {} ms ({:.1} rt), optimistic {} ms ({:.1} rt), 2 statements {} ms ({:.1} rt)",
                ms(row.locked.p50),
                row.locked.round_trips,
                ms(row.optimistic.p50),
                row.optimistic.round_trips,
                ms(row.plain.p50),
                row.plain.round_trips,
            );
            rows.push(row);
        }
    }
    println!("\n{}", markdown(&rows, args.iterations));
    Ok(())
}

async fn bench(
    target: &Target,
    backend: Backend,
    strategy: Strategy,
    iterations: usize,
) -> Result<Row, Error> {
    let table = target.table();
    let counting = Arc::new(Counting {
        inner: table.client(),
        sent: AtomicU64::new(0),
    });
    let store: Arc<dyn Store> = counting.clone();
    let locker = LockerBuilder::new(Arc::clone(&store))
        .strategy(strategy)
        .keep_alive(false)
        .build()?;
    locker.insert("locked", "0").await?;
    locker.insert("optimistic", "0").await?;
    // The plain pair's cell: a row and column of their own, chained compare-and-sets.
    let mut plain_value = String::from("0");
    store
        .execute(Command::InsertIfAbsent {
            row: "plain".into(),
            column: "cell".into(),
            value: plain_value.clone(),
            ttl: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        })
        .await;
    let (mut locked, mut optimistic, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    let (mut locked_sent, mut optimistic_sent, mut plain_sent) = (0, 0, 0);
    let warmup = iterations / 10;
    for i in 0..warmup + iterations {
        let count = |c: &Counting| c.sent.load(Ordering::Relaxed);

        let before = count(&counting);
        let started = Instant::now();
        let mut o = locker.get_and_lock("locked").await?;
        let n = o.version();
        o.update_locked_and_release(n.to_string()).await?;
        let took = started.elapsed();
        if i >= warmup {
            locked.push(took);
            locked_sent += count(&counting) - before;
        }

        let before = count(&counting);
        let started = Instant::now();
        let current = locker.get("optimistic").await?.ok_or("no object")?;
        locker
            .update_optimistic("optimistic", current.version.to_string(), current.version)
            .await?;
        let took = started.elapsed();
        if i >= warmup {
            optimistic.push(took);
            optimistic_sent += count(&counting) - before;
        }

        let before = count(&counting);
        let started = Instant::now();
        let read = store
            .execute(Command::Read {
                row: "plain".into(),
                filter: baton::baton_kernel::ColumnFilter::Exact("cell".into()),
                consistency: baton::baton_kernel::ReadConsistency::Plain(Consistency::Quorum),
            })
            .await;
        if !matches!(read, Reply::Cells(_)) {
            return Err(format!("plain read: {read:?}").into());
        }
        let next = (i + 1).to_string();
        let written = store
            .execute(Command::CompareAndSet {
                row: "plain".into(),
                column: "cell".into(),
                expected: plain_value.clone(),
                new: Some(next.clone()),
                ttl: None,
                serial: SerialConsistency::Serial,
                consistency: Consistency::Quorum,
            })
            .await;
        if !matches!(written, Reply::Conditional { applied: true, .. }) {
            return Err(format!("plain compare-and-set: {written:?}").into());
        }
        plain_value = next;
        let took = started.elapsed();
        if i >= warmup {
            plain.push(took);
            plain_sent += count(&counting) - before;
        }
    }
    Ok(Row {
        store: backend,
        strategy,
        locked: measured(locked, locked_sent),
        optimistic: measured(optimistic, optimistic_sent),
        plain: measured(plain, plain_sent),
    })
}

fn markdown(rows: &[Row], iterations: usize) -> String {
    let mut out = format!(
        "Objects, uncontended, {iterations} alternating iterations (keep-alive off; ms):\n\n\
         | store | strategy | locked pair: rt | p50 | p99 | / 2 statements | optimistic pair: rt | p50 | p99 | / 2 statements | 2 statements p50 |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    );
    for r in rows {
        let ratio = |m: &Measured| m.p50.as_secs_f64() / r.plain.p50.as_secs_f64().max(1e-9);
        out.push_str(&format!(
            "| {} | {} | {:.1} | {} | {} | {:.2} | {:.1} | {} | {} | {:.2} | {} |\n",
            r.store,
            r.strategy,
            r.locked.round_trips,
            ms(r.locked.p50),
            ms(r.locked.p99),
            ratio(&r.locked),
            r.optimistic.round_trips,
            ms(r.optimistic.p50),
            ms(r.optimistic.p99),
            ratio(&r.optimistic),
            ms(r.plain.p50),
        ));
    }
    out
}
