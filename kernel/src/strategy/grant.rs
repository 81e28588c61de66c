//! The grant rule with modes and paths (issue 43, `docs/modes-design.md`): which of the entries
//! found in one row read keep a request from holding. Shared by bakery (entries placed by
//! ticket) and column prefix (every other live entry counts as placed before us).
//!
//! Pure, and linear in the number of entries: one row read carries every entry of a root's
//! tree, so one call decides.

use alloc::vec::Vec;

use crate::error::Result;
use crate::mode::{excludes, mix_up, Mode};
use crate::options::Sabotage;
use crate::path::LockPath;

/// Where an entry found in the row stands relative to the request deciding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Still choosing its place (bakery's `entering`): it may yet come before us.
    Entering,
    /// Before us: a smaller ticket (bakery), or any live entry (column prefix).
    Before,
    /// After us: it waits for us, never the reverse.
    After,
}

/// One entry of the row, as the deciding request reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen<'a> {
    /// Its path; `None` when it cannot be read (a cell of a layout or version we do not know):
    /// then it is taken as an exclusive entry related to every path, the safe reading.
    pub path: Option<&'a LockPath>,
    /// Its mode; `None` when it cannot be read: taken as exclusive (on its path).
    pub mode: Option<Mode>,
    pub place: Place,
}

/// The indices of the entries in `seen` that keep a request for `path` in `mode` from holding
/// now; empty: it may hold. An entry blocks when its path is related to ours and
/// - it is [`Place::Entering`] and could come to exclude us (either side exclusive, or both
///   counted on our name: it may yet take a permit before us), or
/// - it is [`Place::Before`] and either side is exclusive, or
/// - we are `Counted(n)`, and `n` entries counted on our name are before us: then all of them.
///
/// An [`ErrorKind::InvalidOption`](crate::ErrorKind::InvalidOption) error when an entry on our
/// very name uses it in a mode we cannot share it with ([`mix_up`]).
///
/// `broken` selects a deliberately broken variant of the rule
/// ([`Sabotage::SharedIgnoresExclusive`], [`Sabotage::SemaphoreOverAdmits`],
/// [`Sabotage::PathIgnoresAncestors`], [`Sabotage::PathIgnoresDescendants`]); others are the
/// real rule.
pub(crate) fn blockers(
    path: &LockPath,
    mode: Mode,
    seen: &[Seen<'_>],
    broken: Sabotage,
) -> Result<Vec<usize>> {
    let mut blocking = Vec::new();
    let mut permits_taken = Vec::new();
    for (i, entry) in seen.iter().enumerate() {
        let Some(their_path) = entry.path else {
            if entry.place != Place::After {
                blocking.push(i);
            }
            continue;
        };
        let their_mode = entry.mode.unwrap_or(Mode::Exclusive);
        if their_path == path && entry.mode.is_some() {
            mix_up(path, mode, their_mode)?;
        }
        if entry.place == Place::After || !their_path.is_related(path) {
            continue;
        }
        let unseen = match broken {
            Sabotage::PathIgnoresAncestors => their_path.is_ancestor_of(path),
            Sabotage::PathIgnoresDescendants => path.is_ancestor_of(their_path),
            _ => false,
        };
        if unseen {
            continue;
        }
        let same_semaphore = matches!(mode, Mode::Counted(_)) && their_path == path;
        let ignored = broken == Sabotage::SharedIgnoresExclusive
            && !mode.is_exclusive()
            && entry.place == Place::Before;
        if excludes(path, mode, their_path, their_mode) && !ignored {
            blocking.push(i);
        } else if same_semaphore {
            match entry.place {
                Place::Entering => blocking.push(i),
                Place::Before => permits_taken.push(i),
                Place::After => {}
            }
        }
    }
    if let Mode::Counted(n) = mode {
        let permits = n as usize + usize::from(broken == Sabotage::SemaphoreOverAdmits);
        if permits_taken.len() >= permits {
            blocking.extend(permits_taken);
            blocking.sort_unstable();
        }
    }
    Ok(blocking)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use alloc::vec;

    fn path(text: &str) -> LockPath {
        LockPath::new(text).expect("valid path")
    }

    fn seen(path: &LockPath, mode: Mode, place: Place) -> Seen<'_> {
        Seen {
            path: Some(path),
            mode: Some(mode),
            place,
        }
    }

    #[test]
    fn shared_requests_pass_each_other_and_wait_for_exclusive_ones() {
        let (app, cache, users) = (path("app"), path("app.cache"), path("app.cache.users"));
        let rows = [
            seen(&app, Mode::Shared, Place::Before),
            seen(&users, Mode::Shared, Place::Entering),
        ];
        assert_eq!(
            blockers(&cache, Mode::Shared, &rows, Sabotage::None),
            Ok(vec![])
        );
        assert_eq!(
            blockers(&cache, Mode::Exclusive, &rows, Sabotage::None),
            Ok(vec![0, 1])
        );
        // A waiting exclusive request before us: a new shared one waits behind it (no
        // starvation), an unrelated one does not.
        let rows = [seen(&users, Mode::Exclusive, Place::Before)];
        assert_eq!(
            blockers(&app, Mode::Shared, &rows, Sabotage::None),
            Ok(vec![0])
        );
        assert_eq!(
            blockers(&path("app.db"), Mode::Shared, &rows, Sabotage::None),
            Ok(vec![])
        );
        // Entries after us never block.
        let rows = [seen(&app, Mode::Exclusive, Place::After)];
        assert_eq!(
            blockers(&users, Mode::Exclusive, &rows, Sabotage::None),
            Ok(vec![])
        );
    }

    #[test]
    fn paths_block_ancestors_and_descendants_not_siblings() {
        let (app, cache, users, db) = (
            path("app"),
            path("app.cache"),
            path("app.cache.users"),
            path("app.db"),
        );
        let rows = [
            seen(&app, Mode::Exclusive, Place::Before),
            seen(&users, Mode::Exclusive, Place::Before),
            seen(&db, Mode::Exclusive, Place::Before),
        ];
        assert_eq!(
            blockers(&cache, Mode::Exclusive, &rows, Sabotage::None),
            Ok(vec![0, 1])
        );
        assert_eq!(
            blockers(&path("apple"), Mode::Exclusive, &rows, Sabotage::None),
            Ok(vec![])
        );
    }

    #[test]
    fn a_semaphore_admits_n_and_waits_for_entering_ones() {
        let jobs = path("jobs");
        let rows = [
            seen(&jobs, Mode::Counted(2), Place::Before),
            seen(&jobs, Mode::Counted(2), Place::After),
        ];
        assert_eq!(
            blockers(&jobs, Mode::Counted(2), &rows, Sabotage::None),
            Ok(vec![])
        );
        let rows = [
            seen(&jobs, Mode::Counted(2), Place::Before),
            seen(&jobs, Mode::Counted(2), Place::Before),
        ];
        assert_eq!(
            blockers(&jobs, Mode::Counted(2), &rows, Sabotage::None),
            Ok(vec![0, 1])
        );
        let rows = [seen(&jobs, Mode::Counted(2), Place::Entering)];
        assert_eq!(
            blockers(&jobs, Mode::Counted(2), &rows, Sabotage::None),
            Ok(vec![0])
        );
        // Counted on another related name: shares like a shared holder, counts nothing.
        let child = path("jobs.nightly");
        let rows = [
            seen(&child, Mode::Counted(1), Place::Before),
            seen(&child, Mode::Counted(1), Place::Before),
        ];
        assert_eq!(
            blockers(&jobs, Mode::Counted(1), &rows, Sabotage::None),
            Ok(vec![])
        );
        assert_eq!(
            blockers(&jobs, Mode::Exclusive, &rows, Sabotage::None),
            Ok(vec![0, 1])
        );
    }

    #[test]
    fn unreadable_entries_block_as_exclusive_ones() {
        let app = path("app");
        let rows = [
            Seen {
                path: None,
                mode: Some(Mode::Shared),
                place: Place::Entering,
            },
            Seen {
                path: Some(&app),
                mode: None,
                place: Place::Before,
            },
            Seen {
                path: None,
                mode: None,
                place: Place::After,
            },
        ];
        assert_eq!(
            blockers(&path("zzz"), Mode::Shared, &rows, Sabotage::None),
            Ok(vec![0])
        );
        assert_eq!(
            blockers(&path("app.x"), Mode::Shared, &rows, Sabotage::None),
            Ok(vec![0, 1])
        );
        assert_eq!(
            blockers(&app, Mode::Shared, &rows, Sabotage::None),
            Ok(vec![0, 1])
        );
    }

    #[test]
    fn mode_mix_ups_are_errors_wherever_the_entry_stands() {
        let jobs = path("jobs");
        for place in [Place::Entering, Place::Before, Place::After] {
            let rows = [seen(&jobs, Mode::Counted(3), place)];
            let e =
                blockers(&jobs, Mode::Counted(4), &rows, Sabotage::None).expect_err("two sizes");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            let e = blockers(&jobs, Mode::Shared, &rows, Sabotage::None)
                .expect_err("semaphore and shared");
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
        }
    }
}
