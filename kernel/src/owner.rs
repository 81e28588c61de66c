//! Owner ids: who holds a lock, unique without any host registry.

use alloc::format;
use alloc::string::{String, ToString};
use core::cmp::Ordering;
use core::fmt;

use crate::error::{Error, ErrorKind, Result};

/// The identity of one acquisition: host, process id and a random nonce.
///
/// The nonce comes from the caller (the kernel has no randomness of its own); the Rust API draws a
/// fresh one for every acquisition, so two guards in one process, even on one thread, never share
/// an owner id. That is what makes a host registry (QCassandraLock's `hosts` row) unnecessary:
/// uniqueness comes from the nonce, not from a table of hosts.
///
/// An optional numeric `host_id` may be configured for compatibility with QCassandraLock-style
/// deployments; when present it is the first key of the bakery's tie-break order.
///
/// The text form, used as a column suffix and in lock records, is `host:pid:nonce` with the nonce
/// as 16 lowercase hex digits, prefixed by `#<host_id>@` when a host id is set.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct OwnerId {
    host: String,
    pid: u32,
    nonce: u64,
    host_id: Option<u32>,
}

impl OwnerId {
    /// The longest host name allowed, in bytes.
    pub const MAX_HOST_LEN: usize = 64;

    /// An owner id. `host` must be 1 to 64 characters of `A-Z a-z 0-9 . _ -`
    /// (use [`OwnerId::sanitize_host`] on a raw host name first).
    pub fn new(host: &str, pid: u32, nonce: u64) -> Result<Self> {
        validate_host(host)?;
        Ok(OwnerId {
            host: host.to_string(),
            pid,
            nonce,
            host_id: None,
        })
    }

    /// The same owner with a numeric host id (QCassandraLock's host number).
    pub fn with_host_id(mut self, host_id: u32) -> Self {
        self.host_id = Some(host_id);
        self
    }

    /// Maps any host name onto the allowed characters: others become `-`, an empty name
    /// becomes `localhost`, and the result is cut to [`OwnerId::MAX_HOST_LEN`] bytes.
    pub fn sanitize_host(raw: &str) -> String {
        let mut out: String = raw
            .chars()
            .map(|c| if is_host_char(c) { c } else { '-' })
            .take(Self::MAX_HOST_LEN)
            .collect();
        if out.is_empty() {
            out.push_str("localhost");
        }
        out
    }

    /// The host part.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The process id part.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The nonce part.
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    /// The configured numeric host id, if any.
    pub fn host_id(&self) -> Option<u32> {
        self.host_id
    }

    /// The text form (see the type's docs).
    pub fn key(&self) -> String {
        match self.host_id {
            Some(id) => format!("#{id}@{}:{}:{:016x}", self.host, self.pid, self.nonce),
            None => format!("{}:{}:{:016x}", self.host, self.pid, self.nonce),
        }
    }

    /// Parses the text form.
    pub fn parse(key: &str) -> Result<Self> {
        let bad = || {
            Error::new(
                ErrorKind::StoreError,
                format!("malformed owner id {key:?} in the lock table"),
            )
        };
        let (host_id, rest) = match key.strip_prefix('#') {
            Some(tail) => {
                let (id, rest) = tail.split_once('@').ok_or_else(bad)?;
                (Some(id.parse::<u32>().map_err(|_| bad())?), rest)
            }
            None => (None, key),
        };
        let mut parts = rest.split(':');
        let (Some(host), Some(pid), Some(nonce), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let pid = pid.parse::<u32>().map_err(|_| bad())?;
        if nonce.len() != 16 {
            return Err(bad());
        }
        let nonce = u64::from_str_radix(nonce, 16).map_err(|_| bad())?;
        let owner = OwnerId::new(host, pid, nonce).map_err(|_| bad())?;
        Ok(match host_id {
            Some(id) => owner.with_host_id(id),
            None => owner,
        })
    }

    /// The bakery's tie-break order: host id (if configured; owners without one sort after
    /// those with one), then the text form. Total, and the same on every client.
    pub fn tie_break(&self, other: &OwnerId) -> Ordering {
        let a = self.host_id.map_or((1, 0), |id| (0, id));
        let b = other.host_id.map_or((1, 0), |id| (0, id));
        a.cmp(&b).then_with(|| self.key().cmp(&other.key()))
    }
}

fn is_host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn validate_host(host: &str) -> Result<()> {
    if host.is_empty() || host.len() > OwnerId::MAX_HOST_LEN {
        return Err(Error::invalid_option(format!(
            "owner host must be 1 to {} bytes long, got {}",
            OwnerId::MAX_HOST_LEN,
            host.len()
        )));
    }
    if let Some(c) = host.chars().find(|c| !is_host_char(*c)) {
        return Err(Error::invalid_option(format!(
            "owner host {host:?} contains {c:?}; only letters, digits, '.', '_' and '-' are allowed"
        )));
    }
    Ok(())
}

impl fmt::Debug for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_round_trips() {
        let a = OwnerId::new("web-1.example", 4242, 0xdead_beef).expect("valid");
        assert_eq!(a.key(), "web-1.example:4242:00000000deadbeef");
        assert_eq!(OwnerId::parse(&a.key()), Ok(a.clone()));
        let b = a.with_host_id(7);
        assert_eq!(b.key(), "#7@web-1.example:4242:00000000deadbeef");
        assert_eq!(OwnerId::parse(&b.key()), Ok(b));
    }

    #[test]
    fn bad_hosts_are_rejected_and_sanitized() {
        for bad in ["", "a:b", "a/b", "a b", "é"] {
            let e = OwnerId::new(bad, 1, 1).expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
        }
        assert_eq!(OwnerId::sanitize_host("my host:1/é"), "my-host-1--");
        assert_eq!(OwnerId::sanitize_host(""), "localhost");
        assert_eq!(OwnerId::sanitize_host(&"h".repeat(100)).len(), 64);
    }

    #[test]
    fn malformed_keys_are_store_errors() {
        for bad in [
            "",
            "a:1",
            "a:1:xyz",
            "a:1:00000000000000001:2",
            "#x@a:1:0000000000000001",
        ] {
            assert_eq!(
                OwnerId::parse(bad).map_err(|e| e.kind()),
                Err(ErrorKind::StoreError),
                "{bad}"
            );
        }
    }

    #[test]
    fn tie_break_prefers_host_ids_then_text() {
        let a = OwnerId::new("a", 1, 1).expect("valid");
        let b = OwnerId::new("b", 1, 1).expect("valid");
        assert_eq!(a.tie_break(&b), Ordering::Less);
        let b7 = b.clone().with_host_id(7);
        assert_eq!(b7.tie_break(&a), Ordering::Less);
        assert_eq!(a.with_host_id(9).tie_break(&b7), Ordering::Greater);
    }
}
