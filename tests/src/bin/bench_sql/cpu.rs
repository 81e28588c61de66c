//! Where an uncontended lock+release spends CPU, next to the plain client's two `UPDATE`s: the
//! benchmark process's CPU time and context switches, and the database server's CPU time, per
//! operation, over `n` back-to-back operations of each (Linux only: read from `/proc`).
//!
//! Latency on a small machine is noisy; CPU time per operation is not, and it shows what the
//! latency is made of: a thread wake-up costs a context switch on each side, and the server's
//! CPU is shared with the client's on the same cores.

use std::time::Instant;

use baton_tests::cpu::{process_ns, server_ns, switches, tasks_of};

/// Per-operation costs of one loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Costs {
    pub(crate) wall_us: f64,
    pub(crate) client_us: f64,
    pub(crate) switches: f64,
    /// `None` when the server's processes cannot be read (not local, or not found).
    pub(crate) server_us: Option<f64>,
}

/// A reading of the counters.
struct Reading {
    at: Instant,
    client_ns: u64,
    switches: u64,
    server_ns: Option<u64>,
}

impl Reading {
    fn now(server: &str) -> Reading {
        Reading {
            at: Instant::now(),
            client_ns: process_ns("self"),
            switches: tasks_of("self").map(|t| switches(&t)).sum(),
            server_ns: server_ns(server),
        }
    }

    fn since(&self, before: &Reading, n: u64) -> Costs {
        let n = n.max(1) as f64;
        Costs {
            wall_us: (self.at - before.at).as_secs_f64() * 1e6 / n,
            client_us: self.client_ns.saturating_sub(before.client_ns) as f64 / 1e3 / n,
            switches: self.switches.saturating_sub(before.switches) as f64 / n,
            server_us: match (self.server_ns, before.server_ns) {
                (Some(a), Some(b)) => Some(a.saturating_sub(b) as f64 / 1e3 / n),
                _ => None,
            },
        }
    }
}

/// Counters read at the start of a loop.
pub(crate) struct Meter {
    server: &'static str,
    start: Reading,
}

impl Meter {
    /// Starts measuring; `server` names the database's processes (`postgres`, `mariadbd`).
    pub(crate) fn start(server: &'static str) -> Meter {
        Meter {
            server,
            start: Reading::now(server),
        }
    }

    /// The costs per operation since the start, `n` operations having run.
    pub(crate) fn per_op(&self, n: u64) -> Costs {
        Reading::now(self.server).since(&self.start, n)
    }
}
