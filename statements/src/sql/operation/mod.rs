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
//! | claim | `claim` (or `claim_first`), one statement; SQLite: `claim` and `claim_counter` in one transaction, then `claim_state`; a one-row table: then `guarded_current` when it was not applied |
//! | guarded set | `guarded_update` or `guarded_delete`, then `guarded_current` when it was not applied |
//! | vacate | PostgreSQL: `vacate_all` or `vacate_range`, one statement; elsewhere a read, then `delete` |
//! | set-object | one of `object_insert_held`, `object_insert_free`, `object_update_held`, `object_update_free` (`…_from` for a prefix without an end), then `object_current` when it was not applied (see `object.rs`) |
//! | purge | `purge_row` or `purge_all` |
//! | scan | `scan_first`/`scan_after` for row names, then `scan_cells`, repeated to fill a page |
//!
//! The `current` read after an unapplied conditional only tells the kernel who is in the way;
//! it is informational and may be a moment newer than the conditional itself.
//!
//! Cost: no I/O; each step allocates its parameter list (the texts are borrowed from the
//! command), and decoding allocates the reply.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use baton_kernel::strategy::unique::LOCK_COLUMN;
use baton_kernel::{Cell, ColumnFilter, Command, Failure, Reply, Write};

use super::{moving_route, shows_marker, Dialect, Layout, Route, Statement, StatementSet};

use guarded::{claim_applied, claimed};
use one_row::one_row_refusal;
pub use params::ttl_ms;
use params::{
    cell, check_keys, execute, fetch, present, put, read_step, split_cells, sql_stamp, text,
};
use scan::Scan;

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
/// The columns of a MariaDB one-row read of many cells: `(cell, value, remaining_ms, stamp,
/// own, counter, counter_stamp)`, split into the cells each table row holds by
/// [`params::split_cells`].
const SPLIT_CELL: &[Kind] = &[
    Kind::Text,
    Kind::Text,
    Kind::Int,
    Kind::Int,
    Kind::Int,
    Kind::Text,
    Kind::Int,
];
/// The columns of a scan's cells: `(row, cell, value, remaining_ms, stamp)`.
const ROW_CELL: &[Kind] = &[Kind::Text, Kind::Text, Kind::Text, Kind::Int, Kind::Int];
/// `(row, cell)` of a purged cell.
const KEY: &[Kind] = &[Kind::Text, Kind::Text];
/// `(row, cell, absent)` of a row SQLite's one-row purge deleted (`purge_others`).
const PURGED_ROW: &[Kind] = &[Kind::Text, Kind::Text, Kind::Int];
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
    /// A guarded change was sent (or a one-row claim that was not applied: its read is next).
    Guarded,
    /// The read after a guarded change that was not applied was sent.
    GuardedCurrent,
    /// An object write was sent.
    Object,
    /// The read after an object write that was not applied was sent.
    ObjectCurrent,
    /// A release's one statement was sent (PostgreSQL).
    VacateOne,
    /// A release's read was sent (other databases); its delete comes next.
    VacateRead,
    /// A release's delete was sent, after its read found these cells.
    VacateDelete(Vec<Cell>),
    /// A purge was sent.
    Purge,
    /// SQLite's one-row purge: its first statement removed these cells; its second is next.
    PurgeMore(Vec<(String, String)>),
    /// SQLite's one-row purge: its second statement was sent, after the first removed these.
    PurgeOthers(Vec<(String, String)>),
    /// A scan is filling its page.
    Scan(Scan),
    /// The reply was given.
    Finished,
}

/// `(row, cell)` of a purged cell's result row.
fn key(row: Vec<Val>) -> (String, String) {
    let mut r = row.into_iter().map(Val::into_text);
    (r.next().unwrap_or_default(), r.next().unwrap_or_default())
}

/// A purge's reply: the cells it removed, in order.
fn purged(mut removed: Vec<(String, String)>) -> Reply {
    removed.sort();
    Reply::Purged(removed)
}

mod guarded;
mod object;
mod one_row;
mod params;
mod scan;
#[cfg(test)]
mod tests;

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
    /// The table's layout.
    layout: Layout,
    /// The read sent answers table rows to split into cells ([`Operation::read`]).
    split_read: bool,
    /// The statement set the host runs the next step's statement from.
    set: StatementSet,
    /// The table is being moved ([`Operation::moving`]); `routed` once the route was chosen.
    moving: bool,
    routed: bool,
    /// A two-row attempt met a moved name's marker, and the command ran again in one row.
    met_marker: bool,
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
        object::check_value(dialect, command)?;
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
            | Command::SetObject { .. }
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
            layout: Layout::TwoRows,
            split_read: false,
            set: StatementSet::TwoRows,
            moving: false,
            routed: false,
            met_marker: false,
        })
    }

    /// Says that the table has `layout` (the statements' [`Statements::layout`](super::Statements)):
    /// on a one-row table, a command the layout cannot hold is answered with
    /// [`Failure::Rejected`] before any statement (a `_LOCK_` with a TTL or removed; a claim or
    /// a guarded change of other cells than `lock` and `_LOCK_`).
    pub fn in_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self.set = match layout {
            Layout::TwoRows => StatementSet::TwoRows,
            Layout::OneRow => StatementSet::OneRow,
        };
        self
    }

    /// Says that `baton migrate` is moving the table ([`is_moving`](super::is_moving)): the
    /// command runs as [`moving_route`] says (a command that writes or guards by the counter
    /// first with the two-row statements, and again with the one-row ones when the reply
    /// shows a moved name's marker; every other with the moving set), so that each name is
    /// served in the layout it is in. The host looks each step's statement up in
    /// [`Operation::statement_set`]; [`Operation::met_marker`] then says to read the table's
    /// layout again.
    pub fn moving(mut self) -> Self {
        self.moving = true;
        self
    }

    /// The statement set the statement of the step just given comes from.
    pub fn statement_set(&self) -> StatementSet {
        self.set
    }

    /// Whether the command met a moved name's marker (and ran again in one row): the table's
    /// flag may be there now.
    pub fn met_marker(&self) -> bool {
        self.met_marker
    }

    /// Says that the host runs each statement as its own transaction, on a connection of its
    /// own (not inside a caller's transaction). On PostgreSQL a release, and a claim that
    /// inserted nothing, then commit without waiting for the disk
    /// ([`Statements::guarded_delete_async`](super::Statements),
    /// [`Statements::claim_async`](super::Statements)).
    pub fn on_own_connection(mut self) -> Self {
        self.own = true;
        self
    }

    /// Whether the table is MariaDB's or SQLite's one-row layout, whose claims and releases
    /// answer by the rows they found or changed rather than rows they return, whose removals
    /// of the `lock` cell end it in place, whose reads of many cells are split
    /// ([`split_cells`]), and whose statements take their parameters in the order of their
    /// `?`s ([`one_row::bound`]).
    fn ends_in_place(&self) -> bool {
        self.dialect != Dialect::Postgres && self.layout == Layout::OneRow
    }

    /// The statement that removes `column` in place of `delete` (a delete, a release's delete
    /// or a compare-and-delete): on MariaDB's and SQLite's one-row tables the `lock` cell is
    /// ended in place by a statement of its own ([`Statements::end_lock`](super::Statements),
    /// [`Statements::cas_end_lock`](super::Statements)); any other cell's row is deleted.
    fn removal(&self, column: &str, delete: Statement) -> Statement {
        if !self.ends_in_place() || column != LOCK_COLUMN {
            return delete;
        }
        match delete {
            Statement::CasDelete => Statement::CasEndLock,
            _ => Statement::EndLock,
        }
    }

    /// The statement of a release's delete, or of a claim: without waiting for the disk (for
    /// a claim: when it inserted nothing) when allowed.
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
        let step = self.next();
        if self.ends_in_place() {
            return one_row::bound(self.dialect, step);
        }
        step
    }

    /// [`Operation::step`] with the parameters in the operation's order.
    fn next(&mut self) -> Step<'c> {
        if let Some(reply) = self.reply.take() {
            if self.moving && shows_marker(self.command, &reply) {
                if self.set == StatementSet::TwoRows {
                    // A moved name: the same command again, in one row, with the same stamp
                    // (the two-row attempt applied nothing: a statement that meets the marker
                    // never does).
                    self.met_marker = true;
                    self.layout = Layout::OneRow;
                    self.set = StatementSet::OneRow;
                    self.split_read = false;
                    self.state = State::Start;
                    return self.next();
                }
                self.state = State::Finished;
                return Step::Reply(Reply::Failed(Failure::Rejected(String::from(
                    "internal error: a one-row statement answered a moved name's marker as its counter",
                ))));
            }
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
            State::Object => self.object_current(),
            State::VacateDelete(_) => match self.command {
                Command::Vacate { row, column, .. } => execute(
                    self.removal(column, Statement::Delete),
                    vec![text(row), text(column), Param::Int(Some(self.stamp))],
                ),
                _ => {
                    self.unexpected();
                    self.next()
                }
            },
            State::Scan(_) => self.scan_step(),
            State::PurgeMore(_) => {
                let State::PurgeMore(removed) =
                    core::mem::replace(&mut self.state, State::Finished)
                else {
                    return self.next();
                };
                self.state = State::PurgeOthers(removed);
                let row = match self.command {
                    Command::Purge { row: Some(row) } => text(row),
                    _ => Param::Int(None),
                };
                fetch(Statement::PurgeOthers, vec![row], PURGED_ROW)
            }
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
            // MariaDB's and SQLite's one-row claims answer by the rows they found or changed
            // (and MariaDB's marker of a kept row): applied, or the cells as found are read
            // next.
            State::ClaimOne => {
                if self.applied(done) {
                    self.reply = Some(claim_applied(self.command));
                } else {
                    self.state = State::Guarded;
                }
            }
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
            State::Object => {
                let applied = self.applied(done);
                self.object_written(applied);
            }
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
            State::Read => self.reply = Some(Reply::Cells(self.cells_of(rows))),
            State::ClaimOne => match claimed(self.command, rows) {
                // A one-row claim answers only whether it applied: the cells as found come
                // from a read after it (the next step).
                Reply::Guarded { applied: false, .. } if self.layout == Layout::OneRow => {
                    self.state = State::Guarded;
                }
                reply => self.reply = Some(reply),
            },
            State::VacateOne => {
                self.reply = Some(Reply::Cells(rows.into_iter().map(cell).collect()))
            }
            State::VacateRead => {
                self.state = State::VacateDelete(self.cells_of(rows));
            }
            // A guarded delete: one row back when it removed our cell.
            State::Guarded => self.executed(Done {
                rows: rows.len() as u64,
                insert_id: 0,
            }),
            State::ClaimLeft => self.reply = Some(self.claim_outcome(rows)),
            State::ObjectCurrent => self.reply = Some(self.object_found(rows)),
            State::GuardedCurrent => {
                let mut vals = rows.into_iter().next().unwrap_or_default().into_iter();
                self.reply = Some(Reply::Guarded {
                    applied: false,
                    current: present(vals.next()),
                    guard: present(vals.next()),
                });
            }
            State::Purge => {
                let removed: Vec<(String, String)> = rows.into_iter().map(key).collect();
                if self.ends_in_place() && self.dialect == Dialect::Sqlite {
                    self.state = State::PurgeMore(removed);
                } else {
                    self.reply = Some(purged(removed));
                }
            }
            State::PurgeOthers(removed) => {
                let mut removed = core::mem::take(removed);
                // Rows flagged absent were no cells: not listed.
                removed.extend(rows.into_iter().filter_map(|r| {
                    let absent = r.get(2).and_then(|v| v.int()).unwrap_or(0) != 0;
                    (!absent).then(|| key(r))
                }));
                self.reply = Some(purged(removed));
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

    /// Whether an insert-if-absent (or an object write) was applied, from what the database
    /// reported: PostgreSQL and SQLite count one row inserted or taken over and none when a
    /// live row was kept; MariaDB reports the `LAST_INSERT_ID` marker of the statement (1: a
    /// live row was kept; an `UPDATE` reports none).
    fn applied(&self, done: Done) -> bool {
        match self.dialect {
            Dialect::Sqlite | Dialect::Postgres => done.rows > 0,
            Dialect::MySql => done.rows > 0 && done.insert_id != 1,
        }
    }

    /// The read of `filter`'s cells of `row`. MariaDB's and SQLite's one-row reads of many
    /// cells answer table rows, each holding up to two cells (its own and the counter), which
    /// [`Operation::cells_of`] splits.
    pub(super) fn read(&mut self, row: &'c str, filter: &'c ColumnFilter) -> Step<'c> {
        self.split_read = self.ends_in_place() && !matches!(filter, ColumnFilter::Exact(_));
        match read_step(row, filter) {
            Step::Fetch {
                statement, params, ..
            } if self.split_read => fetch(statement, params, SPLIT_CELL),
            step => step,
        }
    }

    /// The cells of the rows a read answered.
    fn cells_of(&self, rows: Vec<Vec<Val>>) -> Vec<Cell> {
        if self.split_read {
            split_cells(rows)
        } else {
            rows.into_iter().map(cell).collect()
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
        if self.moving && !self.routed {
            self.routed = true;
            match moving_route(self.command) {
                Route::TwoRowsFirst => {
                    self.layout = Layout::TwoRows;
                    self.set = StatementSet::TwoRows;
                }
                Route::Moving => {
                    self.layout = Layout::OneRow;
                    self.set = StatementSet::Moving;
                }
                Route::Refused(why) => {
                    self.state = State::Finished;
                    return Step::Reply(Reply::Failed(Failure::Rejected(why)));
                }
            }
        }
        if self.layout == Layout::OneRow {
            if let Some(why) = one_row_refusal(self.command) {
                self.state = State::Finished;
                return Step::Reply(Reply::Failed(Failure::Rejected(why)));
            }
        }
        let stamp = Param::Int(Some(self.stamp));
        let (state, step) = match self.command {
            Command::Read { row, filter, .. } => (State::Read, self.read(row, filter)),
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
                execute(
                    self.removal(
                        column,
                        self.release(Statement::Delete, Statement::DeleteAsync),
                    ),
                    vec![text(row), text(column), stamp],
                ),
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
                        self.removal(column, Statement::CasDelete),
                        vec![text(row), text(column), text(expected)],
                    ),
                };
                (State::Conditional, step)
            }
            Command::Claim { .. } => return self.claim(stamp),
            Command::Vacate { .. } => return self.vacate(stamp),
            Command::GuardedSet { .. } => return self.guarded(stamp),
            Command::SetObject { .. } => return self.object(stamp),
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
                            self.removal(column, Statement::DeleteNotify),
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
                    return self.next();
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
                return self.next();
            }
        };
        self.state = state;
        step
    }
}
