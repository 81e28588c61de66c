//! The workers: each runs one lock's life at a time, the kernel's [`LockLife`], driven as every
//! host drives it (the tokio host in `baton/src/host/life_host.rs`, the blocking API, the C, C++ and
//! Python bindings through it, and the WebAssembly host): one command at a time over the
//! simulated network, the machine's timers kept while a command is on its way (a deadline
//! passing while a renewal hangs is a loss now), the store's change notices waking a waiting
//! acquisition once no command is on its way, and cancellation with the in-flight command kept
//! (as the hosts do) or forgotten ([`LockLife::forget_outstanding`]).
//!
//! Its holder does what users do: holds the lock for a while (sometimes for longer than the
//! TTL), with keep-alive or without, sometimes asks for a renewal now, then releases it, or
//! releases it in its own database transaction ([`LockLife::release_elsewhere`]) that commits
//! or rolls back before the guard is dropped; or abandons the acquisition midway.
//!
//! What the checker judges is what the machine told the holder: from each grant, the lease is
//! believed held until the deadline that [`LockLife::status`] reports (moved by each renewal
//! it reports), and no longer once it reports the lease lost or the holder lets it go.

use baton_kernel::host::ChangeWatch;
use baton_kernel::{
    Acquire, AfterObject, Command, CommandId, Error, ErrorKind, Grant, Instant, LifeEvent,
    LifePoll, LifeStatus, LockLife, Object, ObjectRequest, Operation, OwnerId, Poll, Release,
    Reply, Sabotage,
};

use super::super::check::GrantRecord;
use super::super::objects::{CallKind, LeaseRef, ObjectCallRecord, Request};
use super::{chance, tally, GrantOwner, Sim, State, MS};

/// One worker's current lock.
pub(super) struct Worker {
    life: LockLife,
    /// The command on its way, and whose it is.
    outstanding: Option<(Route, CommandId)>,
    /// Which change notices wake the acquisition: the kernel's rule, as in every host (not its
    /// own changes; those that come while a command is on its way, once none is).
    watch: ChangeWatch,
    /// How the holder lets the lock go.
    plan: Plan,
    /// Once granted: the grant's entry in the log, and what the holder does when.
    held: Option<Holding>,
    /// When the acquisition's request was made: the reply to its first write of its lock
    /// cell (bakery's `entering`, column prefix's column), for the fairness check; and that
    /// write while it is on its way.
    requested: Option<u64>,
    first_put: Option<CommandId>,
}

/// A life that gave up, still sending its cleanup, while the next life of its client runs with
/// the same owner id ([`Sabotage::GaveUpFreesSlot`]).
pub(super) struct Ghost {
    life: LockLife,
    /// The operation it belongs to: its replies are routed by it.
    pub(super) op: u64,
}

/// What the holder of a granted lock is up to.
struct Holding {
    grant: usize,
    /// When it lets the lock go (simulated time).
    until: u64,
    /// When it asks for a renewal now, if it does.
    renew_request: Option<u64>,
    /// It asked for the release (here or elsewhere).
    letting_go: bool,
    /// It still acts as the owner, as long as the machine says the lease is held: until it
    /// asks for the release here, or the release elsewhere starts, or it crashes.
    believing: bool,
    /// The release it runs in its own transaction, and the loss the machine handed over with
    /// the lease.
    elsewhere: Option<(Box<Release>, Option<Error>)>,
    /// Its locked increment of the name's object, in runs with objects.
    object: Option<ObjectPlan>,
}

/// A holder's locked increment: at `at`, read the object (`get_locked`), then write the next
/// value (`update_locked_and_retain`, or `_and_release`; an insert of 1 when there is none; now
/// and then a removal instead).
struct ObjectPlan {
    at: u64,
    stage: ObjectStage,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ObjectStage {
    Pending,
    Reading,
    Writing { release: bool },
    Done,
}

/// Whose command is on its way.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Life,
    Elsewhere,
}

/// How a holder lets its lock go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Plan {
    /// [`LockLife::release`], as a guard's release or drop.
    Release,
    /// [`LockLife::release_elsewhere`], in a transaction that commits; the guard is dropped
    /// afterwards.
    ElsewhereCommitted,
    /// The same, in a transaction that rolls back; the guard's drop then releases it.
    ElsewhereRolledBack,
}

impl Sim {
    /// The worker's state, if it is living a lock.
    fn worker(&mut self, i: usize) -> Option<&mut Worker> {
        match &mut self.clients[i].state {
            State::Living(w) => Some(w),
            _ => None,
        }
    }

    fn local(&self, i: usize) -> Instant {
        Instant::from_nanos(self.clients[i].clock.local(self.now))
    }

    /// Worker `i` starts its next acquisition: a new life.
    pub(super) fn start_life(&mut self, i: usize) {
        let opts = self.options(i);
        // Half the runs reuse one owner id per client, as the Rust API does (with a fresh
        // acquisition id); the others draw a fresh owner id every time.
        let nonce = if self.cfg.reuse_owner {
            0x5eed_0000 + i as u64
        } else {
            self.rng.next_u64()
        };
        let owner = match OwnerId::new(&format!("h{i}"), 1000 + i as u32, nonce) {
            Ok(o) => o,
            Err(e) => panic!("simulator owner id: {e}"),
        };
        let hint = self.clients[i].hint.clone();
        let acquire = match Acquire::new(self.clients[i].name.clone(), owner, opts) {
            Ok(op) => op.with_fence_hint(hint),
            Err(e) => panic!("simulator options rejected: {e}"),
        };
        // Keep-alive is the API's default; some holders turn it off.
        let keep_alive = self.rng.below(8) != 0;
        let plan = match self.rng.below(10) {
            0 => Plan::ElsewhereCommitted,
            1 => Plan::ElsewhereRolledBack,
            _ => Plan::Release,
        };
        self.clients[i].op += 1;
        if chance(&mut self.rng, self.cfg.faults.cancel) {
            let at = self.now + self.rng.below(self.ttl() * 3 / 2);
            let op = self.clients[i].op;
            self.schedule(at, super::Event::Cancel { client: i, op });
        }
        self.log(i, || format!("new life: keep-alive {keep_alive}, {plan:?}"));
        self.clients[i].state = State::Living(Box::new(Worker {
            life: LockLife::new(acquire, keep_alive),
            outstanding: None,
            watch: ChangeWatch::new(self.clients[i].changes),
            plan,
            held: None,
            requested: None,
            first_put: None,
        }));
    }

    /// A caller gives up on an acquisition midway (a timeout around `lock()`, an aborted task):
    /// the machine cancels it, and sends its cleanup once the command it has on its way is
    /// answered; or, as a host that dropped that command does, at once.
    pub(super) fn cancel(&mut self, i: usize, op: u64) {
        if self.clients[i].crashed || self.clients[i].op != op {
            return;
        }
        let local = self.local(i);
        let forget = self.rng.below(2) == 0;
        let Some(w) = self.worker(i) else {
            return;
        };
        if w.life.status(local) != LifeStatus::Acquiring {
            return;
        }
        w.life.cancel();
        if forget {
            w.life.forget_outstanding();
            w.outstanding = None;
        }
        self.faults.cancelled += 1;
        tally(&mut self.errors, ErrorKind::TimedOut);
        self.log(i, || {
            format!(
                "CANCEL ({} the command on its way)",
                if forget { "forgetting" } else { "keeping" }
            )
        });
        self.drive(i);
    }

    /// A change notice reaches worker `i` (already past its pauses): its change counter moves.
    pub(super) fn notice(&mut self, i: usize) {
        self.clients[i].changes += 1;
        let counter = self.clients[i].changes;
        let local = self.local(i);
        let Some(w) = self.worker(i) else {
            return;
        };
        if w.life.status(local) != LifeStatus::Acquiring || w.outstanding.is_some() {
            return;
        }
        if w.watch.take_change(counter) {
            w.life.wake();
            self.log(i, || "NOTICE: look again".into());
            self.drive(i);
        }
    }

    /// A reply reaches worker `i`.
    pub(super) fn deliver(&mut self, i: usize, id: CommandId, reply: Reply) {
        let counter = self.clients[i].changes;
        let now = self.now;
        let Some(w) = self.worker(i) else {
            return;
        };
        if w.first_put == Some(id) {
            w.first_put = None;
            if matches!(reply, Reply::Written) {
                w.requested = Some(now);
            }
        }
        let route = match w.outstanding {
            Some((route, out)) if out == id => {
                w.outstanding = None;
                if route == Route::Life {
                    w.watch.after(counter);
                }
                route
            }
            // A reply to a command the machine was told to forget: it ignores it.
            _ => Route::Life,
        };
        match route {
            Route::Life => w.life.handle(id, reply),
            Route::Elsewhere => {
                if let Some((op, _)) = w.held.as_mut().and_then(|h| h.elsewhere.as_mut()) {
                    op.handle(id, reply);
                }
            }
        }
        self.drive(i);
    }

    /// The grant's belief, as the machine reports it now: held until its deadline (pushed as
    /// an interval), or over (cut now).
    fn observe(&mut self, i: usize, local: Instant) {
        let Some(w) = self.worker(i) else {
            return;
        };
        let Some(h) = w.held.as_ref().filter(|h| h.believing) else {
            return;
        };
        let g = h.grant;
        match w.life.status(local) {
            LifeStatus::Held(deadline) => {
                let end = self.clients[i].clock.sim(deadline.as_nanos());
                self.grants[g].belief.push((self.now, end));
            }
            _ => self.grants[g].end_at(self.now),
        }
    }

    /// What the holder of worker `i`'s lock asks for now, if anything is due.
    fn holder_acts(&mut self, i: usize) {
        let now = self.now;
        let Some(w) = self.worker(i) else {
            return;
        };
        let plan = w.plan;
        let Some(h) = w.held.as_mut().filter(|h| !h.letting_go) else {
            return;
        };
        if h.renew_request.is_some_and(|at| now >= at) {
            h.renew_request = None;
            // Refused once the lease is lost: the holder hears the loss instead.
            let _ = w.life.renew_now();
        }
        if let Some(p) = h
            .object
            .as_mut()
            .filter(|p| p.stage == ObjectStage::Pending && now >= p.at)
        {
            // Refused once the lease is lost or a release asked for: nothing to write then.
            p.stage = match w.life.object(ObjectRequest::Get, AfterObject::Keep) {
                Ok(()) => ObjectStage::Reading,
                Err(_) => ObjectStage::Done,
            };
        }
        if now < h.until {
            return;
        }
        h.letting_go = true;
        let g = h.grant;
        let asked = match plan {
            Plan::Release => w.life.release(Vec::new()),
            Plan::ElsewhereCommitted | Plan::ElsewhereRolledBack => w.life.release_elsewhere(),
        };
        if plan == Plan::Release {
            // The holder stops acting as the owner when it asks for the release.
            h.believing = false;
            self.grants[g].end_at(now);
        }
        self.log(i, || format!("holder lets go: {plan:?} {asked:?}"));
    }

    /// Runs worker `i`'s life until it waits for a reply or a timer, as a host's loop does.
    pub(super) fn drive(&mut self, i: usize) {
        loop {
            let local = self.local(i);
            self.observe(i, local);
            self.holder_acts(i);
            if self.run_elsewhere(i, local) {
                return;
            }
            let counter = self.clients[i].changes;
            let Some(w) = self.worker(i) else {
                return;
            };
            match w.life.poll(local) {
                LifePoll::Execute(id, command) => {
                    if w.held.is_none()
                        && w.requested.is_none()
                        && w.first_put.is_none()
                        && matches!(command, Command::Put { .. })
                    {
                        w.first_put = Some(id);
                    }
                    w.outstanding = Some((Route::Life, id));
                    w.watch.before(&command, counter);
                    self.send(i, id, command);
                }
                LifePoll::Event(event) => self.on_event(i, event),
                LifePoll::WaitUntil(until) => {
                    // A change that came while a command was on its way (and was not ours).
                    if w.outstanding.is_none()
                        && w.life.status(local) == LifeStatus::Acquiring
                        && w.watch.take_change(counter)
                    {
                        w.life.wake();
                        continue;
                    }
                    let mut at = (until != Instant::MAX)
                        .then(|| self.clients[i].clock.sim(until.as_nanos()));
                    if let Some(h) = self.worker(i).and_then(|w| w.held.as_ref()) {
                        if !h.letting_go {
                            let mut next = h.renew_request.map_or(h.until, |r| r.min(h.until));
                            if let Some(p) = h
                                .object
                                .as_ref()
                                .filter(|p| p.stage == ObjectStage::Pending)
                            {
                                next = next.min(p.at);
                            }
                            at = Some(at.map_or(next, |t| t.min(next)));
                        }
                    }
                    if let Some(at) = at {
                        self.timer_at(i, at);
                    }
                    return;
                }
                LifePoll::Done => return self.next_round(i),
            }
        }
    }

    /// The release the holder runs in its own transaction, if one is under way: sends its
    /// command or waits (`true`: the worker waits), or finishes it and drops the guard.
    fn run_elsewhere(&mut self, i: usize, local: Instant) -> bool {
        let Some(w) = self.worker(i) else {
            return false;
        };
        let Some((op, lost)) = w.held.as_mut().and_then(|h| h.elsewhere.as_mut()) else {
            return false;
        };
        if w.outstanding.is_some() {
            return true;
        }
        match op.poll(local) {
            Poll::Execute(id, command) => {
                w.outstanding = Some((Route::Elsewhere, id));
                self.send(i, id, command);
                true
            }
            Poll::WaitUntil(t) => {
                if t != Instant::MAX {
                    self.timer(i, t);
                }
                true
            }
            Poll::Ready(result) => {
                // A loss the machine handed over with the lease is what the holder hears.
                let result = match lost.take() {
                    Some(e) => Err(e),
                    None => result,
                };
                self.log(i, || format!("released in its transaction: {result:?}"));
                let Some(w) = self.worker(i) else {
                    return false;
                };
                let Some(h) = w.held.as_mut() else {
                    return false;
                };
                h.elsewhere = None;
                let g = h.grant;
                // The guard is dropped after the commit: the machine releases again here, and
                // finds nothing left.
                w.life.cancel();
                self.record_release(g, result);
                false
            }
        }
    }

    /// What the release of grant `g` reported to its holder (the first report counts: a
    /// guard's drop after a committed release elsewhere reports to nobody).
    fn record_release(&mut self, g: usize, result: baton_kernel::Result<()>) {
        if self.grants[g].released.is_some() {
            return;
        }
        let kind = result.as_ref().err().map(Error::kind);
        tally(&mut self.releases, kind);
        self.grants[g].released = Some(result.map_err(|e| e.kind()));
    }

    fn on_event(&mut self, i: usize, event: LifeEvent) {
        self.log(i, || format!("event {event:?}"));
        match event {
            LifeEvent::Granted(grant) => self.granted(i, &grant),
            // The belief follows the status, which the next observation reads.
            LifeEvent::Renewed(_) | LifeEvent::RenewalFailed(_) | LifeEvent::Cancelled => {}
            LifeEvent::Object(result) => self.holder_object(i, result),
            LifeEvent::Lost(_) => {
                if let Some(h) = self.worker(i).and_then(|w| w.held.as_ref()) {
                    let g = h.grant;
                    self.grants[g].end_at(self.now);
                }
            }
            LifeEvent::Failed(e) => {
                tally(&mut self.errors, e.kind());
                self.clients[i].failed += 1;
            }
            // The wait ran out with a command on its way: a failure, whose cleanup the life
            // still sends (it is driven on until done, as hosts do).
            LifeEvent::GaveUp(e) => {
                tally(&mut self.errors, e.kind());
                self.clients[i].failed += 1;
                self.gave_up += 1;
                if self.cfg.sabotage == Sabotage::GaveUpFreesSlot {
                    self.free_slot_early(i);
                }
            }
            LifeEvent::Released(result) => {
                if let Some(g) = self
                    .worker(i)
                    .and_then(|w| w.held.as_ref())
                    .map(|h| h.grant)
                {
                    self.record_release(g, result);
                }
            }
            LifeEvent::ReleaseElsewhere { lease, lost } => {
                let now = self.now;
                let Some(w) = self.worker(i) else {
                    return;
                };
                let plan = w.plan;
                let Some(h) = w.held.as_mut() else {
                    return;
                };
                let g = h.grant;
                h.believing = false;
                if plan == Plan::ElsewhereCommitted {
                    h.elsewhere = Some((Box::new(Release::new(&lease)), lost));
                } else {
                    // The transaction rolls back: the lock is still held in the store, and the
                    // guard's drop releases it here.
                    w.life.cancel();
                }
                // The release starts now: the holder no longer acts as the owner.
                self.grants[g].end_at(now);
            }
        }
    }

    fn granted(&mut self, i: usize, grant: &Grant) {
        let lease = &grant.lease;
        let end = self.clients[i].clock.sim(lease.deadline().as_nanos());
        let requested = self.worker(i).and_then(|w| w.requested);
        self.grants.push(GrantRecord {
            client: i,
            name: lease.name().as_str().to_string(),
            token: lease.token(),
            at: self.now,
            belief: vec![(self.now, end)],
            forced_at: None,
            released: None,
            mode: lease.mode(),
            requested,
        });
        let g = self.grants.len() - 1;
        let who = GrantOwner {
            owner: lease.owner().key(),
            value: lease.value().to_string(),
        };
        if let Some((_, at)) = self.broken.iter().find(|(b, _)| *b == who) {
            self.grants[g].forced_at = Some(*at);
        }
        self.owners.push(who);
        self.leases.push(LeaseRef {
            column: lease.column().to_string(),
            value: lease.value().to_string(),
            token: lease.token(),
        });
        self.clients[i].hint = Some(lease.fence_hint());
        let until = self.now + self.hold_time();
        let renew_request =
            (self.rng.below(10) == 0).then(|| self.now + self.rng.below(until - self.now + 1));
        // With objects, most holders increment the object at some point of their hold.
        let object = (self.cfg.objects && self.rng.below(4) != 0).then(|| ObjectPlan {
            at: self.now + self.rng.below(until - self.now + 1),
            stage: ObjectStage::Pending,
        });
        if let Some(w) = self.worker(i) {
            w.held = Some(Holding {
                grant: g,
                until,
                renew_request,
                letting_go: false,
                believing: true,
                elsewhere: None,
                object,
            });
        }
    }

    /// Worker `i` crashed: its holder stops believing at once.
    /// The broken host: the slot of worker `i`'s life that just gave up is freed now, so its
    /// next life starts (with the same owner id, in runs that reuse them) while this one's
    /// cleanup is still to come; it goes on as a ghost.
    fn free_slot_early(&mut self, i: usize) {
        let State::Living(w) = std::mem::replace(&mut self.clients[i].state, State::Idle) else {
            return;
        };
        let op = self.clients[i].op;
        self.log(i, || {
            "slot freed at the give-up: the cleanup goes on as a ghost".into()
        });
        self.clients[i].ghosts.push(Ghost { life: w.life, op });
        self.next_round(i);
    }

    /// A reply to a ghost's command: it sends its cleanup, or ends.
    pub(super) fn deliver_to_ghost(&mut self, i: usize, op: u64, id: CommandId, reply: Reply) {
        let Some(g) = self.clients[i].ghosts.iter_mut().find(|g| g.op == op) else {
            return;
        };
        g.life.handle(id, reply);
        self.drive_ghost(i, op);
    }

    fn drive_ghost(&mut self, i: usize, op: u64) {
        let local = self.local(i);
        loop {
            let Some(k) = self.clients[i].ghosts.iter().position(|g| g.op == op) else {
                return;
            };
            match self.clients[i].ghosts[k].life.poll(local) {
                LifePoll::Execute(id, command) => return self.send_as(i, op, id, command),
                LifePoll::Event(_) => {}
                // A ghost only waits for replies (its cleanup waits for the command on its way).
                LifePoll::WaitUntil(_) => return,
                LifePoll::Done => {
                    self.clients[i].ghosts.remove(k);
                    return;
                }
            }
        }
    }

    pub(super) fn crash_worker(&mut self, i: usize) {
        self.clients[i].ghosts.clear();
        self.crash_optimistic(i);
        let Some(h) = self.worker(i).and_then(|w| w.held.as_mut()) else {
            return;
        };
        if std::mem::replace(&mut h.believing, false) {
            let g = h.grant;
            self.grants[g].end_at(self.now);
        }
    }

    /// A holder's object call finished: after the read, the write; after the write, its
    /// outcome is recorded, and a write that released the lock ends the holder's belief.
    fn holder_object(&mut self, i: usize, result: baton_kernel::Result<Object>) {
        let now = self.now;
        let Some(stage) = self
            .worker(i)
            .and_then(|w| w.held.as_ref())
            .and_then(|h| h.object.as_ref())
            .map(|p| p.stage)
        else {
            return;
        };
        match stage {
            ObjectStage::Reading => {
                let next = match &result {
                    Ok(object) => self.next_write(object),
                    Err(_) => None,
                };
                let Some((request, kind)) = next else {
                    return self.set_object_stage(i, ObjectStage::Done);
                };
                let release = self.rng.below(4) == 0;
                let after = if release {
                    AfterObject::Release
                } else {
                    AfterObject::Keep
                };
                let Some(w) = self.worker(i) else {
                    return;
                };
                let asked = w.life.object(request, after);
                let g = w.held.as_ref().map(|h| h.grant);
                let k = self.start_call(i, CallKind::Locked, kind, g);
                match asked {
                    Ok(()) => self.set_object_stage(i, ObjectStage::Writing { release }),
                    Err(e) => {
                        self.end_call(i, Err(e));
                        self.set_object_stage(i, ObjectStage::Done);
                    }
                }
                self.log(i, || format!("locked {kind:?} (call {k})"));
            }
            ObjectStage::Writing { release } => {
                let ok = result.is_ok();
                self.end_call(i, result);
                self.set_object_stage(i, ObjectStage::Done);
                if release && ok {
                    // The write released the lock: the holder stops acting as the owner.
                    if let Some(h) = self.worker(i).and_then(|w| w.held.as_mut()) {
                        h.letting_go = true;
                        h.believing = false;
                        let g = h.grant;
                        self.grants[g].end_at(now);
                    }
                }
            }
            ObjectStage::Pending | ObjectStage::Done => {}
        }
    }

    fn set_object_stage(&mut self, i: usize, stage: ObjectStage) {
        if let Some(p) = self
            .worker(i)
            .and_then(|w| w.held.as_mut())
            .and_then(|h| h.object.as_mut())
        {
            p.stage = stage;
        }
    }

    /// What a holder writes after reading `object`: the next value of the counter, 1 when there
    /// is none, and now and then a removal. `None` for a value that is not a counter.
    fn next_write(&mut self, object: &Object) -> Option<(ObjectRequest, Request)> {
        let Some(value) = &object.value else {
            return Some((ObjectRequest::Insert(b"1".to_vec()), Request::Insert));
        };
        let n: u64 = std::str::from_utf8(value).ok()?.parse().ok()?;
        if self.rng.below(16) == 0 {
            return Some((ObjectRequest::Remove, Request::Remove));
        }
        let value = (n + 1).to_string().into_bytes();
        Some((
            ObjectRequest::Update {
                value,
                version: None,
            },
            Request::Update,
        ))
    }

    /// Client `i` starts an object write call: recorded, and its cells attributed to it.
    pub(super) fn start_call(
        &mut self,
        i: usize,
        kind: CallKind,
        request: Request,
        grant: Option<usize>,
    ) -> usize {
        self.object_calls.push(ObjectCallRecord {
            client: i,
            name: self.clients[i].name.as_str().to_string(),
            kind,
            request,
            grant,
            started: self.now,
            outcome: None,
            cells: Vec::new(),
        });
        let k = self.object_calls.len() - 1;
        self.clients[i].call = Some(k);
        k
    }

    /// Client `i`'s object write call under way ended with `result`.
    pub(super) fn end_call(&mut self, i: usize, result: baton_kernel::Result<Object>) {
        let Some(k) = self.clients[i].call.take() else {
            return;
        };
        let result = result.map(|o| o.version).map_err(|e| e.kind());
        self.log(i, || format!("object call {k} -> {result:?}"));
        self.object_calls[k].outcome = Some((self.now, result));
    }

    /// How long a holder keeps its lock: mostly briefly, sometimes for longer than the TTL.
    fn hold_time(&mut self) -> u64 {
        let ttl = self.ttl();
        match self.rng.below(10) {
            0..=6 => self.rng.below(50 * MS),
            7 | 8 => 50 * MS + self.rng.below(ttl),
            _ => ttl + self.rng.below(2 * ttl),
        }
    }
}
