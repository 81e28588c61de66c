//! How commands, replies and results read in a transcript: one line each.

use std::fmt::Write as _;
use std::time::Duration;

use baton_kernel::{
    ColumnFilter, Command, Consistency, Error, Failure, Grant, Instant, Lease, LockInfo,
    ReadConsistency, Reply, SerialConsistency, Write,
};

/// `60s`, `59399ms`, or `5.123456ms`.
pub fn dur(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        let n = d.as_nanos();
        format!("{}.{:06}ms", n / 1_000_000, n % 1_000_000)
    }
}

/// `t=1500ms`, `t=5.123456ms`, or `t=never` for [`Instant::MAX`].
pub fn at(t: Instant) -> String {
    if t == Instant::MAX {
        return "t=never".into();
    }
    let n = t.as_nanos();
    if n.is_multiple_of(1_000_000) {
        format!("t={}ms", n / 1_000_000)
    } else {
        format!("t={}.{:06}ms", n / 1_000_000, n % 1_000_000)
    }
}

fn ttl(t: &Option<Duration>) -> String {
    match t {
        Some(d) => format!("ttl={}", dur(*d)),
        None => "ttl=none".into(),
    }
}

fn cl(c: Consistency) -> &'static str {
    match c {
        Consistency::One => "one",
        Consistency::Quorum => "quorum",
        Consistency::LocalQuorum => "local_quorum",
        Consistency::EachQuorum => "each_quorum",
        Consistency::All => "all",
    }
}

fn serial(s: SerialConsistency) -> &'static str {
    match s {
        SerialConsistency::Serial => "serial",
        SerialConsistency::LocalSerial => "local_serial",
    }
}

/// A column filter as transcripts show it.
fn filter_text(filter: &ColumnFilter) -> String {
    match filter {
        ColumnFilter::All => "all".to_string(),
        ColumnFilter::Prefix(p) => format!("prefix {p:?}"),
        ColumnFilter::Exact(e) => format!("exact {e:?}"),
    }
}

/// One line per command, e.g.
/// `insert-if-absent "job"/"lock" = "owner=a:1:0000000000000001 ..." ttl=60s serial/quorum`.
pub fn render_command(c: &Command) -> String {
    match c {
        Command::Read {
            row,
            filter,
            consistency,
        } => {
            let filter = filter_text(filter);
            let consistency = match consistency {
                ReadConsistency::Plain(c) => cl(*c),
                ReadConsistency::Serial(s) => serial(*s),
            };
            format!("read {row:?} {filter} {consistency}")
        }
        Command::Put {
            row,
            column,
            value,
            ttl: t,
            consistency,
        } => format!(
            "put {row:?}/{column:?} = {value:?} {} {}",
            ttl(t),
            cl(*consistency)
        ),
        Command::Delete {
            row,
            column,
            consistency,
        } => format!("delete {row:?}/{column:?} {}", cl(*consistency)),
        Command::Vacate {
            row,
            column,
            read,
            consistency,
        } => {
            format!(
                "vacate {row:?}/{column:?} reading {} {}",
                filter_text(read),
                cl(*consistency)
            )
        }
        Command::DeleteVersion {
            row,
            column,
            stamp,
            consistency,
        } => format!(
            "delete {row:?}/{column:?} at version {stamp} {}",
            cl(*consistency)
        ),
        Command::InsertIfAbsent {
            row,
            column,
            value,
            ttl: t,
            serial: s,
            consistency,
        } => format!(
            "insert-if-absent {row:?}/{column:?} = {value:?} {} {}/{}",
            ttl(t),
            serial(*s),
            cl(*consistency)
        ),
        Command::CompareAndSet {
            row,
            column,
            expected,
            new,
            ttl: t,
            serial: s,
            consistency,
        } => {
            let new = match new {
                Some(v) => format!("{v:?} {}", ttl(t)),
                None => "delete".to_string(),
            };
            format!(
                "cas {row:?}/{column:?} if {expected:?} then {new} {}/{}",
                serial(*s),
                cl(*consistency)
            )
        }
        Command::Claim {
            row,
            column,
            value,
            ttl: t,
            counter,
            counter_expected,
            counter_next,
            turn,
            serial: s,
            consistency,
        } => {
            let expected = match counter_expected {
                Some(v) => format!("{v:?}"),
                None => "absent".to_string(),
            };
            let turn = match turn {
                None => String::new(),
                Some(baton_kernel::Turn::Free) => " if no turn".to_string(),
                Some(baton_kernel::Turn::Ours(v)) => format!(" if turn {v:?} (taken)"),
            };
            format!(
                "claim {row:?}/{column:?} = {value:?} {} and {counter:?} if {expected} then {counter_next:?}{turn} {}/{}",
                ttl(t),
                serial(*s),
                cl(*consistency)
            )
        }
        Command::GuardedSet {
            row,
            column,
            expected,
            new,
            ttl: t,
            guard,
            guard_value,
            serial: s,
            consistency,
        } => {
            let new = match new {
                Some(v) => format!("{v:?} {}", ttl(t)),
                None => "delete".to_string(),
            };
            format!(
                "cas {row:?}/{column:?} if {expected:?} and {guard:?} is {guard_value:?} then {new} {}/{}",
                serial(*s),
                cl(*consistency)
            )
        }
        Command::Batch {
            row,
            writes,
            consistency,
            ..
        } => {
            let writes: Vec<String> = writes
                .iter()
                .map(|w| match w {
                    Write::Put {
                        column,
                        value,
                        ttl: t,
                    } => format!("put {column:?} = {value:?} {}", ttl(t)),
                    Write::Delete { column } => format!("delete {column:?}"),
                })
                .collect();
            format!("batch {row:?} [{}] {}", writes.join("; "), cl(*consistency))
        }
        Command::Purge { row: Some(row) } => format!("purge {row:?}"),
        Command::Purge { row: None } => "purge *".to_string(),
        other => format!("{other:?}"),
    }
}

/// One line per reply.
pub fn render_reply(r: &Reply) -> String {
    match r {
        Reply::Cells(cells) => {
            let cells: Vec<String> = cells
                .iter()
                .map(|c| format!("{:?} = {:?} {}", c.column, c.value, ttl(&c.ttl_remaining)))
                .collect();
            format!("cells [{}]", cells.join(", "))
        }
        Reply::Written => "written".into(),
        Reply::Conditional {
            applied: true,
            current: None,
        } => "applied".into(),
        Reply::Conditional { applied, current } => {
            let current = match current {
                Some(v) => format!("{v:?}"),
                None => "none".into(),
            };
            let applied = if *applied { "applied" } else { "not applied" };
            format!("{applied}, current {current}")
        }
        Reply::Guarded { applied: true, .. } => "applied".into(),
        Reply::Guarded { current, guard, .. } => {
            let show = |v: &Option<String>| match v {
                Some(v) => format!("{v:?}"),
                None => "none".to_string(),
            };
            format!(
                "not applied, current {}, counter {}",
                show(current),
                show(guard)
            )
        }
        Reply::Purged(cells) => {
            let cells: Vec<String> = cells.iter().map(|(r, c)| format!("{r:?}/{c:?}")).collect();
            format!("purged [{}]", cells.join(", "))
        }
        Reply::Failed(f) => format!("failed: {}", render_failure(f)),
        other => format!("{other:?}"),
    }
}

fn render_failure(f: &Failure) -> String {
    match f {
        Failure::Unavailable(m) => format!("unavailable {m:?}"),
        Failure::Timeout(m) => format!("timeout {m:?}"),
        Failure::Rejected(m) => format!("rejected {m:?}"),
        other => format!("{other:?}"),
    }
}

/// How an operation's output shows in a transcript.
pub trait Render {
    /// One line.
    fn render(&self) -> String;
}

impl Render for Lease {
    fn render(&self) -> String {
        format!(
            "lease token={} deadline={}",
            self.token(),
            at(self.deadline())
        )
    }
}

impl Render for Grant {
    fn render(&self) -> String {
        let mut s = format!("granted {}", self.lease.render());
        if !self.row.is_empty() {
            let cells: Vec<String> = self
                .row
                .iter()
                .map(|c| format!("{:?} = {:?}", c.column, c.value))
                .collect();
            let _ = write!(s, " row [{}]", cells.join(", "));
        }
        s
    }
}

impl Render for () {
    fn render(&self) -> String {
        "ok".into()
    }
}

impl Render for Vec<LockInfo> {
    fn render(&self) -> String {
        let entries: Vec<String> = self.iter().map(render_info).collect();
        format!("entries [{}]", entries.join(", "))
    }
}

impl Render for Vec<(String, String)> {
    fn render(&self) -> String {
        let cells: Vec<String> = self.iter().map(|(r, c)| format!("{r:?}/{c:?}")).collect();
        format!("removed [{}]", cells.join(", "))
    }
}

/// `"ticket/a:1:..." a:1:... waiting ticket=2 token=- expires_in=60s`.
pub fn render_info(i: &LockInfo) -> String {
    let mut s = format!("{:?} {} {}", i.column, i.owner, i.state.as_str());
    if let Some(t) = i.ticket {
        let _ = write!(s, " ticket={t}");
    }
    if let Some(t) = i.token {
        let _ = write!(s, " token={t}");
    }
    if let Some(e) = i.expires_in {
        let _ = write!(s, " expires_in={}", dur(e));
    }
    s
}

pub fn render_result<T: Render>(r: &Result<T, Error>) -> String {
    match r {
        Ok(v) => v.render(),
        Err(e) => format!("error {}: {}", e.kind(), e.message()),
    }
}
