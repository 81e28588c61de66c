//! Judges a fault run from the register's history (`docs/faults-design.md`, "The checker").
//!
//! ```text
//! chaos_check HISTORY [--rows STORE STRATEGY]
//! ```
//!
//! Prints the report; with `--rows`, also Markdown table rows for the README (fault, store,
//! strategy, sections, fenced violations, unfenced overlaps, token regressions, availability,
//! seconds): one per kind of fault the nemesis marked, `none` for the time between faults, and
//! `all` for the whole run. Exits 1 if the run was unsafe (a fenced violation, a token regression, or a release
//! answered `ok` by a holder another was granted over), 2 on bad input.

use std::process::ExitCode;

use baton_tests::chaos::{check, history};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, row) = match &args[..] {
        [path] => (path, None),
        [path, flag, store, strategy] if flag == "--rows" => (path, Some((store, strategy))),
        _ => {
            eprintln!("usage: chaos_check HISTORY [--rows STORE STRATEGY]");
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
    if let Some((store, strategy)) = row {
        println!();
        println!("| fault | store | strategy | sections | fenced violations | unfenced overlaps | token regressions | availability | seconds |");
        println!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        let all = check::Window {
            seconds: report.seconds,
            sections: report.sections,
            fenced_violations: report.fenced_violations,
            unfenced_overlaps: report.unfenced_overlaps,
            token_regressions: report.token_regressions,
            availability: report.availability,
        };
        for (fault, w) in report.by_fault.iter().chain([(&"all".to_owned(), &all)]) {
            println!(
                "| {fault} | {store} | {strategy} | {} | {} | {} | {} | {:.1}% | {:.0} |",
                w.sections,
                w.fenced_violations,
                w.unfenced_overlaps,
                w.token_regressions,
                w.availability * 100.0,
                w.seconds
            );
        }
    }
    if report.safe() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
