//! TLS and credentials on Cassandra: node 1's TLS-only port (`scripts/cassandra url1-tls`,
//! exported as `BATON_CASSANDRA_TLS_URL`) with the certificates of `scripts/tls`
//! (`BATON_TLS_DIR`), and small TLS servers of this file's own that show an expired
//! certificate or one issued for another address. Every failure is a store error that names
//! its cause, in bounded time.
#![cfg(feature = "cassandra")]

#[path = "shared/tls_support.rs"]
mod tls_support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use baton::cassandra::{CassandraStore, TlsMode};
use baton::{Error, ErrorKind, LockRequest, Locker};

use tls_support::{assert_refused, param, tls_server};

/// The TLS URL and the certificates' directory, or `None` to skip.
fn tls() -> Option<(String, PathBuf)> {
    match std::env::var("BATON_CASSANDRA_TLS_URL") {
        Ok(url) if !url.is_empty() => Some((
            url,
            PathBuf::from(std::env::var("BATON_TLS_DIR").expect("BATON_TLS_DIR")),
        )),
        _ => {
            assert!(
                std::env::var("BATON_REQUIRE_SERVICES").as_deref() != Ok("1"),
                "BATON_REQUIRE_SERVICES=1 but BATON_CASSANDRA_TLS_URL is unset"
            );
            eprintln!("skipped: BATON_CASSANDRA_TLS_URL is not set");
            None
        }
    }
}

/// A lock taken and released on a fresh table at `url`, or the error that stopped it.
async fn first_use(url: &str) -> (Result<(), Error>, Duration) {
    // The tests run side by side: a counter, not a clock, tells their tables apart (the
    // nanoseconds elapsed since a moment ago were once used here, and can be equal).
    static TABLES: AtomicU32 = AtomicU32::new(0);
    let started = Instant::now();
    let table = format!(
        "tls_{}_{}",
        std::process::id(),
        TABLES.fetch_add(1, Ordering::Relaxed)
    );
    let url = param(url, "table", Some(&table));
    let outcome = async {
        let locker = Locker::open(&url)?;
        let mut guard = locker
            .lock_with("tls", LockRequest::new().try_once())
            .await?;
        guard.release().await
    }
    .await;
    (outcome, started.elapsed())
}

/// Asserts that `url` fails at its first use with a store error naming `cause`, within 30 s.
async fn refused(url: &str, cause: &str) -> Error {
    let (outcome, took) = first_use(url).await;
    assert_refused(url, outcome, took, cause, Duration::from_secs(30))
}

/// Cassandra's clients speak TLS at once: nothing to say first.
fn no_greeting(_: &mut std::net::TcpStream) -> std::io::Result<()> {
    Ok(())
}

/// `url` pointed at 127.0.0.1:`port`.
fn at_port(url: &str, port: u16) -> String {
    let start = url.find("://").expect("scheme") + 3;
    let end = start + url[start..].find('/').expect("a keyspace");
    format!("{}127.0.0.1:{port}{}", &url[..start], &url[end..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verified_tls_takes_and_hands_off_locks() {
    let Some((url, _)) = tls() else { return };
    let (outcome, _) = first_use(&url).await;
    outcome.unwrap_or_else(|e| panic!("{url}: {e}"));
    // Two lockers over TLS: exclusion and a fencing token that grows.
    let url = param(
        &url,
        "table",
        Some(&format!("tls_hand_{}", std::process::id())),
    );
    let (a, b) = (
        Locker::open(&url).expect("url"),
        Locker::open(&url).expect("url"),
    );
    let mut first = a.lock("tls job").await.expect("first");
    let busy = b
        .lock_with("tls job", LockRequest::new().try_once())
        .await
        .expect_err("held");
    assert_eq!(busy.kind(), ErrorKind::Busy, "{busy}");
    let token = first.token();
    first.release().await.expect("release");
    let mut second = b.lock("tls job").await.expect("second");
    assert!(second.token() > token);
    second.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_refused_as_untrusted() {
    let Some((url, dir)) = tls() else { return };
    let other = dir.join("other-ca.pem");
    refused(
        &param(&url, "sslrootcert", Some(other.to_str().expect("UTF-8"))),
        "not trusted",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_and_a_name_mismatch_are_refused() {
    let Some((url, dir)) = tls() else { return };
    refused(
        &at_port(&url, tls_server(&dir, "expired", no_greeting)),
        "expired",
    )
    .await;
    // Issued for 127.0.0.9, shown at 127.0.0.1.
    refused(
        &at_port(&url, tls_server(&dir, "wrong-name", no_greeting)),
        "name mismatch",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_connection_to_the_tls_port_fails_without_hanging() {
    let Some((url, _)) = tls() else { return };
    let plain = param(
        &param(&url, "sslrootcert", None),
        "sslmode",
        Some("disable"),
    );
    let (outcome, took) = first_use(&plain).await;
    let e = outcome.expect_err("a TLS-only port");
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}");
    assert!(e.message().contains("TLS"), "{e}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_encrypts_without_checking_and_a_client_certificate_is_sent() {
    let Some((url, dir)) = tls() else { return };
    let require = param(
        &param(&url, "sslrootcert", None),
        "sslmode",
        Some("require"),
    );
    let (outcome, _) = first_use(&require).await;
    outcome.unwrap_or_else(|e| panic!("{require}: {e}"));
    let verify_ca = param(&url, "sslmode", Some("verify-ca"));
    let (outcome, _) = first_use(&verify_ca).await;
    outcome.unwrap_or_else(|e| panic!("{verify_ca}: {e}"));
    let cert = dir.join("client.pem");
    let key = dir.join("client.key");
    let with_cert = param(
        &param(&url, "sslcert", Some(cert.to_str().expect("UTF-8"))),
        "sslkey",
        Some(key.to_str().expect("UTF-8")),
    );
    let (outcome, _) = first_use(&with_cert).await;
    outcome.unwrap_or_else(|e| panic!("{with_cert}: {e}"));
    // The parsed options, and a key without its certificate refused at open.
    let store = CassandraStore::open(&with_cert).expect("valid");
    let tls = store.options().tls.clone().expect("TLS");
    assert_eq!(tls.mode, TlsMode::VerifyFull);
    assert!(tls.cert_file.is_some() && tls.key_file.is_some());
    let half = param(&with_cert, "sslcert", None);
    let (outcome, _) = first_use(&half).await;
    let e = outcome.expect_err("a key alone");
    assert!(
        e.message().contains("sslcert= and sslkey= go together"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_come_from_a_file_and_are_never_shown() {
    let Some((url, dir)) = tls() else { return };
    let secret = "Wr0ng-cql-pa55";
    let file = dir.join(format!("cassandra-password-{}", std::process::id()));
    std::fs::write(&file, format!("{secret}\n")).expect("write");
    // The test cluster does not authenticate: the password is read and sent only if asked.
    let with_user = url.replacen("://", "://app@", 1);
    let from_file = param(
        &with_user,
        "password_file",
        Some(file.to_str().expect("UTF-8")),
    );
    let store = CassandraStore::open(&from_file).expect("valid");
    assert_eq!(store.options().password.as_deref(), Some(secret));
    assert!(!format!("{store:?} {:?}", store.options()).contains(secret));
    let (outcome, _) = first_use(&from_file).await;
    outcome.unwrap_or_else(|e| panic!("{e}"));
    // A user without a password anywhere: refused at open, naming where it may come from.
    if std::env::var("BATON_STORE_PASSWORD").is_err() {
        let e = CassandraStore::open(&with_user).expect_err("no password");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
        assert!(e.message().contains("BATON_STORE_PASSWORD"), "{e}");
    }
    let inline = url.replacen("://", &format!("://app:{secret}@"), 1);
    let e = CassandraStore::open(&param(&inline, "password_file", Some("/nonexistent")))
        .expect_err("given twice");
    assert!(!format!("{e} {e:?}").contains(secret), "{e:?}");
    std::fs::remove_file(&file).expect("clean up");
}
