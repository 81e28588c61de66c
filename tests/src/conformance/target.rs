//! Which stores the suites run against, named by URL in the environment, and a fresh table per
//! test.
//!
//! | store | variable | when unset |
//! | --- | --- | --- |
//! | memory | — | always runs |
//! | SQLite | `BATON_SQLITE_URL` (`sqlite:///abs/path.db`) | a temporary file per table |
//! | PostgreSQL | `BATON_POSTGRES_URL` (`scripts/postgres url`) | skipped |
//! | MySQL/MariaDB | `BATON_MYSQL_URL` (`scripts/mariadb url`) | skipped |
//! | Cassandra | `BATON_CASSANDRA_URL` | skipped |
//!
//! With `BATON_REQUIRE_SERVICES=1` a store whose variable is unset (or whose store is not built
//! into `baton`) fails the test instead of skipping it, naming the variable: CI sets it so a
//! missing service cannot pass as green.
//!
//! URLs are given without `table=`: every test appends `?table=t_<unique>` (or `&table=…`) so
//! tests never share a table, and can run concurrently and repeatedly on one database.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::{ErrorKind, LockerBuilder, MemoryStore, RetryPolicy, Store, Strategy};

/// A kind of store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The in-process [`MemoryStore`].
    Memory,
    /// SQLite through the `sqlite` feature.
    Sqlite,
    /// PostgreSQL through the `postgres` feature.
    Postgres,
    /// MySQL or MariaDB through the `mysql` feature.
    Mysql,
    /// Cassandra or ScyllaDB through the `cassandra` feature.
    Cassandra,
}

impl Backend {
    /// The stores that exist outside this process (the multi-process tests use these).
    pub const SQL: [Backend; 3] = [Backend::Sqlite, Backend::Postgres, Backend::Mysql];

    /// A short lowercase name for messages and table labels.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Cassandra => "cassandra",
        }
    }

    /// The environment variable naming the store's URL (none for memory).
    pub fn env_var(self) -> Option<&'static str> {
        match self {
            Backend::Memory => None,
            Backend::Sqlite => Some("BATON_SQLITE_URL"),
            Backend::Postgres => Some("BATON_POSTGRES_URL"),
            Backend::Mysql => Some("BATON_MYSQL_URL"),
            Backend::Cassandra => Some("BATON_CASSANDRA_URL"),
        }
    }

    /// How to get a URL for the variable, for skip messages.
    fn hint(self) -> &'static str {
        match self {
            Backend::Memory | Backend::Sqlite => "",
            Backend::Postgres => {
                "scripts/postgres start; export BATON_POSTGRES_URL=$(scripts/postgres url)"
            }
            Backend::Mysql => {
                "scripts/mariadb start; export BATON_MYSQL_URL=$(scripts/mariadb url)"
            }
            Backend::Cassandra => {
                "scripts/cassandra start; export BATON_CASSANDRA_URL=$(scripts/cassandra url)"
            }
        }
    }

    /// Whether expired cells stay in the table until purged (SQL rows, the memory table), so
    /// [`Locker::purge`](baton::Locker::purge) has something to remove. Cassandra's TTL removes
    /// them by itself.
    pub fn keeps_expired_cells(self) -> bool {
        !matches!(self, Backend::Cassandra)
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `BATON_REQUIRE_SERVICES=1`: a store that cannot be reached fails instead of skipping.
pub fn services_required() -> bool {
    std::env::var("BATON_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

/// Skips (printing why, once per store and reason, past the test harness's output capture) or,
/// under `BATON_REQUIRE_SERVICES=1`, fails with `why`.
pub fn skip_or_fail(backend: Backend, why: &str) {
    if services_required() {
        panic!("{backend} store required (BATON_REQUIRE_SERVICES=1) but {why}");
    }
    static SHOWN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut shown = SHOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if shown
        .get_or_insert_with(HashSet::new)
        .insert(format!("{backend}: {why}"))
    {
        // Straight to the process's stderr: a skipped test still passes, and the harness would
        // swallow an eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "baton-tests: SKIPPING {backend} store tests: {why}"
        );
    }
}

/// A store named by the environment, ready to hand out fresh tables.
#[derive(Clone, Debug)]
pub struct Target {
    backend: Backend,
    /// The URL from the environment, without `table=` (`None`: memory, or SQLite on temp files).
    base: Option<String>,
}

impl Target {
    /// The target for `backend`, or `None` (after printing a skip line) when its variable is
    /// unset. Panics under `BATON_REQUIRE_SERVICES=1` instead of returning `None`, and always
    /// when the store is named but cannot be opened: a store that was asked for must work.
    pub fn from_env(backend: Backend) -> Option<Target> {
        let base = match backend.env_var() {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
                _ if backend == Backend::Sqlite => None,
                _ => {
                    skip_or_fail(backend, &format!("{var} is not set ({})", backend.hint()));
                    return None;
                }
            },
        };
        let target = Target { backend, base };
        // Open one throwaway table now, so a store missing from this build of baton is reported
        // once, clearly, instead of as every behaviour failing.
        if backend != Backend::Memory {
            let probe = target.table_url(&unique_table());
            if let Err(e) = baton::open_store(&probe.0) {
                let missing =
                    e.message().contains("not built in") || e.message().contains("feature");
                if e.kind() == ErrorKind::InvalidOption && missing {
                    skip_or_fail(
                        backend,
                        &format!("this build of baton has no {backend} store (its feature is off, or it is not built in yet)"),
                    );
                    return None;
                }
                panic!("cannot open the {backend} store at {}: {e}", probe.0);
            }
        }
        Some(target)
    }

    /// The kind of store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// A fresh, empty table on this store.
    pub fn table(&self) -> Table {
        let name = unique_table();
        match self.backend {
            Backend::Memory => Table {
                backend: self.backend,
                name,
                url: None,
                base: None,
                memory: Some(MemoryStore::new()),
                _file: None,
            },
            _ => {
                let (url, file) = self.table_url(&name);
                Table {
                    backend: self.backend,
                    name,
                    url: Some(url),
                    base: self.base.clone(),
                    memory: None,
                    _file: file,
                }
            }
        }
    }

    /// The URL of table `name`, and the temporary SQLite file to remove afterwards, if any.
    fn table_url(&self, name: &str) -> (String, Option<TempFile>) {
        match &self.base {
            Some(base) => {
                let sep = if base.contains('?') { '&' } else { '?' };
                (format!("{base}{sep}table={name}"), None)
            }
            None => {
                let path = std::env::temp_dir().join(format!("baton-{name}.db"));
                let url = format!("sqlite://{}?table={name}", path.display());
                (url, Some(TempFile(path)))
            }
        }
    }
}

/// A table name no other test (in this process, or a concurrent or earlier run) uses:
/// `t_<pid>_<sequence>_<time>`, lowercase, at most 40 characters.
pub fn unique_table() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() % 1_000_000_000_000)
        .unwrap_or(0);
    format!("t_{}_{seq}_{nanos:x}", std::process::id())
}

/// One test's table: every client opened on it shares the locks.
#[derive(Debug)]
pub struct Table {
    backend: Backend,
    name: String,
    url: Option<String>,
    /// The database URL without `table=`, when the table lives in a database the environment
    /// named (dropped again by the janitor).
    base: Option<String>,
    memory: Option<MemoryStore>,
    _file: Option<TempFile>,
}

impl Drop for Table {
    fn drop(&mut self) {
        let sql = matches!(
            self.backend,
            Backend::Sqlite | Backend::Postgres | Backend::Mysql
        );
        if let (true, Some(base)) = (sql, &self.base) {
            super::janitor::drop_table(self.backend, base, &self.name);
        }
    }
}

impl Table {
    /// The kind of store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store URL of this table (`None` for memory, which has no URL other processes can
    /// open).
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// A new client of the table: for a database, a store opened afresh from the URL (its own
    /// connection pool, as another process would have); for memory, the one shared store.
    pub fn client(&self) -> Arc<dyn Store> {
        match (&self.memory, &self.url) {
            (Some(memory), _) => Arc::new(memory.clone()),
            (None, Some(url)) => baton::open_store(url)
                .unwrap_or_else(|e| panic!("cannot open the {} store at {url}: {e}", self.backend)),
            (None, None) => unreachable!("a table has a URL or a memory store"),
        }
    }

    /// A locker builder on a new [`client`](Table::client) with `strategy` and the suite's
    /// defaults: quick retries (5 ms growing to 50 ms, so waits notice a free lock soon) and a
    /// 20 s wait, so a broken store fails a test instead of hanging it.
    pub fn locker(&self, strategy: Strategy) -> LockerBuilder {
        LockerBuilder::new(self.client())
            .strategy(strategy)
            .retry(quick_retry())
            .wait_timeout(Duration::from_secs(20))
    }
}

/// The retry policy the suites use: 5 ms, doubling up to 50 ms, no attempt limit.
pub fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(50),
        max_attempts: None,
        ..RetryPolicy::default()
    }
}

/// A SQLite database file (and its journals) removed when the table is dropped.
#[derive(Debug)]
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}
