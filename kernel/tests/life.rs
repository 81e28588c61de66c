//! The lock's life machine driven by a fake clock against the reference table: acquisition,
//! the renewal schedule, a lost renewal reply, renewals failing until the deadline, a forced
//! release noticed by a renewal, keep-alive off, release, and cancellation mid-wait and
//! mid-acquire.

use std::time::Duration;

use baton_kernel::{
    Acquire, Command, CommandId, ErrorKind, Failure, ForceRelease, Instant, LifeEvent, LifePoll,
    LifeStatus, LockLife, LockName, LockOptions, MemoryTable, Operation, OwnerId, Poll, Reply,
    Strategy, Wait,
};

const NAME: &str = "job";

fn opts(strategy: Strategy, wait: Wait) -> LockOptions {
    LockOptions {
        strategy,
        wait,
        seed: 7,
        created_unix_ms: 1000,
        ..LockOptions::default()
    }
}

fn life(strategy: Strategy, host: &str, wait: Wait, keep_alive: bool) -> LockLife {
    let owner = OwnerId::new(host, 1, 1).expect("owner");
    let name = LockName::new(NAME).expect("name");
    let acquire = Acquire::new(name, owner, opts(strategy, wait)).expect("options");
    LockLife::new(acquire, keep_alive)
}

/// What a command's reply should be instead of the table's own answer.
type Fault = Box<dyn FnMut(&Command, &Reply) -> Option<Reply>>;

/// A host: the table, the clock, and what the machine said.
struct Host {
    table: MemoryTable,
    now: Instant,
    events: Vec<(Instant, LifeEvent)>,
    commands: Vec<Command>,
    fault: Option<Fault>,
}

impl Host {
    fn new() -> Self {
        Host {
            table: MemoryTable::new(),
            now: Instant::from_nanos(1_000_000_000),
            events: Vec::new(),
            commands: Vec::new(),
            fault: None,
        }
    }

    fn at(&self, secs: f64) -> Instant {
        Instant::from_nanos(1_000_000_000).saturating_add(Duration::from_secs_f64(secs))
    }

    fn execute(&mut self, command: &Command) -> Reply {
        self.commands.push(command.clone());
        let reply = self.table.apply(command, self.now);
        match self.fault.as_mut().and_then(|f| f(command, &reply)) {
            Some(instead) => instead,
            None => reply,
        }
    }

    /// Drives `life`, executing each command at once, until it waits past `until` (the clock
    /// is then left at `until`) or is done. Returns whether it is done.
    fn run(&mut self, life: &mut LockLife, until: Instant) -> bool {
        for _ in 0..100_000 {
            match life.poll(self.now) {
                LifePoll::Execute(id, command) => {
                    let reply = self.execute(&command);
                    life.handle(id, reply);
                }
                LifePoll::Event(event) => self.events.push((self.now, event)),
                LifePoll::WaitUntil(t) if t < self.now => {
                    panic!(
                        "asked to wait until {t:?}, before now ({:?}): a busy loop",
                        self.now
                    )
                }
                LifePoll::WaitUntil(t) if t <= until => self.now = t,
                LifePoll::WaitUntil(_) => {
                    self.now = self.now.max(until);
                    return false;
                }
                LifePoll::Done => return true,
            }
        }
        panic!("the life did not settle");
    }

    /// Runs a one-shot operation (a forced release, a release elsewhere) to its end, at once.
    fn drive<O: Operation>(&mut self, mut op: O) -> baton_kernel::Result<O::Output> {
        loop {
            match op.poll(self.now) {
                Poll::Execute(id, command) => {
                    let reply = self.execute(&command);
                    op.handle(id, reply);
                }
                Poll::WaitUntil(_) => panic!("this operation does not wait here"),
                Poll::Ready(r) => return r,
            }
        }
    }

    fn count(&self, pred: impl Fn(&LifeEvent) -> bool) -> usize {
        self.events.iter().filter(|(_, e)| pred(e)).count()
    }

    fn last_event(&self) -> &LifeEvent {
        &self.events.last().expect("an event").1
    }

    fn cells(&self) -> Vec<String> {
        self.table
            .read(NAME, &baton_kernel::ColumnFilter::All, self.now)
            .into_iter()
            .map(|c| c.column)
            .filter(|c| c != "_LOCK_")
            .collect()
    }
}

fn granted(host: &Host) -> bool {
    host.events
        .iter()
        .any(|(_, e)| matches!(e, LifeEvent::Granted(_)))
}

#[test]
fn acquire_renew_on_schedule_then_release() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::TryOnce, true);
        assert!(!host.run(&mut a, host.now));
        assert!(granted(&host), "{strategy}: {:?}", host.events);
        let first = a.lease().expect("held").deadline();
        // 100 s of a 60 s lease: renewed once a third of the validity (59.4 s) has passed.
        let until = host.at(100.0);
        assert!(!host.run(&mut a, until));
        let renewals: Vec<Instant> = host
            .events
            .iter()
            .filter_map(|(at, e)| matches!(e, LifeEvent::Renewed(_)).then_some(*at))
            .collect();
        assert_eq!(renewals.len(), 5, "{strategy}: {:?}", host.events);
        assert!(
            renewals[0] >= host.at(19.7) && renewals[0] <= host.at(19.9),
            "{strategy}: first renewal at {:?}",
            renewals[0]
        );
        let deadline = a.lease().expect("held").deadline();
        assert!(deadline > first);
        assert_eq!(a.status(host.now), LifeStatus::Held(deadline));
        assert!(a.remaining(host.now) > Duration::from_secs(30));
        a.release(Vec::new()).expect("release");
        assert!(host.run(&mut a, Instant::MAX));
        assert_eq!(
            host.last_event(),
            &LifeEvent::Released(Ok(())),
            "{strategy}"
        );
        assert_eq!(a.status(host.now), LifeStatus::Released);
        assert!(host.cells().is_empty(), "{strategy}: {:?}", host.cells());
        assert_eq!(
            a.release(Vec::new()).map_err(|e| e.kind()),
            Err(ErrorKind::NotOwner),
            "{strategy}: a second release"
        );
    }
}

#[test]
fn a_lost_renewal_reply_is_retried_and_the_lease_stays_held() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::TryOnce, true);
        assert!(!host.run(&mut a, host.now));
        // The first write of the first renewal is applied, but its reply is lost.
        let mut renewal_writes = 0;
        let grant_commands = host.commands.len();
        host.fault = Some(Box::new(move |command, _| {
            let write = matches!(command, Command::Put { .. } | Command::CompareAndSet { .. });
            if write {
                renewal_writes += 1;
            }
            (write && renewal_writes == 1).then(|| Reply::Failed(Failure::Timeout("lost".into())))
        }));
        let until = host.at(30.0);
        assert!(!host.run(&mut a, until));
        assert!(
            host.commands.len() > grant_commands + 2,
            "{strategy}: retried"
        );
        assert_eq!(
            host.count(|e| matches!(e, LifeEvent::Renewed(_))),
            1,
            "{strategy}: {:?}",
            host.events
        );
        assert_eq!(host.count(|e| matches!(e, LifeEvent::Lost(_))), 0);
        assert!(matches!(a.status(host.now), LifeStatus::Held(_)));
    }
}

#[test]
fn renewals_failing_until_the_deadline_lose_the_lease_at_the_deadline() {
    let mut host = Host::new();
    let mut a = life(Strategy::UniqueInsert, "a", Wait::TryOnce, true);
    assert!(!host.run(&mut a, host.now));
    let deadline = a.lease().expect("held").deadline();
    host.fault = Some(Box::new(|_, _| {
        Some(Reply::Failed(Failure::Unavailable("down".into())))
    }));
    assert!(!host.run(&mut a, host.at(120.0)));
    assert!(host.count(|e| matches!(e, LifeEvent::RenewalFailed(_))) >= 3);
    let (lost_at, lost) = host
        .events
        .iter()
        .find(|(_, e)| matches!(e, LifeEvent::Lost(_)))
        .expect("lost");
    assert_eq!(*lost_at, deadline, "lost exactly at the deadline");
    let LifeEvent::Lost(e) = lost else {
        unreachable!()
    };
    assert!(e.message().contains("last error"), "{e}");
    assert_eq!(e.lock(), Some(NAME));
    assert!(matches!(a.status(host.now), LifeStatus::Lost(_)));
    assert!(a.renew_now().is_err());
    // The store is back; the release removes what is left and repeats the loss.
    host.fault = None;
    a.release(Vec::new()).expect("release of a lost lease");
    assert!(host.run(&mut a, Instant::MAX));
    assert!(
        matches!(host.last_event(), LifeEvent::Released(Err(e)) if e.kind() == ErrorKind::Lost)
    );
    assert!(host.cells().is_empty());
}

#[test]
fn a_renewal_notices_a_forced_release() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::TryOnce, true);
        assert!(!host.run(&mut a, host.now));
        let force = ForceRelease::new(
            LockName::new(NAME).expect("name"),
            &opts(strategy, Wait::TryOnce),
        );
        let removed = host.drive(force).expect("forced");
        assert_eq!(removed.len(), 1);
        assert!(!host.run(&mut a, host.at(25.0)));
        assert_eq!(
            host.count(|e| matches!(e, LifeEvent::Lost(e) if e.message().contains("force"))),
            1,
            "{strategy}: {:?}",
            host.events
        );
        // No more renewals after the loss.
        let commands = host.commands.len();
        assert!(!host.run(&mut a, host.at(200.0)));
        assert_eq!(host.commands.len(), commands, "{strategy}");
        a.cancel();
        assert!(host.run(&mut a, Instant::MAX));
        assert!(
            matches!(host.last_event(), LifeEvent::Released(Err(e)) if e.kind() == ErrorKind::Lost)
        );
    }
}

#[test]
fn without_keep_alive_the_lease_ends_at_its_deadline() {
    let mut host = Host::new();
    let mut a = life(Strategy::UniqueInsert, "a", Wait::TryOnce, false);
    assert!(!host.run(&mut a, host.now));
    let deadline = a.lease().expect("held").deadline();
    let commands = host.commands.len();
    assert!(!host.run(&mut a, host.at(100.0)));
    assert_eq!(host.commands.len(), commands, "no renewal");
    assert!(host
        .events
        .iter()
        .any(|(at, e)| *at == deadline && matches!(e, LifeEvent::Lost(_))));
    // A renewal asked for by hand is refused once lost.
    assert!(a.renew_now().is_err());
}

/// `idle_until` says when the machine next has work without a request, and the machine agrees:
/// just before, a poll only waits until then; at it, the renewal goes out.
#[test]
fn idle_until_says_when_the_machine_next_has_work() {
    for keep_alive in [true, false] {
        let mut host = Host::new();
        let mut a = life(Strategy::UniqueInsert, "a", Wait::TryOnce, keep_alive);
        assert_eq!(
            a.idle_until(),
            Some(Instant::ZERO),
            "an acquisition has work"
        );
        assert!(!host.run(&mut a, host.now));
        assert!(granted(&host));
        let lease = a.lease().expect("held").clone();
        if keep_alive {
            let due = a.idle_until().expect("a renewal falls due");
            assert_eq!(due, lease.renew_at());
            let just_before = due.saturating_sub(Duration::from_nanos(1));
            assert!(matches!(a.poll(just_before), LifePoll::WaitUntil(t) if t == due));
            assert_eq!(a.idle_until(), Some(due), "polling early changed nothing");
            host.now = due;
            let LifePoll::Execute(id, renewal) = a.poll(due) else {
                panic!("the renewal is due");
            };
            assert_eq!(
                a.idle_until(),
                Some(Instant::ZERO),
                "a command is outstanding"
            );
            let reply = host.execute(&renewal);
            a.handle(id, reply);
            assert_eq!(a.idle_until(), Some(Instant::ZERO), "an event to take");
            assert!(!host.run(&mut a, due));
            assert_eq!(host.count(|e| matches!(e, LifeEvent::Renewed(_))), 1);
            assert!(a.idle_until().expect("the next renewal") > due);
        } else {
            assert_eq!(a.idle_until(), None, "only a request gives it work");
        }
        a.renew_now().expect("held");
        assert_eq!(a.idle_until(), Some(Instant::ZERO), "a renewal asked for");
        assert!(!host.run(&mut a, host.now));
        a.release(Vec::new()).expect("release");
        assert_eq!(a.idle_until(), Some(Instant::ZERO), "a release asked for");
        assert!(host.run(&mut a, Instant::MAX));
        assert_eq!(a.idle_until(), None, "over");
    }
}

#[test]
fn renew_now_renews_at_once() {
    let mut host = Host::new();
    let mut a = life(Strategy::Bakery, "a", Wait::TryOnce, false);
    assert!(!host.run(&mut a, host.now));
    host.now = host.at(5.0);
    a.renew_now().expect("held");
    assert!(!host.run(&mut a, host.now));
    assert_eq!(host.count(|e| matches!(e, LifeEvent::Renewed(_))), 1);
}

/// B waits for A's lock; cancelled in its backoff, it removes its cell (bakery: its ticket) and
/// ends with `Cancelled`; A is untouched.
#[test]
fn cancellation_mid_wait_removes_the_waiters_cell() {
    for strategy in [
        Strategy::Bakery,
        Strategy::UniqueInsert,
        Strategy::ColumnPrefix,
    ] {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::TryOnce, true);
        assert!(!host.run(&mut a, host.now));
        let mut b = life(strategy, "b", Wait::Timeout(Duration::from_secs(30)), true);
        assert!(!host.run(&mut b, host.at(0.5)));
        assert_eq!(b.status(host.now), LifeStatus::Acquiring);
        b.cancel();
        assert!(host.run(&mut b, Instant::MAX));
        assert_eq!(host.last_event(), &LifeEvent::Cancelled, "{strategy}");
        assert_eq!(b.status(host.now), LifeStatus::Cancelled);
        let cells = host.cells();
        assert_eq!(
            cells.len(),
            1,
            "{strategy}: only A's cell is left: {cells:?}"
        );
        assert!(matches!(a.status(host.now), LifeStatus::Held(_)));
    }
}

/// A command of the acquisition is outstanding when it is cancelled, and the store applies it
/// only after the cancellation: the machine waits for its reply before it sends the cleanup,
/// so the cleanup cannot overtake the write it removes, and no cell of ours is left.
#[test]
fn cancellation_mid_acquire_waits_for_the_outstanding_reply_then_cleans_up() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::TryOnce, true);
        let LifePoll::Execute(first_id, first) = a.poll(host.now) else {
            panic!("{strategy}: the acquisition starts with a command")
        };
        a.cancel();
        assert_eq!(
            a.poll(host.now),
            LifePoll::WaitUntil(Instant::MAX),
            "{strategy}: the cleanup waits for the command on its way"
        );
        // The store applies it only now, and its reply comes.
        let late_reply = host.execute(&first);
        a.handle(first_id, late_reply);
        let LifePoll::Execute(cleanup_id, cleanup) = a.poll(host.now) else {
            panic!("{strategy}: the cleanup is sent once the reply is in")
        };
        let reply = host.execute(&cleanup);
        a.handle(cleanup_id, reply);
        assert!(host.run(&mut a, Instant::MAX));
        assert_eq!(host.last_event(), &LifeEvent::Cancelled, "{strategy}");
        assert!(host.cells().is_empty(), "{strategy}: {:?}", host.cells());
        assert_ne!(first_id, cleanup_id);
    }
}

/// A host that dropped the command on its way (a cancelled future) says so: the cleanup goes
/// at once, and a late reply to the dropped command is ignored.
#[test]
fn cancellation_with_a_dropped_command_cleans_up_at_once() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::TryOnce, true);
        let LifePoll::Execute(first_id, first) = a.poll(host.now) else {
            panic!("{strategy}: the acquisition starts with a command")
        };
        let applied = host.execute(&first);
        a.cancel();
        a.forget_outstanding();
        let LifePoll::Execute(cleanup_id, cleanup) = a.poll(host.now) else {
            panic!("{strategy}: the cleanup is sent at once")
        };
        a.handle(first_id, applied);
        let reply = host.execute(&cleanup);
        a.handle(cleanup_id, reply);
        assert!(host.run(&mut a, Instant::MAX));
        assert_eq!(host.last_event(), &LifeEvent::Cancelled, "{strategy}");
        assert!(host.cells().is_empty(), "{strategy}: {:?}", host.cells());
    }
}

/// Cancelling before anything was sent, or after the life ended, is harmless.
#[test]
fn cancellation_before_the_first_command_or_after_the_end_is_harmless() {
    let mut host = Host::new();
    let mut a = life(Strategy::UniqueInsert, "a", Wait::TryOnce, true);
    a.cancel();
    assert!(host.run(&mut a, Instant::MAX));
    assert_eq!(host.events.len(), 1);
    assert!(host.commands.is_empty());
    a.cancel();
    assert_eq!(a.poll(host.now), LifePoll::Done);
}

/// A waiter woken by a change retries at once instead of at the end of its backoff.
#[test]
fn a_wake_makes_a_waiter_retry_at_once() {
    let mut host = Host::new();
    let mut a = life(Strategy::UniqueInsert, "a", Wait::TryOnce, true);
    assert!(!host.run(&mut a, host.now));
    let mut b = life(
        Strategy::UniqueInsert,
        "b",
        Wait::Timeout(Duration::from_secs(30)),
        true,
    );
    let LifePoll::Execute(id, command) = b.poll(host.now) else {
        panic!("B tries")
    };
    let reply = host.execute(&command);
    b.handle(id, reply);
    let LifePoll::WaitUntil(backoff_end) = b.poll(host.now) else {
        panic!("B backs off")
    };
    assert!(backoff_end > host.now);
    a.release(Vec::new()).expect("release");
    assert!(host.run(&mut a, Instant::MAX));
    b.wake();
    assert!(
        !host.run(&mut b, host.now),
        "B acquires without the clock moving"
    );
    assert!(granted(&host));
    let _ = CommandId(0);
}

/// Holds a lock by `strategy`, asks for its release elsewhere, and runs that release in the
/// "transaction" if it `committed`: the host, the life, and what the event handed over.
fn released_elsewhere(strategy: Strategy, committed: bool) -> (Host, LockLife, Option<String>) {
    let mut host = Host::new();
    let mut a = life(strategy, "a", Wait::TryOnce, true);
    assert!(!host.run(&mut a, host.now));
    let lost = released_elsewhere_here(&mut host, &mut a, committed);
    (host, a, lost)
}

/// Asks `a` for its release elsewhere and runs it if `committed`; the loss handed over with
/// the lease, as text.
fn released_elsewhere_here(host: &mut Host, a: &mut LockLife, committed: bool) -> Option<String> {
    a.release_elsewhere().expect("held");
    assert!(!host.run(a, host.now));
    let Some((_, LifeEvent::ReleaseElsewhere { lease, lost })) = host.events.last().cloned() else {
        panic!("the lease to release elsewhere: {:?}", host.events)
    };
    assert_eq!(a.status(host.now), LifeStatus::Released);
    if committed {
        host.drive(baton_kernel::Release::new(&lease))
            .expect("released in the transaction");
    }
    lost.map(|e| e.to_string())
}

/// `a`'s release here, and its outcome.
fn release_here(host: &mut Host, a: &mut LockLife) -> LifeEvent {
    a.release(Vec::new()).expect("the release due here");
    assert!(host.run(a, Instant::MAX));
    host.last_event().clone()
}

fn is_lost(event: &LifeEvent) -> bool {
    matches!(event, LifeEvent::Released(Err(e)) if e.kind() == ErrorKind::Lost)
}

/// A release run elsewhere (the caller's transaction): renewals stop; after it committed, the
/// release still due here finds nothing and says `Ok`; after a rollback it releases the lock.
#[test]
fn a_release_elsewhere_then_the_one_due_here() {
    // Within the lease's 60 s: whether the transaction committed (the cell found gone, the
    // counter at our grant) or rolled back (the cell still there, removed now), `Ok`.
    for committed in [true, false] {
        let (mut host, mut a, lost) = released_elsewhere(Strategy::UniqueInsert, committed);
        assert_eq!(lost, None);
        let commands = host.commands.len();
        assert!(!host.run(&mut a, host.at(50.0)));
        assert_eq!(
            host.commands.len(),
            commands,
            "no renewal after a release elsewhere (one was due at 20 s)"
        );
        assert_eq!(
            release_here(&mut host, &mut a),
            LifeEvent::Released(Ok(())),
            "committed: {committed}"
        );
        assert!(host.cells().is_empty());
    }
}

/// A release elsewhere that may have rolled back leaves the lease unrenewed: a release here
/// after its deadline cannot tell a commit from an expiry, and reports the loss either way
/// (an expired lease may have let someone in; "Ok" would promise it did not).
#[test]
fn a_release_after_a_release_elsewhere_and_the_deadline_reports_the_loss() {
    for committed in [true, false] {
        let (mut host, mut a, _) = released_elsewhere(Strategy::Bakery, committed);
        assert!(!host.run(&mut a, host.at(100.0)));
        let outcome = release_here(&mut host, &mut a);
        assert!(is_lost(&outcome), "committed: {committed}: {outcome:?}");
    }
}

/// A loss known before a release elsewhere is reported by the release here too, whatever it
/// finds (here: the transaction rolled back, and an operator's forced release took the cell).
#[test]
fn a_loss_known_before_a_release_elsewhere_is_reported_again() {
    let mut host = Host::new();
    let mut a = life(Strategy::ColumnPrefix, "a", Wait::TryOnce, true);
    assert!(!host.run(&mut a, host.now));
    let force = ForceRelease::new(
        LockName::new(NAME).expect("name"),
        &opts(Strategy::ColumnPrefix, Wait::TryOnce),
    );
    host.drive(force).expect("forced");
    a.renew_now().expect("held");
    assert!(!host.run(&mut a, host.at(1.0)));
    assert!(
        matches!(host.last_event(), LifeEvent::Lost(_)),
        "{:?}",
        host.last_event()
    );
    let lost = released_elsewhere_here(&mut host, &mut a, false);
    assert!(lost.is_some(), "the loss handed over with the lease");
    let outcome = release_here(&mut host, &mut a);
    assert!(is_lost(&outcome), "{outcome:?}");
}

/// A store that goes down under a short lease: the renewal retries with backoff, the lease is
/// lost at its deadline while a retry is pending, and the machine then waits for that retry's
/// timer, never for an instant already past (which would make its host spin).
#[test]
fn a_loss_during_a_renewal_backoff_waits_for_the_backoff_not_the_past() {
    let mut host = Host::new();
    let owner = OwnerId::new("a", 1, 1).expect("owner");
    let mut o = opts(Strategy::Bakery, Wait::TryOnce);
    o.ttl = Duration::from_millis(100);
    o.store_attempts = 50;
    let acquire = Acquire::new(LockName::new(NAME).expect("name"), owner, o).expect("options");
    let mut a = LockLife::new(acquire, true);
    assert!(!host.run(&mut a, host.now));
    host.fault = Some(Box::new(|_, _| {
        Some(Reply::Failed(Failure::Unavailable("down".into())))
    }));
    assert!(!host.run(&mut a, host.at(2.0)));
    assert_eq!(host.count(|e| matches!(e, LifeEvent::Lost(_))), 1);
}

/// A holder's `check`, the same in every host: `Ok` while held, the loss past the deadline
/// (before any poll) and after a loss, `NotOwner` once released, even a lease lost first.
#[test]
fn check_answers_held_lost_then_released() {
    let mut host = Host::new();
    let mut a = life(Strategy::UniqueInsert, "a", Wait::TryOnce, false);
    assert!(a.wants_changes(), "an acquisition listens for changes");
    assert_eq!(
        a.check(host.now, NAME).expect_err("not granted yet").kind(),
        ErrorKind::NotOwner
    );
    assert!(!host.run(&mut a, host.now));
    assert!(granted(&host));
    assert!(!a.wants_changes(), "a held lock does not");
    a.check(host.now, NAME).expect("held");
    let deadline = a.lease().expect("held").deadline();
    let lost = a.check(deadline, NAME).expect_err("its deadline passed");
    assert_eq!(lost.kind(), ErrorKind::Lost, "{lost}");
    assert_eq!(lost.lock(), Some(NAME));
    assert!(!host.run(&mut a, host.at(100.0)));
    assert_eq!(
        a.check(host.now, NAME).expect_err("lost").kind(),
        ErrorKind::Lost
    );
    a.release(Vec::new())
        .expect("a lost lease is still released");
    assert!(host.run(&mut a, host.now));
    let released = a.check(host.now, NAME).expect_err("released");
    assert_eq!(released.kind(), ErrorKind::NotOwner, "{released}");
    assert_eq!(released.lock(), Some(NAME));
    assert!(released.message().contains(NAME), "{released}");
}

/// A store that stops answering does not keep a caller who gave a timeout past it: at the end
/// of the wait the acquisition gives up (`GaveUp`, `StoreUnavailable`, at once), and the cleanup
/// of what its command may have written goes once that command's reply is in; nothing is left,
/// and no other event follows.
#[test]
fn a_silent_store_ends_the_wait_at_its_timeout_then_the_cleanup_goes() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let start = host.now;
        let mut a = life(strategy, "a", Wait::Timeout(Duration::from_secs(2)), true);
        let LifePoll::Execute(first_id, first) = a.poll(start) else {
            panic!("{strategy}: the acquisition starts with a command")
        };
        let deadline = host.at(2.0);
        assert_eq!(
            a.poll(host.at(1.0)),
            LifePoll::WaitUntil(deadline),
            "{strategy}: with a command on its way, the machine wakes at the end of the wait"
        );
        let LifePoll::Event(LifeEvent::GaveUp(e)) = a.poll(deadline) else {
            panic!("{strategy}: the wait ends at its deadline")
        };
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
        assert!(e.message().contains("did not answer"), "{strategy}: {e}");
        assert!(matches!(a.status(deadline), LifeStatus::Failed(_)));
        assert_eq!(
            a.poll(deadline),
            LifePoll::WaitUntil(Instant::MAX),
            "{strategy}: the cleanup waits for the command on its way"
        );
        // The store wakes up and applies the command now: the reply is ignored (no grant),
        // and the cleanup removes what it wrote.
        host.now = host.at(5.0);
        let late = host.execute(&first);
        a.handle(first_id, late);
        let LifePoll::Execute(cleanup_id, cleanup) = a.poll(host.now) else {
            panic!("{strategy}: the cleanup goes once the reply is in")
        };
        let reply = host.execute(&cleanup);
        a.handle(cleanup_id, reply);
        assert!(host.run(&mut a, Instant::MAX));
        assert!(host.events.is_empty(), "{strategy}: {:?}", host.events);
        assert!(host.cells().is_empty(), "{strategy}: {:?}", host.cells());
    }
}

/// A command sent at the end of the wait, or by an acquisition with a zero timeout, is waited
/// for (its host's command timeout bounds it): a zero timeout still makes its one attempt.
#[test]
fn a_zero_timeout_waits_for_its_attempt() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut a = life(strategy, "a", Wait::Timeout(Duration::ZERO), true);
        let LifePoll::Execute(id, command) = a.poll(host.now) else {
            panic!("{strategy}: the acquisition starts with a command")
        };
        assert_eq!(a.poll(host.at(0.5)), LifePoll::WaitUntil(Instant::MAX));
        host.now = host.at(0.5);
        let reply = host.execute(&command);
        a.handle(id, reply);
        assert!(!host.run(&mut a, host.at(1.0)));
        assert!(granted(&host), "{strategy}: {:?}", host.events);
    }
}

/// Store failures are not retried past the end of the wait: the acquisition fails then, not
/// after its store attempts.
#[test]
fn store_failures_are_not_retried_past_the_wait() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        host.fault = Some(Box::new(|_, _| {
            Some(Reply::Failed(Failure::Unavailable("no replica".into())))
        }));
        let mut a = life(
            strategy,
            "a",
            Wait::Timeout(Duration::from_millis(30)),
            true,
        );
        assert!(host.run(&mut a, host.at(10.0)), "{strategy}");
        let LifeEvent::Failed(e) = host.last_event() else {
            panic!("{strategy}: {:?}", host.events)
        };
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{strategy}: {e}");
        let ended = host.events.last().expect("an event").0;
        assert!(
            ended < host.at(0.030),
            "{strategy}: ended at {ended:?}: {e}"
        );
    }
}

/// A wait that ends between attempts names the holder its last attempt found, whatever the
/// strategy.
#[test]
fn a_timed_out_wait_names_the_holder() {
    for strategy in Strategy::ALL {
        let mut host = Host::new();
        let mut holder = life(strategy, "holder", Wait::TryOnce, true);
        assert!(!host.run(&mut holder, host.now));
        let owner = host
            .events
            .iter()
            .find_map(|(_, e)| match e {
                LifeEvent::Granted(g) => Some(g.lease.owner().key()),
                _ => None,
            })
            .expect("granted");
        host.events.clear();
        let mut waiter = life(
            strategy,
            "waiter",
            Wait::Timeout(Duration::from_secs(1)),
            true,
        );
        // Woken late by its host, as timers are: past the end of the wait.
        let mut woken = false;
        for _ in 0..10_000 {
            match waiter.poll(host.now) {
                LifePoll::Execute(id, command) => {
                    let reply = host.execute(&command);
                    waiter.handle(id, reply);
                }
                LifePoll::Event(event) => {
                    host.events.push((host.now, event));
                    break;
                }
                LifePoll::WaitUntil(t) => {
                    host.now = t.saturating_add(Duration::from_millis(3));
                    woken = true;
                }
                LifePoll::Done => break,
            }
        }
        assert!(woken);
        let Some((_, LifeEvent::Failed(e))) = host.events.last() else {
            panic!("{strategy}: {:?}", host.events)
        };
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{strategy}: {e}");
        assert_eq!(e.holder(), Some(owner.as_str()), "{strategy}: {e}");
    }
}

/// A store that answers every command after `latency` (the reply is computed when it is due),
/// while the life is polled at every instant it asks for meanwhile, as real hosts do.
fn run_with_latency(host: &mut Host, life: &mut LockLife, latency: Duration, until: Instant) {
    let mut pending: Option<(CommandId, Command, Instant)> = None;
    for _ in 0..100_000 {
        match life.poll(host.now) {
            LifePoll::Execute(id, command) => {
                pending = Some((id, command, host.now.saturating_add(latency)))
            }
            LifePoll::Event(event) => host.events.push((host.now, event)),
            LifePoll::WaitUntil(t) => match pending.take() {
                Some((id, command, due)) if due <= t => {
                    host.now = due;
                    let reply = host.execute(&command);
                    life.handle(id, reply);
                }
                other => {
                    pending = other;
                    if t > until {
                        return;
                    }
                    host.now = t;
                }
            },
            LifePoll::Done => return,
        }
    }
    panic!("the life did not settle");
}

/// A store that answers, slowly, a command sent just before the end of the wait: the attempt
/// completes (the wait ends `TimedOut`, naming the holder), it is not given up on as if the
/// store were silent.
#[test]
fn a_store_that_answers_at_the_end_of_the_wait_is_not_taken_for_a_silent_one() {
    for strategy in Strategy::ALL {
        for latency_ms in [1, 7, 40] {
            let latency = Duration::from_millis(latency_ms);
            let mut host = Host::new();
            let mut holder = life(strategy, "holder", Wait::TryOnce, true);
            assert!(!host.run(&mut holder, host.now));
            host.events.clear();
            let mut waiter = life(
                strategy,
                "waiter",
                Wait::Timeout(Duration::from_secs(1)),
                true,
            );
            let start = host.now;
            let until = host.at(30.0);
            run_with_latency(&mut host, &mut waiter, latency, until);
            let Some((at, LifeEvent::Failed(e))) = host.events.first() else {
                panic!("{strategy}, {latency:?}: {:?}", host.events)
            };
            assert_eq!(
                e.kind(),
                ErrorKind::TimedOut,
                "{strategy}, {latency:?}: {e}"
            );
            assert!(e.holder().is_some(), "{strategy}, {latency:?}: {e}");
            let took = at.saturating_duration_since(start);
            assert!(
                took < Duration::from_secs(1) + latency * 8,
                "{strategy}, {latency:?}: ended after {took:?}"
            );
        }
    }
}
