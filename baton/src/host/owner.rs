//! Owner ids, jitter seeds and wall-clock stamps for each acquisition.
//!
//! The kernel has no randomness and no clock of its own; this module supplies both, without
//! new dependencies: std's [`RandomState`] (keyed randomly per process by the OS) hashes the
//! time, a counter, the thread and the process id, and the kernel's [`SplitMix64`] finishes the
//! mixing. That is plenty for nonces, whose only job is to make owner ids unique.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use baton_kernel::{OwnerId, Result, SplitMix64};

/// This machine's host name, sanitized for owner ids (read once per process).
pub(crate) fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| String::from("localhost"));
        OwnerId::sanitize_host(raw.trim())
    })
}

/// 64 fresh random bits.
pub(crate) fn random_u64() -> u64 {
    random_in(std::process::id()).next_u64()
}

/// A generator of fresh random bits for process `pid` (this process's id, which the caller has
/// read: a forked child shares the counter and the hasher's keys with its parent, and draws
/// other numbers by its id). Each acquisition reads its process id once and passes it here and
/// to [`owner_with_nonce`], instead of one system call per use.
pub(crate) fn random_in(pid: u32) -> SplitMix64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
        .hash(&mut hasher);
    COUNTER.fetch_add(1, Ordering::Relaxed).hash(&mut hasher);
    std::thread::current().id().hash(&mut hasher);
    pid.hash(&mut hasher);
    SplitMix64::new(hasher.finish())
}

/// The owner id of this host, process `pid` (this one's) and `nonce` (a slot's, see the `slots`
/// module).
pub(crate) fn owner_with_nonce(host_id: Option<u32>, pid: u32, nonce: u64) -> Result<OwnerId> {
    let owner = OwnerId::new(host(), pid, nonce)?;
    Ok(match host_id {
        Some(id) => owner.with_host_id(id),
        None => owner,
    })
}

/// Wall-clock Unix milliseconds (informational only: shown as lock age; 0 before 1970).
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_valid_and_nonces_random() {
        let a = owner_with_nonce(None, std::process::id(), random_u64()).expect("valid host");
        let b = owner_with_nonce(Some(7), std::process::id(), random_u64()).expect("valid host");
        assert_ne!(a.nonce(), b.nonce());
        assert_eq!(a.pid(), std::process::id());
        assert_eq!(b.host_id(), Some(7));
        assert_eq!(OwnerId::parse(&a.key()), Ok(a));
        let nonces: std::collections::HashSet<u64> = (0..1000).map(|_| random_u64()).collect();
        assert_eq!(nonces.len(), 1000);
    }

    #[test]
    fn wall_clock_is_after_2020() {
        assert!(unix_ms() > 1_577_836_800_000);
    }
}
