//! The text encodings of cell values, documented so operators can read a lock table by hand.
//!
//! Every value is a list of `key=value` fields separated by single spaces; unknown fields are
//! ignored when reading, so later versions can add fields.
//!
//! | cell | example value |
//! | --- | --- |
//! | unique insert `lock`, column prefix `<prefix><owner>` | `owner=web-1:4242:00000000deadbeef ttl_ms=60000 cell_ttl_ms=60000 created_ms=1763700000000 acq=5f0e1d2c3b4a6978` |
//! | bakery `ticket/<owner>` while choosing | `entering created_ms=1763700000000 acq=5f0e1d2c3b4a6978` |
//! | bakery `ticket/<owner>` with a ticket | `ticket=17 created_ms=1763700000000 acq=5f0e1d2c3b4a6978` |
//!
//! `acq` is the acquisition id ([`LockOptions::acquisition`](crate::LockOptions::acquisition)),
//! omitted when zero. `att` (unique insert) numbers the acquisition's attempts, omitted for the
//! first: every attempt writes a value of its own, so an insert of an earlier attempt that the
//! store applies late is never mistaken for this attempt's.
//! | fencing counter (`_LOCK_`, or a custom column prefix itself) | `token=42 owner=web-1:4242:00000000deadbeef acq=5f0e1d2c3b4a6978 forced=1` |

use alloc::format;
use alloc::string::{String, ToString};
use core::fmt::Write;

use crate::error::{Error, ErrorKind, Result};

fn field<'a>(value: &'a str, key: &str) -> Option<&'a str> {
    value.split(' ').find_map(|part| {
        part.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
    })
}

fn number(value: &str, key: &str) -> Option<u64> {
    field(value, key).and_then(|v| v.parse().ok())
}

fn malformed(what: &str, value: &str) -> Error {
    Error::new(
        ErrorKind::StoreError,
        format!("malformed {what} {value:?} in the lock table"),
    )
}

/// The owner record of a unique-insert or column-prefix lock cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockRecord {
    pub owner: String,
    pub ttl_ms: u64,
    pub cell_ttl_ms: u64,
    pub created_ms: u64,
    pub acq: u64,
    /// Attempt number within the acquisition (unique insert); 0 or 1 is not written.
    pub att: u32,
}

impl LockRecord {
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.owner.len() + 96);
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "owner={} ttl_ms={} cell_ttl_ms={} created_ms={}",
            self.owner, self.ttl_ms, self.cell_ttl_ms, self.created_ms
        );
        push_acq(&mut out, self.acq);
        if self.att > 1 {
            let _ = write!(out, " att={}", self.att);
        }
        out
    }

    /// Whether `other` was written by the same acquisition (same owner and acquisition id),
    /// whatever its attempt.
    pub fn same_acquisition(&self, other: &LockRecord) -> bool {
        self.owner == other.owner && self.acq == other.acq
    }

    pub fn decode(value: &str) -> Result<Self> {
        let bad = || malformed("lock record", value);
        Ok(LockRecord {
            owner: field(value, "owner").ok_or_else(bad)?.to_string(),
            ttl_ms: number(value, "ttl_ms").ok_or_else(bad)?,
            cell_ttl_ms: number(value, "cell_ttl_ms")
                .or_else(|| number(value, "ttl_ms"))
                .ok_or_else(bad)?,
            created_ms: number(value, "created_ms").unwrap_or(0),
            acq: acq_of(value),
            att: number(value, "att")
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1),
        })
    }
}

/// The state held in a bakery cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BakeryState {
    /// Choosing a ticket (Lamport's `entering[i] = true`).
    Entering,
    /// Holding this ticket.
    Ticket(u64),
}

/// Appends the acquisition id field (` acq=<16 hex digits>`), nothing for 0.
fn push_acq(out: &mut String, acq: u64) {
    if acq != 0 {
        let _ = write!(out, " acq={acq:016x}");
    }
}

pub(crate) fn encode_bakery(state: BakeryState, created_ms: u64, acq: u64) -> String {
    let mut out = String::with_capacity(64);
    let _ = match state {
        BakeryState::Entering => write!(out, "entering created_ms={created_ms}"),
        BakeryState::Ticket(n) => write!(out, "ticket={n} created_ms={created_ms}"),
    };
    push_acq(&mut out, acq);
    out
}

pub(crate) fn decode_bakery(value: &str) -> Result<(BakeryState, u64)> {
    let created = number(value, "created_ms").unwrap_or(0);
    if value == "entering" || value.starts_with("entering ") {
        return Ok((BakeryState::Entering, created));
    }
    match number(value, "ticket") {
        Some(n) => Ok((BakeryState::Ticket(n), created)),
        None => Err(malformed("bakery cell", value)),
    }
}

/// The value of a fencing counter cell: the last token issued, to whom, and for which
/// acquisition (so a reused owner id never writes a value identical to an earlier one), and how
/// many forced releases the lock has seen (carried forward by every grant, so a waiter can tell
/// that one happened since it joined the queue even after later grants moved the counter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    pub token: u64,
    pub owner: String,
    pub acq: u64,
    pub forced: u64,
}

/// The owner a forced release writes into the fencing counter when it breaks a lock, so the
/// broken holder (renewing, or settling a release whose reply was lost) can tell a forced
/// release from a normal hand-off.
pub(crate) const FORCED: &str = "forced-release";

impl Fence {
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.owner.len() + 64);
        let _ = write!(out, "token={} owner={}", self.token, self.owner);
        push_acq(&mut out, self.acq);
        if self.forced > 0 {
            let _ = write!(out, " forced={}", self.forced);
        }
        out
    }

    pub fn decode(value: &str) -> Result<Self> {
        let bad = || malformed("fencing counter", value);
        Ok(Fence {
            token: number(value, "token").ok_or_else(bad)?,
            owner: field(value, "owner").ok_or_else(bad)?.to_string(),
            acq: acq_of(value),
            forced: number(value, "forced").unwrap_or(0),
        })
    }
}

/// How many forced releases the counter value `value` has seen (0 for no counter).
pub(crate) fn forced_count(value: Option<&str>) -> u64 {
    value
        .and_then(|v| Fence::decode(v).ok())
        .map_or(0, |f| f.forced)
}

/// The acquisition id written in a value (0 when absent).
pub(crate) fn acq_of(value: &str) -> u64 {
    field(value, "acq")
        .and_then(|v| u64::from_str_radix(v, 16).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_ignore_unknown_fields() {
        let r = LockRecord {
            owner: "h:1:0000000000000002".into(),
            ttl_ms: 5,
            cell_ttl_ms: 9,
            created_ms: 7,
            acq: 0xabc,
            att: 3,
        };
        assert_eq!(LockRecord::decode(&r.encode()), Ok(r.clone()));
        assert_eq!(LockRecord::decode(&(r.encode() + " future=1")), Ok(r));
        let f = Fence {
            token: 42,
            owner: "h:1:0000000000000002".into(),
            acq: 7,
            forced: 3,
        };
        assert_eq!(Fence::decode(&f.encode()), Ok(f));
        for s in [BakeryState::Entering, BakeryState::Ticket(17)] {
            assert_eq!(decode_bakery(&encode_bakery(s, 3, 9)), Ok((s, 3)));
        }
    }

    /// The text is what operators read and what compare-and-set compares: pinned, field order
    /// and all, to the table in the module's documentation.
    #[test]
    fn encodings_are_the_documented_text() {
        let mut r = LockRecord {
            owner: "web-1:4242:00000000deadbeef".into(),
            ttl_ms: 60000,
            cell_ttl_ms: 60000,
            created_ms: 1763700000000,
            acq: 0x5f0e1d2c3b4a6978,
            att: 1,
        };
        assert_eq!(
            r.encode(),
            "owner=web-1:4242:00000000deadbeef ttl_ms=60000 cell_ttl_ms=60000 created_ms=1763700000000 acq=5f0e1d2c3b4a6978"
        );
        (r.acq, r.att) = (0, 2);
        assert_eq!(
            r.encode(),
            "owner=web-1:4242:00000000deadbeef ttl_ms=60000 cell_ttl_ms=60000 created_ms=1763700000000 att=2"
        );
        let mut f = Fence {
            token: 42,
            owner: "web-1:4242:00000000deadbeef".into(),
            acq: 0x5f0e1d2c3b4a6978,
            forced: 1,
        };
        assert_eq!(
            f.encode(),
            "token=42 owner=web-1:4242:00000000deadbeef acq=5f0e1d2c3b4a6978 forced=1"
        );
        (f.acq, f.forced) = (0xabc, 0);
        assert_eq!(
            f.encode(),
            "token=42 owner=web-1:4242:00000000deadbeef acq=0000000000000abc"
        );
        assert_eq!(
            encode_bakery(BakeryState::Entering, 1763700000000, 0x5f0e1d2c3b4a6978),
            "entering created_ms=1763700000000 acq=5f0e1d2c3b4a6978"
        );
        assert_eq!(
            encode_bakery(BakeryState::Ticket(17), 1763700000000, 0),
            "ticket=17 created_ms=1763700000000"
        );
    }

    #[test]
    fn garbage_is_a_store_error() {
        assert_eq!(
            LockRecord::decode("hello").map_err(|e| e.kind()),
            Err(ErrorKind::StoreError)
        );
        assert_eq!(
            Fence::decode("token=x owner=y").map_err(|e| e.kind()),
            Err(ErrorKind::StoreError)
        );
        assert_eq!(
            decode_bakery("ticket=").map_err(|e| e.kind()),
            Err(ErrorKind::StoreError)
        );
    }
}
