//! Lock modes (seed 003's SHARED and EXCLUSIVE, and semaphores): what a request asks for, and
//! which pairs of requests conflict. See `docs/modes-design.md`.
//!
//! A mode is stored in each entry's value as a short token ([`Mode::token`]), so every reader
//! of a row can apply the conflict rule to every entry it finds.

use core::fmt;

use crate::error::{Error, ErrorKind, Result};
use crate::path::LockPath;

/// What a lock request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// The only holder of its name and of every related path (today's locks).
    #[default]
    Exclusive,
    /// One of any number of shared holders; no exclusive holder of a related path meanwhile.
    Shared,
    /// One of at most `n` holders of its name (a semaphore of `n` permits); like a shared
    /// holder towards other names and towards exclusive requests.
    Counted(u32),
}

impl Mode {
    /// The most permits a semaphore may have: every holder is an entry in the name's row, read
    /// whole by every decision.
    pub const MAX_PERMITS: u32 = 10_000;

    /// A semaphore of `permits`: [`ErrorKind::InvalidOption`] unless `1 <= permits <=`
    /// [`MAX_PERMITS`](Self::MAX_PERMITS).
    pub fn counted(permits: i64) -> Result<Self> {
        match u32::try_from(permits) {
            Ok(n) if (1..=Self::MAX_PERMITS).contains(&n) => Ok(Mode::Counted(n)),
            _ => Err(Error::new(
                ErrorKind::InvalidOption,
                alloc::format!(
                    "a semaphore's permits must be from 1 to {}; got {permits}",
                    Self::MAX_PERMITS
                ),
            )),
        }
    }

    /// Whether this mode shuts out every other holder of related paths.
    pub fn is_exclusive(self) -> bool {
        self == Mode::Exclusive
    }

    /// The token stored in an entry's value: `x`, `s`, or `c<n>`.
    pub fn token(self) -> alloc::string::String {
        match self {
            Mode::Exclusive => "x".into(),
            Mode::Shared => "s".into(),
            Mode::Counted(n) => alloc::format!("c{n}"),
        }
    }

    /// Parses a [`token`](Self::token). `None` for anything else: a reader treats an entry it
    /// cannot read as exclusive (the safe reading).
    pub fn parse(token: &str) -> Option<Self> {
        match token {
            "x" => Some(Mode::Exclusive),
            "s" => Some(Mode::Shared),
            _ => {
                let n = token.strip_prefix('c')?;
                if n.starts_with('0') || n.starts_with('+') {
                    return None;
                }
                let n: u32 = n.parse().ok()?;
                (1..=Self::MAX_PERMITS)
                    .contains(&n)
                    .then_some(Mode::Counted(n))
            }
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Exclusive => f.write_str("exclusive"),
            Mode::Shared => f.write_str("shared"),
            Mode::Counted(n) => write!(f, "counted({n})"),
        }
    }
}

/// Whether requests `(a, a_mode)` and `(b, b_mode)` can never hold at once: related paths and
/// at least one exclusive. (Two counted requests on one name also exclude each other once the
/// semaphore is full: that depends on the other entries, and is the strategy's count.)
pub fn excludes(a: &LockPath, a_mode: Mode, b: &LockPath, b_mode: Mode) -> bool {
    (a_mode.is_exclusive() || b_mode.is_exclusive()) && a.is_related(b)
}

/// Whether a request may not be made beside an entry found on the same name: one name used
/// both as a semaphore and otherwise, or as semaphores of two sizes. The error
/// ([`ErrorKind::InvalidOption`]) names both modes; the request gives up rather than guess.
pub fn mix_up(path: &LockPath, mine: Mode, found: Mode) -> Result<()> {
    let clash = match (mine, found) {
        (Mode::Counted(a), Mode::Counted(b)) => a != b,
        (Mode::Counted(_), _) | (_, Mode::Counted(_)) => true,
        _ => false,
    };
    if clash {
        return Err(Error::new(
            ErrorKind::InvalidOption,
            alloc::format!(
                "{path:?} is in use as {found}; a {mine} request cannot share it (use one mode \
                 per semaphore name, and one size)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> LockPath {
        LockPath::new(text).expect("valid path")
    }

    #[test]
    fn permits_are_checked() {
        assert_eq!(Mode::counted(3), Ok(Mode::Counted(3)));
        assert_eq!(Mode::counted(10_000), Ok(Mode::Counted(10_000)));
        for bad in [0, -1, 10_001, i64::MAX, i64::MIN] {
            let e = Mode::counted(bad).expect_err("out of range");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            assert!(e.message().contains(&alloc::format!("got {bad}")), "{e}");
        }
    }

    #[test]
    fn tokens_round_trip_and_unknown_ones_do_not_parse() {
        for m in [
            Mode::Exclusive,
            Mode::Shared,
            Mode::Counted(1),
            Mode::Counted(10_000),
        ] {
            assert_eq!(Mode::parse(&m.token()), Some(m));
        }
        for bad in [
            "", "X", "c", "c0", "c01", "c+3", "c-1", "c10001", "s2", "shared",
        ] {
            assert_eq!(Mode::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn exclusive_excludes_related_paths_only() {
        let (app, users, db) = (path("app"), path("app.cache.users"), path("app.db"));
        assert!(excludes(&app, Mode::Exclusive, &users, Mode::Shared));
        assert!(excludes(&users, Mode::Counted(3), &app, Mode::Exclusive));
        assert!(excludes(&app, Mode::Exclusive, &app, Mode::Exclusive));
        assert!(!excludes(&app, Mode::Shared, &users, Mode::Shared));
        assert!(!excludes(&app, Mode::Shared, &app, Mode::Counted(2)));
        assert!(!excludes(&users, Mode::Exclusive, &db, Mode::Exclusive));
    }

    #[test]
    fn mode_mix_ups_are_refused() {
        let p = path("jobs");
        assert!(mix_up(&p, Mode::Shared, Mode::Exclusive).is_ok());
        assert!(mix_up(&p, Mode::Counted(3), Mode::Counted(3)).is_ok());
        for (mine, found) in [
            (Mode::Counted(3), Mode::Counted(4)),
            (Mode::Counted(3), Mode::Shared),
            (Mode::Exclusive, Mode::Counted(2)),
        ] {
            let e = mix_up(&p, mine, found).expect_err("mix-up");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            assert!(e.message().contains(&alloc::format!("{found}")), "{e}");
        }
    }
}
