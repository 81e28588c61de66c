//! Helpers shared by the bad-input tests: who locks with which options, and reading entries back.

use super::prelude::*;

/// The options `who` ("a", "b", "c"...) uses for `strategy`, adjusted by `adjust`.
pub(crate) fn options(
    strategy: Strategy,
    who: &str,
    adjust: impl FnOnce(&mut LockOptions),
) -> LockOptions {
    let created = match who {
        "a" => 1000,
        "b" => 2000,
        _ => 3000,
    };
    let mut o = opts(strategy, created);
    o.wait = Wait::TryOnce;
    adjust(&mut o);
    o
}

pub(crate) fn acquire(
    strategy: Strategy,
    who: &str,
    adjust: impl FnOnce(&mut LockOptions),
) -> Acquire {
    Acquire::new(name(NAME), owner(who), options(strategy, who, adjust)).expect("valid options")
}

pub(crate) fn label(who: &str) -> &'static str {
    match who {
        "a" => "A",
        "b" => "B",
        _ => "C",
    }
}

/// `who` acquires the lock at once (try once) and returns the grant.
pub(crate) fn hold(h: &mut Harness, strategy: Strategy, who: &str) -> Grant {
    drive(h, label(who), acquire(strategy, who, |_| {}))
        .unwrap_or_else(|e| panic!("{who} should get the free lock: {e}"))
}

pub(crate) fn err<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) -> Error {
    r.expect_err(what)
}

/// The live entries of the lock, as Inspect reports them.
pub(crate) fn entries(h: &mut Harness, strategy: Strategy) -> Vec<baton_kernel::LockInfo> {
    drive(h, "I", Inspect::new(name(NAME), &opts(strategy, 0))).expect("inspect")
}

pub(crate) fn owners(h: &mut Harness, strategy: Strategy) -> Vec<String> {
    entries(h, strategy).into_iter().map(|e| e.owner).collect()
}

pub(crate) fn key(who: &str) -> String {
    owner(who).key()
}

pub(crate) const ALL: [Strategy; 3] = Strategy::ALL;
