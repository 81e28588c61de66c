//! What the C and the C++ APIs share: opening a locker from a URL and options, the waits of a
//! lock call, and finishing a guard. Each API only converts its own types into these.

use std::time::Duration;

use baton::baton_kernel::host::{duration_from, TimeUnit};
use baton::{
    BlockingGuard, BlockingLocker, BlockingObjectGuard, BlockingSemaphore, Error, LockOptions,
    LockRequest, LockerSpec, Mode, Wait,
};

use crate::call::invalid;

/// A locker's options, as both APIs describe them (`None`: the default).
pub(crate) struct Options<'a> {
    pub strategy: Option<&'a str>,
    pub ttl_ms: i64,
    pub wait_timeout_ms: i64,
    pub consistency: Option<&'a str>,
    pub table: Option<&'a str>,
    pub keep_alive: bool,
    /// Names are dot-separated paths (`LockerSpec::paths`).
    pub paths: bool,
}

/// The defaults: the kernel's lease and wait, keep-alive on.
pub(crate) fn default_times() -> (i64, i64) {
    let defaults = LockOptions::default();
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let wait = match defaults.wait {
        Wait::Timeout(wait) => ms(wait),
        Wait::TryOnce => 0,
    };
    (ms(defaults.ttl), wait)
}

/// A duration in milliseconds from C or C++, read as every binding reads one
/// ([`duration_from`]): negative is refused, `INT64_MAX` is forever where `forever` is allowed
/// (a wait), refused elsewhere (a ttl).
pub(crate) fn millis(
    function: &str,
    what: &str,
    ms: i64,
    forever: bool,
) -> Result<Duration, Error> {
    let amount = match ms {
        i64::MAX => f64::INFINITY,
        ms => ms as f64,
    };
    duration_from(what, amount, TimeUnit::Milliseconds, forever)
        .map_err(|e| invalid(function, e.message()))
}

/// Opens the locker `url` names with `options` (the reading of each option is the `baton`
/// crate's [`LockerSpec`]; this only converts C's and C++'s millisecond counts).
pub(crate) fn open(
    function: &str,
    url: &str,
    options: &Options<'_>,
) -> Result<BlockingLocker, Error> {
    let spec = LockerSpec {
        url,
        strategy: options.strategy,
        ttl: Some(millis(function, "the ttl", options.ttl_ms, false)?),
        wait_timeout: Some(millis(
            function,
            "the wait timeout",
            options.wait_timeout_ms,
            true,
        )?),
        consistency: options.consistency,
        table: options.table,
        keep_alive: options.keep_alive,
        password_file: None,
        paths: options.paths,
    };
    Ok(spec.open()?.blocking())
}

/// How a lock call waits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Attempt {
    /// Up to the locker's wait timeout.
    Wait,
    /// Once: a held lock is `Busy`.
    Once,
    /// Up to this long: a held lock is `TimedOut` after it.
    For(Duration),
}

impl Attempt {
    fn request(self) -> LockRequest {
        match self {
            Attempt::Wait => LockRequest::new(),
            Attempt::Once => LockRequest::new().try_once(),
            Attempt::For(wait) => LockRequest::new().wait_timeout(wait),
        }
    }
}

/// Takes `name` on `locker` in `mode` (`None`: the locker's default, as `lock` always did).
/// Whether the mode is allowed, and beside whom, is the `baton` crate's decision.
pub(crate) fn lock(
    locker: &BlockingLocker,
    name: &str,
    mode: Option<Mode>,
    attempt: Attempt,
) -> Result<BlockingGuard, Error> {
    let request = attempt.request();
    locker.lock_with(
        name,
        match mode {
            Some(mode) => request.mode(mode),
            None => request,
        },
    )
}

/// Takes every name of `names` on `locker` in `mode` (`None`: the locker's default), all or
/// nothing, in the `baton` crate's one global order ([`BlockingLocker::lock_all`]): the guards
/// come back in the order taken; on an error nothing is left held. `attempt` is the budget
/// for the whole call.
pub(crate) fn lock_all(
    locker: &BlockingLocker,
    names: &[&str],
    mode: Option<Mode>,
    attempt: Attempt,
) -> Result<Vec<BlockingGuard>, Error> {
    let request = attempt.request();
    locker.lock_all(
        names,
        match mode {
            Some(mode) => request.mode(mode),
            None => request,
        },
    )
}

/// A semaphore of `permits` on `name`: the count is read as every binding reads one
/// ([`Mode::counted`]: 1 to [`Mode::MAX_PERMITS`], else `InvalidOption`), then the `baton`
/// crate's [`BlockingLocker::semaphore`] checks the name and the locker's strategy.
pub(crate) fn semaphore(
    locker: &BlockingLocker,
    name: &str,
    permits: i64,
) -> Result<BlockingSemaphore, Error> {
    let permits = match Mode::counted(permits)? {
        Mode::Counted(n) => n,
        // Mode::counted gives Counted or an error; any other mode is a bug here.
        other => return Err(Error::internal(format!("Mode::counted gave {other:?}"))),
    };
    locker.semaphore(name, permits)
}

/// Takes one of `semaphore`'s permits.
pub(crate) fn acquire(
    semaphore: &BlockingSemaphore,
    attempt: Attempt,
) -> Result<BlockingGuard, Error> {
    semaphore.acquire_with(attempt.request())
}

/// Takes `name` on `locker` and reads its object (`get_and_lock`).
pub(crate) fn get_and_lock(
    locker: &BlockingLocker,
    name: &str,
    attempt: Attempt,
) -> Result<BlockingObjectGuard, Error> {
    locker.get_and_lock_with(name, attempt.request())
}

/// Ends a guard as both APIs' destructors do: unlocks it and waits for the store to confirm,
/// so the lock is free when the destructor returns (errors are dropped: an unlock that could
/// not be confirmed expires with its TTL; an unlocked or lost guard has nothing to do).
pub(crate) fn finish(mut guard: BlockingGuard) {
    let _ = guard.release();
}
