//! `baton._baton`: the native half of the Python package `baton` (the pure-Python half in
//! `python/baton/` gives the `with`/`async with` shapes, the exceptions and the types).
//!
//! Every decision is the `baton` crate's; this module adapts types, errors and waiting:
//! - a wait runs as a future on baton's process-wide runtime ([`baton::shared_runtime`]); a
//!   blocking call releases the GIL and looks for signals every 50 ms, so Ctrl-C interrupts it
//!   with `KeyboardInterrupt` (dropping the wait, which removes its cell);
//! - an asyncio call gets a callback that settles its future (no thread per waiting task), and a
//!   handle whose `cancel()` drops the wait; baton's threads call back through the `callback` module,
//!   which the interpreter's exit closes (see there);
//! - errors become the exception classes the Python half registers, by the kernel's codes;
//! - objects (seed 002) cross as `bytes` and their versions as `int`s (`object`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

mod call;
mod callback;
mod object;

use baton::baton_kernel::host::{duration_from, TimeUnit};
use baton::{Error, ErrorKind, LockRequest, LockerSpec, Mode};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyDict;
use tokio::task::JoinHandle;

/// The exception class of each error code, registered by the Python half.
static CLASSES: GILOnceCell<Py<PyDict>> = GILOnceCell::new();

/// `e` as the exception of its kind (a `RuntimeError` before the classes are registered).
fn to_py(e: &Error) -> PyErr {
    Python::with_gil(|py| {
        let class = CLASSES
            .get(py)
            .and_then(|classes| classes.bind(py).get_item(e.code()).ok().flatten());
        match class {
            Some(class) => match class.call1((e.to_string(),)) {
                Ok(instance) => PyErr::from_value(instance),
                Err(err) => err,
            },
            None => PyRuntimeError::new_err(format!("baton error {}: {e}", e.code())),
        }
    })
}

/// Seconds from Python (already a float) as a duration, read as every binding reads one
/// ([`duration_from`]): negative or NaN is refused, infinity is "forever" for a wait only.
fn seconds(what: &str, s: f64, forever: bool) -> Result<Duration, Error> {
    duration_from(what, s, TimeUnit::Seconds, forever)
}

fn runtime() -> PyResult<Arc<tokio::runtime::Runtime>> {
    baton::shared_runtime().map_err(|e| to_py(&e))
}

/// Registers the exception class of each code (`{code: class}`); called once by `baton`.
#[pyfunction]
fn _register_errors(py: Python<'_>, classes: Bound<'_, PyDict>) -> PyResult<()> {
    let _ = CLASSES.set(py, classes.unbind());
    Ok(())
}

/// `[(code, name)]` of every error kind, from the kernel (the Python half checks its table).
#[pyfunction]
fn error_kinds() -> Vec<(u32, &'static str)> {
    ErrorKind::ALL
        .iter()
        .map(|k| (k.code(), k.as_str()))
        .collect()
}

/// A store and default options (see `baton.Locker`).
#[pyclass(module = "baton._baton", frozen)]
struct Locker {
    inner: baton::Locker,
}

/// How a lock call waits.
fn request(timeout: Option<f64>, blocking: bool) -> Result<LockRequest, Error> {
    Ok(match (blocking, timeout) {
        (false, _) => LockRequest::new().try_once(),
        (true, None) => LockRequest::new(),
        (true, Some(t)) => LockRequest::new().wait_timeout(seconds("timeout", t, true)?),
    })
}

/// How a lock call waits, and as what: shared (a reader) or exclusive.
fn lock_request(timeout: Option<f64>, blocking: bool, shared: bool) -> Result<LockRequest, Error> {
    let request = request(timeout, blocking)?;
    Ok(if shared { request.shared() } else { request })
}

#[pymethods]
impl Locker {
    #[new]
    #[pyo3(signature = (url, *, strategy=None, ttl=None, timeout=None, consistency=None, table=None, keep_alive=true, password_file=None, paths=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        url: &str,
        strategy: Option<&str>,
        ttl: Option<f64>,
        timeout: Option<f64>,
        consistency: Option<&str>,
        table: Option<&str>,
        keep_alive: bool,
        password_file: Option<&str>,
        paths: bool,
    ) -> PyResult<Self> {
        let open = || -> Result<baton::Locker, Error> {
            LockerSpec {
                url,
                strategy,
                ttl: ttl.map(|t| seconds("ttl", t, false)).transpose()?,
                wait_timeout: timeout.map(|t| seconds("timeout", t, true)).transpose()?,
                consistency,
                table,
                keep_alive,
                password_file,
                paths,
            }
            .open()
        };
        open().map(|inner| Locker { inner }).map_err(|e| to_py(&e))
    }

    /// Takes `name`, blocking (GIL released) up to `timeout` seconds (None: the locker's), or
    /// once when `blocking` is false; Ctrl-C interrupts the wait.
    /// `shared`: as one of any number of readers (bakery or column prefix only).
    #[pyo3(signature = (name, timeout=None, blocking=true, shared=false))]
    fn lock(
        &self,
        py: Python<'_>,
        name: String,
        timeout: Option<f64>,
        blocking: bool,
        shared: bool,
    ) -> PyResult<Guard> {
        let request = lock_request(timeout, blocking, shared).map_err(|e| to_py(&e))?;
        let locker = self.inner.clone();
        call::wait(py, async move { locker.lock_with(&name, request).await }).map(Guard::new)
    }

    /// The asyncio form of `lock`: `done(result)` is called once, from baton's thread, with the
    /// guard or the exception; the returned handle's `cancel()` drops the wait.
    #[pyo3(signature = (name, done, timeout=None, blocking=true, shared=false))]
    fn lock_async(
        &self,
        name: String,
        done: PyObject,
        timeout: Option<f64>,
        blocking: bool,
        shared: bool,
    ) -> PyResult<Pending> {
        let request = lock_request(timeout, blocking, shared).map_err(|e| to_py(&e))?;
        let locker = self.inner.clone();
        let future = async move { locker.lock_with(&name, request).await };
        Ok(Pending::new(call::settle(done, future, |py, guard| {
            Ok(Py::new(py, Guard::new(guard))?.into_any())
        })?))
    }

    /// Takes every name in `names` as `lock` takes one, all or nothing, in baton's one global
    /// order (`Locker::lock_all`): the guards in the order taken. `timeout` is the budget of
    /// the whole call; on any error every lock already taken is released before it is raised.
    #[pyo3(signature = (names, timeout=None, blocking=true, shared=false))]
    fn lock_all(
        &self,
        py: Python<'_>,
        names: Vec<String>,
        timeout: Option<f64>,
        blocking: bool,
        shared: bool,
    ) -> PyResult<Vec<Guard>> {
        let request = lock_request(timeout, blocking, shared).map_err(|e| to_py(&e))?;
        let locker = self.inner.clone();
        let future = async move {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            locker.lock_all(&names, request).await
        };
        call::wait(py, future).map(|guards| guards.into_iter().map(Guard::new).collect())
    }

    /// The asyncio form of `lock_all`, as `lock_async`: `done` gets the list of guards.
    #[pyo3(signature = (names, done, timeout=None, blocking=true, shared=false))]
    fn lock_all_async(
        &self,
        names: Vec<String>,
        done: PyObject,
        timeout: Option<f64>,
        blocking: bool,
        shared: bool,
    ) -> PyResult<Pending> {
        let request = lock_request(timeout, blocking, shared).map_err(|e| to_py(&e))?;
        let locker = self.inner.clone();
        let future = async move {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            locker.lock_all(&names, request).await
        };
        Ok(Pending::new(call::settle(done, future, |py, guards| {
            let guards = guards
                .into_iter()
                .map(|g| Py::new(py, Guard::new(g)))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(guards.into_pyobject(py)?.into_any().unbind())
        })?))
    }

    /// A semaphore of `permits` on `name` (see `Semaphore`): `InvalidOption` for permits
    /// outside 1 to 10 000 or a locker whose strategy is unique insert, `InvalidName` for a bad
    /// name, both now rather than at the first acquire.
    fn semaphore(&self, name: &str, permits: i64) -> PyResult<Semaphore> {
        let make = || -> Result<baton::Semaphore, Error> {
            let Mode::Counted(n) = Mode::counted(permits)? else {
                return Err(Error::internal("Mode::counted made another mode"));
            };
            self.inner.semaphore(name, n)
        };
        make()
            .map(|inner| Semaphore { inner })
            .map_err(|e| to_py(&e))
    }

    /// Every lock in the store: `[(name, strategy, owner, state, token, expires_in)]`.
    fn locks(&self, py: Python<'_>) -> PyResult<Vec<LockEntry>> {
        let locker = self.inner.clone();
        let rt = runtime()?;
        let infos = py
            .allow_threads(|| rt.block_on(locker.list()))
            .map_err(|e| to_py(&e))?;
        Ok(infos.into_iter().map(LockEntry::from).collect())
    }

    /// Removes expired entries (of `name`, or of the whole table): `[(row, column)]`.
    #[pyo3(signature = (name=None))]
    fn purge(&self, py: Python<'_>, name: Option<String>) -> PyResult<Vec<(String, String)>> {
        let locker = self.inner.clone();
        let rt = runtime()?;
        py.allow_threads(|| rt.block_on(locker.purge(name.as_deref())))
            .map_err(|e| to_py(&e))
    }

    /// Breaks lock `name` on purpose; returns whose entries were removed.
    fn force_release(&self, py: Python<'_>, name: String) -> PyResult<Vec<LockEntry>> {
        let locker = self.inner.clone();
        let rt = runtime()?;
        let infos = py
            .allow_threads(|| rt.block_on(locker.force_release(&name)))
            .map_err(|e| to_py(&e))?;
        Ok(infos.into_iter().map(LockEntry::from).collect())
    }

    // Objects (see `object` and `baton.Locker.get`): each call as the `baton` crate makes it;
    // values are `bytes`, versions `int`s.

    /// The largest object value this store takes, in bytes.
    #[getter]
    fn max_object_bytes(&self) -> usize {
        self.inner.store().max_object_bytes()
    }

    /// Object `name` as `(value, version)`, or `None` when there is none.
    fn get(&self, py: Python<'_>, name: String) -> PyResult<PyObject> {
        let locker = self.inner.clone();
        let got = call::block(py, async move { locker.get(&name).await })?;
        object::versioned(py, got)
    }

    fn get_async(&self, name: String, done: PyObject) -> PyResult<()> {
        let locker = self.inner.clone();
        let future = async move { locker.get(&name).await };
        call::settle(done, future, object::versioned).map(drop)
    }

    /// Inserts object `name`; returns its version.
    fn insert(&self, py: Python<'_>, name: String, value: &[u8]) -> PyResult<u64> {
        let (locker, value) = (self.inner.clone(), value.to_vec());
        call::block(py, async move { locker.insert(&name, value).await })
    }

    fn insert_async(&self, name: String, value: &[u8], done: PyObject) -> PyResult<()> {
        let (locker, value) = (self.inner.clone(), value.to_vec());
        let future = async move { locker.insert(&name, value).await };
        call::settle(done, future, object::version).map(drop)
    }

    /// Replaces object `name`'s value if it is still at `version`; returns the new version.
    fn update_optimistic(
        &self,
        py: Python<'_>,
        name: String,
        value: &[u8],
        version: u64,
    ) -> PyResult<u64> {
        let (locker, value) = (self.inner.clone(), value.to_vec());
        call::block(py, async move {
            locker.update_optimistic(&name, value, version).await
        })
    }

    fn update_optimistic_async(
        &self,
        name: String,
        value: &[u8],
        version: u64,
        done: PyObject,
    ) -> PyResult<()> {
        let (locker, value) = (self.inner.clone(), value.to_vec());
        let future = async move { locker.update_optimistic(&name, value, version).await };
        call::settle(done, future, object::version).map(drop)
    }

    /// Removes object `name`.
    fn remove(&self, py: Python<'_>, name: String) -> PyResult<()> {
        let locker = self.inner.clone();
        call::block(py, async move { locker.remove(&name).await })
    }

    fn remove_async(&self, name: String, done: PyObject) -> PyResult<()> {
        let locker = self.inner.clone();
        let future = async move { locker.remove(&name).await };
        call::settle(done, future, call::none).map(drop)
    }

    /// Locks `name` as `lock` does (Ctrl-C interrupts the wait) and reads its object.
    #[pyo3(signature = (name, timeout=None, blocking=true))]
    fn get_and_lock(
        &self,
        py: Python<'_>,
        name: String,
        timeout: Option<f64>,
        blocking: bool,
    ) -> PyResult<object::ObjectGuard> {
        let request = request(timeout, blocking).map_err(|e| to_py(&e))?;
        let locker = self.inner.clone();
        let future = async move { locker.get_and_lock_with(&name, request).await };
        call::wait(py, future).map(object::ObjectGuard::new)
    }

    /// The asyncio form of `get_and_lock`, as `lock_async`.
    #[pyo3(signature = (name, done, timeout=None, blocking=true))]
    fn get_and_lock_async(
        &self,
        name: String,
        done: PyObject,
        timeout: Option<f64>,
        blocking: bool,
    ) -> PyResult<Pending> {
        let request = request(timeout, blocking).map_err(|e| to_py(&e))?;
        let locker = self.inner.clone();
        let future = async move { locker.get_and_lock_with(&name, request).await };
        Ok(Pending::new(call::settle(done, future, object::guard)?))
    }

    /// Locks `name` (the locker's wait) and inserts its object: `baton.AlreadyExists` when
    /// there is one (the lock is then released).
    fn insert_and_lock(
        &self,
        py: Python<'_>,
        name: String,
        value: &[u8],
    ) -> PyResult<object::ObjectGuard> {
        let (locker, value) = (self.inner.clone(), value.to_vec());
        let future = async move { locker.insert_and_lock(&name, value).await };
        call::wait(py, future).map(object::ObjectGuard::new)
    }

    fn insert_and_lock_async(
        &self,
        name: String,
        value: &[u8],
        done: PyObject,
    ) -> PyResult<Pending> {
        let (locker, value) = (self.inner.clone(), value.to_vec());
        let future = async move { locker.insert_and_lock(&name, value).await };
        Ok(Pending::new(call::settle(done, future, object::guard)?))
    }
}

/// A semaphore on the store (see `baton.Semaphore`): each acquire is a guard holding one permit.
#[pyclass(module = "baton._baton", frozen)]
struct Semaphore {
    inner: baton::Semaphore,
}

#[pymethods]
impl Semaphore {
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    #[getter]
    fn permits(&self) -> u32 {
        self.inner.permits()
    }

    /// Takes a permit as `Locker.lock` takes a lock (Ctrl-C interrupts the wait).
    #[pyo3(signature = (timeout=None, blocking=true))]
    fn acquire(&self, py: Python<'_>, timeout: Option<f64>, blocking: bool) -> PyResult<Guard> {
        let request = request(timeout, blocking).map_err(|e| to_py(&e))?;
        let semaphore = self.inner.clone();
        call::wait(py, async move { semaphore.acquire_with(request).await }).map(Guard::new)
    }

    /// The asyncio form of `acquire`, as `Locker.lock_async`.
    #[pyo3(signature = (done, timeout=None, blocking=true))]
    fn acquire_async(
        &self,
        done: PyObject,
        timeout: Option<f64>,
        blocking: bool,
    ) -> PyResult<Pending> {
        let request = request(timeout, blocking).map_err(|e| to_py(&e))?;
        let semaphore = self.inner.clone();
        let future = async move { semaphore.acquire_with(request).await };
        Ok(Pending::new(call::settle(done, future, |py, guard| {
            Ok(Py::new(py, Guard::new(guard))?.into_any())
        })?))
    }

    fn __repr__(&self) -> String {
        format!(
            "Semaphore(name={:?}, permits={})",
            self.inner.name(),
            self.inner.permits()
        )
    }
}

/// One entry of a lock, as the operators' calls report it.
#[pyclass(module = "baton._baton", frozen, get_all)]
struct LockEntry {
    name: String,
    strategy: String,
    owner: String,
    state: String,
    token: Option<u64>,
    expires_in: Option<f64>,
}

impl From<baton::LockInfo> for LockEntry {
    fn from(i: baton::LockInfo) -> Self {
        LockEntry {
            name: i.name,
            strategy: i.strategy.to_string(),
            owner: i.owner,
            state: i.state.as_str().to_owned(),
            token: i.token,
            expires_in: i.expires_in.map(|d| d.as_secs_f64()),
        }
    }
}

#[pymethods]
impl LockEntry {
    fn __repr__(&self) -> String {
        format!(
            "LockEntry(name={:?}, strategy={:?}, owner={:?}, state={:?}, token={:?}, expires_in={:?})",
            self.name, self.strategy, self.owner, self.state, self.token, self.expires_in
        )
    }
}

/// A wait in progress for asyncio.
#[pyclass(module = "baton._baton", frozen)]
struct Pending {
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Pending {
    fn new(task: JoinHandle<()>) -> Pending {
        Pending {
            task: Mutex::new(Some(task)),
        }
    }
}

#[pymethods]
impl Pending {
    /// Drops the wait (its cell is removed in the background: the Python half then waits for
    /// that with `_wait_for_cleanups`, and an exit right after waits for it too: `_at_exit`);
    /// `done` is then never called.
    fn cancel(&self) -> PyResult<()> {
        if let Some(task) = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            baton::abandon_task(runtime()?.handle(), task);
        }
        Ok(())
    }
}

/// A held lock (see `baton.Lease`).
#[pyclass(module = "baton._baton", frozen)]
struct Guard {
    guard: Arc<tokio::sync::Mutex<baton::Guard>>,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    token: u64,
    /// What it is held as: `exclusive`, `shared` or `counted(N)` (a semaphore's permit).
    #[pyo3(get)]
    mode: String,
}

impl Guard {
    fn new(guard: baton::Guard) -> Guard {
        Guard {
            name: guard.name().to_owned(),
            token: guard.token(),
            mode: guard.mode().to_string(),
            guard: Arc::new(tokio::sync::Mutex::new(guard)),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&baton::Guard) -> T) -> T {
        f(&self.guard.blocking_lock())
    }
}

#[pymethods]
impl Guard {
    /// Whether the lock is held (false once released, lost, or past its deadline).
    #[getter]
    fn held(&self, py: Python<'_>) -> bool {
        py.allow_threads(|| self.with(baton::Guard::is_held))
    }

    /// Seconds left before the lease's deadline (0 when not held).
    #[getter]
    fn expires_in(&self, py: Python<'_>) -> f64 {
        py.allow_threads(|| self.with(|g| g.remaining().as_secs_f64()))
    }

    /// Raises `baton.Lost` once the lease was lost, `baton.NotOwner` after a release.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.with(baton::Guard::check))
            .map_err(|e| to_py(&e))
    }

    /// Releases the lock (GIL released): returns when the store confirmed; raises
    /// `baton.Lost` if the lease had ended, `baton.NotOwner` on a second call.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let guard = Arc::clone(&self.guard);
        let rt = runtime()?;
        py.allow_threads(|| rt.block_on(async move { guard.lock().await.release().await }))
            .map_err(|e| to_py(&e))
    }

    /// The asyncio form of `release`: `done(None or exception)` from baton's thread.
    fn release_async(&self, done: PyObject) -> PyResult<()> {
        let guard = Arc::clone(&self.guard);
        drop(runtime()?.spawn(async move {
            let outcome = guard.lock().await.release().await;
            callback::call(done, |py| match outcome {
                Ok(()) => py.None(),
                Err(e) => to_py(&e).into_value(py).into_any(),
            });
        }));
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "Guard(name={:?}, token={}, mode={})",
            self.name, self.token, self.mode
        )
    }
}

/// The native module.
#[pymodule]
fn _baton(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Locker>()?;
    m.add_class::<Guard>()?;
    m.add_class::<Semaphore>()?;
    m.add_class::<object::ObjectGuard>()?;
    m.add_class::<Pending>()?;
    m.add_class::<LockEntry>()?;
    m.add_function(wrap_pyfunction!(_register_errors, m)?)?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(callback::_at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(callback::_wait_for_cleanups, m)?)?;
    Ok(())
}
