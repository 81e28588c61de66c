//! Object operations (seed 002, ScaleOut StateServer): reading an object, and writing it under
//! a condition the store checks in the same step as the write ([`Command::SetObject`]).
//!
//! [`ObjectCall`] is the one exchange every object operation runs: a holder's locked calls
//! (through [`LockLife::object`](crate::LockLife::object), guarded by the holder's lock cell and
//! fencing counter) and the unlocked ones ([`ObjectOp`]: guarded by the absence of a lock
//! holder on unique insert; the other strategies take the lock for the one write, see
//! [`ObjectOp`]).
//!
//! Round trips: a read is one; a write is one when the call knows what it expects the cell to
//! hold (a holder that has read the object, an update naming its version, an insert of a new
//! object), and one more read otherwise (an unlocked remove; an insert over a removed object).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::io::{Io, IoPoll};
use super::{Acquire, CommandId, Operation, Poll};
use crate::error::{Error, ErrorKind, Result};
use crate::life::{LifeEvent, LifePoll, LockLife};
use crate::model::{
    ColumnFilter, Command, Consistency, ObjectGuard, ReadConsistency, Reply, SerialConsistency,
};
use crate::name::LockName;
use crate::object::{
    check_value, decode, encode, version_prefix, writer_id, Object, ObjectCell, OBJECT_COLUMN,
};
use crate::options::{LockOptions, Sabotage, Strategy, Wait};
use crate::owner::OwnerId;
use crate::retry::SplitMix64;
use crate::strategy::unique;
use crate::time::Instant;

/// What a caller asks of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectRequest {
    /// Read it (a holder's read also renews, see [`LockLife::object`](crate::LockLife::object)).
    Get,
    /// Insert it with this value: [`ErrorKind::AlreadyExists`] when it exists.
    Insert(Vec<u8>),
    /// Replace its value: [`ErrorKind::ObjectNotFound`] when it does not exist; with a
    /// version, [`ErrorKind::VersionMismatch`] unless the object is at that version when the
    /// store applies the write (an optimistic update).
    Update {
        /// The new value.
        value: Vec<u8>,
        /// The version the object must be at.
        version: Option<u64>,
    },
    /// Remove it: [`ErrorKind::ObjectNotFound`] when it does not exist. Its version goes on
    /// from where it was if it is inserted again.
    Remove,
}

impl ObjectRequest {
    /// Checks the value it writes against a store that takes at most `limit` bytes.
    pub fn check(&self, limit: usize) -> Result<()> {
        match self {
            ObjectRequest::Insert(value) | ObjectRequest::Update { value, .. } => {
                check_value(value, limit)
            }
            ObjectRequest::Get | ObjectRequest::Remove => Ok(()),
        }
    }

    fn writes(&self) -> bool {
        !matches!(self, ObjectRequest::Get)
    }
}

/// How an [`ObjectCall`] reads the object.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Levels {
    pub read: ReadConsistency,
    pub serial: SerialConsistency,
    pub consistency: Consistency,
}

#[derive(Debug)]
enum Phase {
    Start,
    Reading,
    Writing {
        expected: Option<String>,
        cell: String,
        object: Object,
    },
    Done,
}

/// One object request's exchange with the store, under a guard. The caller keeps what it
/// learned of the cell ([`ObjectCall::known`]) for its next call.
#[derive(Debug)]
pub(crate) struct ObjectCall {
    name: String,
    request: ObjectRequest,
    guard: ObjectGuard,
    /// (acquisition id, write number) of the write this call makes.
    writer: (u64, u64),
    levels: Levels,
    /// The object cell as last seen (`Some(None)`: no cell), if known.
    known: Option<Option<String>>,
    /// Writes tried after finding the cell other than expected (an insert over a removed
    /// object, a remove of a cell that moved).
    rounds: u32,
    io: Io,
    rng: SplitMix64,
    phase: Phase,
    result: Option<Result<Object>>,
    /// A deliberately broken variant ([`Sabotage::ObjectWriteUnguarded`]), or none.
    sabotage: Sabotage,
}

/// The column the broken [`Sabotage::ObjectWriteUnguarded`] names in the guard it sends
/// instead of the holder's: no cell is ever written there, so the guard always holds.
const UNGUARDED: &str = "_UNGUARDED_";

/// How many times a call reads again after finding the cell moved before it gives up.
const MAX_ROUNDS: u32 = 8;

impl ObjectCall {
    /// A call on the object of `name`; `known` is the cell as the caller last saw it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        request: ObjectRequest,
        guard: ObjectGuard,
        writer: (u64, u64),
        levels: Levels,
        known: Option<Option<String>>,
        io: Io,
        rng: SplitMix64,
    ) -> Self {
        ObjectCall {
            name: String::from(name),
            request,
            guard,
            writer,
            levels,
            known,
            rounds: 0,
            io,
            rng,
            phase: Phase::Start,
            result: None,
            sabotage: Sabotage::None,
        }
    }

    /// The call with the broken variant `sabotage` (only [`Sabotage::ObjectWriteUnguarded`]
    /// changes it).
    pub fn with_sabotage(mut self, sabotage: Sabotage) -> Self {
        self.sabotage = sabotage;
        self
    }

    /// The object cell as this call last saw it (`None`: unknown, after an ambiguous write).
    pub fn known(&self) -> Option<Option<String>> {
        self.known.clone()
    }

    pub fn handle(&mut self, id: CommandId, reply: Reply) {
        self.io.handle(id, reply);
    }

    pub fn poll(&mut self, now: Instant) -> Poll<Object> {
        for _ in 0..16 {
            if let Some(result) = &self.result {
                return Poll::Ready(result.clone());
            }
            if matches!(self.phase, Phase::Start) {
                self.start();
                continue;
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Idle => {
                    self.finish(Err(Error::internal(
                        "internal error: an object call waited with nothing outstanding",
                    )));
                }
                IoPoll::Done(Err(e), _) => {
                    let writing = matches!(self.phase, Phase::Writing { .. });
                    if writing {
                        self.known = None;
                    }
                    // A send that timed out may have applied, or apply later: not "unavailable".
                    if writing && e.kind() == ErrorKind::StoreUnavailable && self.io.may_land() {
                        let e = Error::new(
                            ErrorKind::Ambiguous,
                            format!(
                                "a write of object {:?} timed out and was not settled: it may have been applied, or be applied later ({})",
                                self.name,
                                e.message()
                            ),
                        );
                        self.finish(Err(e));
                    } else {
                        self.finish(Err(e));
                    }
                }
                IoPoll::Done(Ok(reply), _) => self.on_reply(reply),
            }
        }
        self.finish(Err(Error::internal(
            "internal error: an object call did not settle in 16 steps",
        )));
        Poll::Ready(
            self.result
                .clone()
                .unwrap_or_else(|| Err(Error::internal(""))),
        )
    }

    fn finish(&mut self, result: Result<Object>) {
        self.phase = Phase::Done;
        self.result = Some(result.map_err(|e| e.with_lock(self.name.as_str())));
    }

    fn read(&mut self) {
        self.phase = Phase::Reading;
        self.io.send(Command::Read {
            row: self.name.clone(),
            filter: ColumnFilter::Exact(String::from(OBJECT_COLUMN)),
            consistency: self.levels.read,
        });
    }

    /// Reads first unless the request can say what it expects without a read.
    fn start(&mut self) {
        if let Some(known) = self.known.clone() {
            return self.write(known.as_deref());
        }
        match &self.request {
            ObjectRequest::Get | ObjectRequest::Remove => self.read(),
            // An insert expects no cell (and learns otherwise from the refusal); an update
            // naming its version expects that version (and learns the rest likewise).
            ObjectRequest::Insert(_) => self.write(None),
            ObjectRequest::Update {
                version: Some(v), ..
            } => {
                let v = *v;
                self.write_over(Some(version_prefix(v)), v)
            }
            ObjectRequest::Update { version: None, .. } => self.read(),
        }
    }

    /// Decides the write from the cell as known (`None`: no cell), or answers without one.
    fn write(&mut self, cell: Option<&str>) {
        let current = match cell.map(decode).transpose() {
            Ok(c) => c,
            Err(e) => return self.finish(Err(e)),
        };
        let object = ObjectCell::object(current.as_ref());
        match &self.request {
            ObjectRequest::Get => self.finish(Ok(object)),
            ObjectRequest::Insert(_) if object.exists() => self.finish(Err(already_exists())),
            ObjectRequest::Update { .. } | ObjectRequest::Remove if !object.exists() => {
                self.finish(Err(not_found()))
            }
            ObjectRequest::Update {
                version: Some(v), ..
            } if *v != object.version => {
                let found = object.version;
                self.finish(Err(mismatch(*v, found)))
            }
            _ => self.write_over(cell.map(String::from), object.version),
        }
    }

    /// Sends the write expecting the cell to start with `expected` (`None`: no cell), whose
    /// object is at `version`.
    fn write_over(&mut self, expected: Option<String>, version: u64) {
        let value = match &self.request {
            ObjectRequest::Insert(v) | ObjectRequest::Update { value: v, .. } => Some(v.as_slice()),
            _ => None,
        };
        let next = version.saturating_add(1);
        let cell = encode(next, self.writer, value);
        let object = Object {
            version: next,
            value: value.map(<[u8]>::to_vec),
        };
        let guard = match &self.guard {
            // Broken: the holder's lock is not checked (a guard on a cell nothing writes).
            ObjectGuard::Held { .. } if self.sabotage == Sabotage::ObjectWriteUnguarded => {
                ObjectGuard::Free {
                    column: String::from(UNGUARDED),
                }
            }
            guard => guard.clone(),
        };
        self.io.send(Command::SetObject {
            row: self.name.clone(),
            column: String::from(OBJECT_COLUMN),
            expected: expected.clone(),
            value: cell.clone(),
            guard,
            serial: self.levels.serial,
            consistency: self.levels.consistency,
        });
        self.phase = Phase::Writing {
            expected,
            cell,
            object,
        };
    }

    fn on_reply(&mut self, reply: Reply) {
        match (core::mem::replace(&mut self.phase, Phase::Done), reply) {
            (Phase::Reading, Reply::Cells(cells)) => {
                let cell = cells
                    .into_iter()
                    .find(|c| c.column == OBJECT_COLUMN)
                    .map(|c| c.value);
                self.known = Some(cell.clone());
                self.write(cell.as_deref());
            }
            (
                Phase::Writing {
                    expected,
                    cell,
                    object,
                },
                Reply::Object {
                    applied,
                    current,
                    lock,
                    counter,
                },
            ) => {
                // A resent copy finds the first one's cell: it applied.
                if applied || current.as_deref() == Some(cell.as_str()) {
                    self.known = Some(Some(cell));
                    return self.finish(Ok(object));
                }
                if let Some(e) =
                    self.unsettled(object.version, current.as_deref(), counter.as_deref())
                {
                    self.known = None;
                    return self.finish(Err(e));
                }
                self.refused(expected, current, lock, counter);
            }
            (_, other) => self.finish(Err(crate::error::unexpected("object call", &other))),
        }
    }

    /// A write was not applied: the guard failed, or the cell was not as expected.
    fn refused(
        &mut self,
        expected: Option<String>,
        current: Option<String>,
        lock: Option<String>,
        counter: Option<String>,
    ) {
        let ambiguous = self.io.maybe_applied();
        self.known = if ambiguous {
            None
        } else {
            Some(current.clone())
        };
        match &self.guard {
            ObjectGuard::Held {
                value,
                counter_value,
                ..
            } if lock.as_deref() != Some(value.as_str())
                || counter.as_deref() != Some(counter_value.as_str()) =>
            {
                let why = if lock.as_deref() != Some(value.as_str()) {
                    String::from("its lock cell is gone (expired or force-released)")
                } else {
                    super::held::granted_since(counter.as_deref().unwrap_or(""))
                };
                return self.finish(Err(Error::new(
                    ErrorKind::Lost,
                    format!(
                        "the lease on lock {:?} was lost before the store applied the write ({why}); the object was not changed",
                        self.name
                    ),
                )));
            }
            ObjectGuard::Free { .. } if lock.is_some() => {
                let holder = lock.as_deref().map(unique::owner_of).unwrap_or_default();
                return self.finish(Err(Error::new(
                    ErrorKind::Busy,
                    format!(
                        "object {:?} is locked by {holder}: it is not changed without its lock",
                        self.name
                    ),
                )
                .with_holder(holder)));
            }
            _ => {}
        }
        if ambiguous && expected.is_some() {
            // Our write may have applied, and been overwritten since.
            return self.finish(Err(Error::new(
                ErrorKind::Ambiguous,
                format!(
                    "a write of object {:?} timed out, and the object has changed since: it may or may not have been applied",
                    self.name
                ),
            )));
        }
        let found = match current.as_deref().map(decode).transpose() {
            Ok(c) => ObjectCell::object(c.as_ref()),
            Err(e) => return self.finish(Err(e)),
        };
        match &self.request {
            ObjectRequest::Update {
                version: Some(v), ..
            } if found.exists() => {
                let v = *v;
                self.finish(Err(mismatch(v, found.version)))
            }
            ObjectRequest::Update {
                version: Some(_), ..
            } => self.finish(Err(not_found())),
            ObjectRequest::Update { version: None, .. } if self.holder() => {
                // A holder's view was stale: someone wrote between its grant and its read (see
                // `LockLife::object`). Its value was made from what it read: not applied.
                self.finish(Err(Error::new(
                    ErrorKind::VersionMismatch,
                    format!(
                        "object {:?} changed while its lock was being granted (now at version {}): read it again (get_locked) and write again",
                        self.name, found.version
                    ),
                )))
            }
            _ if self.rounds >= MAX_ROUNDS => self.finish(Err(Error::new(
                ErrorKind::VersionMismatch,
                format!(
                    "object {:?} kept changing under {MAX_ROUNDS} writes in a row",
                    self.name
                ),
            ))),
            _ => {
                // An insert over a removed object, a remove of a cell that moved: again,
                // from what the store has.
                self.rounds += 1;
                self.write(current.as_deref());
            }
        }
    }

    /// A write refused now whose earlier send timed out ([`Io::may_land`]): that copy may
    /// have applied and been overwritten since (the object is past `version`, the one it
    /// writes), or may still apply (the object is not at `version` yet, and the guard may hold
    /// again: unique insert's lock freed, a holder's cell put back by a late copy of its own
    /// write while the counter is still at its grant). Then nothing the refusal says is
    /// settled: [`ErrorKind::Ambiguous`]. `None`: the refusal stands (the object is at
    /// `version` with another write's cell, or below it with the counter moved on, which no
    /// guard survives).
    fn unsettled(
        &self,
        version: u64,
        current: Option<&str>,
        counter: Option<&str>,
    ) -> Option<Error> {
        if !self.io.may_land() {
            return None;
        }
        let found = current
            .and_then(|c| decode(c).ok())
            .map_or(0, |c| c.version);
        let why = if found > version {
            "the object has moved past the version it wrote since: it may have been applied and overwritten"
        } else if found < version {
            let fenced = matches!(&self.guard, ObjectGuard::Held { counter_value, .. }
                if counter != Some(counter_value.as_str()));
            if fenced {
                return None;
            }
            "a copy of it may still be on its way, and be applied later"
        } else {
            return None;
        };
        Some(Error::new(
            ErrorKind::Ambiguous,
            format!(
                "a write of object {:?} timed out and was refused when sent again, but {why}",
                self.name
            ),
        ))
    }

    fn holder(&self) -> bool {
        matches!(self.guard, ObjectGuard::Held { .. })
    }
}

fn already_exists() -> Error {
    Error::new(
        ErrorKind::AlreadyExists,
        "the object already exists: update it instead, or remove it first",
    )
}

fn not_found() -> Error {
    Error::new(
        ErrorKind::ObjectNotFound,
        "the object does not exist (never inserted, or removed)",
    )
}

fn mismatch(expected: u64, found: u64) -> Error {
    Error::new(
        ErrorKind::VersionMismatch,
        format!(
            "the object is at version {found}, not {expected}: another client wrote it first; read it again and retry"
        ),
    )
}

/// An object request made without holding its lock: [`ObjectRequest::Get`] reads; the others
/// write only while nobody holds the lock ([`ErrorKind::Busy`] otherwise: a locked object is
/// not changed by others, as in ScaleOut StateServer).
///
/// How a write is checked depends on the strategy:
/// - **unique insert**: one conditional step ([`ObjectGuard::Free`]: the lock cell absent).
///   Round trips: an update naming its version, 1; an insert, 1 (2 over a removed object); a
///   remove, 2 (a read, then the write).
/// - **bakery and column prefix**: no single cell says whether the lock is held (their entries
///   are one cell per contender), so the write takes the lock for itself (try once, no wait:
///   [`ErrorKind::Busy`] when held), writes as a holder does, and releases: the acquisition's
///   and release's round trips (2 and 1 uncontended) plus the holder's read and write (2).
#[derive(Debug)]
pub struct ObjectOp {
    inner: Inner,
    result: Option<Result<Object>>,
}

#[derive(Debug)]
enum Inner {
    Call(alloc::boxed::Box<ObjectCall>),
    Locked {
        life: alloc::boxed::Box<LockLife>,
        request: Option<ObjectRequest>,
        outcome: Option<Result<Object>>,
    },
}

impl ObjectOp {
    /// A request on the object of `name` by `owner` with `opts` (fresh per call, as for an
    /// acquisition: their `acquisition` id names the write; left zero, the owner id does, and
    /// must then be fresh per call). `limit`: the store's largest
    /// value, in bytes. Fails with [`ErrorKind::InvalidOption`] for a bad option or value.
    pub fn new(
        name: LockName,
        owner: OwnerId,
        opts: LockOptions,
        request: ObjectRequest,
        limit: usize,
    ) -> Result<Self> {
        opts.validate()?;
        if opts.paths {
            return Err(paths_have_no_objects(name.as_str()));
        }
        request.check(limit)?;
        let mut request = request;
        if opts.sabotage() == Sabotage::OptimisticUnversioned {
            // Broken: an optimistic update written over whatever version the object is at.
            if let ObjectRequest::Update { version, .. } = &mut request {
                *version = None;
            }
        }
        let levels = Levels {
            read: ReadConsistency::Plain(opts.consistency),
            serial: opts.serial,
            consistency: opts.consistency,
        };
        let inner = if opts.strategy == Strategy::UniqueInsert || !request.writes() {
            Inner::Call(alloc::boxed::Box::new(ObjectCall::new(
                name.as_str(),
                request,
                ObjectGuard::Free {
                    column: String::from(unique::LOCK_COLUMN),
                },
                (writer_id(opts.acquisition, &owner), 1),
                levels,
                None,
                Io::new(opts.store_attempts, opts.retry),
                SplitMix64::new(opts.seed),
            )))
        } else {
            let opts = LockOptions {
                wait: Wait::TryOnce,
                ..opts
            };
            Inner::Locked {
                life: alloc::boxed::Box::new(LockLife::new(
                    Acquire::new(name, owner, opts)?,
                    false,
                )),
                request: Some(request),
                outcome: None,
            }
        };
        Ok(ObjectOp {
            inner,
            result: None,
        })
    }
}

impl ObjectOp {
    /// The lock's life this call runs to write (bakery and column prefix: a try-once
    /// acquisition, the write as its holder, and its release), if it runs one: a host, or the
    /// simulator, may watch its lease ([`LockLife::lease`], [`LockLife::status`]). `None` for
    /// a read, and for unique insert's one guarded write.
    pub fn life(&self) -> Option<&LockLife> {
        match &self.inner {
            Inner::Call(_) => None,
            Inner::Locked { life, .. } => Some(life),
        }
    }
}

impl Operation for ObjectOp {
    type Output = Object;

    fn poll(&mut self, now: Instant) -> Poll<Object> {
        if let Some(result) = &self.result {
            return Poll::Ready(result.clone());
        }
        match &mut self.inner {
            Inner::Call(call) => match call.poll(now) {
                Poll::Ready(result) => {
                    self.result = Some(result.clone());
                    Poll::Ready(result)
                }
                other => other,
            },
            Inner::Locked {
                life,
                request,
                outcome,
            } => loop {
                match life.poll(now) {
                    LifePoll::Execute(id, command) => return Poll::Execute(id, command),
                    LifePoll::WaitUntil(t) => return Poll::WaitUntil(t),
                    LifePoll::Event(LifeEvent::Granted(_)) => {
                        if let Some(request) = request.take() {
                            if let Err(e) = life.object(request, crate::life::AfterObject::Release)
                            {
                                *outcome = Some(Err(e));
                                life.cancel();
                            }
                        }
                    }
                    LifePoll::Event(LifeEvent::Object(result)) => {
                        let failed = result.is_err();
                        *outcome = Some(result);
                        if failed {
                            life.cancel();
                        }
                    }
                    LifePoll::Event(
                        LifeEvent::Failed(e) | LifeEvent::GaveUp(e) | LifeEvent::Lost(e),
                    ) => {
                        if outcome.is_none() {
                            *outcome = Some(Err(locked_object(e)));
                        }
                    }
                    LifePoll::Event(LifeEvent::Released(Err(e))) if outcome.is_none() => {
                        *outcome = Some(Err(e));
                    }
                    LifePoll::Event(_) => {}
                    LifePoll::Done => {
                        let result = outcome.take().unwrap_or_else(|| {
                            Err(Error::internal(
                                "internal error: an object write ended without an outcome",
                            ))
                        });
                        self.result = Some(result.clone());
                        return Poll::Ready(result);
                    }
                }
            },
        }
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        match &mut self.inner {
            Inner::Call(call) => call.handle(id, reply),
            Inner::Locked { life, .. } => life.handle(id, reply),
        }
    }

    fn wake(&mut self) {}
}

/// A try-once acquisition's failure, said of the object: busy means someone holds its lock.
fn locked_object(e: Error) -> Error {
    if e.kind() == ErrorKind::Busy {
        let message = format!("{}: a locked object is not changed by others", e.message());
        let holder = e.holder().map(String::from);
        let mut busy = Error::new(ErrorKind::Busy, message);
        if let Some(h) = holder {
            busy = busy.with_holder(h);
        }
        busy
    } else {
        e
    }
}

/// Objects live one per row; with paths a row holds a whole tree, so a path has none.
pub(crate) fn paths_have_no_objects(name: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::InvalidOption,
        alloc::format!(
            "lock {name:?} is a path: objects live beside flat names only (a root's row holds its whole tree)"
        ),
    )
}
