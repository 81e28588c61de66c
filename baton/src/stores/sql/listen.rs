//! Wake-ups across processes on PostgreSQL: while a store has waiters, it listens on its
//! table's notification channel and wakes them when another process frees a lock there.
//!
//! Every release statement notifies the channel named like the table (`pg_notify` in the
//! statement, delivered at commit). The listener is a connection of the store's pool that only
//! waits (`LISTEN`). It is started by the first waiter that has to wait
//! ([`Store::waiting`](crate::Store::waiting)), not by acquisitions that succeed at once: a
//! listening session costs the server a wake-up for every release of the table, by anyone, and
//! the listening process a task wake-up, which an uncontended process should not pay (about
//! 60 µs of server CPU per release, measured by `bench_sql`). It stops once no waiter has waited
//! for [`IDLE`], and is started again by the next one.
//!
//! A notification bumps the store's change counter, which every waiter of the store watches:
//! each tries again at once, rather than at the end of its back-off. Notifications sent while
//! no session listens (before the first `LISTEN` answered, while reconnecting) cost only that:
//! waiters still poll.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use sqlx::postgres::PgListener;
use tokio::sync::{oneshot, watch};

/// How long a listener outlives the last wait of its store's waiters.
pub(crate) const IDLE: Duration = Duration::from_secs(30);

/// The listener of one store: started by waiters, stopped when idle or when the store is
/// dropped.
#[derive(Default)]
pub(crate) struct Listening {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Stops the running listener (dropped with the store, which stops it too); `None` when no
    /// listener runs.
    stop: Option<oneshot::Sender<()>>,
    /// When a waiter last said it waits.
    last_wait: Option<Instant>,
}

impl Listening {
    /// A waiter waits: starts listening on `channel` unless a listener runs, bumping `changes`
    /// on every notification. Cheap when one runs (a mutex and a clock read). Needs a tokio
    /// runtime; without one, nothing starts (the waiters poll).
    pub fn waiting(&self, pool: &sqlx::PgPool, channel: &str, changes: Weak<watch::Sender<u64>>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.last_wait = Some(Instant::now());
        if state.stop.as_ref().is_some_and(|s| !s.is_closed()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        state.stop = Some(tx);
        let idle = Idle(Arc::downgrade(&self.state));
        runtime.spawn(listen(pool.clone(), channel.to_owned(), changes, idle, rx));
    }

    /// Whether a listener runs (for tests).
    #[cfg(test)]
    fn running(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.stop.as_ref().is_some_and(|s| !s.is_closed())
    }
}

/// The listener's view of its [`Listening`]: whether it should stop for want of waiters.
struct Idle(Weak<Mutex<State>>);

impl Idle {
    /// True, and the listener marked stopped, when no waiter waited for [`IDLE`] (or the store
    /// is gone). Decided under the mutex `waiting` takes, so a waiter either refreshed the
    /// time before (and the listener stays) or finds no listener after (and starts one).
    fn stop_now(&self) -> bool {
        let Some(state) = self.0.upgrade() else {
            return true;
        };
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.last_wait.is_some_and(|at| at.elapsed() < IDLE) {
            return false;
        }
        state.stop = None;
        true
    }
}

/// Listens until `stop` fires (or its sender is dropped with the store), or until idle.
async fn listen(
    pool: sqlx::PgPool,
    channel: String,
    changes: Weak<watch::Sender<u64>>,
    idle: Idle,
    mut stop: oneshot::Receiver<()>,
) {
    let mut check = tokio::time::interval(IDLE / 3);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
                if idle.stop_now() {
                    return;
                }
                pause = (pause * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        pause = Duration::from_millis(100);
        loop {
            // `try_recv` is cancel-safe: a message half read stays in the connection's buffer.
            let received = tokio::select! {
                _ = &mut stop => return,
                _ = check.tick() => {
                    if idle.stop_now() {
                        return;
                    }
                    continue;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn lazy_pool() -> sqlx::PgPool {
        // Port 9 (discard): nothing answers, and nothing needs to here.
        sqlx::postgres::PgPoolOptions::new()
            .acquire_timeout(Duration::from_millis(50))
            .connect_lazy("postgres://nobody@127.0.0.1:9/none")
            .expect("a lazy pool")
    }

    #[tokio::test(start_paused = true)]
    async fn a_listener_starts_with_a_wait_and_stops_once_no_one_waited_for_a_while() {
        let listening = Listening::default();
        let changes = Arc::new(watch::Sender::new(0u64));
        assert!(!listening.running(), "nothing listens before anyone waits");
        listening.waiting(&lazy_pool(), "t", Arc::downgrade(&changes));
        assert!(listening.running());
        // Waits within IDLE of each other keep it.
        for _ in 0..4 {
            tokio::time::sleep(IDLE / 2).await;
            listening.waiting(&lazy_pool(), "t", Arc::downgrade(&changes));
            assert!(listening.running());
        }
        // `last_wait` is a std Instant: make it old rather than wait for real.
        listening.state.lock().expect("state").last_wait = Instant::now().checked_sub(IDLE);
        let deadline = tokio::time::Instant::now() + IDLE;
        while listening.running() {
            assert!(tokio::time::Instant::now() < deadline, "still listening");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // The next wait starts it again.
        listening.waiting(&lazy_pool(), "t", Arc::downgrade(&changes));
        assert!(listening.running());
    }
}
