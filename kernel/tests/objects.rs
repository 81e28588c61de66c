//! Objects beside locks (seed 002) against the reference table, on every strategy: a holder's
//! locked calls through its `LockLife`, the unlocked calls (`ObjectOp`), and what the store
//! refuses: a write while someone else holds the lock (busy), after a forced release (lost),
//! with a stale version (mismatch), on a missing object, and bad values.

use std::time::Duration;

use baton_kernel::{
    Acquire, AfterObject, Command, ErrorKind, ForceRelease, Instant, LifeEvent, LifePoll, LockLife,
    LockName, LockOptions, MemoryTable, Object, ObjectOp, ObjectRequest, Operation, OwnerId, Poll,
    Reply, Result, Strategy, Wait, OBJECT_COLUMN,
};

const NAME: &str = "quote";
const LIMIT: usize = 1 << 20;

fn opts(strategy: Strategy, acquisition: u64) -> LockOptions {
    LockOptions {
        strategy,
        wait: Wait::TryOnce,
        seed: 7,
        acquisition: acquisition | 1,
        created_unix_ms: 1000,
        ..LockOptions::default()
    }
}

fn owner(host: &str) -> OwnerId {
    OwnerId::new(host, 1, 1).expect("owner")
}

fn name() -> LockName {
    LockName::new(NAME).expect("name")
}

struct Store {
    table: MemoryTable,
    now: Instant,
    next: u64,
}

impl Store {
    fn new() -> Self {
        Store {
            table: MemoryTable::new(),
            now: Instant::from_nanos(1_000_000_000),
            next: 1,
        }
    }

    fn fresh(&mut self) -> u64 {
        self.next += 2;
        self.next
    }

    /// Runs an unlocked object call to its end.
    fn call(&mut self, strategy: Strategy, request: ObjectRequest) -> Result<Object> {
        let acq = self.fresh();
        let op = ObjectOp::new(name(), owner("caller"), opts(strategy, acq), request, LIMIT)?;
        self.drive(op)
    }

    fn drive<O: Operation>(&mut self, mut op: O) -> Result<O::Output> {
        for _ in 0..1000 {
            match op.poll(self.now) {
                Poll::Execute(id, command) => {
                    let reply = self.table.apply(&command, self.now);
                    op.handle(id, reply);
                }
                Poll::WaitUntil(t) if t > self.now && t < Instant::MAX => self.now = t,
                Poll::WaitUntil(t) => panic!("waits until {t:?} with nothing to wait for"),
                Poll::Ready(r) => return r,
            }
        }
        panic!("the operation did not settle")
    }

    /// A held lock of `host`.
    fn hold(&mut self, strategy: Strategy, host: &str) -> LockLife {
        let acq = self.fresh();
        let acquire = Acquire::new(name(), owner(host), opts(strategy, acq)).expect("options");
        let mut life = LockLife::new(acquire, false);
        let events = self.run(&mut life);
        assert!(
            matches!(events.first(), Some(LifeEvent::Granted(_))),
            "{strategy:?}: {events:?}"
        );
        life
    }

    /// Drives `life` until it waits for nothing but a request; returns its events.
    fn run(&mut self, life: &mut LockLife) -> Vec<LifeEvent> {
        let mut events = Vec::new();
        for _ in 0..1000 {
            match life.poll(self.now) {
                LifePoll::Execute(id, command) => {
                    let reply = self.table.apply(&command, self.now);
                    life.handle(id, reply);
                }
                LifePoll::Event(e) => events.push(e),
                LifePoll::WaitUntil(_) | LifePoll::Done => return events,
            }
        }
        panic!("the life did not settle")
    }

    /// A holder's object call: its outcome, and every event it gave.
    fn locked(
        &mut self,
        life: &mut LockLife,
        request: ObjectRequest,
        after: AfterObject,
    ) -> (Result<Object>, Vec<LifeEvent>) {
        life.object(request, after).expect("asked");
        let events = self.run(life);
        let outcome = events
            .iter()
            .find_map(|e| match e {
                LifeEvent::Object(r) => Some(r.clone()),
                _ => None,
            })
            .expect("an object event");
        (outcome, events)
    }

    fn object_cell(&self) -> Option<String> {
        self.table
            .read(
                NAME,
                &baton_kernel::ColumnFilter::Exact(OBJECT_COLUMN.into()),
                self.now,
            )
            .into_iter()
            .next()
            .map(|c| c.value)
    }
}

fn update(value: &[u8], version: Option<u64>) -> ObjectRequest {
    ObjectRequest::Update {
        value: value.to_vec(),
        version,
    }
}

fn kind<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    r.expect_err("an error").kind()
}

#[test]
fn the_quote_example_get_and_lock_change_update_and_release() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        let mut life = s.hold(strategy, "a");
        let (got, _) = s.locked(&mut life, ObjectRequest::Get, AfterObject::Keep);
        assert_eq!(got, Ok(Object::default()), "{strategy:?}");
        let (inserted, _) = s.locked(
            &mut life,
            ObjectRequest::Insert(b"1053.26".to_vec()),
            AfterObject::Keep,
        );
        assert_eq!(inserted.map(|o| o.version), Ok(1), "{strategy:?}");
        let (updated, events) = s.locked(&mut life, update(b"1052.42", None), AfterObject::Release);
        assert_eq!(updated.map(|o| o.version), Ok(2), "{strategy:?}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, LifeEvent::Released(Ok(())))),
            "{strategy:?}: {events:?}"
        );
        let now = s.call(strategy, ObjectRequest::Get).expect("get");
        assert_eq!(now.version, 2);
        assert_eq!(now.value.as_deref(), Some(&b"1052.42"[..]));
    }
}

#[test]
fn optimistic_updates_check_the_version_and_existence() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        assert_eq!(
            kind(s.call(strategy, update(b"x", Some(0)))),
            ErrorKind::ObjectNotFound
        );
        let v1 = s
            .call(strategy, ObjectRequest::Insert(b"a".to_vec()))
            .expect("insert");
        assert_eq!(v1.version, 1, "{strategy:?}");
        assert_eq!(
            kind(s.call(strategy, ObjectRequest::Insert(b"b".to_vec()))),
            ErrorKind::AlreadyExists
        );
        let v2 = s.call(strategy, update(b"b", Some(1))).expect("update");
        assert_eq!(v2.version, 2);
        let e = s.call(strategy, update(b"c", Some(1))).expect_err("stale");
        assert_eq!(e.kind(), ErrorKind::VersionMismatch, "{strategy:?}: {e}");
        assert!(e.message().contains("version 2"), "{e}");
        let removed = s.call(strategy, ObjectRequest::Remove).expect("remove");
        assert_eq!((removed.version, removed.value), (3, None));
        assert_eq!(
            s.call(strategy, ObjectRequest::Get),
            Ok(Object {
                version: 3,
                value: None
            })
        );
        assert_eq!(
            kind(s.call(strategy, update(b"d", Some(3)))),
            ErrorKind::ObjectNotFound
        );
        assert_eq!(
            kind(s.call(strategy, ObjectRequest::Remove)),
            ErrorKind::ObjectNotFound
        );
        // Inserted again, it goes on from its last version.
        let again = s
            .call(strategy, ObjectRequest::Insert(b"e".to_vec()))
            .expect("insert again");
        assert_eq!(again.version, 4, "{strategy:?}");
    }
}

#[test]
fn a_locked_object_is_not_changed_by_others() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        s.call(strategy, ObjectRequest::Insert(b"a".to_vec()))
            .expect("insert");
        let mut life = s.hold(strategy, "holder");
        let before = s.object_cell();
        for request in [
            update(b"b", Some(1)),
            update(b"b", None),
            ObjectRequest::Remove,
            ObjectRequest::Insert(b"c".to_vec()),
        ] {
            let e = s.call(strategy, request.clone()).expect_err("busy");
            assert!(
                matches!(e.kind(), ErrorKind::Busy | ErrorKind::AlreadyExists),
                "{strategy:?} {request:?}: {e}"
            );
            assert_eq!(s.object_cell(), before, "{strategy:?} {request:?}");
        }
        // Reading is not locking.
        assert_eq!(
            s.call(strategy, ObjectRequest::Get).map(|o| o.version),
            Ok(1)
        );
        let (w, _) = s.locked(&mut life, update(b"mine", None), AfterObject::Release);
        assert_eq!(w.map(|o| o.version), Ok(2), "{strategy:?}");
        assert_eq!(
            s.call(strategy, update(b"after", Some(2)))
                .map(|o| o.version),
            Ok(3)
        );
    }
}

#[test]
fn a_write_after_a_forced_release_is_refused_at_the_store_and_loses_the_lease() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        let mut life = s.hold(strategy, "holder");
        let (got, _) = s.locked(&mut life, ObjectRequest::Get, AfterObject::Keep);
        assert!(got.is_ok());
        let mut o = opts(strategy, 99);
        o.wait = Wait::TryOnce;
        let force = ForceRelease::new(name(), &o);
        s.drive(force).expect("forced");
        let (w, events) = s.locked(
            &mut life,
            ObjectRequest::Insert(b"late".to_vec()),
            AfterObject::Keep,
        );
        assert_eq!(kind(w), ErrorKind::Lost, "{strategy:?}");
        assert!(
            events.iter().any(|e| matches!(e, LifeEvent::Lost(_))),
            "{strategy:?}: {events:?}"
        );
        assert_eq!(s.object_cell(), None, "{strategy:?}");
        assert_eq!(
            life.object(ObjectRequest::Get, AfterObject::Keep)
                .map_err(|e| e.kind()),
            Err(ErrorKind::Lost)
        );
    }
}

#[test]
fn a_write_after_the_lease_expired_at_the_store_is_refused() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        let mut life = s.hold(strategy, "holder");
        let (got, _) = s.locked(&mut life, ObjectRequest::Get, AfterObject::Keep);
        assert!(got.is_ok());
        // The write is asked for while the holder believes, but reaches the store after its
        // cell expired there (a paused host, a late delivery): the store refuses it.
        life.object(ObjectRequest::Insert(b"late".to_vec()), AfterObject::Keep)
            .expect("asked");
        let sent = match life.poll(s.now) {
            LifePoll::Execute(id, command) => (id, command),
            other => panic!("{other:?}"),
        };
        let late = s.now.saturating_add(Duration::from_secs(120));
        let reply = s.table.apply(&sent.1, late);
        assert!(
            matches!(reply, Reply::Object { applied: false, .. }),
            "{strategy:?}: {reply:?}"
        );
        life.handle(sent.0, reply);
        let events = s.run(&mut life);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, LifeEvent::Object(Err(e)) if e.kind() == ErrorKind::Lost)),
            "{strategy:?}: {events:?}"
        );
        assert_eq!(s.object_cell(), None);
    }
}

#[test]
fn bad_values_and_hand_edited_cells_are_typed_errors() {
    let mut s = Store::new();
    for strategy in Strategy::ALL {
        assert_eq!(
            kind(s.call(strategy, ObjectRequest::Insert(Vec::new()))),
            ErrorKind::InvalidOption
        );
        assert_eq!(
            kind(s.call(strategy, ObjectRequest::Insert(vec![0; LIMIT + 1]))),
            ErrorKind::InvalidOption
        );
    }
    let big = s
        .call(
            Strategy::UniqueInsert,
            ObjectRequest::Insert(vec![0xff; LIMIT]),
        )
        .expect("the limit itself is fine");
    assert_eq!(big.value.map(|v| v.len()), Some(LIMIT));
    s.table.apply(
        &Command::CompareAndSet {
            row: NAME.into(),
            column: OBJECT_COLUMN.into(),
            expected: s.object_cell().expect("cell"),
            new: Some("garbage".into()),
            ttl: None,
            serial: Default::default(),
            consistency: Default::default(),
        },
        s.now,
    );
    let e = s
        .call(Strategy::UniqueInsert, ObjectRequest::Get)
        .expect_err("garbage");
    assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
    assert!(e.message().contains("not a baton object"), "{e}");
    assert_eq!(
        kind(s.call(Strategy::UniqueInsert, update(b"x", Some(1)))),
        ErrorKind::StoreError
    );
}

#[test]
fn one_object_call_at_a_time_and_none_after_release() {
    let mut s = Store::new();
    let mut life = s.hold(Strategy::UniqueInsert, "a");
    life.object(ObjectRequest::Get, AfterObject::Keep)
        .expect("first");
    assert_eq!(
        life.object(ObjectRequest::Get, AfterObject::Keep)
            .map_err(|e| e.kind()),
        Err(ErrorKind::InvalidOption)
    );
    s.run(&mut life);
    life.release(Vec::new()).expect("release");
    s.run(&mut life);
    assert_eq!(
        life.object(ObjectRequest::Get, AfterObject::Keep)
            .map_err(|e| e.kind()),
        Err(ErrorKind::NotOwner)
    );
}

/// The simulator's finding (issue 42, its first runs with objects): callers that leave
/// `acquisition` zero, as the options allow when every acquisition has an owner id of its own,
/// named every write by `(0, n)`, so two callers' first writes of a version made the same cell,
/// and a read-back took the other's write for its own. Two inserts were acknowledged and one
/// applied (bakery seed 192, profile "none", no fault needed); holders' locked writes alike.
#[test]
fn writes_of_callers_without_an_acquisition_id_are_told_apart_by_their_owners() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        let call = |s: &mut Store, host: &str, request: ObjectRequest| {
            let mut o = opts(strategy, 0);
            o.acquisition = 0;
            let op = ObjectOp::new(name(), owner(host), o, request, LIMIT).expect("options");
            s.drive(op)
        };
        let first = call(&mut s, "a", ObjectRequest::Insert(b"1".to_vec()));
        assert_eq!(first.map(|o| o.version), Ok(1), "{strategy:?}");
        // The same insert by another caller: the object exists (it was told Ok before).
        let second = call(&mut s, "b", ObjectRequest::Insert(b"1".to_vec()));
        assert_eq!(kind(second), ErrorKind::AlreadyExists, "{strategy:?}");
        // Holders alike: two holders, each the first to write the object in a table of its
        // own, make different cells.
        let mut cells = Vec::new();
        for host in ["c", "d"] {
            let mut t = Store::new();
            let mut o = opts(strategy, 0);
            o.acquisition = 0;
            let acquire = Acquire::new(name(), owner(host), o).expect("options");
            let mut life = LockLife::new(acquire, false);
            let events = t.run(&mut life);
            assert!(
                matches!(events.first(), Some(LifeEvent::Granted(_))),
                "{strategy:?}: {events:?}"
            );
            let (w, _) = t.locked(
                &mut life,
                ObjectRequest::Insert(b"1".to_vec()),
                AfterObject::Release,
            );
            assert_eq!(w.map(|o| o.version), Ok(1), "{strategy:?}");
            cells.push(t.object_cell().expect("cell"));
        }
        assert_ne!(cells[0], cells[1], "{strategy:?}");
    }
}

/// Polls `op` until it sends a command (advancing the clock over its waits), or finishes.
fn next_command<O: Operation>(
    s: &mut Store,
    op: &mut O,
) -> std::result::Result<(baton_kernel::CommandId, Command), Result<O::Output>> {
    for _ in 0..100 {
        match op.poll(s.now) {
            Poll::Execute(id, command) => return Ok((id, command)),
            Poll::WaitUntil(t) if t > s.now && t < Instant::MAX => s.now = t,
            Poll::WaitUntil(t) => panic!("waits until {t:?} with nothing to wait for"),
            Poll::Ready(r) => return Err(r),
        }
    }
    panic!("the operation did not settle")
}

fn timeout() -> Reply {
    Reply::Failed(baton_kernel::Failure::Timeout("simulated".into()))
}

/// The simulator's finding (unique insert seed 592 of its first runs with objects, and 142,
/// 167, 634...): an optimistic update's first send is held up (a pooler's queue); the caller
/// hears a timeout, reads back (not applied yet), sends it again, and that copy finds the lock
/// held: it was told `Busy` ("not changed"). The holder releases without writing, and the first
/// copy lands: the object changed after all, and a caller that retries on `Busy` increments
/// twice. Now the refusal of a write whose earlier send may still land is `Ambiguous`.
#[test]
fn a_write_refused_while_an_earlier_copy_may_still_land_is_ambiguous() {
    let strategy = Strategy::UniqueInsert;
    let mut s = Store::new();
    s.call(strategy, ObjectRequest::Insert(b"1".to_vec()))
        .expect("insert");
    let acq = s.fresh();
    let mut op = ObjectOp::new(
        name(),
        owner("optimist"),
        opts(strategy, acq),
        update(b"2", Some(1)),
        LIMIT,
    )
    .expect("options");
    let (id, first) = next_command(&mut s, &mut op).expect("the write");
    assert!(matches!(first, Command::SetObject { .. }), "{first:?}");
    // Held up: the caller hears a timeout, and reads back.
    op.handle(id, timeout());
    let (id, read) = next_command(&mut s, &mut op).expect("the read-back");
    assert!(matches!(read, Command::Read { .. }), "{read:?}");
    let reply = s.table.apply(&read, s.now);
    op.handle(id, reply);
    let (id, again) = next_command(&mut s, &mut op).expect("sent again");
    assert_eq!(again, first);
    // Meanwhile someone took the lock: the copy sent again is refused.
    let mut holder = s.hold(strategy, "holder");
    let reply = s.table.apply(&again, s.now);
    assert!(
        matches!(reply, Reply::Object { applied: false, .. }),
        "{reply:?}"
    );
    op.handle(id, reply);
    let outcome = next_command(&mut s, &mut op).expect_err("done");
    assert_eq!(
        kind(outcome),
        ErrorKind::Ambiguous,
        "not Busy: a copy may land"
    );
    // It does: the holder releases without writing, and the first copy applies.
    holder.release(Vec::new()).expect("release");
    s.run(&mut holder);
    let late = s.table.apply(&first, s.now);
    assert!(
        matches!(late, Reply::Object { applied: true, .. }),
        "{late:?}"
    );
    assert!(s
        .object_cell()
        .expect("cell")
        .starts_with("00000000000000000002;"));
}

/// The same with a store that then answers `Unavailable` until the attempts are used up (unique
/// insert seed 227 of the first runs, on the replicated store: a Paxos proposal accepted by one
/// replica, completed by the next round on the row): the caller was told `StoreUnavailable`,
/// and the write applied. Now `Ambiguous`.
#[test]
fn a_write_given_up_while_an_earlier_copy_may_still_land_is_ambiguous() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        s.call(strategy, ObjectRequest::Insert(b"1".to_vec()))
            .expect("insert");
        let mut life = s.hold(strategy, "holder");
        let (got, _) = s.locked(&mut life, ObjectRequest::Get, AfterObject::Keep);
        assert_eq!(got.map(|o| o.version), Ok(1));
        life.object(update(b"2", None), AfterObject::Keep)
            .expect("asked");
        let mut first = None;
        let mut outcome = None;
        for _ in 0..100 {
            match life.poll(s.now) {
                LifePoll::Execute(id, command) => {
                    let reply = match (&command, &first) {
                        // The first send is held up; the read-back shows it not applied yet;
                        // every later send finds the store unavailable.
                        (Command::SetObject { .. }, None) => {
                            first = Some(command.clone());
                            timeout()
                        }
                        (Command::SetObject { .. }, Some(_)) => {
                            Reply::Failed(baton_kernel::Failure::Unavailable("simulated".into()))
                        }
                        _ => s.table.apply(&command, s.now),
                    };
                    life.handle(id, reply);
                }
                LifePoll::Event(LifeEvent::Object(r)) => {
                    outcome = Some(r);
                    break;
                }
                LifePoll::Event(_) => {}
                LifePoll::WaitUntil(t) if t > s.now && t < Instant::MAX => {
                    s.now = s.now.saturating_add(Duration::from_millis(20)).min(t)
                }
                other => panic!("{strategy:?}: {other:?}"),
            }
        }
        let outcome = outcome.expect("an outcome");
        assert_eq!(kind(outcome), ErrorKind::Ambiguous, "{strategy:?}");
        let late = s.table.apply(&first.expect("sent"), s.now);
        assert!(
            matches!(late, Reply::Object { applied: true, .. }),
            "{strategy:?}: the held-up copy still lands: {late:?}"
        );
    }
}

/// The simulator's finding (column prefix seed 1798 of the first runs, and seed 287 on the
/// replicated store): a holder's write applies but its reply is lost; before its read-back, an
/// operator breaks the lock and the next holder writes over the object. The read-back finds
/// another write's cell and the lock gone: the holder was told `Lost` ("the object was not
/// changed") although its write had applied. Now `Ambiguous` (the lease is lost all the same).
#[test]
fn a_holder_write_applied_then_overwritten_is_ambiguous_not_lost() {
    for strategy in Strategy::ALL {
        let mut s = Store::new();
        let mut life = s.hold(strategy, "a");
        let (got, _) = s.locked(&mut life, ObjectRequest::Get, AfterObject::Keep);
        assert!(got.is_ok());
        life.object(ObjectRequest::Insert(b"1".to_vec()), AfterObject::Keep)
            .expect("asked");
        let (id, write) = match life.poll(s.now) {
            LifePoll::Execute(id, command) => (id, command),
            other => panic!("{other:?}"),
        };
        let applied = s.table.apply(&write, s.now);
        assert!(matches!(applied, Reply::Object { applied: true, .. }));
        life.handle(id, timeout());
        let mut o = opts(strategy, 99);
        o.wait = Wait::TryOnce;
        s.drive(ForceRelease::new(name(), &o)).expect("forced");
        let mut next = s.hold(strategy, "b");
        let (got, _) = s.locked(&mut next, ObjectRequest::Get, AfterObject::Keep);
        assert_eq!(got.map(|o| o.version), Ok(1), "{strategy:?}");
        let (w, _) = s.locked(&mut next, update(b"2", None), AfterObject::Release);
        assert_eq!(w.map(|o| o.version), Ok(2), "{strategy:?}");
        let mut outcome = None;
        for _ in 0..100 {
            match life.poll(s.now) {
                LifePoll::Execute(id, command) => {
                    let reply = s.table.apply(&command, s.now);
                    life.handle(id, reply);
                }
                LifePoll::Event(LifeEvent::Object(r)) => {
                    outcome = Some(r);
                    break;
                }
                LifePoll::Event(_) => {}
                LifePoll::WaitUntil(t) if t > s.now && t < Instant::MAX => s.now = t,
                other => panic!("{strategy:?}: {other:?}"),
            }
        }
        assert_eq!(
            kind(outcome.expect("an outcome")),
            ErrorKind::Ambiguous,
            "{strategy:?}: its write had applied"
        );
    }
}
