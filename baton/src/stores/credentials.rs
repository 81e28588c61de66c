//! Where a network store's password comes from when it is not in the URL, and how TLS
//! failures are told to people.
//!
//! A password in a URL lands in shell history, crontabs and process listings. Every network
//! store therefore also takes it from a file (`password_file=/path`, the file's whole content
//! but for one trailing newline) or from the environment (`BATON_STORE_PASSWORD`; PostgreSQL
//! also reads `PGPASSWORD`, `PGPASSFILE` and `~/.pgpass` as libpq does). The order: the URL's
//! own password, then `password_file=`, then the environment. A password is never shown:
//! not in errors, logs, `Debug` output or the command's `--json` (see [`redact`]).
//!
//! [`redact`]: crate::stores::url_text::redact

#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
use baton_kernel::{Error, ErrorKind, Result};

#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
/// The environment variable a network store reads its password from when neither the URL nor
/// `password_file=` gives one.
pub const PASSWORD_ENV: &str = "BATON_STORE_PASSWORD";

#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
/// The password in `path`: the file's content without one trailing newline (`\n` or `\r\n`).
/// [`ErrorKind::InvalidOption`] naming the file (never its content) when it cannot be read,
/// is empty, or is not UTF-8.
pub(crate) fn password_from_file(path: &std::path::Path) -> Result<String> {
    let invalid = |why: String| {
        Error::new(
            ErrorKind::InvalidOption,
            format!("password_file={}: {why}", path.display()),
        )
    };
    let bytes = std::fs::read(path).map_err(|e| invalid(format!("cannot read it ({e})")))?;
    let text = String::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text".into()))?;
    let password = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if password.is_empty() {
        return Err(invalid("it is empty".into()));
    }
    Ok(password.to_owned())
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
/// `BATON_STORE_PASSWORD`, when set and not empty.
pub(crate) fn password_from_env() -> Option<String> {
    std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty())
}

/// A TLS failure's message with its cause in plain words first, when the TLS library named one
/// (rustls names them `UnknownIssuer`, `Expired`, `NotValidForName`, …).
pub(crate) fn explain_tls(message: &str) -> Option<String> {
    let cause = if message.contains("UnknownIssuer") || message.contains("UnknownCA") {
        "the server's certificate is not trusted: no CA this client trusts signed it (name the server's CA with sslrootcert=, or ssl-ca= on MariaDB)"
    } else if message.contains("Expired") || message.contains("certificate expired") {
        "the server's certificate has expired (or is not valid yet, by this machine's clock)"
    } else if message.contains("NotValidForName") || message.contains("not valid for name") {
        "the server's certificate is not valid for the host name the client connected to (a name mismatch)"
    } else if message.contains("CertificateRequired") || message.contains("certificate required") {
        "the server requires a client certificate (give one with sslcert= and sslkey=)"
    } else if message.contains("BadCertificate") || message.contains("bad certificate") {
        "the server refused this client's certificate"
    } else {
        return None;
    };
    Some(format!("TLS: {cause}; {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(feature = "postgres", feature = "mysql", feature = "cassandra"))]
    #[test]
    fn a_password_file_is_read_without_its_newline_and_errors_never_show_it() {
        let dir = std::env::temp_dir().join(format!("baton-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("pw");
        for (content, expected) in [
            ("s3cret\n", "s3cret"),
            ("s3cret\r\n", "s3cret"),
            ("a b\n\n", "a b\n"),
        ] {
            std::fs::write(&file, content).expect("write");
            assert_eq!(password_from_file(&file).expect("read"), expected);
        }
        std::fs::write(&file, "\n").expect("write");
        let e = password_from_file(&file).expect_err("empty");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
        assert!(e.message().contains("empty"), "{e}");
        let missing = dir.join("missing");
        let e = password_from_file(&missing).expect_err("missing");
        assert!(
            e.message().contains("password_file=") && e.message().contains("missing"),
            "{e}"
        );
        std::fs::write(&file, [0xff, 0xfe]).expect("write");
        assert!(password_from_file(&file).is_err());
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn tls_causes_are_named() {
        let m = explain_tls(
            "error communicating with database: invalid peer certificate: UnknownIssuer",
        )
        .expect("named");
        assert!(
            m.starts_with("TLS: the server's certificate is not trusted"),
            "{m}"
        );
        assert!(explain_tls("invalid peer certificate: Expired")
            .expect("named")
            .contains("expired"));
        assert!(explain_tls("invalid peer certificate: NotValidForName")
            .expect("named")
            .contains("name mismatch"));
        assert_eq!(explain_tls("connection refused"), None);
    }
}
