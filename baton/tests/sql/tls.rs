//! TLS and credentials on PostgreSQL and MariaDB, against the test command's TLS-only users
//! (`scripts/postgres url-tls`, `scripts/mariadb url-tls`) and certificates (`scripts/tls`):
//! every failure at open is a store error that names its cause, in bounded time, and never
//! shows a password. (The conformance tests of `per_db!` run over verified TLS too, as
//! `postgres_tls` and `mysql_tls`.)

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton::{Error, ErrorKind, LockRequest, Locker};

use crate::tls_support::{assert_refused, param, tls_server};

use crate::common::{base_url, Db};

/// The test certificates, or `None` to skip (with the TLS URLs unset).
fn tls_dir() -> Option<PathBuf> {
    base_url(Db::PostgresTls)?;
    Some(PathBuf::from(
        std::env::var("BATON_TLS_DIR").expect("BATON_TLS_DIR is set with the TLS URLs"),
    ))
}

/// The first use of a store: the lock `name` taken and released, or the error that stopped it,
/// and how long that took. The tests run side by side on one database, so each that takes a
/// lock names its own: with one name, two try-once locks race and one is refused as busy
/// (seen in CI, stop 60).
async fn first_use(url: &str, name: &str) -> (Result<(), Error>, Duration) {
    let started = Instant::now();
    let outcome = async {
        let locker = Locker::open(url)?;
        let mut guard = locker
            .lock_with(name, LockRequest::new().try_once())
            .await?;
        guard.release().await
    }
    .await;
    (outcome, started.elapsed())
}

/// Asserts that `url` fails at its first use with a store error naming `cause`, within 20 s.
async fn refused(url: &str, cause: &str) -> Error {
    let (outcome, took) = first_use(url, "tls-refused").await;
    assert_refused(url, outcome, took, cause, Duration::from_secs(20))
}

/// Each TLS URL with the names of its own parameters: (url, mode key, CA key, cert key, key key).
fn urls() -> Vec<(String, [&'static str; 4])> {
    let mut out = Vec::new();
    if let Some(url) = base_url(Db::PostgresTls) {
        out.push((url, ["sslmode", "sslrootcert", "sslcert", "sslkey"]));
    }
    if let Some(url) = base_url(Db::MySqlTls) {
        out.push((url, ["ssl-mode", "ssl-ca", "ssl-cert", "ssl-key"]));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verified_tls_with_a_password_file_takes_a_lock() {
    for (url, _) in urls() {
        let (outcome, _) = first_use(&url, "tls-verified").await;
        outcome.unwrap_or_else(|e| panic!("{url}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_refused_as_untrusted() {
    let Some(dir) = tls_dir() else { return };
    let other = dir.join("other-ca.pem");
    for (url, [_, ca, _, _]) in urls() {
        let url = param(&url, ca, Some(other.to_str().expect("UTF-8")));
        refused(&url, "not trusted").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_mismatch_is_refused() {
    for (url, _) in urls() {
        // The servers' certificate names localhost only.
        let url = url.replacen("@localhost:", "@127.0.0.1:", 1);
        refused(&url, "name mismatch").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tls_only_users_are_refused_without_tls() {
    let Some(pg) = base_url(Db::PostgresTls) else {
        return;
    };
    let url = param(&param(&pg, "sslrootcert", None), "sslmode", Some("disable"));
    // pg_hba.conf's reject line.
    refused(&url, "no encryption").await;
    if let Some(my) = base_url(Db::MySqlTls) {
        let url = param(&param(&my, "ssl-ca", None), "ssl-mode", Some("DISABLED"));
        // REQUIRE SSL: MariaDB says only that access is denied.
        refused(&url, "Access denied").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_without_a_ca_encrypts_without_checking() {
    // As libpq's sslmode=require: the certificate (of a CA no system trusts) is not checked.
    let modes = [("sslmode", "require"), ("ssl-mode", "REQUIRED")];
    for ((url, [mode, ca, _, _]), (_, value)) in urls().into_iter().zip(modes) {
        let url = param(&param(&url, ca, None), mode, Some(value));
        let (outcome, _) = first_use(&url, "tls-require").await;
        outcome.unwrap_or_else(|e| panic!("{url}: {e}"));
        // verify-full without the CA: the system's trust store does not know the test CA.
        let strict = if mode == "sslmode" {
            "verify-full"
        } else {
            "VERIFY_IDENTITY"
        };
        refused(&param(&url, mode, Some(strict)), "not trusted").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_logs_in_where_the_server_demands_one() {
    let Some(dir) = tls_dir() else { return };
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    let users = [("baton_tls", "baton_cert"), ("baton_tls", "baton_x509")];
    for ((url, [_, _, cert_key, key_key]), (from, to)) in urls().into_iter().zip(users) {
        let url = param(&url, "password_file", None).replacen(from, to, 1);
        let url = param(&url, cert_key, Some(cert.to_str().expect("UTF-8")));
        let url = param(&url, key_key, Some(key.to_str().expect("UTF-8")));
        let (outcome, _) = first_use(&url, "tls-client-certificate").await;
        outcome.unwrap_or_else(|e| panic!("{url}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_says_so_and_no_password_is_ever_shown() {
    let Some(dir) = tls_dir() else { return };
    let secret = "Wr0ng-pa55-never-shown";
    let file = dir.join(format!("wrong-password-{}", std::process::id()));
    std::fs::write(&file, format!("{secret}\n")).expect("write");
    let causes = [
        "password authentication failed",
        "authentication failed: Access denied",
    ];
    for ((url, _), cause) in urls().into_iter().zip(causes) {
        let url = param(&url, "password_file", Some(file.to_str().expect("UTF-8")));
        let e = refused(&url, cause).await;
        assert!(!format!("{e} {e:?}").contains(secret), "{e:?}");
        // A password in the URL is never shown either: not by the locker, not by its errors.
        let inline = url.replacen("baton_tls@", &format!("baton_tls:{secret}@"), 1);
        let inline = param(&inline, "password_file", None);
        let locker = Locker::open(&inline).expect("valid URL");
        assert!(!format!("{locker:?}").contains(secret), "{locker:?}");
        let e = locker
            .lock_with("tls-refused", LockRequest::new().try_once())
            .await
            .expect_err("wrong password");
        assert!(!format!("{e} {e:?}").contains(secret), "{e:?}");
        // Both at once is refused, naming neither.
        let both = param(
            &inline,
            "password_file",
            Some(file.to_str().expect("UTF-8")),
        );
        let e = Locker::open(&both).expect_err("given twice");
        assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
        assert!(!format!("{e} {e:?}").contains(secret), "{e:?}");
    }
    std::fs::remove_file(&file).expect("clean up");
}

/// PostgreSQL's way: the client's SSLRequest (8 bytes), answered `S`.
fn postgres_greeting(socket: &mut std::net::TcpStream) -> std::io::Result<()> {
    let mut request = [0u8; 8];
    socket.read_exact(&mut request)?;
    socket.write_all(b"S")
}

/// MariaDB's way: the server's handshake (protocol 10, offering TLS), then the client's
/// SSLRequest packet (its 4-byte header says how long it is).
fn mariadb_greeting(socket: &mut std::net::TcpStream) -> std::io::Result<()> {
    // CLIENT_PROTOCOL_41 | CLIENT_SSL | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
    let capabilities: u32 = 0x0200 | 0x0800 | 0x8000 | 0x0008_0000;
    let mut payload = vec![10u8];
    payload.extend_from_slice(b"5.5.5-10.11.0-MariaDB\0");
    payload.extend_from_slice(&1u32.to_le_bytes()); // connection id
    payload.extend_from_slice(b"abcdefgh\0"); // scramble, part 1
    payload.extend_from_slice(&(capabilities as u16).to_le_bytes());
    payload.push(45); // utf8mb4
    payload.extend_from_slice(&2u16.to_le_bytes()); // SERVER_STATUS_AUTOCOMMIT
    payload.extend_from_slice(&((capabilities >> 16) as u16).to_le_bytes());
    payload.push(21); // scramble length
    payload.extend_from_slice(&[0; 10]);
    payload.extend_from_slice(b"ijklmnopqrst\0"); // scramble, part 2
    payload.extend_from_slice(b"mysql_native_password\0");
    let mut packet = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    packet.push(0); // sequence id
    packet.extend_from_slice(&payload);
    socket.write_all(&packet)?;
    let mut header = [0u8; 4];
    socket.read_exact(&mut header)?;
    let mut request = vec![0u8; usize::from(header[0]) | usize::from(header[1]) << 8];
    socket.read_exact(&mut request)
}

/// `url` pointed at localhost:`port`.
fn at_port(url: &str, port: u16) -> String {
    let at = url.find("@localhost:").expect("host localhost") + "@localhost:".len();
    let end = at + url[at..].find('/').expect("a database");
    format!("{}{port}{}", &url[..at], &url[end..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_is_refused() {
    let Some(dir) = tls_dir() else { return };
    if let Some(url) = base_url(Db::PostgresTls) {
        refused(
            &at_port(&url, tls_server(&dir, "expired", postgres_greeting)),
            "expired",
        )
        .await;
    }
    if let Some(url) = base_url(Db::MySqlTls) {
        refused(
            &at_port(&url, tls_server(&dir, "expired", mariadb_greeting)),
            "expired",
        )
        .await;
    }
}
