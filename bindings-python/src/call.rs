//! How a native call waits for one of baton's futures, in the three shapes Python needs: a
//! wait Ctrl-C interrupts ([`wait`]), a call that releases the GIL until the store answers
//! ([`block`]), and an asyncio call whose outcome a callback settles ([`settle`]). None decides
//! anything about the lock: each runs the `baton` crate's future as it is.

use std::future::Future;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use baton::Error;
use pyo3::prelude::*;
use tokio::task::JoinHandle;

use crate::{callback, runtime, to_py};

/// Runs `future` (a wait: a lock, or a lock and its object) on baton's runtime and waits for
/// its outcome with the GIL released, looking for signals every 50 ms: Ctrl-C drops the future,
/// which removes the wait's cell (a guard granted meanwhile is dropped with the channel, which
/// releases it), and raises `KeyboardInterrupt`.
pub(crate) fn wait<T: Send + 'static>(
    py: Python<'_>,
    future: impl Future<Output = Result<T, Error>> + Send + 'static,
) -> PyResult<T> {
    let (tx, mut rx) = channel();
    let task = runtime()?.spawn(async move {
        let _ = tx.send(future.await);
    });
    loop {
        // The receiver travels into the GIL-free closure and back (it is Send, not Sync).
        let (received, back) = py.allow_threads(move || {
            let received = rx.recv_timeout(Duration::from_millis(50));
            (received, rx)
        });
        rx = back;
        match received {
            Ok(outcome) => return outcome.map_err(|e| to_py(&e)),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    // Counted until the task is gone and its cleanup done, so an exit right
                    // after the interrupt waits for it (`_at_exit`).
                    baton::abandon_task(runtime()?.handle(), task);
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(to_py(&Error::internal(
                    "the lock task ended without an answer",
                )))
            }
        }
    }
}

/// Runs `future` (one call to the store: a release, a read, a write) on baton's runtime with
/// the GIL released until it ends; the store's own timeouts bound it.
pub(crate) fn block<T: Send>(
    py: Python<'_>,
    future: impl Future<Output = Result<T, Error>> + Send,
) -> PyResult<T> {
    let rt = runtime()?;
    py.allow_threads(|| rt.block_on(future))
        .map_err(|e| to_py(&e))
}

/// The asyncio form of [`wait`] and [`block`]: runs `future` on baton's runtime, then calls
/// `done` once, from baton's thread, with `answer(value)` or the exception. Dropping the
/// returned task lets the call finish on its own (a write or a release); abandoning it
/// (`Pending.cancel`) drops the future, as a cancelled wait does.
pub(crate) fn settle<T: Send + 'static>(
    done: PyObject,
    future: impl Future<Output = Result<T, Error>> + Send + 'static,
    answer: fn(Python<'_>, T) -> PyResult<PyObject>,
) -> PyResult<JoinHandle<()>> {
    Ok(runtime()?.spawn(async move {
        let outcome = future.await;
        // After the interpreter's exit began, the outcome is dropped here (a guard in it is
        // released by its drop).
        callback::call(done, |py| {
            match outcome.map_err(|e| to_py(&e)).and_then(|v| answer(py, v)) {
                Ok(value) => value,
                Err(e) => e.into_value(py).into_any(),
            }
        });
    }))
}

/// `None`, for calls that return nothing.
pub(crate) fn none(py: Python<'_>, (): ()) -> PyResult<PyObject> {
    Ok(py.None())
}
