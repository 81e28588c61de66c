//! Owner-id slots: which nonce each concurrent acquisition of a name in this module uses, so
//! that a new acquisition reuses the column of one that has ended (as the native `Locker`
//! does) and two concurrent ones never share one.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use baton_kernel::SplitMix64;

/// The slots of one locker.
pub(crate) struct Slots {
    nonce: u64,
    in_use: RefCell<HashMap<String, BTreeSet<u32>>>,
}

/// A slot, freed when dropped.
pub(crate) struct Slot {
    slots: Rc<Slots>,
    name: String,
    number: u32,
}

impl Slots {
    pub(crate) fn new(nonce: u64) -> Rc<Slots> {
        Rc::new(Slots {
            nonce,
            in_use: RefCell::new(HashMap::new()),
        })
    }

    /// The lowest free slot of `name`.
    pub(crate) fn take(self: &Rc<Self>, name: &str) -> Slot {
        let mut in_use = self.in_use.borrow_mut();
        let used = in_use.entry(name.to_owned()).or_default();
        let number = (0..).find(|n| !used.contains(n)).unwrap_or(u32::MAX);
        used.insert(number);
        Slot {
            slots: Rc::clone(self),
            name: name.to_owned(),
            number,
        }
    }
}

impl Slot {
    /// The owner nonce of this slot: fixed per locker and slot number.
    pub(crate) fn nonce(&self) -> u64 {
        let mix = self.slots.nonce ^ u64::from(self.number).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        SplitMix64::new(mix).next_u64()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut in_use = self.slots.in_use.borrow_mut();
        if let Some(used) = in_use.get_mut(&self.name) {
            used.remove(&self.number);
            if used.is_empty() {
                in_use.remove(&self.name);
            }
        }
    }
}
