//! The register server: a fenced integer and an unfenced log of section boundaries.
//!
//! [`State::decide`] is the whole of its logic (pure, so tests drive it directly);
//! [`serve`] puts it behind TCP, one task per connection, and appends every decision to the
//! history file before answering.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

use super::history::{Entry, What};
use super::protocol::Request;

/// The register's state.
#[derive(Debug, Default)]
pub struct State {
    /// The highest token a read or write was accepted with.
    highest: u64,
    /// The fenced register's value.
    value: u64,
    /// Each client's holding process, from `hello`.
    pids: BTreeMap<String, u32>,
    /// Open sections: client -> (token, connection that began it).
    open: BTreeMap<String, (u64, u64)>,
}

/// An answer and the note for the history (empty but for a lost update).
pub type Decision = (String, String);

impl State {
    /// Decides one request from connection `conn`: the answer to send, and the history's note.
    pub fn decide(&mut self, conn: u64, request: &Request) -> Decision {
        let ok = || ("ok".to_owned(), String::new());
        match request {
            Request::Hello { client, pid, .. } => {
                self.pids.insert(client.clone(), *pid);
                ok()
            }
            Request::Begin { client, token } => {
                self.open.insert(client.clone(), (*token, conn));
                ok()
            }
            Request::End { client, .. } => {
                self.open.remove(client);
                ok()
            }
            Request::Read { token, .. } => {
                if *token < self.highest {
                    (format!("refused {}", self.highest), String::new())
                } else {
                    self.highest = *token;
                    (format!("value {}", self.value), String::new())
                }
            }
            Request::Write { token, read, .. } => {
                if *token < self.highest {
                    return (format!("refused {}", self.highest), String::new());
                }
                self.highest = *token;
                let note = if *read == self.value {
                    String::new()
                } else {
                    format!("stale-value {}", self.value)
                };
                self.value = read.saturating_add(1);
                ("ok".to_owned(), note)
            }
            Request::Release { .. }
            | Request::Lost { .. }
            | Request::Error { .. }
            | Request::Mark { .. } => ok(),
            Request::Holders => {
                let mut answer = "holders".to_owned();
                for client in self.open.keys() {
                    let pid = self.pids.get(client).copied().unwrap_or(0);
                    answer.push_str(&format!(" {client}:{pid}"));
                }
                (answer, String::new())
            }
        }
    }

    /// Closes the sections connection `conn` began and did not end (its client is gone).
    /// Returns whether there were any.
    pub fn close(&mut self, conn: u64) -> bool {
        let before = self.open.len();
        self.open.retain(|_, (_, c)| *c != conn);
        before != self.open.len()
    }
}

struct Shared {
    state: State,
    history: std::fs::File,
    started: Instant,
}

impl Shared {
    /// Records an entry; a history that cannot be written stops the register (a run without
    /// its history proves nothing).
    fn record(&mut self, conn: u64, what: What, answer: &str, note: String) {
        let entry = Entry {
            t_ns: u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            conn,
            what,
            answer: answer.to_owned(),
            note,
        };
        if let Err(e) = self.history.write_all(entry.line().as_bytes()) {
            eprintln!("chaos_register: cannot write the history: {e}");
            std::process::exit(1);
        }
    }
}

/// Serves the register on `listener` until the process ends, appending to `history`.
pub async fn serve(listener: TcpListener, history: std::fs::File) -> std::io::Result<()> {
    let shared = Arc::new(Mutex::new(Shared {
        state: State::default(),
        history,
        started: Instant::now(),
    }));
    let mut next_conn = 0u64;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        next_conn += 1;
        tokio::spawn(connection(stream, next_conn, Arc::clone(&shared)));
    }
}

async fn connection(stream: TcpStream, conn: u64, shared: Arc<Mutex<Shared>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut begun = BTreeSet::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let answer = match Request::parse(line.trim_end_matches('\r')) {
            Ok(request) => {
                let mut s = shared.lock().await;
                let (answer, note) = s.state.decide(conn, &request);
                if let Request::Begin { client, .. } = &request {
                    begun.insert(client.clone());
                }
                s.record(conn, What::Request(request), &answer, note);
                answer
            }
            Err(e) => format!("bad {e}"),
        };
        if write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .is_err()
        {
            break;
        }
    }
    if !begun.is_empty() {
        let mut s = shared.lock().await;
        s.state.close(conn);
        s.record(conn, What::Closed, "-", String::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(line: &str) -> Request {
        Request::parse(line).expect(line)
    }

    #[test]
    fn fencing_refuses_lower_tokens_and_notes_lost_updates() {
        let mut s = State::default();
        assert_eq!(s.decide(1, &req("read a 5")).0, "value 0");
        assert_eq!(s.decide(2, &req("read b 6")).0, "value 0");
        // a's token is now below the highest: refused, the value stays.
        assert_eq!(s.decide(1, &req("write a 5 0")).0, "refused 6");
        assert_eq!(
            s.decide(2, &req("write b 6 0")),
            ("ok".into(), String::new())
        );
        // Equal tokens both get in: the second write lost the first's update.
        assert_eq!(s.decide(3, &req("read c 6")).0, "value 1");
        assert_eq!(
            s.decide(4, &req("write d 6 0")),
            ("ok".into(), "stale-value 1".into())
        );
    }

    #[test]
    fn holders_are_the_open_sections_and_a_closed_connection_ends_them() {
        let mut s = State::default();
        s.decide(1, &req("hello a rust 10"));
        s.decide(1, &req("begin a 3"));
        s.decide(2, &req("begin b 4"));
        assert_eq!(s.decide(9, &req("holders")).0, "holders a:10 b:0");
        assert!(s.close(1));
        assert!(!s.close(1));
        assert_eq!(s.decide(9, &req("holders")).0, "holders b:0");
    }
}
