//! Fencing order across many handoffs, and the operator's view: list and purge.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton::{EntryState, LockRequest, Strategy};
use tokio::time::Instant;

use super::target::Table;
use super::util::{ready, within};

/// Generous bound on anything that should take milliseconds: only there to stop a hang.
const HANG: Duration = Duration::from_secs(30);

/// Three clients take turns on one lock, several times each: no two are ever inside at once,
/// and tokens strictly increase in the order the critical sections ran.
pub async fn fencing_tokens_increase(table: Table, strategy: Strategy) {
    take_turns(table, strategy, false).await;
}

/// The same with a purge of the whole table after every release, racing the other clients'
/// acquisitions of the lock just freed: a purge removes only expired entries, never a lock being
/// taken over nor the fencing counter, so tokens still strictly increase (a counter lost to a
/// purge would start them again from 1).
pub async fn tokens_increase_while_purging(table: Table, strategy: Strategy) {
    take_turns(table, strategy, true).await;
}

/// [`fencing_tokens_increase`]; with `purging`, each client purges the table after each release.
async fn take_turns(table: Table, strategy: Strategy, purging: bool) {
    const CLIENTS: usize = 3;
    const ROUNDS: usize = 4;
    let inside = Arc::new(AtomicBool::new(false));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let locker = ready(table.locker(strategy)).await;
        let inside = Arc::clone(&inside);
        let tokens = Arc::clone(&tokens);
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let mut guard = locker
                    .lock("job")
                    .await
                    .unwrap_or_else(|e| panic!("client {client} round {round}: {e}"));
                assert!(
                    !inside.swap(true, Ordering::SeqCst),
                    "client {client} entered while another client was inside"
                );
                {
                    let mut tokens = tokens.lock().expect("token log");
                    if let Some(&last) = tokens.last() {
                        assert!(
                            guard.token() > last,
                            "token {} granted after token {last}",
                            guard.token()
                        );
                    }
                    tokens.push(guard.token());
                }
                // Give the others a chance to queue up behind us.
                tokio::task::yield_now().await;
                assert!(guard.is_held());
                inside.store(false, Ordering::SeqCst);
                guard
                    .release()
                    .await
                    .unwrap_or_else(|e| panic!("client {client} round {round}: release: {e}"));
                if purging {
                    // Racing the other clients' acquisitions of the lock just freed.
                    locker
                        .purge(None)
                        .await
                        .unwrap_or_else(|e| panic!("client {client} round {round}: purge: {e}"));
                }
            }
        }));
    }
    for task in tasks {
        within(HANG * 2, "a client's rounds", task)
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    }
    let tokens = tokens.lock().expect("token log");
    assert_eq!(tokens.len(), CLIENTS * ROUNDS, "{tokens:?}");
}

/// Purge removes expired entries (of every lock), never a live one and never the fencing
/// counter: the next token after a purge is still larger.
pub async fn purge_removes_expired_entries(table: Table, strategy: Strategy) {
    let ttl = Duration::from_millis(500);
    let locker = ready(table.locker(strategy)).await;
    let other = ready(table.locker(strategy)).await;

    let sent = Instant::now();
    let expired = locker
        .lock_with("expired", LockRequest::new().ttl(ttl).keep_alive(false))
        .await
        .expect("lock");
    let old_token = expired.token();
    // Forget it without releasing: a holder that crashed.
    std::mem::forget(expired);
    let live = other.lock("live").await.expect("lock");

    // After the TTL (measured from before the acquire was sent, so past the store's expiry
    // unless the store rounds TTLs up), purge until the expired entries are gone.
    tokio::time::sleep_until(sent + ttl).await;
    let deadline = Instant::now() + HANG;
    let mut removed = Vec::new();
    loop {
        let now_removed = other.purge(None).await.expect("purge");
        assert!(
            now_removed.iter().all(|(row, _)| row != "live"),
            "purge removed a live lock's cells: {now_removed:?}"
        );
        removed.extend(now_removed);
        let gone = other.inspect("expired").await.expect("inspect").is_empty();
        let purged = !table.backend().keeps_expired_cells()
            || removed.iter().any(|(row, _)| row == "expired");
        if gone && purged {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "purge did not remove the expired lock within {HANG:?} (removed so far: {removed:?})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second purge finds nothing of it.
    let again = other.purge(None).await.expect("purge");
    assert!(
        again.iter().all(|(row, _)| row != "expired"),
        "removed twice: {again:?}"
    );

    assert!(live.is_held());
    let infos = other.inspect("live").await.expect("inspect");
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!(infos[0].owner, live.lease().owner().key());
    let listed: Vec<String> = other
        .list()
        .await
        .expect("list")
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(listed, vec![String::from("live")]);

    let next = within(HANG, "relock after purge", locker.lock("expired"))
        .await
        .expect("relock after purge");
    assert!(
        next.token() > old_token,
        "the fencing counter went back after purge: {old_token} then {}",
        next.token()
    );
}

/// `Locker::list` shows every held lock of the table with its name, strategy, owner, token and
/// remaining TTL, and nothing once they are released.
pub async fn list_shows_holders(table: Table, strategy: Strategy) {
    let ttl = Duration::from_secs(30);
    let a = ready(table.locker(strategy).ttl(ttl)).await;
    let b = ready(table.locker(strategy).ttl(ttl)).await;
    let viewer = ready(table.locker(strategy)).await;
    let mut alpha = a.lock("alpha").await.expect("lock");
    let mut beta = b.lock("beta").await.expect("lock");

    let mut listed = viewer.list().await.expect("list");
    listed.sort_by(|x, y| x.name.cmp(&y.name));
    let summary: Vec<_> = listed
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.strategy,
                i.owner.clone(),
                i.token,
                i.state,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "alpha",
                strategy,
                alpha.lease().owner().key(),
                Some(alpha.token()),
                EntryState::Held
            ),
            (
                "beta",
                strategy,
                beta.lease().owner().key(),
                Some(beta.token()),
                EntryState::Held
            ),
        ]
    );
    // Stores may round a TTL up: Cassandra to whole seconds, plus one for its whole-second
    // expiry stamps (see baton_statements::cql::ttl_seconds).
    let rounding = match table.backend() {
        super::Backend::Cassandra => Duration::from_secs(2),
        _ => Duration::ZERO,
    };
    for info in &listed {
        let left = info.expires_in.expect("a lock entry has a TTL");
        assert!(left <= ttl + rounding, "{info:?}");
    }

    alpha.release().await.expect("release");
    let names: Vec<String> = viewer
        .list()
        .await
        .expect("list")
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, vec![String::from("beta")]);
    beta.release().await.expect("release");
    assert_eq!(viewer.list().await.expect("list"), vec![]);
}
