//! Lock names and the rules they obey.

use alloc::string::{String, ToString};
use core::fmt;

use crate::error::{Error, ErrorKind, Result};

/// A validated lock name.
///
/// Rules, each checked with an error of kind [`ErrorKind::InvalidName`] that names the rule:
/// - not empty;
/// - at most [`LockName::MAX_LEN`] bytes of UTF-8 (names are stored as row keys in every store,
///   and must fit an indexed `VARCHAR` on SQL stores);
/// - valid UTF-8 (bindings that take bytes check this);
/// - no NUL character (C strings, SQL text columns and CQL text cannot all carry it).
///
/// Any other character, including spaces, slashes and non-ASCII letters, is allowed:
/// `"digest 42"` and `"users/émile"` are both fine.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockName(String);

impl LockName {
    /// The longest name allowed, in bytes of UTF-8.
    pub const MAX_LEN: usize = 255;

    /// Validates `name`.
    pub fn new(name: &str) -> Result<Self> {
        if name.is_empty() {
            return Err(Error::new(ErrorKind::InvalidName, "lock name is empty"));
        }
        if name.len() > Self::MAX_LEN {
            return Err(Error::new(
                ErrorKind::InvalidName,
                alloc::format!(
                    "lock name is {} bytes long; the maximum is {} bytes",
                    name.len(),
                    Self::MAX_LEN
                ),
            ));
        }
        if let Some(at) = name.bytes().position(|b| b == 0) {
            return Err(Error::new(
                ErrorKind::InvalidName,
                alloc::format!("lock name contains a NUL character at byte {at}"),
            ));
        }
        Ok(LockName(name.to_string()))
    }

    /// Validates a name given as bytes (from C, Python `bytes`, or a JavaScript `Uint8Array`).
    pub fn from_bytes(name: &[u8]) -> Result<Self> {
        match core::str::from_utf8(name) {
            Ok(s) => Self::new(s),
            Err(e) => Err(Error::new(
                ErrorKind::InvalidName,
                alloc::format!("lock name is not valid UTF-8 (at byte {})", e.valid_up_to()),
            )),
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl core::str::FromStr for LockName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        LockName::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn rejected(name: &[u8]) -> Error {
        LockName::from_bytes(name).expect_err("name should be rejected")
    }

    #[test]
    fn accepts_ordinary_names() {
        for ok in ["a", "digest 42", "users/émile", "x".repeat(255).as_str()] {
            assert_eq!(LockName::new(ok).map(|n| n.as_str().len()), Ok(ok.len()));
        }
    }

    #[test]
    fn empty_name_is_rejected() {
        let e = rejected(b"");
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(e.message().contains("empty"), "{e}");
    }

    #[test]
    fn huge_name_is_rejected_with_the_limit() {
        let e = rejected(&vec![b'x'; 256]);
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(
            e.message().contains("256 bytes") && e.message().contains("255"),
            "{e}"
        );
        let e = rejected(&vec![b'x'; 10 << 20]);
        assert_eq!(e.kind(), ErrorKind::InvalidName);
    }

    #[test]
    fn multibyte_limit_counts_bytes() {
        // 128 two-byte characters = 256 bytes.
        let e = LockName::new(&"é".repeat(128)).expect_err("too long");
        assert_eq!(e.kind(), ErrorKind::InvalidName);
    }

    #[test]
    fn nul_is_rejected_with_its_position() {
        let e = rejected(b"ab\0c");
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(
            e.message().contains("NUL") && e.message().contains("byte 2"),
            "{e}"
        );
    }

    #[test]
    fn non_utf8_is_rejected() {
        let e = rejected(&[b'a', 0xff, 0xfe]);
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(
            e.message().contains("UTF-8") && e.message().contains("byte 1"),
            "{e}"
        );
    }
}
