//! Wake-ups across processes on PostgreSQL: a store listens on its table's notification channel
//! and wakes its waiters when another process frees a lock there.
//!
//! The table's trigger (`<table>_freed`, made with the table: see `baton_statements::sql`)
//! notifies the channel named like the table after every `DELETE`, at commit. The listener is a
//! connection of the store's pool that only waits (`LISTEN`), started by the first waiter of
//! the store, and stopped when the store is dropped. A notification bumps the store's change
//! counter, which every waiter of the store watches: each tries again at once, rather than at
//! the end of its back-off. Notifications lost while the listener reconnects cost only that:
//! waiters still poll.

use std::sync::{Mutex, PoisonError, Weak};
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::{oneshot, watch};

/// The listener of one store: started once, stopped when dropped.
#[derive(Default)]
pub(crate) struct Listening {
    stop: Mutex<Option<oneshot::Sender<()>>>,
}

impl Listening {
    /// Starts listening on `channel` (once; later calls do nothing), bumping `changes` on every
    /// notification for as long as it is alive. Needs a tokio runtime; without one, nothing
    /// starts (the waiters poll).
    pub fn start(&self, pool: &sqlx::PgPool, channel: &str, changes: Weak<watch::Sender<u64>>) {
        let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        if stop.is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        *stop = Some(tx);
        runtime.spawn(listen(pool.clone(), channel.to_owned(), changes, rx));
    }
}

/// Listens until `stop` fires (or its sender is dropped with the store).
async fn listen(
    pool: sqlx::PgPool,
    channel: String,
    changes: Weak<watch::Sender<u64>>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return,
            l = connect(&pool, &channel) => l,
        };
        let mut listener = match connected {
            Ok(listener) => listener,
            Err(e) => {
                tracing::debug!(error = %e, channel, "LISTEN failed; waiters poll meanwhile");
                tokio::select! {
                    _ = &mut stop => return,
                    () = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        pause = Duration::from_millis(100);
        loop {
            let received = tokio::select! {
                _ = &mut stop => return,
                r = listener.try_recv() => r,
            };
            let Some(changes) = changes.upgrade() else {
                return;
            };
            match received {
                // A lock was freed; or the connection was lost, and a notification with it
                // perhaps: look again either way (the listener reconnects by itself).
                Ok(_) => changes.send_modify(|n| *n = n.wrapping_add(1)),
                Err(e) => {
                    tracing::debug!(error = %e, channel, "the LISTEN connection failed");
                    break;
                }
            }
        }
    }
}

async fn connect(pool: &sqlx::PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}
