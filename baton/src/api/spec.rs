//! [`LockerSpec`]: a locker described as bindings receive one from their language (a store
//! URL and options as plain text and durations), opened in one place so that C, C++ and Python
//! read the same options the same way.

use std::time::Duration;

use baton_kernel::{Error, ErrorKind, Result, Strategy};

use crate::api::locker::{Locker, LockerBuilder};
use crate::stores::url::open_store;

/// A store URL and a locker's options, each `None` for the default.
#[derive(Clone, Copy, Debug)]
pub struct LockerSpec<'a> {
    /// The store (`memory:`, `sqlite:///path.db`, `postgres://…`, `mysql://…`,
    /// `cassandra://h1,h2/keyspace`).
    pub url: &'a str,
    /// `"unique-insert"`, `"bakery"` or `"column-prefix"`.
    pub strategy: Option<&'a str>,
    /// The lease.
    pub ttl: Option<Duration>,
    /// How long a lock waits for another holder ([`Duration::MAX`]: forever).
    pub wait_timeout: Option<Duration>,
    /// Plain consistency on Cassandra: `one`, `quorum`, `local_quorum`, `each_quorum`, `all`.
    pub consistency: Option<&'a str>,
    /// The lock table, added to the URL's query as `table=`.
    pub table: Option<&'a str>,
    /// Whether held locks renew their leases in the background.
    pub keep_alive: bool,
    /// A file holding the store's password (network stores), added to the URL's query as
    /// `password_file=`, so that no password need be written in the URL.
    pub password_file: Option<&'a str>,
    /// Names are dot-separated paths ([`LockerBuilder::paths`]).
    pub paths: bool,
}

impl<'a> LockerSpec<'a> {
    /// The store at `url` with every option at its default.
    pub fn new(url: &'a str) -> Self {
        LockerSpec {
            url,
            strategy: None,
            ttl: None,
            wait_timeout: None,
            consistency: None,
            table: None,
            keep_alive: true,
            password_file: None,
            paths: false,
        }
    }

    /// Opens the locker (never connects). Errors: [`ErrorKind::InvalidOption`] naming the bad
    /// URL, strategy, consistency or out-of-range duration.
    pub fn open(&self) -> Result<Locker> {
        let mut url = self.url.to_owned();
        for (key, value) in [("table", self.table), ("password_file", self.password_file)] {
            if let Some(value) = value {
                let separator = if url.contains('?') { '&' } else { '?' };
                url = format!("{url}{separator}{key}={}", query_escape(value));
            }
        }
        let mut builder = LockerBuilder::new(open_store(&url)?)
            .keep_alive(self.keep_alive)
            .paths(self.paths);
        if let Some(ttl) = self.ttl {
            builder = builder.ttl(ttl);
        }
        if let Some(wait) = self.wait_timeout {
            builder = builder.wait_timeout(wait);
        }
        if let Some(strategy) = self.strategy {
            builder = builder.strategy(strategy.parse::<Strategy>()?);
        }
        if let Some(level) = self.consistency {
            builder = builder.consistency(consistency(level)?);
        }
        builder.build()
    }
}

#[cfg(feature = "cassandra")]
fn consistency(level: &str) -> Result<baton_kernel::Consistency> {
    crate::stores::cassandra::parse_consistency(level).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOption,
            format!("unknown consistency {level:?} (one, quorum, local_quorum, each_quorum, all)"),
        )
    })
}

#[cfg(not(feature = "cassandra"))]
fn consistency(level: &str) -> Result<baton_kernel::Consistency> {
    Err(Error::new(
        ErrorKind::InvalidOption,
        format!("consistency {level:?} applies to the Cassandra store, which this build lacks"),
    ))
}

/// `text` with the characters that end or split a URL query value escaped (`%`, `&`, `#`,
/// `+`, `=`, space, and any non-printable byte), so a path such as `/run/secrets/db pw` stays
/// one value.
fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'%' | b'&' | b'#' | b'+' | b'=' | b'?' | b' ' => out.push_str(&format!("%{byte:02X}")),
            b if b.is_ascii_graphic() => out.push(char::from(b)),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(query_escape("/run/secrets/db pw"), "/run/secrets/db%20pw");
        assert_eq!(query_escape("a&b=c#d%e+f?"), "a%26b%3Dc%23d%25e%2Bf%3F");
        assert_eq!(query_escape("/ok/path.pem"), "/ok/path.pem");
    }

    #[test]
    fn options_are_read_or_refused_by_name() {
        let mut spec = LockerSpec::new("memory:");
        spec.strategy = Some("bakery");
        spec.ttl = Some(Duration::from_secs(5));
        assert!(spec.open().is_ok());
        spec.strategy = Some("queue");
        assert_eq!(
            spec.open().map(drop).map_err(|e| e.kind()),
            Err(ErrorKind::InvalidOption)
        );
        spec.strategy = None;
        spec.ttl = Some(Duration::ZERO);
        assert_eq!(
            spec.open().map(drop).map_err(|e| e.kind()),
            Err(ErrorKind::InvalidOption)
        );
    }
}
