//! The tokio host of the kernel's [`LockLife`]: the one loop that executes its commands, sleeps
//! until its timers, wakes it on store changes and on the holder's requests, and publishes what
//! happens for the guard to read. Every decision about the lock (when to renew, when the lease
//! is lost, what a release reports, what a cancelled acquisition must remove) is the machine's.
//!
//! One [`Life`] is shared by the caller's future (which drives the acquisition, so that a
//! transaction's connection can serve it) and, once granted, a task on the runtime that drives
//! the rest (renewals, loss, release). Cancelling an acquisition (dropping its future) hands the
//! machine to a task that sends its cleanup ([`Abandon`]).
//!
//! The held part's task is started when something needs it ([`Life::hand_over`]): when the
//! machine's first step falls due by itself (with keep-alive, the first renewal: the
//! locker's [`Starter`] starts it then), or at the first request that must be driven in the
//! background (a renewal, a drop, a release handed elsewhere or sent from outside a runtime, a
//! cancelled release), whichever comes first. A lock released with [`release`] before its
//! first renewal never starts it: the release is sent from the caller's task, and the lock
//! costs no task, no timer and no thread wake-up of its own (on a multi-thread runtime, those
//! were about 80 µs and 6 context switches per lock, measured by `bench_sql`).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use baton_kernel::host::ChangeWatch;
use baton_kernel::{
    Command, CommandId, Error, Failure, Instant, Lease, LifeEvent, LifePoll, LifeStatus, LockLife,
    Reply, Result, Write,
};
use tokio::sync::{watch, Notify};

use crate::host::clock::Clock;
use crate::host::driver::{counter, wait_for_change};
use crate::host::slots::Slot;
use crate::host::starter::{Deferral, Starter};
use crate::stores::store::{Store, StoreFuture};

/// What the holder can read without driving the machine: the outcomes of its requests.
#[derive(Clone, Debug, Default)]
pub(crate) struct View {
    /// The lease as last granted or renewed.
    pub(crate) lease: Option<Lease>,
    /// Renewal outcomes so far, and the last one.
    pub(crate) renewals: u64,
    pub(crate) last_renewal: Option<Result<()>>,
    /// The loss, once reported.
    pub(crate) lost: Option<Error>,
    /// The release's outcome, once finished.
    pub(crate) released: Option<Result<()>>,
    /// Releases handed to the holder to run elsewhere so far, and the last one's lease and
    /// earlier loss.
    pub(crate) elsewhere: u64,
    pub(crate) last_elsewhere: Option<(Lease, Option<Error>)>,
    /// Object calls finished so far, and the last one's outcome.
    pub(crate) objects: u64,
    pub(crate) last_object: Option<Result<baton_kernel::Object>>,
    /// The machine has nothing left to do.
    pub(crate) done: bool,
}

/// A lock's machine, shared by its drivers and its holder.
pub(crate) struct Life {
    machine: Mutex<LockLife>,
    /// Held by a driver from its poll until the event it got is published (or the end it found
    /// is marked): with two drivers, an event taken by one is seen by the holder before the
    /// other can mark the life done.
    order: Mutex<()>,
    /// The owner-id slot, freed as soon as the life has no cell of ours left to write (released,
    /// failed, cancelled), before anyone waiting for that outcome hears of it: the next
    /// acquisition of the name in this process then reuses our column. Reuse is safe whatever
    /// the release's outcome: values carry a fresh acquisition id.
    slot: Mutex<Option<Slot>>,
    /// Wakes the driver: the holder asked for something.
    kick: Notify,
    /// The task that drives the held part of the life: not yet handed over, ready to start,
    /// or started.
    driver: Mutex<Driver>,
    /// This life, for the task [`Life::wake_driver`] starts.
    me: Weak<Life>,
    clock: Clock,
    view: watch::Sender<View>,
    /// The acquisition's command on its way, when the life owns it (the locker's own store):
    /// if the caller's future is dropped meanwhile, the cleanup task finishes it and hands its
    /// reply to the machine before the cleanup goes, so that the cleanup cannot overtake the
    /// write it removes (which would stay until its TTL).
    flight: Mutex<Option<OwnedFlight>>,
}

/// How long the cleanup of a cancelled acquisition waits for the reply to the command the
/// caller left on its way before it forgets it (see [`Life::finish_kept_command`]).
const KEPT_REPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A command on its way whose future the life owns: its id and its reply to come.
type OwnedFlight = (CommandId, StoreFuture<'static>);

/// Who drives a life once it is granted (see the module's documentation).
enum Driver {
    /// The acquisition is still driven by its caller's future (or was abandoned, and
    /// [`Abandon`] drives the cleanup).
    Caller,
    /// Granted, no task yet: where to start one when the life needs it, and its entry in the
    /// locker's [`Starter`] when its first step falls due by itself.
    Ready(Arc<dyn Store>, tokio::runtime::Handle, Option<Deferral>),
    /// The task, started.
    Started(tokio::task::JoinHandle<()>),
}

impl Life {
    pub(crate) fn new(machine: LockLife, clock: Clock, slot: Slot) -> Arc<Life> {
        Arc::new_cyclic(|me| Life {
            machine: Mutex::new(machine),
            order: Mutex::new(()),
            slot: Mutex::new(Some(slot)),
            kick: Notify::new(),
            driver: Mutex::new(Driver::Caller),
            me: me.clone(),
            clock,
            view: watch::Sender::new(View::default()),
            flight: Mutex::new(None),
        })
    }

    /// The acquisition was granted: the rest of the life is driven on `store`, in a task on
    /// `runtime`, started when first needed: when the machine's next step falls due by itself
    /// ([`LockLife::idle_until`]: with keep-alive, the first renewal), by `starter`; or at a
    /// request ([`Life::request`], or a release that must wait), if one comes first.
    pub(crate) fn hand_over(
        &self,
        store: Arc<dyn Store>,
        runtime: tokio::runtime::Handle,
        starter: &Starter,
    ) {
        *self.driver() = Driver::Ready(store, runtime.clone(), None);
        let Some(due) = self.machine().idle_until() else {
            return;
        };
        let deferral = match self.me.upgrade() {
            Some(me) if due > self.clock.now() => {
                starter.defer(&me, self.clock.to_tokio(due), &runtime)
            }
            _ => None,
        };
        match deferral {
            Some(deferral) => {
                if let Driver::Ready(_, _, slot) = &mut *self.driver() {
                    *slot = Some(deferral);
                } else {
                    deferral.cancel();
                }
            }
            None => self.wake_driver(),
        }
    }

    fn driver(&self) -> MutexGuard<'_, Driver> {
        self.driver.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the task that drives the held part, starting it if the life was handed over, is
    /// not over, and has none yet. Before the hand-over, the caller's future drives (and is
    /// woken the same way).
    pub(crate) fn wake_driver(&self) {
        {
            let mut driver = self.driver();
            if let Driver::Ready(store, runtime, deferral) = &mut *driver {
                if self.view.borrow().done {
                    return;
                }
                if let Some(deferral) = deferral.take() {
                    deferral.cancel();
                }
                let (store, life) = (Arc::clone(store), self.me.upgrade());
                // If the runtime has shut down, the task is dropped unpolled (see
                // `driver_is_gone`): the lock expires by its TTL.
                let task = runtime.spawn(async move {
                    if let Some(life) = life {
                        life.drive_to_end(&*store).await;
                    }
                });
                *driver = Driver::Started(task);
            }
        }
        self.kick.notify_one();
    }

    /// Whether the held part's task was started and has already ended: after a request, it
    /// will not be answered (the runtime has shut down) unless the life was over anyway.
    pub(crate) fn driver_is_gone(&self) -> bool {
        matches!(&*self.driver(), Driver::Started(task) if task.is_finished())
    }

    fn flight(&self) -> MutexGuard<'_, Option<OwnedFlight>> {
        self.flight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The machine, for a short, non-blocking call.
    pub(crate) fn machine(&self) -> MutexGuard<'_, LockLife> {
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `request` on the machine and wakes its driver (starting the held part's task if
    /// it has none yet).
    pub(crate) fn request<T>(&self, request: impl FnOnce(&mut LockLife) -> T) -> T {
        let out = request(&mut self.machine());
        self.wake_driver();
        out
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    pub(crate) fn status(&self) -> LifeStatus {
        self.machine().status(self.clock.now())
    }

    pub(crate) fn view(&self) -> View {
        self.view.borrow().clone()
    }

    /// Waits until `ready` holds of the view, and returns it.
    pub(crate) async fn wait_for(&self, ready: impl FnMut(&View) -> bool) -> View {
        let mut rx = self.view.subscribe();
        // The sender lives as long as `self`: the wait ends only by `ready`.
        let view = rx.wait_for(ready).await.map(|v| v.clone());
        view.unwrap_or_else(|_| self.view())
    }

    /// Waits until the lock is no longer held (lost, released, or its deadline passed with no
    /// renewal), and returns why when it was lost (`None` after a release). Wakes on every
    /// renewal to look at the new deadline; costs nothing while it waits.
    pub(crate) async fn until_not_held(&self) -> Option<Error> {
        let mut changes = self.view.subscribe();
        loop {
            match self.status() {
                LifeStatus::Held(deadline) => {
                    let at = self.clock.to_tokio(deadline);
                    tokio::select! {
                        // Renewed, lost or released meanwhile: look again. (The sender lives
                        // as long as `self`, so this never ends the wait by itself.)
                        changed = changes.changed() => if changed.is_err() { return self.view().lost },
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                LifeStatus::Lost(e) => return Some(e),
                _ => return self.view().lost,
            }
        }
    }

    fn publish(&self, event: &LifeEvent) {
        log(event);
        if event.frees_the_slot() {
            drop(
                self.slot
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
        }
        self.view.send_modify(|view| match event {
            LifeEvent::Granted(grant) => view.lease = Some(grant.lease.clone()),
            LifeEvent::Renewed(_) => {
                view.lease = self.machine().lease().cloned().or(view.lease.take());
                view.renewals += 1;
                view.last_renewal = Some(Ok(()));
            }
            LifeEvent::RenewalFailed(e) => {
                view.renewals += 1;
                view.last_renewal = Some(Err(e.clone()));
            }
            LifeEvent::Lost(e) => {
                // A loss also answers a renewal the holder is waiting for.
                view.renewals += 1;
                view.last_renewal = Some(Err(e.clone()));
                view.lost = Some(e.clone());
            }
            LifeEvent::Released(result) => view.released = Some(result.clone()),
            LifeEvent::ReleaseElsewhere { lease, lost } => {
                view.elsewhere += 1;
                view.last_elsewhere = Some(((**lease).clone(), lost.clone()));
            }
            LifeEvent::Object(result) => {
                view.objects += 1;
                view.last_object = Some(result.clone());
            }
            LifeEvent::Failed(_) | LifeEvent::GaveUp(_) | LifeEvent::Cancelled => {}
        });
    }

    fn finish(&self) {
        self.view.send_modify(|view| view.done = true);
        // Nothing left to start a task for.
        let deferral = match &mut *self.driver() {
            Driver::Ready(_, _, deferral) => deferral.take(),
            _ => None,
        };
        if let Some(deferral) = deferral {
            deferral.cancel();
        }
    }

    /// Polls the machine; an event is published, and the end marked, before this returns (and
    /// before another driver can poll).
    fn next(&self, store: &dyn Store) -> LifePoll {
        let _order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        let poll = self.machine().poll(self.clock.now());
        match poll {
            LifePoll::Event(event) => {
                let event = with_context(event, store);
                self.publish(&event);
                LifePoll::Event(event)
            }
            LifePoll::Done => {
                self.finish();
                LifePoll::Done
            }
            other => other,
        }
    }

    /// Drives the machine on `store` until an event `stop` accepts (returned), or until it is
    /// done (`None`). Events are published to the view as they come.
    ///
    /// At most one command is outstanding. While one is, the loop still wakes at the machine's
    /// timers (a deadline passing while a renewal hangs is a loss now) and at the holder's
    /// requests. While none is, an acquisition also wakes on the store's change notifications,
    /// which tell it to retry at once, by the kernel's rule ([`ChangeWatch`]: not on its own
    /// deletes).
    ///
    /// With `owned` (the same store, shared), each command's future belongs to the life rather
    /// than to this call, so that dropping this call's future leaves it running (see
    /// [`Abandon`]); a command left so by an earlier call is awaited first.
    pub(crate) async fn drive(
        &self,
        store: &dyn Store,
        owned: Option<&Arc<dyn Store>>,
        mut stop: impl FnMut(&LifeEvent) -> bool,
    ) -> Option<LifeEvent> {
        // Only a waiting acquisition wakes on changes: a held lock (or an abandoned acquisition's
        // cleanup) would only be woken for nothing, on another thread, by every release of the
        // table.
        let acquiring = self.machine().wants_changes();
        let mut changes = if acquiring { store.changes() } else { None };
        let mut watch = ChangeWatch::new(counter(&changes));
        let mut inflight: Option<InFlight<'_>> = None;
        loop {
            match self.next(store) {
                LifePoll::Execute(id, command) => {
                    watch.before(&command, counter(&changes));
                    match owned {
                        Some(shared) => {
                            let reply = execute_owned(Arc::clone(shared), command);
                            *self.flight() = Some((id, reply));
                        }
                        None => {
                            inflight = Some(InFlight {
                                id,
                                reply: store.execute(command),
                            })
                        }
                    }
                }
                LifePoll::Event(event) => {
                    if stop(&event) {
                        return Some(event);
                    }
                }
                LifePoll::WaitUntil(until) => {
                    let sleep = timer(&self.clock, until);
                    match inflight.as_mut() {
                        Some(flight) => {
                            tokio::select! {
                                reply = &mut flight.reply => {
                                    let id = flight.id;
                                    inflight = None;
                                    watch.after(counter(&changes));
                                    self.machine().handle(id, reply);
                                }
                                () = sleep => {}
                                () = self.kick.notified() => {}
                            }
                        }
                        None if self.flight().is_some() => {
                            tokio::select! {
                                reply = OwnedReply(&self.flight) => {
                                    if let Some((id, reply)) = reply {
                                        watch.after(counter(&changes));
                                        self.machine().handle(id, reply);
                                    }
                                }
                                () = sleep => {}
                                () = self.kick.notified() => {}
                            }
                        }
                        None => {
                            if changes.is_some() {
                                store.waiting();
                            }
                            let woken = tokio::select! {
                                changed = wait_for_change(sleep, &mut changes, watch.seen()) => changed,
                                () = self.kick.notified() => false,
                            };
                            if woken && watch.take_change(counter(&changes)) {
                                self.machine().wake();
                            }
                        }
                    }
                }
                LifePoll::Done => return None,
            }
        }
    }

    /// Drives the machine from the caller's task for as long as it has a command to send or an
    /// event to give now; hands it back to the guard's task (which also drives it, and is woken
    /// here, or started if the life has none yet) as soon as it would have to wait: for a
    /// command the guard's task has on its way, or for a timer. A life that ends here starts
    /// no task.
    ///
    /// Two drivers of one machine are safe because the machine hands out each command and each
    /// event once, under its mutex: whichever driver polls first sends or publishes it (and
    /// publishes it before the other can poll, see [`Life::next`]). A command sent from here
    /// whose future is dropped before its reply (the caller's release was cancelled) is
    /// answered with a timeout, which the machine settles as any other command that may or may
    /// not have been applied; the guard's task carries on from there.
    pub(crate) async fn drive_here(&self, store: &dyn Store) {
        loop {
            match self.next(store) {
                LifePoll::Execute(id, command) => {
                    let pending = Pending { life: self, id };
                    let reply = store.execute(command).await;
                    std::mem::forget(pending);
                    self.machine().handle(id, reply);
                }
                LifePoll::Event(_) => {}
                LifePoll::WaitUntil(_) => break,
                LifePoll::Done => {
                    // A started task sees the end when woken; none is started for it.
                    if matches!(&*self.driver(), Driver::Started(_)) {
                        self.kick.notify_one();
                    }
                    return;
                }
            }
        }
        self.wake_driver();
    }

    /// Waits for the reply to the command a dropped caller left on its way, if any, and gives it
    /// to the machine; for at most [`KEPT_REPLY_WAIT`], after which the command is forgotten
    /// (the cleanup then goes at once, and what the command wrote, should it still land,
    /// expires with its TTL). Every store of this crate answers within its own timeout, which
    /// is shorter; the bound is for a store that never answers.
    async fn finish_kept_command(&self) {
        if self.flight().is_none() {
            return;
        }
        match tokio::time::timeout(KEPT_REPLY_WAIT, OwnedReply(&self.flight)).await {
            Ok(Some((id, reply))) => self.machine().handle(id, reply),
            Ok(None) => {}
            Err(_) => {
                drop(self.flight().take());
                self.machine().forget_outstanding();
            }
        }
    }

    /// Drives the machine to its end on `store`: the held part of a lock's life, in a task.
    pub(crate) async fn drive_to_end(&self, store: &dyn Store) {
        let _ = self.drive(store, None, |_| false).await;
    }
}

/// A command sent by [`Life::drive_here`], until its reply is in: dropped before (its future
/// was cancelled), it answers the machine with a timeout, so that the machine settles whether
/// the command took effect instead of waiting for a reply that will never come.
struct Pending<'l> {
    life: &'l Life,
    id: CommandId,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let failure = Failure::Timeout(String::from(
            "the release's caller was cancelled while its command was on its way",
        ));
        let id = self.id;
        self.life.request(|m| m.handle(id, Reply::Failed(failure)));
    }
}

/// Executes `command` on a shared store: a future that owns what it needs, so that it can
/// outlive the call that started it.
fn execute_owned(store: Arc<dyn Store>, command: Command) -> StoreFuture<'static> {
    Box::pin(async move { store.execute(command).await })
}

/// The reply of the life's owned command on its way (`None` when there is none).
struct OwnedReply<'l>(&'l Mutex<Option<OwnedFlight>>);

impl std::future::Future for OwnedReply<'_> {
    type Output = Option<(CommandId, Reply)>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((id, reply)) = slot.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        match reply.as_mut().poll(cx) {
            std::task::Poll::Ready(reply) => {
                let id = *id;
                *slot = None;
                std::task::Poll::Ready(Some((id, reply)))
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

/// A command on its way.
struct InFlight<'s> {
    id: CommandId,
    reply: StoreFuture<'s>,
}

/// Ends at `until`, or never for [`Instant::MAX`] (what the machine asks for while its command
/// is on its way and nothing else is due): no timer is registered for a wait that has no end.
/// A new timer earlier than every other one makes tokio wake the thread that waits in its
/// driver; on a multi-thread runtime that is another worker, woken for nothing with every
/// command (`bench_sql`'s CPU table counts it in the client's CPU per lock).
async fn timer(clock: &Clock, until: Instant) {
    if until == Instant::MAX {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep_until(clock.to_tokio(until)).await;
}

/// An acquisition being driven by its caller's future. Dropped before [`Abandon::finish`] (the
/// future was cancelled: a timeout around it, a `select!`, an aborted task), it cancels the
/// machine and spawns one task that sends the cleanup the machine asks for (removing only our
/// own cell); the owner-id slot is freed when that is done, so the next acquisition of the name
/// cannot reuse our column while the delete is on its way.
pub(crate) struct Abandon {
    life: Arc<Life>,
    armed: bool,
    /// Where the cleanup runs; `None` inside a caller's transaction, whose rollback (or the
    /// cell's TTL, if the caller commits anyway) takes care of it.
    store: Option<Arc<dyn Store>>,
    runtime: tokio::runtime::Handle,
    pid: u32,
}

impl Abandon {
    /// `pid`: this process's id, as the acquisition read it.
    pub(crate) fn new(
        life: Arc<Life>,
        store: Option<Arc<dyn Store>>,
        runtime: tokio::runtime::Handle,
        pid: u32,
    ) -> Abandon {
        Abandon {
            life,
            armed: true,
            store,
            runtime,
            pid,
        }
    }

    /// The acquisition finished: nothing to clean up.
    pub(crate) fn finish(mut self) {
        self.armed = false;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // A forked child: the runtime and the cell are the parent's. Touch nothing (not even
        // the slot, whose registry another thread may have held at fork time).
        if std::process::id() != self.pid {
            std::mem::forget(Arc::clone(&self.life));
            return;
        }
        // The acquisition's command on its way is the life's when it runs on the locker's own
        // store: the cleanup task below awaits its reply, then sends the cleanup, which so
        // never overtakes the write it removes. Inside a caller's transaction it was dropped
        // with the caller's future: its reply will never come.
        let kept = self.life.flight().is_some();
        self.life.request(|m| {
            m.cancel();
            if !kept {
                m.forget_outstanding();
            }
        });
        let Some(store) = self.store.take() else {
            return;
        };
        let life = Arc::clone(&self.life);
        let counted = crate::host::background::Cleanup::start();
        // If the runtime has shut down, the task is dropped unpolled: the cell expires by TTL.
        drop(self.runtime.spawn(async move {
            let _counted = counted;
            life.finish_kept_command().await;
            life.drive_to_end(&*store).await;
            tracing::debug!("cleaned up an abandoned acquisition");
        }));
    }
}

/// Asks the machine for a release with `writes`, and waits for its outcome.
///
/// Inside a tokio runtime the release's command is sent from the caller's task when nothing
/// else is on its way ([`Life::drive_here`]): the reply then reaches the caller directly,
/// instead of waking the guard's task on another worker thread and being woken by it in turn
/// (two cross-thread hops, about 60 µs on a multi-thread runtime). With a renewal in flight,
/// or outside a runtime, the guard's task sends it as before.
pub(crate) async fn release(life: &Life, store: &dyn Store, writes: Vec<Write>) -> Result<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        life.machine().release(writes)?;
        life.drive_here(store).await;
    } else {
        life.request(|m| m.release(writes))?;
    }
    let view = life.wait_for(|v| v.released.is_some() || v.done).await;
    view.released.unwrap_or_else(|| {
        Err(Error::internal(
            "internal error: the lock's life ended without a release",
        ))
    })
}

/// A holder's object call ([`LockLife::object`]): asked, driven here when on a runtime (as
/// [`release`] is), and its outcome waited for. A life that ends first (a release elsewhere)
/// answers [`ErrorKind::NotOwner`](baton_kernel::ErrorKind::NotOwner).
pub(crate) async fn object(
    life: &Life,
    store: &dyn Store,
    request: baton_kernel::ObjectRequest,
    after: baton_kernel::AfterObject,
) -> Result<baton_kernel::Object> {
    let before = life.view().objects;
    if tokio::runtime::Handle::try_current().is_ok() {
        life.machine().object(request, after)?;
        life.drive_here(store).await;
    } else {
        life.request(|m| m.object(request, after))?;
    }
    let view = life.wait_for(|v| v.objects > before || v.done).await;
    match view.last_object {
        Some(result) if view.objects > before => result,
        _ => Err(Error::new(
            baton_kernel::ErrorKind::NotOwner,
            "the lock was released before its object call finished",
        )),
    }
}

/// Names `store` in the error (its `store` field), and in the message of errors that come from
/// the store.
pub(crate) fn in_context(e: Error, store: &dyn Store) -> Error {
    e.in_store(&store.describe())
}

/// An event with its errors put in `store`'s context.
fn with_context(event: LifeEvent, store: &dyn Store) -> LifeEvent {
    event.map_error(|e| in_context(e, store))
}

/// What the log says of each event (the lock's name is in every error's message).
fn log(event: &LifeEvent) {
    match event {
        LifeEvent::Granted(grant) => {
            tracing::debug!(lock = %grant.lease.name(), token = grant.lease.token(), "granted");
        }
        LifeEvent::Renewed(deadline) => tracing::debug!(?deadline, "lease renewed"),
        LifeEvent::RenewalFailed(e) => tracing::warn!("renewal failed, retrying: {e}"),
        LifeEvent::Lost(e) => tracing::warn!("{e}"),
        LifeEvent::Released(Ok(())) => tracing::debug!("released"),
        LifeEvent::Released(Err(e)) => tracing::warn!("release: {e}"),
        LifeEvent::GaveUp(e) => tracing::debug!("gave up, cleaning up: {e}"),
        LifeEvent::Object(Ok(o)) => tracing::debug!(version = o.version, "object call done"),
        LifeEvent::Object(Err(e)) => tracing::debug!("object call: {e}"),
        LifeEvent::Failed(_) | LifeEvent::Cancelled | LifeEvent::ReleaseElsewhere { .. } => {}
    }
}
