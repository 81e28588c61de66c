//! Bad inputs and bad luck: invalid names and options, edge-case waits, misuse of leases
//! (renewing late, releasing twice, releasing a lock someone else holds), broken stores (dead,
//! rejecting, timing out), and the operator commands (inspect, purge, forced release).
//!
//! Tests marked `#[ignore = "kernel bug: ..."]` show a behaviour that contradicts the kernel's
//! own docs; each says which doc and what happens instead. Run them with
//! `cargo test -p baton-kernel --test kernel bad_input:: -- --ignored`.

mod broken_stores;
mod helpers;
mod misuse;
mod names;
mod operator;
mod waits;

/// What every module of this test uses.
pub(crate) mod prelude {
    pub(crate) use std::time::Duration;

    pub(crate) use baton_kernel::{
        Acquire, ColumnFilter, Command, Consistency, EntryState, Error, ErrorKind, ForceRelease,
        Grant, Inspect, LockName, LockOptions, Purge, Release, Renew, RetryPolicy, Strategy, Wait,
        Write,
    };

    pub(crate) use super::helpers::*;
    pub(crate) use crate::support::*;
}
