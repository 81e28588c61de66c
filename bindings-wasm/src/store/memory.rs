//! The in-module store: the kernel's reference [`MemoryTable`], shared by every locker built on
//! one `MemoryStore` object. Commands apply at once, at the store's own monotonic clock.

use std::cell::RefCell;
use std::rc::Rc;

use baton_kernel::{Command, Instant, MemoryTable, Reply};
use wasm_bindgen::prelude::*;

use crate::js;
use crate::wake::Watch;

/// The table and its change counter.
pub(crate) struct Shared {
    table: RefCell<MemoryTable>,
    epoch: Instant,
    pub(crate) changes: Rc<Watch>,
}

impl Shared {
    pub(crate) fn apply(&self, command: &Command) -> Reply {
        let now = Instant::from_duration(js::now().saturating_duration_since(self.epoch));
        self.table.borrow_mut().apply(command, now)
    }
}

/// A lock table in this module's memory: lockers made on one `MemoryStore` exclude each other
/// (within this JavaScript realm only; use a database store across processes).
#[wasm_bindgen]
pub struct MemoryStore {
    pub(crate) shared: Rc<Shared>,
}

#[wasm_bindgen]
impl MemoryStore {
    /// An empty table whose clock starts now.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> MemoryStore {
        MemoryStore {
            shared: Rc::new(Shared {
                table: RefCell::new(MemoryTable::new()),
                epoch: js::now(),
                changes: Rc::new(Watch::default()),
            }),
        }
    }
}
