//! The simulator as tests: every strategy over many seeds with every fault class, and one
//! deliberately broken variant per safety rule, each of which must be caught, so the checker is
//! known to be able to fail. `BATON_SIM_SEEDS` overrides the number of seeds per strategy
//! (default 1 000); the long mode is
//! `cargo run --release -p baton-sim --bin simulate -- --seeds 1000000`.

use baton_kernel::{Sabotage, Strategy};
use baton_sim::{self as sim, replay_command, Outcome, Tally, PROFILES};

fn seeds() -> u64 {
    std::env::var("BATON_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000)
}

fn describe(o: &Outcome) -> String {
    let mut out = String::new();
    for v in &o.violations {
        out += &format!("  seed {} ({}): {v}\n", o.seed, o.config.profile);
    }
    if let Some(s) = &o.stuck {
        out += &format!("  seed {} ({}): {s}\n", o.seed, o.config.profile);
    }
    out + &format!(
        "  replay: {}\n",
        replay_command(o.config.strategy, o.config.sabotage, o.seed)
    )
}

fn report(strategy: Strategy, t: &Tally) -> String {
    let mut out = format!(
        "{strategy}: {} seeds, {} failed, {} grants, {} events, faults {:?}, objects ({} seeds) {:?}\n",
        t.runs,
        t.failed.len(),
        t.grants,
        t.events,
        t.faults,
        t.object_runs,
        t.objects
    );
    for o in t.failed.iter().take(5) {
        out += &describe(o);
    }
    out
}

fn safe_and_live(strategy: Strategy) {
    let n = seeds();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t = sim::run_many(strategy, Sabotage::None, 0, n, threads, 5);
    println!("{}", report(strategy, &t));
    assert_eq!(t.runs, n, "{}", report(strategy, &t));
    assert!(t.failed.is_empty(), "{}", report(strategy, &t));
    assert!(
        t.grants > n,
        "too few grants: the simulation is not exercising the lock"
    );
    // The object workload ran on about half the seeds, and its writes were applied (locked
    // and optimistic), refused as busy or mismatched, and acknowledged.
    let o = t.objects;
    assert!(
        t.object_runs > n / 4 && t.object_runs < n * 3 / 4,
        "{strategy}: objects in {} of {n} seeds",
        t.object_runs
    );
    assert!(
        o.locked_applied > 0 && o.optimistic_applied > 0 && o.acknowledged > 0,
        "{strategy}: {o:?}"
    );
    assert!(o.busy + o.mismatched > 0 || n < 100, "{strategy}: {o:?}");
    // Every fault class was injected (the operator's forced releases included).
    for (class, count) in t.faults.named() {
        let minority_needs_replicas = class == "minority";
        // Only unique insert claims.
        let claims_only = class == "split claim" && strategy != Strategy::UniqueInsert;
        assert!(
            count > 0 || claims_only || (minority_needs_replicas && n < 100),
            "{strategy}: no {class} fault in {n} seeds"
        );
    }
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

/// A broken variant must be caught within `budget` seeds of `profile` (`None`: every profile).
fn caught(strategy: Strategy, sabotage: Sabotage, profile: Option<&str>, budget: u64) {
    caught_by(strategy, sabotage, (profile, None), budget, |out| {
        !out.violations.is_empty()
    });
}

/// As [`caught`], for a broken variant that breaks fairness: caught by the liveness check of a
/// run without faults ([`Outcome::stuck`]).
fn caught_starving(strategy: Strategy, sabotage: Sabotage, profile: Option<&str>, budget: u64) {
    caught_by(strategy, sabotage, (profile, None), budget, |out| {
        out.stuck
            .as_deref()
            .is_some_and(|s| s.starts_with("starvation"))
    });
}

fn caught_by(
    strategy: Strategy,
    sabotage: Sabotage,
    (profile, modes): (Option<&str>, Option<sim::Modes>),
    budget: u64,
    found: impl Fn(&Outcome) -> bool,
) {
    let step = PROFILES.len() as u64;
    let offset = profile.map(|p| {
        PROFILES
            .iter()
            .position(|q| *q == p)
            .unwrap_or_else(|| panic!("no profile {p}")) as u64
    });
    let mut tried = 0;
    for k in 0..budget {
        let seed = match offset {
            Some(o) => k * step + o,
            None => k,
        };
        tried += 1;
        let only = sim::Only {
            profile: None,
            modes,
        };
        let out = sim::run_config(only.config(strategy, sabotage, seed), seed);
        if found(&out) {
            println!(
                "{strategy} with {sabotage:?} caught after {tried} seeds:\n{}",
                describe(&out)
            );
            return;
        }
    }
    panic!(
        "{strategy} with {sabotage:?} ran {tried} seeds of {} without a violation",
        profile.unwrap_or("every profile")
    );
}

#[test]
fn bakery_without_waiting_on_entering_is_caught() {
    caught(
        Strategy::Bakery,
        Sabotage::BakeryIgnoresEntering,
        None,
        2_000,
    );
}

#[test]
fn unique_insert_with_blind_delete_of_expired_rows_is_caught() {
    caught(
        Strategy::UniqueInsert,
        Sabotage::UniqueBlindDelete,
        None,
        2_000,
    );
}

#[test]
fn renewal_and_wins_without_the_continuity_check_are_caught() {
    caught(Strategy::Bakery, Sabotage::NoContinuity, None, 2_000);
    caught(Strategy::ColumnPrefix, Sabotage::NoContinuity, None, 5_000);
}

#[test]
fn a_fencing_counter_written_without_compare_and_set_is_caught() {
    for strategy in Strategy::ALL {
        caught(strategy, Sabotage::FenceBlindWrite, None, 2_000);
    }
}

#[test]
fn leases_without_a_drift_margin_are_caught() {
    for strategy in Strategy::ALL {
        caught(
            strategy,
            Sabotage::NoDriftMargin,
            Some("clock-edge"),
            20_000,
        );
    }
}

#[test]
fn deleting_stale_entries_whatever_their_version_is_caught() {
    caught(
        Strategy::ColumnPrefix,
        Sabotage::BlindStaleDelete,
        Some("operators"),
        5_000,
    );
    caught(Strategy::Bakery, Sabotage::BlindStaleDelete, None, 5_000);
}

#[test]
fn one_value_for_every_unique_insert_attempt_is_caught() {
    caught(
        Strategy::UniqueInsert,
        Sabotage::SameValueEveryAttempt,
        Some("late"),
        10_000,
    );
}

/// Unique insert's broken release shows only where the holder had not heard of its loss
/// before releasing (the lock's life reports a loss it knew of, whatever the release says):
/// an operator's forced release between two renewals, as the "all" profile's operators do.
#[test]
fn a_release_trusting_its_removal_is_caught() {
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        caught(strategy, Sabotage::ReleaseSkipsCheck, None, 2_000);
    }
    caught(
        Strategy::UniqueInsert,
        Sabotage::ReleaseSkipsCheck,
        Some("all"),
        2_000,
    );
}

/// Asserts that the real rules pass `seed`.
fn safe_on(strategy: Strategy, seed: u64) {
    let out = sim::run(strategy, Sabotage::None, seed);
    assert!(
        out.violations.is_empty(),
        "seed {seed}:\n{}",
        describe(&out)
    );
}

/// The rule is broken only when a forced release dies between deleting a waiter's `entering`
/// cell and its closing count, with the waiter's read of the queue in between: about once in
/// 10 000 seeds of the "all" profiles, where operators race every other fault. `FOUND` are the
/// seeds where the broken variant double-granted in 100 000 such seeds (50 000 of "all", 50 000
/// of "all+replicas"; `simulate --profile P --sabotage ForcedCountAfterEntering`), found again
/// when the runs changed with issue 43's modes (530974, 570010 of "all"; 449807, 459911 of
/// "all+replicas"); `EARLIER` are the seeds found before, which the real rule must still pass.
/// (A million-seed run found the bug first, and `kernel/tests/late_delivery.rs` reproduces it
/// by hand.)
#[test]
fn forced_releases_counted_after_entering_are_caught_on_the_seeds_that_found_it() {
    const FOUND: [u64; 4] = [449807, 459911, 530974, 570010];
    const EARLIER: [u64; 8] = [60035, 93166, 153359, 256535, 303130, 479951, 523174, 557554];
    let caught = FOUND
        .iter()
        .filter(|&&seed| {
            !sim::run(Strategy::Bakery, Sabotage::ForcedCountAfterEntering, seed)
                .violations
                .is_empty()
        })
        .count();
    assert!(
        caught > 0,
        "the broken variant passed every seed that found it"
    );
    for seed in FOUND.into_iter().chain(EARLIER) {
        safe_on(Strategy::Bakery, seed);
    }
}

/// The seeds of the million-seed run where a unique-insert holder's record, removed by a forced
/// release, came back from a late copy of its own insert and its release said `Ok` (found before
/// the workers ran `LockLife`: the runs differ since, and the real rules pass them still).
#[test]
fn unique_insert_leases_healed_by_their_own_late_insert_pass_on_the_seeds_that_found_them() {
    for seed in [82966, 104758, 130103, 368686, 377902, 383423] {
        safe_on(Strategy::UniqueInsert, seed);
    }
}

/// The seeds of the million-seed run with objects (at 13bf192) where a column-prefix grant that
/// took its token right after a forced release's count, whose delete of the grant's entry landed
/// after the grant, said `Ok` at its release after a release in its transaction rolled back,
/// though the next holder had held the lock meanwhile (802451 has no objects: a lock bug;
/// `kernel/tests/late_delivery.rs` reproduces it by hand).
#[test]
fn column_prefix_grants_right_after_a_forced_release_pass_on_the_seeds_that_found_them() {
    for seed in [802451, 847630] {
        safe_on(Strategy::ColumnPrefix, seed);
    }
}

/// The rule that a grant waits for the disk (PostgreSQL's claims and cell writes, while
/// releases and backing-off deletes do not): broken, a server crash forgets a granted lock.
#[test]
fn grants_that_do_not_wait_for_the_disk_are_caught() {
    for strategy in Strategy::ALL {
        caught(strategy, Sabotage::UnflushedGrants, Some("crashes"), 2_000);
    }
}

#[test]
fn plain_writes_ordered_by_arrival_are_caught() {
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        caught(strategy, Sabotage::ArrivalOrderStamps, Some("late"), 5_000);
    }
}

#[test]
fn a_monotonic_clock_that_stops_in_suspend_is_caught() {
    for strategy in Strategy::ALL {
        caught(
            strategy,
            Sabotage::ClockStopsInSuspend,
            Some("pauses"),
            5_000,
        );
    }
}

/// The lock's life as every host runs it (`LockLife`), not only the operations: a renewed
/// lease believed from when the renewal's reply came, not from when it was sent. The old
/// simulator, with its own holding loop, could not see this.
///
/// Unique insert's renewal takes two round trips after its compare-and-set (the read that
/// confirms it), so the belief stretches past the record's expiry whenever those take longer
/// than the drift margin; bakery's and column prefix's stretch by one round trip only.
#[test]
fn a_life_that_counts_renewals_from_their_reply_is_caught() {
    caught(
        Strategy::UniqueInsert,
        Sabotage::RenewalFromReplyTime,
        None,
        5_000,
    );
}

/// The lock's life: after a release in the caller's transaction that rolled back, a release
/// here that takes the lock found lost for freed by that transaction (and forgets a loss known
/// before). The rule the hosts ran until the simulator drove `LockLife`, which found it: an
/// operator's forced release, and another holder since, went unreported.
#[test]
fn a_release_after_a_release_elsewhere_that_trusts_it_is_caught() {
    for strategy in Strategy::ALL {
        caught(
            strategy,
            Sabotage::ElsewhereReleaseTrusted,
            Some("operators"),
            2_000,
        );
    }
}

/// A host that frees the owner-id slot when a wait gives up, before the cleanup of what it wrote
/// is done: the next acquisition reuses the column, and that late cleanup removes the new
/// holder's cell. (Unique insert's cleanup compares the exact record, which a reused column
/// does not have: only bakery and column prefix are broken by it.)
#[test]
fn a_slot_freed_before_a_given_up_wait_is_cleaned_up_is_caught() {
    for strategy in [Strategy::Bakery, Strategy::ColumnPrefix] {
        caught(strategy, Sabotage::GaveUpFreesSlot, None, 5_000);
    }
}

/// Objects (issue 42): a holder's locked write that skips the lock check (its guard replaced
/// by one that always holds) lands while the store no longer holds its lease: a stale holder
/// (paused, or its write delayed, past its TTL; its lock broken by an operator) writes while
/// someone else holds the lock. The object checker judges every applied write by the writer's
/// lease in the store's state at that instant.
#[test]
fn a_locked_object_write_without_the_lock_check_is_caught() {
    for strategy in Strategy::ALL {
        caught(strategy, Sabotage::ObjectWriteUnguarded, None, 2_000);
    }
}

/// Objects (issue 42): an optimistic update that skips the version check (it writes over the
/// object whatever its version) loses a concurrent increment: a counter ends below the
/// increments acknowledged, and the write replaced a value it was not computed from.
#[test]
fn an_optimistic_object_write_without_the_version_check_is_caught() {
    for strategy in Strategy::ALL {
        caught(strategy, Sabotage::OptimisticUnversioned, None, 500);
    }
}

/// The strategies that carry shared and counted locks (issue 43).
const MODE_STRATEGIES: [Strategy; 2] = [Strategy::Bakery, Strategy::ColumnPrefix];

/// Modes (issue 43): a reader that does not wait for a writer placed before it holds beside it.
#[test]
fn a_shared_request_ignoring_exclusive_entries_is_caught() {
    for strategy in MODE_STRATEGIES {
        caught(strategy, Sabotage::SharedIgnoresExclusive, None, 2_000);
    }
}

/// Modes: a semaphore admitting one more than its permits has one holder too many.
#[test]
fn a_semaphore_admitting_one_more_is_caught() {
    for strategy in MODE_STRATEGIES {
        caught(strategy, Sabotage::SemaphoreOverAdmits, None, 2_000);
    }
}

/// Modes: a shared lease that never reads a move of the fencing counter as a loss tells a
/// holder broken by an operator (its entry removed, then an exclusive grant) `Ok`.
#[test]
fn a_shared_lease_trusting_the_counter_is_caught() {
    for strategy in MODE_STRATEGIES {
        // Readers and writers in every run: a shared holder to break in each.
        caught_by(
            strategy,
            Sabotage::SharedTrustsCounter,
            (Some("operators"), Some(sim::Modes::ReadersWriters)),
            4_000,
            |out| !out.violations.is_empty(),
        );
    }
}

/// Modes, column prefix: a writer that drops its request when readers hold is overtaken by
/// the stream of readers that follows (the fairness check of the runs without faults).
#[test]
fn a_writer_dropping_its_request_is_caught() {
    caught_starving(
        Strategy::ColumnPrefix,
        Sabotage::ExclusiveDropsRequest,
        Some("none"),
        4_000,
    );
}

/// Paths: a writer that does not see its ancestors' entries holds beside a writer of its
/// parent.
#[test]
fn a_path_ignoring_its_ancestors_is_caught() {
    for strategy in MODE_STRATEGIES {
        caught(strategy, Sabotage::PathIgnoresAncestors, None, 2_000);
    }
}

/// Paths: a writer that does not see its descendants' entries holds beside a writer below it.
#[test]
fn a_path_ignoring_its_descendants_is_caught() {
    for strategy in MODE_STRATEGIES {
        caught(strategy, Sabotage::PathIgnoresDescendants, None, 2_000);
    }
}

/// Paths: a token taken from its own path's counter alone falls below an earlier related
/// writer's.
#[test]
fn a_token_ignoring_related_paths_is_caught() {
    for strategy in MODE_STRATEGIES {
        caught(strategy, Sabotage::TokenIgnoresRelated, None, 2_000);
    }
}

/// Modes: a reader's counter update that missed must not retry over a writer's grant or a
/// forced release. Found by the readers-and-writers million of column prefix (5 seeds of 10^6,
/// release reporting: a reader whose entry an operator removed was granted beside a writer and
/// told `Ok`); the broken variant is the rule before, the real rule passes them.
#[test]
fn a_shared_grant_retrying_over_any_move_is_caught_on_the_seeds_that_found_it() {
    const FOUND: [u64; 5] = [666599, 697186, 706318, 782459, 849682];
    let run = |sabotage, seed| {
        let only = sim::Only {
            profile: None,
            modes: Some(sim::Modes::ReadersWriters),
        };
        sim::run_config(only.config(Strategy::ColumnPrefix, sabotage, seed), seed)
    };
    let caught = FOUND
        .iter()
        .filter(|&&seed| {
            !run(Sabotage::SharedRetriesAnyMove, seed)
                .violations
                .is_empty()
        })
        .count();
    assert!(
        caught > 0,
        "the broken variant passed every seed that found it"
    );
    for seed in FOUND {
        let out = run(Sabotage::None, seed);
        assert!(
            out.violations.is_empty(),
            "seed {seed}:\n{}",
            describe(&out)
        );
    }
}

/// Turns: a waiter that takes its turn for a grant writes over the holder.
#[test]
fn a_turn_taken_for_a_grant_is_caught() {
    caught(
        Strategy::UniqueInsert,
        Sabotage::TurnOverridesLock,
        None,
        2_000,
    );
}

#[test]
fn every_broken_variant_has_a_test() {
    // The list above names each variant once; a new one must get a test here too.
    let tested = [
        Sabotage::BakeryIgnoresEntering,
        Sabotage::UniqueBlindDelete,
        Sabotage::NoContinuity,
        Sabotage::FenceBlindWrite,
        Sabotage::NoDriftMargin,
        Sabotage::BlindStaleDelete,
        Sabotage::SameValueEveryAttempt,
        Sabotage::ReleaseSkipsCheck,
        Sabotage::ForcedCountAfterEntering,
        Sabotage::ArrivalOrderStamps,
        Sabotage::ClockStopsInSuspend,
        Sabotage::UnflushedGrants,
        Sabotage::RenewalFromReplyTime,
        Sabotage::ElsewhereReleaseTrusted,
        Sabotage::GaveUpFreesSlot,
        Sabotage::ObjectWriteUnguarded,
        Sabotage::OptimisticUnversioned,
        Sabotage::SharedIgnoresExclusive,
        Sabotage::SemaphoreOverAdmits,
        Sabotage::SharedTrustsCounter,
        Sabotage::ExclusiveDropsRequest,
        Sabotage::PathIgnoresAncestors,
        Sabotage::PathIgnoresDescendants,
        Sabotage::TokenIgnoresRelated,
        Sabotage::SharedRetriesAnyMove,
        Sabotage::TurnOverridesLock,
    ];
    assert_eq!(tested, Sabotage::ALL);
}

#[test]
fn a_seed_replays_exactly() {
    for strategy in Strategy::ALL {
        for seed in [1, 6, 7, 9, 10] {
            let (a, b) = (
                sim::run(strategy, Sabotage::None, seed),
                sim::run(strategy, Sabotage::None, seed),
            );
            assert_eq!(
                (a.grants, a.events, a.end, a.faults),
                (b.grants, b.events, b.end, b.faults),
                "{strategy} seed {seed}"
            );
        }
    }
}

#[test]
fn every_fault_profile_is_exercised() {
    let seen: Vec<&str> = (0..PROFILES.len() as u64)
        .map(|seed| sim::Config::from_seed(Strategy::Bakery, Sabotage::None, seed).profile)
        .collect();
    assert_eq!(seen, PROFILES.to_vec());
    // Faulty profiles actually produce failed acquisitions somewhere (the faults bite).
    let errors: usize = (0..64)
        .map(|s| {
            sim::run(Strategy::UniqueInsert, Sabotage::None, s)
                .errors
                .len()
        })
        .sum();
    assert!(errors > 0, "no fault ever made an acquisition fail");
}

/// Change notices reach waiting clients (who then look again, or let the wake-up pass under the
/// herd rule), and the network loses some and doubles some.
#[test]
fn change_notices_wake_waiters_and_are_lost_and_doubled() {
    let (mut lost, mut doubled, mut woken) = (0, 0, 0);
    for seed in 0..64 {
        let cfg = sim::Config::from_seed(Strategy::UniqueInsert, Sabotage::None, seed);
        let (out, trace) = sim::run_traced(cfg, seed);
        lost += out.faults.lost_notices;
        doubled += out.faults.duplicated_notices;
        woken += trace.iter().filter(|l| l.contains("NOTICE")).count();
    }
    assert!(woken > 0, "no notice reached a waiting client");
    assert!(lost > 0 && doubled > 0, "lost {lost}, doubled {doubled}");
}
