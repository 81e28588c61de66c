//! What a lock is measured against: two `UPDATE` commits by a plain client ([`PlainClient`]),
//! the database's own lock through sqlx ([`db_lock`], and with clients contending for it,
//! [`db_lock_contended`]) and from `pgbench` ([`pgbench_advisory`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_tests::contention::{percentiles, Error};

/// A plain client on one connection of the same driver: two autocommitted single-row `UPDATE`s
/// of a table of its own, the cost of two durable commits with nothing else around them. On
/// SQLite, a table in the store's file, opened as baton opens it (WAL, `synchronous=FULL`: a
/// commit syncs the WAL).
pub(crate) enum PlainClient {
    None,
    Postgres(sqlx::PgConnection, String),
    MySql(sqlx::MySqlConnection, String),
    Sqlite(sqlx::SqliteConnection, String),
}

impl PlainClient {
    pub(crate) async fn connect(base: &str) -> Result<PlainClient, Error> {
        use sqlx::Connection;
        let table = format!("bench_plain_{}", std::process::id());
        let create = format!("CREATE TABLE IF NOT EXISTS {table} (id int primary key, v bigint)");
        let insert = format!("INSERT INTO {table} VALUES (1, 0)");
        let base = &driver_url(base)?;
        Ok(match base.split("://").next() {
            Some("postgres" | "postgresql") => {
                let mut c = sqlx::PgConnection::connect(base).await?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "{create}; {insert} ON CONFLICT DO NOTHING"
                )))
                .execute(&mut c)
                .await?;
                PlainClient::Postgres(c, table)
            }
            Some("mysql" | "mariadb") => {
                let mut c = sqlx::MySqlConnection::connect(base).await?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "{create}; {insert} ON DUPLICATE KEY UPDATE v = v"
                )))
                .execute(&mut c)
                .await?;
                PlainClient::MySql(c, table)
            }
            Some("sqlite") => {
                use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
                use sqlx::ConnectOptions;
                let path = base.trim_start_matches("sqlite://");
                let path = path.split_once('?').map_or(path, |(p, _)| p);
                if path.is_empty() || path.starts_with(":memory:") {
                    return Ok(PlainClient::None);
                }
                let mut c = SqliteConnectOptions::new()
                    .filename(path)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(Duration::from_secs(5))
                    .connect()
                    .await?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "{create}; {insert} ON CONFLICT DO NOTHING"
                )))
                .execute(&mut c)
                .await?;
                PlainClient::Sqlite(c, table)
            }
            _ => PlainClient::None,
        })
    }

    /// Whether there is a plain client (not on `sqlite::memory:`).
    pub(crate) fn exists(&self) -> bool {
        !matches!(self, PlainClient::None)
    }

    /// How long two single-row `UPDATE` commits took, one after the other.
    pub(crate) async fn two_updates(&mut self) -> Result<Option<Duration>, Error> {
        /// `sql`, one parameter bound to 1, run twice on connection `c`.
        macro_rules! twice {
            ($c:expr, $sql:expr) => {
                for _ in 0..2 {
                    sqlx::query(sqlx::AssertSqlSafe($sql.clone()))
                        .bind(1)
                        .execute(&mut *$c)
                        .await?;
                }
            };
        }
        let started = Instant::now();
        match self {
            PlainClient::None => return Ok(None),
            PlainClient::Postgres(c, table) => {
                twice!(c, format!("UPDATE {table} SET v = v + 1 WHERE id = $1"))
            }
            PlainClient::MySql(c, table) => {
                twice!(c, format!("UPDATE {table} SET v = v + 1 WHERE id = ?"))
            }
            PlainClient::Sqlite(c, table) => {
                twice!(c, format!("UPDATE {table} SET v = v + 1 WHERE id = ?"))
            }
        }
        Ok(Some(started.elapsed()))
    }

    pub(crate) async fn finish(self) -> Result<(), Error> {
        /// Drops `table` on connection `c`.
        macro_rules! drop_table {
            ($c:expr, $table:expr) => {{
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "DROP TABLE IF EXISTS {}",
                    $table
                )))
                .execute(&mut $c)
                .await?;
            }};
        }
        match self {
            PlainClient::None => {}
            PlainClient::Postgres(mut c, table) => drop_table!(c, table),
            PlainClient::MySql(mut c, table) => drop_table!(c, table),
            PlainClient::Sqlite(mut c, table) => drop_table!(c, table),
        };
        Ok(())
    }
}

/// `base` as the driver takes it: baton's own `password_file=` read into the URL's user info
/// (the TLS parameters are the driver's).
pub(crate) fn driver_url(base: &str) -> Result<String, Error> {
    let (head, query) = base.split_once('?').unwrap_or((base, ""));
    let mut file = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| match p.strip_prefix("password_file=") {
            Some(path) => {
                file = Some(path.to_owned());
                false
            }
            None => !p.is_empty(),
        })
        .collect();
    let head = match file {
        Some(path) => {
            let password = std::fs::read_to_string(&path)?;
            let password = password.trim_end_matches(['\n', '\r']);
            let escaped: String = password
                .bytes()
                .map(|b| match b {
                    b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => {
                        char::from(b).to_string()
                    }
                    b => format!("%{b:02X}"),
                })
                .collect();
            let at = head.find('@').ok_or("a password_file without a user")?;
            format!("{}:{escaped}{}", &head[..at], &head[at..])
        }
        None => head.to_owned(),
    };
    Ok(if kept.is_empty() {
        head
    } else {
        format!("{head}?{}", kept.join("&"))
    })
}

/// One connection to the database's own lock: `pg_advisory_lock`, `GET_LOCK`, or SQLite's write
/// lock (`BEGIN IMMEDIATE`).
enum DbLock {
    Postgres(sqlx::PgConnection),
    MySql(sqlx::MySqlConnection),
    Sqlite(sqlx::SqliteConnection),
}

impl DbLock {
    async fn connect(store: &str, base: &str) -> Result<DbLock, Error> {
        use sqlx::Connection;
        let driver_url = driver_url(base)?;
        Ok(match store.trim_end_matches("-tls") {
            "postgres" => DbLock::Postgres(sqlx::PgConnection::connect(&driver_url).await?),
            "mysql" => DbLock::MySql(sqlx::MySqlConnection::connect(&driver_url).await?),
            _ => {
                use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
                use std::str::FromStr as _;
                let options =
                    SqliteConnectOptions::from_str(base.split('?').next().unwrap_or(base))?
                        .create_if_missing(true)
                        .journal_mode(SqliteJournalMode::Wal)
                        .synchronous(SqliteSynchronous::Normal);
                DbLock::Sqlite(sqlx::SqliteConnection::connect_with(&options).await?)
            }
        })
    }

    /// What the lock is called in the tables.
    fn name(&self) -> &'static str {
        match self {
            DbLock::Postgres(_) => "pg_advisory_lock+unlock",
            DbLock::MySql(_) => "GET_LOCK+RELEASE_LOCK",
            DbLock::Sqlite(_) => "BEGIN IMMEDIATE+COMMIT",
        }
    }

    /// Takes the lock (waiting for it) and gives it back.
    async fn lock_unlock(&mut self) -> Result<(), sqlx::Error> {
        match self {
            DbLock::Postgres(conn) => {
                for sql in [
                    "SELECT pg_advisory_lock($1)",
                    "SELECT pg_advisory_unlock($1)",
                ] {
                    sqlx::query(sql)
                        .bind(ADVISORY_KEY)
                        .execute(&mut *conn)
                        .await?;
                }
            }
            DbLock::MySql(conn) => {
                for sql in ["SELECT GET_LOCK(?, 10)", "SELECT RELEASE_LOCK(?)"] {
                    sqlx::query(sql)
                        .bind("baton-bench")
                        .execute(&mut *conn)
                        .await?;
                }
            }
            DbLock::Sqlite(conn) => {
                sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
                sqlx::query("COMMIT").execute(&mut *conn).await?;
            }
        }
        Ok(())
    }
}

/// The database's own lock, `iterations` times on one connection: p50 and p99, and its name.
pub(crate) async fn db_lock(
    store: &str,
    base: &str,
    iterations: u64,
) -> Result<(&'static str, (Duration, Duration)), Error> {
    let mut conn = DbLock::connect(store, base).await?;
    let mut samples = Vec::with_capacity(iterations as usize + 20);
    for _ in 0..iterations + 20 {
        let started = Instant::now();
        conn.lock_unlock().await?;
        samples.push(started.elapsed());
    }
    // The first 20 were warm-up.
    Ok((conn.name(), percentiles(samples.split_off(20))))
}

/// The database's own lock with `clients` clients, each on its own connection, looping lock +
/// unlock of one key for `for_`: acquisitions per second. The reference for how much a lock
/// the server queues and hands over itself (and which writes nothing durable) keeps of one
/// client's rate when several contend on this machine.
pub(crate) async fn db_lock_contended(
    store: &str,
    base: &str,
    clients: usize,
    for_: Duration,
) -> Result<f64, Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut conn = DbLock::connect(store, base).await?;
        let stop = Arc::clone(&stop);
        tasks.push(tokio::spawn(async move {
            let mut count = 0u64;
            while !stop.load(Ordering::Relaxed) {
                conn.lock_unlock().await?;
                count += 1;
            }
            Ok::<u64, sqlx::Error>(count)
        }));
    }
    tokio::time::sleep(for_).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0u64;
    for task in tasks {
        total += task.await??;
    }
    Ok(total as f64 / for_.as_secs_f64())
}

/// The same advisory lock + unlock from a raw blocking client, PostgreSQL's own `pgbench`
/// (libpq, prepared statements, one connection) on the same server for two seconds: its mean
/// latency, the floor a driver can reach. `None` when `pgbench` is not installed.
pub(crate) fn pgbench_advisory(url: &str) -> Option<Duration> {
    let script = std::env::temp_dir().join(format!("baton-bench-{}.sql", std::process::id()));
    std::fs::write(
        &script,
        format!("SELECT pg_advisory_lock({ADVISORY_KEY});\nSELECT pg_advisory_unlock({ADVISORY_KEY});\n"),
    )
    .ok()?;
    let out = std::process::Command::new("pgbench")
        .args(["-n", "-M", "prepared", "-c", "1", "-T", "2", "-f"])
        .arg(&script)
        .arg(url)
        .output()
        .ok();
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out?.stdout).into_owned();
    let ms: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("latency average = "))?
        .trim_end_matches(" ms")
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs_f64(ms / 1e3))
}

/// The PostgreSQL advisory lock key of the benchmark.
pub(crate) const ADVISORY_KEY: i64 = 0x0ba7_0b0b;
