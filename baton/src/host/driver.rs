//! The driver loop: the only place that sleeps or does I/O for a kernel operation.

use baton_kernel::host::{waits_forever, ChangeWatch};
use baton_kernel::{Instant, Operation, Poll, Result};
use tokio::sync::watch;

use crate::host::clock::Clock;
use crate::stores::store::Store;

/// Runs `op` to completion against `store`, reading time from `clock`.
///
/// This is the loop of the kernel's driving contract ([`Operation`]), plus async waiting:
///
/// - `Execute`: the command goes to [`Store::execute`] and its reply straight back to the
///   operation, so at most one command is ever outstanding and none is when the operation is
///   polled.
/// - `WaitUntil(t)`: sleep until `t`, or until the store's [`Store::changes`] counter moves
///   (a lock may have been freed), in which case the operation is [woken](Operation::wake) so it
///   retries at once. `WaitUntil(Instant::MAX)` with no command outstanding can only be a kernel
///   bug: it is reported ([`waits_forever`], an internal error) rather than waiting forever.
/// - `Ready`: the result.
///
/// No wake-up is lost: the driver subscribes to changes before the first poll; which changes
/// wake the operation is the kernel's rule ([`ChangeWatch`]: not its own deletes, nothing that a
/// command of its own has observed since).
///
/// Cancel safety: dropping the future abandons the operation between commands (or with one in
/// flight). An abandoned acquisition may leave its cell behind; `Locker` removes it with
/// `Acquire::cleanup` (the `acquiring` module), other callers must do the same or let it expire.
pub async fn drive<O: Operation>(
    op: &mut O,
    store: &dyn Store,
    clock: &Clock,
) -> Result<O::Output> {
    let mut changes = store.changes();
    let mut watch = ChangeWatch::new(counter(&changes));
    loop {
        match op.poll(clock.now()) {
            Poll::Ready(result) => return result,
            Poll::Execute(id, command) => {
                watch.before(&command, counter(&changes));
                let reply = store.execute(command).await;
                watch.after(counter(&changes));
                op.handle(id, reply);
            }
            Poll::WaitUntil(Instant::MAX) => return Err(waits_forever()),
            Poll::WaitUntil(until) => {
                if changes.is_some() {
                    store.waiting();
                }
                let sleep = tokio::time::sleep_until(clock.to_tokio(until));
                if wait_for_change(sleep, &mut changes, watch.seen()).await
                    && watch.take_change(counter(&changes))
                {
                    op.wake();
                }
            }
        }
    }
}

/// The store's change counter now (0 for a store that has none).
pub(crate) fn counter(changes: &Option<watch::Receiver<u64>>) -> u64 {
    changes.as_ref().map_or(0, |rx| *rx.borrow())
}

/// Waits until `sleep` ends or the change counter differs from `seen`; returns whether the
/// counter did (at once, if it already differs).
pub(crate) async fn wait_for_change(
    sleep: impl std::future::Future<Output = ()>,
    changes: &mut Option<watch::Receiver<u64>>,
    seen: u64,
) -> bool {
    let Some(rx) = changes.as_mut() else {
        sleep.await;
        return false;
    };
    let changed = tokio::select! {
        () = sleep => return false,
        changed = rx.wait_for(|&v| v != seen) => changed.is_ok(),
    };
    if !changed {
        // The store dropped its sender: no more wake-ups, rely on the timer.
        *changes = None;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::memory::MemoryStore;
    use baton_kernel::{Command, CommandId, ErrorKind, Reply};

    /// An operation that waits forever without a command: a kernel bug the driver must report.
    struct Stuck;

    impl Operation for Stuck {
        type Output = ();
        fn poll(&mut self, _now: Instant) -> Poll<()> {
            Poll::WaitUntil(Instant::MAX)
        }
        fn handle(&mut self, _id: CommandId, _reply: Reply) {}
        fn wake(&mut self) {}
    }

    #[tokio::test]
    async fn waiting_forever_without_a_command_is_an_error() {
        let store = MemoryStore::new();
        let e = drive(&mut Stuck, &store, &Clock::new())
            .await
            .expect_err("must not hang");
        assert_eq!(e.kind(), ErrorKind::Internal);
        assert!(e.message().contains("internal error"), "{e}");
    }

    /// Waits once until 1 s, then finishes, recording whether it was woken.
    struct WaitOnce {
        woken: bool,
        waited: bool,
    }

    impl Operation for WaitOnce {
        type Output = bool;
        fn poll(&mut self, now: Instant) -> Poll<bool> {
            if self.waited || now >= Instant::from_nanos(1_000_000_000) {
                return Poll::Ready(Ok(self.woken));
            }
            self.waited = true;
            Poll::WaitUntil(Instant::from_nanos(1_000_000_000))
        }
        fn handle(&mut self, _id: CommandId, _reply: Reply) {}
        fn wake(&mut self) {
            self.woken = true;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_wakes_a_waiting_operation() {
        let store = MemoryStore::new();
        let clock = Clock::new();
        let mut op = WaitOnce {
            woken: false,
            waited: false,
        };
        let run = drive(&mut op, &store, &clock);
        let bump = async {
            tokio::task::yield_now().await;
            store.apply(&Command::DeleteVersion {
                row: "r".into(),
                column: "c".into(),
                stamp: u64::MAX,
                consistency: baton_kernel::Consistency::Quorum,
            });
        };
        let (woken, ()) = tokio::join!(run, bump);
        assert_eq!(woken, Ok(true));
        assert!(clock.now() < Instant::from_nanos(1_000_000_000));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_change_the_timer_ends_the_wait() {
        let store = MemoryStore::new();
        let clock = Clock::new();
        let mut op = WaitOnce {
            woken: false,
            waited: false,
        };
        assert_eq!(drive(&mut op, &store, &clock).await, Ok(false));
        assert_eq!(clock.now(), Instant::from_nanos(1_000_000_000));
    }
}
