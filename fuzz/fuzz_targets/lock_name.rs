//! Lock names and paths, as every binding receives them (bytes with a length from C, Python
//! `bytes`, a JavaScript `Uint8Array`), and as `lock_all` takes several.
//!
//! Feeds: the input as one name to `LockName::from_bytes` and `LockPath::from_bytes`, and, split
//! at each newline, as the paths of one `lock_all` to `LockPath::sorted_unrelated`.
//!
//! Asserts: no panic; a refusal is `InvalidName` with a message; a valid name is the input
//! byte for byte, formats back to itself and parses from its text to an equal name; a valid
//! path is a valid name, its segments joined by dots give it back, its root is its first
//! segment, it is related to itself and ordered equal to itself; `sorted_unrelated` gives the
//! same paths in `order`, no two of them related, or refuses with `InvalidOption` exactly when
//! two of them are related.
#![no_main]

use std::cmp::Ordering;

use baton_kernel::{ErrorKind, LockName, LockPath};
use libfuzzer_sys::fuzz_target;

fn name(bytes: &[u8]) {
    match LockName::from_bytes(bytes) {
        Ok(name) => {
            assert_eq!(name.as_str().as_bytes(), bytes);
            assert_eq!(name.to_string().as_bytes(), bytes);
            let again: LockName = name.as_str().parse().expect("a valid name parses again");
            assert_eq!(again, name);
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidName, "{e}");
            assert!(!e.message().is_empty());
        }
    }
}

fn path(bytes: &[u8]) -> Option<LockPath> {
    match LockPath::from_bytes(bytes) {
        Ok(path) => {
            assert!(
                LockName::from_bytes(bytes).is_ok(),
                "a path that is not a name"
            );
            assert_eq!(path.as_str().as_bytes(), bytes);
            assert_eq!(path.segments().collect::<Vec<_>>().join("."), path.as_str());
            assert_eq!(Some(path.root()), path.segments().next());
            assert!(path.segments().all(|s| !s.is_empty()));
            assert!(path.segments().count() <= LockPath::MAX_SEGMENTS);
            assert!(path.is_related(&path) && !path.is_ancestor_of(&path));
            assert_eq!(path.order(&path), Ordering::Equal);
            let again: LockPath = path.as_str().parse().expect("a valid path parses again");
            assert_eq!(again, path);
            Some(path)
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidName, "{e}");
            assert!(!e.message().is_empty());
            None
        }
    }
}

fn several(paths: Vec<LockPath>) {
    let any_related = paths
        .iter()
        .enumerate()
        .any(|(i, a)| paths[i + 1..].iter().any(|b| a.is_related(b)));
    let mut expected = paths.clone();
    expected.sort_by(|a, b| a.order(b));
    match LockPath::sorted_unrelated(paths) {
        Ok(sorted) => {
            assert!(!any_related, "related paths accepted: {sorted:?}");
            assert_eq!(sorted, expected);
            for pair in sorted.windows(2) {
                assert_eq!(pair[0].order(&pair[1]), Ordering::Less, "{pair:?}");
                assert_eq!(pair[1].order(&pair[0]), Ordering::Greater, "{pair:?}");
            }
        }
        Err(e) => {
            assert!(any_related, "unrelated paths refused: {e}");
            assert_eq!(e.kind(), ErrorKind::InvalidOption, "{e}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    name(data);
    path(data);
    let paths: Vec<LockPath> = data
        .split(|&b| b == b'\n')
        .filter_map(path)
        .take(32)
        .collect();
    several(paths);
});
