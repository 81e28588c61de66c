//! Choosing a store by URL.

use std::sync::Arc;

use baton_kernel::{Error, ErrorKind, Result};

use crate::stores::memory::MemoryStore;
use crate::stores::store::Store;
use crate::stores::url_text::redact;

/// Opens the store a URL names.
///
/// | URL | store |
/// | --- | --- |
/// | `memory:` (or `memory://`) | a fresh [`MemoryStore`] (this process only) |
/// | `sqlite:///abs/path.db`, `sqlite://relative.db`, `sqlite::memory:` | a `SqlStore` on SQLite (feature `sqlite`, on by default) |
/// | `postgres://user:pass@host:port/db` | a `SqlStore` on PostgreSQL (feature `postgres`) |
/// | `mysql://user:pass@host:port/db` (or `mariadb://`) | a `SqlStore` on MariaDB 10.5+ (feature `mysql`) |
/// | `cassandra://host1,host2/keyspace` (or `scylla://`) | a `CassandraStore` (feature `cassandra`) |
///
/// SQL URLs take the query parameters `table=NAME`, `create=true|false`, `timeout=5s` and
/// `pool=N` (see `SqlOptions`); Cassandra URLs take `table`, `create`, `consistency`, `serial`,
/// `replication`, `timeout` and `connect_timeout` (see `CassandraOptions`). Opening never
/// connects.
///
/// Errors are [`ErrorKind::InvalidOption`] and name the URL (with any password masked): a
/// malformed URL, an unknown parameter or value, or a store not compiled into this build.
pub fn open_store(url: &str) -> Result<Arc<dyn Store>> {
    let shown = redact(url);
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err(malformed(
            &shown,
            "it has no scheme (such as memory: or postgres://)",
        ));
    };
    let valid_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return Err(malformed(
            &shown,
            "its scheme is not a word such as memory or postgres",
        ));
    }
    let scheme = scheme.to_ascii_lowercase();
    match scheme.as_str() {
        "memory" => {
            if !rest.is_empty() && rest != "//" {
                return Err(malformed(&shown, "a memory store URL is just memory:"));
            }
            Ok(Arc::new(MemoryStore::new()))
        }
        "sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb" => open_sql(url),
        "cassandra" | "scylla" => {
            if !rest.starts_with("//") || rest.len() <= 2 {
                return Err(malformed(
                    &shown,
                    &format!("a {scheme} URL looks like {scheme}://host1,host2/keyspace"),
                ));
            }
            open_cassandra(url)
        }
        other => Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "store URL {shown:?} has unknown scheme {other:?}; expected memory:, sqlite://, postgres://, mysql:// or cassandra://"
            ),
        )),
    }
}

#[cfg(feature = "cassandra")]
fn open_cassandra(url: &str) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(crate::stores::cassandra::CassandraStore::open(
        url,
    )?))
}

#[cfg(not(feature = "cassandra"))]
fn open_cassandra(url: &str) -> Result<Arc<dyn Store>> {
    Err(Error::new(
        ErrorKind::InvalidOption,
        format!(
            "store URL {:?} needs the Cassandra store, which is not built into this build of baton (enable the cargo feature \"cassandra\")",
            redact(url)
        ),
    ))
}

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
fn open_sql(url: &str) -> Result<Arc<dyn Store>> {
    Ok(Arc::new(crate::stores::sql::SqlStore::open(url)?))
}

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
fn open_sql(url: &str) -> Result<Arc<dyn Store>> {
    Err(Error::new(
        ErrorKind::InvalidOption,
        format!(
            "store URL {:?} needs a SQL store, and this build of baton includes none (enable the cargo feature \"sqlite\", \"postgres\" or \"mysql\")",
            redact(url)
        ),
    ))
}

fn malformed(shown: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOption,
        format!("malformed store URL {shown:?}: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_errors() {
        let e = open_store("postgres://app:s3cret@db1/locks?tabel=x").expect_err("unknown");
        assert!(!e.message().contains("s3cret"), "{e}");
        assert!(e.message().contains("db1"), "{e}");
    }

    #[test]
    fn memory_opens() {
        assert_eq!(
            open_store("memory:").map(|s| s.describe()),
            Ok(String::from("memory store"))
        );
        assert!(open_store("MEMORY://").is_ok());
    }
}
