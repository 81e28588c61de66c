//! Tests of baton that span crates: the deterministic simulator (this crate's library, so the
//! `simulate` command and `cargo test` share it), and the suites under `tests/`.
//!
//! The simulator runs many clients against a simulated store on a simulated clock, with
//! injected faults, and checks every run for two safety properties and one liveness property:
//! - no two clients ever believe they hold the same lock at the same instant (each client's
//!   belief ends at its lease deadline, as measured by its own drifting clock);
//! - fencing tokens strictly increase in the order grants are delivered;
//! - objects (on half the seeds): versions strictly increase, no update is lost, every locked
//!   write applied while its writer's lease held the lock in the store and nobody else believed
//!   it held it, and every acknowledged increment applied exactly once (`sim::objects`);
//! - with no faults, every client acquires every time it asks.
//!
//! Every run is a pure function of its seed: a failure prints the command that replays it.

#![forbid(unsafe_code)]

pub mod chaos;
pub mod conformance;
pub mod contention;
pub mod multiproc;
pub mod sim;
pub mod wire;
