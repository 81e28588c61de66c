//! A small deterministic driver for kernel operations, shared by the integration tests.
//!
//! [`Harness`] owns a [`MemoryTable`] (the store) and one clock (`now`), used both as the
//! clients' monotonic clock and as the store's clock. [`Actor`] wraps one [`Operation`] with a
//! label (`A`, `B`...). The harness drives actors one step at a time, so several operations can
//! interleave at command granularity, and records a transcript: every command sent, every reply,
//! every `WaitUntil`, and the final result, each line stamped with the time it happened.
//!
//! Faults are injected by [`FaultRule`]s: a reply lost after the store applied the command, a
//! store that is unavailable, times out, or rejects. Replies can also be held back and delivered
//! later ([`Harness::send`] / [`Harness::deliver`]).
//!
//! [`scenarios`] holds the transcript scenarios, which the WebAssembly build
//! (`bindings-wasm/transcripts`) compiles too: this module must build for wasm32 without the
//! operating system (only [`assert_transcript`], native tests only, reads the environment).

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::time::Duration;

mod render;
pub mod scenarios;

pub use render::*;

use baton_kernel::{
    Command, CommandId, Error, Failure, Instant, LockName, LockOptions, MemoryTable, Operation,
    OwnerId, Poll, Reply, Strategy,
};

/// The lock name every transcript uses.
pub const NAME: &str = "job";

/// A valid lock name.
pub fn name(s: &str) -> LockName {
    LockName::new(s).expect("test lock names are valid")
}

/// A fixed owner: `host:1:0000000000000001`.
pub fn owner(host: &str) -> OwnerId {
    OwnerId::new(host, 1, 1).expect("test owner hosts are valid")
}

/// Fixed options for `strategy`: default TTL (60 s), wait and retry policy, seed 7, and a
/// `created_unix_ms` that tells owners apart in the transcript (1000 for the first, ...).
pub fn opts(strategy: Strategy, created_unix_ms: u64) -> LockOptions {
    LockOptions {
        strategy,
        created_unix_ms,
        seed: 7,
        ..LockOptions::default()
    }
}

/// The instant `ms` milliseconds after the epoch.
pub fn ms(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

// ---------------------------------------------------------------------------------------------
// Faults

/// What goes wrong with one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The store applies the command, but the reply is lost: the operation gets
    /// `Failed(Timeout)`.
    LoseReply,
    /// The store does not apply it and answers `Failed(Unavailable)`.
    Unavailable,
    /// The store does not apply it and answers `Failed(Timeout)`.
    TimeoutUnapplied,
    /// The store answers `Failed(Rejected)`.
    Reject,
    /// The command is held up on its way (a pooler's queue, a socket buffer): the operation
    /// gets `Failed(Timeout)` now, and the store applies it at [`Harness::apply_late`], with the
    /// stamp it was given when sent.
    Late,
    /// The store applies the command and answers `Failed(Unavailable)` (Cassandra, when a
    /// lightweight transaction's commit round fails after a quorum accepted its proposal).
    UnavailableApplied,
}

/// Which commands a fault hits.
pub type Matcher = fn(&Command) -> bool;

/// Every command.
pub fn any(_: &Command) -> bool {
    true
}

/// Conditional commands (insert-if-absent, compare-and-set).
pub fn conditional(c: &Command) -> bool {
    c.is_conditional()
}

/// Plain puts.
pub fn put(c: &Command) -> bool {
    matches!(c, Command::Put { .. })
}

/// Plain deletes of one's own cell: an acquisition's `Delete`, a release's `Vacate`, and a
/// renewal's batch of one delete (bakery, column prefix).
pub fn delete(c: &Command) -> bool {
    match c {
        Command::Delete { .. } | Command::Vacate { .. } => true,
        Command::Batch { writes, .. } => {
            writes.len() == 1 && matches!(writes[0], baton_kernel::Write::Delete { .. })
        }
        _ => false,
    }
}

/// Removals of a cell: plain deletes, and compare-and-sets to nothing.
pub fn removal(c: &Command) -> bool {
    matches!(
        c,
        Command::Delete { .. }
            | Command::CompareAndSet { new: None, .. }
            | Command::GuardedSet { new: None, .. }
    ) || delete(c)
}

/// Commands on the fencing counter (column `_LOCK_`, every strategy's with the default prefix),
/// unique insert's claims (which move it) included.
pub fn fence(c: &Command) -> bool {
    match c {
        Command::Claim { counter, .. } => counter == "_LOCK_",
        Command::InsertIfAbsent { column, .. } | Command::CompareAndSet { column, .. } => {
            column == "_LOCK_"
        }
        _ => false,
    }
}

/// Conditional commands on the lock cell of unique insert (column `lock`), claims and
/// guarded releases included.
pub fn lock_cell(c: &Command) -> bool {
    match c {
        Command::InsertIfAbsent { column, .. }
        | Command::CompareAndSet { column, .. }
        | Command::Claim { column, .. }
        | Command::GuardedSet { column, .. } => column == "lock",
        _ => false,
    }
}

/// Puts whose value is a bakery ticket.
pub fn ticket_put(c: &Command) -> bool {
    matches!(c, Command::Put { value, .. } if value.starts_with("ticket="))
}

/// A fault for the next `times` commands of `actor` (any actor if `None`) that `matches`
/// (`times` = `None`: forever).
pub struct FaultRule {
    /// Whose commands.
    pub actor: Option<&'static str>,
    /// Which commands.
    pub matches: Matcher,
    /// What happens.
    pub fault: Fault,
    /// How many more times; `None` for ever.
    pub times: Option<u32>,
}

// ---------------------------------------------------------------------------------------------
// Driving

/// One operation being driven, with its label and what it last said.
pub struct Actor<O: Operation> {
    /// Its label in the transcript.
    pub who: &'static str,
    /// The operation.
    pub op: O,
    /// A command sent and not yet answered.
    pending: Option<Pending>,
    /// The last instant it asked to wait until.
    pub waiting: Option<Instant>,
    /// Its result, once ready.
    pub result: Option<Result<O::Output, Error>>,
    /// Commands it sent.
    pub sent: u32,
}

impl<O: Operation> Actor<O> {
    /// Wraps `op`, labelled `who`.
    pub fn new(who: &'static str, op: O) -> Self {
        Actor {
            who,
            op,
            pending: None,
            waiting: None,
            result: None,
            sent: 0,
        }
    }

    /// Its result; panics if it is not finished.
    pub fn result(&self) -> Result<O::Output, Error> {
        self.result
            .clone()
            .unwrap_or_else(|| panic!("{} has not finished", self.who))
    }

    /// Whether it has a command outstanding (applied by the store or not).
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The command it sent that the store has not applied yet.
    pub fn peek(&self) -> Option<&Command> {
        match &self.pending {
            Some(Pending::Command(_, command, _)) => Some(command),
            _ => None,
        }
    }

    /// Whether it has a command outstanding that the store has not applied yet.
    pub fn has_unapplied(&self) -> bool {
        matches!(self.pending, Some(Pending::Command(..)))
    }
}

/// A command in flight.
enum Pending {
    /// Sent at this instant, not yet applied by the store.
    Command(CommandId, Command, Instant),
    /// Applied by the store at this instant; the reply is not yet handed over.
    Reply(CommandId, Reply, Instant),
}

/// What one step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A command was sent (applied and answered at once by [`Harness::step`]; applied with
    /// its reply held by [`Harness::send`]; held unapplied by [`Harness::send_unapplied`]).
    Sent,
    /// A held reply was delivered.
    Delivered,
    /// The operation waits until this instant.
    Wait(Instant),
    /// The operation finished.
    Done,
}

/// The store, the clock and the transcript.
pub struct Harness {
    /// The store.
    pub table: MemoryTable,
    now: Instant,
    lines: Vec<String>,
    faults: Vec<FaultRule>,
    /// Whether to record the transcript (the property test turns it off for speed).
    pub record: bool,
    /// How many commands the store received (applied or not).
    pub commands: u32,
    /// Stamp plain writes in the order they reach the store, not when they were sent (a store
    /// that orders writes by arrival: what every store did before stamps).
    pub arrival_stamps: bool,
    last_stamp: u64,
    /// Commands held by [`Fault::Late`], with their stamps.
    late: Vec<(&'static str, Command, u64)>,
}

impl Default for Harness {
    fn default() -> Self {
        Harness::new()
    }
}

impl Harness {
    /// An empty table at time 0.
    pub fn new() -> Self {
        Harness {
            table: MemoryTable::new(),
            now: Instant::ZERO,
            lines: Vec::new(),
            faults: Vec::new(),
            record: true,
            commands: 0,
            arrival_stamps: false,
            last_stamp: 0,
            late: Vec::new(),
        }
    }

    /// The store applies every command held by [`Fault::Late`] now, in the order they were
    /// sent. Returns how many.
    pub fn apply_late(&mut self) -> usize {
        let late = std::mem::take(&mut self.late);
        for (who, command, stamp) in &late {
            let stamp = self.store_stamp(*stamp);
            let reply = self.table.apply_stamped(command, self.now, stamp);
            if self.record {
                self.log(
                    who,
                    format!(
                        "[late] {} <- {}",
                        render_command(command),
                        render_reply(&reply)
                    ),
                );
            }
        }
        late.len()
    }

    fn stamp(&mut self) -> u64 {
        self.last_stamp += 1;
        self.last_stamp
    }

    /// The stamp a command given `sent` when sent is applied with.
    fn store_stamp(&mut self, sent: u64) -> u64 {
        if self.arrival_stamps {
            self.stamp()
        } else {
            sent
        }
    }

    /// The current instant (client clocks and store clock alike).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.now = self.now.saturating_add(d);
    }

    /// Moves the clock to `t` (never backwards).
    pub fn advance_to(&mut self, t: Instant) {
        assert!(t != Instant::MAX, "cannot advance to the end of time");
        self.now = self.now.max(t);
    }

    /// Adds a line of commentary to the transcript.
    pub fn note(&mut self, text: &str) {
        if self.record {
            self.lines.push(format!("{} -- {text}", at(self.now)));
        }
    }

    /// Injects a fault (see [`FaultRule`]).
    pub fn fault(&mut self, rule: FaultRule) {
        self.faults.push(rule);
    }

    /// Shorthand: `fault` on the next command of `actor` that `matches`.
    pub fn once(&mut self, actor: &'static str, matches: Matcher, fault: Fault) {
        self.fault(FaultRule {
            actor: Some(actor),
            matches,
            fault,
            times: Some(1),
        });
    }

    /// Shorthand: `fault` on every command that `matches`, for ever.
    pub fn always(&mut self, matches: Matcher, fault: Fault) {
        self.fault(FaultRule {
            actor: None,
            matches,
            fault,
            times: None,
        });
    }

    /// Removes every fault rule.
    pub fn heal(&mut self) {
        self.faults.clear();
    }

    /// The transcript so far, one line per event.
    pub fn transcript(&self) -> String {
        self.lines.join("\n")
    }

    /// Forgets the transcript so far.
    pub fn clear_transcript(&mut self) {
        self.lines.clear();
    }

    fn log(&mut self, who: &str, text: String) {
        if self.record {
            self.lines.push(format!("{} {who}: {text}", at(self.now)));
        }
    }

    fn take_fault(&mut self, who: &'static str, command: &Command) -> Option<Fault> {
        let i = self.faults.iter().position(|r| {
            r.actor.is_none_or(|a| a == who) && (r.matches)(command) && r.times != Some(0)
        })?;
        let rule = &mut self.faults[i];
        let fault = rule.fault.clone();
        if let Some(n) = &mut rule.times {
            *n -= 1;
        }
        Some(fault)
    }

    /// Executes `command` for `who` at the store (with faults), returns the reply to give.
    pub fn execute(&mut self, who: &'static str, command: &Command) -> Reply {
        self.execute_sent_at(who, command, self.now)
    }

    fn execute_sent_at(&mut self, who: &'static str, command: &Command, sent: Instant) -> Reply {
        self.commands += 1;
        let stamp = self.stamp();
        if self.record {
            let late = if sent == self.now {
                String::new()
            } else {
                format!(" (sent at {})", at(sent))
            };
            self.log(who, format!("{}{late}", render_command(command)));
        }
        let reply = match self.take_fault(who, command) {
            None => {
                let stamp = self.store_stamp(stamp);
                let reply = self.table.apply_stamped(command, self.now, stamp);
                if self.record {
                    self.log(who, format!("<- {}", render_reply(&reply)));
                }
                reply
            }
            Some(fault @ (Fault::LoseReply | Fault::UnavailableApplied)) => {
                let stamp = self.store_stamp(stamp);
                let applied = self.table.apply_stamped(command, self.now, stamp);
                let reply = Reply::Failed(match fault {
                    Fault::LoseReply => Failure::Timeout("reply lost".into()),
                    _ => Failure::Unavailable("commit round failed".into()),
                });
                if self.record {
                    self.log(
                        who,
                        format!(
                            "<- [store: {}, reply lost] {}",
                            render_reply(&applied),
                            render_reply(&reply)
                        ),
                    );
                }
                reply
            }
            Some(Fault::Late) => {
                self.late.push((who, command.clone(), stamp));
                let reply = Reply::Failed(Failure::Timeout("held up on its way".into()));
                if self.record {
                    self.log(who, format!("<- [store: not yet] {}", render_reply(&reply)));
                }
                reply
            }
            Some(fault) => {
                let reply = Reply::Failed(match fault {
                    Fault::Unavailable => Failure::Unavailable("store down".into()),
                    Fault::TimeoutUnapplied => Failure::Timeout("timed out".into()),
                    _ => Failure::Rejected("permission denied".into()),
                });
                if self.record {
                    self.log(who, format!("<- {}", render_reply(&reply)));
                }
                reply
            }
        };
        reply
    }

    /// Polls `actor` once. A command is executed at the store at once, and its reply is held
    /// (not given to the operation) until [`Harness::deliver`] or the next step.
    pub fn send<O>(&mut self, actor: &mut Actor<O>) -> Step
    where
        O: Operation,
        O::Output: Render,
    {
        self.poll_once(actor, true)
    }

    /// Polls `actor` once. A command is held on its way to the store: the store applies it at
    /// [`Harness::apply`] or [`Harness::deliver`], whichever comes first.
    pub fn send_unapplied<O>(&mut self, actor: &mut Actor<O>) -> Step
    where
        O: Operation,
        O::Output: Render,
    {
        self.poll_once(actor, false)
    }

    /// The store applies `actor`'s command held by [`Harness::send_unapplied`] now; its reply
    /// stays held. Returns whether there was one.
    pub fn apply<O: Operation>(&mut self, actor: &mut Actor<O>) -> bool {
        if !actor.has_unapplied() {
            return false;
        }
        let Some(Pending::Command(id, command, sent)) = actor.pending.take() else {
            unreachable!("checked above")
        };
        let reply = self.execute_sent_at(actor.who, &command, sent);
        actor.pending = Some(Pending::Reply(id, reply, self.now));
        true
    }

    fn poll_once<O>(&mut self, actor: &mut Actor<O>, apply: bool) -> Step
    where
        O: Operation,
        O::Output: Render,
    {
        assert!(
            actor.pending.is_none(),
            "{}: deliver the outstanding reply first",
            actor.who
        );
        if actor.result.is_some() {
            return Step::Done;
        }
        match actor.op.poll(self.now) {
            Poll::Execute(id, command) => {
                actor.sent += 1;
                actor.waiting = None;
                actor.pending = Some(if apply {
                    let reply = self.execute(actor.who, &command);
                    Pending::Reply(id, reply, self.now)
                } else {
                    Pending::Command(id, command, self.now)
                });
                Step::Sent
            }
            Poll::WaitUntil(t) => {
                actor.waiting = Some(t);
                self.log(actor.who, format!("wait until {}", at(t)));
                Step::Wait(t)
            }
            Poll::Ready(result) => {
                self.log(actor.who, format!("=> {}", render_result(&result)));
                actor.result = Some(result);
                Step::Done
            }
        }
    }

    /// Hands `actor` the reply to its outstanding command (applying the command first if the
    /// store has not yet). Returns whether there was one.
    pub fn deliver<O: Operation>(&mut self, actor: &mut Actor<O>) -> bool {
        self.apply(actor);
        let Some(Pending::Reply(id, reply, applied_at)) = actor.pending.take() else {
            return false;
        };
        if applied_at != self.now {
            self.log(actor.who, "(reply delivered)".into());
        }
        actor.op.handle(id, reply);
        true
    }

    /// Delivers a held reply if there is one, otherwise polls once and delivers at once.
    pub fn step<O>(&mut self, actor: &mut Actor<O>) -> Step
    where
        O: Operation,
        O::Output: Render,
    {
        if self.deliver(actor) {
            return Step::Delivered;
        }
        let step = self.send(actor);
        if step == Step::Sent {
            self.deliver(actor);
        }
        step
    }

    /// Steps `actor` until it waits or finishes, without moving the clock.
    pub fn run<O>(&mut self, actor: &mut Actor<O>) -> Step
    where
        O: Operation,
        O::Output: Render,
    {
        for _ in 0..10_000 {
            match self.step(actor) {
                Step::Sent | Step::Delivered => {}
                other => return other,
            }
        }
        panic!("{} did not settle in 10000 steps", actor.who)
    }

    /// Runs `actor`, moving the clock to each instant it waits for as long as that instant is
    /// before `until`; returns when it waits for `until` or later (the clock is left where it
    /// was), or when it finishes.
    pub fn run_until<O>(&mut self, actor: &mut Actor<O>, until: Instant) -> Step
    where
        O: Operation,
        O::Output: Render,
    {
        for _ in 0..10_000 {
            match self.run(actor) {
                Step::Wait(t) if t < until => self.advance_to(t),
                other => return other,
            }
        }
        panic!(
            "{} did not reach {} after 10000 waits",
            actor.who,
            at(until)
        )
    }

    /// Runs `actor` to completion, moving the clock to each instant it waits for.
    pub fn finish<O>(&mut self, actor: &mut Actor<O>) -> Result<O::Output, Error>
    where
        O: Operation,
        O::Output: Render,
    {
        for _ in 0..10_000 {
            match self.run(actor) {
                Step::Done => return actor.result(),
                Step::Wait(t) => {
                    assert!(t != Instant::MAX, "{} waits for ever", actor.who);
                    self.advance_to(t);
                }
                Step::Sent | Step::Delivered => unreachable!("run returns only waits and ends"),
            }
        }
        panic!("{} did not finish after 10000 waits", actor.who)
    }
}

/// Runs `op` to completion against `h`, labelled `who`, and returns its result.
pub fn drive<O>(h: &mut Harness, who: &'static str, op: O) -> Result<O::Output, Error>
where
    O: Operation,
    O::Output: Render,
{
    let mut actor = Actor::new(who, op);
    h.finish(&mut actor)
}

/// Removes the common indentation of a multi-line literal and its first and last blank lines.
pub fn dedent(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let body = &lines[start..end.max(start)];
    let indent = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    body.iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts the transcript is exactly `expected` (indentation ignored), printing both and the
/// first differing line otherwise. With `BLESS=<dir>` in the environment, writes the actual
/// transcript to `<dir>/<test name>.txt` instead of comparing, to read it and paste it into the
/// test. Native tests only: the WebAssembly build of the scenarios has no environment or files.
#[cfg(not(target_arch = "wasm32"))]
#[track_caller]
pub fn assert_transcript(h: &Harness, expected: &str) {
    let actual = h.transcript();
    let expected = dedent(expected);
    if let Some(dir) = std::env::var_os("BLESS") {
        // The test's own name, without its module's (`transcripts::`).
        let thread = std::thread::current();
        let test = thread
            .name()
            .and_then(|name| name.rsplit("::").next())
            .unwrap_or("transcript");
        let path = std::path::Path::new(&dir).join(format!("{test}.txt"));
        std::fs::create_dir_all(&dir).expect("BLESS directory");
        std::fs::write(&path, format!("{actual}\n")).expect("write the transcript");
        return;
    }
    if actual == expected {
        return;
    }
    let a: Vec<&str> = actual.lines().collect();
    let e: Vec<&str> = expected.lines().collect();
    let first = (0..a.len().max(e.len()))
        .find(|&i| a.get(i) != e.get(i))
        .unwrap_or(0);
    panic!(
        "transcript differs at line {}:\n  expected: {}\n  actual:   {}\n\n---- expected ----\n{expected}\n---- actual ----\n{actual}\n",
        first + 1,
        e.get(first).unwrap_or(&"<end>"),
        a.get(first).unwrap_or(&"<end>"),
    );
}
