//! Calls into Python from baton's threads, and the interpreter's exit.
//!
//! An asyncio wait ends on one of baton's runtime threads, which takes the GIL to call the
//! waiter's `done`. That call gives the GIL up in the middle (`loop.call_soon_threadsafe` writes
//! to the loop's socket), so the main thread can finish `asyncio.run`, and the interpreter can
//! start finalizing, before the runtime thread takes the GIL back. A thread that takes or gives
//! back the GIL while the interpreter finalizes aborts or crashes the process ("PyGILState_Release:
//! thread state must be current", or a segmentation fault).
//!
//! So every call passes a gate: [`_at_exit`], which the Python half registers with `atexit`
//! (atexit functions run before finalization starts), closes the gate and waits, GIL released,
//! for the calls already through it. A wait that ends after that drops its result without
//! calling back; a guard in it is dropped, which releases the lock in the background.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// How long the exit waits for calls in flight: each is one `call_soon_threadsafe`, so this
/// is only reached if the interpreter cannot hand the GIL over at all.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Calls in flight, and whether the gate is closed.
struct Gate {
    in_flight: usize,
    closed: bool,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    in_flight: 0,
    closed: false,
});
static LEFT: Condvar = Condvar::new();

fn gate() -> std::sync::MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Calls `done(result(py))` with the GIL held, unless the interpreter's exit began; an
/// exception from `done` is reported as unraisable. Without the call, `done` and the result's
/// inputs are dropped without the GIL (pyo3 defers the reference counts).
pub(crate) fn call(done: PyObject, result: impl FnOnce(Python<'_>) -> PyObject) {
    {
        let mut gate = gate();
        if gate.closed {
            return;
        }
        gate.in_flight += 1;
    }
    Python::with_gil(|py| {
        let result = result(py);
        if let Err(e) = done.call1(py, (result,)) {
            e.write_unraisable(py, None);
        }
        drop(done);
    });
    gate().in_flight -= 1;
    LEFT.notify_all();
}

/// Closes the gate and waits (GIL released, at most [`EXIT_WAIT`]) for the calls through it to
/// leave Python, then (at most [`CLEANUP_WAIT`]) for the cleanups of abandoned acquisitions
/// (an interrupted or cancelled wait removes its cell in the background: without this, a
/// script that exits on Ctrl-C would leave a bakery ticket holding up the name until its
/// TTL); registered with `atexit` by the Python half.
#[pyfunction]
pub(crate) fn _at_exit(py: Python<'_>) {
    py.allow_threads(|| {
        wait_for_calls();
        baton::wait_for_cleanups(CLEANUP_WAIT);
    });
}

/// Waits (GIL released, at most [`CLEANUP_WAIT`]) until the cleanups of abandoned acquisitions
/// started so far have finished; whether none is left. A cancelled asyncio wait calls it from
/// an executor thread before its `CancelledError` goes on, so that, as with asyncio's own
/// locks, nothing of the wait is left once its caller sees the cancellation.
#[pyfunction]
pub(crate) fn _wait_for_cleanups(py: Python<'_>) -> bool {
    py.allow_threads(|| baton::wait_for_cleanups(CLEANUP_WAIT))
}

/// How long the exit waits for cleanups in flight: each is one delete on the store, bounded by
/// the store's own timeout; this keeps a dead store from holding the exit up for long.
const CLEANUP_WAIT: Duration = Duration::from_secs(2);

/// The first half of [`_at_exit`]: closes the gate and waits for the calls through it.
fn wait_for_calls() {
    let deadline = Instant::now() + EXIT_WAIT;
    let mut gate = gate();
    gate.closed = true;
    while gate.in_flight > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        gate = LEFT
            .wait_timeout(gate, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
