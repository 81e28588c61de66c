//! The register's history file: every request it answered, in the order it decided them, with
//! its own monotonic clock.
//!
//! One entry per line, tab-separated: `T_NS CONN REQUEST ANSWER NOTE`, where `T_NS` is
//! nanoseconds since the register started, `CONN` the connection's number, `REQUEST` the
//! request line (or `closed` when the connection ended), `ANSWER` what the client was told and
//! `NOTE` what only the checker needs (`stale-value N` on a write that lost an update, else
//! `-`).

use super::protocol::Request;

/// What happened on a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// A request (answered).
    Request(Request),
    /// The connection closed (the client exited, was killed, or hung up).
    Closed,
}

/// One line of the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Nanoseconds since the register started.
    pub t_ns: u64,
    /// The connection's number.
    pub conn: u64,
    /// The request, or the connection's end.
    pub what: What,
    /// The answer sent.
    pub answer: String,
    /// `stale-value N` on a write that lost an update; empty otherwise.
    pub note: String,
}

impl Entry {
    /// The history line, with its newline.
    pub fn line(&self) -> String {
        let what = match &self.what {
            What::Request(r) => r.to_string(),
            What::Closed => "closed".to_owned(),
        };
        let note = if self.note.is_empty() {
            "-"
        } else {
            &self.note
        };
        format!(
            "{}\t{}\t{what}\t{}\t{note}\n",
            self.t_ns, self.conn, self.answer
        )
    }

    /// Parses a line written by [`Entry::line`].
    pub fn parse(line: &str) -> Result<Entry, String> {
        let fields: Vec<&str> = line.trim_end_matches('\n').split('\t').collect();
        let [t, conn, what, answer, note] = fields[..] else {
            return Err(format!("history line {line:?} does not have 5 fields"));
        };
        Ok(Entry {
            t_ns: t
                .parse()
                .map_err(|_| format!("bad time in history line {line:?}"))?,
            conn: conn
                .parse()
                .map_err(|_| format!("bad connection in history line {line:?}"))?,
            what: if what == "closed" {
                What::Closed
            } else {
                What::Request(
                    Request::parse(what).map_err(|e| format!("history line {line:?}: {e}"))?,
                )
            },
            answer: answer.to_owned(),
            note: if note == "-" {
                String::new()
            } else {
                note.to_owned()
            },
        })
    }
}

/// Parses a whole history file's text.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(Entry::parse)
        .collect()
}
