//! Judges a fault run from the register's history (`docs/faults-design.md`, "The checker").
//!
//! ```text
//! chaos_check HISTORY [--row FAULT STORE STRATEGY]
//! ```
//!
//! Prints the report; with `--row`, also one Markdown table row (fault, store, strategy,
//! sections, fenced violations, unfenced overlaps, token regressions, availability) for the
//! README. Exits 1 if the run was unsafe (a fenced violation, a token regression, or a release
//! answered `ok` by a holder another was granted over), 2 on bad input.

use std::process::ExitCode;

use baton_tests::chaos::{check, history};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, row) = match &args[..] {
        [path] => (path, None),
        [path, flag, fault, store, strategy] if flag == "--row" => {
            (path, Some((fault, store, strategy)))
        }
        _ => {
            eprintln!("usage: chaos_check HISTORY [--row FAULT STORE STRATEGY]");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("chaos_check: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let entries = match history::parse(&text) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("chaos_check: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let report = check::check(&entries);
    println!("{report}");
    if let Some((fault, store, strategy)) = row {
        println!(
            "| {fault} | {store} | {strategy} | {} | {} | {} | {} | {:.1}% |",
            report.sections,
            report.fenced_violations,
            report.unfenced_overlaps,
            report.token_regressions,
            report.availability * 100.0
        );
    }
    if report.safe() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
