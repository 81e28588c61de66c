//! The library's integration tests on every store, one module per subject, in one test binary
//! (see `Cargo.toml`). Run one subject with `cargo test -p baton --test library strategies::`.

mod common;

mod blocking;
mod cancellation;
mod cassandra;
mod cassandra_tls;
mod future_size;
mod list;
mod modes;
mod objects;
mod row_data;
mod silent_store;
mod store_failures;
mod strategies;
mod validation;
