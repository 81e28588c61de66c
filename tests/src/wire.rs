//! Round trips counted on the wire: the TCP data segments this machine's clients sent to a
//! server port, read from the kernel's socket statistics (`ss -ti`, `data_segs_out`).
//!
//! For request/response traffic of small messages, one request is one data segment, so the
//! count over a run of operations, divided by the operations, is the wire round trips each
//! made: statements, pings, Paxos requests, whatever the driver sent. It counts every
//! established connection to the port from this machine, so the caller runs nothing else
//! against the server while it measures (the benches' measurements run one at a time).
//! Connections opened and closed within the window are missed; the benches warm their pools
//! first. Linux only; `None` where `ss` is missing.

use std::process::Command;

/// The data segments sent so far to `port` on every established connection of this machine.
pub fn data_segments_to(port: u16) -> Option<u64> {
    let filter = format!("( dport = :{port} )");
    let out = Command::new("ss")
        .args(["-tinH", "state", "established", filter.as_str()])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.split_whitespace()
            .filter_map(|field| field.strip_prefix("data_segs_out:"))
            .filter_map(|n| n.parse::<u64>().ok())
            .sum(),
    )
}

/// The port a store URL names (`host:port`), or `default`.
pub fn port_of(url: &str, default: u16) -> u16 {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let first = host.split(',').next().unwrap_or(host);
    first
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(default)
}

/// Jain's fairness index of per-client counts: (Σx)² / (n·Σx²), 1.0 when every client got the
/// same, 1/n when one got everything.
pub fn jain(counts: &[u64]) -> f64 {
    let n = counts.len() as f64;
    let sum: f64 = counts.iter().map(|&c| c as f64).sum();
    let squares: f64 = counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (n * squares)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_the_url_or_the_default() {
        assert_eq!(port_of("postgres://u:p@127.0.0.1:5433/db?x=1", 5432), 5433);
        assert_eq!(port_of("postgres://u:p@127.0.0.1/db", 5432), 5432);
        assert_eq!(port_of("cassandra://127.0.0.1,127.0.0.2/ks", 9042), 9042);
        assert_eq!(port_of("mysql://baton:baton@127.0.0.1:3306/baton", 1), 3306);
    }

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_takes_all() {
        assert!((jain(&[5, 5, 5, 5]) - 1.0).abs() < 1e-9);
        assert!((jain(&[20, 0, 0, 0]) - 0.25).abs() < 1e-9);
    }
}
