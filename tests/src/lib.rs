//! Tests of baton that span crates: the store conformance suite, the multi-process and fault
//! tests and their workers, the fault harness across hosts (`chaos`), and the benchmarks. The
//! deterministic simulator is a package of its own, `baton-sim` (`sim/`), optimised in test
//! builds while this one is not.

#![forbid(unsafe_code)]

pub mod chaos;
pub mod conformance;
pub mod contention;
pub mod cpu;
pub mod multiproc;
pub mod plot;
pub mod provenance;
pub mod wire;
