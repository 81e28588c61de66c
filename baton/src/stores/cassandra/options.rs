//! [`CassandraOptions`] and the `cassandra://` URLs that carry them.

use std::path::PathBuf;
use std::time::Duration;

use baton_kernel::{Consistency, Error, ErrorKind, Result, SerialConsistency};

use super::schema::{validate_identifier, DEFAULT_KEYSPACE, DEFAULT_TABLE};
use super::tls::{CassandraTls, TlsMode};
use crate::stores::credentials;
use crate::stores::url_text::params::{self, percent_decode};
use crate::stores::url_text::{redact, redact_in};

/// The CQL native-protocol port used when a host names none.
pub const DEFAULT_PORT: u16 = 9042;

/// How a keyspace created by baton replicates (used only when the keyspace is missing and
/// `create` is on; an existing keyspace is never altered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replication {
    /// `SimpleStrategy` with this replication factor (URL `replication=3`).
    Simple(u32),
    /// `NetworkTopologyStrategy` with a factor per data centre (URL `replication=dc1:3,dc2:3`).
    Network(Vec<(String, u32)>),
}

impl Replication {
    /// The CQL map of `CREATE KEYSPACE … WITH replication = <map>`. Data-centre names are
    /// validated identifiers, so they can be quoted safely.
    pub(crate) fn cql(&self) -> String {
        match self {
            Replication::Simple(n) => baton_statements::cql::simple_replication(*n),
            Replication::Network(dcs) => {
                let mut out = String::from("{'class': 'NetworkTopologyStrategy'");
                for (dc, n) in dcs {
                    out.push_str(&format!(", '{dc}': {n}"));
                }
                out.push('}');
                out
            }
        }
    }
}

/// How a Cassandra store reaches and uses its cluster.
///
/// ```
/// # use baton::cassandra::CassandraOptions;
/// let options = CassandraOptions::new(["10.0.0.1", "10.0.0.2:9142"])
///     .keyspace("locks")
///     .table("libQtCassandraLockTable")
///     .create(false);
/// assert_eq!(options.table, "libQtCassandraLockTable");
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CassandraOptions {
    /// Contact points, `host` or `host:port` (default port 9042). The driver discovers the
    /// rest of the cluster from them.
    pub hosts: Vec<String>,
    /// The keyspace of the lock table (default `baton`): `[A-Za-z][A-Za-z0-9_]{0,47}`, used
    /// quoted (so case-sensitive).
    pub keyspace: String,
    /// The lock table (default `baton_locks`), same rules as the keyspace. QCassandraLock users
    /// keep their own name (such as `libQtCassandraLockTable`).
    pub table: String,
    /// Whether the first command creates the keyspace and table when missing (default true).
    /// When false they are checked, and a missing one fails with the CQL to run.
    pub create: bool,
    /// Replication of a keyspace baton creates (default `SimpleStrategy`, factor 1).
    pub replication: Replication,
    /// When set, every plain command runs at this level instead of the one it carries (the
    /// URL's `consistency=`). When unset (the default), each command's own level is used
    /// ([`LockerBuilder::consistency`](crate::LockerBuilder::consistency), default QUORUM).
    pub consistency: Option<Consistency>,
    /// When set, every conditional command and serial read uses this serial level instead of
    /// the one it carries (the URL's `serial=`).
    pub serial: Option<SerialConsistency>,
    /// Client-side timeout of one statement (default 10 s; keep it above the server's
    /// `write_request_timeout` and `cas_contention_timeout` so the server's more precise
    /// timeout arrives first). A statement that exceeds it counts as maybe applied.
    pub timeout: Duration,
    /// How long to wait for a TCP connection to a node (default 5 s).
    pub connect_timeout: Duration,
    /// User name for password authentication, if the cluster requires it.
    pub user: Option<String>,
    /// Password for password authentication.
    pub password: Option<String>,
    /// TLS to every node (the URL's `sslmode=`, `sslrootcert=`, `sslcert=`, `sslkey=`);
    /// `None`: plain TCP.
    pub tls: Option<CassandraTls>,
}

impl std::fmt::Debug for CassandraOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassandraOptions")
            .field("hosts", &self.hosts)
            .field("keyspace", &self.keyspace)
            .field("table", &self.table)
            .field("create", &self.create)
            .field("replication", &self.replication)
            .field("consistency", &self.consistency)
            .field("serial", &self.serial)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("tls", &self.tls)
            .finish()
    }
}

impl CassandraOptions {
    /// Options with these contact points and every default.
    pub fn new<I, S>(hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        CassandraOptions {
            hosts: hosts.into_iter().map(Into::into).collect(),
            keyspace: String::from(DEFAULT_KEYSPACE),
            table: String::from(DEFAULT_TABLE),
            create: true,
            replication: Replication::Simple(1),
            consistency: None,
            serial: None,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            user: None,
            password: None,
            tls: None,
        }
    }

    /// The keyspace.
    pub fn keyspace(mut self, keyspace: impl Into<String>) -> Self {
        self.keyspace = keyspace.into();
        self
    }

    /// The lock table.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Whether to create the keyspace and table on first use.
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }

    /// Replication of a keyspace baton creates.
    pub fn replication(mut self, replication: Replication) -> Self {
        self.replication = replication;
        self
    }

    /// Runs every plain command at `consistency`, whatever it carries.
    pub fn consistency(mut self, consistency: Consistency) -> Self {
        self.consistency = Some(consistency);
        self
    }

    /// Runs every conditional command and serial read at `serial`, whatever it carries.
    pub fn serial(mut self, serial: SerialConsistency) -> Self {
        self.serial = Some(serial);
        self
    }

    /// The client-side statement timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The TCP connection timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Password authentication.
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self.password = Some(password.into());
        self
    }

    /// TLS to every node.
    pub fn tls(mut self, tls: CassandraTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Checks every option ([`ErrorKind::InvalidOption`] naming the first bad one).
    pub fn validate(&self) -> Result<()> {
        if self.hosts.is_empty() {
            return Err(invalid("a Cassandra store needs at least one host".into()));
        }
        for host in &self.hosts {
            split_host(host)?;
        }
        validate_identifier("keyspace", &self.keyspace)?;
        validate_identifier("table", &self.table)?;
        match &self.replication {
            Replication::Simple(n) if !(1..=32).contains(n) => {
                return Err(invalid(format!(
                    "replication factor {n} is out of range (1 to 32)"
                )))
            }
            Replication::Network(dcs) if dcs.is_empty() => {
                return Err(invalid("replication names no data centre".into()))
            }
            Replication::Network(dcs) => {
                for (dc, n) in dcs {
                    if dc.is_empty()
                        || dc.len() > 64
                        || !dc
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    {
                        return Err(invalid(format!(
                            "data centre name {dc:?} must be 1 to 64 letters, digits, '_', '-' or '.'"
                        )));
                    }
                    if !(1..=32).contains(n) {
                        return Err(invalid(format!(
                            "replication factor {n} of data centre {dc} is out of range (1 to 32)"
                        )));
                    }
                }
            }
            Replication::Simple(_) => {}
        }
        for (what, t) in [
            ("statement timeout", self.timeout),
            ("connect timeout", self.connect_timeout),
        ] {
            if t < Duration::from_millis(10) || t > Duration::from_secs(3600) {
                return Err(invalid(format!(
                    "Cassandra {what} {t:?} is out of range (10 ms to 1 h)"
                )));
            }
        }
        if self.user.is_some() != self.password.is_some() {
            return Err(invalid(
                "Cassandra credentials need both a user and a password".into(),
            ));
        }
        Ok(())
    }

    /// The contact points as `host:port`.
    pub(crate) fn contact_points(&self) -> Result<Vec<String>> {
        self.hosts
            .iter()
            .map(|h| split_host(h).map(|(host, port)| format!("{host}:{port}")))
            .collect()
    }
}

/// `host` or `host:port` (IPv6 addresses in brackets: `[::1]:9042`).
fn split_host(text: &str) -> Result<(String, u16)> {
    let bad = || {
        invalid(format!(
            "Cassandra host {text:?} is not host or host:port (IPv6 in brackets)"
        ))
    };
    if let Some(rest) = text.strip_prefix('[') {
        let (addr, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail {
            "" => DEFAULT_PORT,
            _ => tail
                .strip_prefix(':')
                .and_then(|p| p.parse().ok())
                .ok_or_else(bad)?,
        };
        return Ok((format!("[{addr}]"), port));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
        None => (text, DEFAULT_PORT),
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !host_ok || port == 0 {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// Parses a consistency level name, case-insensitively.
pub fn parse_consistency(text: &str) -> Option<Consistency> {
    text.parse().ok()
}

/// Parses a serial consistency level name, case-insensitively.
pub fn parse_serial(text: &str) -> Option<SerialConsistency> {
    match text.to_ascii_lowercase().as_str() {
        "serial" => Some(SerialConsistency::Serial),
        "local_serial" | "local-serial" => Some(SerialConsistency::LocalSerial),
        _ => None,
    }
}

/// Parses `cassandra://[user:password@]host1[:port],host2/keyspace?params` (scheme `scylla`
/// too). Errors are [`ErrorKind::InvalidOption`] naming the URL with its password masked.
pub fn parse(url: &str) -> Result<CassandraOptions> {
    let shown = redact(url);
    let bad = |why: &str| {
        let why = redact_in(url, why);
        invalid(format!("malformed store URL {shown:?}: {why}"))
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("a Cassandra URL looks like cassandra://host1,host2/keyspace"))?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "cassandra" | "scylla") {
        return Err(bad(&format!("{scheme:?} is not cassandra or scylla")));
    }
    let (base, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match base.split_once('/') {
        Some((a, p)) => (a, p),
        None => (base, ""),
    };
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if hosts.is_empty() {
        return Err(bad("it names no host"));
    }
    let mut options = CassandraOptions::new(hosts.split(',').map(str::trim));
    let mut user_only = None;
    if let Some(info) = userinfo {
        match info.split_once(':') {
            Some((user, password)) => {
                options = options.credentials(percent_decode(user), percent_decode(password))
            }
            // The password then comes from password_file= or BATON_STORE_PASSWORD.
            None => user_only = Some(percent_decode(info)),
        }
    }
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        options.keyspace = path.to_owned();
    }
    let mut create_given = None;
    let mut weak_allowed = false;
    let mut password_file = None;
    let (mut mode, mut ca, mut cert, mut key_file) = (None, None, None, None);
    for (key, value) in params::pairs(query) {
        match key {
            "password_file" => password_file = Some(PathBuf::from(percent_decode(value))),
            "sslmode" => {
                mode = Some(TlsMode::parse(value).map_err(|()| {
                    bad(&format!(
                        "sslmode={value:?} is not disable, require, verify-ca or verify-full"
                    ))
                })?)
            }
            "sslrootcert" => ca = Some(PathBuf::from(percent_decode(value))),
            "sslcert" => cert = Some(PathBuf::from(percent_decode(value))),
            "sslkey" => key_file = Some(PathBuf::from(percent_decode(value))),
            "table" => options.table = value.to_owned(),
            "allow_weak_consistency" => {
                weak_allowed = params::flag(key, value).map_err(|why| bad(&why))?
            }
            "create" => create_given = Some(params::flag(key, value).map_err(|why| bad(&why))?),
            "consistency" => {
                options.consistency = Some(parse_consistency(value).ok_or_else(|| {
                    bad(&format!(
                        "consistency={value:?} is not one, quorum, local_quorum, each_quorum or all"
                    ))
                })?)
            }
            "serial" => {
                options.serial = Some(parse_serial(value).ok_or_else(|| {
                    bad(&format!("serial={value:?} is not serial or local_serial"))
                })?)
            }
            "replication" => options.replication = parse_replication(value).ok_or_else(|| {
                bad(&format!(
                    "replication={value:?} is not a factor (3) or data centres with factors (dc1:3,dc2:3)"
                ))
            })?,
            "timeout" => options.timeout = params::duration(key, value).map_err(|why| bad(&why))?,
            "connect_timeout" => {
                options.connect_timeout = params::duration(key, value).map_err(|why| bad(&why))?
            }
            other => {
                return Err(bad(&format!(
                    "unknown parameter {other:?} (Cassandra store URLs take table, create, consistency, allow_weak_consistency, serial, replication, timeout, connect_timeout, password_file, sslmode, sslrootcert, sslcert and sslkey)"
                )))
            }
        }
    }
    // ONE overrides every plain command of every lock on this store: the bakery and
    // column-prefix strategies decide from plain reads that must see every completed write,
    // which a single replica does not promise (two holders at once when a replica misses a
    // write). Unique insert decides by lightweight transactions only, so a store used only by
    // it may opt in.
    if options.consistency == Some(Consistency::One) && !weak_allowed {
        return Err(bad(
            "consistency=one is below a quorum: the bakery and column-prefix strategies then allow two holders at once when a replica misses a write; use quorum or local_quorum, or add allow_weak_consistency=true if only unique insert uses this store",
        ));
    }
    if let Some(create) = create_given {
        options.create = create;
    }
    // TLS: sslrootcert=, sslcert= or sslkey= alone mean verify-full; sslmode=disable with any of
    // them is a contradiction.
    let tls_files = ca.is_some() || cert.is_some() || key_file.is_some();
    match mode {
        Some(None) if tls_files => {
            return Err(bad(
                "sslmode=disable with sslrootcert=, sslcert= or sslkey=: TLS is off, so the files would be ignored",
            ))
        }
        Some(None) => {}
        Some(Some(mode)) => options.tls = Some(tls_of(mode, ca, cert, key_file)),
        None if tls_files => options.tls = Some(tls_of(TlsMode::VerifyFull, ca, cert, key_file)),
        None => {}
    }
    // The password: the URL's, else the file's, else the environment's.
    match (&options.password, password_file, user_only) {
        (Some(_), Some(_), _) => {
            return Err(bad(
                "it has a password and password_file= names another: give it once",
            ))
        }
        (Some(_), None, _) => {}
        (None, Some(_), None) => {
            return Err(bad(
                "password_file= needs the user name in the URL (cassandra://user@host/…)",
            ))
        }
        (None, Some(file), Some(user)) => {
            let password = credentials::password_from_file(&file)
                .map_err(|e| invalid(format!("store URL {shown:?}: {}", e.message())))?;
            options = options.credentials(user, password);
        }
        (None, None, Some(user)) => match credentials::password_from_env() {
            Some(password) => options = options.credentials(user, password),
            None => {
                return Err(bad(&format!(
                    "it names user {user:?} without a password: give it in the URL, with password_file=, or in {}",
                    credentials::PASSWORD_ENV
                )))
            }
        },
        (None, None, None) => {}
    }
    options
        .validate()
        .map_err(|e| invalid(format!("store URL {shown:?}: {}", e.message())))?;
    Ok(options)
}

fn tls_of(
    mode: TlsMode,
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
) -> CassandraTls {
    let mut tls = CassandraTls::new(mode);
    tls.ca_file = ca;
    tls.cert_file = cert;
    tls.key_file = key;
    tls
}

fn parse_replication(text: &str) -> Option<Replication> {
    if let Ok(n) = text.parse() {
        return Some(Replication::Simple(n));
    }
    let mut dcs = Vec::new();
    for part in text.split(',') {
        let (dc, n) = part.split_once(':')?;
        dcs.push((dc.to_owned(), n.parse().ok()?));
    }
    Some(Replication::Network(dcs))
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidOption, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url() {
        let o = parse("cassandra://app:p%40ss@h1,h2:9142,[::1]/locks?consistency=local_quorum&serial=local_serial&replication=3&table=QtLocks&create=false&timeout=2s&connect_timeout=500ms")
            .expect("valid");
        assert_eq!(o.hosts, vec!["h1", "h2:9142", "[::1]"]);
        assert_eq!(
            o.contact_points().expect("hosts"),
            vec!["h1:9042", "h2:9142", "[::1]:9042"]
        );
        assert_eq!(o.keyspace, "locks");
        assert_eq!(o.table, "QtLocks");
        assert!(!o.create);
        assert_eq!(o.replication, Replication::Simple(3));
        assert_eq!(o.consistency, Some(Consistency::LocalQuorum));
        assert_eq!(o.serial, Some(SerialConsistency::LocalSerial));
        assert_eq!(o.timeout, Duration::from_secs(2));
        assert_eq!(o.connect_timeout, Duration::from_millis(500));
        assert_eq!(o.user.as_deref(), Some("app"));
        assert_eq!(o.password.as_deref(), Some("p@ss"));
        assert!(!format!("{o:?}").contains("p@ss"));
    }

    #[test]
    fn defaults_and_network_replication() {
        let o = parse("cassandra://127.0.0.1").expect("valid");
        assert_eq!(o.keyspace, "baton");
        assert_eq!(o.table, "baton_locks");
        assert!(o.create);
        assert_eq!(o.consistency, None);
        let o = parse("scylla://h/ks?replication=dc1:3,dc2:2").expect("valid");
        assert_eq!(
            o.replication,
            Replication::Network(vec![("dc1".into(), 3), ("dc2".into(), 2)])
        );
        assert_eq!(
            o.replication.cql(),
            "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2}"
        );
    }

    #[test]
    fn consistency_one_needs_an_explicit_opt_in() {
        let e = parse("cassandra://h/ks?consistency=one").expect_err("refused");
        assert!(e.message().contains("allow_weak_consistency=true"), "{e}");
        let o = parse("cassandra://h/ks?consistency=one&allow_weak_consistency=true")
            .expect("opted in");
        assert_eq!(o.consistency, Some(Consistency::One));
    }

    #[test]
    fn bad_urls_are_invalid_options_without_passwords() {
        for url in [
            "cassandra://u:s3cret@h/ks?tabel=x",
            "cassandra://u:s3cret@h/ks?table=x-y",
            "cassandra://u:s3cret@h/ks;drop",
            "cassandra://u:s3cret@h/ks?consistency=serial",
            "cassandra://u:s3cret@h/ks?consistency=one",
            "cassandra://u:s3cret@h/ks?consistency=one&allow_weak_consistency=maybe",
            "cassandra://u:s3cret@h/ks?serial=quorum",
            "cassandra://u:s3cret@h/ks?replication=0",
            "cassandra://u:s3cret@h/ks?replication=dc'1:3",
            "cassandra://u:s3cret@h/ks?create=maybe",
            "cassandra://u:s3cret@h/ks?timeout=0s",
            "cassandra://u:s3cret@h:port/ks",
            "cassandra://u:s3cret@/ks",
            "cassandra:h/ks",
        ] {
            let e = parse(url).expect_err(url);
            assert_eq!(e.kind(), ErrorKind::InvalidOption, "{url}");
            assert!(!e.message().contains("s3cret"), "{e}");
        }
    }
}
