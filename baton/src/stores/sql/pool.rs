//! [`SqlPool`]: the connection pool of a SQL store, configured per database.

use baton_kernel::{Error, ErrorKind, Result};

use super::dialect::Dialect;
use super::options::{SqlOptions, Target};
use crate::stores::url_text::redact;

/// The connection pool of a [`SqlStore`](super::SqlStore): begin transactions on it to take
/// and release locks inside them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SqlPool {
    /// SQLite.
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqlitePool),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    /// MariaDB.
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
}

#[cfg(feature = "sqlite")]
impl From<sqlx::SqlitePool> for SqlPool {
    fn from(pool: sqlx::SqlitePool) -> Self {
        SqlPool::Sqlite(pool)
    }
}

#[cfg(feature = "postgres")]
impl From<sqlx::PgPool> for SqlPool {
    fn from(pool: sqlx::PgPool) -> Self {
        SqlPool::Postgres(pool)
    }
}

#[cfg(feature = "mysql")]
impl From<sqlx::MySqlPool> for SqlPool {
    fn from(pool: sqlx::MySqlPool) -> Self {
        SqlPool::MySql(pool)
    }
}

impl SqlPool {
    /// The database.
    pub fn dialect(&self) -> Dialect {
        match self {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            SqlPool::MySql(_) => Dialect::MySql,
        }
    }

    /// The SQLite pool, if it is one.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(&self) -> Option<&sqlx::SqlitePool> {
        #[allow(unreachable_patterns)]
        match self {
            SqlPool::Sqlite(p) => Some(p),
            _ => None,
        }
    }

    /// The PostgreSQL pool, if it is one.
    #[cfg(feature = "postgres")]
    pub fn postgres(&self) -> Option<&sqlx::PgPool> {
        #[allow(unreachable_patterns)]
        match self {
            SqlPool::Postgres(p) => Some(p),
            _ => None,
        }
    }

    /// The MariaDB pool, if it is one.
    #[cfg(feature = "mysql")]
    pub fn mysql(&self) -> Option<&sqlx::MySqlPool> {
        #[allow(unreachable_patterns)]
        match self {
            SqlPool::MySql(p) => Some(p),
            _ => None,
        }
    }

    /// The most connections the pool opens.
    pub(crate) fn max_connections(&self) -> u32 {
        match self {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => p.options().get_max_connections(),
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => p.options().get_max_connections(),
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => p.options().get_max_connections(),
        }
    }

    /// Where the pool connects, for messages (never with a password).
    pub(crate) fn describe(&self) -> String {
        match self {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => {
                let o = p.connect_options();
                let file = o.get_filename().display().to_string();
                if file.is_empty() || file.contains(":memory:") || file.contains("mode=memory") {
                    String::from("sqlite in memory")
                } else {
                    format!("sqlite at {file}")
                }
            }
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => {
                let o = p.connect_options();
                let db = o.get_database().unwrap_or_default().to_owned();
                format!("postgres at {}:{}/{db}", o.get_host(), o.get_port())
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => {
                let o = p.connect_options();
                let db = o.get_database().unwrap_or_default().to_owned();
                format!("mysql at {}:{}/{db}", o.get_host(), o.get_port())
            }
        }
    }
}

/// The password to connect with when the URL `base` has none: from
/// [`SqlOptions::password_file`], or with `env`, from `BATON_STORE_PASSWORD` (PostgreSQL's own
/// `PGPASSWORD`, `PGPASSFILE` and `~/.pgpass` are read by the driver). A URL with a password
/// and a password file is refused: the password is given once.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn password(base: &str, options: &SqlOptions, env: bool) -> Result<Option<String>> {
    let in_url = crate::stores::url_text::has_password(base);
    match &options.password_file {
        Some(_) if in_url => Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "store URL {:?} has a password and password_file= names another: give it once",
                redact(base)
            ),
        )),
        Some(path) => crate::stores::credentials::password_from_file(path).map(Some),
        None if in_url || !env => Ok(None),
        None => Ok(crate::stores::credentials::password_from_env()),
    }
}

/// A pool for `target` that opens no connection until first used, and needs no runtime until
/// then: it has no idle timeout or maximum lifetime (those would start background tasks).
/// Connections handed out for callers' transactions are pinged before use, so a dead one is
/// replaced rather than failing the caller's statement; the store's own statements run on
/// connections it detached from the pool, which are never pinged (see `detached`).
pub(crate) fn connect_lazy(target: &Target, options: &SqlOptions, url: &str) -> Result<SqlPool> {
    let not_built = |feature: &str| {
        Error::new(
            ErrorKind::InvalidOption,
            format!(
                "store URL {:?} needs the {feature} store, which this build of baton does not include (enable the cargo feature \"{feature}\")",
                redact(url)
            ),
        )
    };
    // The wait for a pooled connection, per attempt, opening it included: the store's timeout.
    // A shorter cap (2 s, before) failed statements that opening a PostgreSQL connection took
    // longer than (0.4 to 3.5 s measured on a loaded 2-core machine, TLS included).
    let timeout = options.timeout;
    let wait = timeout;
    let size = options.pool.unwrap_or(10);
    macro_rules! pool_options {
        ($db:ty) => {
            sqlx::pool::PoolOptions::<$db>::new()
                .max_connections(size)
                .min_connections(0)
                .acquire_timeout(wait)
                .idle_timeout(None)
                .max_lifetime(None)
                .test_before_acquire(true)
        };
    }
    match target {
        #[cfg(feature = "sqlite")]
        Target::SqliteFile(path) => {
            use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
            // What `baton_statements::sql::session_setup` says, as sqlx options. synchronous=FULL,
            // not WAL's usual NORMAL: NORMAL may lose the last commits on a power loss or OS
            // crash (they are in the WAL but not yet on disk), and a lost commit can take a
            // fencing counter back to a token already handed out, or forget a granted lock.
            // FULL syncs the WAL at every commit.
            let connect = SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(timeout);
            Ok(SqlPool::Sqlite(
                pool_options!(sqlx::Sqlite).connect_lazy_with(connect),
            ))
        }
        #[cfg(feature = "sqlite")]
        Target::SqliteMemory => {
            // One connection: the database lives as long as it does, which is as long as the
            // pool (no idle timeout, no maximum lifetime).
            let connect = sqlx::sqlite::SqliteConnectOptions::new()
                .in_memory(true)
                .busy_timeout(timeout);
            Ok(SqlPool::Sqlite(
                pool_options!(sqlx::Sqlite)
                    .max_connections(1)
                    .acquire_timeout(timeout)
                    .connect_lazy_with(connect),
            ))
        }
        #[cfg(feature = "postgres")]
        Target::Postgres(base) => {
            let connect: sqlx::postgres::PgConnectOptions =
                base.parse().map_err(|e: sqlx::Error| malformed(url, &e))?;
            let connect = match password(base, options, false)? {
                Some(password) => connect.password(&password),
                None => connect,
            };
            // What `baton_statements::sql::session_setup` says, as a connection option.
            let ms = timeout.as_millis().to_string();
            let connect = connect
                .application_name("baton")
                .options([("statement_timeout", ms.as_str())]);
            Ok(SqlPool::Postgres(
                pool_options!(sqlx::Postgres).connect_lazy_with(connect),
            ))
        }
        #[cfg(feature = "mysql")]
        Target::MySql(base) => {
            let connect: sqlx::mysql::MySqlConnectOptions =
                base.parse().map_err(|e: sqlx::Error| malformed(url, &e))?;
            let connect = match password(base, options, true)? {
                Some(password) => connect.password(&password),
                None => connect,
            };
            // The server aborts (and rolls back) a statement after the timeout; lock waits
            // give up at the same time.
            let setup = baton_statements::sql::session_setup(Dialect::MySql, timeout);
            let pool = pool_options!(sqlx::MySql)
                .after_connect(move |conn, _| {
                    let setup = setup.clone();
                    Box::pin(async move {
                        for statement in setup {
                            sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                                .execute(&mut *conn)
                                .await?;
                        }
                        Ok(())
                    })
                })
                .connect_lazy_with(connect);
            Ok(SqlPool::MySql(pool))
        }
        #[allow(unreachable_patterns)]
        Target::SqliteFile(_) | Target::SqliteMemory => Err(not_built("sqlite")),
        #[allow(unreachable_patterns)]
        Target::Postgres(_) => Err(not_built("postgres")),
        #[allow(unreachable_patterns)]
        Target::MySql(_) => Err(not_built("mysql")),
    }
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use crate::stores::sql::options::parse;

    fn describe(url: &str) -> String {
        let (target, options) = parse(url).expect("valid");
        connect_lazy(&target, &options, url)
            .expect("sqlite is built")
            .describe()
    }

    #[test]
    fn pools_describe_where_they_connect_without_a_runtime() {
        assert_eq!(describe("sqlite::memory:"), "sqlite in memory");
        assert_eq!(
            describe("sqlite:///var/lib/app/locks.db"),
            "sqlite at /var/lib/app/locks.db"
        );
    }
}

/// sqlx's refusal of `url`, as the store's error: the URL and sqlx's reason, its password
/// masked in both.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn malformed(url: &str, e: &sqlx::Error) -> Error {
    Error::new(
        ErrorKind::InvalidOption,
        format!(
            "malformed store URL {:?}: {}",
            redact(url),
            crate::stores::url_text::redact_in(url, &e.to_string())
        ),
    )
}
