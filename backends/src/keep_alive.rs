//! The keep-alive task of a guard: renewals, and noticing the deadline when they fail.

use std::sync::Arc;

use baton_kernel::life::renewal_retry_delay;
use baton_kernel::{ErrorKind, Renew};

use crate::guard::Shared;

/// Runs until the guard is released or its lease is lost, renewing at [`Lease::renew_at`].
///
/// The lease is marked lost, never silently, when a renewal finds it gone or taken over, or
/// when the deadline passes without a successful renewal (even while a renewal hangs). A kick
/// (a manual renewal, a release, a loss) makes it look again at once.
pub(crate) async fn run(shared: Arc<Shared>) {
    let clock = shared.locker.clock().clone();
    while shared.is_active() {
        let wake_at = shared.lease().renew_at();
        tokio::select! {
            () = tokio::time::sleep_until(clock.to_tokio(wake_at)) => {}
            () = shared.kick.notified() => continue,
        }
        if shared.is_active() {
            renew_until_deadline(&shared).await;
        }
    }
}

/// Renews, retrying store failures with a short backoff, until it works, the lease is found
/// lost, or the deadline passes.
async fn renew_until_deadline(shared: &Shared) {
    let clock = shared.locker.clock().clone();
    let mut last_error = None;
    let mut attempt = 0u32;
    loop {
        let lease = shared.lease();
        let deadline = lease.deadline();
        if clock.now() >= deadline {
            let why = match &last_error {
                Some(e) => format!("renewal did not succeed before the deadline; last error: {e}"),
                None => String::from("renewal did not succeed before the deadline"),
            };
            shared.mark_lost(shared.lost_error(&why));
            return;
        }
        let ops = shared.ops.lock().await;
        if !shared.is_active() || shared.lease().deadline() != deadline {
            // Released, lost, or renewed by hand meanwhile: the caller looks again.
            return;
        }
        let mut op = Renew::new(&lease);
        let renewal = shared.locker.run(&mut op);
        tokio::pin!(renewal);
        let result = tokio::select! {
            result = &mut renewal => result,
            () = tokio::time::sleep_until(clock.to_tokio(deadline)) => {
                shared.mark_lost(shared.lost_error("the deadline passed while a renewal was in flight"));
                // Let the renewal finish: the kernel deletes a cell a late renewal revived.
                let _ = renewal.await;
                return;
            }
        };
        drop(ops);
        match shared.after_renewal(result) {
            Ok(()) => return,
            Err(e) if matches!(e.kind(), ErrorKind::Lost | ErrorKind::NotOwner) => return,
            Err(e) => {
                tracing::warn!(lock = %lease.name(), attempt, "renewal failed, retrying: {e}");
                last_error = Some(e);
                let validity = lease.options().lease_validity();
                let retry_at = tokio::time::Instant::now() + renewal_retry_delay(attempt, validity);
                attempt = attempt.saturating_add(1);
                let until = retry_at.min(clock.to_tokio(deadline));
                tokio::select! {
                    () = tokio::time::sleep_until(until) => {}
                    () = shared.kick.notified() => {
                        // Released or renewed by hand: the caller looks again.
                        shared.kick.notify_one();
                        return;
                    }
                }
            }
        }
    }
}
