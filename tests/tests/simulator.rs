//! The simulator as tests: every strategy over many seeds, and broken variants that must be
//! caught. `BATON_SIM_SEEDS` overrides the number of seeds per strategy (default 10 000); the
//! long mode is `cargo run --release -p baton-tests --bin simulate -- --seeds 1000000`.

use baton_kernel::{Sabotage, Strategy};
use baton_tests::sim::{self, replay_command, Tally, PROFILES};

fn seeds() -> u64 {
    std::env::var("BATON_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

fn report(strategy: Strategy, sabotage: Sabotage, t: &Tally) -> String {
    let mut out = format!(
        "{strategy} ({sabotage:?}): {} seeds, {} failed, {} grants, {} events\n",
        t.runs,
        t.failed.len(),
        t.grants,
        t.events
    );
    for o in t.failed.iter().take(5) {
        for v in &o.violations {
            out += &format!("  seed {} ({}): {v}\n", o.seed, o.config.profile);
        }
        if let Some(s) = &o.stuck {
            out += &format!("  seed {} ({}): {s}\n", o.seed, o.config.profile);
        }
        out += &format!("  replay: {}\n", replay_command(strategy, sabotage, o.seed));
    }
    out
}

fn safe_and_live(strategy: Strategy) {
    let n = seeds();
    let t = sim::run_many(strategy, Sabotage::None, 0, n, 1, 5);
    println!("{}", report(strategy, Sabotage::None, &t));
    assert_eq!(t.runs, n, "{}", report(strategy, Sabotage::None, &t));
    assert!(
        t.failed.is_empty(),
        "{}",
        report(strategy, Sabotage::None, &t)
    );
    assert!(
        t.grants > n,
        "too few grants: the simulation is not exercising the lock"
    );
}

#[test]
fn bakery_is_safe_and_live() {
    safe_and_live(Strategy::Bakery);
}

#[test]
fn unique_insert_is_safe_and_live() {
    safe_and_live(Strategy::UniqueInsert);
}

#[test]
fn column_prefix_is_safe_and_live() {
    safe_and_live(Strategy::ColumnPrefix);
}

/// The checker can fail: a broken variant must be caught within `budget` seeds.
fn caught(strategy: Strategy, sabotage: Sabotage, budget: u64) {
    let t = sim::run_many(strategy, sabotage, 0, budget, 1, 1);
    let found = t.failed.iter().find(|o| !o.violations.is_empty());
    assert!(
        found.is_some(),
        "{strategy} with {sabotage:?} ran {} seeds without a violation",
        t.runs
    );
    println!("{}", report(strategy, sabotage, &t));
}

#[test]
fn bakery_without_waiting_on_entering_is_caught() {
    caught(Strategy::Bakery, Sabotage::BakeryIgnoresEntering, 2_000);
}

#[test]
fn unique_insert_with_blind_delete_of_expired_rows_is_caught() {
    caught(Strategy::UniqueInsert, Sabotage::UniqueBlindDelete, 2_000);
}

#[test]
fn renewal_and_wins_without_the_continuity_check_are_caught() {
    caught(Strategy::Bakery, Sabotage::NoContinuity, 2_000);
    caught(Strategy::ColumnPrefix, Sabotage::NoContinuity, 5_000);
}

#[test]
fn a_seed_replays_exactly() {
    for strategy in Strategy::ALL {
        for seed in [1, 6, 7] {
            let (a, b) = (
                sim::run(strategy, Sabotage::None, seed),
                sim::run(strategy, Sabotage::None, seed),
            );
            assert_eq!(
                (a.grants, a.events, a.end),
                (b.grants, b.events, b.end),
                "{strategy} seed {seed}"
            );
        }
    }
}

#[test]
fn every_fault_profile_is_exercised() {
    let mut seen: Vec<&str> = (0..PROFILES.len() as u64)
        .map(|seed| sim::Config::from_seed(Strategy::Bakery, Sabotage::None, seed).profile)
        .collect();
    seen.dedup();
    assert_eq!(seen, PROFILES.to_vec());
    // Faulty profiles actually produce failed acquisitions somewhere (the faults bite).
    let t = sim::run_many(Strategy::UniqueInsert, Sabotage::None, 0, 64, 1, 1);
    assert!(t.failed.is_empty());
    let errors: usize = (0..64)
        .map(|s| {
            sim::run(Strategy::UniqueInsert, Sabotage::None, s)
                .errors
                .len()
        })
        .sum();
    assert!(errors > 0, "no fault ever made an acquisition fail");
}
