//! # baton-wasm
//!
//! baton's WebAssembly binding. The lock's whole life is decided here, in Rust, by the same
//! kernel ([`baton_kernel::LockLife`] and the strategies) and the same statement layer
//! ([`baton_statements`]) as the native library; JavaScript only does I/O, with the database
//! client its user already has, and adapts the results to its idioms (the `baton-locks` npm
//! package in `js/`).
//!
//! - [`CoreLocker`]: a store and defaults; starts [`Acquisition`]s, runs the operators' calls.
//! - [`CoreLock`]: a held lock; its renewals run on the host's timers, as the machine decides.
//! - [`MemoryStore`]: the kernel's reference table inside the module.
//! - A SQL or CQL *adapter*: a JavaScript object that runs the statements this module gives it
//!   (contracts in `store::sql` and `store::cql`, and in the package's README).
//!
//! Errors cross as plain objects with the kernel's stable codes (`errors`). Only globals that
//! every JavaScript runtime has are used: the module runs in Node, Deno, Bun, browsers and
//! workers alike.

#![forbid(unsafe_code)]

mod errors;
mod js;
mod life;
mod locker;
mod object;
mod options;
mod slots;
mod store;
mod wake;

pub use locker::{Acquisition, AllAcquisition, CoreLock, CoreLocker, CoreSemaphore};
pub use store::memory::MemoryStore;

use wasm_bindgen::prelude::*;

/// The package's version (the crate's).
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
