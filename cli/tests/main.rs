//! The `baton` command's tests, run as a user runs it (a process per invocation), one module per
//! subject in one test binary (see `Cargo.toml`). One subject: `cargo test -p baton-cli --test
//! cli run::`.

mod common;

mod args;
mod demo;
mod locks;
mod migrate;
mod min_lease;
mod objects;
mod run;
mod stores;
