//! Unique insert's one-step commands on each database, from the scripts shared with the
//! Cassandra tests (`baton/tests/shared/claims.rs`), against the kernel's reference table;
//! and claimants racing for one free lock row.

use std::time::Duration;

use baton::{Command, Consistency, MemoryStore, Reply, SerialConsistency, SqlStore, Store};
use baton_kernel::ColumnFilter;

use crate::commands::{normalized, open, read, LONG};
use crate::{claims, per_db};

/// Applies `script` to the store and to the reference table, comparing every reply.
/// A [`claims::READ_STAMP`] is each side's own stamp from the read before it.
pub(crate) async fn same_as_reference(
    store: &SqlStore,
    reference: &MemoryStore,
    script: Vec<Command>,
) {
    let (mut got, mut want) = (None, None);
    for command in script {
        let w = reference.apply(&claims::with_read_stamp(&command, want.as_ref()));
        let g = store
            .execute(claims::with_read_stamp(&command, got.as_ref()))
            .await;
        assert_eq!(normalized(g.clone()), normalized(w.clone()), "{command:?}");
        (got, want) = (Some(g), Some(w));
    }
}

/// Runs `before` on a fresh reference and the store at `url`, waits (up to 10 s) until each of
/// `probes`, reads, answers no cell on both sides, then runs `after`.
pub(crate) async fn across_expiry(
    url: &str,
    (before, after): (Vec<Command>, Vec<Command>),
    probes: Vec<Command>,
) {
    let store = open(url);
    let reference = MemoryStore::new();
    same_as_reference(&store, &reference, before).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let expired = |reply: Reply| matches!(reply, Reply::Cells(c) if c.is_empty());
    for probe in probes {
        while !(expired(reference.apply(&probe)) && expired(store.execute(probe.clone()).await)) {
            assert!(
                std::time::Instant::now() < deadline,
                "never expired: {probe:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    same_as_reference(&store, &reference, after).await;
}

// Unique insert's one-step commands, in the orders late delivery and operators produce, every
// removal of a lock cell, and expectations that differ only in case or trailing spaces (the
// scripts are shared with the Cassandra tests).
per_db!(
    claims_and_guarded_releases_match_the_reference_table,
    |url: String| async move {
        let store = open(&url);
        let reference = MemoryStore::new();
        for script in [
            claims::claims_and_guarded_releases(),
            claims::removals_keep_the_counter(true),
            claims::expectations_compare_bytes(),
            claims::the_counter_among_other_cells(),
        ] {
            same_as_reference(&store, &reference, script).await;
        }
    }
);

// A stalled holder's release, renewal and claim, delivered after its lease expired and another
// client was granted the lock: none applies (shared with the Cassandra tests).
per_db!(
    late_commands_of_an_expired_holder_change_nothing,
    |url: String| async move {
        let scripts = claims::late_after_expiry(Duration::from_millis(200));
        across_expiry(&url, scripts, vec![claims::late_lock()]).await;
    }
);

// Expired cells beside counters: scans a page at a time, and purges that take an expired lock
// and keep its counter (SQL only, see the script).
per_db!(
    expired_cells_beside_counters_page_and_purge_as_the_reference,
    |url: String| async move {
        let scripts = claims::expired_beside_counters(Duration::from_millis(200));
        across_expiry(&url, scripts, claims::expired_probe()).await;
    }
);

/// A name's first claim of unique insert's cells (no counter expected), held for [`LONG`].
fn first_claim(row: &str, value: &str, token: &str) -> Command {
    Command::Claim {
        row: row.into(),
        column: "lock".into(),
        value: value.into(),
        ttl: LONG,
        counter: "_LOCK_".into(),
        counter_expected: None,
        counter_next: token.into(),
        turn: None,
        serial: SerialConsistency::Serial,
        consistency: Consistency::Quorum,
    }
}

// A put of the lock cell stamped before its release, applied after it (a write from an earlier
// build's client that a pooler held; today's kernel sends no put to `lock`): the cell is gone,
// so the put recreates it whatever its stamp, as in the reference table, and the counter is
// untouched. A layout that ends the cell in place rather than deleting its row must do the
// same (docs/one-row-claim.md, the command x cell table).
per_db!(
    a_late_put_after_a_release_recreates_the_cell,
    |url: String| async move {
        let store = open(&url);
        let reference = MemoryStore::new();
        let (a, token) = ("owner=a att=1", "token=1 owner=a");
        // Stamped between the claim and the release (older than the release), and before the
        // claim (older than every write the cell had): either recreates it.
        for (row, after_the_claim) in [("lateput", true), ("oldput", false)] {
            same_as_reference(&store, &reference, vec![first_claim(row, a, token)]).await;
            let Reply::Cells(cells) = store
                .execute(read(row, ColumnFilter::Exact("lock".into())))
                .await
            else {
                panic!("a read");
            };
            let claimed = cells.first().expect("the lock cell").stamp;
            let release = Command::GuardedSet {
                row: row.into(),
                column: "lock".into(),
                expected: a.into(),
                new: None,
                ttl: LONG,
                guard: "_LOCK_".into(),
                guard_value: token.into(),
                serial: SerialConsistency::Serial,
                consistency: Consistency::Quorum,
            };
            same_as_reference(&store, &reference, vec![release]).await;
            let put = Command::Put {
                row: row.into(),
                column: "lock".into(),
                value: "late".into(),
                ttl: LONG,
                consistency: Consistency::Quorum,
            };
            let stamp = if after_the_claim {
                claimed + 1
            } else {
                claimed - 1
            };
            assert_eq!(
                store.execute_stamped(put.clone(), stamp).await,
                Reply::Written
            );
            assert_eq!(reference.apply(&put), Reply::Written);
            same_as_reference(&store, &reference, vec![read(row, ColumnFilter::All)]).await;
            let Reply::Cells(cells) = store.execute(read(row, ColumnFilter::All)).await else {
                panic!("a read");
            };
            let values: Vec<&str> = cells.iter().map(|c| c.value.as_str()).collect();
            assert_eq!(
                values,
                [token, "late"],
                "the counter, then the recreated cell, put at {stamp} after a claim at {claimed}"
            );
        }
    }
);

// A put of the fencing counter that arrives late (stamped before the counter's last write)
// changes nothing, and one stamped after it replaces it, on every layout: a one-row table keeps
// the counter's stamp in `fence_stamp`, apart from the lock cell's. (Only the kernel's broken
// variant `FenceBlindWrite` puts a counter; a late put must still not take it back.)
per_db!(
    a_late_put_of_the_counter_changes_nothing,
    |url: String| async move {
        let store = open(&url);
        let (a, token) = ("owner=a att=1", "token=1 owner=a");
        let claim = first_claim("lateputk", a, token);
        let Reply::Guarded { applied: true, .. } = store.execute(claim).await else {
            panic!("the first claim applies");
        };
        let counter = || read("lateputk", ColumnFilter::Exact("_LOCK_".into()));
        let Reply::Cells(cells) = store.execute(counter()).await else {
            panic!("a read");
        };
        let written = cells.first().expect("the counter").stamp;
        let put = |value: &str| Command::Put {
            row: "lateputk".into(),
            column: "_LOCK_".into(),
            value: value.into(),
            ttl: None,
            consistency: Consistency::Quorum,
        };
        assert_eq!(
            store
                .execute_stamped(put("token=9 owner=late"), written - 1)
                .await,
            Reply::Written
        );
        let values = |reply: Reply| match reply {
            Reply::Cells(cells) => cells.into_iter().map(|c| c.value).collect::<Vec<_>>(),
            other => panic!("a read, not {other:?}"),
        };
        assert_eq!(
            values(store.execute(counter()).await),
            [token],
            "late: nothing"
        );
        assert_eq!(
            values(
                store
                    .execute(read("lateputk", ColumnFilter::Exact("lock".into())))
                    .await
            ),
            [a],
            "the lock cell untouched"
        );
        assert_eq!(
            store
                .execute_stamped(put("token=2 owner=b"), written + 1)
                .await,
            Reply::Written
        );
        assert_eq!(
            values(store.execute(counter()).await),
            ["token=2 owner=b"],
            "newer: replaced"
        );
    }
);

// Claimants racing for a name's first claim, then for a lock row that its last holder
// released or let expire, each from the counter it read: exactly one is granted, and none fails
// (no deadlock, no error). Each loser's reply shows the winner's record or its counter (a
// PostgreSQL claim reads the lock from its statement's snapshot, so a loser that started before
// the winner committed sees the lock free and the counter moved, or, racing a name's first
// claim, no counter at all: the next claim learns it, as `Command::Claim` allows).
per_db!(
    racing_claims_on_a_free_row_grant_exactly_one,
    |url: String| async move {
        // Time for six connections opened at once (TLS on PostgreSQL took over the default 5 s on
        // the slow 2-core machines the suite runs on): the race is what this checks, not a limit.
        let store = open(&crate::common::with_param(&url, "timeout=60s"));
        let claim = |owner: &str, expected: Option<String>| Command::Claim {
            row: "race".into(),
            column: "lock".into(),
            value: owner.into(),
            ttl: LONG,
            counter: "_LOCK_".into(),
            counter_expected: expected,
            counter_next: format!("token {owner}"),
            turn: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::Quorum,
        };
        // Open a connection for each claimant first, so that the first round races too.
        let warm: Vec<_> = (0..6)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.execute(read("warm", ColumnFilter::All)).await })
            })
            .collect();
        for task in warm {
            assert_eq!(task.await.expect("no panic"), Reply::Cells(vec![]));
        }
        let mut counter: Option<String> = None;
        for round in 0..8 {
            let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(6));
            let tasks: Vec<_> = (0..6)
                .map(|i| {
                    let (store, barrier) = (store.clone(), barrier.clone());
                    let command = claim(&format!("r{round}c{i}"), counter.clone());
                    tokio::spawn(async move {
                        barrier.wait().await;
                        store.execute(command).await
                    })
                })
                .collect();
            let mut replies = Vec::new();
            for (i, task) in tasks.into_iter().enumerate() {
                match task.await.expect("no panic") {
                    Reply::Guarded {
                        applied,
                        current,
                        guard,
                    } => replies.push((i, applied, current, guard)),
                    other => panic!("round {round}, claimant {i}: {other:?} on {url}"),
                }
            }
            let winners: Vec<usize> = replies.iter().filter(|r| r.1).map(|r| r.0).collect();
            assert_eq!(winners.len(), 1, "round {round}: {replies:?} on {url}");
            let owner = format!("r{round}c{}", winners[0]);
            let token = format!("token {owner}");
            for (i, _, current, guard) in replies.iter().filter(|r| !r.1) {
                assert!(
                    current.as_deref() == Some(owner.as_str())
                        || guard.as_deref() == Some(token.as_str())
                        || (round == 0 && current.is_none() && guard.is_none()),
                    "round {round}, loser {i}: {current:?} {guard:?} on {url}"
                );
            }
            let Reply::Cells(cells) = store.execute(read("race", ColumnFilter::All)).await else {
                panic!("cells")
            };
            let values: Vec<(&str, &str)> = cells
                .iter()
                .map(|c| (c.column.as_str(), c.value.as_str()))
                .collect();
            assert_eq!(
                values,
                vec![("_LOCK_", token.as_str()), ("lock", owner.as_str())],
                "round {round} on {url}"
            );
            counter = Some(token.clone());
            if round % 2 == 0 {
                // The next round finds the lease expired: the holder renews it with a short
                // TTL (as a renewal would), then the store's clock runs it out.
                let shorten = Command::CompareAndSet {
                    row: "race".into(),
                    column: "lock".into(),
                    expected: owner.clone(),
                    new: Some(owner.clone()),
                    ttl: Some(Duration::from_millis(50)),
                    serial: SerialConsistency::Serial,
                    consistency: Consistency::Quorum,
                };
                assert!(matches!(
                    store.execute(shorten).await,
                    Reply::Conditional { applied: true, .. }
                ));
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while !matches!(
                    store.execute(read("race", ColumnFilter::Exact("lock".into()))).await,
                    Reply::Cells(c) if c.is_empty()
                ) {
                    assert!(std::time::Instant::now() < deadline, "never expired");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            } else {
                let release = Command::GuardedSet {
                    row: "race".into(),
                    column: "lock".into(),
                    expected: owner.clone(),
                    new: None,
                    ttl: None,
                    guard: "_LOCK_".into(),
                    guard_value: token,
                    serial: SerialConsistency::Serial,
                    consistency: Consistency::Quorum,
                };
                assert!(matches!(
                    store.execute(release).await,
                    Reply::Guarded { applied: true, .. }
                ));
            }
        }
    }
);
