//! An acquisition in progress, cleaned up if its future is dropped.
//!
//! `Locker::lock` is an async function, so a caller may drop it midway: `tokio::time::timeout`
//! around it, a `select!` that took another branch, a task aborted. Without care the
//! acquisition's cell would stay in the store until its TTL ran out, and others would wait for
//! it: a unique-insert row already inserted blocks the name; a bakery ticket or a column-prefix
//! column makes later contenders back off. [`Acquiring`] owns the kernel's [`Acquire`] and the
//! owner-id slot while the acquisition runs; dropped before it finishes, it spawns one task on
//! the runtime that executes [`Acquire::cleanup`] (which removes only our own cell) and frees
//! the slot afterwards, so the next acquisition of the name cannot reuse our column while the
//! delete is still on its way.
//!
//! Cost: nothing on the normal path; one store command, in the background, per abandoned
//! acquisition that had written (or may have written) its cell.

use std::sync::Arc;

use baton_kernel::Acquire;

use crate::slots::Slot;
use crate::store::Store;

/// An [`Acquire`] being driven, with the slot its owner id came from.
pub(crate) struct Acquiring {
    op: Acquire,
    slot: Option<Slot>,
    /// Where the cleanup runs; `None` inside a caller's transaction, whose rollback (or the
    /// cell's TTL, if the caller commits anyway) takes care of it.
    store: Option<Arc<dyn Store>>,
    runtime: tokio::runtime::Handle,
    pid: u32,
}

impl Acquiring {
    pub(crate) fn new(
        op: Acquire,
        slot: Slot,
        store: Option<Arc<dyn Store>>,
        runtime: tokio::runtime::Handle,
    ) -> Acquiring {
        Acquiring {
            op,
            slot: Some(slot),
            store,
            runtime,
            pid: std::process::id(),
        }
    }

    /// The operation, to drive.
    pub(crate) fn op(&mut self) -> &mut Acquire {
        &mut self.op
    }

    /// The slot, once the operation has finished (granted or failed): nothing left to clean.
    pub(crate) fn finish(mut self) -> Slot {
        self.slot
            .take()
            .expect("the slot is taken only once, by finish or drop")
    }
}

impl Drop for Acquiring {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        // A forked child: the runtime and the cell are the parent's. Touch nothing.
        if std::process::id() != self.pid {
            std::mem::forget(slot);
            return;
        }
        let (Some(command), Some(store)) = (self.op.cleanup(), self.store.take()) else {
            return;
        };
        let name = self.op.name().to_string();
        // If the runtime has shut down, the task is dropped unpolled: the cell expires by TTL.
        drop(self.runtime.spawn(async move {
            let reply = store.execute(command).await;
            tracing::debug!(lock = %name, ?reply, "cleaned up an abandoned acquisition");
            drop(slot);
        }));
    }
}
