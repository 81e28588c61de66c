//! Objects beside locks (seed 002: ScaleOut StateServer's objects): the held object's class,
//! `ObjectGuard` (see `baton.Object`), and the conversions of the object calls' answers to
//! Python. The `Locker`'s object calls are in `lib.rs`, beside its lock calls (one `#[pymethods]`
//! block per class). Every decision is the `baton` crate's (`baton::ObjectGuard`, whose writes
//! the store applies only while the guard holds the lock); values cross as `bytes`, whole.

use std::sync::Arc;

use baton::Versioned;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;

use crate::call::{block, none, settle};
use crate::to_py;

/// An object's `(value, version)` as `(bytes, int)`, or `None` when there is no object.
pub(crate) fn versioned(py: Python<'_>, got: Option<Versioned>) -> PyResult<PyObject> {
    match got {
        Some(v) => (PyBytes::new(py, &v.value), v.version).into_py_any(py),
        None => Ok(py.None()),
    }
}

/// A version, as an `int`.
pub(crate) fn version(py: Python<'_>, version: u64) -> PyResult<PyObject> {
    version.into_py_any(py)
}

/// A value as `bytes`, or `None`.
pub(crate) fn value(py: Python<'_>, value: Option<Vec<u8>>) -> PyResult<PyObject> {
    match value {
        Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
        None => Ok(py.None()),
    }
}

/// A held object, as a Python object.
pub(crate) fn guard(py: Python<'_>, guard: baton::ObjectGuard) -> PyResult<PyObject> {
    Ok(Py::new(py, ObjectGuard::new(guard))?.into_any())
}

/// A held lock and its object (see `baton.Object`).
#[pyclass(module = "baton._baton", frozen)]
pub(crate) struct ObjectGuard {
    guard: Arc<tokio::sync::Mutex<baton::ObjectGuard>>,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    token: u64,
}

impl ObjectGuard {
    pub(crate) fn new(guard: baton::ObjectGuard) -> ObjectGuard {
        ObjectGuard {
            name: guard.guard().name().to_owned(),
            token: guard.guard().token(),
            guard: Arc::new(tokio::sync::Mutex::new(guard)),
        }
    }

    /// `f` of the guard, waiting (call it with the GIL released) for a call in progress on it.
    fn with<T>(&self, f: impl FnOnce(&baton::ObjectGuard) -> T) -> T {
        f(&self.guard.blocking_lock())
    }

    fn shared(&self) -> Arc<tokio::sync::Mutex<baton::ObjectGuard>> {
        Arc::clone(&self.guard)
    }
}

#[pymethods]
impl ObjectGuard {
    /// The object's value as last read or written (`None`: no object).
    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<PyObject> {
        let got = py.allow_threads(|| self.with(|g| g.value().map(<[u8]>::to_vec)));
        value(py, got)
    }

    /// The object's version as last read or written (0: never written).
    #[getter]
    fn version(&self, py: Python<'_>) -> u64 {
        py.allow_threads(|| self.with(baton::ObjectGuard::version))
    }

    /// Whether the lock is held (false once released, lost, or past its deadline).
    #[getter]
    fn held(&self, py: Python<'_>) -> bool {
        py.allow_threads(|| self.with(|g| g.guard().is_held()))
    }

    /// Seconds left before the lease's deadline (0 when not held).
    #[getter]
    fn expires_in(&self, py: Python<'_>) -> f64 {
        py.allow_threads(|| self.with(|g| g.guard().remaining().as_secs_f64()))
    }

    /// Raises `baton.Lost` once the lease was lost, `baton.NotOwner` after a release.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.with(|g| g.guard().check()))
            .map_err(|e| to_py(&e))
    }

    /// Reads the object again and renews the lock: the value, or `None`.
    fn get_locked(&self, py: Python<'_>) -> PyResult<PyObject> {
        let g = self.shared();
        let got = block(py, async move {
            let mut g = g.lock().await;
            g.get_locked().await.map(|v| v.map(<[u8]>::to_vec))
        })?;
        value(py, got)
    }

    fn get_locked_async(&self, done: PyObject) -> PyResult<()> {
        let g = self.shared();
        let future = async move {
            let mut g = g.lock().await;
            g.get_locked().await.map(|v| v.map(<[u8]>::to_vec))
        };
        settle(done, future, value).map(drop)
    }

    /// Writes `value`, keeping the lock (renewed); returns the new version.
    fn update_locked_and_retain(&self, py: Python<'_>, value: &[u8]) -> PyResult<u64> {
        let (g, value) = (self.shared(), value.to_vec());
        block(py, async move {
            g.lock().await.update_locked_and_retain(value).await
        })
    }

    fn update_locked_and_retain_async(&self, value: &[u8], done: PyObject) -> PyResult<()> {
        let (g, value) = (self.shared(), value.to_vec());
        let future = async move { g.lock().await.update_locked_and_retain(value).await };
        settle(done, future, version).map(drop)
    }

    /// Writes `value` and releases the lock; returns the new version (on an error the lock
    /// stays held).
    fn update_locked_and_release(&self, py: Python<'_>, value: &[u8]) -> PyResult<u64> {
        let (g, value) = (self.shared(), value.to_vec());
        block(py, async move {
            g.lock().await.update_locked_and_release(value).await
        })
    }

    fn update_locked_and_release_async(&self, value: &[u8], done: PyObject) -> PyResult<()> {
        let (g, value) = (self.shared(), value.to_vec());
        let future = async move { g.lock().await.update_locked_and_release(value).await };
        settle(done, future, version).map(drop)
    }

    /// Inserts the object (which must not exist), keeping the lock; returns its version.
    fn insert_locked(&self, py: Python<'_>, value: &[u8]) -> PyResult<u64> {
        let (g, value) = (self.shared(), value.to_vec());
        block(py, async move { g.lock().await.insert_locked(value).await })
    }

    fn insert_locked_async(&self, value: &[u8], done: PyObject) -> PyResult<()> {
        let (g, value) = (self.shared(), value.to_vec());
        let future = async move { g.lock().await.insert_locked(value).await };
        settle(done, future, version).map(drop)
    }

    /// Removes the object and releases the lock.
    fn remove_locked(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.shared();
        block(py, async move { g.lock().await.remove_locked().await })
    }

    fn remove_locked_async(&self, done: PyObject) -> PyResult<()> {
        let g = self.shared();
        let future = async move { g.lock().await.remove_locked().await };
        settle(done, future, none).map(drop)
    }

    /// Renews the lock.
    fn lock_refresh(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.shared();
        block(py, async move { g.lock().await.lock_refresh().await })
    }

    fn lock_refresh_async(&self, done: PyObject) -> PyResult<()> {
        let g = self.shared();
        let future = async move { g.lock().await.lock_refresh().await };
        settle(done, future, none).map(drop)
    }

    /// Releases the lock without writing; `baton.NotOwner` on a second call.
    fn unlock(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.shared();
        block(py, async move { g.lock().await.unlock().await })
    }

    fn unlock_async(&self, done: PyObject) -> PyResult<()> {
        let g = self.shared();
        let future = async move { g.lock().await.unlock().await };
        settle(done, future, none).map(drop)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ObjectGuard(name={:?}, token={}, version={})",
            self.name,
            self.token,
            self.version(py)
        )
    }
}
