//! Real faults across hosts (issue 44): the register every critical section writes to, its
//! history, and the checker that judges a run (`docs/faults-design.md`).
//!
//! The register is both a fenced resource (it refuses reads and writes whose token is below the
//! highest it has accepted) and an unfenced log of section boundaries stamped with its own
//! clock. Clients in any language speak its line protocol ([`protocol`]); the `chaos_register`
//! binary serves it ([`register`]), writing every request and answer to a history file
//! ([`history`]); `chaos_check` reads that file and reports ([`check`]).

pub mod check;
pub mod client;
pub mod history;
pub mod protocol;
pub mod register;
