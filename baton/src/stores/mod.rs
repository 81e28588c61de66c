//! The stores that execute the kernel's commands: the [`Store`](crate::Store) trait, the
//! in-process [`memory`] store, the SQL stores (SQLite, PostgreSQL, MariaDB) and the Cassandra
//! store, and the choice of one by URL.

#[cfg(feature = "cassandra")]
pub mod cassandra;
#[cfg(any(
    feature = "sqlite",
    feature = "postgres",
    feature = "mysql",
    feature = "cassandra"
))]
pub mod credentials;
pub mod memory;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub mod sql;
#[cfg(any(
    feature = "sqlite",
    feature = "postgres",
    feature = "mysql",
    feature = "cassandra"
))]
pub(crate) mod stamps;
pub mod store;
pub(crate) mod url;
pub(crate) mod url_text;
