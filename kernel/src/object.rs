//! Objects beside locks (ScaleOut StateServer's model): a named object is an opaque byte value
//! with a version, kept in one cell of its lock's own row, so that one conditional step can
//! check the lock and write the object.
//!
//! The cell, [`OBJECT_COLUMN`], holds `<version>;<writer>;<value>` while the object exists, and
//! `<version>~<writer>;-` once it is removed:
//!
//! - `version`: 20 decimal digits, zero-padded, so that a version and whether the object
//!   exists make a prefix of the cell (`<version>;`), which stores compare as text: an update
//!   naming its version is one conditional step. It grows by one on every write (an insert,
//!   an update, a removal), and never goes back: a removal keeps the cell, with no value, so
//!   that an object inserted again continues from there.
//! - `writer`: the writing acquisition's id (for callers that leave it zero, who give every
//!   acquisition an owner id of its own, a hash of that owner id) and the write's number
//!   within it, in hex. No two writes make the same cell, so a read-back that finds a
//!   write's cell proves it applied.
//! - `value`: the bytes in standard base64 (padded).
//!
//! The cell has no TTL, is written only by [`Command::SetObject`] (conditional), and is never
//! a lock entry of any strategy (it is reserved, as the fencing counter is).
//!
//! [`Command::SetObject`]: crate::Command::SetObject

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::{Error, ErrorKind, Result};
use crate::owner::OwnerId;

/// The column of a name's object.
pub const OBJECT_COLUMN: &str = "_OBJECT_";

/// The largest object value any store takes, in bytes (1 MiB). Stores may take less
/// ([`check_value`] with the store's own limit).
pub const MAX_OBJECT_BYTES: usize = 1 << 20;

/// A version, zero-padded to this many digits in the cell (`u64::MAX` has 20).
const VERSION_DIGITS: usize = 20;

/// An object as the store has it: its version and its value (`None`: removed, or never
/// inserted, with version 0).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Object {
    /// Grows by one on every write of the object; 0 before the first.
    pub version: u64,
    /// The value, or `None` when there is no object (never inserted, or removed).
    pub value: Option<Vec<u8>>,
}

impl Object {
    /// Whether the object exists (has a value).
    pub fn exists(&self) -> bool {
        self.value.is_some()
    }
}

/// An object cell as read from the store, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ObjectCell {
    pub version: u64,
    pub value: Option<Vec<u8>>,
}

impl ObjectCell {
    /// The object a cell holds; no cell is version 0 with no value.
    pub fn object(cell: Option<&ObjectCell>) -> Object {
        cell.map_or_else(Object::default, |c| Object {
            version: c.version,
            value: c.value.clone(),
        })
    }
}

/// The id a write's cell names its writer by: the acquisition's id
/// ([`LockOptions::acquisition`](crate::LockOptions::acquisition)); for callers that leave it
/// zero, who give every acquisition an owner id of its own instead, a hash of that owner id
/// (FNV-1a of its key; never zero). With the zero itself, every such caller's first write of
/// a version would make the same cell, and a read-back would take another caller's write for
/// its own (the simulator found it: two acknowledged inserts, one applied).
pub(crate) fn writer_id(acquisition: u64, owner: &OwnerId) -> u64 {
    if acquisition != 0 {
        return acquisition;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in owner.key().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}

/// The prefix every cell of an existing object at `version` starts with (a removed object's
/// does not).
pub(crate) fn version_prefix(version: u64) -> String {
    format!("{version:0width$};", width = VERSION_DIGITS)
}

/// The cell of a write: `version`, written by `writer` (acquisition id, write number), holding
/// `value` (`None`: removed).
pub(crate) fn encode(version: u64, writer: (u64, u64), value: Option<&[u8]>) -> String {
    let separator = if value.is_some() { ';' } else { '~' };
    let mut cell = format!(
        "{version:0width$}{separator}{:x}.{:x};",
        writer.0,
        writer.1,
        width = VERSION_DIGITS
    );
    match value {
        Some(bytes) => base64_encode(bytes, &mut cell),
        None => cell.push('-'),
    }
    cell
}

/// Decodes an object cell. A cell that is not in baton's format (a hand-edited table, another
/// program's data under the reserved column) is a [`ErrorKind::StoreError`] naming it, never a
/// panic.
pub(crate) fn decode(cell: &str) -> Result<ObjectCell> {
    let bad = |why: &str| {
        let shown: String = cell.chars().take(64).collect();
        Error::new(
            ErrorKind::StoreError,
            format!("the object cell {OBJECT_COLUMN:?} holds {shown:?}, which is not a baton object ({why}); was it written by hand?"),
        )
    };
    let (Some(version), Some(separator), Some(rest)) = (
        cell.get(..VERSION_DIGITS),
        cell.get(VERSION_DIGITS..=VERSION_DIGITS),
        cell.get(VERSION_DIGITS + 1..),
    ) else {
        return Err(bad("expected version;writer;value"));
    };
    if !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("its version is not 20 digits"));
    }
    let Some((writer, value)) = rest.split_once(';') else {
        return Err(bad("expected version;writer;value"));
    };
    let version: u64 = version
        .parse()
        .map_err(|_| bad("its version is out of range"))?;
    if writer.is_empty() {
        return Err(bad("it names no writer"));
    }
    let value = match (separator, value) {
        ("~", "-") => None,
        (";", text) => Some(base64_decode(text).ok_or_else(|| bad("its value is not base64"))?),
        _ => return Err(bad("expected version;writer;value or version~writer;-")),
    };
    Ok(ObjectCell { version, value })
}

/// Checks a value to be written on a store that takes at most `limit` bytes: not empty (remove
/// the object instead), not larger than the limit. Both are [`ErrorKind::InvalidOption`]: a
/// value is never truncated.
pub fn check_value(value: &[u8], limit: usize) -> Result<()> {
    if value.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            "an object's value must not be empty (remove the object instead)",
        ));
    }
    if value.len() > limit {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "an object's value of {} bytes is larger than this store takes ({limit} bytes); it was not written",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// `bytes` in standard base64, padded (as the object cell holds them), for programs that show a
/// value as text.
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    base64_encode(bytes, &mut out);
    out
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(bytes: &[u8], out: &mut String) {
    out.reserve(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let sextet = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.len() / 4;
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | sextet(c)?;
        }
        n <<= 6 * pad as u32;
        let b = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&b[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_and_versions_are_prefixes() {
        for value in [
            &b"x"[..],
            b"ab",
            b"abc",
            b"abcd",
            &[0u8, 255, 0, 10, 13],
            &[0xffu8; 1000],
        ] {
            let cell = encode(7, (0xabc, 2), Some(value));
            assert!(cell.starts_with(&version_prefix(7)), "{cell}");
            let decoded = decode(&cell).expect("decodes");
            assert_eq!(decoded.version, 7);
            assert_eq!(decoded.value.as_deref(), Some(value));
        }
        let removed = encode(u64::MAX, (1, 1), None);
        assert_eq!(decode(&removed).expect("decodes").value, None);
        assert_eq!(decode(&removed).expect("decodes").version, u64::MAX);
        assert!(!encode(8, (1, 1), None).starts_with(&version_prefix(7)));
        assert!(!encode(7, (1, 1), None).starts_with(&version_prefix(7)));
        assert!(!encode(17, (1, 1), None).starts_with(&version_prefix(1)));
    }

    #[test]
    fn foreign_cells_are_store_errors_not_panics() {
        for cell in [
            "",
            "x",
            "1;a;b",
            "00000000000000000001;;QQ==",
            "00000000000000000001;a;Q",
            "00000000000000000001;a;-",
            "00000000000000000001~a;QQ==",
            "00000000000000000001;a;Q===",
            "00000000000000000001;a;QQ==QQ==",
            "00000000000000000001;a;é===",
            "99999999999999999999;a;-",
            "0000000000000000000x;a;-",
        ] {
            let e = decode(cell).expect_err(cell);
            assert_eq!(e.kind(), ErrorKind::StoreError, "{cell}");
        }
    }

    #[test]
    fn values_are_checked_not_truncated() {
        assert_eq!(
            check_value(b"", 10).map_err(|e| e.kind()),
            Err(ErrorKind::InvalidOption)
        );
        assert!(check_value(&[0; 10], 10).is_ok());
        let e = check_value(&[0; 11], 10).expect_err("too big");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
        assert!(e.message().contains("11 bytes"), "{e}");
    }
}
