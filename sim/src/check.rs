//! The safety checker: mutual exclusion among believed leases, fencing-token order, and what
//! every release reported.
//!
//! A forced release (`baton release --force`) is an operator's decision to let a new holder in
//! while the old one still believes, so an overlap with a grant that an operator broke before
//! the overlap began is not a mutual-exclusion violation. But the broken holder must hear of it:
//! its release must not report `Ok` (which promises that nobody else held the lock meanwhile).

use std::fmt;

use baton_kernel::Mode;

/// One grant as the simulation saw it.
#[derive(Clone, Debug)]
pub struct GrantRecord {
    /// The client.
    pub client: usize,
    /// The lock name.
    pub name: String,
    /// The fencing token.
    pub token: u64,
    /// Simulated time the grant was delivered to the client.
    pub at: u64,
    /// Intervals (simulated time, half-open) during which the client believed it held the lock:
    /// from the grant or a renewal to the lease deadline, cut at release or crash.
    pub belief: Vec<(u64, u64)>,
    /// When an operator's forced release that removed this grant's entry started.
    pub forced_at: Option<u64>,
    /// What its release returned: `Ok(())` or the error kind (`None`: never released).
    pub released: Option<Result<(), baton_kernel::ErrorKind>>,
    /// The mode it was granted in (issue 43).
    pub mode: Mode,
    /// When its acquisition's request was made (the reply to the first write of its lock
    /// cell), for [`overtaken`].
    pub requested: Option<u64>,
}

impl GrantRecord {
    /// Cuts every belief interval at `t` (release started, or crash).
    pub fn end_at(&mut self, t: u64) {
        for seg in &mut self.belief {
            seg.1 = seg.1.min(t);
            seg.0 = seg.0.min(seg.1);
        }
    }
}

/// A safety violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two clients believed they held `name` at once.
    Overlap {
        /// Lock name.
        name: String,
        /// First client and its token.
        a: (usize, u64),
        /// Second client and its token.
        b: (usize, u64),
        /// When the overlap started (simulated ns).
        at: u64,
    },
    /// A release returned `Ok` although another client held the lock during the grant.
    ReleaseOk {
        /// Lock name.
        name: String,
        /// The client whose release said `Ok`, and its token.
        client: (usize, u64),
        /// The client that held the lock meanwhile, and its token.
        other: (usize, u64),
    },
    /// An object invariant ([`super::objects`]) failed.
    Object {
        /// The rule.
        rule: &'static str,
        /// Lock name.
        name: String,
        /// What happened, naming the clients, their calls and the instants.
        detail: String,
    },
    /// More holders of a counted name believed at once than it has permits (issue 43).
    TooMany {
        /// Lock name.
        name: String,
        /// Its permits.
        permits: u32,
        /// The holders (client, token) believing at `at`.
        holders: Vec<(usize, u64)>,
        /// When (simulated ns).
        at: u64,
    },
    /// A grant delivered later carried a token not larger than an earlier one.
    TokenOrder {
        /// Lock name.
        name: String,
        /// Earlier grant (client, token, time).
        earlier: (usize, u64, u64),
        /// Later grant (client, token, time).
        later: (usize, u64, u64),
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Overlap { name, a, b, at } => write!(
                f,
                "mutual exclusion violated on {name:?} at t={}ms: client {} (token {}) and client {} (token {}) both held it",
                *at as f64 / 1e6,
                a.0,
                a.1,
                b.0,
                b.1
            ),
            Violation::ReleaseOk { name, client, other } => write!(
                f,
                "release reporting violated on {name:?}: client {} (token {}) was told Ok although client {} (token {}) held the lock during its grant",
                client.0, client.1, other.0, other.1
            ),
            Violation::Object { rule, name, detail } => {
                write!(f, "object rule \"{rule}\" violated on {name:?}: {detail}")
            }
            Violation::TooMany {
                name,
                permits,
                holders,
                at,
            } => write!(
                f,
                "semaphore violated on {name:?} at t={}ms: {} holders (client, token) {holders:?} believed at once; it has {permits} permits",
                *at as f64 / 1e6,
                holders.len()
            ),
            Violation::TokenOrder { name, earlier, later } => write!(
                f,
                "fencing order violated on {name:?}: client {} got token {} at t={}ms after client {} got token {} at t={}ms",
                later.0,
                later.1,
                later.2 as f64 / 1e6,
                earlier.0,
                earlier.1,
                earlier.2 as f64 / 1e6
            ),
        }
    }
}

/// Whether two names are related paths (equal, or one an ancestor of the other at a dot).
pub fn related(a: &str, b: &str) -> bool {
    let under = |long: &str, short: &str| {
        long.len() > short.len() && long.starts_with(short) && long.as_bytes()[short.len()] == b'.'
    };
    a == b || under(a, b) || under(b, a)
}

/// Checks the grants of one run; with `paths`, names are paths and grants of related paths
/// are checked against each other as grants of one name are.
pub fn check(grants: &[GrantRecord], paths: bool) -> Vec<Violation> {
    if paths {
        return check_trees(grants);
    }
    let mut violations = Vec::new();
    let mut names: Vec<&str> = grants.iter().map(|g| g.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let mut mine: Vec<(usize, &GrantRecord)> = grants
            .iter()
            .enumerate()
            .filter(|(_, g)| g.name == name)
            .collect();

        mine.sort_by_key(|(i, g)| (g.at, *i));
        if mine.iter().any(|(_, g)| g.mode != Mode::Exclusive) {
            violations.extend(check_modes(name, grants, &mine, |a, b| a == b));
            continue;
        }

        // Fencing order, in delivery order.
        for pair in mine.windows(2) {
            let (a, b) = (pair[0].1, pair[1].1);
            // A grant an operator broke before it was delivered may arrive after its successor's
            // with a smaller token: that is fencing working (the resource refuses the broken
            // holder), not a fault.
            let broken_late = |g: &GrantRecord| g.forced_at.is_some_and(|f| f <= b.at);
            if broken_late(a) || broken_late(b) {
                continue;
            }
            if b.token <= a.token {
                violations.push(Violation::TokenOrder {
                    name: name.to_string(),
                    earlier: (a.client, a.token, a.at),
                    later: (b.client, b.token, b.at),
                });
            }
        }

        // Mutual exclusion: sweep the belief intervals of all grants.
        let mut segs: Vec<(u64, u64, usize)> = mine
            .iter()
            .flat_map(|(i, g)| {
                g.belief
                    .iter()
                    .filter(|(s, e)| s < e)
                    .map(move |(s, e)| (*s, *e, *i))
            })
            .collect();
        segs.sort_unstable();
        let mut reach: Option<(u64, usize)> = None; // (furthest end so far, its grant)
        for (start, end, grant) in segs {
            if let Some((far, other)) = reach {
                if start < far && other != grant {
                    let (a, b) = (&grants[other], &grants[grant]);
                    violations.extend(judge(name, a, b, start));
                }
            }
            if reach.is_none_or(|(far, _)| end > far) {
                reach = Some((end, grant));
            }
        }
    }
    violations
}

/// [`check`] with paths: per root, every pair of grants of related paths as [`check_modes`]
/// checks a name's (the pairwise checks hold exclusive grants alone too).
fn check_trees(grants: &[GrantRecord]) -> Vec<Violation> {
    let root = |name: &str| name.split('.').next().unwrap_or(name).to_string();
    let mut roots: Vec<String> = grants.iter().map(|g| root(&g.name)).collect();
    roots.sort_unstable();
    roots.dedup();
    let mut violations = Vec::new();
    for r in roots {
        let mut mine: Vec<(usize, &GrantRecord)> = grants
            .iter()
            .enumerate()
            .filter(|(_, g)| root(&g.name) == r)
            .collect();
        mine.sort_by_key(|(i, g)| (g.at, *i));
        violations.extend(check_modes(&r, grants, &mine, related));
    }
    violations
}

/// The checks of a name some of whose grants were shared or counted (`mine`: its grants, in
/// delivery order, with their indices in `grants`). Pairwise, as only some pairs conflict:
/// - fencing: a later grant's token exceeds an earlier one's when either is exclusive (shared
///   and counted grants among themselves may be delivered out of their counter order);
/// - exclusion: no exclusive belief overlaps another grant's (excused, as in [`judge`], by an
///   operator's forced release, but then the broken holder must not be told `Ok`);
/// - permits: at no instant do more grants of a counted name believe than it has permits,
///   holders broken by a forced release before that instant not counted.
fn check_modes(
    name: &str,
    grants: &[GrantRecord],
    mine: &[(usize, &GrantRecord)],
    related: fn(&str, &str) -> bool,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (k, (_, b)) in mine.iter().enumerate() {
        let broken_late = |g: &GrantRecord| g.forced_at.is_some_and(|f| f <= b.at);
        if broken_late(b) {
            continue;
        }
        let earlier = mine[..k].iter().map(|(_, a)| *a).find(|a| {
            !broken_late(a)
                && (a.mode == Mode::Exclusive || b.mode == Mode::Exclusive)
                && related(&a.name, &b.name)
                && b.token <= a.token
        });
        if let Some(a) = earlier {
            violations.push(Violation::TokenOrder {
                name: name.to_string(),
                earlier: (a.client, a.token, a.at),
                later: (b.client, b.token, b.at),
            });
        }
    }
    let segs: Vec<(u64, u64, usize)> = mine
        .iter()
        .flat_map(|(i, g)| {
            g.belief
                .iter()
                .filter(|(s, e)| s < e)
                .map(move |(s, e)| (*s, *e, *i))
        })
        .collect();
    for (x, &(s1, e1, g1)) in segs.iter().enumerate() {
        for &(s2, e2, g2) in &segs[x + 1..] {
            let exclusive =
                grants[g1].mode == Mode::Exclusive || grants[g2].mode == Mode::Exclusive;
            let related = related(&grants[g1].name, &grants[g2].name);
            if g1 != g2 && exclusive && related && s1 < e2 && s2 < e1 {
                violations.extend(judge(name, &grants[g1], &grants[g2], s1.max(s2)));
            }
        }
        if let Mode::Counted(n) = grants[g1].mode {
            let mut holders: Vec<(usize, u64)> = segs
                .iter()
                .filter(|&&(s, e, g)| {
                    s <= s1
                        && s1 < e
                        && grants[g].mode == Mode::Counted(n)
                        && grants[g].name == grants[g1].name
                        && grants[g].forced_at.is_none_or(|f| f > s1)
                })
                .map(|&(_, _, g)| (grants[g].client, grants[g].token))
                .collect();
            holders.sort_unstable();
            holders.dedup();
            if holders.len() > n as usize {
                violations.push(Violation::TooMany {
                    name: name.to_string(),
                    permits: n,
                    holders,
                    at: s1,
                });
            }
        }
    }
    violations
}

/// The verdict on grants `a` and `b` believing at once from `at`.
fn judge(name: &str, a: &GrantRecord, b: &GrantRecord, at: u64) -> Option<Violation> {
    let broken = |g: &GrantRecord| g.forced_at.is_some_and(|f| f <= at);
    if !broken(a) && !broken(b) {
        return Some(Violation::Overlap {
            name: name.to_string(),
            a: (a.client, a.token),
            b: (b.client, b.token),
            at,
        });
    }
    // Excused by the operator; but the broken holder must not be told Ok. When both count as
    // broken (a waiter whose entry the operator removed may write the same value again and
    // win properly), the broken holder is the earlier grant: the later one is its successor.
    let (victim, other) = match (broken(a), broken(b)) {
        (true, true) if b.token < a.token => (b, a),
        (true, _) => (a, b),
        _ => (b, a),
    };
    (victim.released == Some(Ok(()))).then(|| Violation::ReleaseOk {
        name: name.to_string(),
        client: (victim.client, victim.token),
        other: (other.client, other.token),
    })
}

/// Fairness without faults (issue 43's "no starvation"): an exclusive request is *overtaken*
/// by a grant of another client on its name whose own request (the reply to its first write)
/// came after ours and that was granted before ours. Bakery serves tickets in order, so a
/// client can overtake at most once (a request entering while ours still chooses its ticket
/// may draw a smaller one; its next request reads our ticket and draws a larger one). Column
/// prefix keeps a waiting writer's column (writer preference): a request made after it reads
/// the column and waits, so a lone writer (as the readers-and-writers runs have without
/// faults) is overtaken at most once per reader too. Column prefix orders writers among
/// themselves by courtesy and aging, not FIFO, so only its readers-and-writers runs are checked.
/// A description of the first request overtaken more often, or `None`.
pub fn overtaken(
    grants: &[GrantRecord],
    strategy: baton_kernel::Strategy,
    modes: super::Modes,
    paths: bool,
) -> Option<String> {
    if strategy == baton_kernel::Strategy::ColumnPrefix && modes != super::Modes::ReadersWriters {
        return None;
    }
    if strategy == baton_kernel::Strategy::UniqueInsert {
        return None;
    }
    for w in grants.iter().filter(|g| g.mode == Mode::Exclusive) {
        let Some(asked) = w.requested else {
            continue;
        };
        let mut by_client: Vec<(usize, usize)> = Vec::new();
        for g in grants.iter().filter(|g| {
            g.client != w.client
                && (g.name == w.name || paths && related(&g.name, &w.name))
                && g.at < w.at
                && g.requested.is_some_and(|r| r > asked)
        }) {
            match by_client.iter_mut().find(|(c, _)| *c == g.client) {
                Some((_, n)) => *n += 1,
                None => by_client.push((g.client, 1)),
            }
        }
        if let Some((c, n)) = by_client.iter().find(|(_, n)| *n > 1) {
            return Some(format!(
                "starvation: client {}'s exclusive request on {:?} (made at t={}ms, granted at t={}ms) was overtaken {n} times by client {c}, whose requests came after it",
                w.client,
                w.name,
                asked as f64 / 1e6,
                w.at as f64 / 1e6
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(client: usize, token: u64, at: u64, belief: Vec<(u64, u64)>) -> GrantRecord {
        GrantRecord {
            client,
            name: "n".into(),
            token,
            at,
            belief,
            forced_at: None,
            released: None,
            mode: Mode::Exclusive,
            requested: None,
        }
    }

    #[test]
    fn paths_relate_at_dots_only() {
        assert!(related("r", "r.a.x") && related("r.a.x", "r") && related("r.a", "r.a"));
        assert!(!related("r.a", "r.b") && !related("r", "rr") && !related("r.a", "r.ab"));
    }

    #[test]
    fn a_writer_on_a_path_overlapping_a_reader_below_it_is_caught() {
        let mut w = g(0, 1, 0, vec![(0, 10)]);
        w.name = "r".into();
        let mut r = g(1, 2, 5, vec![(5, 20)]);
        r.name = "r.a.x".into();
        r.mode = Mode::Shared;
        assert_eq!(check(&[w.clone(), r.clone()], true).len(), 1);
        r.name = "s.a".into();
        assert_eq!(check(&[w, r], true), vec![]);
    }

    #[test]
    fn finds_overlaps_and_bad_tokens_and_accepts_handoffs() {
        assert_eq!(
            check(
                &[g(0, 1, 0, vec![(0, 10)]), g(1, 2, 10, vec![(10, 20)])],
                false
            ),
            vec![]
        );
        let v = check(
            &[g(0, 1, 0, vec![(0, 10)]), g(1, 2, 5, vec![(5, 20)])],
            false,
        );
        assert!(
            matches!(v.as_slice(), [Violation::Overlap { at: 5, .. }]),
            "{v:?}"
        );
        let v = check(
            &[g(0, 2, 0, vec![(0, 10)]), g(1, 2, 10, vec![(10, 20)])],
            false,
        );
        assert!(
            matches!(v.as_slice(), [Violation::TokenOrder { .. }]),
            "{v:?}"
        );
        // A renewal of the same grant may overlap itself.
        assert_eq!(check(&[g(0, 1, 0, vec![(0, 10), (5, 15)])], false), vec![]);
        // An overlap after a forced release is excused, unless the broken holder was told Ok.
        let mut forced = g(0, 1, 0, vec![(0, 10)]);
        forced.forced_at = Some(3);
        forced.released = Some(Err(baton_kernel::ErrorKind::Lost));
        let next = g(1, 3, 5, vec![(5, 20)]);
        assert_eq!(check(&[forced.clone(), next.clone()], false), vec![]);
        forced.released = Some(Ok(()));
        let v = check(&[forced.clone(), next.clone()], false);
        assert!(
            matches!(v.as_slice(), [Violation::ReleaseOk { .. }]),
            "{v:?}"
        );
        // Forced only after the overlap began: no excuse.
        forced.forced_at = Some(7);
        let v = check(&[forced, next], false);
        assert!(matches!(v.as_slice(), [Violation::Overlap { .. }]), "{v:?}");
    }

    fn m(client: usize, token: u64, at: u64, belief: Vec<(u64, u64)>, mode: Mode) -> GrantRecord {
        GrantRecord {
            mode,
            ..g(client, token, at, belief)
        }
    }

    #[test]
    fn shared_holders_overlap_exclusive_ones_do_not() {
        let s = |c, t, at, b| m(c, t, at, b, Mode::Shared);
        let x = |c, t, at, b| m(c, t, at, b, Mode::Exclusive);
        // Readers together, then a writer after them: fine.
        assert_eq!(
            check(
                &[
                    s(0, 1, 0, vec![(0, 10)]),
                    s(1, 2, 1, vec![(1, 9)]),
                    x(2, 3, 10, vec![(10, 20)])
                ],
                false
            ),
            vec![]
        );
        // A writer overlapping a reader.
        let v = check(
            &[s(0, 1, 0, vec![(0, 10)]), x(1, 2, 5, vec![(5, 20)])],
            false,
        );
        assert!(
            matches!(v.as_slice(), [Violation::Overlap { at: 5, .. }]),
            "{v:?}"
        );
        // Readers delivered out of token order: fine; a writer below an earlier reader: not.
        assert_eq!(
            check(
                &[s(0, 2, 0, vec![(0, 10)]), s(1, 1, 1, vec![(1, 9)])],
                false
            ),
            vec![]
        );
        let v = check(
            &[s(0, 2, 0, vec![(0, 10)]), x(1, 1, 20, vec![(20, 30)])],
            false,
        );
        assert!(
            matches!(v.as_slice(), [Violation::TokenOrder { .. }]),
            "{v:?}"
        );
    }

    #[test]
    fn a_semaphore_never_has_more_holders_than_permits() {
        let c = |cl, t, at, b| m(cl, t, at, b, Mode::Counted(2));
        assert_eq!(
            check(
                &[
                    c(0, 1, 0, vec![(0, 10)]),
                    c(1, 2, 1, vec![(1, 10)]),
                    c(2, 3, 10, vec![(10, 20)])
                ],
                false
            ),
            vec![]
        );
        let v = check(
            &[
                c(0, 1, 0, vec![(0, 10)]),
                c(1, 2, 1, vec![(1, 10)]),
                c(2, 3, 5, vec![(5, 20)]),
            ],
            false,
        );
        assert!(
            matches!(
                v.as_slice(),
                [Violation::TooMany {
                    permits: 2,
                    at: 5,
                    ..
                }]
            ),
            "{v:?}"
        );
        // A holder broken by an operator before the third came is not counted.
        let mut broken = c(0, 1, 0, vec![(0, 10)]);
        broken.forced_at = Some(4);
        assert_eq!(
            check(
                &[broken, c(1, 2, 1, vec![(1, 10)]), c(2, 3, 5, vec![(5, 20)])],
                false
            ),
            vec![]
        );
    }
}
