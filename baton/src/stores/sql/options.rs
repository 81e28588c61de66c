//! [`SqlOptions`] and the store URLs that carry them.

use std::path::PathBuf;
use std::time::Duration;

use baton_kernel::{Error, ErrorKind, Result};

use super::dialect::{validate_table, Layout, DEFAULT_TABLE};
use crate::stores::url_text::{params, redact, redact_in};

/// How a SQL store uses its database.
///
/// ```
/// # use std::time::Duration;
/// let options = baton::SqlOptions::new()
///     .table("job_locks")
///     .create(false)
///     .timeout(Duration::from_secs(2));
/// assert_eq!(options.table, "job_locks");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqlOptions {
    /// The lock table (default `baton_locks`): `[A-Za-z_][A-Za-z0-9_]{0,62}`, used verbatim
    /// (quoted, so it is case-sensitive on PostgreSQL).
    pub table: String,
    /// Whether the first operation creates the table if it is missing (default true). When
    /// false, it checks the table and its columns and fails with the DDL to run.
    pub create: bool,
    /// The statement timeout (default 5 s), enforced by the server where it has one
    /// (PostgreSQL `statement_timeout`, MariaDB `max_statement_time`; SQLite's busy timeout),
    /// with a client-side timeout 1 s longer, so that a statement the server has *started* and
    /// baton gave up on has been rolled back by then. That holds only once the server started
    /// it: a statement still queued before the server (in a connection pooler such as
    /// PgBouncer, or unread in a socket buffer) can start, and apply, after baton gave up. The
    /// write stamps make that harmless: a late put or delete never undoes a later write of the
    /// same owner (see the [module docs](crate::stores::sql)). Also bounds the wait for a pooled connection,
    /// opening it included (per attempt).
    pub timeout: Duration,
    /// The most pooled connections (default 10; always 1 for `sqlite::memory:`).
    pub pool: Option<u32>,
    /// The layout of a table this store creates (default [`Layout::for_new_table`]: one row).
    /// An existing table keeps its own, whatever this says. A one-row table must not be shared with
    /// versions of baton before it, which read only two-row tables: [`Layout::TwoRows`] makes
    /// a table they can share (docs/sql-store.md, "The lock table").
    pub layout: Option<Layout>,
    /// A file holding the password (PostgreSQL, MariaDB), read when the store is opened: its
    /// whole content but for one trailing newline. Used when the URL has no password (the
    /// order of the sources: docs/sql-store.md, "TLS and passwords").
    pub password_file: Option<PathBuf>,
}

impl Default for SqlOptions {
    fn default() -> Self {
        SqlOptions {
            table: String::from(DEFAULT_TABLE),
            create: true,
            timeout: Duration::from_secs(5),
            pool: None,
            layout: None,
            password_file: None,
        }
    }
}

impl SqlOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The lock table.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Whether to create the table on first use.
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }

    /// The statement timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most pooled connections.
    pub fn pool(mut self, connections: u32) -> Self {
        self.pool = Some(connections);
        self
    }

    /// The layout of a table this store creates.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// The file the password is read from (see [`SqlOptions::password_file`]).
    pub fn password_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.password_file = Some(path.into());
        self
    }

    /// Checks every option ([`ErrorKind::InvalidOption`] naming the first bad one).
    pub fn validate(&self) -> Result<()> {
        validate_table(&self.table)?;
        if self.timeout < Duration::from_millis(1) || self.timeout > Duration::from_secs(3600) {
            return Err(invalid(format!(
                "SQL statement timeout {:?} is out of range (1 ms to 1 h)",
                self.timeout
            )));
        }
        if let Some(n) = self.pool {
            if !(1..=1000).contains(&n) {
                return Err(invalid(format!(
                    "SQL pool size {n} is out of range (1 to 1000)"
                )));
            }
        }
        Ok(())
    }
}

/// The database a URL names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A SQLite file.
    SqliteFile(PathBuf),
    /// A private in-memory SQLite database.
    SqliteMemory,
    /// A PostgreSQL URL without baton's parameters.
    Postgres(String),
    /// A MariaDB/MySQL URL (scheme `mysql`) without baton's parameters.
    MySql(String),
}

/// Splits a SQL store URL into its database and options. Errors are
/// [`ErrorKind::InvalidOption`], naming the URL with its password masked.
pub(crate) fn parse(url: &str) -> Result<(Target, SqlOptions)> {
    let shown = redact(url);
    let bad = |why: &str| {
        let why = redact_in(url, why);
        invalid(format!("malformed store URL {shown:?}: {why}"))
    };
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let (scheme, rest) = base
        .split_once(':')
        .ok_or_else(|| bad("it has no scheme"))?;
    let target = match scheme.to_ascii_lowercase().as_str() {
        "sqlite" => {
            if rest == ":memory:" || rest == "//:memory:" {
                Target::SqliteMemory
            } else {
                match rest.strip_prefix("//") {
                    Some(path) if !path.is_empty() => Target::SqliteFile(PathBuf::from(path)),
                    _ => {
                        return Err(bad(
                            "a SQLite URL is sqlite:///absolute/path.db, sqlite://relative/path.db or sqlite::memory:",
                        ))
                    }
                }
            }
        }
        "postgres" | "postgresql" => Target::Postgres(network_base(rest, "postgres", &bad)?),
        "mysql" | "mariadb" => Target::MySql(network_base(rest, "mysql", &bad)?),
        other => return Err(bad(&format!("{other:?} is not a SQL store scheme"))),
    };
    let mut options = SqlOptions::default();
    // TLS parameters go on to the driver, which reads them as libpq and MariaDB's clients do.
    let mut tls = Vec::new();
    let network = !matches!(target, Target::SqliteFile(_) | Target::SqliteMemory);
    for (key, value) in params::pairs(query) {
        match key {
            key if tls_keys(&target).is_some_and(|(keys, _)| keys.contains(&key)) => {
                let (keys, modes) = tls_keys(&target).unwrap_or((&[], &[]));
                // The first key names the mode; MariaDB's are case-insensitive.
                if key == keys[0]
                    && !modes.contains(&value.to_ascii_uppercase().as_str())
                    && !modes.contains(&value)
                {
                    return Err(bad(&format!(
                        "{key}={value:?} is not one of {}",
                        modes.join(", ")
                    )));
                }
                tls.push(format!("{key}={value}"));
            }
            "password_file" if network => {
                options.password_file = Some(PathBuf::from(params::percent_decode(value)))
            }
            "table" => options.table = value.to_owned(),
            "create" => options.create = params::flag(key, value).map_err(|why| bad(&why))?,
            "timeout" => options.timeout = params::duration(key, value).map_err(|why| bad(&why))?,
            "pool" => {
                options.pool =
                    Some(value.parse().map_err(|_| {
                        bad(&format!("pool={value:?} is not a number of connections"))
                    })?)
            }
            "layout" => {
                options.layout = Some(Layout::parse(value).ok_or_else(|| {
                    bad(&format!(
                        "layout={value:?} is not a table layout (one-row or two-rows)"
                    ))
                })?)
            }
            other => {
                let tls_words = match target {
                    Target::Postgres(_) => {
                        ", password_file, sslmode, sslrootcert, sslcert and sslkey"
                    }
                    Target::MySql(_) => ", password_file, ssl-mode, ssl-ca, ssl-cert and ssl-key",
                    Target::SqliteFile(_) | Target::SqliteMemory => "",
                };
                return Err(bad(&format!(
                    "unknown parameter {other:?} (this SQL store URL takes table, create, timeout, pool, layout{tls_words})"
                )));
            }
        }
    }
    let target = match target {
        Target::Postgres(base) => Target::Postgres(with_params(base, &tls)),
        Target::MySql(base) => Target::MySql(with_params(base, &tls)),
        sqlite => sqlite,
    };
    options
        .validate()
        .map_err(|e| invalid(format!("store URL {shown:?}: {}", e.message())))?;
    Ok((target, options))
}

/// libpq's `sslmode` values (the default, as libpq's, is `prefer`: TLS when the server offers
/// it, unchecked).
const POSTGRES_SSL_MODES: [&str; 6] = [
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

/// MariaDB's and MySQL's clients' `ssl-mode` values (case does not matter; the default is
/// `PREFERRED`: TLS when the server offers it, unchecked).
const MYSQL_SSL_MODES: [&str; 5] = [
    "DISABLED",
    "PREFERRED",
    "REQUIRED",
    "VERIFY_CA",
    "VERIFY_IDENTITY",
];

/// The TLS parameters a network URL passes to its driver (the mode's first), and the mode's
/// values; `None` for SQLite.
fn tls_keys(target: &Target) -> Option<(&'static [&'static str], &'static [&'static str])> {
    match target {
        Target::Postgres(_) => Some((
            &["sslmode", "sslrootcert", "sslcert", "sslkey"],
            &POSTGRES_SSL_MODES,
        )),
        Target::MySql(_) => Some((
            &["ssl-mode", "ssl-ca", "ssl-cert", "ssl-key"],
            &MYSQL_SSL_MODES,
        )),
        Target::SqliteFile(_) | Target::SqliteMemory => None,
    }
}

/// `base` with `params` as its query.
fn with_params(base: String, params: &[String]) -> String {
    if params.is_empty() {
        base
    } else {
        format!("{base}?{}", params.join("&"))
    }
}

/// `scheme://rest` for sqlx, after checking there is a host.
fn network_base(rest: &str, scheme: &str, bad: &dyn Fn(&str) -> Error) -> Result<String> {
    match rest.strip_prefix("//") {
        Some(tail) if !tail.is_empty() => Ok(format!("{scheme}://{tail}")),
        _ => Err(bad(&format!(
            "a {scheme} URL looks like {scheme}://user:password@host:port/database"
        ))),
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidOption, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls() {
        let file = |u: &str| parse(u).map(|(t, _)| t);
        assert_eq!(
            file("sqlite:///var/lib/app/locks.db"),
            Ok(Target::SqliteFile("/var/lib/app/locks.db".into()))
        );
        assert_eq!(
            file("sqlite://locks.db"),
            Ok(Target::SqliteFile("locks.db".into()))
        );
        assert_eq!(file("sqlite::memory:"), Ok(Target::SqliteMemory));
        assert!(file("sqlite://").is_err());
        assert!(file("sqlite:locks.db").is_err());
    }

    #[test]
    fn tls_parameters_go_to_the_driver_and_modes_are_checked() {
        let (t, _) = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem&table=t")
            .expect("valid");
        assert_eq!(
            t,
            Target::Postgres("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem".into())
        );
        let (t, _) = parse("mysql://u@h/db?ssl-mode=verify_identity").expect("valid");
        assert_eq!(
            t,
            Target::MySql("mysql://u@h/db?ssl-mode=verify_identity".into())
        );
        for bad in [
            "postgres://u@h/db?sslmode=VERIFY-FULL",
            "postgres://u@h/db?ssl-mode=REQUIRED",
            "mysql://u@h/db?ssl-mode=verify-full",
            "mysql://u@h/db?sslmode=require",
            "sqlite::memory:?sslmode=require",
        ] {
            assert_eq!(
                parse(bad).expect_err(bad).kind(),
                ErrorKind::InvalidOption,
                "{bad}"
            );
        }
    }

    #[test]
    fn parameters() {
        let (target, o) =
            parse("postgres://app:s3cret@db1:5432/locks?table=job_locks&create=false&timeout=250ms&pool=3")
                .expect("valid");
        assert_eq!(
            target,
            Target::Postgres("postgres://app:s3cret@db1:5432/locks".into())
        );
        assert_eq!(
            o,
            SqlOptions::new()
                .table("job_locks")
                .create(false)
                .timeout(Duration::from_millis(250))
                .pool(3)
        );
        let (_, o) = parse("postgres://h/db?layout=two-rows").expect("valid");
        assert_eq!(o.layout, Some(Layout::TwoRows));
        let (target, o) = parse("mariadb://u@h/db?timeout=2").expect("valid");
        assert_eq!(target, Target::MySql("mysql://u@h/db".into()));
        assert_eq!(o.timeout, Duration::from_secs(2));
    }

    #[test]
    fn bad_parameters_are_invalid_options_without_passwords() {
        for url in [
            "postgres://app:s3cret@db1/locks?tabel=x",
            "postgres://app:s3cret@db1/locks?table=x-y",
            "postgres://app:s3cret@db1/locks?create=maybe",
            "postgres://app:s3cret@db1/locks?timeout=5h",
            "postgres://app:s3cret@db1/locks?timeout=0s",
            "postgres://app:s3cret@db1/locks?pool=0",
            "postgres://app:s3cret@db1/locks?pool=x",
            "postgres://app:s3cret@db1/locks?layout=one_row",
            "postgres://",
        ] {
            let e = parse(url).expect_err(url);
            assert_eq!(e.kind(), ErrorKind::InvalidOption, "{url}");
            assert!(!e.message().contains("s3cret"), "{e}");
        }
        let e = parse("mysql://u:p@h/db?tabel=x").expect_err("unknown");
        assert!(e.message().contains("\"tabel\""), "{e}");
    }
}
