//! Small decisions every host of the kernel makes the same way: which commands may free a lock
//! (so that waiters in the process look again at once), and which owner id an acquisition
//! takes (its *slot*). The tokio host and the WebAssembly host both use these, so that a lock
//! behaves the same in every language.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};

use crate::model::{Command, Reply, Write};
use crate::retry::SplitMix64;

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
