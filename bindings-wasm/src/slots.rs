//! Owner-id slots of a locker: the kernel's [`SlotTable`] (which decides), shared by the
//! locker's acquisitions; a slot is freed when its acquisition has no cell left to write.

use std::cell::RefCell;
use std::rc::Rc;

use baton_kernel::host::SlotTable;

/// The slots of one locker.
pub(crate) struct Slots {
    table: RefCell<SlotTable>,
}

/// A slot, freed when dropped.
pub(crate) struct Slot {
    slots: Rc<Slots>,
    name: String,
    number: u32,
    nonce: u64,
}

impl Slots {
    pub(crate) fn new(nonce: u64) -> Rc<Slots> {
        Rc::new(Slots {
            table: RefCell::new(SlotTable::new(nonce)),
        })
    }

    /// The lowest free slot of `name`.
    pub(crate) fn take(self: &Rc<Self>, name: &str) -> Slot {
        let mut table = self.table.borrow_mut();
        let number = table.take(name);
        Slot {
            slots: Rc::clone(self),
            name: name.to_owned(),
            number,
            nonce: table.nonce(number),
        }
    }
}

impl Slot {
    /// The owner nonce of this slot.
    pub(crate) fn nonce(&self) -> u64 {
        self.nonce
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.table.borrow_mut().free(&self.name, self.number);
    }
}
