//! Object writes on Cassandra (one conditional batch each), from the scripts shared with the
//! SQL tests (`baton/tests/shared/objects.rs`), against the kernel's reference table; the
//! guard's probes, which must leave every cell they check as it was; 1 MiB values; and lock
//! tables made before the `probe` column existed.

use std::time::Duration;

use baton::baton_kernel::{ColumnFilter, Instant, MemoryTable};
use baton::cassandra::CassandraStore;
use baton::{Cell, ErrorKind, Failure, Locker, Reply, Store};

use super::claim_scripts::same_as_reference;
use super::object_scripts::{self as objects, cell, free, held, held_by, set, version, OBJECT};
use super::{base_url, fresh_url, store, unique_table, with_params};

/// Every object write of the shared script, in one table, compared with the reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_writes_match_the_reference_table() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let mut reference = MemoryTable::new();
    let now = Instant::from_nanos(1_000_000_000);
    same_as_reference(
        &store,
        &mut reference,
        objects::objects_and_their_guards(),
        now,
    )
    .await;
}

/// The cells of `row` as Cassandra has them: value, TTL left, `WRITETIME`.
async fn cells(store: &CassandraStore, row: &str) -> Vec<Cell> {
    match store.execute(objects::read(row, ColumnFilter::All)).await {
        Reply::Cells(cells) => cells,
        other => panic!("read answered {other:?}"),
    }
}

/// The guard's probes write only the `probe` column: the lock cells they check (one written by
/// a plain write with a TTL, as column prefix's; one by Paxos, as unique insert's) keep their
/// value, TTL and `WRITETIME`, applied or not; and a probe of a cell that does not exist
/// makes no row appear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_leave_the_cells_they_check_as_they_were() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let row = "probed";
    let (a, ta) = ("owner=a att=1", "token=1 owner=a");
    let put = baton::Command::Put {
        row: row.into(),
        column: "_LOCK_a".into(),
        value: a.into(),
        ttl: Some(Duration::from_secs(300)),
        consistency: baton::Consistency::Quorum,
    };
    assert_eq!(store.execute(put).await, Reply::Written);
    let claim = objects::claim(row, objects::LONG, a, None, ta);
    assert!(matches!(
        store.execute(claim).await,
        Reply::Guarded { applied: true, .. }
    ));
    let before = cells(&store, row).await;
    let writes = [
        set(
            row,
            None,
            &cell(1, "a1.1", "QQ=="),
            held_by("_LOCK_a", a, ta),
        ),
        set(
            row,
            Some(&version(1)),
            &cell(2, "a1.2", "QQ=="),
            held(a, ta),
        ),
        set(
            row,
            Some(&version(2)),
            &cell(3, "a1.3", "QQ=="),
            held("owner=b", ta),
        ),
        set(row, Some(&version(2)), &cell(3, "a1.3", "QQ=="), free()),
    ];
    let mut applied = Vec::new();
    for command in writes {
        match store.execute(command.clone()).await {
            Reply::Object { applied: a, .. } => applied.push(a),
            other => panic!("{command:?}: {other:?}"),
        }
    }
    assert_eq!(applied, [true, true, false, false]);
    let after: Vec<Cell> = cells(&store, row)
        .await
        .into_iter()
        .filter(|c| c.column != OBJECT)
        .collect();
    assert_eq!(before.len(), after.len(), "{before:?} {after:?}");
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            (&b.column, &b.value, b.stamp),
            (&a.column, &a.value, a.stamp),
            "{b:?} became {a:?}"
        );
        // TTLs run down, never reset by a write.
        assert_eq!(b.ttl_remaining.is_some(), a.ttl_remaining.is_some());
        assert!(a.ttl_remaining <= b.ttl_remaining, "{b:?} became {a:?}");
    }
    // A free write on a name never locked probes a lock row that does not exist: the tombstone
    // it leaves makes no row appear, in a read or a scan.
    let fresh = set("fresh", None, &cell(1, "x", "QQ=="), free());
    assert!(matches!(
        store.execute(fresh).await,
        Reply::Object { applied: true, .. }
    ));
    let found: Vec<String> = cells(&store, "fresh")
        .await
        .into_iter()
        .map(|c| c.column)
        .collect();
    assert_eq!(found, [OBJECT]);
    let scan = store
        .execute(baton::Command::Scan {
            after: None,
            limit: 10,
            consistency: baton::Consistency::Quorum,
        })
        .await;
    let Reply::Rows(rows) = scan else {
        panic!("{scan:?}")
    };
    let fresh: Vec<&str> = rows
        .iter()
        .filter(|(r, _)| r == "fresh")
        .flat_map(|(_, cells)| cells.iter().map(|c| c.column.as_str()))
        .collect();
    assert_eq!(fresh, [OBJECT]);
}

/// A lock that expires under its object: its holder's write is refused, an unlocked one
/// applies, until the next claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lock_refuses_its_holder_and_frees_the_object() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let mut reference = MemoryTable::new();
    let ttl = Duration::from_secs(1);
    let (before, after) = objects::expired_lock(ttl);
    let start = Instant::from_nanos(1_000_000_000);
    same_as_reference(&store, &mut reference, before, start).await;
    // Cassandra's TTL runs out by itself; the reference table's clock is moved past it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !matches!(
        store.execute(objects::expired_lock_cell()).await,
        Reply::Cells(c) if c.is_empty()
    ) {
        assert!(
            std::time::Instant::now() < deadline,
            "the lock never expired"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let later = Instant::from_nanos(1_000_000_000 + 2 * ttl.as_nanos() as u64);
    same_as_reference(&store, &mut reference, after, later).await;
}

/// A value of 1 MiB, in base64 as the object cell holds it, inserted, replaced and read back
/// whole (a conditional batch of one partition is not held to the batch size limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_of_a_mebibyte_are_kept_whole() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let mut reference = MemoryTable::new();
    let now = Instant::from_nanos(1_000_000_000);
    same_as_reference(&store, &mut reference, objects::big_values(1 << 20), now).await;
    let found = cells(&store, "obj-big").await;
    let object = found
        .iter()
        .find(|c| c.column == OBJECT)
        .expect("the object");
    assert_eq!(object.value.len(), 20 + 1 + 4 + 1 + 1_398_104);
    assert_eq!(object.ttl_remaining, None);
}

/// Creates `table` in the base URL's keyspace as an earlier version did: without `probe`.
async fn old_table(base: &str, table: &str) {
    let session = store(&fresh_url(base)).session().await.expect("session");
    let keyspace = store(&fresh_url(base)).options().keyspace.clone();
    session
        .query_unpaged(
            format!(
                "CREATE TABLE \"{keyspace}\".\"{table}\" (lock_name text, cell text, value text, PRIMARY KEY ((lock_name), cell))"
            ),
            (),
        )
        .await
        .expect("create a table of an earlier version");
}

/// A table made before the `probe` column existed: with `create=false`, locks work on it and
/// object writes are refused with the `ALTER TABLE` to run; a store that may create its
/// schema adds the column, also when several do it at once, and object writes then apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_without_the_probe_column_gets_it_or_refuses_object_writes() {
    let Some(base) = base_url() else { return };
    let table = unique_table();
    old_table(&base, &table).await;
    let url = with_params(&fresh_url(&base), &format!("table={table}"));
    let insert = set("obj", None, &cell(1, "x", "QQ=="), free());

    let unaltered = store(&with_params(&url, "create=false"));
    match unaltered.execute(insert.clone()).await {
        Reply::Failed(Failure::Rejected(why)) => {
            assert!(
                why.contains("create=false") && why.contains("ALTER TABLE \""),
                "{why}"
            );
            assert!(
                why.ends_with(&format!("\"{table}\" ADD probe text")),
                "{why}"
            );
        }
        other => panic!("an object write without the probe column: {other:?}"),
    }
    let locker = Locker::builder(unaltered.clone()).build().expect("locker");
    drop(locker.lock("x").await.expect("locks work on"));

    // Three stores that may alter it, at once: each one's set-up succeeds.
    let setups: Vec<_> = (0..3)
        .map(|_| {
            let s = store(&url);
            tokio::spawn(async move { s.ensure_schema().await.map(|_| s) })
        })
        .collect();
    let mut altered = Vec::new();
    for setup in setups {
        altered.push(setup.await.expect("no panic").expect("set up"));
    }
    assert_eq!(
        altered[0].execute(insert.clone()).await,
        Reply::Object {
            applied: true,
            current: Some(cell(1, "x", "QQ==")),
            lock: None,
            counter: None,
        }
    );
    for s in &altered[1..] {
        assert!(matches!(
            s.execute(insert.clone()).await,
            Reply::Object { applied: false, .. }
        ));
    }
    // The store that found no column keeps refusing (it does not look again); a new one on
    // the altered table with create=false writes.
    let e = unaltered.execute(insert.clone()).await;
    assert!(matches!(e, Reply::Failed(Failure::Rejected(_))), "{e:?}");
    let later = store(&with_params(&url, "create=false"));
    let update = set("obj", Some(&version(1)), &cell(2, "y", "QQ=="), free());
    assert!(matches!(
        later.execute(update).await,
        Reply::Object { applied: true, .. }
    ));
    // A probe column of another shape is not baton's table.
    let foreign = unique_table();
    let session = later.session().await.expect("session");
    let keyspace = later.options().keyspace.clone();
    session
        .query_unpaged(
            format!(
                "CREATE TABLE \"{keyspace}\".\"{foreign}\" (lock_name text, cell text, value text, probe int, PRIMARY KEY ((lock_name), cell))"
            ),
            (),
        )
        .await
        .expect("create");
    let e = store(&with_params(&fresh_url(&base), &format!("table={foreign}")))
        .ensure_schema()
        .await
        .expect_err("a probe of another type");
    assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
    assert!(e.message().contains("column probe"), "{e}");
}
