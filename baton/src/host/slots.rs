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

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use baton_kernel::host::SlotTable;

/// The slots in use per lock name (the kernel's [`SlotTable`]), shared by a locker's
/// acquisitions.
#[derive(Debug)]
pub(crate) struct Slots {
    table: Mutex<SlotTable>,
}

/// A slot held by one acquisition (and its guard); freed on drop.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<Slots>,
    name: String,
    number: u32,
    nonce: u64,
}

impl Slots {
    pub(crate) fn new(nonce: u64) -> Arc<Slots> {
        Arc::new(Slots {
            table: Mutex::new(SlotTable::new(nonce)),
        })
    }

    fn table(&self) -> MutexGuard<'_, SlotTable> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the smallest free slot of `name`.
    pub(crate) fn take(self: &Arc<Self>, name: &str) -> Slot {
        let mut table = self.table();
        let number = table.take(name);
        Slot {
            slots: Arc::clone(self),
            name: name.to_owned(),
            number,
            nonce: table.nonce(number),
        }
    }
}

impl Slot {
    /// The owner nonce of this slot: the same for every acquisition of this name and slot by
    /// this locker.
    pub(crate) fn nonce(&self) -> u64 {
        self.nonce
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.table().free(&self.name, self.number);
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
        assert_eq!(slots.take("x").nonce(), first, "every slot was freed");
    }
}
