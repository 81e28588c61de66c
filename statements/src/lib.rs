//! # baton-statements
//!
//! What baton's stores run, as data, driver-free, so that every host runs the same thing and a
//! table written by one is read correctly by every other:
//!
//! - [`sql`]: each SQL dialect's statements and lock table, and [`sql::Operation`], one kernel
//!   command's exchange with the table (which statement, which parameters, what the rows mean);
//!   [`sql::failure`] classifies a driver's error; [`sql::SchemaCheck`] decides what to do with
//!   an existing table.
//! - [`cql`]: the same for Cassandra: the CQL, the keyspace and table, [`cql::Operation`] with
//!   each statement's consistency, and [`cql::failure`].
//!
//! An operation is sans-IO, in the shape of the kernel's: the host asks it for a step, runs the
//! statement with its own driver, and feeds back what the database said, until it answers with
//! the command's reply. The native stores run the steps through sqlx and scylla; a host without
//! them (WebAssembly in Node, where JavaScript does the I/O) runs the same steps.
//!
//! ```
//! use baton_kernel::{Command, Consistency, Reply};
//! use baton_statements::sql::{Dialect, Done, Operation, Statement, Statements, Step};
//!
//! let statements = Statements::new(Dialect::Postgres, "baton_locks")?;
//! let put = Command::Put {
//!     row: "job".into(),
//!     column: "owner".into(),
//!     value: "me".into(),
//!     ttl: None,
//!     consistency: Consistency::Quorum,
//! };
//! let mut op = Operation::new(Dialect::Postgres, &put, |floor| floor + 1).expect("a SQL command");
//! let Step::Execute { statement, params } = op.step() else { unreachable!() };
//! assert_eq!(statement, Statement::Put);
//! assert!(statements.get(statement).starts_with("INSERT INTO \"baton_locks\""));
//! assert_eq!(params.len(), 5); // (row, cell, value, ttl_ms, stamp)
//! op.executed(Done { rows: 1, insert_id: 0 }); // what the driver reported
//! assert_eq!(op.step(), Step::Reply(Reply::Written));
//! # Ok::<(), baton_kernel::Error>(())
//! ```
//!
//! `no_std` + `alloc`; builds for `wasm32-unknown-unknown`.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod statement_list;

pub mod cql;
pub mod sql;

/// The message of a statement given up by its host after `after` with no answer (kind
/// `ClientTimeout` in [`sql::DriverError`] and [`cql::DriverError`]): every host words it so.
pub fn no_answer_within(after: core::time::Duration) -> alloc::string::String {
    alloc::format!(
        "no answer from the store within {} ms (the statement may still be applied)",
        after.as_millis()
    )
}

/// What a statement does, as a host tells its driver or adapter with the statement's name
/// (`sql::Statement::name`, `cql::Statement::name`): a wrapper around a driver (a test's
/// delaying adapter, a tracer, a metrics hook) recognises a write by this, never by the
/// statement's text, which differs between dialects, table layouts and versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads the lock table and changes nothing.
    Read,
    /// May change the lock table's rows (a claim that does not apply still counts: it was
    /// sent to write).
    Write,
    /// Reads or changes the schema: the catalog, the keyspace, the table, its routines and
    /// layout flag, before any lock statement runs.
    Schema,
}

impl Access {
    /// The name a host gives adapters and logs: `"read"`, `"write"` or `"schema"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Schema => "schema",
        }
    }
}

/// The largest object value (in bytes, before its base64 encoding) a store's lock table takes
/// (see [`baton_kernel::object`]): [`baton_kernel::MAX_OBJECT_BYTES`] (1 MiB) everywhere but
/// MariaDB, whose `value` column is a `TEXT` of 65 535 bytes: 48 000 bytes of value, whose base64
/// and the cell's version and writer fit in it. A larger value is refused before it is sent.
pub fn object_limit(sql_dialect: Option<sql::Dialect>) -> usize {
    match sql_dialect {
        Some(sql::Dialect::MySql) => 48_000,
        _ => baton_kernel::MAX_OBJECT_BYTES,
    }
}
