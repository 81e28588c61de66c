//! [`Deadline`]: the client-side time limit of a connection's statements, one timer reused by
//! all of them.
//!
//! `tokio::time::timeout` registers a new timer for every statement. When that timer is the
//! earliest one, tokio wakes the thread that waits in its driver so it can shorten its wait; on
//! a multi-thread runtime that is another worker, woken for nothing with every statement.
//! Moving an existing timer later costs one atomic operation instead, and successive statements
//! of one connection always move it later (each limit starts when its statement does).
//!
//! Cost while idle: when a connection waits longer than its limit between statements, its timer
//! fires once and wakes the task that last ran a statement on it (a spurious wake-up, which
//! futures allow); the next statement registers it again.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::{Instant, Sleep};

/// A connection's statement timer (see the module's documentation).
#[derive(Default)]
pub(crate) struct Deadline {
    /// The timer and the runtime whose driver it is registered with: a connection used from
    /// another runtime gets a new one, as a timer must not be polled once its runtime is gone.
    timer: Option<(Id, Pin<Box<Sleep>>)>,
}

impl Deadline {
    /// Runs `work` for at most `limit` from now: `None` if the time ran out first (`work` is
    /// then dropped, unfinished). Polls `work` first, as `tokio::time::timeout` does, so work
    /// that is ready when the limit passes still counts.
    pub(crate) async fn within<F: Future>(
        &mut self,
        limit: Duration,
        work: F,
    ) -> Option<F::Output> {
        let Ok(runtime) = Handle::try_current() else {
            // Outside a runtime: tokio's own timeout, which reports that as it always has.
            return tokio::time::timeout(limit, work).await.ok();
        };
        let until = Instant::now() + limit;
        let id = runtime.id();
        let timer = match &mut self.timer {
            Some((on, timer)) if *on == id => {
                timer.as_mut().reset(until);
                timer
            }
            slot => {
                &mut slot
                    .insert((id, Box::pin(tokio::time::sleep_until(until))))
                    .1
            }
        };
        tokio::select! {
            biased;
            out = work => Some(out),
            () = timer.as_mut() => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn work_that_ends_in_time_is_returned_and_the_timer_reused() {
        let mut deadline = Deadline::default();
        for i in 0..3 {
            let out = deadline
                .within(Duration::from_secs(5), async {
                    tokio::time::sleep(Duration::from_secs(4)).await;
                    i
                })
                .await;
            assert_eq!(out, Some(i), "each limit starts when its work does");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn work_past_the_limit_is_dropped() {
        let mut deadline = Deadline::default();
        let started = Instant::now();
        let out = deadline
            .within(Duration::from_secs(5), std::future::pending::<()>())
            .await;
        assert_eq!(out, None);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        // A timer that fired is armed again by the next use.
        let out = deadline.within(Duration::from_secs(5), async { 7 }).await;
        assert_eq!(out, Some(7));
        let out = deadline
            .within(Duration::from_secs(1), std::future::pending::<()>())
            .await;
        assert_eq!(
            out, None,
            "a shorter limit after a longer one still ends the work"
        );
    }

    #[test]
    fn a_timer_from_a_runtime_that_is_gone_is_replaced() {
        let mut deadline = Deadline::default();
        let first = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let out = first.block_on(deadline.within(Duration::from_secs(5), async { 1 }));
        assert_eq!(out, Some(1));
        drop(first);
        let second = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let out = second.block_on(deadline.within(Duration::from_secs(5), async { 2 }));
        assert_eq!(out, Some(2), "no panic from the first runtime's timer");
    }
}
