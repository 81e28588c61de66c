//! The Cassandra store against a live cluster: every command against the reference table,
//! consistency levels, TTL rounding, lightweight transactions, serial reads settling a timeout,
//! schema creation and checks, and unreachable clusters.
//!
//! The cluster comes from `BATON_CASSANDRA_URL` (`scripts/cassandra start1; export
//! BATON_CASSANDRA_URL=$(scripts/cassandra url1)`); each test works in its own table. Unset: the
//! tests print a skip line, or fail under `BATON_REQUIRE_SERVICES=1`. Tests that need a
//! particular replication make their own keyspace.
#![cfg(feature = "cassandra")]

#[path = "cassandra_tests/claim_scripts.rs"]
mod claim_scripts;
#[path = "shared/claims.rs"]
mod claims;
#[path = "shared/objects.rs"]
mod object_scripts;
#[path = "cassandra_tests/objects.rs"]
mod objects;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::baton_kernel::{ColumnFilter, Instant, MemoryTable, ReadConsistency};
use baton::cassandra::CassandraStore;
use baton::{
    Cell, Command, Consistency, ErrorKind, Failure, Locker, Reply, SerialConsistency, Store,
    StoreFuture, Strategy, Write,
};

fn base_url() -> Option<String> {
    match std::env::var("BATON_CASSANDRA_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            if std::env::var("BATON_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
                panic!("BATON_CASSANDRA_URL is not set and BATON_REQUIRE_SERVICES=1 (scripts/cassandra start1; export BATON_CASSANDRA_URL=$(scripts/cassandra url1))");
            }
            eprintln!("SKIPPING Cassandra store tests: BATON_CASSANDRA_URL is not set");
            None
        }
    }
}

fn unique_table() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000_000)
        .unwrap_or(0);
    format!(
        "s_{}_{}_{nanos:x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// `base` with `extra` parameters (`key=value&…`) added.
fn with_params(base: &str, extra: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{extra}")
}

/// The base URL without its `consistency=`/`serial=` overrides, with a fresh table.
fn fresh_url(base: &str) -> String {
    let (head, query) = base.split_once('?').unwrap_or((base, ""));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("consistency=") && !p.starts_with("serial="))
        .collect();
    let mut url = String::from(head);
    if !kept.is_empty() {
        url.push('?');
        url.push_str(&kept.join("&"));
    }
    with_params(&url, &format!("table={}", unique_table()))
}

/// The host part of the base URL (`cassandra://HOSTS/…`).
fn hosts(base: &str) -> String {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest).to_owned()
}

/// The base URL's keyspace (`baton` when it names none): keyspaces a test makes are named after
/// it, so that the test command drops them with the run's own.
fn base_keyspace(base: &str) -> String {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let path = rest.split('?').next().unwrap_or(rest);
    match path.split_once('/') {
        Some((_, keyspace)) if !keyspace.is_empty() => keyspace.to_owned(),
        _ => "baton".to_owned(),
    }
}

fn store(url: &str) -> CassandraStore {
    CassandraStore::open(url).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

fn read(row: &str, filter: ColumnFilter) -> Command {
    Command::Read {
        row: row.into(),
        filter,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

fn put(row: &str, column: &str, value: &str, ttl: Option<Duration>) -> Command {
    Command::Put {
        row: row.into(),
        column: column.into(),
        value: value.into(),
        ttl,
        consistency: Consistency::Quorum,
    }
}

fn iia(row: &str, column: &str, value: &str) -> Command {
    Command::InsertIfAbsent {
        row: row.into(),
        column: column.into(),
        value: value.into(),
        ttl: Some(Duration::from_secs(60)),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

fn cas(row: &str, column: &str, expected: &str, new: Option<&str>) -> Command {
    Command::CompareAndSet {
        row: row.into(),
        column: column.into(),
        expected: expected.into(),
        new: new.map(String::from),
        ttl: Some(Duration::from_secs(60)),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

/// A reply with each cell's remaining TTL reduced to whether it has one, its stamp to 0 and
/// its rows sorted, for comparing with the reference table (whose clock, stamps and row order
/// are not Cassandra's).
fn shape(reply: Reply) -> Reply {
    let strip = |cells: Vec<Cell>| {
        cells
            .into_iter()
            .map(|c| Cell {
                ttl_remaining: c.ttl_remaining.map(|_| Duration::ZERO),
                stamp: 0,
                ..c
            })
            .collect::<Vec<_>>()
    };
    match reply {
        Reply::Cells(c) => Reply::Cells(strip(c)),
        // Cassandra lists rows in token order, the reference in key order: compared sorted
        // (only whole listings are compared this way; paging is checked on its own).
        Reply::Rows(rows) => {
            let mut rows: Vec<_> = rows.into_iter().map(|(r, c)| (r, strip(c))).collect();
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            Reply::Rows(rows)
        }
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_matches_the_reference_table() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let mut reference = MemoryTable::new();
    let long = Some(Duration::from_secs(300));
    let quorum = Consistency::Quorum;
    let commands = vec![
        read("r", ColumnFilter::All),
        put("r", "_LOCK_a", "owner=a", long),
        put("r", "_LOCK_b", "owner=b", None),
        put("r", "_LOCK", "fence", None),
        put("r", "_LOCK`", "just after the prefix", long),
        put("r", "data", "d1", long),
        put("r", "ticket/x", "entering", long),
        put("other", "_LOCK_a", "elsewhere", long),
        read("r", ColumnFilter::All),
        read("r", ColumnFilter::Prefix("_LOCK_".into())),
        read("r", ColumnFilter::Prefix("_LOCK".into())),
        read("r", ColumnFilter::Prefix("ticket/".into())),
        read("r", ColumnFilter::Prefix("zzz".into())),
        read("r", ColumnFilter::Exact("data".into())),
        read("r", ColumnFilter::Exact("nothing".into())),
        // Overwrite, delete, delete of an absent cell.
        put("r", "data", "d2", long),
        Command::Delete {
            row: "r".into(),
            column: "_LOCK_b".into(),
            consistency: quorum,
        },
        Command::Delete {
            row: "r".into(),
            column: "absent".into(),
            consistency: quorum,
        },
        read("r", ColumnFilter::All),
        // A batch, applied in order: the last write of a column wins.
        Command::Batch {
            row: "r".into(),
            writes: vec![
                Write::Put {
                    column: "data".into(),
                    value: "d3".into(),
                    ttl: None,
                },
                Write::Delete {
                    column: "_LOCK_a".into(),
                },
                Write::Put {
                    column: "_LOCK_a".into(),
                    value: "again".into(),
                    ttl: long,
                },
                Write::Put {
                    column: "data2".into(),
                    value: "x".into(),
                    ttl: long,
                },
                Write::Delete {
                    column: "data2".into(),
                },
            ],
            consistency: quorum,
            after: 0,
        },
        read("r", ColumnFilter::All),
        // One timestamp for the whole batch: a second put of a column the batch wrote changes
        // nothing (the reference table's rule), a put after a delete recreates the cell.
        Command::Batch {
            row: "r".into(),
            writes: vec![
                Write::Put {
                    column: "twice".into(),
                    value: "first".into(),
                    ttl: long,
                },
                Write::Put {
                    column: "twice".into(),
                    value: "second".into(),
                    ttl: None,
                },
                Write::Delete {
                    column: "data".into(),
                },
                Write::Put {
                    column: "data".into(),
                    value: "d4".into(),
                    ttl: long,
                },
                Write::Put {
                    column: "data".into(),
                    value: "d5".into(),
                    ttl: None,
                },
            ],
            consistency: quorum,
            after: 0,
        },
        read("r", ColumnFilter::All),
        // No version is as old as stamp 0: nothing removed.
        Command::DeleteVersion {
            row: "r".into(),
            column: "data".into(),
            stamp: 0,
            consistency: quorum,
        },
        read("r", ColumnFilter::All),
        // Conditional commands.
        iia("u", "lock", "v1"),
        iia("u", "lock", "v2"),
        cas("u", "lock", "wrong", Some("v3")),
        cas("u", "lock", "v1", Some("v3")),
        cas("u", "absent", "v1", Some("v3")),
        cas("u", "absent", "v1", None),
        cas("u", "lock", "v3", None),
        iia("u", "lock", "v4"),
        Command::Read {
            row: "u".into(),
            filter: ColumnFilter::Exact("lock".into()),
            consistency: ReadConsistency::Serial(SerialConsistency::Serial),
        },
        Command::Read {
            row: "u".into(),
            filter: ColumnFilter::All,
            consistency: ReadConsistency::Serial(SerialConsistency::LocalSerial),
        },
        // Cassandra drops expired cells itself: purge has nothing to do.
        Command::Purge { row: None },
        Command::Purge {
            row: Some("r".into()),
        },
    ];
    let now = Instant::from_nanos(1_000_000_000);
    for command in commands {
        let got = shape(store.execute(command.clone()).await);
        let want = shape(reference.apply(&command, now));
        assert_eq!(got, want, "{command:?}");
    }

    // Scan: every row with live cells, once, a page at a time, each with its cells.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let reply = store
            .execute(Command::Scan {
                after: after.clone(),
                limit: 1,
                consistency: quorum,
            })
            .await;
        let Reply::Rows(rows) = reply else {
            panic!("scan: {reply:?}")
        };
        assert!(rows.len() <= 1, "{rows:?}");
        let Some((row, cells)) = rows.into_iter().next() else {
            break;
        };
        assert_eq!(
            shape(Reply::Cells(cells)),
            shape(Reply::Cells(reference.read(&row, &ColumnFilter::All, now))),
            "{row}"
        );
        after = Some(row.clone());
        seen.push(row);
    }
    seen.sort();
    assert_eq!(seen, reference.live_rows(now));
    let all = store
        .execute(Command::Scan {
            after: None,
            limit: 100,
            consistency: quorum,
        })
        .await;
    assert!(matches!(&all, Reply::Rows(r) if r.len() == 3), "{all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttls_round_up_and_cells_expire_by_themselves() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    store.ensure_schema().await.expect("schema");
    let ttl = Duration::from_millis(1500);
    let written = std::time::Instant::now();
    assert_eq!(
        store.execute(put("r", "c", "v", Some(ttl))).await,
        Reply::Written
    );
    let Reply::Cells(cells) = store.execute(read("r", ColumnFilter::All)).await else {
        panic!("read")
    };
    let remaining = cells[0].ttl_remaining.expect("a TTL");
    // ceil(1.5 s) + 1 s for Cassandra's whole-second expiry stamps.
    assert!(
        remaining >= Duration::from_secs(2) && remaining <= Duration::from_secs(3),
        "{remaining:?}"
    );
    // Live for at least the TTL asked for...
    tokio::time::sleep(ttl.saturating_sub(written.elapsed())).await;
    let at_ttl = store.execute(read("r", ColumnFilter::All)).await;
    if written.elapsed() < ttl + Duration::from_millis(200) {
        assert!(
            matches!(&at_ttl, Reply::Cells(c) if c.len() == 1),
            "gone before its TTL: {at_ttl:?}"
        );
    }
    // ...and gone by itself within the rounding.
    tokio::time::sleep(Duration::from_millis(3600).saturating_sub(written.elapsed())).await;
    assert_eq!(
        store.execute(read("r", ColumnFilter::All)).await,
        Reply::Cells(vec![])
    );
    // Insert-if-absent replaces an expired cell.
    let short = Command::InsertIfAbsent {
        row: "e".into(),
        column: "lock".into(),
        value: "old".into(),
        ttl: Some(Duration::from_millis(10)),
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    };
    assert!(matches!(
        store.execute(short).await,
        Reply::Conditional { applied: true, .. }
    ));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        store.execute(iia("e", "lock", "new")).await,
        Reply::Conditional {
            applied: true,
            current: None
        }
    );
}

/// A keyspace with replication factor `rf` (created if missing) and a fresh table in it.
fn url_in_keyspace(base: &str, keyspace: &str, rf: u32, extra: &str) -> String {
    let mut url = format!(
        "cassandra://{}/{keyspace}?replication={rf}&table={}",
        hosts(base),
        unique_table()
    );
    if !extra.is_empty() {
        url = with_params(&url, extra);
    }
    url
}

/// How many nodes the cluster has (from the URL's hosts).
fn node_count(base: &str) -> usize {
    hosts(base).split(',').count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_command_runs_at_its_consistency_level() {
    let Some(base) = base_url() else { return };
    // A keyspace replicated twice as often as the cluster has nodes: QUORUM (more than half the
    // replicas) and ALL can never be met, ONE can. That tells which level a command ran at.
    let rf = 2 * u32::try_from(node_count(&base)).unwrap_or(1);
    let keyspace = format!("{}_rf{rf}", base_keyspace(&base));
    let store = store(&url_in_keyspace(&base, &keyspace, rf, ""));
    store.ensure_schema().await.expect("schema");
    let at = |c: Consistency| Command::Put {
        row: "r".into(),
        column: "c".into(),
        value: "v".into(),
        ttl: None,
        consistency: c,
    };
    assert_eq!(store.execute(at(Consistency::One)).await, Reply::Written);
    for c in [Consistency::Quorum, Consistency::All] {
        let reply = store.execute(at(c)).await;
        assert!(
            matches!(&reply, Reply::Failed(Failure::Unavailable(m)) if m.to_lowercase().contains("consistency")),
            "{c:?}: {reply:?}"
        );
    }
    let read_at = |c: ReadConsistency| Command::Read {
        row: "r".into(),
        filter: ColumnFilter::All,
        consistency: c,
    };
    assert!(matches!(
        store.execute(read_at(ReadConsistency::Plain(Consistency::One))).await,
        Reply::Cells(c) if c.len() == 1
    ));
    assert!(matches!(
        store
            .execute(read_at(ReadConsistency::Plain(Consistency::Quorum)))
            .await,
        Reply::Failed(Failure::Unavailable(_))
    ));
    assert!(matches!(
        store
            .execute(read_at(ReadConsistency::Serial(SerialConsistency::Serial)))
            .await,
        Reply::Failed(Failure::Unavailable(_))
    ));
    // A conditional command that cannot gather its Paxos quorum was not applied.
    let reply = store.execute(iia("r", "lock", "x")).await;
    assert!(
        matches!(&reply, Reply::Failed(Failure::Unavailable(_))),
        "{reply:?}"
    );

    // The URL's consistency= overrides every command's level.
    let one = CassandraStore::open(&with_params(
        &format!("cassandra://{}/{keyspace}?replication={rf}", hosts(&base)),
        &format!(
            "table={}&consistency=one&allow_weak_consistency=true",
            store.options().table
        ),
    ))
    .expect("url");
    assert_eq!(one.execute(at(Consistency::All)).await, Reply::Written);

    // LOCAL_QUORUM and EACH_QUORUM reach the server as such (here as unmet levels).
    for c in [Consistency::LocalQuorum, Consistency::EachQuorum] {
        let reply = store.execute(at(c)).await;
        assert!(matches!(reply, Reply::Failed(_)), "{c:?}: {reply:?}");
    }
}

/// A store that forwards to another, but answers the first conditional command with a timeout
/// *after* applying it: the ambiguous outcome the kernel must settle by a serial read.
#[derive(Clone)]
struct TimeoutAfterApply {
    inner: Arc<CassandraStore>,
    log: Arc<Mutex<Vec<Command>>>,
    fired: Arc<AtomicU64>,
}

impl Store for TimeoutAfterApply {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            self.log.lock().expect("log").push(command.clone());
            let reply = self.inner.execute(command.clone()).await;
            if command.is_conditional() && self.fired.fetch_add(1, Ordering::SeqCst) == 0 {
                return Reply::Failed(Failure::Timeout("injected: timed out after apply".into()));
            }
            reply
        })
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_conditional_write_is_settled_by_a_serial_read() {
    let Some(base) = base_url() else { return };
    let url = fresh_url(&base);
    let wrapped = TimeoutAfterApply {
        inner: Arc::new(store(&url)),
        log: Arc::default(),
        fired: Arc::default(),
    };
    let log = wrapped.log.clone();
    let locker = Locker::builder(wrapped)
        .strategy(Strategy::UniqueInsert)
        .build()
        .expect("locker");
    let mut guard = locker.lock("settle").await.expect("granted after settling");
    assert_eq!(guard.token(), 1);
    let commands = log.lock().expect("log").clone();
    // The claim (the record and the counter in one conditional batch), then a serial read of
    // the row.
    assert!(
        matches!(
            &commands[..2],
            [
                Command::Claim { .. },
                Command::Read {
                    consistency: ReadConsistency::Serial(_),
                    filter: ColumnFilter::All,
                    ..
                }
            ]
        ),
        "{commands:#?}"
    );
    // Not claimed twice: the serial read showed our record and our counter, so the claim was
    // not resent, and nothing else was needed.
    assert_eq!(commands.len(), 2, "{commands:#?}");
    guard.release().await.expect("release");
    // Another client sees the lock free.
    let other = Locker::open(&url).expect("open");
    drop(other.try_lock("settle").await.expect("free"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_is_created_or_checked() {
    let Some(base) = base_url() else { return };
    // create=false on a missing table: a clear store error with the DDL.
    let missing = with_params(&fresh_url(&base), "create=false");
    let e = Locker::open(&missing)
        .expect("open")
        .lock("x")
        .await
        .expect_err("no table");
    assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
    assert!(e.message().contains("does not exist"), "{e}");
    assert!(e.message().contains("CREATE TABLE"), "{e}");
    // A missing keyspace too.
    let e = CassandraStore::open(&format!(
        "cassandra://{}/baton_no_such_keyspace?create=false",
        hosts(&base)
    ))
    .expect("open")
    .ensure_schema()
    .await
    .expect_err("no keyspace");
    assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
    assert!(e.message().contains("CREATE KEYSPACE"), "{e}");

    // Created on first use (mixed case preserved), then accepted with create=false.
    let table = format!("Qt{}", unique_table());
    let created = with_params(&fresh_url(&base), &format!("table={table}"));
    let locker = Locker::open(&created).expect("open");
    drop(locker.lock("x").await.expect("created"));
    let checked = Locker::open(&with_params(&created, "create=false")).expect("open");
    drop(checked.lock("x").await.expect("checked"));

    // A table of another shape is refused, naming the problem.
    let foreign = unique_table();
    let session = store(&fresh_url(&base)).session().await.expect("session");
    let keyspace = store(&fresh_url(&base)).options().keyspace.clone();
    session
        .query_unpaged(
            format!("CREATE TABLE \"{keyspace}\".\"{foreign}\" (lock_name text PRIMARY KEY, value text)"),
            (),
        )
        .await
        .expect("create a foreign table");
    let e = CassandraStore::open(&with_params(&fresh_url(&base), &format!("table={foreign}")))
        .expect("open")
        .ensure_schema()
        .await
        .expect_err("foreign table");
    assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
    assert!(e.message().contains("column cell"), "{e}");

    // Names are validated before anything is sent.
    for bad in ["table=a.b", "table=x\"y", "table=_x", "table=1x"] {
        let e = Locker::open(&with_params(&base, bad)).expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{bad}: {e}");
    }
    let e = Locker::open(&format!("cassandra://{}/bad-keyspace", hosts(&base))).expect_err("ks");
    assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_cluster_is_store_unavailable_promptly() {
    // Nothing listens on port 1: refused at once. No cluster needed.
    let locker = Locker::builder(
        CassandraStore::open("cassandra://127.0.0.1:1/baton?connect_timeout=1s").expect("open"),
    )
    .retry(baton::RetryPolicy {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(50),
        max_attempts: None,
        ..baton::RetryPolicy::default()
    })
    .build()
    .expect("locker");
    let started = std::time::Instant::now();
    let e = locker.lock("x").await.expect_err("unreachable");
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}");
    assert!(e.message().contains("store unavailable"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_strategy_locks_through_a_url() {
    let Some(base) = base_url() else { return };
    let url = fresh_url(&base);
    for strategy in Strategy::ALL {
        let a = Locker::builder(store(&url))
            .strategy(strategy)
            .build()
            .expect("locker");
        let b = Locker::builder(store(&url))
            .strategy(strategy)
            .build()
            .expect("locker");
        let name = format!("job-{strategy}");
        let mut held = a.lock(&name).await.expect("lock");
        let e = b.try_lock(&name).await.expect_err("busy");
        assert_eq!(e.kind(), ErrorKind::Busy, "{strategy}: {e}");
        held.release().await.expect("release");
        let again = b.try_lock(&name).await.expect("free");
        assert!(again.token() > held.token(), "{strategy}");
    }
}

/// The live cells of `row` as `(column, value, stamp)`.
async fn versions(store: &CassandraStore, row: &str) -> Vec<(String, String, u64)> {
    match store.execute(read(row, ColumnFilter::All)).await {
        Reply::Cells(cells) => cells
            .into_iter()
            .map(|c| (c.column, c.value, c.stamp))
            .collect(),
        other => panic!("read answered {other:?}"),
    }
}

/// The stamp (`WRITETIME`) of the live cell `(row, column)`.
async fn stamp_of(store: &CassandraStore, row: &str, column: &str) -> u64 {
    versions(store, row)
        .await
        .into_iter()
        .find(|(c, _, _)| c == column)
        .map(|(_, _, s)| s)
        .unwrap_or_else(|| panic!("no cell {column} in {row}"))
}

fn micros_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn delete(row: &str, column: &str) -> Command {
    Command::Delete {
        row: row.into(),
        column: column.into(),
        consistency: Consistency::Quorum,
    }
}

fn delete_version(row: &str, column: &str, stamp: u64) -> Command {
    Command::DeleteVersion {
        row: row.into(),
        column: column.into(),
        stamp,
        consistency: Consistency::Quorum,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_return_the_stamps_plain_writes_carry() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    store.ensure_schema().await.expect("schema");
    let mut last = 0;
    for i in 0..5 {
        let before = micros_now();
        let value = format!("v{i}");
        assert_eq!(
            store.execute(put("r", "c", &value, None)).await,
            Reply::Written
        );
        let after = micros_now();
        let stamp = stamp_of(&store, "r", "c").await;
        assert!(stamp > last, "put {i}: {stamp} after {last}");
        // The client's stamp (wall-clock microseconds when it was sent), not the server's.
        assert!(
            stamp >= before && stamp <= after + 1_000_000,
            "{before} <= {stamp} <= {after}"
        );
        last = stamp;
    }
    // A batch writes every cell at one timestamp.
    let batch = Command::Batch {
        after: 0,
        row: "r".into(),
        writes: ["x", "y"]
            .into_iter()
            .map(|c| Write::Put {
                column: c.into(),
                value: c.into(),
                ttl: Some(Duration::from_secs(60)),
            })
            .collect(),
        consistency: Consistency::Quorum,
    };
    assert_eq!(store.execute(batch).await, Reply::Written);
    let x = stamp_of(&store, "r", "x").await;
    assert_eq!(x, stamp_of(&store, "r", "y").await);
    assert!(x > last, "{x} after {last}");
    // Lightweight transactions carry no timestamp of ours, but reads still return theirs
    // (the ballot's).
    assert!(matches!(
        store.execute(iia("u", "lock", "a")).await,
        Reply::Conditional { applied: true, .. }
    ));
    assert!(stamp_of(&store, "u", "lock").await > 0);
    // Scans return the same stamps as reads.
    let Reply::Rows(rows) = store
        .execute(Command::Scan {
            after: None,
            limit: 10,
            consistency: Consistency::Quorum,
        })
        .await
    else {
        panic!("rows")
    };
    let (_, cells) = rows.into_iter().find(|(r, _)| r == "r").expect("row r");
    assert_eq!(
        cells
            .into_iter()
            .map(|c| (c.column, c.value, c.stamp))
            .collect::<Vec<_>>(),
        versions(&store, "r").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_plain_writes_do_not_undo_later_ones() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    store.ensure_schema().await.expect("schema");
    store.execute(put("r", "c", "v1", None)).await;
    let s1 = stamp_of(&store, "r", "c").await;
    store.execute(put("r", "c", "v2", None)).await;
    let s2 = stamp_of(&store, "r", "c").await;
    assert!(s2 > s1);
    let v2 = vec![("c".to_owned(), "v2".to_owned(), s2)];
    // A put, a delete or a batch that reaches the cluster after a later write (an older
    // stamp: held in a coordinator's queue, replayed from a hint) changes nothing.
    for stamp in [s1, s2 - 1] {
        assert_eq!(
            store
                .execute_stamped(put("r", "c", "late", None), stamp)
                .await,
            Reply::Written
        );
        assert_eq!(versions(&store, "r").await, v2, "a put stamped {stamp}");
        assert_eq!(
            store.execute_stamped(delete("r", "c"), stamp).await,
            Reply::Written
        );
        assert_eq!(versions(&store, "r").await, v2, "a delete stamped {stamp}");
        let batch = Command::Batch {
            after: 0,
            row: "r".into(),
            writes: vec![
                Write::Delete { column: "c".into() },
                Write::Put {
                    column: "c".into(),
                    value: "batch".into(),
                    ttl: None,
                },
            ],
            consistency: Consistency::Quorum,
        };
        assert_eq!(store.execute_stamped(batch, stamp).await, Reply::Written);
        assert_eq!(versions(&store, "r").await, v2, "a batch stamped {stamp}");
    }
    // A newer put applies; a delete at least as new removes the cell.
    store
        .execute_stamped(put("r", "c", "v3", None), s2 + 1)
        .await;
    assert_eq!(
        versions(&store, "r").await,
        vec![("c".to_owned(), "v3".to_owned(), s2 + 1)]
    );
    store.execute_stamped(delete("r", "c"), s2 + 1).await;
    assert_eq!(versions(&store, "r").await, vec![]);
    // Cassandra keeps the delete as a tombstone: a put older than it does not bring the cell
    // back (the reference table, like SQL, keeps no tombstone and would: both are allowed).
    store
        .execute_stamped(put("r", "c", "ghost", None), s1)
        .await;
    assert_eq!(versions(&store, "r").await, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_version_removes_only_the_version_read() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    store.ensure_schema().await.expect("schema");
    let changes = store
        .changes()
        .expect("the Cassandra store reports changes");
    store.execute(put("r", "c", "v1", None)).await;
    let s1 = stamp_of(&store, "r", "c").await;
    // An older version than the cell's: nothing removed.
    assert_eq!(
        store.execute(delete_version("r", "c", s1 - 1)).await,
        Reply::Written
    );
    assert_eq!(versions(&store, "r").await.len(), 1);
    // The version a read returned: removed, and waiters are told.
    let seen = *changes.borrow();
    assert_eq!(
        store.execute(delete_version("r", "c", s1)).await,
        Reply::Written
    );
    assert_eq!(versions(&store, "r").await, vec![]);
    assert!(*changes.borrow() > seen, "a delete-version may free a lock");
    // Read a version, then the owner writes the cell again: the newer version survives a
    // delete of the one that was read, and goes with its own.
    store.execute(put("r", "c", "v2", None)).await;
    let s2 = stamp_of(&store, "r", "c").await;
    store.execute(put("r", "c", "v3", None)).await;
    let s3 = stamp_of(&store, "r", "c").await;
    assert!(s3 > s2);
    store.execute(delete_version("r", "c", s2)).await;
    assert_eq!(
        versions(&store, "r").await,
        vec![("c".to_owned(), "v3".to_owned(), s3)]
    );
    // A delete-version keeps its own stamp when executed with another.
    store
        .execute_stamped(delete_version("r", "c", s2), s3 + 1)
        .await;
    assert_eq!(versions(&store, "r").await.len(), 1);
    store.execute(delete_version("r", "c", s3)).await;
    assert_eq!(versions(&store, "r").await, vec![]);
}
