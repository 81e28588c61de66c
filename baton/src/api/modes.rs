//! Shared locks, semaphores and several locks at once (issue 43): thin conveniences over
//! [`Locker::lock_with`] and a [`LockRequest`]'s mode. Every decision (who may hold beside
//! whom, how many permits are taken) is the kernel's.

use std::time::Duration;

use baton_kernel::{Error, ErrorKind, LockName, LockPath, Mode, Result, Wait};

use crate::api::guard::Guard;
use crate::api::locker::Locker;
use crate::api::request::LockRequest;

impl Locker {
    /// Acquires `name` as a reader ([`Mode::Shared`]): any number of shared holders at once,
    /// never beside an exclusive one. Waits up to the default wait timeout. Needs the bakery or
    /// column-prefix strategy ([`ErrorKind::InvalidOption`] on unique insert).
    ///
    /// A writer that waits is not starved by readers that keep coming: bakery serves requests
    /// in ticket order, column prefix keeps the waiting writer's request so new readers wait
    /// behind it (see the README's modes section).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> baton::Result<()> {
    /// use baton::{ErrorKind, Locker, Strategy};
    /// let locker = Locker::builder(baton::MemoryStore::new())
    ///     .strategy(Strategy::Bakery)
    ///     .build()?;
    /// let a = locker.lock_shared("catalog").await?;
    /// let b = locker.lock_shared("catalog").await?; // readers share
    /// let e = locker.try_lock("catalog").await.unwrap_err(); // a writer waits for both
    /// assert_eq!(e.kind(), ErrorKind::Busy);
    /// # drop((a, b));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lock_shared(&self, name: &str) -> Result<Guard> {
        self.lock_with(name, LockRequest::new().shared()).await
    }

    /// [`Locker::lock_shared`] in one attempt: [`ErrorKind::Busy`] while a writer holds it or
    /// waits for it.
    pub async fn try_lock_shared(&self, name: &str) -> Result<Guard> {
        self.lock_with(name, LockRequest::new().shared().try_once())
            .await
    }

    /// A semaphore of `permits` on `name`: at most `permits` holders at once, across every
    /// process using the store. Every user of the name must give the same `permits`: a request
    /// that finds another size in use gets [`ErrorKind::InvalidOption`] naming both.
    /// [`ErrorKind::InvalidOption`] now for `permits` outside 1 to [`Mode::MAX_PERMITS`], or a
    /// locker whose strategy is unique insert; [`ErrorKind::InvalidName`] for a bad name.
    pub fn semaphore(&self, name: &str, permits: u32) -> Result<Semaphore> {
        let mode = Mode::counted(i64::from(permits))?;
        let name_ok = LockName::new(name)?;
        if self.defaults().paths {
            LockPath::from_name(name_ok)?;
        }
        // Validated now, so that a wrong strategy is found before the first acquire.
        LockRequest::new()
            .mode(mode)
            .resolve(self.defaults(), false)?;
        Ok(Semaphore {
            locker: self.clone(),
            name: name.to_owned(),
            mode,
        })
    }

    /// Acquires every name in `names` in `request`'s mode, all or nothing, without deadlock:
    /// the names are taken one at a time in one global order ([`LockPath::order`]: `foo`,
    /// `foo.bar`, `foo.bar.woof`, `foo.baz`), whatever order they are given in, so two callers
    /// never each hold what the other waits for. The request's wait is the budget for the whole
    /// call. On any error (a timeout included) every lock already taken is released, in
    /// reverse order, before the error is returned: nothing is left held. The guards come back
    /// in the order taken.
    ///
    /// Errors: [`ErrorKind::InvalidOption`] for no names or the same name twice, and whatever
    /// [`Locker::lock_with`] returns for any of them.
    pub async fn lock_all(&self, names: &[&str], request: LockRequest) -> Result<Vec<Guard>> {
        let (opts, _) = request.resolve(self.defaults(), false)?;
        let ordered = lock_order(names, opts.paths)?;
        let deadline = match request.wait_or(&self.defaults().wait) {
            Wait::Timeout(t) => tokio::time::Instant::now().checked_add(t),
            Wait::TryOnce => None,
        };
        let mut taken: Vec<Guard> = Vec::with_capacity(ordered.len());
        for name in &ordered {
            let mut one = request.clone();
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                one = one.wait_timeout(left);
            }
            match self.lock_with(name.as_str(), one).await {
                Ok(guard) => taken.push(guard),
                Err(e) => {
                    while let Some(mut guard) = taken.pop() {
                        // Its own failure (a lost lease) changes nothing: it is not held.
                        let _ = guard.release().await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(taken)
    }
}

/// `names` in the order [`Locker::lock_all`] takes them; [`ErrorKind::InvalidOption`] for none,
/// a repeated name, or (with `paths`) two related paths, one of which already covers the
/// other; [`ErrorKind::InvalidName`] for an invalid name or path.
pub(crate) fn lock_order(names: &[&str], paths: bool) -> Result<Vec<LockPath>> {
    if names.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            "lock_all needs at least one name",
        ));
    }
    if paths {
        let given = names
            .iter()
            .map(|n| LockPath::new(n))
            .collect::<Result<Vec<_>>>()?;
        return LockPath::sorted_unrelated(given);
    }
    let mut paths = names
        .iter()
        .map(|n| LockName::new(n).map(LockPath::flat_name))
        .collect::<Result<Vec<_>>>()?;
    paths.sort_by(LockPath::order);
    if let Some(w) = paths.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "lock_all was given {:?} twice; each name once",
                w[0].as_str()
            ),
        ));
    }
    Ok(paths)
}

/// A semaphore shared by every process on the store: at most [`Semaphore::permits`] holders
/// of its name at once. Made by [`Locker::semaphore`]; cheap to clone. Each acquire returns a
/// [`Guard`]: the permit is given back when the guard is released or dropped, and is renewed
/// in the background meanwhile like any lease.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> baton::Result<()> {
/// use baton::{ErrorKind, Locker, Strategy};
/// let locker = Locker::builder(baton::MemoryStore::new())
///     .strategy(Strategy::Bakery)
///     .build()?;
/// let slots = locker.semaphore("encoders", 2)?;
/// let (a, b) = (slots.acquire().await?, slots.acquire().await?);
/// assert_eq!(slots.try_acquire().await.unwrap_err().kind(), ErrorKind::Busy);
/// drop(a);
/// let c = slots.acquire().await?; // a permit came back
/// # drop((b, c));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    locker: Locker,
    name: String,
    mode: Mode,
}

impl Semaphore {
    /// The name its permits are taken on.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many holders it admits at once.
    pub fn permits(&self) -> u32 {
        match self.mode {
            Mode::Counted(n) => n,
            _ => 1,
        }
    }

    /// Takes a permit, waiting up to the locker's default wait timeout
    /// ([`ErrorKind::TimedOut`]).
    pub async fn acquire(&self) -> Result<Guard> {
        self.acquire_with(LockRequest::new()).await
    }

    /// Takes a permit in one attempt: [`ErrorKind::Busy`] when all are taken.
    pub async fn try_acquire(&self) -> Result<Guard> {
        self.acquire_with(LockRequest::new().try_once()).await
    }

    /// Takes a permit waiting up to `timeout` ([`ErrorKind::TimedOut`]).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Guard> {
        self.acquire_with(LockRequest::new().wait_timeout(timeout))
            .await
    }

    /// Takes a permit with per-call options (its mode is the semaphore's, whatever the
    /// request says).
    pub async fn acquire_with(&self, request: LockRequest) -> Result<Guard> {
        self.locker
            .lock_with(&self.name, request.mode(self.mode))
            .await
    }

    /// The locker it takes permits from.
    pub fn locker(&self) -> &Locker {
        &self.locker
    }
}
