//! The kernel's integration tests, one module per subject, in one test binary (see
//! `Cargo.toml`). Run one subject with `cargo test -p baton-kernel --test kernel transcripts::`.

mod support;

mod bad_input;
mod cleanup;
mod courtesy;
mod late_delivery;
mod life;
mod list_locks;
mod modes;
mod objects;
mod paths;
mod properties;
mod transcripts;
