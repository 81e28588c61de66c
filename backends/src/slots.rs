//! Owner ids that are reused, so lock columns are too.
//!
//! The bakery and column-prefix strategies keep one column per owner in a lock's row. If every
//! acquisition had a new owner id, every release would leave a deleted column behind, and on
//! Cassandra each acquire would read all those tombstones. So a [`Locker`](crate::Locker) gives
//! an acquisition the owner id of a *slot*: the smallest slot number of that lock name not used
//! by another live acquisition of the same locker. A process taking one lock over and over
//! writes one column; N concurrent guards of one name write N columns.
//!
//! Reuse is safe because no two live acquisitions share a slot, and every acquisition writes a
//! fresh acquisition id (`LockOptions::acquisition`) into its values, so a reused owner id never
//! produces a value identical to an earlier one (the kernel settles ambiguous writes by
//! comparing values). A forked child has another pid, hence other owner ids.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use baton_kernel::SplitMix64;

/// The slots in use per lock name, and the nonce owner ids derive from.
#[derive(Debug)]
pub(crate) struct Slots {
    nonce: u64,
    in_use: Mutex<HashMap<String, BTreeSet<u32>>>,
}

/// A slot held by one acquisition (and its guard); freed on drop.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<Slots>,
    name: String,
    number: u32,
}

impl Slots {
    pub(crate) fn new(nonce: u64) -> Arc<Slots> {
        Arc::new(Slots {
            nonce,
            in_use: Mutex::new(HashMap::new()),
        })
    }

    /// Takes the smallest free slot of `name`.
    pub(crate) fn take(self: &Arc<Self>, name: &str) -> Slot {
        let mut in_use = self.in_use.lock().unwrap_or_else(PoisonError::into_inner);
        let used = in_use.entry(name.to_owned()).or_default();
        let number = (0..).find(|n| !used.contains(n)).unwrap_or(u32::MAX);
        used.insert(number);
        Slot {
            slots: Arc::clone(self),
            name: name.to_owned(),
            number,
        }
    }
}

impl Slot {
    /// The owner nonce of this slot: the same for every acquisition of this name and slot by
    /// this locker.
    pub(crate) fn nonce(&self) -> u64 {
        let mix = self.slots.nonce ^ u64::from(self.number).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        SplitMix64::new(mix).next_u64()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut in_use = self
            .slots
            .in_use
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(used) = in_use.get_mut(&self.name) {
            used.remove(&self.number);
            if used.is_empty() {
                in_use.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_after_release_and_distinct_while_held() {
        let slots = Slots::new(42);
        let a = slots.take("x");
        let b = slots.take("x");
        let other = slots.take("y");
        assert_ne!(a.nonce(), b.nonce());
        assert_eq!(a.nonce(), other.nonce(), "slot 0 of another name");
        let first = a.nonce();
        drop(a);
        let again = slots.take("x");
        assert_eq!(again.nonce(), first, "the freed slot is reused");
        drop((b, again, other));
        assert!(slots.in_use.lock().map(|m| m.is_empty()).unwrap_or(false));
    }
}
