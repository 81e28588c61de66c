//! Drops the tables tests created, so repeated runs do not pile up tables in a shared database.
//!
//! One thread per database URL keeps one connection (sqlx, outside baton) and drops tables on
//! request; [`Table`](super::Table)'s `Drop` asks it and waits (briefly) for the answer, so the
//! table is gone before the test returns. Failures are reported once and otherwise ignored: a
//! leftover table is untidy, not wrong. `BATON_KEEP_TABLES=1` keeps every table for
//! inspection.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use sqlx::Connection as _;

use super::target::Backend;

type Request = (String, mpsc::Sender<()>);

/// Drops `table` from the database at `base` (a URL without baton's own parameters), waiting
/// up to a few seconds.
pub fn drop_table(backend: Backend, base: &str, table: &str) {
    if std::env::var("BATON_KEEP_TABLES").is_ok_and(|v| v == "1") {
        return;
    }
    static JANITORS: Mutex<Option<HashMap<String, mpsc::Sender<Request>>>> = Mutex::new(None);
    let sender = {
        let mut janitors = JANITORS.lock().unwrap_or_else(PoisonError::into_inner);
        let janitors = janitors.get_or_insert_with(HashMap::new);
        janitors
            .entry(base.to_owned())
            .or_insert_with(|| spawn(backend, base.to_owned()))
            .clone()
    };
    let (ack, done) = mpsc::channel();
    if sender.send((table.to_owned(), ack)).is_ok() {
        let _ = done.recv_timeout(Duration::from_secs(10));
    }
}

fn spawn(backend: Backend, base: String) -> mpsc::Sender<Request> {
    let (tx, rx) = mpsc::channel::<Request>();
    let spawned = std::thread::Builder::new()
        .name(format!("baton-tests janitor ({backend})"))
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let url = without_baton_params(&base);
            let mut conn: Option<Conn> = None;
            let mut complained = false;
            while let Ok((table, ack)) = rx.recv() {
                let result = runtime.block_on(async {
                    if conn.is_none() {
                        conn = Some(Conn::connect(backend, &url).await?);
                    }
                    match conn.as_mut() {
                        Some(c) => c.drop_table(&table).await,
                        None => Ok(()),
                    }
                });
                if let Err(e) = result {
                    conn = None;
                    if !complained {
                        complained = true;
                        let _ = writeln!(
                            std::io::stderr(),
                            "baton-tests: could not drop test table {table} ({backend}): {e}"
                        );
                    }
                }
                let _ = ack.send(());
            }
        });
    if spawned.is_err() {
        // No janitor: requests fail to send and tables are left behind.
        return mpsc::channel().0;
    }
    tx
}

/// The URL without baton's own parameters (`table`, `create`, `timeout`, `pool`, `layout`),
/// which sqlx does not know.
fn without_baton_params(url: &str) -> String {
    let Some((head, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| {
            let key = kv.split('=').next().unwrap_or("");
            !matches!(key, "table" | "create" | "timeout" | "pool" | "layout" | "")
        })
        .collect();
    if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    }
}

enum Conn {
    Postgres(sqlx::PgConnection),
    Mysql(sqlx::MySqlConnection),
    Sqlite(sqlx::SqliteConnection),
}

impl Conn {
    async fn connect(backend: Backend, url: &str) -> Result<Conn, sqlx::Error> {
        Ok(match backend {
            Backend::Postgres => Conn::Postgres(sqlx::PgConnection::connect(url).await?),
            Backend::Mysql => Conn::Mysql(sqlx::MySqlConnection::connect(url).await?),
            _ => Conn::Sqlite(sqlx::SqliteConnection::connect(url).await?),
        })
    }

    async fn drop_table(&mut self, table: &str) -> Result<(), sqlx::Error> {
        // Test table names are generated (`t_<pid>_<seq>_<hex>`): safe to format in.
        assert!(
            table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "not a generated table name: {table:?}"
        );
        let sql = match self {
            // With the claim and purge procedures made for the table.
            Conn::Mysql(_) => format!(
                "DROP TABLE IF EXISTS `{table}`; DROP PROCEDURE IF EXISTS `{table}_claim`; DROP PROCEDURE IF EXISTS `{table}_purge`"
            ),
            // With the release trigger's function made for the table.
            Conn::Postgres(_) => format!(
                "DROP TABLE IF EXISTS \"{table}\"; DROP FUNCTION IF EXISTS \"{table}_freed\"()"
            ),
            Conn::Sqlite(_) => format!("DROP TABLE IF EXISTS \"{table}\""),
        };
        let sql = sqlx::AssertSqlSafe(sql);
        match self {
            Conn::Postgres(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
            Conn::Mysql(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
            Conn::Sqlite(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
        }
    }
}
