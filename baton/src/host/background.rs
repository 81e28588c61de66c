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

use tokio::task::JoinHandle;

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

/// Aborts `task`, a task running an acquisition that its caller gave up on (Ctrl-C, an asyncio
/// cancel), and counts it with the cleanups until it has stopped. By then the acquisition's
/// future was dropped and its own cleanup started and counted, so a [`wait_for_cleanups`] right
/// after this call cannot miss that cleanup, as it could after a bare `abort()` whose task had
/// not been dropped yet. Returns at once; the waiting is a task on `runtime` (dropped, and the
/// count with it, if the runtime shuts down first).
pub fn abandon_task<T: Send + 'static>(runtime: &tokio::runtime::Handle, task: JoinHandle<T>) {
    let counted = Cleanup::start();
    task.abort();
    runtime.spawn(async move {
        let _ = task.await;
        drop(counted);
    });
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

    /// What an acquisition does when its future is dropped: starts its cleanup in a task.
    struct Acquisition {
        runtime: tokio::runtime::Handle,
        cleaned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Drop for Acquisition {
        fn drop(&mut self) {
            let cleanup = Cleanup::start();
            let cleaned = std::sync::Arc::clone(&self.cleaned);
            self.runtime.spawn(async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                cleaned.store(true, std::sync::atomic::Ordering::SeqCst);
                drop(cleanup);
            });
        }
    }

    #[test]
    fn an_abandoned_task_is_waited_for_until_its_own_cleanup_is_done() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .expect("runtime");
        let cleaned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let acquisition = Acquisition {
            runtime: runtime.handle().clone(),
            cleaned: std::sync::Arc::clone(&cleaned),
        };
        let task = runtime.spawn(async move {
            let _acquisition = acquisition;
            std::future::pending::<()>().await;
        });
        // The runtime's one worker busy for a moment: the abort takes effect only after it, so
        // the acquisition is not dropped yet when the wait below begins.
        let (busy, started) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let _ = busy.send(());
            std::thread::sleep(Duration::from_millis(100));
        });
        started.recv().expect("the worker is busy");
        abandon_task(runtime.handle(), task);
        assert!(wait_for_cleanups(Duration::from_secs(10)));
        assert!(
            cleaned.load(std::sync::atomic::Ordering::SeqCst),
            "the wait ended before the abandoned acquisition's cleanup"
        );
    }
}
