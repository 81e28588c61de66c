//! [`LockRequest`]: per-call overrides of a locker's defaults.

use std::time::Duration;

use baton_kernel::{Error, ErrorKind, LockOptions, Mode, Result, RetryPolicy, Strategy, Wait};

/// Options of one [`Locker::lock_with`](crate::Locker::lock_with) call; anything not set
/// comes from the locker's defaults.
///
/// ```
/// # use std::time::Duration;
/// use baton::{LockRequest, Strategy};
/// let request = LockRequest::new()
///     .strategy(Strategy::ColumnPrefix)
///     .ttl(Duration::from_secs(10))
///     .wait_timeout(Duration::from_secs(2))
///     .read_row(true);
/// # let _ = request;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "a LockRequest does nothing until passed to lock_with"]
pub struct LockRequest {
    strategy: Option<Strategy>,
    ttl: Option<Duration>,
    wait: Option<Wait>,
    retry: Option<RetryPolicy>,
    read_row: Option<bool>,
    fail_on_stale_lock: Option<bool>,
    cell_ttl: Option<Duration>,
    lock_id: Option<String>,
    keep_alive: Option<bool>,
    mode: Option<Mode>,
    paths: Option<bool>,
}

impl LockRequest {
    /// A request that overrides nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The lock algorithm. Every name must always be locked with the same strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = Some(strategy);
        self
    }

    /// The lease length ([`LockOptions::MIN_TTL`] to [`LockOptions::MAX_TTL`]).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// How long to wait for a held lock.
    pub fn wait(mut self, wait: Wait) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Wait up to `timeout` for a held lock ([`Duration::MAX`]: forever).
    pub fn wait_timeout(self, timeout: Duration) -> Self {
        self.wait(Wait::Timeout(timeout))
    }

    /// One attempt; a held lock gives [`ErrorKind::Busy`].
    pub fn try_once(self) -> Self {
        self.wait(Wait::TryOnce)
    }

    /// The backoff between attempts.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Column prefix only: return the row's data columns with the guard
    /// ([`Guard::row`](crate::Guard::row)), read in the same round trip that verified the lock.
    pub fn read_row(mut self, read_row: bool) -> Self {
        self.read_row = Some(read_row);
        self
    }

    /// Column prefix only: fail with [`ErrorKind::StaleLock`] on finding another owner's stale
    /// lock column instead of deleting it.
    pub fn fail_on_stale_lock(mut self, fail: bool) -> Self {
        self.fail_on_stale_lock = Some(fail);
        self
    }

    /// Column prefix only: the lock cell's TTL, at least the lease TTL.
    pub fn cell_ttl(mut self, cell_ttl: Duration) -> Self {
        self.cell_ttl = Some(cell_ttl);
        self
    }

    /// Column prefix only: the unique part of the lock column, instead of the generated owner
    /// id. The caller promises it is unique among concurrent contenders.
    pub fn lock_id(mut self, lock_id: impl Into<String>) -> Self {
        self.lock_id = Some(lock_id.into());
        self
    }

    /// Whether the guard renews its lease in the background (default: the locker's setting).
    pub fn keep_alive(mut self, keep_alive: bool) -> Self {
        self.keep_alive = Some(keep_alive);
        self
    }

    /// What the lock is taken as: [`Mode::Exclusive`] (the default), [`Mode::Shared`] (any
    /// number of shared holders, no exclusive one), or [`Mode::Counted`] (a semaphore of `n`
    /// permits; every holder of the name must give the same `n`, or gets
    /// [`ErrorKind::InvalidOption`]). Shared and counted locks need the bakery or column-prefix
    /// strategy: unique insert refuses them with [`ErrorKind::InvalidOption`].
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Whether this request's name is a dot-separated path (default: the locker's setting,
    /// [`LockerBuilder::paths`](crate::LockerBuilder::paths)).
    pub fn paths(mut self, paths: bool) -> Self {
        self.paths = Some(paths);
        self
    }

    /// [`Mode::Shared`]: a reader's lock ([`LockRequest::mode`]).
    pub fn shared(self) -> Self {
        self.mode(Mode::Shared)
    }

    /// The wait this request asks for, or `default`.
    pub(crate) fn wait_or(&self, default: &Wait) -> Wait {
        self.wait.unwrap_or(*default)
    }

    /// The options of this request on top of `defaults`, validated, and whether to keep alive.
    pub(crate) fn resolve(
        &self,
        defaults: &LockOptions,
        keep_alive: bool,
    ) -> Result<(LockOptions, bool)> {
        let mut opts = defaults.clone();
        if let Some(strategy) = self.strategy {
            opts.strategy = strategy;
        }
        if let Some(ttl) = self.ttl {
            opts.ttl = ttl;
        }
        if let Some(wait) = self.wait {
            opts.wait = wait;
        }
        if let Some(retry) = self.retry {
            opts.retry = retry;
        }
        if let Some(mode) = self.mode {
            opts.mode = mode;
        }
        if let Some(paths) = self.paths {
            opts.paths = paths;
        }
        let prefix_only = [
            ("read_row", self.read_row.is_some()),
            ("fail_on_stale_lock", self.fail_on_stale_lock.is_some()),
            ("cell_ttl", self.cell_ttl.is_some()),
            ("lock_id", self.lock_id.is_some()),
        ];
        if opts.strategy != Strategy::ColumnPrefix {
            if let Some((option, _)) = prefix_only.iter().find(|(_, set)| *set) {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "option {option} applies to the column-prefix strategy only, but this lock uses {}",
                        opts.strategy
                    ),
                ));
            }
        }
        if let Some(read_row) = self.read_row {
            opts.prefix.read_row = read_row;
        }
        if let Some(fail) = self.fail_on_stale_lock {
            opts.prefix.fail_on_stale_lock = fail;
        }
        if let Some(cell_ttl) = self.cell_ttl {
            opts.prefix.cell_ttl = Some(cell_ttl);
        }
        if let Some(lock_id) = &self.lock_id {
            opts.prefix.lock_id = Some(lock_id.clone());
        }
        opts.validate()?;
        Ok((opts, self.keep_alive.unwrap_or(keep_alive)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_and_are_validated() {
        let defaults = LockOptions::default();
        let (opts, keep_alive) = LockRequest::new()
            .ttl(Duration::from_secs(5))
            .try_once()
            .keep_alive(false)
            .resolve(&defaults, true)
            .expect("valid");
        assert_eq!(opts.ttl, Duration::from_secs(5));
        assert_eq!(opts.wait, Wait::TryOnce);
        assert!(!keep_alive);
        let e = LockRequest::new()
            .ttl(Duration::ZERO)
            .resolve(&defaults, true)
            .expect_err("zero ttl");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
    }

    #[test]
    fn prefix_options_need_the_prefix_strategy() {
        let defaults = LockOptions::default();
        let e = LockRequest::new()
            .read_row(true)
            .resolve(&defaults, true)
            .expect_err("unique insert has no row to read");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
        assert!(e.message().contains("read_row"), "{e}");
        let (opts, _) = LockRequest::new()
            .strategy(Strategy::ColumnPrefix)
            .read_row(true)
            .lock_id("worker-7")
            .resolve(&defaults, true)
            .expect("valid");
        assert!(opts.prefix.read_row);
        assert_eq!(opts.prefix.lock_id.as_deref(), Some("worker-7"));
    }

    #[test]
    fn modes_need_a_strategy_that_carries_them() {
        let defaults = LockOptions::default();
        let e = LockRequest::new()
            .strategy(Strategy::UniqueInsert)
            .shared()
            .resolve(&defaults, true)
            .expect_err("unique insert is exclusive only");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
        assert!(e.message().contains("bakery or column-prefix"), "{e}");
        for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
            let (opts, _) = LockRequest::new()
                .strategy(strategy)
                .mode(Mode::Counted(3))
                .resolve(&defaults, true)
                .expect("valid");
            assert_eq!(opts.mode, Mode::Counted(3));
        }
    }
}
