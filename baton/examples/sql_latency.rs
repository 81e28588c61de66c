//! Single-operation latencies of a SQL store: `cargo run --release -p baton --features
//! postgres,mysql --example sql_latency -- URL [ITERATIONS]`, for example with
//! `sqlite:///tmp/latency.db`, `$(scripts/postgres url)` or `$(scripts/mariadb url)`. Uses a
//! fresh table, and prints the median and 99th percentile of each storage command and of an
//! uncontended lock + release per strategy (keep-alive off), then drops the table.

use std::time::{Duration, Instant};

use baton::{
    Command, Consistency, LockRequest, Locker, SerialConsistency, SqlStore, Store, Strategy,
};
use baton_kernel::{ColumnFilter, ReadConsistency};

/// Builds the command of iteration `i`.
type MakeCommand = Box<dyn Fn(usize) -> Command>;

fn stats(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    format!("median {:>9.3?}  p99 {:>9.3?}", at(0.5), at(0.99))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> baton::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: sql_latency URL [ITERATIONS]");
        std::process::exit(2);
    };
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    let table = format!("latency_{}", std::process::id());
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = SqlStore::open(&format!("{url}{sep}table={table}"))?;
    store.ensure_schema().await?;
    println!("{} ({n} iterations)", store.describe());
    let ttl = Some(Duration::from_secs(60));
    let commands: Vec<(&str, MakeCommand)> = vec![
        (
            "put",
            Box::new(move |i| Command::Put {
                row: format!("r{i}"),
                column: "c".into(),
                value: "v".into(),
                ttl,
                consistency: Consistency::Quorum,
            }),
        ),
        (
            "read",
            Box::new(|i| Command::Read {
                row: format!("r{i}"),
                filter: ColumnFilter::All,
                consistency: ReadConsistency::Plain(Consistency::Quorum),
            }),
        ),
        (
            "insert-if-absent (applied)",
            Box::new(move |i| Command::InsertIfAbsent {
                row: format!("r{i}"),
                column: "lock".into(),
                value: "a".into(),
                ttl,
                serial: SerialConsistency::Serial,
                consistency: Consistency::Quorum,
            }),
        ),
        (
            "insert-if-absent (held)",
            Box::new(move |i| Command::InsertIfAbsent {
                row: format!("r{i}"),
                column: "lock".into(),
                value: "b".into(),
                ttl,
                serial: SerialConsistency::Serial,
                consistency: Consistency::Quorum,
            }),
        ),
        (
            "compare-and-set",
            Box::new(move |i| Command::CompareAndSet {
                row: format!("r{i}"),
                column: "lock".into(),
                expected: "a".into(),
                new: Some("a".into()),
                ttl,
                serial: SerialConsistency::Serial,
                consistency: Consistency::Quorum,
            }),
        ),
        (
            "delete",
            Box::new(|i| Command::Delete {
                row: format!("r{i}"),
                column: "c".into(),
                consistency: Consistency::Quorum,
            }),
        ),
    ];
    for (what, make) in &commands {
        let mut samples = Vec::with_capacity(n);
        for i in 0..n {
            let command = make(i);
            let started = Instant::now();
            let reply = store.execute(command).await;
            samples.push(started.elapsed());
            if let baton::Reply::Failed(f) = reply {
                eprintln!("{what}: {f:?}");
                std::process::exit(1);
            }
        }
        println!("  {what:<28} {}", stats(samples));
    }
    for strategy in Strategy::ALL {
        let locker = Locker::builder(store.clone())
            .strategy(strategy)
            .keep_alive(false)
            .build()?;
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            locker
                .lock_with("bench", LockRequest::new())
                .await?
                .release()
                .await?;
            samples.push(started.elapsed());
        }
        println!("  lock + release, {strategy:<14} {}", stats(samples));
    }
    drop_table(&store, &table).await;
    Ok(())
}

async fn drop_table(store: &SqlStore, table: &str) {
    use baton::sqlx::{raw_sql, AssertSqlSafe};
    let sql = AssertSqlSafe(format!("DROP TABLE {table}"));
    let dropped = match store.pool() {
        #[cfg(feature = "sqlite")]
        baton::SqlPool::Sqlite(p) => raw_sql(sql).execute(p).await.map(|_| ()),
        #[cfg(feature = "postgres")]
        baton::SqlPool::Postgres(p) => raw_sql(sql).execute(p).await.map(|_| ()),
        #[cfg(feature = "mysql")]
        baton::SqlPool::MySql(p) => raw_sql(sql).execute(p).await.map(|_| ()),
        _ => Ok(()),
    };
    if let Err(e) = dropped {
        eprintln!("could not drop {table}: {e}");
    }
}
