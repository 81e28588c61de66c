//! Unique insert's one-step commands on Cassandra, from the scripts shared with the SQL tests
//! (`baton/tests/shared/claims.rs`), against the kernel's reference table.

use std::time::Duration;

use baton::baton_kernel::{Instant, MemoryTable};
use baton::cassandra::CassandraStore;
use baton::{Command, Reply, Store};

use super::{base_url, claims, fresh_url, shape, store};

/// Applies `script` to the store and to the reference table at `now`, comparing every reply.
/// A [`claims::READ_STAMP`] is each side's own stamp from the read before it.
pub(super) async fn same_as_reference(
    store: &CassandraStore,
    reference: &mut MemoryTable,
    script: impl IntoIterator<Item = Command>,
    now: Instant,
) {
    let (mut got, mut want) = (None, None);
    for command in script {
        let g = store
            .execute(claims::with_read_stamp(&command, got.as_ref()))
            .await;
        let w = reference.apply(&claims::with_read_stamp(&command, want.as_ref()), now);
        assert_eq!(shape(g.clone()), shape(w.clone()), "{command:?}");
        (got, want) = (Some(g), Some(w));
    }
}

/// Unique insert's one-step commands (a conditional batch each) in the orders late delivery and
/// operators produce, as the SQL stores are checked with the same script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_and_guarded_releases_match_the_reference_table() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let mut reference = MemoryTable::new();
    let now = Instant::from_nanos(1_000_000_000);
    let scripts = [
        claims::claims_and_guarded_releases(),
        claims::removals_keep_the_counter(false),
        claims::expectations_compare_bytes(),
        claims::the_counter_among_other_cells(),
    ];
    same_as_reference(&store, &mut reference, scripts.into_iter().flatten(), now).await;
}

/// A stalled holder's release, renewal and claim, delivered after its lease expired and another
/// client was granted the lock: none applies (the script the SQL stores run too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_commands_of_an_expired_holder_change_nothing() {
    let Some(base) = base_url() else { return };
    let store = store(&fresh_url(&base));
    let mut reference = MemoryTable::new();
    let ttl = Duration::from_secs(1);
    let (before, after) = claims::late_after_expiry(ttl);
    let start = Instant::from_nanos(1_000_000_000);
    same_as_reference(&store, &mut reference, before, start).await;
    // Cassandra's TTL runs out by itself; the reference table's clock is moved past it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !matches!(store.execute(claims::late_lock()).await, Reply::Cells(c) if c.is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the lock never expired"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let later = Instant::from_nanos(1_000_000_000 + 2 * ttl.as_nanos() as u64);
    same_as_reference(&store, &mut reference, after, later).await;
}
