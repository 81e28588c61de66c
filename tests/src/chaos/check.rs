//! Judging a run from the register's history (`docs/faults-design.md`, "The checker").
//!
//! Every judgement is made in the register's time, which is one clock for all hosts. The
//! orderings it relies on: a client sends `begin` only after its lock call returned, sends
//! `end` and waits for the answer before it releases. So if section B began (in register time)
//! while section A was still open, B's grant came before A's release was sent.

use std::collections::BTreeMap;
use std::fmt;

use super::history::{Entry, What};
use super::protocol::Request;

/// One critical section, as the history shows it.
#[derive(Clone, Debug, Default)]
struct Section {
    client: String,
    token: u64,
    begin: u64,
    conn: u64,
    end: Option<u64>,
    /// A read or write with this section's token was refused (fencing stopped it).
    refused: bool,
    /// Another section began while this one was open.
    overtaken: bool,
    /// What the release answered.
    release: Option<String>,
    /// The client was told during the section that its lease was lost.
    lost_notice: bool,
}

/// What the checker found in one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The run's length in seconds (from `mark start` to `mark stop`).
    pub seconds: f64,
    /// Sections begun.
    pub sections: u64,
    /// Accepted writes that lost another's update: fencing failed (must be 0).
    pub fenced_violations: u64,
    /// Sections that were open at the same time as another (each counted once).
    pub unfenced_overlaps: u64,
    /// The longest time two sections were open at once, in milliseconds.
    pub longest_overlap_ms: f64,
    /// Two sections with one token, or a later section with a lower token whose release said
    /// it held throughout (must be 0).
    pub token_regressions: u64,
    /// Releases answered `ok` by a section another section overtook: the store said the lease
    /// held while someone else was granted (must be 0).
    pub false_ok_releases: u64,
    /// The share of the run during which some section was open.
    pub availability: f64,
    /// The longest stretch without any section open, in milliseconds.
    pub longest_gap_ms: f64,
    /// Sections whose lease was lost in fact: refused by the register, or overtaken.
    pub losses_happened: u64,
    /// Of those, the ones whose client was told (release `lost`, or a `lost` notice).
    pub losses_happened_signalled: u64,
    /// Sections whose client was told its lease was lost.
    pub losses_signalled: u64,
    /// Release outcomes, by outcome.
    pub releases: BTreeMap<String, u64>,
    /// Failed lock calls, by error code.
    pub lock_errors: BTreeMap<String, u64>,
    /// Sections, by client kind (`rust`, `cli`, `cpp`, `python`, `node`...).
    pub by_kind: BTreeMap<String, u64>,
    /// Faults the nemesis marked (`mark fault:...`), in order.
    pub faults: Vec<String>,
    /// The same figures within each fault's windows (from its `mark fault:KIND...` to the next
    /// `mark calm`), by fault kind; `none` is the time between faults.
    pub by_fault: BTreeMap<String, Window>,
}

/// The figures of the time one kind of fault was on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    /// How long the fault was on, in seconds, over all its windows.
    pub seconds: f64,
    /// Sections that began while it was on.
    pub sections: u64,
    /// Fenced violations (writes) while it was on.
    pub fenced_violations: u64,
    /// Sections that began while it was on and overlapped another.
    pub unfenced_overlaps: u64,
    /// Token regressions of sections that began while it was on.
    pub token_regressions: u64,
    /// The share of its time during which some section was open.
    pub availability: f64,
}

impl Report {
    /// Whether the run is safe: no fenced violation, no token regression, no false release.
    pub fn safe(&self) -> bool {
        self.fenced_violations == 0 && self.token_regressions == 0 && self.false_ok_releases == 0
    }

    /// Grants per second.
    pub fn grants_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.sections as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The time within `[from, to)` covered by the union of `spans` (sorted by start), and the
/// longest stretch in it that none covers, both in nanoseconds.
fn coverage(spans: &[(u64, u64)], from: u64, to: u64) -> (u64, u64) {
    let mut covered = 0u64;
    let mut cursor = from;
    let mut longest_gap = 0u64;
    for &(b, e) in spans {
        let (b, e) = (b.max(from), e.min(to));
        if e <= cursor || b >= e {
            continue;
        }
        if b > cursor {
            longest_gap = longest_gap.max(b - cursor);
            cursor = b;
        }
        covered += e - cursor;
        cursor = e;
    }
    (covered, longest_gap.max(to.saturating_sub(cursor)))
}

/// Judges a history.
pub fn check(entries: &[Entry]) -> Report {
    let mut report = Report::default();
    let first = entries.first().map_or(0, |e| e.t_ns);
    let last = entries.last().map_or(0, |e| e.t_ns);
    let mut start = None;
    let mut stop = None;
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    let mut sections: Vec<Section> = Vec::new();
    // The open section of each client: index into `sections`.
    let mut open: BTreeMap<String, usize> = BTreeMap::new();
    // Every section of each (client, token), for releases reported after the section.
    let mut by_key: BTreeMap<(String, u64), usize> = BTreeMap::new();
    // Fault windows: (kind, from, to); the open one while parsing.
    let mut windows: Vec<(String, u64, u64)> = Vec::new();
    let mut fault_on: Option<(String, u64)> = None;
    // When each fenced violation happened.
    let mut violations_at: Vec<u64> = Vec::new();
    for e in entries {
        let request = match &e.what {
            What::Closed => {
                let gone: Vec<String> = open
                    .iter()
                    .filter(|(_, &i)| sections[i].conn == e.conn)
                    .map(|(c, _)| c.clone())
                    .collect();
                for client in gone {
                    if let Some(i) = open.remove(&client) {
                        sections[i].end = Some(e.t_ns);
                    }
                }
                continue;
            }
            What::Request(r) => r,
        };
        match request {
            Request::Hello { client, kind, .. } => {
                kinds.insert(client.clone(), kind.clone());
            }
            Request::Begin { client, token } => {
                if let Some(i) = open.remove(client) {
                    // A new section without an end: the old one ended when this began.
                    sections[i].end = Some(e.t_ns);
                }
                let i = sections.len();
                sections.push(Section {
                    client: client.clone(),
                    token: *token,
                    begin: e.t_ns,
                    conn: e.conn,
                    ..Section::default()
                });
                open.insert(client.clone(), i);
                by_key.insert((client.clone(), *token), i);
            }
            Request::Read { client, token } | Request::Write { client, token, .. } => {
                if e.answer.starts_with("refused") {
                    if let Some(&i) = by_key.get(&(client.clone(), *token)) {
                        sections[i].refused = true;
                    }
                }
                if e.note.starts_with("stale-value") {
                    report.fenced_violations += 1;
                    violations_at.push(e.t_ns);
                }
            }
            Request::End { client, token } => {
                if let Some(&i) = open.get(client) {
                    if sections[i].token == *token {
                        sections[i].end = Some(e.t_ns);
                        open.remove(client);
                    }
                }
            }
            Request::Release {
                client,
                token,
                outcome,
            } => {
                *report.releases.entry(outcome.clone()).or_insert(0) += 1;
                if let Some(&i) = by_key.get(&(client.clone(), *token)) {
                    sections[i].release = Some(outcome.clone());
                }
            }
            Request::Lost { client, token } => {
                if let Some(&i) = by_key.get(&(client.clone(), *token)) {
                    sections[i].lost_notice = true;
                }
            }
            Request::Error { code, .. } => {
                *report.lock_errors.entry(code.clone()).or_insert(0) += 1;
            }
            Request::Mark { label } => {
                if let Some((kind, from)) = fault_on.take() {
                    windows.push((kind, from, e.t_ns));
                }
                match label.as_str() {
                    "start" => start = start.or(Some(e.t_ns)),
                    "stop" => stop = Some(e.t_ns),
                    "calm" => {}
                    fault => {
                        report.faults.push(fault.to_owned());
                        let kind = fault.trim_start_matches("fault:");
                        let kind = kind.split('=').next().unwrap_or(kind);
                        fault_on = Some((kind.to_owned(), e.t_ns));
                    }
                }
            }
            Request::Holders => {}
        }
    }
    let start = start.unwrap_or(first);
    let stop = stop.unwrap_or(last).max(start);
    if let Some((kind, from)) = fault_on {
        windows.push((kind, from, stop));
    }
    for s in &mut sections {
        if s.end.is_none() {
            s.end = Some(stop.max(s.begin));
        }
    }
    report.seconds = (stop - start) as f64 / 1e9;
    report.sections = sections.len() as u64;
    for s in &sections {
        let kind = kinds.get(&s.client).cloned().unwrap_or_else(|| "?".into());
        *report.by_kind.entry(kind).or_insert(0) += 1;
    }

    let end = |s: &Section| s.end.unwrap_or(s.begin);
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| (sections[i].begin, i));

    // Overlaps: sweep in begin order, keeping the sections still open.
    let mut active: Vec<usize> = Vec::new();
    let mut overlapping = std::collections::BTreeSet::new();
    for &i in &order {
        let begin = sections[i].begin;
        active.retain(|&a| end(&sections[a]) > begin);
        for &a in &active {
            overlapping.insert(a);
            overlapping.insert(i);
            let overlap = end(&sections[a]).min(end(&sections[i])) - begin;
            report.longest_overlap_ms = report.longest_overlap_ms.max(overlap as f64 / 1e6);
            sections[a].overtaken = true;
        }
        active.push(i);
    }
    report.unfenced_overlaps = overlapping.len() as u64;
    let overlaps_at: Vec<u64> = overlapping.iter().map(|&i| sections[i].begin).collect();

    // Tokens: one per grant, and larger than every section that ended before this one began
    // (checked only where the release said the lease held throughout: a section whose lease
    // ran out before it began, a paused client, may carry an older token, and fencing is
    // there for it).
    let mut by_token: BTreeMap<u64, u64> = BTreeMap::new();
    for s in &sections {
        *by_token.entry(s.token).or_insert(0) += 1;
    }
    let mut regressions_at: Vec<u64> = Vec::new();
    let mut seen_tokens = std::collections::BTreeSet::new();
    for &i in &order {
        if !seen_tokens.insert(sections[i].token) {
            regressions_at.push(sections[i].begin);
        }
    }
    report.token_regressions += by_token.values().map(|n| n - 1).sum::<u64>();
    let mut ends: Vec<(u64, u64)> = sections.iter().map(|s| (end(s), s.token)).collect();
    ends.sort_unstable();
    let mut max_ended = 0u64;
    let mut next_end = 0;
    for &i in &order {
        let s = &sections[i];
        while next_end < ends.len() && ends[next_end].0 < s.begin {
            max_ended = max_ended.max(ends[next_end].1);
            next_end += 1;
        }
        if s.token < max_ended && s.release.as_deref() == Some("ok") {
            report.token_regressions += 1;
            regressions_at.push(s.begin);
        }
    }

    for s in &sections {
        let signalled = s.lost_notice || s.release.as_deref() == Some("lost");
        let happened = s.refused || s.overtaken;
        report.losses_signalled += u64::from(signalled);
        report.losses_happened += u64::from(happened);
        report.losses_happened_signalled += u64::from(happened && signalled);
        if s.overtaken && s.release.as_deref() == Some("ok") {
            report.false_ok_releases += 1;
        }
    }

    // Availability: the union of the sections' intervals within the run.
    let spans: Vec<(u64, u64)> = order
        .iter()
        .map(|&i| (sections[i].begin, end(&sections[i])))
        .collect();
    let (covered, longest_gap) = coverage(&spans, start, stop);
    report.availability = if stop > start {
        covered as f64 / (stop - start) as f64
    } else {
        0.0
    };

    // The same within each fault's windows, and between them (`none`).
    let mut calm: Vec<(String, u64, u64)> = Vec::new();
    let mut cursor = start;
    let mut sorted = windows.clone();
    sorted.sort_by_key(|w| w.1);
    for (_, from, to) in &sorted {
        if *from > cursor {
            calm.push(("none".to_owned(), cursor, (*from).min(stop)));
        }
        cursor = cursor.max(*to);
    }
    if stop > cursor {
        calm.push(("none".to_owned(), cursor, stop));
    }
    let within = |t: u64, from: u64, to: u64| t >= from && t < to;
    for (kind, from, to) in windows.iter().chain(calm.iter()) {
        let w = report.by_fault.entry(kind.clone()).or_default();
        let length = to.saturating_sub(*from);
        let (covered, _) = coverage(&spans, *from, *to);
        // Accumulate covered time in `availability` as nanoseconds; divided below.
        w.availability += covered as f64;
        w.seconds += length as f64 / 1e9;
        w.sections += spans.iter().filter(|s| within(s.0, *from, *to)).count() as u64;
        w.fenced_violations += violations_at
            .iter()
            .filter(|&&t| within(t, *from, *to))
            .count() as u64;
        w.unfenced_overlaps += overlaps_at
            .iter()
            .filter(|&&t| within(t, *from, *to))
            .count() as u64;
        w.token_regressions += regressions_at
            .iter()
            .filter(|&&t| within(t, *from, *to))
            .count() as u64;
    }
    for w in report.by_fault.values_mut() {
        w.availability = if w.seconds > 0.0 {
            w.availability / 1e9 / w.seconds
        } else {
            0.0
        };
    }
    report.longest_gap_ms = longest_gap as f64 / 1e6;
    report
}

fn counts(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "-".to_owned();
    }
    map.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let must = |n: u64| if n == 0 { "" } else { "  <-- must be 0" };
        writeln!(f, "seconds                  {:.1}", self.seconds)?;
        writeln!(
            f,
            "sections                 {} ({:.1} grants/s; {})",
            self.sections,
            self.grants_per_second(),
            counts(&self.by_kind)
        )?;
        writeln!(
            f,
            "fenced violations        {}{}",
            self.fenced_violations,
            must(self.fenced_violations)
        )?;
        writeln!(
            f,
            "unfenced overlaps        {} sections (longest {:.1} ms)",
            self.unfenced_overlaps, self.longest_overlap_ms
        )?;
        writeln!(
            f,
            "token regressions        {}{}",
            self.token_regressions,
            must(self.token_regressions)
        )?;
        writeln!(
            f,
            "ok releases overtaken    {}{}",
            self.false_ok_releases,
            must(self.false_ok_releases)
        )?;
        writeln!(
            f,
            "availability             {:.1}% (longest time without a holder {:.0} ms)",
            self.availability * 100.0,
            self.longest_gap_ms
        )?;
        writeln!(
            f,
            "losses                   {} happened ({} of them signalled); {} signalled",
            self.losses_happened, self.losses_happened_signalled, self.losses_signalled
        )?;
        writeln!(f, "releases                 {}", counts(&self.releases))?;
        writeln!(f, "failed lock calls        {}", counts(&self.lock_errors))?;
        write!(f, "faults                   {}", self.faults.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(lines: &[(u64, u64, &str, &str, &str)]) -> Vec<Entry> {
        lines
            .iter()
            .map(|&(t, conn, what, answer, note)| Entry {
                t_ns: t * 1_000_000,
                conn,
                what: if what == "closed" {
                    What::Closed
                } else {
                    What::Request(Request::parse(what).expect(what))
                },
                answer: answer.into(),
                note: note.into(),
            })
            .collect()
    }

    #[test]
    fn a_clean_run_has_nothing_to_report() {
        let r = check(&history(&[
            (0, 0, "mark start", "ok", ""),
            (10, 1, "begin a 1", "ok", ""),
            (11, 1, "read a 1", "value 0", ""),
            (12, 1, "write a 1 0", "ok", ""),
            (20, 1, "end a 1", "ok", ""),
            (21, 1, "release a 1 ok", "ok", ""),
            (30, 2, "begin b 2", "ok", ""),
            (40, 2, "end b 2", "ok", ""),
            (41, 2, "release b 2 ok", "ok", ""),
            (100, 0, "mark stop", "ok", ""),
        ]));
        assert!(r.safe());
        assert_eq!(
            (r.sections, r.unfenced_overlaps, r.losses_happened),
            (2, 0, 0)
        );
        assert!((r.availability - 0.2).abs() < 1e-9, "{}", r.availability);
        assert!((r.longest_gap_ms - 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_paused_holder_overlaps_but_fencing_holds() {
        let r = check(&history(&[
            (0, 0, "mark start", "ok", ""),
            (10, 1, "begin a 1", "ok", ""),
            (11, 1, "read a 1", "value 0", ""),
            // a is paused; its lease runs out; b is granted.
            (50, 2, "begin b 2", "ok", ""),
            (51, 2, "read b 2", "value 0", ""),
            (52, 2, "write b 2 0", "ok", ""),
            (60, 2, "end b 2", "ok", ""),
            (61, 2, "release b 2 ok", "ok", ""),
            (70, 1, "write a 1 0", "refused 2", ""),
            (71, 1, "end a 1", "ok", ""),
            (72, 1, "release a 1 lost", "ok", ""),
            (100, 0, "mark stop", "ok", ""),
        ]));
        assert!(r.safe(), "{r}");
        assert_eq!(r.unfenced_overlaps, 2);
        assert_eq!((r.losses_happened, r.losses_happened_signalled), (1, 1));
    }

    #[test]
    fn equal_tokens_false_releases_and_regressions_are_caught() {
        let r = check(&history(&[
            (10, 1, "begin a 5", "ok", ""),
            (11, 2, "begin b 5", "ok", ""),
            (12, 1, "read a 5", "value 0", ""),
            (13, 2, "read b 5", "value 0", ""),
            (14, 1, "write a 5 0", "ok", ""),
            (15, 2, "write b 5 0", "ok", "stale-value 1"),
            (16, 1, "end a 5", "ok", ""),
            (17, 1, "release a 5 ok", "ok", ""),
            (18, 2, "end b 5", "ok", ""),
            (19, 2, "release b 5 ok", "ok", ""),
            (30, 3, "begin c 4", "ok", ""),
            (31, 3, "end c 4", "ok", ""),
            (32, 3, "release c 4 ok", "ok", ""),
        ]));
        assert_eq!(r.fenced_violations, 1);
        assert_eq!(r.unfenced_overlaps, 2);
        // b and a share token 5; c began after both ended with 4 and says it held throughout.
        assert_eq!(r.token_regressions, 2);
        assert_eq!(r.false_ok_releases, 1);
        assert!(!r.safe());
    }

    #[test]
    fn figures_are_split_by_the_fault_that_was_on() {
        let r = check(&history(&[
            (0, 0, "mark start", "ok", ""),
            (10, 1, "begin a 1", "ok", ""),
            (20, 0, "mark fault:pause=a", "ok", ""),
            (40, 2, "begin b 2", "ok", ""),
            (50, 2, "end b 2", "ok", ""),
            (60, 0, "mark calm", "ok", ""),
            (70, 1, "end a 1", "ok", ""),
            (100, 0, "mark stop", "ok", ""),
        ]));
        let pause = &r.by_fault["pause"];
        assert_eq!((pause.sections, pause.unfenced_overlaps), (1, 1));
        assert_eq!(r.unfenced_overlaps, 2);
        assert!((pause.seconds - 0.04).abs() < 1e-9);
        assert!((pause.availability - 1.0).abs() < 1e-9);
        let none = &r.by_fault["none"];
        // a began before the pause: its part of the overlap counts where it began.
        assert_eq!((none.sections, none.unfenced_overlaps), (1, 1));
        // 0-20 (a from 10) and 60-100 (a until 70): 20 of 60 ms covered.
        assert!((none.availability - 20.0 / 60.0).abs() < 1e-9, "{none:?}");
    }

    #[test]
    fn a_dead_clients_section_ends_when_its_connection_closes() {
        let r = check(&history(&[
            (0, 0, "mark start", "ok", ""),
            (10, 1, "begin a 1", "ok", ""),
            (20, 1, "closed", "-", ""),
            (30, 2, "begin b 2", "ok", ""),
            (40, 2, "end b 2", "ok", ""),
            (50, 0, "mark stop", "ok", ""),
        ]));
        assert_eq!(r.unfenced_overlaps, 0);
        assert!(r.safe());
    }
}
