//! One kernel [`Command`] on a SQL lock table, as a sans-IO exchange: the [`Operation`] says
//! which statement to run with which parameters ([`Step`]), the host runs it and feeds back what
//! the database said ([`Operation::executed`], [`Operation::fetched`]), until the operation
//! answers with the command's [`Reply`]. The meaning is the one the kernel's
//! [`MemoryTable`](baton_kernel::MemoryTable) gives each command; the native store runs the
//! steps through sqlx, a host without sqlx through its own driver, with the same statements,
//! parameters and decoding.
//!
//! | command | statements |
//! | --- | --- |
//! | read | one of `read_all`, `read_exact`, `read_range`, `read_from` (a prefix without successor) |
//! | put, delete, delete-version | `put`, `delete` |
//! | batch | `put` and `delete`, in one transaction, all with one stamp |
//! | insert-if-absent, compare-and-set | the conditional, then `current` when it was not applied |
//! | purge | `purge_row` or `purge_all` |
//! | scan | `scan_first`/`scan_after` for row names, then `scan_cells`, repeated to fill a page |
//!
//! The `current` read after an unapplied conditional only tells the kernel who is in the way;
//! it is informational and may be a moment newer than the conditional itself.
//!
//! Cost: no I/O; each step allocates its parameter list (the texts are borrowed from the
//! command), and decoding allocates the reply.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use baton_kernel::model::prefix_end;
use baton_kernel::{Cell, ColumnFilter, Command, Failure, Reply, Write};

use super::{Dialect, Statement};

/// The longest row or column name the SQL lock table holds, in bytes.
pub const MAX_KEY_BYTES: usize = 255;

/// TTLs longer than this (about a century) are stored without expiry: rounding a TTL up is
/// allowed, and every database's timestamp range is then safe.
const MAX_TTL_MS: i64 = 100 * 366 * 24 * 3_600 * 1_000;

/// A bound parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param<'c> {
    /// Text.
    Text(Cow<'c, str>),
    /// A 64-bit integer, or NULL.
    Int(Option<i64>),
}

/// The type of a result column, so the host can decode it without knowing the statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text (never NULL).
    Text,
    /// A 64-bit integer, or NULL.
    Int,
}

/// A value of a result column, as the host decoded it by its [`Kind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    /// Text.
    Text(String),
    /// A 64-bit integer, or NULL.
    Int(Option<i64>),
}

impl Val {
    /// The text, or an empty string for an integer (the operation pairs each statement with
    /// its columns' kinds, so a host that decodes by them never gives one).
    pub fn into_text(self) -> String {
        match self {
            Val::Text(s) => s,
            Val::Int(_) => String::new(),
        }
    }

    /// The integer, or `None` for NULL or text.
    pub fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => *i,
            Val::Text(_) => None,
        }
    }
}

/// What running a statement reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// Rows affected (MariaDB: rows found; connect with `CLIENT_FOUND_ROWS`).
    pub rows: u64,
    /// MariaDB's `LAST_INSERT_ID` of the statement (0 elsewhere).
    pub insert_id: u64,
}

/// What the host does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step<'c> {
    /// Run `statement` with `params`, then call [`Operation::executed`].
    Execute {
        /// Which statement.
        statement: Statement,
        /// Its parameters, in placeholder order.
        params: Vec<Param<'c>>,
    },
    /// Run `statement` with `params` and decode every row by `columns`, then call
    /// [`Operation::fetched`].
    Fetch {
        /// Which statement.
        statement: Statement,
        /// Its parameters, in placeholder order.
        params: Vec<Param<'c>>,
        /// The types of the result's columns, in order.
        columns: &'static [Kind],
    },
    /// Run these statements in order in one transaction (a savepoint inside a caller's
    /// transaction), then call [`Operation::executed`] with a default [`Done`].
    Transaction(Vec<(Statement, Vec<Param<'c>>)>),
    /// The command is done: this is its reply.
    Reply(Reply),
}

/// The columns of a cell read: `(cell, value, remaining_ms, stamp)`.
const CELL: &[Kind] = &[Kind::Text, Kind::Text, Kind::Int, Kind::Int];
/// The columns of a scan's cells: `(row, cell, value, remaining_ms, stamp)`.
const ROW_CELL: &[Kind] = &[Kind::Text, Kind::Text, Kind::Text, Kind::Int, Kind::Int];
/// `(row, cell)` of a purged cell.
const KEY: &[Kind] = &[Kind::Text, Kind::Text];
/// One text column.
const TEXT: &[Kind] = &[Kind::Text];
/// A claim's outcome: `(inserted, bumped, lock, counter)`.
const CLAIMED: &[Kind] = &[Kind::Int, Kind::Int, Kind::Text, Kind::Text];
/// What a claim's transaction left: `(lock value, lock stamp, counter)`.
const CLAIM_STATE: &[Kind] = &[Kind::Text, Kind::Int, Kind::Text];
/// Two text columns.
const TWO_TEXTS: &[Kind] = &[Kind::Text, Kind::Text];

/// Where an operation is.
#[derive(Debug)]
enum State {
    /// Nothing sent yet.
    Start,
    /// A plain write or a batch was sent.
    Written,
    /// A conditional was sent.
    Conditional,
    /// The `current` read after an unapplied conditional was sent.
    Current,
    /// A read was sent.
    Read,
    /// A claim's one statement was sent (PostgreSQL, MariaDB).
    ClaimOne,
    /// A claim's transaction was sent (SQLite); the read of what it left comes next.
    ClaimTx,
    /// The read after a claim's transaction was sent.
    ClaimLeft,
    /// A guarded change was sent.
    Guarded,
    /// The read after a guarded change that was not applied was sent.
    GuardedCurrent,
    /// A release's one statement was sent (PostgreSQL).
    VacateOne,
    /// A release's read was sent (other databases); its delete comes next.
    VacateRead,
    /// A release's delete was sent, after its read found these cells.
    VacateDelete(Vec<Cell>),
    /// A purge was sent.
    Purge,
    /// A scan is filling its page.
    Scan(Scan),
    /// The reply was given.
    Finished,
}

/// A scan's progress.
#[derive(Debug)]
struct Scan {
    limit: usize,
    after: Option<String>,
    out: Vec<(String, Vec<Cell>)>,
    /// The row names of the page being read, when `scan_cells` was sent.
    names: Option<Vec<String>>,
    /// How many row names were asked for.
    want: usize,
}

/// One command's exchange with a SQL lock table. Drive it with [`Operation::step`] and feed
/// each statement's outcome back; a database error ends it (the host reports it, classified
/// by [`failure`](super::failure)).
#[derive(Debug)]
pub struct Operation<'c> {
    dialect: Dialect,
    command: &'c Command,
    /// The stamp of the command's writes.
    stamp: i64,
    state: State,
    /// The reply, once known.
    reply: Option<Reply>,
    /// Whether each statement is its own transaction (the store's own connection, not a
    /// caller's transaction): releases may then commit without waiting for the disk.
    own: bool,
}

impl<'c> Operation<'c> {
    /// Starts `command` on a `dialect` table. `stamp` gives the command's write stamp: called
    /// once, with the floor the stamp must exceed (a batch's
    /// [`after`](baton_kernel::Command::Batch), 0 otherwise), just before the first statement
    /// is returned; the native stores pass their process-wide generator. Fails with
    /// [`Failure::Rejected`] for a row or column name longer than [`MAX_KEY_BYTES`] or a
    /// command the SQL store does not know.
    pub fn new(
        dialect: Dialect,
        command: &'c Command,
        stamp: impl FnOnce(u64) -> u64,
    ) -> Result<Operation<'c>, Failure> {
        check_keys(command)?;
        let floor = match command {
            Command::Batch { after, .. } => *after,
            Command::Read { .. }
            | Command::Put { .. }
            | Command::Delete { .. }
            | Command::DeleteVersion { .. }
            | Command::InsertIfAbsent { .. }
            | Command::CompareAndSet { .. }
            | Command::Claim { .. }
            | Command::GuardedSet { .. }
            | Command::Vacate { .. }
            | Command::Purge { .. }
            | Command::Scan { .. } => 0,
            other => {
                return Err(Failure::Rejected(format!(
                    "the SQL store does not know the command {other:?}"
                )))
            }
        };
        let stamp = match command {
            // A delete-version carries its own; reads take none.
            Command::DeleteVersion { stamp, .. } => sql_stamp(*stamp),
            Command::Read { .. } | Command::Purge { .. } | Command::Scan { .. } => 0,
            _ => sql_stamp(stamp(floor)),
        };
        Ok(Operation {
            dialect,
            command,
            stamp,
            state: State::Start,
            reply: None,
            own: false,
        })
    }

    /// Says that the host runs each statement as its own transaction, on a connection of its
    /// own (not inside a caller's transaction). On PostgreSQL a release then commits without
    /// waiting for the disk ([`Statements::guarded_delete_async`](super::Statements)).
    pub fn on_own_connection(mut self) -> Self {
        self.own = true;
        self
    }

    /// The statement of a release's delete: without waiting for the disk when allowed.
    fn release(&self, flushed: Statement, unflushed: Statement) -> Statement {
        if self.own {
            unflushed
        } else {
            flushed
        }
    }

    /// What to do next. Call it again after feeding each outcome, until it gives the reply
    /// (once: stepping again after that is a bug in the host, answered by an internal error).
    pub fn step(&mut self) -> Step<'c> {
        if let Some(reply) = self.reply.take() {
            self.state = State::Finished;
            return Step::Reply(reply);
        }
        match &self.state {
            State::Start => self.first(),
            State::Conditional => {
                let (row, column) = self.key();
                self.state = State::Current;
                Step::Fetch {
                    statement: Statement::Current,
                    params: vec![text(row), text(column)],
                    columns: TEXT,
                }
            }
            State::ClaimTx => {
                self.state = State::ClaimLeft;
                self.claim_state()
            }
            State::Guarded => {
                self.state = State::GuardedCurrent;
                self.guarded_current()
            }
            State::VacateDelete(_) => match self.command {
                Command::Vacate { row, column, .. } => execute(
                    Statement::Delete,
                    vec![text(row), text(column), Param::Int(Some(self.stamp))],
                ),
                _ => {
                    self.unexpected();
                    self.step()
                }
            },
            State::Scan(_) => self.scan_step(),
            State::Finished => Step::Reply(Reply::Failed(Failure::Rejected(String::from(
                "internal error: a SQL operation was stepped after its reply",
            )))),
            // Waiting for an outcome the host has not fed: a bug in the host.
            _ => Step::Reply(Reply::Failed(Failure::Rejected(String::from(
                "internal error: a SQL operation was stepped before its outcome was fed",
            )))),
        }
    }

    /// The outcome of an [`Step::Execute`] or [`Step::Transaction`].
    pub fn executed(&mut self, done: Done) {
        match self.state {
            State::Written => self.reply = Some(Reply::Written),
            State::Conditional => {
                let applied = match self.command {
                    Command::InsertIfAbsent { .. } => self.applied(done),
                    _ => done.rows > 0,
                };
                if applied {
                    self.reply = Some(Reply::Conditional {
                        applied: true,
                        current: None,
                    });
                }
                // Not applied: the next step reads who is in the way.
            }
            // The transaction is in: the next step reads what it left.
            State::ClaimTx => {}
            State::VacateDelete(_) => {
                if let State::VacateDelete(cells) =
                    core::mem::replace(&mut self.state, State::Finished)
                {
                    self.reply = Some(Reply::Cells(cells));
                }
            }
            State::Guarded if done.rows > 0 => {
                if let Command::GuardedSet {
                    new, guard_value, ..
                } = self.command
                {
                    self.reply = Some(Reply::Guarded {
                        applied: true,
                        current: new.clone(),
                        guard: Some(guard_value.clone()),
                    });
                }
            }
            // Not applied: the next step reads both cells.
            State::Guarded => {}
            _ => self.unexpected(),
        }
    }

    /// The rows of a [`Step::Fetch`], each decoded by its `columns`.
    pub fn fetched(&mut self, rows: Vec<Vec<Val>>) {
        match &mut self.state {
            State::Current => {
                let current = rows
                    .into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .map(Val::into_text);
                self.reply = Some(Reply::Conditional {
                    applied: false,
                    current,
                });
            }
            State::Read => self.reply = Some(Reply::Cells(rows.into_iter().map(cell).collect())),
            State::ClaimOne => self.reply = Some(claimed(self.command, rows)),
            State::VacateOne => {
                self.reply = Some(Reply::Cells(rows.into_iter().map(cell).collect()))
            }
            State::VacateRead => {
                self.state = State::VacateDelete(rows.into_iter().map(cell).collect());
            }
            // A guarded delete: one row back when it removed our cell.
            State::Guarded => self.executed(Done {
                rows: rows.len() as u64,
                insert_id: 0,
            }),
            State::ClaimLeft => self.reply = Some(self.claim_outcome(rows)),
            State::GuardedCurrent => {
                let mut vals = rows.into_iter().next().unwrap_or_default().into_iter();
                self.reply = Some(Reply::Guarded {
                    applied: false,
                    current: present(vals.next()),
                    guard: present(vals.next()),
                });
            }
            State::Purge => {
                let mut removed: Vec<(String, String)> = rows
                    .into_iter()
                    .map(|r| {
                        let mut r = r.into_iter().map(Val::into_text);
                        (r.next().unwrap_or_default(), r.next().unwrap_or_default())
                    })
                    .collect();
                removed.sort();
                self.reply = Some(Reply::Purged(removed));
            }
            State::Scan(scan) => {
                if let Some(reply) = scan.fetched(rows) {
                    self.reply = Some(reply);
                }
            }
            _ => self.unexpected(),
        }
    }

    fn unexpected(&mut self) {
        self.reply = Some(Reply::Failed(Failure::Rejected(format!(
            "internal error: an outcome fed to a SQL operation that expected none ({:?})",
            self.state
        ))));
    }

    /// Whether an insert-if-absent was applied, from what the database reported: PostgreSQL
    /// and SQLite count one row inserted or taken over and none when a live row was kept;
    /// MariaDB reports the `LAST_INSERT_ID` marker of the statement (1: a live row was kept).
    fn applied(&self, done: Done) -> bool {
        match self.dialect {
            Dialect::Sqlite | Dialect::Postgres => done.rows > 0,
            Dialect::MySql => done.rows > 0 && done.insert_id != 1,
        }
    }

    fn key(&self) -> (&'c str, &'c str) {
        match self.command {
            Command::InsertIfAbsent { row, column, .. }
            | Command::CompareAndSet { row, column, .. } => (row, column),
            _ => ("", ""),
        }
    }

    /// The first statement of the command.
    fn first(&mut self) -> Step<'c> {
        let stamp = Param::Int(Some(self.stamp));
        let (state, step) = match self.command {
            Command::Read { row, filter, .. } => (State::Read, read_step(row, filter)),
            Command::Put {
                row,
                column,
                value,
                ttl,
                ..
            } => (
                State::Written,
                execute(Statement::Put, put(row, column, value, *ttl, stamp)),
            ),
            Command::Delete { row, column, .. } | Command::DeleteVersion { row, column, .. } => (
                State::Written,
                execute(Statement::Delete, vec![text(row), text(column), stamp]),
            ),
            Command::InsertIfAbsent {
                row,
                column,
                value,
                ttl,
                ..
            } => (
                State::Conditional,
                execute(
                    Statement::InsertIfAbsent,
                    put(row, column, value, *ttl, stamp),
                ),
            ),
            Command::CompareAndSet {
                row,
                column,
                expected,
                new,
                ttl,
                ..
            } => {
                let step = match new {
                    Some(new) => execute(
                        Statement::CasUpdate,
                        vec![
                            text(new),
                            Param::Int(ttl_ms(*ttl)),
                            stamp,
                            text(row),
                            text(column),
                            text(expected),
                        ],
                    ),
                    None => execute(
                        Statement::CasDelete,
                        vec![text(row), text(column), text(expected)],
                    ),
                };
                (State::Conditional, step)
            }
            Command::Claim { .. } => return self.claim(stamp),
            Command::Vacate { .. } => return self.vacate(stamp),
            Command::GuardedSet { .. } => return self.guarded(stamp),
            Command::Batch { row, writes, .. } => {
                // One stamp for every write, above the newest stamp the writer saw (`after`),
                // applied in order: a put after a delete of the same cell recreates it, a
                // second put of a cell the batch already wrote changes nothing (its stamp is
                // not newer), exactly as in the reference table.
                // A batch's deletes are releases: `delete_notify` (see `Statements`).
                let mut statements: Vec<_> = writes
                    .iter()
                    .map(|w| match w {
                        Write::Put { column, value, ttl } => {
                            (Statement::Put, put(row, column, value, *ttl, stamp.clone()))
                        }
                        Write::Delete { column } => (
                            Statement::DeleteNotify,
                            vec![text(row), text(column), stamp.clone()],
                        ),
                    })
                    .collect();
                if statements.len() > 1 {
                    return {
                        self.state = State::Written;
                        Step::Transaction(statements)
                    };
                }
                // One write is one statement: no transaction to wrap it in.
                let Some((statement, params)) = statements.pop() else {
                    self.reply = Some(Reply::Written);
                    return self.step();
                };
                let statement = match statement {
                    Statement::DeleteNotify => {
                        self.release(Statement::DeleteNotify, Statement::DeleteNotifyAsync)
                    }
                    other => other,
                };
                (State::Written, execute(statement, params))
            }
            Command::Purge { row } => {
                let step = match row {
                    Some(row) => fetch(Statement::PurgeRow, vec![text(row)], KEY),
                    None => fetch(Statement::PurgeAll, Vec::new(), KEY),
                };
                (State::Purge, step)
            }
            Command::Scan { after, limit, .. } => {
                let limit = usize::try_from((*limit).max(1)).unwrap_or(usize::MAX);
                self.state = State::Scan(Scan {
                    limit,
                    after: after.clone(),
                    out: Vec::new(),
                    names: None,
                    want: 0,
                });
                return self.scan_step();
            }
            // `new` refused every other command.
            _ => {
                self.unexpected();
                return self.step();
            }
        };
        self.state = state;
        step
    }

    /// The first step of a claim: one statement (PostgreSQL, MariaDB), or the two halves in one
    /// transaction (SQLite).
    fn claim(&mut self, stamp: Param<'c>) -> Step<'c> {
        let Command::Claim {
            row,
            column,
            value,
            ttl,
            counter,
            counter_expected,
            counter_next,
            ..
        } = self.command
        else {
            self.unexpected();
            return self.step();
        };
        // `''` stands for "no counter yet" (a counter value is never empty).
        let expected = text(counter_expected.as_deref().unwrap_or(""));
        let ttl = Param::Int(ttl_ms(*ttl));
        if self.dialect != Dialect::Sqlite {
            self.state = State::ClaimOne;
            return fetch(
                Statement::Claim,
                vec![
                    text(row),
                    text(column),
                    text(value),
                    ttl,
                    stamp,
                    text(counter),
                    expected,
                    text(counter_next),
                ],
                CLAIMED,
            );
        }
        self.state = State::ClaimTx;
        Step::Transaction(vec![
            (
                Statement::Claim,
                vec![
                    text(row),
                    text(column),
                    text(value),
                    ttl,
                    stamp.clone(),
                    text(row),
                    text(counter),
                    expected.clone(),
                ],
            ),
            (
                Statement::ClaimCounter,
                vec![
                    text(row),
                    text(counter),
                    text(counter_next),
                    stamp.clone(),
                    text(row),
                    text(column),
                    text(value),
                    stamp,
                    expected,
                ],
            ),
        ])
    }

    /// The first step of a release ([`Command::Vacate`]): one statement on PostgreSQL (for a
    /// whole row or a prefix with an end), otherwise the read (its delete follows).
    fn vacate(&mut self, stamp: Param<'c>) -> Step<'c> {
        let Command::Vacate {
            row, column, read, ..
        } = self.command
        else {
            self.unexpected();
            return self.step();
        };
        if self.dialect == Dialect::Postgres {
            let one = match read {
                ColumnFilter::All => Some((
                    self.release(Statement::VacateAll, Statement::VacateAllAsync),
                    vec![text(row)],
                )),
                ColumnFilter::Prefix(p) => prefix_end(p).map(|end| {
                    (
                        self.release(Statement::VacateRange, Statement::VacateRangeAsync),
                        vec![text(row), text(p), Param::Text(Cow::Owned(end))],
                    )
                }),
                ColumnFilter::Exact(_) => None,
            };
            if let Some((statement, mut params)) = one {
                params.extend([text(row), text(column), stamp]);
                self.state = State::VacateOne;
                return fetch(statement, params, CELL);
            }
        }
        self.state = State::VacateRead;
        read_step(row, read)
    }

    /// SQLite: the read of what a claim's transaction left.
    fn claim_state(&mut self) -> Step<'c> {
        let Command::Claim {
            row,
            column,
            counter,
            ..
        } = self.command
        else {
            self.unexpected();
            return self.step();
        };
        fetch(
            Statement::ClaimState,
            vec![
                text(row),
                text(column),
                text(row),
                text(column),
                text(row),
                text(counter),
            ],
            CLAIM_STATE,
        )
    }

    /// SQLite: the claim's reply from what its transaction left: applied when the lock cell
    /// holds this claim's value at this claim's stamp and the counter its next value.
    fn claim_outcome(&self, rows: Vec<Vec<Val>>) -> Reply {
        let Command::Claim {
            value,
            counter_next,
            ..
        } = self.command
        else {
            return internal("a claim's state read for another command");
        };
        let mut vals = rows.into_iter().next().unwrap_or_default().into_iter();
        let current = present(vals.next());
        let stamp = vals.next().and_then(|v| v.int()).unwrap_or(0);
        let guard = present(vals.next());
        let applied = current.as_deref() == Some(value.as_str())
            && stamp == self.stamp
            && guard.as_deref() == Some(counter_next.as_str());
        Reply::Guarded {
            applied,
            current,
            guard,
        }
    }

    /// The first step of a guarded change.
    fn guarded(&mut self, stamp: Param<'c>) -> Step<'c> {
        let Command::GuardedSet {
            row,
            column,
            expected,
            new,
            ttl,
            guard,
            guard_value,
            ..
        } = self.command
        else {
            self.unexpected();
            return self.step();
        };
        self.state = State::Guarded;
        let check = [text(row), text(guard), text(guard_value)];
        match new {
            None => {
                let mut params = vec![text(row), text(column), text(expected)];
                params.extend(check);
                let statement =
                    self.release(Statement::GuardedDelete, Statement::GuardedDeleteAsync);
                fetch(statement, params, TEXT)
            }
            Some(new) => {
                let mut params = vec![
                    text(new),
                    Param::Int(ttl_ms(*ttl)),
                    stamp,
                    text(row),
                    text(column),
                    text(expected),
                ];
                params.extend(check);
                execute(Statement::GuardedUpdate, params)
            }
        }
    }

    /// The read of both cells after a guarded change that was not applied.
    fn guarded_current(&mut self) -> Step<'c> {
        let Command::GuardedSet {
            row, column, guard, ..
        } = self.command
        else {
            self.unexpected();
            return self.step();
        };
        fetch(
            Statement::GuardedCurrent,
            vec![text(row), text(column), text(row), text(guard)],
            TWO_TEXTS,
        )
    }

    fn scan_step(&mut self) -> Step<'c> {
        let State::Scan(scan) = &mut self.state else {
            self.unexpected();
            return self.step();
        };
        match &scan.names {
            // Row names read: their cells next.
            Some(names) => match (names.first(), names.last()) {
                (Some(first), Some(last)) => fetch(
                    Statement::ScanCells,
                    vec![owned(first), owned(last)],
                    ROW_CELL,
                ),
                _ => Step::Reply(Reply::Rows(Vec::new())),
            },
            None => {
                scan.want = scan.limit - scan.out.len();
                let want = Param::Int(Some(i64::try_from(scan.want).unwrap_or(i64::MAX)));
                match &scan.after {
                    Some(after) => fetch(Statement::ScanAfter, vec![owned(after), want], TEXT),
                    None => fetch(Statement::ScanFirst, vec![want], TEXT),
                }
            }
        }
    }
}

impl Scan {
    /// Takes a page of row names or of their cells; the reply once the page is full or the
    /// table ends. A row whose cells all expired between the two statements is left out, and
    /// the page is topped up from after it, so that a short page still means the end.
    fn fetched(&mut self, rows: Vec<Vec<Val>>) -> Option<Reply> {
        match self.names.take() {
            None => {
                let names: Vec<String> = rows
                    .into_iter()
                    .filter_map(|r| r.into_iter().next().map(Val::into_text))
                    .collect();
                if names.is_empty() {
                    return Some(Reply::Rows(core::mem::take(&mut self.out)));
                }
                self.names = Some(names);
                None
            }
            Some(names) => {
                let mut by_name: BTreeMap<String, Vec<Cell>> = BTreeMap::new();
                for r in rows {
                    let mut vals = r.into_iter();
                    let name = vals.next().map(Val::into_text).unwrap_or_default();
                    by_name.entry(name).or_default().push(cell(vals.collect()));
                }
                for name in &names {
                    if let Some(cells) = by_name.remove(name) {
                        self.out.push((name.clone(), cells));
                    }
                }
                if names.len() < self.want || self.out.len() >= self.limit {
                    return Some(Reply::Rows(core::mem::take(&mut self.out)));
                }
                self.after = names.last().cloned();
                None
            }
        }
    }
}

/// A one-statement claim's reply from `(inserted, bumped, lock, counter)` (the last two as the
/// statement found them). Applied: the cells as the claim wrote them. Inserted without the
/// counter (PostgreSQL, when someone else created the counter in the same instant): not
/// applied, with our own value as the lock's.
fn claimed(command: &Command, rows: Vec<Vec<Val>>) -> Reply {
    let Command::Claim {
        value,
        counter_next,
        ..
    } = command
    else {
        return internal("a claim's outcome for another command");
    };
    let mut vals = rows.into_iter().next().unwrap_or_default().into_iter();
    let inserted = vals.next().and_then(|v| v.int()).unwrap_or(0) > 0;
    let bumped = vals.next().and_then(|v| v.int()).unwrap_or(0) > 0;
    let found = present(vals.next());
    let counter = present(vals.next());
    match (inserted, bumped) {
        (true, true) => Reply::Guarded {
            applied: true,
            current: Some(value.clone()),
            guard: Some(counter_next.clone()),
        },
        (true, false) => Reply::Guarded {
            applied: false,
            current: Some(value.clone()),
            guard: counter,
        },
        _ => Reply::Guarded {
            applied: false,
            current: found,
            guard: counter,
        },
    }
}

/// A text column where `''` means "no cell".
fn present(v: Option<Val>) -> Option<String> {
    v.map(Val::into_text).filter(|s| !s.is_empty())
}

fn internal(what: &str) -> Reply {
    Reply::Failed(Failure::Rejected(format!(
        "internal error in a SQL operation: {what}"
    )))
}

fn text(s: &str) -> Param<'_> {
    Param::Text(Cow::Borrowed(s))
}

fn owned<'c>(s: &str) -> Param<'c> {
    Param::Text(Cow::Owned(String::from(s)))
}

fn execute(statement: Statement, params: Vec<Param<'_>>) -> Step<'_> {
    Step::Execute { statement, params }
}

fn fetch<'c>(statement: Statement, params: Vec<Param<'c>>, columns: &'static [Kind]) -> Step<'c> {
    Step::Fetch {
        statement,
        params,
        columns,
    }
}

/// The parameters of `put` and `insert_if_absent`: `(row, cell, value, ttl_ms, stamp)`.
fn put<'c>(
    row: &'c str,
    column: &'c str,
    value: &'c str,
    ttl: Option<Duration>,
    stamp: Param<'c>,
) -> Vec<Param<'c>> {
    vec![
        text(row),
        text(column),
        text(value),
        Param::Int(ttl_ms(ttl)),
        stamp,
    ]
}

/// The read of `filter`'s cells of `row`.
fn read_step<'c>(row: &'c str, filter: &'c ColumnFilter) -> Step<'c> {
    match filter {
        ColumnFilter::All => fetch(Statement::ReadAll, vec![text(row)], CELL),
        ColumnFilter::Exact(c) => fetch(Statement::ReadExact, vec![text(row), text(c)], CELL),
        ColumnFilter::Prefix(p) => match prefix_end(p) {
            Some(end) => fetch(
                Statement::ReadRange,
                vec![text(row), text(p), Param::Text(Cow::Owned(end))],
                CELL,
            ),
            None => fetch(Statement::ReadFrom, vec![text(row), text(p)], CELL),
        },
    }
}

/// A cell from `(cell, value, ms left, stamp)`.
fn cell(row: Vec<Val>) -> Cell {
    let mut vals = row.into_iter();
    let column = vals.next().map(Val::into_text).unwrap_or_default();
    let value = vals.next().map(Val::into_text).unwrap_or_default();
    let ttl_remaining = vals
        .next()
        .and_then(|v| v.int())
        .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
    let stamp = vals
        .next()
        .and_then(|v| v.int())
        .map_or(0, |s| u64::try_from(s).unwrap_or(0));
    Cell {
        column,
        value,
        ttl_remaining,
        stamp,
    }
}

/// A TTL in whole milliseconds, rounded up; `None` for no TTL or one past a century.
pub fn ttl_ms(ttl: Option<Duration>) -> Option<i64> {
    let ttl = ttl?;
    let ms = ttl.as_millis() + u128::from(ttl.subsec_nanos() % 1_000_000 != 0);
    i64::try_from(ms).ok().filter(|ms| *ms <= MAX_TTL_MS)
}

/// A stamp as the `stamp` column's signed 64-bit integer. Every stamp a generator of wall-clock
/// microseconds gives fits (they reach 2^63 in the year 294 247); a larger one, which only a
/// [`Command::DeleteVersion`] could carry, means "every version" and becomes `i64::MAX`.
fn sql_stamp(stamp: u64) -> i64 {
    i64::try_from(stamp).unwrap_or(i64::MAX)
}

/// Rejects rows and columns longer than the table's key columns hold.
fn check_keys(command: &Command) -> Result<(), Failure> {
    let mut keys: Vec<&str> = command.row().into_iter().collect();
    match command {
        Command::Put { column, .. }
        | Command::Delete { column, .. }
        | Command::DeleteVersion { column, .. }
        | Command::InsertIfAbsent { column, .. }
        | Command::CompareAndSet { column, .. } => keys.push(column),
        Command::Read {
            filter: ColumnFilter::Exact(c) | ColumnFilter::Prefix(c),
            ..
        } => keys.push(c),
        Command::Batch { writes, .. } => keys.extend(writes.iter().map(|w| match w {
            Write::Put { column, .. } | Write::Delete { column } => column.as_str(),
        })),
        _ => {}
    }
    match keys.into_iter().find(|k| k.len() > MAX_KEY_BYTES) {
        Some(k) => Err(Failure::Rejected(format!(
            "a SQL lock table holds row and column names of up to {MAX_KEY_BYTES} bytes; got one of {} bytes",
            k.len()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use baton_kernel::{Consistency, ReadConsistency, SerialConsistency};

    #[test]
    fn ttls_round_up_to_milliseconds() {
        assert_eq!(ttl_ms(None), None);
        assert_eq!(ttl_ms(Some(Duration::from_millis(5))), Some(5));
        assert_eq!(ttl_ms(Some(Duration::from_micros(5_001))), Some(6));
        assert_eq!(ttl_ms(Some(Duration::from_nanos(1))), Some(1));
        assert_eq!(ttl_ms(Some(Duration::MAX)), None);
    }

    fn read(filter: ColumnFilter) -> Command {
        Command::Read {
            row: "r".into(),
            filter,
            consistency: ReadConsistency::Plain(Consistency::default()),
        }
    }

    #[test]
    fn long_keys_are_refused() {
        assert!(check_keys(&read(ColumnFilter::Prefix("x".repeat(255)))).is_ok());
        assert!(check_keys(&read(ColumnFilter::Prefix("x".repeat(256)))).is_err());
    }

    #[test]
    fn an_unapplied_conditional_reads_who_is_in_the_way() {
        let insert = Command::InsertIfAbsent {
            row: "r".into(),
            column: "c".into(),
            value: "v".into(),
            ttl: Some(Duration::from_micros(1_500)),
            serial: SerialConsistency::Serial,
            consistency: Consistency::default(),
        };
        let mut op = Operation::new(Dialect::MySql, &insert, |floor| floor + 7).expect("valid");
        assert_eq!(
            op.step(),
            Step::Execute {
                statement: Statement::InsertIfAbsent,
                params: vec![
                    text("r"),
                    text("c"),
                    text("v"),
                    Param::Int(Some(2)),
                    Param::Int(Some(7))
                ],
            }
        );
        // MariaDB's marker: a live row was kept.
        op.executed(Done {
            rows: 1,
            insert_id: 1,
        });
        assert_eq!(
            op.step(),
            fetch(Statement::Current, vec![text("r"), text("c")], TEXT)
        );
        op.fetched(vec![vec![Val::Text("theirs".to_string())]]);
        assert_eq!(
            op.step(),
            Step::Reply(Reply::Conditional {
                applied: false,
                current: Some("theirs".to_string()),
            })
        );
    }

    #[test]
    fn a_batch_takes_one_stamp_above_its_floor() {
        let batch = Command::Batch {
            row: "r".into(),
            writes: vec![
                Write::Delete { column: "a".into() },
                Write::Put {
                    column: "b".into(),
                    value: "v".into(),
                    ttl: None,
                },
            ],
            consistency: Consistency::default(),
            after: 41,
        };
        let mut op = Operation::new(Dialect::Sqlite, &batch, |floor| floor + 1).expect("valid");
        let Step::Transaction(statements) = op.step() else {
            panic!("a batch is one transaction");
        };
        assert_eq!(statements.len(), 2);
        assert!(statements
            .iter()
            .all(|(_, params)| params.last() == Some(&Param::Int(Some(42)))));
        op.executed(Done::default());
        assert_eq!(op.step(), Step::Reply(Reply::Written));
    }

    #[test]
    fn a_scan_skips_rows_that_expired_and_tops_up_its_page() {
        let scan = Command::Scan {
            after: None,
            limit: 2,
            consistency: Consistency::default(),
        };
        let mut op = Operation::new(Dialect::Postgres, &scan, |_| 0).expect("valid");
        let name = |s: &str| vec![Val::Text(s.to_string())];
        let cell = |row: &str| {
            vec![
                Val::Text(row.to_string()),
                Val::Text("c".to_string()),
                Val::Text("v".to_string()),
                Val::Int(None),
                Val::Int(Some(3)),
            ]
        };
        assert_eq!(
            op.step(),
            fetch(Statement::ScanFirst, vec![Param::Int(Some(2))], TEXT)
        );
        op.fetched(vec![name("a"), name("b")]);
        assert_eq!(
            op.step(),
            fetch(Statement::ScanCells, vec![owned("a"), owned("b")], ROW_CELL)
        );
        // `b` expired in between.
        op.fetched(vec![cell("a")]);
        assert_eq!(
            op.step(),
            fetch(
                Statement::ScanAfter,
                vec![owned("b"), Param::Int(Some(1))],
                TEXT
            )
        );
        op.fetched(vec![name("c")]);
        op.step();
        op.fetched(vec![cell("c")]);
        let Step::Reply(Reply::Rows(rows)) = op.step() else {
            panic!("the page is full");
        };
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(rows[0].1[0].stamp, 3);
    }
}
