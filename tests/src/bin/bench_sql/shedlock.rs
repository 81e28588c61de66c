//! ShedLock, measured beside baton: `tests/peers/shedlock/ShedLockBench.java` (ShedLock's JDBC
//! provider over a HikariCP pool, as its users deploy it) as a child process, which runs its
//! lock + unlock of one name in blocks when asked, on the same server, between baton's blocks.
//! Its classpath comes from `scripts/shedlock classpath` (`BATON_SHEDLOCK_CLASSPATH`); without
//! it, or on a store ShedLock's JDBC provider does not serve here, ShedLock is not measured. It
//! connects over the transport baton's driver chose (TLS or plain TCP), which JDBC drivers
//! would otherwise choose differently.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use baton_tests::contention::Error;

/// The environment variable that holds the bench's Java classpath.
pub(crate) const CLASSPATH: &str = "BATON_SHEDLOCK_CLASSPATH";

/// A running `ShedLockBench` on one store, its table made and warmed up.
pub(crate) struct ShedLock {
    child: Child,
    input: ChildStdin,
    output: Lines<BufReader<ChildStdout>>,
}

impl ShedLock {
    /// ShedLock on the server of `base` (a baton URL with its password in it: see
    /// [`driver_url`](super::baselines::driver_url)), in a table of its own; `None` when the
    /// classpath is not set or the store is not one ShedLock is measured on (PostgreSQL and
    /// MariaDB over plain TCP: the TLS stores' options are baton's, not JDBC's).
    pub(crate) async fn start(store: &str, base: &str) -> Result<Option<ShedLock>, Error> {
        let Some(classpath) = std::env::var_os(CLASSPATH).filter(|c| !c.is_empty()) else {
            return Ok(None);
        };
        if !matches!(store, "postgres" | "mysql") {
            return Ok(None);
        }
        let table = format!("bench_shedlock_{}", std::process::id());
        let url = super::baselines::driver_url(base)?;
        // Over the transport sqlx chose (TLS when the server offers it, by default): JDBC
        // drivers choose otherwise (MariaDB's Connector/J: plain TCP), and TLS costs both
        // sides CPU per statement.
        let transport = if uses_tls(store, &url).await? {
            "tls"
        } else {
            "plain"
        };
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(classpath)
            .arg("ShedLockBench")
            .arg(&url)
            .arg(&table)
            .arg(transport)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start java for ShedLock ({CLASSPATH} is set): {e}"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("ShedLock's child has no pipes".into());
        };
        Ok(Some(ShedLock {
            child,
            input,
            output: BufReader::new(output).lines(),
        }))
    }

    /// `n` lock + unlock, each one's wall time as the child measured it.
    pub(crate) async fn block(&mut self, n: u64) -> Result<Vec<Duration>, Error> {
        let line = self.ask(&format!("run {n}")).await?;
        let Some(times) = line.strip_prefix("ok") else {
            return Err(format!("ShedLock's bench answered {line:?}").into());
        };
        let took = times
            .split_whitespace()
            .map(|t| t.parse().map(Duration::from_nanos))
            .collect::<Result<Vec<_>, _>>()?;
        if took.len() as u64 != n {
            return Err(format!("ShedLock's bench timed {} of {n}", took.len()).into());
        }
        Ok(took)
    }

    /// Drops its table and waits for the child to end.
    pub(crate) async fn finish(mut self) -> Result<(), Error> {
        let line = self.ask("quit").await?;
        if line != "bye" {
            return Err(format!("ShedLock's bench answered {line:?} to quit").into());
        }
        self.child.wait().await?;
        Ok(())
    }

    /// Sends `command` and reads its answer. A child that failed has closed its input: its
    /// last line (`error: ...`) is then the error, not the broken pipe.
    async fn ask(&mut self, command: &str) -> Result<String, Error> {
        let sent = async {
            self.input
                .write_all(format!("{command}\n").as_bytes())
                .await?;
            self.input.flush().await
        }
        .await;
        let answer = self.answer().await;
        match (sent, answer) {
            (_, Err(e)) => Err(e),
            (Err(e), Ok(line)) => Err(format!(
                "ShedLock's bench did not take {command:?} ({e}), then said {line:?}"
            )
            .into()),
            (Ok(()), Ok(line)) => Ok(line),
        }
    }

    async fn answer(&mut self) -> Result<String, Error> {
        match self.output.next_line().await? {
            Some(line) if line.starts_with("error:") => {
                Err(format!("ShedLock's bench failed: {line}").into())
            }
            Some(line) => Ok(line),
            None => Err("ShedLock's bench ended without an answer (see its standard error)".into()),
        }
    }
}

/// Whether a connection of sqlx to `url` (a driver URL) uses TLS, as baton's and the plain
/// client's do.
async fn uses_tls(store: &str, url: &str) -> Result<bool, Error> {
    use sqlx::Connection;
    if store == "postgres" {
        let mut c = sqlx::PgConnection::connect(url).await?;
        let (ssl,): (bool,) =
            sqlx::query_as("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .fetch_one(&mut c)
                .await?;
        c.close().await?;
        Ok(ssl)
    } else {
        let mut c = sqlx::MySqlConnection::connect(url).await?;
        let (cipher,): (String,) = sqlx::query_as(
            "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'",
        )
        .fetch_one(&mut c)
        .await?;
        c.close().await?;
        Ok(!cipher.is_empty())
    }
}
