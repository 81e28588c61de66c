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
