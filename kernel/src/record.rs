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

use crate::error::{Error, ErrorKind, Result};
use crate::mode::Mode;

/// The fields of `value`, in order: `(key, text)` for each space-separated `key=text`.
fn fields(value: &str) -> impl Iterator<Item = (&str, &str)> {
    value.split(' ').filter_map(|part| part.split_once('='))
}

/// The text of the first field named `key`.
fn field<'a>(value: &'a str, key: &str) -> Option<&'a str> {
    fields(value).find_map(|(k, v)| (k == key).then_some(v))
}

fn number(value: &str, key: &str) -> Option<u64> {
    parsed(field(value, key))
}

/// The first text of each of `keys` in `value`, read in one pass (a value is decoded on every
/// reply of a lock's hot path).
fn first_of<'a, const N: usize>(value: &'a str, keys: [&str; N]) -> [Option<&'a str>; N] {
    let mut found = [None; N];
    for (k, v) in fields(value) {
        if let Some(i) = keys.iter().position(|key| *key == k) {
            found[i].get_or_insert(v);
        }
    }
    found
}

fn parsed(text: Option<&str>) -> Option<u64> {
    text.and_then(|v| v.parse().ok())
}

/// Appends ` key=` and `n` in decimal. (Written by hand: `write!` goes through the formatting
/// machinery, about ten times the instructions, on every command of a lock's hot path.)
fn push_number(out: &mut String, key: &str, n: u64) {
    out.push_str(key);
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
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
    /// The mode asked for (column prefix); exclusive is not written, so an exclusive record
    /// is byte for byte what it was before modes. Read back with [`entry_mode`].
    pub mode: Mode,
}

impl LockRecord {
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.owner.len() + 96);
        out.push_str("owner=");
        out.push_str(&self.owner);
        push_number(&mut out, " ttl_ms=", self.ttl_ms);
        push_number(&mut out, " cell_ttl_ms=", self.cell_ttl_ms);
        push_number(&mut out, " created_ms=", self.created_ms);
        push_acq(&mut out, self.acq);
        if self.att > 1 {
            push_number(&mut out, " att=", u64::from(self.att));
        }
        if self.mode != Mode::Exclusive {
            out.push_str(" mode=");
            out.push_str(&self.mode.token());
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
        let [owner, ttl_ms, cell_ttl_ms, created_ms, acq, att] = first_of(
            value,
            ["owner", "ttl_ms", "cell_ttl_ms", "created_ms", "acq", "att"],
        );
        Ok(LockRecord {
            owner: owner.ok_or_else(bad)?.to_string(),
            ttl_ms: parsed(ttl_ms).ok_or_else(bad)?,
            cell_ttl_ms: parsed(cell_ttl_ms)
                .or_else(|| parsed(ttl_ms))
                .ok_or_else(bad)?,
            created_ms: parsed(created_ms).unwrap_or(0),
            acq: hex(acq),
            att: parsed(att).and_then(|n| u32::try_from(n).ok()).unwrap_or(1),
            mode: entry_mode(value).unwrap_or(Mode::Exclusive),
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
        out.push_str(" acq=");
        out.extend((0..16).rev().map(|i| {
            let nibble = ((acq >> (4 * i)) & 0xf) as u8;
            char::from(if nibble < 10 {
                b'0' + nibble
            } else {
                b'a' + nibble - 10
            })
        }));
    }
}

/// A bakery cell's value. An exclusive entry's value has no `mode=` field: byte for byte what
/// it was before modes, so every client reads it as it always did.
pub(crate) fn encode_bakery(state: BakeryState, mode: Mode, created_ms: u64, acq: u64) -> String {
    let mut out = String::with_capacity(64);
    match state {
        BakeryState::Entering => out.push_str("entering"),
        BakeryState::Ticket(n) => push_number(&mut out, "ticket=", n),
    }
    if mode != Mode::Exclusive {
        out.push_str(" mode=");
        out.push_str(&mode.token());
    }
    push_number(&mut out, " created_ms=", created_ms);
    push_acq(&mut out, acq);
    out
}

/// The mode of an entry's value: exclusive without a `mode=` field; `None` for a token this
/// version does not know (its reader takes it as exclusive).
pub(crate) fn entry_mode(value: &str) -> Option<Mode> {
    match field(value, "mode") {
        None => Some(Mode::Exclusive),
        Some(token) => Mode::parse(token),
    }
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
    /// Written by a shared or counted grant (`x=`): the token of the last exclusive grant (or
    /// forced release) before it, carried forward so that a shared holder can tell its
    /// co-holders' grants, which move the counter too, from an exclusive one. `None`: this
    /// value is an exclusive grant's or a forced release's, itself the last such.
    pub exclusive: Option<u64>,
    /// Written by a forced release of one holder (`fb=`, `baton release --force --holder`):
    /// that holder's owner key, carried forward by later shared grants, so that its co-holders
    /// can tell a forced release that broke someone else from one that broke them.
    pub broke: Option<String>,
}

/// The owner a forced release writes into the fencing counter when it breaks a lock, so the
/// broken holder (renewing, or settling a release whose reply was lost) can tell a forced
/// release from a normal hand-off.
pub(crate) const FORCED: &str = "forced-release";

impl Fence {
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.owner.len() + 64);
        push_number(&mut out, "token=", self.token);
        out.push_str(" owner=");
        out.push_str(&self.owner);
        push_acq(&mut out, self.acq);
        if self.forced > 0 {
            push_number(&mut out, " forced=", self.forced);
        }
        if let Some(x) = self.exclusive {
            push_number(&mut out, " x=", x);
        }
        if let Some(owner) = &self.broke {
            out.push_str(" fb=");
            out.push_str(owner);
        }
        out
    }

    /// The token of the last exclusive grant or forced release this value knows of.
    pub fn last_exclusive(&self) -> u64 {
        self.exclusive.unwrap_or(self.token)
    }

    pub fn decode(value: &str) -> Result<Self> {
        let bad = || malformed("fencing counter", value);
        let [token, owner, acq, forced, x, fb] =
            first_of(value, ["token", "owner", "acq", "forced", "x", "fb"]);
        Ok(Fence {
            token: parsed(token).ok_or_else(bad)?,
            owner: owner.ok_or_else(bad)?.to_string(),
            acq: hex(acq),
            forced: parsed(forced).unwrap_or(0),
            exclusive: match x {
                None => None,
                Some(_) => Some(parsed(x).ok_or_else(bad)?),
            },
            broke: fb.map(String::from),
        })
    }
}

/// Whether the fencing counter, found at `now` by the holder `me` (its owner key) whose grant
/// left it at `ours`, says the lease was lost meanwhile. An exclusive lease: any move (another
/// grant, a forced release). A shared or counted lease (`shared`): a move by an exclusive grant
/// (`x=`) or a forced release, seen directly or carried forward by later shared grants, except
/// one forced release that broke one other holder (`fb=` naming someone else); its
/// co-holders' grants move the counter too and say nothing. A value that does not decode:
/// lost (the safe reading).
pub(crate) fn counter_says_lost(shared: bool, ours: &str, now: &str, me: &str) -> bool {
    if now == ours {
        return false;
    }
    if !shared {
        return true;
    }
    match (Fence::decode(ours), Fence::decode(now)) {
        (Ok(o), Ok(n)) => {
            // The last forced release broke one other holder (its two counter updates, and any
            // re-reads, each count): ours is gone only if our own cell is (the caller checks
            // that first). An earlier one that broke us shows in that check too, except when a
            // late write of ours recreated the cell, which a forced release re-reads for.
            let someone_else = n.broke.as_deref().is_some_and(|b| b != me);
            let forced_ok = n.forced == o.forced || someone_else;
            let owner_ok = n.owner != FORCED || someone_else;
            !forced_ok || !owner_ok || n.last_exclusive() != o.last_exclusive()
        }
        _ => true,
    }
}

/// How many forced releases the counter value `value` has seen (0 for no counter).
pub(crate) fn forced_count(value: Option<&str>) -> u64 {
    value
        .and_then(|v| Fence::decode(v).ok())
        .map_or(0, |f| f.forced)
}

/// An acquisition id's text (hex) as a number, 0 when absent or malformed.
fn hex(text: Option<&str>) -> u64 {
    text.and_then(|v| u64::from_str_radix(v, 16).ok())
        .unwrap_or(0)
}

/// The acquisition id written in a value (0 when absent).
pub(crate) fn acq_of(value: &str) -> u64 {
    hex(field(value, "acq"))
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
            mode: Mode::Exclusive,
        };
        assert_eq!(LockRecord::decode(&r.encode()), Ok(r.clone()));
        assert_eq!(LockRecord::decode(&(r.encode() + " future=1")), Ok(r));
        let f = Fence {
            token: 42,
            owner: "h:1:0000000000000002".into(),
            acq: 7,
            forced: 3,
            exclusive: None,
            broke: None,
        };
        assert_eq!(Fence::decode(&f.encode()), Ok(f));
        for s in [BakeryState::Entering, BakeryState::Ticket(17)] {
            assert_eq!(
                decode_bakery(&encode_bakery(s, Mode::Exclusive, 3, 9)),
                Ok((s, 3))
            );
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
            mode: Mode::Exclusive,
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
            exclusive: None,
            broke: None,
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
            encode_bakery(
                BakeryState::Entering,
                Mode::Exclusive,
                1763700000000,
                0x5f0e1d2c3b4a6978
            ),
            "entering created_ms=1763700000000 acq=5f0e1d2c3b4a6978"
        );
        assert_eq!(
            encode_bakery(BakeryState::Ticket(17), Mode::Exclusive, 1763700000000, 0),
            "ticket=17 created_ms=1763700000000"
        );
    }

    /// Numbers by hand, as `format!` writes them, at the edges.
    #[test]
    fn numbers_are_written_as_format_writes_them() {
        for n in [0, 1, 9, 10, 99, 100, 12345, u64::from(u32::MAX), u64::MAX] {
            let f = Fence {
                token: n,
                owner: "o".into(),
                acq: n,
                forced: n,
                exclusive: None,
                broke: None,
            };
            let want = if n == 0 {
                String::from("token=0 owner=o")
            } else {
                format!("token={n} owner=o acq={n:016x} forced={n}")
            };
            assert_eq!(f.encode(), want);
            assert_eq!(Fence::decode(&want), Ok(f));
            assert_eq!(
                encode_bakery(BakeryState::Ticket(n), Mode::Exclusive, n, 0),
                format!("ticket={n} created_ms={n}")
            );
        }
    }

    /// A field that appears twice counts the first time, parsed or not.
    #[test]
    fn the_first_of_a_repeated_field_counts() {
        let f = Fence::decode("token=2 owner=a token=3 owner=b acq=ff acq=1 forced=x forced=2")
            .expect("valid");
        assert_eq!(
            f,
            Fence {
                token: 2,
                owner: "a".into(),
                acq: 0xff,
                forced: 0,
                exclusive: None,
                broke: None,
            }
        );
        assert_eq!(acq_of("acq=zz acq=1"), 0);
        let r = LockRecord::decode("owner=x=y ttl_ms=5 att=1 att=4").expect("valid");
        assert_eq!((r.owner.as_str(), r.cell_ttl_ms, r.att), ("x=y", 5, 1));
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
