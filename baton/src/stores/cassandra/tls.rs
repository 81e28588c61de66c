//! TLS to every node of a Cassandra cluster, with rustls (the TLS stack of the SQL stores too,
//! with the same crypto provider, *ring*).
//!
//! The URL says how much is checked, in libpq's words, so that one vocabulary serves every
//! store: `sslmode=disable` (the default: plain TCP), `require` (encrypted, the certificate not
//! checked), `verify-ca` (signed by a trusted CA), `verify-full` (that, and issued for the
//! node's address). `sslrootcert=` names a PEM file of CAs to trust instead of the system's
//! trust store; giving it without `sslmode` means `verify-full`. `sslcert=` and `sslkey=` give
//! a client certificate for clusters that demand one.
//!
//! The driver connects to each node by its IP address (the one it discovers from the cluster's
//! own tables), so `verify-full` checks that address against the certificate's subject
//! alternative names: a node's certificate must carry its IP address.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_kernel::{Error, ErrorKind, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// How much of a node's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// Encrypted; the certificate is not checked (a server in the middle goes unnoticed).
    Require,
    /// Signed by a trusted CA; the address it was issued for is not checked.
    VerifyCa,
    /// Signed by a trusted CA and issued for the node's address (the default with TLS).
    VerifyFull,
}

impl TlsMode {
    /// The mode `sslmode=` names (`None` for `disable`); `Err` for an unknown value.
    pub(crate) fn parse(value: &str) -> std::result::Result<Option<TlsMode>, ()> {
        match value {
            "disable" => Ok(None),
            "require" => Ok(Some(TlsMode::Require)),
            "verify-ca" => Ok(Some(TlsMode::VerifyCa)),
            "verify-full" => Ok(Some(TlsMode::VerifyFull)),
            _ => Err(()),
        }
    }
}

/// TLS to a Cassandra cluster: from the URL's `sslmode=`, `sslrootcert=`, `sslcert=` and
/// `sslkey=`, or built here (docs/cassandra-store.md, "TLS and passwords").
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CassandraTls {
    /// How much of each node's certificate is checked.
    pub mode: TlsMode,
    /// A PEM file of the CAs to trust (default: the system's trust store).
    pub ca_file: Option<PathBuf>,
    /// A PEM client certificate (chain), for clusters that demand one, with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's PEM private key.
    pub key_file: Option<PathBuf>,
}

impl CassandraTls {
    /// TLS checked as `mode`, trusting the system's CAs, without a client certificate.
    pub fn new(mode: TlsMode) -> CassandraTls {
        CassandraTls {
            mode,
            ca_file: None,
            cert_file: None,
            key_file: None,
        }
    }

    /// Trusts the CAs of this PEM file instead of the system's.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// Presents this client certificate (PEM files of the certificate chain and its key).
    pub fn client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.cert_file = Some(cert.into());
        self.key_file = Some(key.into());
        self
    }

    /// The rustls configuration every connection of the session uses. Reads the files now:
    /// [`ErrorKind::InvalidOption`] naming a file that cannot be read or holds no certificate
    /// or key.
    pub(crate) fn client_config(&self) -> Result<Arc<ClientConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(format!("TLS: {e}")))?;
        let roots = Arc::new(self.roots()?);
        let verifier = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
            .build()
            .map_err(|e| invalid(format!("TLS: no usable CA certificate ({e})")))?;
        let verifier: Arc<dyn ServerCertVerifier> = match self.mode {
            TlsMode::VerifyFull => verifier,
            TlsMode::VerifyCa => Arc::new(Lenient {
                chain: Some(verifier),
                provider,
            }),
            TlsMode::Require => Arc::new(Lenient {
                chain: None,
                provider,
            }),
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(certificates(cert)?, private_key(key)?)
                .map_err(|e| invalid(format!("TLS: the client certificate and key: {e}")))?,
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(invalid(
                    "TLS: sslcert= and sslkey= go together (a client certificate and its key)"
                        .into(),
                ))
            }
        };
        Ok(Arc::new(config))
    }

    /// The CAs to trust: the file's, or the system's.
    fn roots(&self) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        match &self.ca_file {
            Some(file) => {
                for cert in certificates(file)? {
                    roots
                        .add(cert)
                        .map_err(|e| invalid(format!("sslrootcert={}: {e}", file.display())))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for cert in found.certs {
                    // A system certificate rustls cannot parse is skipped, as libpq skips it.
                    let _ = roots.add(cert);
                }
                if roots.is_empty() && self.mode != TlsMode::Require {
                    return Err(invalid(
                        "TLS: the system's trust store holds no CA certificate; name the cluster's CA with sslrootcert="
                            .into(),
                    ));
                }
            }
        }
        Ok(roots)
    }
}

/// The certificates of a PEM file.
fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(file)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| {
            invalid(format!(
                "{}: not a readable PEM certificate file ({e})",
                file.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(invalid(format!("{}: holds no certificate", file.display())));
    }
    Ok(certs)
}

/// The private key of a PEM file.
fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(file).map_err(|e| {
        invalid(format!(
            "{}: not a readable PEM private key ({e})",
            file.display()
        ))
    })
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidOption, message)
}

/// The verifier of `verify-ca` (`chain`: the chain's trust and validity are checked, the name
/// is not) and of `require` (no `chain`: nothing is checked but the handshake's signatures).
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
