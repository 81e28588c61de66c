//! The one outstanding command of an operation: sending, store retries, and settling
//! ambiguous outcomes by reading back.

use alloc::format;
use alloc::string::String;

use super::CommandId;
use crate::error::{Error, ErrorKind, Result};
use crate::model::{ColumnFilter, Command, Failure, ReadConsistency, Reply};
use crate::retry::{RetryPolicy, SplitMix64};
use crate::time::Instant;

/// What the driver must do for the I/O layer: send a command, or wait.
pub(crate) enum Outbound {
    /// Send this command.
    Send(CommandId, Command),
    /// Wait until this instant (a scheduled retry), or for a reply ([`Instant::MAX`]).
    Wait(Instant),
}

impl<T> From<Outbound> for super::Poll<T> {
    fn from(out: Outbound) -> Self {
        match out {
            Outbound::Send(id, command) => super::Poll::Execute(id, command),
            Outbound::Wait(t) => super::Poll::WaitUntil(t),
        }
    }
}

/// What the I/O layer wants.
pub(crate) enum IoPoll {
    /// The driver has something to do: pass it on as the operation's [`Poll`](super::Poll).
    Out(Outbound),
    /// Nothing queued or outstanding.
    Idle,
    /// The settled outcome of the last command, and when its first attempt was sent.
    Done(Result<Reply>, Instant),
}

struct Request {
    command: Command,
    /// Some attempt timed out: the command may have been applied.
    timed_out: bool,
    /// While settling a timed-out conditional command: the serial read of its cell.
    resolving: Option<Command>,
    first_sent: Option<Instant>,
    attempts: u32,
}

enum State {
    Idle,
    Queued {
        req: Request,
        not_before: Instant,
    },
    InFlight {
        req: Request,
        id: CommandId,
        reply: Option<Reply>,
    },
}

/// Sends one command at a time and turns store failures into retries or errors.
///
/// - `Unavailable` (not applied): the same command is sent again after a backoff, up to
///   `attempts` sends in all, then the operation gets [`ErrorKind::StoreUnavailable`].
/// - `Timeout` on a plain command: sent again (plain writes of our own cells are idempotent).
/// - `Timeout` on a conditional command: the cell is read at serial consistency. If it holds
///   the value the command would have written, the command was applied; if it still holds the
///   value the command expected, it was not, and the command is sent again; otherwise the
///   operation sees "not applied" with the value found, and [`Io::maybe_applied`] stays true
///   (a conditional delete whose cell is found gone may have been applied, or the cell removed
///   by someone else: the operation settles that). Unsettled after `attempts` sends:
///   [`ErrorKind::Ambiguous`].
/// - `Unavailable` on a conditional command: sent again like any `Unavailable`, but
///   [`Io::maybe_applied`] becomes true (Cassandra answers `Unavailable` for a proposal a quorum
///   may have accepted; the next round completes it).
/// - `Rejected`: [`ErrorKind::StoreError`] at once.
/// - A `Scan` sent again asks for half as many rows, down to [`SCAN_LIMIT_FLOOR`].
///
/// The send time reported with an outcome is that of the *first* attempt, which is the
/// conservative one for lease deadlines: whichever attempt was applied, it was sent no earlier.
pub(crate) struct Io {
    next_id: u64,
    attempts: u32,
    backoff: RetryPolicy,
    state: State,
    maybe_applied: bool,
    /// A send of the current command timed out (or, conditional, was answered `Unavailable`)
    /// at some point: see [`Io::may_land`].
    may_land: bool,
    /// No retry (a resend, or a serial read settling a timed-out send) is made at or after this
    /// instant: the operation's caller stops waiting then ([`Io::stop_retrying_at`]).
    retry_until: Instant,
}

impl Io {
    pub fn new(attempts: u32, backoff: RetryPolicy) -> Self {
        Io {
            next_id: 0,
            attempts: attempts.max(1),
            backoff,
            state: State::Idle,
            maybe_applied: false,
            may_land: false,
            retry_until: Instant::MAX,
        }
    }

    /// Makes no retry at or after `until`: a failure whose retry would come later ends the
    /// command at once, as if its attempts were used up ([`ErrorKind::StoreUnavailable`], or
    /// [`ErrorKind::Ambiguous`] for a conditional command whose timed-out send could not be
    /// settled). An acquisition whose wait ends at `until` uses this, so that a failing store
    /// costs it no more than its wait.
    pub fn stop_retrying_at(&mut self, until: Instant) {
        self.retry_until = until;
    }

    /// Queues `command` to be sent at the next poll. Replaces anything queued or outstanding.
    pub fn send(&mut self, command: Command) {
        let req = Request {
            command,
            timed_out: false,
            resolving: None,
            first_sent: None,
            attempts: 0,
        };
        self.maybe_applied = false;
        self.may_land = false;
        self.state = State::Queued {
            req,
            not_before: Instant::ZERO,
        };
    }

    /// Whether a send of the last command timed out (or, a conditional one, was answered
    /// `Unavailable`) at some point, even one that a serial read then showed not applied yet:
    /// a copy of it may still be on its way (a pooler's queue, a socket buffer, a Paxos
    /// proposal a later round completes), and apply after the outcome. [`Io::maybe_applied`]
    /// answers for the past; this, for the future too.
    pub fn may_land(&self) -> bool {
        self.may_land
    }

    /// Whether the last command that failed may nevertheless have been applied (one of its sends
    /// timed out).
    pub fn maybe_applied(&self) -> bool {
        self.maybe_applied
    }

    /// Whether a command is queued or outstanding.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
    }

    pub fn handle(&mut self, id: CommandId, reply: Reply) {
        if let State::InFlight {
            id: want,
            reply: slot,
            ..
        } = &mut self.state
        {
            if *want == id && slot.is_none() {
                *slot = Some(reply);
            }
        }
    }

    pub fn poll(&mut self, now: Instant, rng: &mut SplitMix64) -> IoPoll {
        loop {
            match core::mem::replace(&mut self.state, State::Idle) {
                State::Idle => return IoPoll::Idle,
                State::Queued { req, not_before } if now < not_before => {
                    self.state = State::Queued { req, not_before };
                    return IoPoll::Out(Outbound::Wait(not_before));
                }
                State::Queued { mut req, .. } => {
                    let id = CommandId(self.next_id);
                    self.next_id += 1;
                    let command = match &req.resolving {
                        Some(read) => read.clone(),
                        None => {
                            req.first_sent.get_or_insert(now);
                            req.attempts += 1;
                            req.command.clone()
                        }
                    };
                    self.state = State::InFlight {
                        req,
                        id,
                        reply: None,
                    };
                    return IoPoll::Out(Outbound::Send(id, command));
                }
                State::InFlight {
                    req,
                    id,
                    reply: None,
                } => {
                    self.state = State::InFlight {
                        req,
                        id,
                        reply: None,
                    };
                    return IoPoll::Out(Outbound::Wait(Instant::MAX));
                }
                State::InFlight {
                    req,
                    reply: Some(reply),
                    ..
                } => {
                    if let Some(done) = self.settle(req, reply, now, rng) {
                        return done;
                    }
                }
            }
        }
    }

    /// Interprets a reply; `None` means something was queued again.
    fn settle(
        &mut self,
        mut req: Request,
        reply: Reply,
        now: Instant,
        rng: &mut SplitMix64,
    ) -> Option<IoPoll> {
        let sent = req.first_sent.unwrap_or(now);
        if req.resolving.is_none() {
            match &reply {
                Reply::Failed(Failure::Timeout(_)) => req.timed_out = true,
                // Cassandra answers `Unavailable` for a proposal that a quorum accepted before
                // the commit round failed; the next Paxos round completes it. Resending is
                // right, but the outcome must be read as "maybe applied".
                Reply::Failed(Failure::Unavailable(_)) if req.command.is_conditional() => {
                    req.timed_out = true
                }
                _ => {}
            }
        }
        self.maybe_applied = req.timed_out;
        self.may_land |= req.timed_out;
        let failure = match reply {
            Reply::Failed(f) => f,
            Reply::Cells(cells) if req.resolving.is_some() => {
                req.resolving = None;
                let Some(reply) = settled(&req.command, cells) else {
                    // The serial read settled it: the timed-out send was not applied.
                    req.timed_out = false;
                    self.maybe_applied = false;
                    // Not applied (or indistinguishable from not applied): send it again. Giving
                    // up here is not ambiguous: the read showed it had not taken effect.
                    return self.retry(
                        req,
                        now,
                        rng,
                        ErrorKind::StoreUnavailable,
                        "it timed out and a serial read showed it had not been applied",
                    );
                };
                return Some(IoPoll::Done(Ok(reply), sent));
            }
            other => return Some(IoPoll::Done(Ok(other), sent)),
        };
        match failure {
            Failure::Rejected(message) => Some(IoPoll::Done(
                Err(Error::new(
                    ErrorKind::StoreError,
                    store_message(&req.command, &message),
                )),
                sent,
            )),
            Failure::Timeout(_) if req.command.is_conditional() && req.resolving.is_none() => {
                // Settle it: a serial read of the cell.
                let filter = match &req.command {
                    // Two cells: the lock and its counter (or guard).
                    Command::Claim { .. }
                    | Command::GuardedSet { .. }
                    | Command::SetObject { .. } => ColumnFilter::All,
                    _ => ColumnFilter::Exact(cell_of(&req.command)),
                };
                let read = Command::Read {
                    row: req.command.row().unwrap_or_default().into(),
                    filter,
                    consistency: ReadConsistency::Serial(serial_of(&req.command)),
                };
                req.resolving = Some(read);
                let delay = self.backoff.delay(req.attempts.saturating_sub(1), rng);
                let not_before = now.saturating_add(delay);
                if not_before >= self.retry_until {
                    let why = "it timed out, and the wait ended before a serial read could settle whether it was applied";
                    let e = Error::new(ErrorKind::Ambiguous, ambiguous_message(&req.command, why));
                    return Some(IoPoll::Done(Err(e), sent));
                }
                self.state = State::Queued { req, not_before };
                None
            }
            Failure::Timeout(message)
            | Failure::Unavailable(message)
            | Failure::NotApplied(message) => {
                let kind = if req.resolving.is_some() {
                    ErrorKind::Ambiguous
                } else {
                    ErrorKind::StoreUnavailable
                };
                if req.resolving.is_some() {
                    // The settling read failed; read again, counting it as an attempt, and give up
                    // (ambiguous) once the attempts are used.
                    if req.attempts < self.attempts {
                        req.attempts += 1;
                        let delay = self.backoff.delay(req.attempts, rng);
                        let not_before = now.saturating_add(delay);
                        if not_before < self.retry_until {
                            self.state = State::Queued { req, not_before };
                            return None;
                        }
                    }
                    let e = Error::new(kind, ambiguous_message(&req.command, &message));
                    return Some(IoPoll::Done(Err(e), sent));
                }
                self.retry(req, now, rng, kind, &message)
            }
        }
    }

    fn retry(
        &mut self,
        mut req: Request,
        now: Instant,
        rng: &mut SplitMix64,
        kind: ErrorKind,
        why: &str,
    ) -> Option<IoPoll> {
        let used_up = req.attempts >= self.attempts;
        if !used_up {
            smaller_scan(&mut req.command);
            let delay = self.backoff.delay(req.attempts.saturating_sub(1), rng);
            let not_before = now.saturating_add(delay);
            if not_before < self.retry_until {
                self.state = State::Queued { req, not_before };
                return None;
            }
        }
        let sent = req.first_sent.unwrap_or(now);
        let tries = if used_up {
            format!("failed {} times", req.attempts)
        } else {
            format!(
                "failed {} time(s), and the wait ends before another try",
                req.attempts
            )
        };
        let message = match kind {
            ErrorKind::Ambiguous => ambiguous_message(&req.command, why),
            _ => format!(
                "store unavailable: {} {tries}, last: {why}",
                describe(&req.command)
            ),
        };
        Some(IoPoll::Done(Err(Error::new(kind, message)), sent))
    }
}

/// The fewest rows a scan sent again asks for ([`smaller_scan`]).
pub(crate) const SCAN_LIMIT_FLOOR: u32 = 16;

/// A failed [`Command::Scan`] is sent again asking for half as many rows, down to
/// [`SCAN_LIMIT_FLOOR`]: a page the store could not read within its own time (Cassandra's
/// range reads time out on the servers at 10 s, seen on a loaded three-node cluster) may fit
/// when smaller. The scan's caller therefore never reads a short page as the last one.
fn smaller_scan(command: &mut Command) {
    if let Command::Scan { limit, .. } = command {
        *limit = (*limit / 2).max(SCAN_LIMIT_FLOOR).min(*limit);
    }
}

/// What a serial read of the cells made after a conditional command timed out says about it:
/// `None` when the cells are as the command needed them (it was not applied: send it again),
/// otherwise the reply to give the operation. A conditional delete whose cell is gone proves
/// nothing (anyone's removal, a forced release or an expiry, looks the same): only a value we
/// wrote is proof, and the operation settles a missing cell itself ([`Io::maybe_applied`]
/// stays true).
fn settled(command: &Command, cells: alloc::vec::Vec<crate::model::Cell>) -> Option<Reply> {
    let value_of = |column: &str| {
        cells
            .iter()
            .find(|c| c.column == column)
            .map(|c| c.value.clone())
    };
    match command {
        Command::Claim {
            column,
            value,
            counter,
            counter_expected,
            counter_next,
            ..
        } => {
            let current = value_of(column);
            let guard = value_of(counter);
            if current.is_none() && guard == *counter_expected {
                return None;
            }
            let applied =
                current.as_deref() == Some(value) && guard.as_deref() == Some(counter_next);
            Some(Reply::Guarded {
                applied,
                current,
                guard,
            })
        }
        Command::GuardedSet {
            column,
            expected,
            new,
            guard,
            guard_value,
            ..
        } => {
            let current = value_of(column);
            let found = value_of(guard);
            if current.as_deref() == Some(expected) && found.as_deref() == Some(guard_value) {
                return None;
            }
            let applied = new.is_some() && current == *new && found.as_deref() == Some(guard_value);
            Some(Reply::Guarded {
                applied,
                current,
                guard: found,
            })
        }
        Command::SetObject {
            column,
            expected,
            value,
            guard,
            ..
        } => {
            // Every value an object write makes is unique (it names its writer and the write),
            // so finding it proves the write applied; finding the cell still as the write
            // expected it, and the guard holding, means it was not (send it again: one copy
            // at most can apply, the first moves the cell past `expected`).
            let current = value_of(column);
            let (lock, counter, holds) = match guard {
                crate::model::ObjectGuard::Held {
                    column,
                    value,
                    counter,
                    counter_value,
                } => {
                    let lock = value_of(column);
                    let found = value_of(counter);
                    let holds = lock.as_deref() == Some(value.as_str())
                        && found.as_deref() == Some(counter_value.as_str());
                    (lock, found, holds)
                }
                crate::model::ObjectGuard::Free { column } => {
                    let lock = value_of(column);
                    let free = lock.is_none();
                    (lock, None, free)
                }
            };
            let as_expected = match (expected, &current) {
                (None, None) => true,
                (Some(p), Some(v)) => v.starts_with(p.as_str()),
                _ => false,
            };
            if as_expected && holds {
                return None;
            }
            Some(Reply::Object {
                applied: current.as_deref() == Some(value.as_str()),
                current,
                lock,
                counter,
            })
        }
        _ => {
            let current = value_of(&cell_of(command));
            let (expected, intended) = conditional_values(command);
            if current == expected {
                return None;
            }
            let applied = current.is_some() && current == intended;
            Some(Reply::Conditional {
                applied,
                current: if applied { None } else { current },
            })
        }
    }
}

fn cell_of(command: &Command) -> String {
    match command {
        Command::InsertIfAbsent { column, .. }
        | Command::CompareAndSet { column, .. }
        | Command::Put { column, .. }
        | Command::Vacate { column, .. }
        | Command::Delete { column, .. } => column.clone(),
        _ => String::new(),
    }
}

fn serial_of(command: &Command) -> crate::model::SerialConsistency {
    match command {
        Command::InsertIfAbsent { serial, .. }
        | Command::CompareAndSet { serial, .. }
        | Command::Claim { serial, .. }
        | Command::GuardedSet { serial, .. }
        | Command::SetObject { serial, .. } => *serial,
        _ => crate::model::SerialConsistency::Serial,
    }
}

/// (value the cell holds if not applied, value it holds if applied) of a conditional command.
fn conditional_values(command: &Command) -> (Option<String>, Option<String>) {
    match command {
        Command::InsertIfAbsent { value, .. } => (None, Some(value.clone())),
        Command::CompareAndSet { expected, new, .. } => (Some(expected.clone()), new.clone()),
        _ => (None, None),
    }
}

pub(crate) fn describe(command: &Command) -> String {
    let row = command.row().unwrap_or("*");
    match command {
        Command::Read { .. } => format!("read of row {row:?}"),
        Command::Put { column, .. } => format!("write of {row:?}/{column:?}"),
        Command::Delete { column, .. } => format!("delete of {row:?}/{column:?}"),
        Command::Vacate { column, .. } => format!("release of {row:?}/{column:?}"),
        Command::DeleteVersion { column, stamp, .. } => {
            format!("delete of {row:?}/{column:?} at version {stamp}")
        }
        Command::InsertIfAbsent { column, .. } => format!("insert-if-absent of {row:?}/{column:?}"),
        Command::CompareAndSet { column, .. } => format!("compare-and-set of {row:?}/{column:?}"),
        Command::Batch { .. } => format!("batch on row {row:?}"),
        Command::Claim { column, .. } => {
            format!("insert-if-absent of {row:?}/{column:?} with its counter")
        }
        Command::GuardedSet { column, .. } => {
            format!("compare-and-set of {row:?}/{column:?} guarded by its counter")
        }
        Command::SetObject { column, .. } => {
            format!("conditional write of object {row:?}/{column:?}")
        }
        Command::Scan { .. } => String::from("scan of the lock table"),
        Command::Purge { .. } => format!("purge of row {row:?}"),
    }
}

fn ambiguous_message(command: &Command, why: &str) -> String {
    format!(
        "{} timed out and reading back could not settle whether it was applied: {why}",
        describe(command)
    )
}

fn store_message(command: &Command, message: &str) -> String {
    format!("store refused the {}: {message}", describe(command))
}
