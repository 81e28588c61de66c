//! The SQL stores against real databases: SQLite always (a file per test), PostgreSQL when
//! `BATON_POSTGRES_URL` is set, MariaDB when `BATON_MYSQL_URL` is set (`scripts/postgres url`,
//! `scripts/mariadb url`). Each test uses a table of its own. With `BATON_REQUIRE_SERVICES=1`,
//! a missing URL fails the tests instead of skipping them.

#![cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]

mod claim_scripts;
#[path = "../shared/claims.rs"]
mod claims;
mod commands;
mod common;
#[cfg(feature = "postgres")]
mod durability;
mod locks;
#[cfg(feature = "mysql")]
mod mariadb;
#[cfg(all(feature = "postgres", feature = "mysql", feature = "sqlite"))]
mod migrate;
#[cfg(feature = "postgres")]
mod notify;
#[path = "../shared/objects.rs"]
mod object_scripts;
mod objects;
#[cfg(feature = "postgres")]
mod one_row;
#[cfg(feature = "sqlite")]
mod process;
mod schema;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod stalled;
#[cfg(all(feature = "postgres", feature = "mysql"))]
mod tls;
#[cfg(all(feature = "postgres", feature = "mysql"))]
#[path = "../shared/tls_support.rs"]
mod tls_support;
mod tx;
