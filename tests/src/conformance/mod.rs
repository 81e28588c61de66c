//! The store conformance suite: one set of lock behaviours, observed through the public
//! [`Locker`](baton::Locker) API, that every store must show for every strategy.
//!
//! A behaviour is an `async fn(Table, Strategy)` that panics on a violation. [`run`] runs one
//! behaviour for every strategy at once, each in a fresh table of the store the environment
//! names (see [`target`]), and reports every strategy that failed. The test file
//! `tests/conformance.rs` instantiates [`BEHAVIOURS`] for each store; a new store (Cassandra)
//! adds one line there and a [`Backend`] variant here.
//!
//! What is checked (for each strategy):
//! - [`basics::acquire_and_release`]: an uncontended grant, inspected, released, re-granted
//!   with a larger token; a second release is `NotOwner`.
//! - [`basics::try_lock_is_busy_while_held`]: `Busy`, and nothing left behind.
//! - [`basics::wait_times_out`]: `TimedOut`, not before the timeout.
//! - [`basics::handoff_to_waiters`]: two waiters; each release hands over to exactly one.
//! - [`expiry::expiry_and_takeover`]: without keep-alive the lock is taken over only after the
//!   TTL (measured from before the holder's acquire was sent), with a larger token, and the old
//!   holder knows.
//! - [`expiry::renew_extends_the_lease`]: renewal moves the deadline; the lock outlives the
//!   first TTL.
//! - [`expiry::expired_holder_cannot_release`]: an expired holder's release is `Lost` and does
//!   not touch the new holder's lock.
//! - [`admin::fencing_tokens_increase`]: three clients, twelve handoffs: mutual exclusion and
//!   strictly increasing tokens.
//! - [`admin::tokens_increase_while_purging`]: the same with a purge of the whole table after
//!   every release, racing the next acquisition.
//! - [`admin::purge_removes_expired_entries`]: purge removes expired entries only, and keeps
//!   the fencing counter.
//! - [`admin::list_shows_holders`]: name, strategy, owner, token, state, remaining TTL.
//!
//! Clients are separate stores on one table (for databases: separate connection pools, as
//! separate processes would have), so nothing is shared but the database.

pub mod admin;
pub mod basics;
pub mod expiry;
mod janitor;
pub mod target;
pub mod util;

use std::future::Future;
use std::time::Duration;

use baton::Strategy;

pub use janitor::drop_table;
pub use target::{Backend, Table, Target};

/// The most one behaviour may take for all strategies together before it counts as hung.
const BEHAVIOUR_LIMIT: Duration = Duration::from_secs(120);

/// A behaviour: runs on a fresh table with one strategy, panics on a violation.
pub type Behaviour = fn(Table, Strategy) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

macro_rules! behaviours {
    ($($path:path),* $(,)?) => {
        /// Every behaviour of the suite, by name.
        pub const BEHAVIOURS: &[(&str, Behaviour)] = &[
            $((stringify!($path), |table, strategy| Box::pin($path(table, strategy)))),*
        ];
    };
}

behaviours![
    basics::acquire_and_release,
    basics::try_lock_is_busy_while_held,
    basics::wait_times_out,
    basics::handoff_to_waiters,
    expiry::expiry_and_takeover,
    expiry::renew_extends_the_lease,
    expiry::expired_holder_cannot_release,
    admin::fencing_tokens_increase,
    admin::tokens_increase_while_purging,
    admin::purge_removes_expired_entries,
    admin::list_shows_holders,
];

/// The behaviour called `name` (its path in [`BEHAVIOURS`], such as `basics::wait_times_out`).
pub fn behaviour(name: &str) -> Behaviour {
    BEHAVIOURS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
        .unwrap_or_else(|| panic!("no conformance behaviour called {name}"))
}

/// Runs `behaviour` on `backend` for every strategy concurrently, each in its own table.
/// Returns without doing anything (after printing why) when the store is not configured;
/// panics naming every strategy that failed.
pub async fn run(backend: Backend, name: &str, behaviour: Behaviour) {
    let Some(target) = Target::from_env(backend) else {
        return;
    };
    let runs: Vec<_> = Strategy::ALL
        .into_iter()
        .map(|strategy| {
            let table = target.table();
            let label = format!("{backend} {name} {strategy} (table {})", table.name());
            (label, tokio::spawn(behaviour(table, strategy)))
        })
        .collect();
    let mut failures = Vec::new();
    for (label, task) in runs {
        let abort = task.abort_handle();
        match tokio::time::timeout(BEHAVIOUR_LIMIT, task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.is_panic() => {
                failures.push(format!(
                    "{label}: {}",
                    util::panic_message(&*e.into_panic())
                ));
            }
            Ok(Err(e)) => failures.push(format!("{label}: {e}")),
            Err(_) => {
                abort.abort();
                failures.push(format!(
                    "{label}: did not finish within {BEHAVIOUR_LIMIT:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Defines one test per behaviour of [`BEHAVIOURS`] for a store, in the current module:
///
/// ```ignore
/// mod postgres {
///     baton_tests::conformance_tests!(baton_tests::conformance::Backend::Postgres);
/// }
/// ```
///
/// Each test runs its behaviour for every strategy at once (see [`run`]); the tests need tokio
/// with the multi-threaded runtime.
#[macro_export]
macro_rules! conformance_tests {
    ($backend:expr) => {
        $crate::conformance_tests!(@each $backend;
            acquire_and_release = basics::acquire_and_release,
            try_lock_is_busy_while_held = basics::try_lock_is_busy_while_held,
            wait_times_out = basics::wait_times_out,
            handoff_to_waiters = basics::handoff_to_waiters,
            expiry_and_takeover = expiry::expiry_and_takeover,
            renew_extends_the_lease = expiry::renew_extends_the_lease,
            expired_holder_cannot_release = expiry::expired_holder_cannot_release,
            fencing_tokens_increase = admin::fencing_tokens_increase,
            tokens_increase_while_purging = admin::tokens_increase_while_purging,
            purge_removes_expired_entries = admin::purge_removes_expired_entries,
            list_shows_holders = admin::list_shows_holders,
        );
    };
    (@each $backend:expr; $($test:ident = $path:path,)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let name = stringify!($path).replace(' ', "");
                $crate::conformance::run($backend, &name, $crate::conformance::behaviour(&name)).await;
            }
        )*
    };
}
