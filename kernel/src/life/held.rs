//! What a life keeps while its lock is held: the lease, the renewal on its way and its failed
//! retries, and the holder's requests waiting for the renewal in flight to finish.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use super::AfterObject;
use crate::error::{Error, ErrorKind};
use crate::lease::Lease;
use crate::model::Write;
use crate::op::{ObjectCall, ObjectRequest, Renew};
use crate::time::Instant;

#[derive(Debug)]
pub(super) struct Held {
    pub(super) lease: Lease,
    pub(super) renewal: Option<Renew>,
    /// Failed renewals in a row, and when the next retry is due.
    pub(super) failures: u32,
    pub(super) retry_at: Option<Instant>,
    pub(super) last_error: Option<Error>,
    /// Lost (the holder has been told), not yet released.
    pub(super) lost: Option<Error>,
    /// A renewal the holder asked for ([`LockLife::renew_now`](super::LockLife::renew_now)).
    pub(super) renew_requested: bool,
    /// A release the holder asked for, waiting for the renewal in flight to finish.
    pub(super) release_requested: Option<Vec<Write>>,
    /// A release to run elsewhere, waiting likewise.
    pub(super) elsewhere_requested: bool,
    /// An object call the holder asked for, waiting for the renewal in flight to finish.
    pub(super) object_requested: Option<(ObjectRequest, AfterObject)>,
    /// The object call on its way, and what follows its success.
    pub(super) object_call: Option<(ObjectCall, AfterObject)>,
    /// The object cell as this holder last saw it (`Some(None)`: none), if known.
    pub(super) object_cell: Option<Option<String>>,
    /// Object writes made so far (each write's cell names its number).
    pub(super) object_writes: u64,
}

/// The wait before retrying a renewal that failed for store reasons: short, growing, and well
/// inside the validity so several retries fit before the deadline.
pub fn renewal_retry_delay(failures: u32, validity: Duration) -> Duration {
    let grown = Duration::from_millis(10).saturating_mul(1 << failures.min(10));
    grown
        .min(Duration::from_secs(1))
        .min((validity / 10).max(Duration::from_millis(1)))
}

impl Held {
    /// When the next renewal falls due by itself (the retry of a failed one, or the lease's
    /// schedule); `None` without keep-alive.
    pub(super) fn scheduled_renewal(&self, keep_alive: bool) -> Option<Instant> {
        keep_alive.then(|| self.retry_at.unwrap_or_else(|| self.lease.renew_at()))
    }

    pub(super) fn new(lease: Lease) -> Self {
        Held {
            lease,
            renewal: None,
            failures: 0,
            retry_at: None,
            last_error: None,
            lost: None,
            renew_requested: false,
            release_requested: None,
            elsewhere_requested: false,
            object_requested: None,
            object_call: None,
            object_cell: None,
            object_writes: 0,
        }
    }

    /// The loss of a lease whose deadline passed.
    pub(super) fn deadline_loss(&self, keep_alive: bool) -> Error {
        let why = match &self.last_error {
            Some(e) => format!("its deadline passed without a successful renewal; last error: {e}"),
            None if keep_alive => String::from("its deadline passed without a successful renewal"),
            None => String::from("its deadline passed (keep-alive is off)"),
        };
        Error::new(
            ErrorKind::Lost,
            format!(
                "lease on lock {:?} (token {}) is lost: {why}",
                self.lease.name().as_str(),
                self.lease.token()
            ),
        )
        .with_lock(self.lease.name().as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_retries_stay_short_and_inside_the_validity() {
        let validity = Duration::from_millis(50);
        for failures in 0..40 {
            let d = renewal_retry_delay(failures, validity);
            assert!(
                d >= Duration::from_millis(1) && d <= Duration::from_millis(5),
                "{d:?}"
            );
        }
        assert_eq!(
            renewal_retry_delay(0, Duration::from_secs(60)),
            Duration::from_millis(10)
        );
        assert_eq!(
            renewal_retry_delay(30, Duration::from_secs(60)),
            Duration::from_secs(1)
        );
    }
}
