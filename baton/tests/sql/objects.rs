//! Object writes ([`Command::SetObject`]) on each database, from the scripts shared with the
//! Cassandra tests (`baton/tests/shared/objects.rs`), against the kernel's reference table;
//! the largest values each table holds; and writers racing for one object.

use std::time::Duration;

use baton::{Command, Failure, MemoryStore, Reply, SqlStore, Store};
use baton_kernel::ColumnFilter;

use crate::claim_scripts::{across_expiry, same_as_reference};
use crate::commands::open;
use crate::common::exec_raw;
use crate::object_scripts::{self as objects, cell, free, held, set, version, OBJECT};
use crate::per_db;

// Inserts, updates by version and by whole value, a guard that fails on its lock value, on its
// counter, on a released lock, a free guard on a held lock, a lock cell written by a plain
// write: every reply as the reference table's.
per_db!(
    object_writes_match_the_reference_table,
    |url: String| async move {
        let store = open(&url);
        let reference = MemoryStore::new();
        same_as_reference(&store, &reference, objects::objects_and_their_guards()).await;
    }
);

// A lock that expires under its object: its holder's write is refused, an unlocked one applies
// (the expired lock row is still stored, and counts as absent), until the next claim.
per_db!(
    an_expired_lock_refuses_its_holder_and_frees_the_object,
    |url: String| async move {
        // Long enough for the three commands before the expiry to run on both sides while
        // the whole suite loads the machine.
        let scripts = objects::expired_lock(Duration::from_secs(2));
        across_expiry(&url, scripts, vec![objects::expired_lock_cell()]).await;
    }
);

/// Whether the store at `url` is MariaDB's.
// (With SQLite alone, only the wildcard arm is compiled.)
#[allow(clippy::match_single_binding)]
fn is_mariadb(store: &SqlStore) -> bool {
    match store.pool() {
        #[cfg(feature = "mysql")]
        baton::SqlPool::MySql(_) => true,
        _ => false,
    }
}

// A value of 1 MiB (in base64, as the object cell holds it) on PostgreSQL and SQLite, whole.
// MariaDB's TEXT column holds 65 535 bytes: a cell that long is kept whole, a longer one is
// refused before it is sent, naming the limit, and never truncated (the server, in strict mode,
// refuses one too).
per_db!(values_are_kept_whole_or_refused, |url: String| async move {
    let store = open(&url);
    let reference = MemoryStore::new();
    if !is_mariadb(&store) {
        same_as_reference(&store, &reference, objects::big_values(1 << 20)).await;
        let Reply::Cells(cells) = store
            .execute(objects::read("obj-big", ColumnFilter::Exact(OBJECT.into())))
            .await
        else {
            panic!("a read");
        };
        assert_eq!(cells[0].value.len(), 20 + 1 + 4 + 1 + 1_398_104);
        return;
    }
    let header = cell(1, "a1.1", "").len();
    let fits = cell(1, "a1.1", &"A".repeat(65_535 - header));
    assert_eq!(fits.len(), 65_535);
    let too_long = cell(2, "a1.2", &"B".repeat(65_536 - header));
    same_as_reference(
        &store,
        &reference,
        vec![
            set("obj-big", None, &fits, free()),
            objects::read("obj-big", ColumnFilter::All),
        ],
    )
    .await;
    for command in [
        set("obj-big", Some(&version(1)), &too_long, free()),
        set("obj-new", None, &too_long, free()),
    ] {
        match store.execute(command).await {
            Reply::Failed(Failure::Rejected(why)) => assert!(
                why.contains("65535 bytes") && why.contains("65536 bytes"),
                "{why}"
            ),
            other => panic!("a cell of 65 536 bytes: {other:?}"),
        }
    }
    // Nothing was written, nothing cut.
    same_as_reference(
        &store,
        &reference,
        vec![
            objects::read("obj-big", ColumnFilter::All),
            objects::read("obj-new", ColumnFilter::All),
        ],
    )
    .await;
    // The server would refuse it too: the table is in strict mode.
    let table = &store.options().table;
    let e = exec_raw(
        &store,
        &format!("UPDATE {table} SET value = REPEAT('x', 65536) WHERE lock_name = 'obj-big'"),
    )
    .await
    .expect_err("strict mode refuses a value too long");
    assert!(e.to_string().contains("Data too long"), "{e}");
});

// Writers racing for one object, each from the version it read (some holding the lock, some
// not, while the lock comes and goes): of writers from one version, at most one applies, and
// the versions the applied ones wrote are consecutive. No error, no deadlock.
per_db!(
    racing_object_writes_apply_once_per_version,
    |url: String| async move {
        let store = open(&url);
        let row = "obj-race";
        let (a, ta) = ("owner=a att=1", "token=1 owner=a");
        assert!(matches!(
            store
                .execute(objects::claim(row, objects::LONG, a, None, ta))
                .await,
            Reply::Guarded { applied: true, .. }
        ));
        let mut applied = Vec::new();
        for round in 0..6u64 {
            let expected = (round > 0).then(|| version(round));
            let tasks: Vec<_> = (0..5)
                .map(|i| {
                    let store = store.clone();
                    let guard = if i % 2 == 0 { held(a, ta) } else { free() };
                    let command = set(
                        row,
                        expected.as_deref(),
                        &cell(round + 1, &format!("w{i}"), "QQ=="),
                        guard,
                    );
                    tokio::spawn(async move { (i, store.execute(command).await) })
                })
                .collect();
            // Half-way, the lock is released: free writers may win the later rounds.
            if round == 3 {
                let reply = store.execute(objects::release(row, a, ta)).await;
                assert!(
                    matches!(reply, Reply::Guarded { applied: true, .. }),
                    "{reply:?}"
                );
            }
            let mut winners = Vec::new();
            for task in tasks {
                match task.await.expect("no panic") {
                    (i, Reply::Object { applied: true, .. }) => winners.push(i),
                    (_, Reply::Object { applied: false, .. }) => {}
                    // MariaDB: concurrent inserts of one row can deadlock (REPEATABLE READ's
                    // gap locks); the victim was rolled back, and the kernel sends it again.
                    (_, Reply::Failed(Failure::NotApplied(m)))
                        if is_mariadb(&store) && m.contains("Deadlock") => {}
                    (i, other) => panic!("round {round}, writer {i}: {other:?} on {url}"),
                }
            }
            assert!(winners.len() <= 1, "round {round}: {winners:?} on {url}");
            let Reply::Cells(cells) = store
                .execute(objects::read(row, ColumnFilter::Exact(OBJECT.into())))
                .await
            else {
                panic!("a read");
            };
            if let Some(w) = winners.first() {
                assert_eq!(cells[0].value, cell(round + 1, &format!("w{w}"), "QQ=="));
                applied.push(round);
            } else {
                // Nobody could apply: the round's writers all failed their guard, and the
                // next round's expectation is this one's again.
                break;
            }
        }
        assert!(applied.len() >= 3, "{applied:?} on {url}");
    }
);

// An object write that is not applied, read back: the reply's values are what the row holds
// (informational, read after the write), and a retry of an applied write is refused, its
// reply showing the value it wrote (the kernel's proof that the first copy applied).
per_db!(
    a_resent_write_finds_its_own_value,
    |url: String| async move {
        let store = open(&url);
        let first = cell(1, "a1.1", "QQ==");
        let insert = set("obj-resent", None, &first, free());
        assert_eq!(
            store.execute(insert.clone()).await,
            Reply::Object {
                applied: true,
                current: Some(first.clone()),
                lock: None,
                counter: None,
            }
        );
        assert_eq!(
            store.execute(insert).await,
            Reply::Object {
                applied: false,
                current: Some(first.clone()),
                lock: None,
                counter: None,
            }
        );
        let _: Command = set("obj-resent", Some(&version(1)), &first, free());
    }
);
