//! A worker's optimistic increment of its name's object, without holding the lock (ScaleOut
//! StateServer's `update_optimistic`): read the object ([`ObjectOp`] with
//! [`ObjectRequest::Get`]), then write the next value naming the version read, or insert 1 when
//! there is none; on a version mismatch, a busy lock or an object inserted meanwhile, read and
//! write again after a short pause, up to [`TRIES`] times. Each call is the kernel's
//! [`ObjectOp`], driven as hosts drive an operation; on bakery and column prefix its write takes
//! the lock for itself (try once), and that grant is the checker's like any other: believed
//! from its grant until its release starts or its deadline, and broken by a forced release.

use baton_kernel::{
    CommandId, ErrorKind, Instant, LifeStatus, Object, ObjectOp, ObjectRequest, Operation, OwnerId,
    Poll, Reply,
};

use super::super::check::GrantRecord;
use super::super::objects::{CallKind, LeaseRef, Request};
use super::{GrantOwner, Sim, State, MS};

/// How many writes an increment tries before it gives up.
const TRIES: u32 = 8;

/// The largest object value the simulated store takes.
const LIMIT: usize = 1 << 20;

pub(super) struct Optimistic {
    /// The call under way (none while pausing between tries).
    op: Option<Box<ObjectOp>>,
    /// Whether the call under way is the write (else the read).
    writing: bool,
    /// Writes tried.
    tries: u32,
    /// The grant of the lock the write under way took for itself, while believed.
    grant: Option<(usize, bool)>,
}

impl Optimistic {
    pub(super) fn handle(&mut self, id: CommandId, reply: Reply) {
        if let Some(op) = self.op.as_mut() {
            op.handle(id, reply);
        }
    }
}

impl Sim {
    fn optimistic(&mut self, i: usize) -> Option<&mut Optimistic> {
        match &mut self.clients[i].state {
            State::Optimistic(o) => Some(o),
            _ => None,
        }
    }

    /// Worker `i` starts an optimistic increment: its first read.
    pub(super) fn start_optimistic(&mut self, i: usize) {
        self.log(i, || "new optimistic increment".into());
        self.clients[i].state = State::Optimistic(Box::new(Optimistic {
            op: None,
            writing: false,
            tries: 0,
            grant: None,
        }));
        self.object_call(i, ObjectRequest::Get);
    }

    /// A new call of worker `i`'s increment.
    fn object_call(&mut self, i: usize, request: ObjectRequest) {
        let opts = self.options(i);
        let nonce = if self.cfg.reuse_owner {
            0x5eed_0000 + i as u64
        } else {
            self.rng.next_u64()
        };
        let owner = match OwnerId::new(&format!("h{i}"), 1000 + i as u32, nonce) {
            Ok(o) => o,
            Err(e) => panic!("simulator owner id: {e}"),
        };
        let writing = !matches!(request, ObjectRequest::Get);
        let name = self.clients[i].name.clone();
        let op = match ObjectOp::new(name, owner, opts, request, LIMIT) {
            Ok(op) => op,
            Err(e) => panic!("simulator object call rejected: {e}"),
        };
        // Replies to an earlier call are dropped.
        self.clients[i].op += 1;
        if let Some(o) = self.optimistic(i) {
            o.op = Some(Box::new(op));
            o.writing = writing;
        }
    }

    /// Runs worker `i`'s increment until it waits for a reply or a timer.
    pub(super) fn drive_optimistic(&mut self, i: usize) {
        loop {
            let local = self.local_time(i);
            let Some(o) = self.optimistic(i) else {
                return;
            };
            let Some(op) = o.op.as_mut() else {
                // Pausing between tries: the pause is over.
                self.object_call(i, ObjectRequest::Get);
                continue;
            };
            let poll = op.poll(local);
            self.observe_optimistic(i, local);
            match poll {
                Poll::Execute(id, command) => return self.send(i, id, command),
                Poll::WaitUntil(t) => {
                    if t != Instant::MAX {
                        self.timer(i, t);
                    }
                    return;
                }
                Poll::Ready(result) => {
                    if !self.optimistic_result(i, result) {
                        return;
                    }
                }
            }
        }
    }

    fn local_time(&self, i: usize) -> Instant {
        Instant::from_nanos(self.clients[i].clock.local(self.now))
    }

    /// The lock an optimistic write takes for itself (bakery, column prefix), as the checker's
    /// grants: recorded when granted, believed while held, ended when its release starts.
    fn observe_optimistic(&mut self, i: usize, local: Instant) {
        let now = self.now;
        let Some(o) = self.optimistic(i) else {
            return;
        };
        let Some(life) = o.op.as_ref().and_then(|op| op.life()) else {
            return;
        };
        let status = life.status(local);
        let lease = life.lease().cloned();
        match (status, o.grant) {
            (LifeStatus::Held(deadline), None) => {
                let Some(lease) = lease else {
                    return;
                };
                let end = self.clients[i].clock.sim(deadline.as_nanos());
                self.grants.push(GrantRecord {
                    client: i,
                    name: lease.name().as_str().to_string(),
                    token: lease.token(),
                    at: now,
                    belief: vec![(now, end)],
                    forced_at: None,
                    released: None,
                    mode: lease.mode(),
                    requested: None,
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
                self.log(i, || {
                    format!("optimistic write holds the lock: token {}", lease.token())
                });
                if let Some(o) = self.optimistic(i) {
                    o.grant = Some((g, true));
                }
                if let Some(k) = self.clients[i].call {
                    self.object_calls[k].grant = Some(g);
                }
            }
            (LifeStatus::Held(deadline), Some((g, true))) => {
                let end = self.clients[i].clock.sim(deadline.as_nanos());
                self.grants[g].belief.push((now, end));
            }
            (_, Some((g, true))) => {
                self.grants[g].end_at(now);
                if let Some(o) = self.optimistic(i) {
                    o.grant = Some((g, false));
                }
            }
            _ => {}
        }
    }

    /// Worker `i` crashed: the lock its optimistic write took is no longer believed.
    pub(super) fn crash_optimistic(&mut self, i: usize) {
        let now = self.now;
        if let Some((g, true)) = self.optimistic(i).and_then(|o| o.grant) {
            self.grants[g].end_at(now);
        }
    }

    /// A call of worker `i`'s increment returned: the next call, a pause, or the end of the
    /// round (`false`: the worker waits).
    fn optimistic_result(&mut self, i: usize, result: baton_kernel::Result<Object>) -> bool {
        let Some(o) = self.optimistic(i) else {
            return false;
        };
        let writing = o.writing;
        o.op = None;
        o.grant = None;
        if !writing {
            let Ok(object) = result else {
                self.log(i, || format!("optimistic read failed: {result:?}"));
                self.next_round(i);
                return false;
            };
            let (request, kind) = match &object.value {
                None => (ObjectRequest::Insert(b"1".to_vec()), Request::Insert),
                Some(value) => {
                    let Some(n) = std::str::from_utf8(value)
                        .ok()
                        .and_then(|t| t.parse::<u64>().ok())
                    else {
                        self.next_round(i);
                        return false;
                    };
                    let request = ObjectRequest::Update {
                        value: (n + 1).to_string().into_bytes(),
                        version: Some(object.version),
                    };
                    (request, Request::Update)
                }
            };
            if let Some(o) = self.optimistic(i) {
                o.tries += 1;
            }
            self.start_call(i, CallKind::Optimistic, kind, None);
            self.object_call(i, request);
            return true;
        }
        let kind = result.as_ref().err().map(|e| e.kind());
        self.end_call(i, result);
        let tries = self.optimistic(i).map_or(TRIES, |o| o.tries);
        let again = matches!(
            kind,
            Some(ErrorKind::VersionMismatch | ErrorKind::Busy | ErrorKind::AlreadyExists)
        );
        if again && tries < TRIES {
            // Read again after a short pause.
            let at = self.now + self.rng.below(20 * MS);
            self.timer_at(i, at);
            return false;
        }
        self.next_round(i);
        false
    }
}
