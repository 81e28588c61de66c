//! A register client for the Rust worker and the tests: one connection, one request at a time.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// How long the register may take to answer: it is never partitioned from clients, so a slow
/// answer means it is gone and the run is void.
const ANSWER_DEADLINE: Duration = Duration::from_secs(30);

/// A connection to the register.
pub struct RegisterClient {
    lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl RegisterClient {
    /// Connects to the register at `addr` (`host:port`).
    pub async fn connect(addr: &str) -> Result<RegisterClient, String> {
        let stream = tokio::time::timeout(ANSWER_DEADLINE, TcpStream::connect(addr))
            .await
            .map_err(|_| format!("register {addr}: no connection within {ANSWER_DEADLINE:?}"))?
            .map_err(|e| format!("register {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        Ok(RegisterClient {
            lines: BufReader::new(read).lines(),
            write,
        })
    }

    /// Sends one request line and returns the answer; a `bad ...` answer is an error.
    pub async fn request(&mut self, line: &str) -> Result<String, String> {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .map_err(|e| format!("register: sending {line:?}: {e}"))?;
        let answer = tokio::time::timeout(ANSWER_DEADLINE, self.lines.next_line())
            .await
            .map_err(|_| format!("register: no answer to {line:?} within {ANSWER_DEADLINE:?}"))?
            .map_err(|e| format!("register: answer to {line:?}: {e}"))?
            .ok_or_else(|| format!("register: closed before answering {line:?}"))?;
        if let Some(reason) = answer.strip_prefix("bad ") {
            return Err(format!("register refused {line:?}: {reason}"));
        }
        Ok(answer)
    }
}
