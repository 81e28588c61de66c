//! Cleanups a lock leaves running after its caller moved on, and a way to wait for them before
//! the process exits.
//!
//! A dropped acquisition (a cancelled future, an aborted task, Ctrl-C in a binding) removes its
//! cell in a task of its own: its caller has already gone. A process that exits right after,
//! as a script does on `KeyboardInterrupt`, kills that task with it, and the cell stays until
//! its TTL: a bakery ticket left that way holds up every later waiter of the name. Hosts that
//! know the process is ending call [`wait_for_cleanups`] first (the Python binding does, from
//! `atexit`).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How many cleanups have started and not finished.
static PENDING: Mutex<usize> = Mutex::new(0);
static FINISHED: Condvar = Condvar::new();

fn pending() -> std::sync::MutexGuard<'static, usize> {
    PENDING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One cleanup in progress: counted from [`Cleanup::start`] until dropped (when the task ends,
/// or is dropped unpolled because the runtime shut down).
pub(crate) struct Cleanup(());

impl Cleanup {
    pub(crate) fn start() -> Cleanup {
        *pending() += 1;
        Cleanup(())
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let mut n = pending();
        *n = n.saturating_sub(1);
        FINISHED.notify_all();
    }
}

/// Blocks until every cleanup of an abandoned acquisition started so far in this process has
/// finished, or `timeout` has passed: whether none is left. Call it from a thread outside the
/// runtime that runs them (it blocks), when the process is about to exit. Cost: a mutex and a
/// condition variable; no I/O of its own.
pub fn wait_for_cleanups(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut n = pending();
    while *n > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        n = FINISHED
            .wait_timeout(n, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_a_cleanup_in_progress_and_no_longer() {
        let cleanup = Cleanup::start();
        assert!(
            !wait_for_cleanups(Duration::from_millis(20)),
            "one is pending"
        );
        let done = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(cleanup);
        });
        assert!(wait_for_cleanups(Duration::from_secs(10)));
        done.join().expect("thread");
    }
}
