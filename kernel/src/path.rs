//! Hierarchical lock names (seed 003, Alfresco's `foo.bar.woof`): paths, how two paths relate,
//! and the one order in which several are taken. See `docs/modes-design.md`.
//!
//! A path is a [`LockName`] read as dot-separated segments. A lock on a path covers every path
//! below it: `app` and `app.cache.users` are *related*, `app` and `apple` are not. Everything
//! here is pure and costs time linear in the paths' lengths.

use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;

use crate::error::{Error, ErrorKind, Result};
use crate::name::LockName;

/// A validated path: a lock name whose segments are all non-empty.
///
/// Rules, on top of [`LockName`]'s, each checked with an error of kind
/// [`ErrorKind::InvalidName`] that names the rule and where it was broken:
/// - no empty segment: no leading dot, no trailing dot, no two dots in a row (`a..b`);
/// - no `|` (the lock table separates an entry's path from its owner with it);
/// - at most [`LockPath::MAX_SEGMENTS`] segments.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LockPath {
    name: LockName,
}

impl LockPath {
    /// The segment separator.
    pub const SEPARATOR: char = '.';

    /// The most segments a path may have: deep enough for any naming scheme seen in practice,
    /// and it bounds the ancestors a decision considers.
    pub const MAX_SEGMENTS: usize = 16;

    /// Validates `path`.
    pub fn new(path: &str) -> Result<Self> {
        Self::from_name(LockName::new(path)?)
    }

    /// Validates a path given as bytes (from C, Python `bytes`, or a JavaScript `Uint8Array`).
    pub fn from_bytes(path: &[u8]) -> Result<Self> {
        Self::from_name(LockName::from_bytes(path)?)
    }

    /// Validates an already valid name as a path.
    pub fn from_name(name: LockName) -> Result<Self> {
        let text = name.as_str();
        let invalid = |rule: &str| {
            Err(Error::new(
                ErrorKind::InvalidName,
                alloc::format!("lock path {text:?} {rule}"),
            ))
        };
        if text.starts_with(Self::SEPARATOR) {
            return invalid("starts with a dot (an empty first segment)");
        }
        if text.ends_with(Self::SEPARATOR) {
            return invalid("ends with a dot (an empty last segment)");
        }
        if let Some(at) = text.find(crate::strategy::PATH_END) {
            return invalid(&alloc::format!(
                "contains '|' (at byte {at}), which separates a path from its owner in the lock table"
            ));
        }
        if let Some(at) = text.find("..") {
            return invalid(&alloc::format!(
                "has an empty segment (two dots in a row at byte {at})"
            ));
        }
        let segments = text.split(Self::SEPARATOR).count();
        if segments > Self::MAX_SEGMENTS {
            return invalid(&alloc::format!(
                "has {segments} segments; the maximum is {}",
                Self::MAX_SEGMENTS
            ));
        }
        Ok(LockPath { name })
    }

    /// A flat name as a path of one segment, whatever its dots: in a flat name's row every
    /// entry is on that name, so they are all related (equal) and only the modes decide.
    pub(crate) fn flat(name: LockName) -> Self {
        LockPath { name }
    }

    /// A flat name as a one-segment path, whatever its dots (in a flat name's row every entry
    /// is on that name), for ordering flat names the way paths are ordered (`lock_all`).
    pub fn flat_name(name: LockName) -> Self {
        Self::flat(name)
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        self.name.as_str()
    }

    /// The path as a lock name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The first segment: the row that holds this path's whole tree.
    pub fn root(&self) -> &str {
        self.segments().next().unwrap_or_default()
    }

    /// The segments, from the root down.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.as_str().split(Self::SEPARATOR)
    }

    /// Whether `self` is a proper ancestor of `other` (`app` of `app.cache`, not of `apple`).
    pub fn is_ancestor_of(&self, other: &LockPath) -> bool {
        let (mine, theirs) = (self.as_str(), other.as_str());
        theirs.len() > mine.len()
            && theirs.starts_with(mine)
            && theirs[mine.len()..].starts_with(Self::SEPARATOR)
    }

    /// Whether a lock on `self` and one on `other` cover a common path: equal, or one is an
    /// ancestor of the other. Two requests on related paths conflict unless both are shared.
    pub fn is_related(&self, other: &LockPath) -> bool {
        self == other || self.is_ancestor_of(other) || other.is_ancestor_of(self)
    }

    /// The global order several paths are taken in: segment by segment, a segment's bytes
    /// deciding, and an ancestor before its descendants (`foo` < `foo.bar` < `foo.bar.woof` <
    /// `foo.baz` < `foo2`). Every client takes several locks in this order, so none waits for
    /// a lock another holds while that one waits for a lock it holds.
    pub fn order(&self, other: &LockPath) -> Ordering {
        self.segments().cmp(other.segments())
    }

    /// `paths` sorted in [`order`](Self::order), or an [`ErrorKind::InvalidOption`] error naming
    /// the first two that are related (one lock already covers the other, or a path is given
    /// twice): what `lock_all` takes.
    pub fn sorted_unrelated(mut paths: Vec<LockPath>) -> Result<Vec<LockPath>> {
        paths.sort_by(|a, b| a.order(b));
        // Sorted, a path's descendants follow it directly, so checking neighbours finds any
        // related pair.
        for pair in paths.windows(2) {
            if pair[0].is_related(&pair[1]) {
                return Err(Error::new(
                    ErrorKind::InvalidOption,
                    alloc::format!(
                        "lock paths {:?} and {:?} overlap: a lock on {:?} already covers {:?}",
                        pair[0].as_str(),
                        pair[1].as_str(),
                        pair[0].as_str(),
                        pair[1].as_str()
                    ),
                ));
            }
        }
        Ok(paths)
    }
}

impl fmt::Debug for LockPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for LockPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::str::FromStr for LockPath {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        LockPath::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    fn path(text: &str) -> LockPath {
        LockPath::new(text).expect("valid path")
    }

    fn rejected(text: &[u8]) -> Error {
        LockPath::from_bytes(text).expect_err("path should be rejected")
    }

    #[test]
    fn accepts_ordinary_paths() {
        for ok in ["app", "app.cache.users", "users/émile.x y", "a-b_c.d:e"] {
            assert_eq!(path(ok).as_str(), ok);
        }
        let e = rejected(b"a|b.c");
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(e.message().contains("'|'"), "{e}");
        assert_eq!(path("app.cache.users").root(), "app");
        assert_eq!(path("app").root(), "app");
        assert_eq!(
            path("a.b.c").segments().collect::<Vec<_>>(),
            vec!["a", "b", "c"]
        );
    }

    #[test]
    fn empty_segments_are_rejected_naming_the_rule() {
        for (bad, says) in [
            (&b".a"[..], "starts with a dot"),
            (b"a.", "ends with a dot"),
            (b".", "starts with a dot"),
            (b"a..b", "two dots in a row at byte 1"),
        ] {
            let e = rejected(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidName, "{e}");
            assert!(e.message().contains(says), "{e}");
        }
    }

    #[test]
    fn name_rules_still_apply() {
        for bad in [&b""[..], b"a\0b", &[b'a', 0xff], &[b'x'; 256]] {
            assert_eq!(rejected(bad).kind(), ErrorKind::InvalidName);
        }
    }

    #[test]
    fn too_many_segments_are_rejected() {
        let deep = vec!["s"; LockPath::MAX_SEGMENTS].join(".");
        assert!(LockPath::new(&deep).is_ok());
        let e = LockPath::new(&alloc::format!("{deep}.s")).expect_err("17 segments");
        assert_eq!(e.kind(), ErrorKind::InvalidName);
        assert!(e.message().contains("17 segments"), "{e}");
    }

    #[test]
    fn relation_is_at_segment_boundaries() {
        let (app, cache, users) = (path("app"), path("app.cache"), path("app.cache.users"));
        assert!(app.is_ancestor_of(&cache) && app.is_ancestor_of(&users));
        assert!(cache.is_ancestor_of(&users));
        assert!(!users.is_ancestor_of(&app) && !app.is_ancestor_of(&app));
        for (a, b) in [
            (&app, &users),
            (&users, &app),
            (&app, &app),
            (&cache, &users),
        ] {
            assert!(a.is_related(b), "{a} {b}");
        }
        for (a, b) in [
            ("app", "apple"),
            ("app.cache", "app.cachet"),
            ("app.cache", "app.db"),
            ("app.cache.users", "app.cache.groups"),
            ("a", "b"),
        ] {
            assert!(!path(a).is_related(&path(b)), "{a} {b}");
            assert!(!path(b).is_related(&path(a)), "{b} {a}");
        }
    }

    #[test]
    fn order_puts_ancestors_first_segment_by_segment() {
        let mut all: Vec<LockPath> = ["foo.baz", "foo2", "foo.bar.woof", "foo", "foo.bar", "fo"]
            .into_iter()
            .map(path)
            .collect();
        all.sort_by(|a, b| a.order(b));
        let texts: Vec<String> = all.iter().map(|p| String::from(p.as_str())).collect();
        // Segment by segment: a tree stays together ("foo2" after all of "foo"'s).
        assert_eq!(
            texts,
            vec!["fo", "foo", "foo.bar", "foo.bar.woof", "foo.baz", "foo2"]
        );
    }

    #[test]
    fn sorted_unrelated_sorts_and_refuses_overlaps() {
        let got = LockPath::sorted_unrelated(vec![path("b"), path("a.y"), path("a.x")])
            .expect("unrelated");
        assert_eq!(
            got.iter().map(LockPath::as_str).collect::<Vec<_>>(),
            vec!["a.x", "a.y", "b"]
        );
        for overlapping in [
            vec![path("a.x"), path("b"), path("a")],
            vec![path("a.x"), path("a.x")],
            vec![path("a.x.y"), path("c"), path("a.x")],
        ] {
            let e = LockPath::sorted_unrelated(overlapping).expect_err("overlap");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            assert!(e.message().contains("already covers"), "{e}");
        }
    }
}
