//! What the TLS tests of every store share: editing a URL's parameters, and what a refused
//! first use must look like.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use baton::{Error, ErrorKind};
use rustls::pki_types::pem::PemObject;

/// `url` with `key=value` in place of its own value of `key` (added if it has none; removed
/// when `value` is `None`).
pub fn param(url: &str, key: &str, value: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(key))
        .map(str::to_owned)
        .collect();
    if let Some(value) = value {
        pairs.push(format!("{key}={value}"));
    }
    format!("{base}?{}", pairs.join("&"))
}

/// Asserts that a first use of `url`, which gave `outcome` after `took`, failed with a store
/// error naming `cause`, within `bound`; returns the error.
pub fn assert_refused(
    url: &str,
    outcome: Result<(), Error>,
    took: Duration,
    cause: &str,
    bound: Duration,
) -> Error {
    let e = outcome.expect_err(url);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::StoreUnavailable | ErrorKind::StoreError
        ),
        "{url}: {e}"
    );
    assert!(e.message().contains(cause), "{url}: {cause:?} not in: {e}");
    assert!(took < bound, "{url}: took {took:?}");
    e
}

/// A TLS server on 127.0.0.1 in name only: to every connection it speaks `greet` (the
/// database's own way of agreeing to TLS, if any), then shows certificate `cert` of
/// `scripts/tls` (`cert.pem` and `cert.key` in `dir`) and speaks nothing after the handshake.
/// Returns its port; its threads end with the test process.
pub fn tls_server(
    dir: &std::path::Path,
    cert: &str,
    greet: fn(&mut std::net::TcpStream) -> std::io::Result<()>,
) -> u16 {
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(dir.join(format!("{cert}.pem")))
        .expect("the certificate file")
        .collect::<Result<Vec<_>, _>>()
        .expect("a certificate");
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(dir.join(format!("{cert}.key")))
        .expect("the key file");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("a server certificate"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    // Every attempt of the client (it retries) gets the same certificate.
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(mut socket) = socket else { continue };
            let config = Arc::clone(&config);
            std::thread::spawn(move || {
                let _ = socket.set_read_timeout(Some(Duration::from_secs(20)));
                if greet(&mut socket).is_err() {
                    return;
                }
                let Ok(mut tls) = rustls::ServerConnection::new(config) else {
                    return;
                };
                // Ends when the client gives up on the certificate.
                while tls.is_handshaking() {
                    if tls.complete_io(&mut socket).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}
