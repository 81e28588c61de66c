//! Wake-ups across processes on PostgreSQL: while a store has waiters, it listens on its
//! table's notification channel, in turn with the other processes that wait on the table, and
//! wakes its waiters when another process frees a lock there.
//!
//! Every release statement notifies the channel named like the table (`pg_notify` in the
//! statement, delivered at commit). The listener is a connection of its own (outside the
//! store's pool) that only waits. It is started by the first waiter that has to wait
//! ([`Store::waiting`](crate::Store::waiting)), not by acquisitions that succeed at once: a
//! listening session costs the server a wake-up for every release of the table, by anyone, and
//! the listening process a task wake-up, which an uncontended process should not pay (about
//! 60 µs of server CPU per release, measured by `bench_sql`). It stops once no waiter has waited
//! for [`IDLE`], and is started again by the next one.
//!
//! One listener at a time listens on a table, across every process: the holder of the table's
//! [`Gate`]. The others queue for it, and each notification moves it on, so a release wakes one
//! process instead of all of them, and each waiting process gets its turn.
//!
//! A notification bumps the store's change counter, which every waiter of the store watches:
//! each tries again at once, rather than at the end of its back-off. Notifications sent while
//! no session of ours listens (before our turn, while the gate passes, while reconnecting) cost
//! only that: waiters still poll.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use sqlx::postgres::PgListener;
use sqlx::AssertSqlSafe;
use tokio::sync::{oneshot, watch, Notify};

/// How long a listener outlives the last wait of its store's waiters.
pub(crate) const IDLE: Duration = Duration::from_secs(30);

/// The listener of one store: started by waiters, stopped when idle or when the store is
/// dropped.
#[derive(Default)]
pub(crate) struct Listening {
    state: Arc<Mutex<State>>,
    /// Told at every wait: a listener with no waiter in progress queues for the gate again.
    wanted: Arc<Notify>,
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
        self.wanted.notify_one();
        if state.stop.as_ref().is_some_and(|s| !s.is_closed()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        state.stop = Some(tx);
        let idle = Idle(Arc::downgrade(&self.state));
        let wanted = Arc::clone(&self.wanted);
        runtime.spawn(listen(
            pool.clone(),
            channel.to_owned(),
            changes,
            wanted,
            idle,
            rx,
        ));
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

/// Listens until `stop` fires (or its sender is dropped with the store), or until idle: queues
/// for the table's [`Gate`], listens while it holds it, and passes it on at the first
/// notification.
async fn listen(
    pool: sqlx::PgPool,
    channel: String,
    changes: Weak<watch::Sender<u64>>,
    wanted: Arc<Notify>,
    idle: Idle,
    mut stop: oneshot::Receiver<()>,
) {
    let gate = Gate::of(&channel);
    let mut check = tokio::time::interval(IDLE / 3);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pause = Duration::from_millis(100);
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return,
            l = connect(&pool) => l,
        };
        let failed = match connected {
            Ok(mut listener) => {
                pause = Duration::from_millis(100);
                let ours = Ours {
                    changes: &changes,
                    wanted: &wanted,
                    idle: &idle,
                };
                match turns(&mut listener, &gate, &ours, &mut check, &mut stop).await {
                    Ended::Stop => return,
                    Ended::Failed(e) => e,
                }
            }
            Err(e) => e,
        };
        tracing::debug!(error = %failed, channel, "the LISTEN connection failed; waiters poll meanwhile");
        // Whatever happened, a notification may have been missed: look again.
        match changes.upgrade() {
            Some(changes) => changes.send_modify(|n| *n = n.wrapping_add(1)),
            None => return,
        }
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(pause) => {}
        }
        if idle.stop_now() {
            return;
        }
        pause = (pause * 2).min(Duration::from_secs(10));
    }
}

/// Why [`turns`] returned.
enum Ended {
    /// The store is gone, or no one waited for [`IDLE`]: stop listening.
    Stop,
    /// The connection failed: reconnect.
    Failed(sqlx::Error),
}

/// What a listener knows of its store's waiters.
struct Ours<'a> {
    /// The change counter its waiters watch: each acquisition in progress holds a receiver.
    changes: &'a Weak<watch::Sender<u64>>,
    /// Told at every wait.
    wanted: &'a Notify,
    idle: &'a Idle,
}

/// Turns at the gate on one connection: while an acquisition of the store is in progress,
/// queue, listen until a notification, pass the gate on, queue again. A store with none in
/// progress (its locks held, or none wanted) stays out of the queue, and passes the gate on if
/// it holds it, so that it does not take turns meant for processes that wait.
async fn turns(
    listener: &mut PgListener,
    gate: &Gate,
    ours: &Ours<'_>,
    check: &mut tokio::time::Interval,
    stop: &mut oneshot::Receiver<()>,
) -> Ended {
    loop {
        // Out of the queue until an acquisition is in progress.
        loop {
            let Some(changes) = ours.changes.upgrade() else {
                return Ended::Stop;
            };
            if changes.receiver_count() > 0 {
                break;
            }
            drop(changes);
            tokio::select! {
                _ = &mut *stop => return Ended::Stop,
                _ = check.tick() => if ours.idle.stop_now() { return Ended::Stop },
                () = ours.wanted.notified() => {}
            }
        }
        // Queue. Not cancel-safe: stopping here drops the connection, whose session (and place
        // in the queue) ends when it closes. After `lock_timeout`, queue again.
        loop {
            let queued = sqlx::raw_sql(AssertSqlSafe(gate.enter.clone())).execute(&mut *listener);
            tokio::pin!(queued);
            let entered = loop {
                tokio::select! {
                    _ = &mut *stop => return Ended::Stop,
                    _ = check.tick() => if ours.idle.stop_now() { return Ended::Stop },
                    r = &mut queued => break r,
                }
            };
            match entered {
                Ok(_) => break,
                Err(e) if is_lock_timeout(&e) => {}
                Err(e) => return Ended::Failed(e),
            }
        }
        let Some(changes) = ours.changes.upgrade() else {
            return Ended::Stop;
        };
        // Our turn. No look at once: the waiters answer every wake-up only while they have not
        // lost races they were woken for (the herd rule), so a look that finds the lock held
        // would make them likely to let the next release, which only we hear, pass.
        // Listen until a notification, or until no acquisition of ours is in progress.
        // `try_recv` and `closed` are cancel-safe.
        let received = loop {
            tokio::select! {
                _ = &mut *stop => return Ended::Stop,
                _ = check.tick() => if ours.idle.stop_now() {
                    // Pass the gate on before going; closing the connection would too.
                    let _ = sqlx::raw_sql(AssertSqlSafe(gate.leave.clone())).execute(&mut *listener).await;
                    return Ended::Stop;
                },
                () = changes.closed() => break None,
                r = listener.try_recv() => break Some(r),
            }
        };
        match received {
            // No one of ours waits: pass the gate on.
            None => {}
            // A lock was freed: wake our waiters, and pass the gate on.
            Some(Ok(Some(_))) => changes.send_modify(|n| *n = n.wrapping_add(1)),
            // The connection was lost (and reconnected by sqlx, in a new session, which holds
            // no gate), and a notification with it perhaps: look again, and queue again.
            Some(Ok(None)) => {
                changes.send_modify(|n| *n = n.wrapping_add(1));
                continue;
            }
            Some(Err(e)) => return Ended::Failed(e),
        }
        drop(changes);
        if let Err(e) = sqlx::raw_sql(AssertSqlSafe(gate.leave.clone()))
            .execute(&mut *listener)
            .await
        {
            return Ended::Failed(e);
        }
    }
}

/// The gate of a table's channel: a session-level advisory lock that lets one listening
/// session at a time, across every process, hear the table's releases.
///
/// Without it each release wakes every listening session and process: with `n` processes
/// waiting, a release costs the server `n` backend wake-ups and each process a task wake-up,
/// which on a busy table take more time than the hand-off itself (`bench_sql`, 8 clients on
/// one name on 2 cores: about half of one client's throughput, or more than half with no
/// wake-ups at all). With it a release wakes one process, and the gate moves on: the
/// session that heard a notification passes the gate to the next in PostgreSQL's queue (first
/// come, first served) and queues again. Sessions in the queue hear nothing; their waiters
/// retry at the end of their back-off, and each gets its turn to listen as releases go by.
///
/// Liveness only: waking decides when a waiter tries, never whether a lock is granted. A
/// session that holds the gate and stops reading (a suspended process) delays the others'
/// wake-ups until its connection closes, not their back-off; a session lost with its
/// connection frees its place.
struct Gate {
    /// Queue for the gate, then listen: one round trip, which blocks until our turn.
    enter: String,
    /// Stop listening and pass the gate on: one round trip.
    leave: String,
}

/// The first key of baton's gates (`pg_advisory_lock(int4, int4)`): "batn".
const GATE_CLASS: i32 = 0x6261_746e;

impl Gate {
    fn of(channel: &str) -> Self {
        let key = format!("{GATE_CLASS}, {}", fnv1a(channel));
        let quoted = channel.replace('"', "\"\"");
        Self {
            enter: format!(
                "SET lock_timeout = {}; SELECT pg_advisory_lock({key}); LISTEN \"{quoted}\"",
                (IDLE / 3).as_millis()
            ),
            leave: format!("UNLISTEN \"{quoted}\"; SELECT pg_advisory_unlock({key})"),
        }
    }
}

/// A gate's second key: FNV-1a of the channel's name, stable across processes and versions.
fn fnv1a(text: &str) -> i32 {
    let hash = text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    i32::from_ne_bytes(hash.to_ne_bytes())
}

/// Whether `e` is PostgreSQL's `lock_timeout` (SQLSTATE 55P03).
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "55P03")
}

/// A listening connection of its own, outside the store's pool (a pool of one): its session
/// takes part in the gate, and must end with the listener, not return to the store's pool.
async fn connect(pool: &sqlx::PgPool) -> Result<PgListener, sqlx::Error> {
    let own = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_lazy_with((*pool.connect_options()).clone());
    let mut listener = PgListener::connect_with(&own).await?;
    // Our own pool is never closed, and we reconnect ourselves.
    listener.ignore_pool_close_event(true);
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
