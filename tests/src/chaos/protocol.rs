//! The register's line protocol: one request per line, one answer per line (the table in
//! `docs/faults-design.md`).

use std::fmt;

/// One request a client sends the register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `hello CLIENT KIND PID`: who the client is, and the process holding its locks.
    Hello {
        /// The client's name.
        client: String,
        /// `rust`, `cli`, `cpp`, `python`, `node` or `fake`.
        kind: String,
        /// The process that holds the lock (the one the nemesis pauses).
        pid: u32,
    },
    /// `begin CLIENT TOKEN`: a lock call returned TOKEN; the section starts.
    Begin {
        /// The client.
        client: String,
        /// The grant's fencing token.
        token: u64,
    },
    /// `read CLIENT TOKEN`: a fenced read of the register's value.
    Read {
        /// The client.
        client: String,
        /// The section's token.
        token: u64,
    },
    /// `write CLIENT TOKEN N`: a fenced write of N + 1, N being the value the section read.
    Write {
        /// The client.
        client: String,
        /// The section's token.
        token: u64,
        /// The value the section read.
        read: u64,
    },
    /// `end CLIENT TOKEN`: the section is over; the release comes next.
    End {
        /// The client.
        client: String,
        /// The section's token.
        token: u64,
    },
    /// `release CLIENT TOKEN OUTCOME`: what the release after the section answered.
    Release {
        /// The client.
        client: String,
        /// The section's token.
        token: u64,
        /// `ok`, `lost`, or an error code.
        outcome: String,
    },
    /// `lost CLIENT TOKEN`: the client was told during the section that its lease was lost.
    Lost {
        /// The client.
        client: String,
        /// The section's token.
        token: u64,
    },
    /// `error CLIENT CODE`: a lock call failed with CODE.
    Error {
        /// The client.
        client: String,
        /// The error's code.
        code: String,
    },
    /// `holders`: the clients in a section now.
    Holders,
    /// `mark LABEL`: a point in the run (`start`, `stop`, a fault starting or ending).
    Mark {
        /// What happened.
        label: String,
    },
}

/// Whether `s` is a valid client name, outcome, code or label: `[A-Za-z0-9_.:=-]{1,64}`.
pub fn is_word(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:=-".contains(&b))
}

impl Request {
    /// Parses one request line (without its newline). The error names what was wrong.
    pub fn parse(line: &str) -> Result<Request, String> {
        let fields: Vec<&str> = line.split(' ').collect();
        let word = |i: usize, what: &str| -> Result<String, String> {
            match fields.get(i) {
                Some(w) if is_word(w) => Ok((*w).to_owned()),
                Some(w) => Err(format!("{what} {w:?} is not [A-Za-z0-9_.:=-]{{1,64}}")),
                None => Err(format!("missing {what}")),
            }
        };
        let number = |i: usize, what: &str| -> Result<u64, String> {
            let w = fields.get(i).ok_or_else(|| format!("missing {what}"))?;
            w.parse()
                .map_err(|_| format!("{what} {w:?} is not a decimal u64"))
        };
        let arity = |n: usize| -> Result<(), String> {
            if fields.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "{} takes {} fields, got {}",
                    fields[0],
                    n - 1,
                    fields.len() - 1
                ))
            }
        };
        let request = match fields[0] {
            "hello" => {
                arity(4)?;
                let pid = number(3, "pid")?;
                Request::Hello {
                    client: word(1, "client")?,
                    kind: word(2, "kind")?,
                    pid: u32::try_from(pid).map_err(|_| format!("pid {pid} is too large"))?,
                }
            }
            "begin" => {
                arity(3)?;
                Request::Begin {
                    client: word(1, "client")?,
                    token: number(2, "token")?,
                }
            }
            "read" => {
                arity(3)?;
                Request::Read {
                    client: word(1, "client")?,
                    token: number(2, "token")?,
                }
            }
            "write" => {
                arity(4)?;
                Request::Write {
                    client: word(1, "client")?,
                    token: number(2, "token")?,
                    read: number(3, "value")?,
                }
            }
            "end" => {
                arity(3)?;
                Request::End {
                    client: word(1, "client")?,
                    token: number(2, "token")?,
                }
            }
            "release" => {
                arity(4)?;
                Request::Release {
                    client: word(1, "client")?,
                    token: number(2, "token")?,
                    outcome: word(3, "outcome")?,
                }
            }
            "lost" => {
                arity(3)?;
                Request::Lost {
                    client: word(1, "client")?,
                    token: number(2, "token")?,
                }
            }
            "error" => {
                arity(3)?;
                Request::Error {
                    client: word(1, "client")?,
                    code: word(2, "code")?,
                }
            }
            "holders" => {
                arity(1)?;
                Request::Holders
            }
            "mark" => {
                arity(2)?;
                Request::Mark {
                    label: word(1, "label")?,
                }
            }
            other => return Err(format!("unknown request {other:?}")),
        };
        Ok(request)
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Hello { client, kind, pid } => write!(f, "hello {client} {kind} {pid}"),
            Request::Begin { client, token } => write!(f, "begin {client} {token}"),
            Request::Read { client, token } => write!(f, "read {client} {token}"),
            Request::Write {
                client,
                token,
                read,
            } => write!(f, "write {client} {token} {read}"),
            Request::End { client, token } => write!(f, "end {client} {token}"),
            Request::Release {
                client,
                token,
                outcome,
            } => write!(f, "release {client} {token} {outcome}"),
            Request::Lost { client, token } => write!(f, "lost {client} {token}"),
            Request::Error { client, code } => write!(f, "error {client} {code}"),
            Request::Holders => write!(f, "holders"),
            Request::Mark { label } => write!(f, "mark {label}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_are_named() {
        for line in [
            "hello h1-rust rust 42",
            "begin h1-rust 7",
            "read h1-rust 7",
            "write h1-rust 7 3",
            "end h1-rust 7",
            "release h1-rust 7 lost",
            "lost h1-rust 7",
            "error h1-rust store_unavailable",
            "holders",
            "mark fault:pause=h2",
        ] {
            let r = Request::parse(line).expect(line);
            assert_eq!(r.to_string(), line);
        }
        for (line, says) in [
            ("", "unknown request"),
            ("begin h1", "takes 2 fields"),
            ("begin h1 x", "not a decimal"),
            ("begin h1 -1", "not a decimal"),
            ("begin h\u{e9} 1", "is not"),
            ("write a 1 2 3", "takes 3 fields"),
            ("hello a b 99999999999", "too large"),
        ] {
            let e = Request::parse(line).expect_err(line);
            assert!(e.contains(says), "{line:?}: {e}");
        }
    }
}
