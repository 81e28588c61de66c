//! Small decisions every host of the kernel makes the same way: which commands may free a lock
//! (so that waiters in the process look again at once), when a change wakes a waiter
//! ([`ChangeWatch`]), which owner id an acquisition takes (its *slot*), what an acquisition
//! starts from ([`fresh_acquisition`], [`FenceHints`]), and how a plain write is stamped
//! ([`next_stamp`]). The tokio host and the WebAssembly host both use these, so that a lock
//! behaves the same in every language.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};

use crate::error::Error;
use crate::lease::{FenceHint, Lease};
use crate::model::{Command, Reply, Write};
use crate::options::LockOptions;
use crate::retry::SplitMix64;

/// The options of one new acquisition: `options` with `seed` (the backoff's jitter),
/// `acquisition` (made odd, so never zero: the id every value this acquisition writes carries,
/// so that no two acquisitions write identical values even when they reuse an owner id) and
/// `created_unix_ms` (shown to people reading the table). A host draws `seed` and
/// `acquisition` from its own randomness, fresh for every acquisition.
pub fn fresh_acquisition(
    options: &LockOptions,
    seed: u64,
    acquisition: u64,
    created_unix_ms: u64,
) -> LockOptions {
    LockOptions {
        seed,
        acquisition: acquisition | 1,
        created_unix_ms,
        ..options.clone()
    }
}

/// The stamp of a plain write sent at `now_micros` (wall-clock microseconds since the Unix
/// epoch), the last stamp the process gave being `last` (0 before the first) and the command
/// asking for more than `floor` (a batch's `after`): greater than both, and the clock itself
/// when it is ahead. Stamps thus never repeat or go back in one process, whatever its clock
/// does, and a write applied late cannot undo a later one of the same owner (see
/// [`Command::stamped`]). A host keeps `last` (one per process) and stores the result in it.
pub fn next_stamp(now_micros: u64, floor: u64, last: u64) -> u64 {
    now_micros
        .max(floor.saturating_add(1))
        .max(last.saturating_add(1))
}

/// The unit a binding's users count a duration in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds (Python).
    Seconds,
    /// Milliseconds (C, C++, JavaScript).
    Milliseconds,
}

/// A duration a binding's user gave as a number of `unit`s, read the same in every language:
/// NaN and negative numbers are refused ([`ErrorKind::InvalidOption`](crate::ErrorKind::InvalidOption),
/// naming `what`); fractions are kept; infinity is forever ([`Duration::MAX`](core::time::Duration::MAX))
/// where `forever` is allowed (a wait), refused elsewhere (a lease must end); a finite number
/// past a duration's range is [`Duration::MAX`](core::time::Duration::MAX) too, which the
/// options' own checks judge (a ttl has a maximum).
pub fn duration_from(
    what: &str,
    amount: f64,
    unit: TimeUnit,
    forever: bool,
) -> crate::Result<core::time::Duration> {
    let unit_name = match unit {
        TimeUnit::Seconds => "seconds",
        TimeUnit::Milliseconds => "milliseconds",
    };
    let invalid = |why: String| Error::new(crate::ErrorKind::InvalidOption, why);
    if amount.is_nan() || amount < 0.0 {
        return Err(invalid(alloc::format!(
            "{what} must be a number of {unit_name} >= 0, got {amount}"
        )));
    }
    if amount.is_infinite() {
        return if forever {
            Ok(core::time::Duration::MAX)
        } else {
            Err(invalid(alloc::format!(
                "{what} must be a finite number of {unit_name}, got {amount}"
            )))
        };
    }
    let seconds = match unit {
        TimeUnit::Seconds => amount,
        TimeUnit::Milliseconds => amount / 1000.0,
    };
    Ok(core::time::Duration::try_from_secs_f64(seconds).unwrap_or(core::time::Duration::MAX))
}

/// The error of a driver loop asked to wait forever with no command outstanding: a kernel
/// bug, reported rather than waited on.
pub fn waits_forever() -> Error {
    Error::internal(
        "internal error: the operation asked to wait forever with no command outstanding (a kernel bug; please report it)",
    )
}

/// The most names [`FenceHints`] remembers; when full, it forgets them all at once.
pub const MAX_FENCE_HINTS: usize = 4096;

/// The fencing counter as a locker's last lease of each name left it. Unique insert starts its
/// counter update from it (one round trip less); bakery takes the forced releases counted in it
/// as known. A stale or foreign hint (another strategy's counter) costs a retry, never safety.
/// A host keeps one per locker, behind its own lock.
#[derive(Clone, Debug, Default)]
pub struct FenceHints {
    hints: BTreeMap<String, FenceHint>,
}

impl FenceHints {
    /// No hints.
    pub fn new() -> FenceHints {
        FenceHints::default()
    }

    /// The hint for lock `name`, if one is remembered.
    pub fn get(&self, name: &str) -> Option<FenceHint> {
        self.hints.get(name).cloned()
    }

    /// Remembers where `lease` left its name's counter (after a grant). At most
    /// [`MAX_FENCE_HINTS`] names: a new name when full clears the others first.
    pub fn remember(&mut self, lease: &Lease) {
        let name = lease.name().as_str();
        if self.hints.len() >= MAX_FENCE_HINTS && !self.hints.contains_key(name) {
            self.hints.clear();
        }
        self.hints.insert(name.to_string(), lease.fence_hint());
    }
}

/// Whether `command`, answered by `reply`, may have freed a lock that someone waits for: a
/// release ([`Command::Vacate`], or a batch that deletes: bakery and column-prefix cells; a
/// guarded or plain compare-and-delete for unique insert), the removal of another
/// owner's cell (a forced release, a stale entry), a purge that removed something. A store
/// tells the waiters of its process (and, on PostgreSQL, of every process) to look again when
/// it did.
///
/// A plain [`Command::Delete`] is an acquisition removing its own cell as it backs off or gives
/// up: it ends no holding, so it wakes no one. Were it to, column-prefix waiters would wake one
/// another with every failed attempt while the holder holds, and spin.
pub fn may_free_a_lock(command: &Command, reply: &Reply) -> bool {
    match (command, reply) {
        (_, Reply::Failed(_)) => false,
        (Command::DeleteVersion { .. } | Command::Vacate { .. }, _) => true,
        (Command::CompareAndSet { new: None, .. }, Reply::Conditional { applied, .. }) => *applied,
        (Command::GuardedSet { new: None, .. }, Reply::Guarded { applied, .. }) => *applied,
        (Command::Batch { writes, .. }, _) => {
            writes.iter().any(|w| matches!(w, Write::Delete { .. }))
        }
        (Command::Purge { .. }, Reply::Purged(removed)) => !removed.is_empty(),
        _ => false,
    }
}

/// Whether `command` may free a lock whatever its reply ([`may_free_a_lock`] before the
/// reply is known): a host absorbs the change its own command makes, so that a waiter does
/// not wake itself.
pub fn may_signal(command: &Command) -> bool {
    match command {
        Command::DeleteVersion { .. } | Command::Vacate { .. } | Command::Purge { .. } => true,
        Command::CompareAndSet { new, .. } | Command::GuardedSet { new, .. } => new.is_none(),
        Command::Batch { writes, .. } => writes.iter().any(|w| matches!(w, Write::Delete { .. })),
        _ => false,
    }
}

/// One waiter's view of its store's change counter (a number every change that may free a lock
/// moves: PostgreSQL's `NOTIFY`, a process's own releases): decides when a waiting acquisition
/// looks again at once ([`crate::LockLife::wake`]) instead of at its backoff's end.
///
/// The rule, the same in every host:
/// - a change wakes the waiter only once no command of its own is on its way (what that
///   command observes reflects it, or the reply settles it);
/// - before a command that cannot signal a change ([`may_signal`]), every change so far is
///   seen: what the command observes reflects it;
/// - a command that may signal one (a release, the removal of a cell) moves the counter by one
///   itself: if the counter moved by at most one while it was on its way, and nothing was
///   pending before it, that was our own change, and it does not wake us. Anything more is
///   someone else's, and does.
///
/// No wake-up is lost: a change not marked seen by these rules wakes the waiter the next time
/// it waits. Costs a few comparisons; holds no clock and no counter of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeWatch {
    /// The counter's value as last seen.
    seen: u64,
    /// For a command on its way that may signal: whether a change was pending before it, and
    /// the counter when it was sent.
    mark: Option<(bool, u64)>,
}

impl ChangeWatch {
    /// A watch that has seen everything up to `current` (subscribe before the first poll, so
    /// that nothing from then on is lost).
    pub fn new(current: u64) -> ChangeWatch {
        ChangeWatch {
            seen: current,
            mark: None,
        }
    }

    /// The counter's value as last seen: a host waits for the counter to differ from it.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// `command` is being sent, with the counter at `current`.
    pub fn before(&mut self, command: &Command, current: u64) {
        if may_signal(command) {
            self.mark = Some((current != self.seen, current));
        } else {
            self.seen = current;
            self.mark = None;
        }
    }

    /// The command sent last was answered (or abandoned), with the counter at `current`.
    pub fn after(&mut self, current: u64) {
        if let Some((pending, before)) = self.mark.take() {
            if !pending && current.wrapping_sub(before) <= 1 {
                self.seen = current;
            }
        }
    }

    /// Whether a waiter with no command on its way should look again, the counter being at
    /// `current`: a change it has not seen. Marks it seen.
    pub fn take_change(&mut self, current: u64) -> bool {
        let changed = current != self.seen;
        self.seen = current;
        changed
    }
}

/// The owner-id slots of one locker: an acquisition takes the smallest slot number of its lock
/// name that no other live acquisition of the locker holds, and its owner id's nonce derives
/// from that number ([`SlotTable::nonce`]).
///
/// The bakery and column-prefix strategies keep one column per owner in a lock's row. If every
/// acquisition had a new owner id, every release would leave a deleted column behind (on
/// Cassandra, a tombstone each later acquire reads). With slots, a process taking one lock over
/// and over writes one column; N concurrent holders of one name write N columns. Reuse is safe:
/// no two live acquisitions share a slot, and every acquisition writes a fresh acquisition id
/// into its values. A host wraps the table in its own lock and frees a slot as soon as its
/// acquisition has no cell left to write.
#[derive(Clone, Debug, Default)]
pub struct SlotTable {
    base: u64,
    in_use: BTreeMap<String, BTreeSet<u32>>,
}

impl SlotTable {
    /// An empty table whose nonces derive from `base` (random per locker).
    pub fn new(base: u64) -> SlotTable {
        SlotTable {
            base,
            in_use: BTreeMap::new(),
        }
    }

    /// Takes the smallest free slot of `name`.
    pub fn take(&mut self, name: &str) -> u32 {
        let used = self.in_use.entry(name.to_string()).or_default();
        let number = (0..).find(|n| !used.contains(n)).unwrap_or(u32::MAX);
        used.insert(number);
        number
    }

    /// Frees slot `number` of `name`.
    pub fn free(&mut self, name: &str, number: u32) {
        if let Some(used) = self.in_use.get_mut(name) {
            used.remove(&number);
            if used.is_empty() {
                self.in_use.remove(name);
            }
        }
    }

    /// The owner nonce of slot `number`: fixed per table and number.
    pub fn nonce(&self, number: u32) -> u64 {
        let mix = self.base ^ u64::from(number).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        SplitMix64::new(mix).next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_the_same_in_every_binding() {
        use core::time::Duration;
        let ms = TimeUnit::Milliseconds;
        assert_eq!(
            duration_from("t", 1500.0, ms, false),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(
            duration_from("t", 0.5, TimeUnit::Seconds, false),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(duration_from("t", 0.0, ms, false), Ok(Duration::ZERO));
        assert_eq!(
            duration_from("t", f64::INFINITY, ms, true),
            Ok(Duration::MAX)
        );
        assert_eq!(duration_from("t", 1e300, ms, false), Ok(Duration::MAX));
        for bad in [-1.0, f64::NAN, f64::NEG_INFINITY, -0.001] {
            let e = duration_from("the ttl", bad, ms, true).expect_err("refused");
            assert_eq!(e.kind(), crate::ErrorKind::InvalidOption);
            assert!(
                e.message()
                    .starts_with("the ttl must be a number of milliseconds >= 0"),
                "{e}"
            );
        }
        let e = duration_from("the ttl", f64::INFINITY, TimeUnit::Seconds, false)
            .expect_err("a lease ends");
        assert!(e.message().contains("finite number of seconds"), "{e}");
    }

    #[test]
    fn stamps_follow_the_clock_and_never_repeat_or_go_back() {
        assert_eq!(next_stamp(1_000, 0, 0), 1_000, "the clock when it is ahead");
        assert_eq!(next_stamp(1_000, 0, 1_000), 1_001, "two in one microsecond");
        assert_eq!(next_stamp(500, 0, 1_000), 1_001, "the clock stepped back");
        assert_eq!(next_stamp(1_000, 5_000, 0), 5_001, "above a batch's floor");
        assert_eq!(
            next_stamp(u64::MAX, u64::MAX, u64::MAX),
            u64::MAX,
            "saturates"
        );
    }

    #[test]
    fn a_fresh_acquisition_has_a_nonzero_id_and_keeps_the_rest() {
        let defaults = LockOptions::default();
        let fresh = fresh_acquisition(&defaults, 7, 0, 1234);
        assert_eq!(
            (fresh.seed, fresh.acquisition, fresh.created_unix_ms),
            (7, 1, 1234)
        );
        assert_eq!(fresh.strategy, defaults.strategy);
        assert_eq!(fresh_acquisition(&defaults, 0, 6, 0).acquisition, 7);
    }

    fn vacate() -> Command {
        Command::Vacate {
            row: "r".into(),
            column: "c".into(),
            read: crate::model::ColumnFilter::Prefix("_LOCK_".into()),
            consistency: crate::model::Consistency::Quorum,
        }
    }

    fn read() -> Command {
        Command::Read {
            row: "r".into(),
            filter: crate::model::ColumnFilter::All,
            consistency: crate::model::ReadConsistency::Plain(crate::model::Consistency::Quorum),
        }
    }

    #[test]
    fn a_waiter_does_not_wake_on_its_own_change_but_on_anyone_elses() {
        // Our own release moves the counter by one: absorbed.
        let mut w = ChangeWatch::new(5);
        w.before(&vacate(), 5);
        w.after(6);
        assert!(!w.take_change(6));
        // Ours and someone else's in the same window: wakes.
        w.before(&vacate(), 6);
        w.after(8);
        assert!(w.take_change(8));
        // A change pending before our command: kept, it wakes.
        let mut w = ChangeWatch::new(1);
        w.before(&vacate(), 2);
        w.after(3);
        assert!(w.take_change(3));
        // A command that cannot signal sees everything before it; a change during it wakes.
        let mut w = ChangeWatch::new(1);
        w.before(&read(), 4);
        w.after(4);
        assert!(!w.take_change(4));
        w.before(&read(), 4);
        w.after(5);
        assert!(w.take_change(5));
        assert_eq!(w.seen(), 5);
    }

    #[test]
    fn slots_are_the_smallest_free_and_their_nonces_fixed() {
        let mut table = SlotTable::new(42);
        assert_eq!(
            (table.take("a"), table.take("a"), table.take("b")),
            (0, 1, 0)
        );
        table.free("a", 0);
        assert_eq!(table.take("a"), 0);
        assert_eq!(table.nonce(1), SlotTable::new(42).nonce(1));
        assert_ne!(table.nonce(0), table.nonce(1));
        assert_ne!(table.nonce(0), SlotTable::new(43).nonce(0));
    }
}
