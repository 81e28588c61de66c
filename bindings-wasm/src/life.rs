//! The JavaScript host of the kernel's [`LockLife`]: the one loop that executes its commands
//! through a store, sleeps on the host's timers until its instants, and wakes it on the
//! holder's requests and on store changes. It is the tokio host's loop
//! (`baton::life_host`) on JavaScript's event loop; every decision (when to renew, when the
//! lease is lost, what a release reports, what a cancelled acquisition removes) is the
//! machine's.

use core::future::Future;
use core::pin::Pin;
use std::cell::RefCell;
use std::rc::Rc;

use baton_kernel::host::ChangeWatch;
use baton_kernel::{
    AfterObject, CommandId, Error, ErrorKind, Instant, LifeEvent, LifePoll, LifeStatus, LockLife,
    Object, ObjectRequest, Reply, Result,
};
use js_sys::Function;
use wasm_bindgen::JsValue;

use crate::errors::{in_context, to_js};
use crate::js::{self, Sleep};
use crate::slots::Slot;
use crate::store::Store;
use crate::wake::{race, First, Notify, Watch};

/// What the holder reads without driving the machine.
#[derive(Default)]
struct View {
    lost: Option<Error>,
    released: Option<Result<()>>,
    /// Renewals finished (a loss answers one too), and the last one's outcome.
    renewals: u64,
    last_renewal: Option<Result<()>>,
    /// Object calls finished, and the last one's outcome.
    objects: u64,
    last_object: Option<Result<Object>>,
    done: bool,
}

/// A lock's machine, shared by the promise that acquires it, the task that keeps it, and the
/// holder's handle.
pub(crate) struct Life {
    machine: RefCell<LockLife>,
    store: Rc<Store>,
    kick: Notify,
    view: RefCell<View>,
    changed: Watch,
    /// The owner-id slot, freed as soon as the life has no cell left to write (see the tokio
    /// host: the next acquisition of the name here may then reuse our column).
    slot: RefCell<Option<Slot>>,
    on_lost: RefCell<Option<Function>>,
    /// The command on its way, kept here between two drives: the acquisition's drive returns
    /// at its outcome, and the next one (the held lock's, or the cleanup of a wait that gave
    /// up) awaits its reply.
    flight: RefCell<Option<Flight>>,
}

/// A command on its way, and its reply to come.
type Flight = (CommandId, Pin<Box<dyn Future<Output = Reply>>>);

impl Life {
    pub(crate) fn new(machine: LockLife, store: Rc<Store>, slot: Slot) -> Rc<Life> {
        Rc::new(Life {
            machine: RefCell::new(machine),
            store,
            kick: Notify::default(),
            view: RefCell::new(View::default()),
            changed: Watch::default(),
            slot: RefCell::new(Some(slot)),
            on_lost: RefCell::new(None),
            flight: RefCell::new(None),
        })
    }

    /// Runs `request` on the machine and wakes its driver.
    pub(crate) fn request<T>(&self, request: impl FnOnce(&mut LockLife) -> T) -> T {
        let out = request(&mut self.machine.borrow_mut());
        self.kick.notify();
        out
    }

    /// The store the lock is kept in.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn status(&self) -> LifeStatus {
        self.machine.borrow().status(js::now())
    }

    pub(crate) fn remaining_ms(&self) -> f64 {
        self.machine.borrow().remaining(js::now()).as_secs_f64() * 1000.0
    }

    /// The holder's check ([`LockLife::check`]).
    pub(crate) fn check(&self, name: &str) -> Result<()> {
        self.machine.borrow().check(js::now(), name)
    }

    /// Calls `callback(error)` when the lease is lost (at once if it already is).
    pub(crate) fn on_lost(&self, callback: Function) {
        let lost = self.view.borrow().lost.clone();
        match lost {
            Some(e) => notify_lost(&callback, &e),
            None => *self.on_lost.borrow_mut() = Some(callback),
        }
    }

    /// Asks for the release and waits for its outcome. A second release, or one after the
    /// life ended, is the machine's error ([`ErrorKind::NotOwner`]).
    pub(crate) async fn release(&self) -> Result<()> {
        self.request(|m| m.release(Vec::new()))?;
        self.released().await
    }

    /// Releases unless a release was asked for already; then waits for that one, whose
    /// outcome its asker has (see `CoreLock::dispose`).
    pub(crate) async fn dispose(&self) -> Result<()> {
        if matches!(self.status(), LifeStatus::Released) {
            let _ = self.released().await;
            return Ok(());
        }
        self.release().await
    }

    /// The outcome of the release asked for (by [`Life::release`], or by an object call that
    /// releases after it).
    async fn released(&self) -> Result<()> {
        self.wait_for(|view| match (&view.released, view.done) {
            (Some(result), _) => Some(result.clone()),
            (None, true) => Some(Err(Error::internal(
                "internal error: the lock's life ended without a release",
            ))),
            (None, false) => None,
        })
        .await
    }

    /// Asks for a renewal now and waits for its outcome (SOSS's `lock_refresh`): the loss if
    /// the lease is lost, [`ErrorKind::NotOwner`] after a release.
    pub(crate) async fn renew(&self) -> Result<()> {
        let before = self.view.borrow().renewals;
        self.request(LockLife::renew_now)?;
        self.wait_for(|view| match (view.renewals > before, view.done) {
            (true, _) => view.last_renewal.clone(),
            (false, true) => Some(Err(ended_during("renewal"))),
            (false, false) => None,
        })
        .await
    }

    /// A holder's object call ([`LockLife::object`]) and its outcome; when `after` releases
    /// the lock, the release's outcome too (as the tokio host's `ObjectGuard` does).
    pub(crate) async fn object(
        &self,
        request: ObjectRequest,
        after: AfterObject,
    ) -> Result<Object> {
        let before = self.view.borrow().objects;
        self.request(|m| m.object(request, after))?;
        let object = self
            .wait_for(|view| match (view.objects > before, view.done) {
                (true, _) => view.last_object.clone(),
                (false, true) => Some(Err(ended_during("object call"))),
                (false, false) => None,
            })
            .await?;
        if after == AfterObject::Release {
            self.released().await?;
        }
        Ok(object)
    }

    /// Waits until `ready` finds what it waits for in the view.
    async fn wait_for<T>(&self, ready: impl Fn(&View) -> Option<T>) -> T {
        loop {
            let seen = self.changed.version();
            if let Some(out) = ready(&self.view.borrow()) {
                return out;
            }
            self.changed.changed(seen).await;
        }
    }

    fn publish(&self, event: &LifeEvent) {
        if event.frees_the_slot() {
            drop(self.slot.borrow_mut().take());
        }
        match event {
            LifeEvent::Lost(e) => {
                {
                    let mut view = self.view.borrow_mut();
                    view.lost = Some(e.clone());
                    // A loss also answers a renewal the holder is waiting for.
                    view.renewals += 1;
                    view.last_renewal = Some(Err(e.clone()));
                }
                // Taken first: the callback runs the holder's code, which may call back in.
                let callback = self.on_lost.borrow_mut().take();
                if let Some(callback) = callback {
                    notify_lost(&callback, e);
                }
            }
            LifeEvent::Released(result) => self.view.borrow_mut().released = Some(result.clone()),
            LifeEvent::Renewed(_) | LifeEvent::RenewalFailed(_) => {
                let mut view = self.view.borrow_mut();
                view.renewals += 1;
                view.last_renewal = Some(match event {
                    LifeEvent::RenewalFailed(e) => Err(e.clone()),
                    _ => Ok(()),
                });
            }
            LifeEvent::Object(result) => {
                let mut view = self.view.borrow_mut();
                view.objects += 1;
                view.last_object = Some(result.clone());
            }
            _ => {}
        }
        self.changed.bump();
    }

    /// Drives the machine until an event `stop` accepts (returned), or until it is done
    /// (`None`). At most one command is outstanding; while one is, the loop still wakes at the
    /// machine's instants and the holder's requests (a deadline passing while a renewal hangs
    /// is a loss now). While none is, a store change wakes a waiting acquisition; our own
    /// changes are absorbed so a waiter does not wake itself.
    pub(crate) async fn drive(
        &self,
        mut stop: impl FnMut(&LifeEvent) -> bool,
    ) -> Option<LifeEvent> {
        let store = Rc::clone(&self.store);
        let changes = store.changes();
        let mut watch = ChangeWatch::new(changes.version());
        // A command an earlier drive left on its way.
        let mut inflight: Option<Flight> = self.flight.borrow_mut().take();
        loop {
            let poll = self.machine.borrow_mut().poll(js::now());
            match poll {
                LifePoll::Execute(id, command) => {
                    watch.before(&command, changes.version());
                    inflight = Some((id, Box::pin(Rc::clone(&store).execute(command))));
                }
                LifePoll::Event(event) => {
                    let event = with_context(event, &store);
                    self.publish(&event);
                    if stop(&event) {
                        *self.flight.borrow_mut() = inflight;
                        return Some(event);
                    }
                }
                LifePoll::WaitUntil(until) => {
                    let mut timer: Pin<Box<dyn Future<Output = ()>>> = if until == Instant::MAX {
                        Box::pin(core::future::pending())
                    } else {
                        Box::pin(Sleep::until(until))
                    };
                    let mut kick = Box::pin(self.kick.notified());
                    let first = match inflight.as_mut() {
                        Some((_, reply)) => {
                            race(Some(reply.as_mut()), timer.as_mut(), kick.as_mut(), None).await
                        }
                        None => {
                            // Only a machine that can use them listens to changes (see
                            // `LockLife::wants_changes`).
                            let listen = self.machine.borrow().wants_changes();
                            let mut change = Box::pin(changes.changed(watch.seen()));
                            race::<Reply>(
                                None,
                                timer.as_mut(),
                                kick.as_mut(),
                                listen.then_some(change.as_mut() as Pin<&mut dyn Future<Output = ()>>),
                            )
                            .await
                        }
                    };
                    match first {
                        First::Reply(reply) => {
                            if let Some((id, _)) = inflight.take() {
                                watch.after(changes.version());
                                self.machine.borrow_mut().handle(id, reply);
                            }
                        }
                        First::Change => {
                            // Retry on the next turn of the event loop, not in this chain of
                            // microtasks: waiters whose attempts write and remove cells wake
                            // one another, and on the memory store (which answers at once)
                            // that chain would never let a timer or a socket run.
                            Sleep::for_duration(core::time::Duration::ZERO).await;
                            if watch.take_change(changes.version()) {
                                self.machine.borrow_mut().wake();
                            }
                        }
                        First::Timer | First::Request => {}
                    }
                }
                LifePoll::Done => {
                    self.view.borrow_mut().done = true;
                    self.changed.bump();
                    return None;
                }
            }
        }
    }
}

/// A holder's call whose life ended before it was answered (released meanwhile).
fn ended_during(what: &str) -> Error {
    Error::new(
        ErrorKind::NotOwner,
        format!("the lock was released before its {what} finished"),
    )
}

/// Calls the holder's loss callback; what it throws is its own business (reported, not raised).
fn notify_lost(callback: &Function, e: &Error) {
    if let Err(thrown) = callback.call1(&JsValue::UNDEFINED, &to_js(e)) {
        web_log(&format!(
            "baton: the lease-lost callback threw: {}",
            js::message_of(&thrown)
        ));
    }
}

fn web_log(text: &str) {
    js_sys::Reflect::get(&js_sys::global(), &"console".into())
        .ok()
        .and_then(|console| {
            let warn = js_sys::Reflect::get(&console, &"warn".into()).ok()?;
            let warn: Function = wasm_bindgen::JsCast::dyn_into(warn).ok()?;
            warn.call1(&console, &text.into()).ok()
        });
}

/// An event with its errors put in the store's context.
fn with_context(event: LifeEvent, store: &Store) -> LifeEvent {
    event.map_error(|e| in_context(e, store))
}
