//! # baton-statements
//!
//! The statements baton's stores run, as data, driver-free: each SQL dialect's text and each
//! lock table's schema, and the CQL of the Cassandra store, built once per store. No I/O, no driver types: the native stores turn
//! the text into sqlx statements, and a host without them (WebAssembly in Node, where
//! JavaScript does the I/O) runs the same text, so a table written by one host is read
//! correctly by every other. `no_std` + `alloc`; builds for `wasm32-unknown-unknown`.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod cql;
pub mod sql;
