//! Held locks' tasks started when they fall due, not at the grant.
//!
//! A lock held with keep-alive needs a task of its own only when its first renewal falls due (a
//! third of its validity after the grant, [`LockLife::idle_until`]). Most locks are released
//! before: starting the task at the grant, and waking it at the release, cost two thread
//! wake-ups per lock on a multi-thread runtime (about 50 µs and 5 context switches per lock +
//! release, measured by `bench_sql --keep-alive on`).
//!
//! So a [`Locker`](crate::Locker) keeps one [`Starter`]: lives it holds by when they fall due,
//! and one timer task per runtime that sleeps until the earliest and then starts the tasks of
//! the lives still held ([`Life::wake_driver`]). Registering a life costs a mutex and a map
//! insert, its end a map removal; the timer is woken only by an entry due before the one it
//! sleeps until, which a locker taking locks of one TTL in a row never adds. The timer task
//! holds the entries, not the locker: locks still held when their locker is dropped are started
//! all the same. It ends when it wakes to find nothing left.
//!
//! [`LockLife::idle_until`]: baton_kernel::LockLife::idle_until

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::runtime::{Handle, Id};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::host::life_host::Life;

/// Lives waiting for their task, by when it falls due (see the module's documentation).
#[derive(Default)]
pub(crate) struct Starter {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Wakes the timer: an entry due earlier than it sleeps until, or the starter dropped.
    wake: Notify,
}

#[derive(Default)]
struct State {
    due: BTreeMap<Key, Weak<Life>>,
    next: u64,
    timer: Option<Timer>,
}

/// An entry of [`State::due`]: when, and a number that tells entries due together apart.
pub(crate) type Key = (Instant, u64);

struct Timer {
    runtime: Id,
    task: JoinHandle<()>,
    /// What it sleeps until (`None`: it is about to look).
    until: Option<Instant>,
}

impl Starter {
    /// Starts `life`'s task at `at` on `runtime` (unless it ended or started by then). `None`
    /// when this starter's timer runs on another runtime: the caller starts the task now.
    pub(crate) fn defer(
        &self,
        life: &Arc<Life>,
        at: Instant,
        runtime: &Handle,
    ) -> Option<Deferral> {
        let mut state = self.shared.lock();
        let running = match &state.timer {
            Some(t) if t.task.is_finished() => false,
            Some(t) if t.runtime != runtime.id() => return None,
            Some(_) => true,
            None => false,
        };
        let key = (at, state.next);
        state.next = state.next.wrapping_add(1);
        state.due.insert(key, Arc::downgrade(life));
        if !running {
            // The task takes the lock before looking: it sees this entry.
            let shared = Arc::clone(&self.shared);
            let task = runtime.spawn(run(shared));
            state.timer = Some(Timer {
                runtime: runtime.id(),
                task,
                until: None,
            });
        } else if state
            .timer
            .as_ref()
            .and_then(|t| t.until)
            .is_some_and(|until| at < until)
        {
            self.shared.wake.notify_one();
        }
        Some(Deferral {
            shared: Arc::downgrade(&self.shared),
            key,
        })
    }
}

impl Drop for Starter {
    fn drop(&mut self) {
        // The timer ends at once if nothing is left to start, rather than at its next entry.
        self.shared.wake.notify_one();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A life's entry in a [`Starter`], removed by [`Deferral::cancel`] when the life no longer
/// needs it (its task started, or it ended).
pub(crate) struct Deferral {
    shared: Weak<Shared>,
    key: Key,
}

impl Deferral {
    /// Removes the entry (a mutex and a map removal; nothing if the timer already took it).
    pub(crate) fn cancel(self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.lock().due.remove(&self.key);
        }
    }
}

/// The timer: starts the lives that fell due, sleeps until the next, ends when none is left.
async fn run(shared: Arc<Shared>) {
    loop {
        let now = Instant::now();
        let (due, until) = {
            let mut state = shared.lock();
            let later = state.due.split_off(&(now, u64::MAX));
            let due = std::mem::replace(&mut state.due, later);
            let until = state.due.keys().next().map(|(at, _)| *at);
            match (&mut state.timer, until) {
                (Some(timer), Some(until)) => timer.until = Some(until),
                // Nothing left: the next `defer` starts a new timer.
                (timer, _) => *timer = None,
            }
            (due, until)
        };
        for life in due.into_values() {
            if let Some(life) = life.upgrade() {
                life.wake_driver();
            }
        }
        let Some(until) = until else {
            return;
        };
        tokio::select! {
            () = tokio::time::sleep_until(until) => {}
            () = shared.wake.notified() => {}
        }
    }
}
