//! Which databases the tests run on, fresh tables, and raw SQL for setting up odd schemas.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton::sqlx::{self, AssertSqlSafe};
use baton::{SqlPool, SqlStore};

/// A database the tests run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
    MySql,
    /// PostgreSQL as the TLS-only user: `sslmode=verify-full`, the password from a file.
    PostgresTls,
    /// MariaDB as the TLS-only user: `ssl-mode=VERIFY_IDENTITY`, the password from a file.
    MySqlTls,
}

impl Db {
    /// The environment variable naming the server, for the network databases.
    fn env(self) -> Option<&'static str> {
        match self {
            Db::Sqlite => None,
            Db::Postgres => Some("BATON_POSTGRES_URL"),
            Db::MySql => Some("BATON_MYSQL_URL"),
            Db::PostgresTls => Some("BATON_POSTGRES_TLS_URL"),
            Db::MySqlTls => Some("BATON_MYSQL_TLS_URL"),
        }
    }

    fn built(self) -> bool {
        match self {
            Db::Sqlite => cfg!(feature = "sqlite"),
            Db::Postgres | Db::PostgresTls => cfg!(feature = "postgres"),
            Db::MySql | Db::MySqlTls => cfg!(feature = "mysql"),
        }
    }
}

/// How long a test with a short time limit of its own waits for a store to serve it at all:
/// opening a connection (a PostgreSQL backend, a TLS handshake) took up to 3.5 s on the slow
/// 2-core machines the suite runs on, more than a 1 s limit lets one attempt wait for it.
pub const REACHABLE_WITHIN: Duration = Duration::from_secs(60);

/// `attempt()` again while `unreachable` says its result is the store's not being reached yet,
/// until it gives anything else or [`REACHABLE_WITHIN`] has passed: its last result.
pub async fn retry_while<T, F, Fut>(mut attempt: F, unreachable: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    let deadline = Instant::now() + REACHABLE_WITHIN;
    loop {
        let result = attempt().await;
        if !unreachable(&result) || Instant::now() >= deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`retry_while`] the attempt fails as [`baton::ErrorKind::StoreUnavailable`] (no connection
/// in time).
pub async fn while_unavailable<T, F, Fut>(attempt: F) -> Result<T, baton::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, baton::Error>>,
{
    retry_while(attempt, |result: &Result<T, baton::Error>| {
        matches!(result, Err(e) if e.kind() == baton::ErrorKind::StoreUnavailable)
    })
    .await
}

/// 64 random bits.
pub fn random() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// A fresh table name.
pub fn table() -> String {
    format!("t_{:012x}", random() & 0xffff_ffff_ffff)
}

/// A fresh SQLite file, in Cargo's temporary directory for tests (`target/tmp`, which
/// `cargo clean` removes) rather than the system's. The tests do not remove their files (a
/// failing test's file is worth a look), so the first call of each test process removes those
/// left there more than an hour ago.
pub fn sqlite_file() -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.call_once(|| sweep(&dir, std::time::Duration::from_secs(3600)));
    dir.join(format!("{SQLITE_PREFIX}{:016x}.db", random()))
}

/// The name every test's SQLite file starts with.
const SQLITE_PREFIX: &str = "baton-sql-test-";

/// Removes the test SQLite files in `dir` (and their `-wal` and `-shm`) not modified for `age`.
fn sweep(dir: &std::path::Path, age: std::time::Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|elapsed| elapsed > age);
        if old
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with(SQLITE_PREFIX)
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The database's URL without parameters, or `None` (after saying why) when the test must be
/// skipped: the store is not compiled in, or the server's variable is unset. With
/// `BATON_REQUIRE_SERVICES=1` an unset variable fails the test instead.
pub fn base_url(db: Db) -> Option<String> {
    if !db.built() {
        println!("skipped: the {db:?} store is not compiled in");
        return None;
    }
    let Some(var) = db.env() else {
        return Some(format!("sqlite://{}", sqlite_file().display()));
    };
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("BATON_REQUIRE_SERVICES").as_deref() != Ok("1"),
                "BATON_REQUIRE_SERVICES=1 but {var} is unset"
            );
            println!("skipped: set {var} to run the {db:?} tests");
            None
        }
    }
}

/// The database's URL with a fresh table (`table=t_…`), or `None` to skip.
pub fn url(db: Db) -> Option<String> {
    base_url(db).map(|base| with_param(&base, &format!("table={}", table())))
}

/// The URL parameter that makes a store create a table of `layout`.
pub fn layout_param(layout: baton::sql::Layout) -> &'static str {
    match layout {
        baton::sql::Layout::OneRow => "layout=one-row",
        baton::sql::Layout::TwoRows => "layout=two-rows",
    }
}

/// `url` with one more query parameter.
pub fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// Runs `sql` (no parameters) on the store's database, for setting up schemas by hand.
pub async fn exec_raw(store: &SqlStore, sql: &str) -> Result<(), sqlx::Error> {
    let sql = AssertSqlSafe(sql.to_owned());
    match store.pool() {
        #[cfg(feature = "sqlite")]
        SqlPool::Sqlite(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
        #[cfg(feature = "postgres")]
        SqlPool::Postgres(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
        #[cfg(feature = "mysql")]
        SqlPool::MySql(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
        _ => unreachable!("a pool of a store this build has"),
    }
}

/// Drops the test's table (or deletes its SQLite file); best effort.
pub async fn drop_table(url: &str) {
    if let Some(path) = url.strip_prefix("sqlite://") {
        let path = path.split('?').next().unwrap_or_default();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
        return;
    }
    let Ok(store) = SqlStore::open(url) else {
        return;
    };
    let table = &store.options().table;
    let _ = exec_raw(&store, &format!("DROP TABLE IF EXISTS {table}")).await;
    // The routines made with the table: PostgreSQL's release trigger function, MariaDB's claim
    // and purge procedures.
    // (With SQLite alone, only the wildcard arm is compiled.)
    #[allow(clippy::match_single_binding)]
    let routine: Option<String> = match store.pool() {
        #[cfg(feature = "postgres")]
        SqlPool::Postgres(_) => Some(format!("DROP FUNCTION IF EXISTS \"{table}_freed\"()")),
        #[cfg(feature = "mysql")]
        SqlPool::MySql(_) => Some(format!(
            "DROP PROCEDURE IF EXISTS `{table}_claim`; DROP PROCEDURE IF EXISTS `{table}_purge`"
        )),
        _ => None,
    };
    if let Some(routine) = routine {
        let _ = exec_raw(&store, &routine).await;
    }
}

/// Tests, one per database, PostgreSQL's and MariaDB's two-row layout and the TLS connections, running `$body` (an async closure over the URL with a fresh
/// table) on each that is available, then dropping the table.
#[macro_export]
macro_rules! per_db {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                if let Some(url) = $crate::common::url($crate::common::Db::Sqlite) {
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            /// SQLite with a table of the two-row layout (`layout=two-rows`): tables made
            /// before SQLite's one-row layout, and by a store that asks for it.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_two_rows() {
                if let Some(url) = $crate::common::url($crate::common::Db::Sqlite) {
                    let url = $crate::common::with_param(
                        &url,
                        $crate::common::layout_param(baton::sql::Layout::TwoRows),
                    );
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(url) = $crate::common::url($crate::common::Db::Postgres) {
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            /// PostgreSQL with a table of the two-row layout (`layout=two-rows`): tables made
            /// before the one-row layout, and by a store that asks for it.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_two_rows() {
                if let Some(url) = $crate::common::url($crate::common::Db::Postgres) {
                    let url = $crate::common::with_param(
                        &url,
                        $crate::common::layout_param(baton::sql::Layout::TwoRows),
                    );
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql() {
                if let Some(url) = $crate::common::url($crate::common::Db::MySql) {
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            /// MariaDB with a table of the two-row layout (`layout=two-rows`): tables made
            /// before the one-row layout, and by a store that asks for it.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql_two_rows() {
                if let Some(url) = $crate::common::url($crate::common::Db::MySql) {
                    let url = $crate::common::with_param(
                        &url,
                        $crate::common::layout_param(baton::sql::Layout::TwoRows),
                    );
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            /// PostgreSQL over verified TLS (the TLS-only user, its password from a file).
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_tls() {
                if let Some(url) = $crate::common::url($crate::common::Db::PostgresTls) {
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }

            /// MariaDB over verified TLS (the TLS-only user, its password from a file).
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn mysql_tls() {
                if let Some(url) = $crate::common::url($crate::common::Db::MySqlTls) {
                    ($body)(url.clone()).await;
                    $crate::common::drop_table(&url).await;
                }
            }
        }
    };
}
