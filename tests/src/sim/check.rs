//! The safety checker: mutual exclusion among believed leases, and fencing-token order.

use std::fmt;

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

/// Checks the grants of one run.
pub fn check(grants: &[GrantRecord]) -> Vec<Violation> {
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

        // Fencing order, in delivery order.
        mine.sort_by_key(|(i, g)| (g.at, *i));
        for pair in mine.windows(2) {
            let (a, b) = (pair[0].1, pair[1].1);
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
                    violations.push(Violation::Overlap {
                        name: name.to_string(),
                        a: (a.client, a.token),
                        b: (b.client, b.token),
                        at: start,
                    });
                }
            }
            if reach.is_none_or(|(far, _)| end > far) {
                reach = Some((end, grant));
            }
        }
    }
    violations
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
        }
    }

    #[test]
    fn finds_overlaps_and_bad_tokens_and_accepts_handoffs() {
        assert_eq!(
            check(&[g(0, 1, 0, vec![(0, 10)]), g(1, 2, 10, vec![(10, 20)])]),
            vec![]
        );
        let v = check(&[g(0, 1, 0, vec![(0, 10)]), g(1, 2, 5, vec![(5, 20)])]);
        assert!(
            matches!(v.as_slice(), [Violation::Overlap { at: 5, .. }]),
            "{v:?}"
        );
        let v = check(&[g(0, 2, 0, vec![(0, 10)]), g(1, 2, 10, vec![(10, 20)])]);
        assert!(
            matches!(v.as_slice(), [Violation::TokenOrder { .. }]),
            "{v:?}"
        );
        // A renewal of the same grant may overlap itself.
        assert_eq!(check(&[g(0, 1, 0, vec![(0, 10), (5, 15)])]), vec![]);
    }
}
