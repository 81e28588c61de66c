//! Claims, releases and guarded changes: the conditional steps of an [`Operation`].

use alloc::borrow::Cow;
use alloc::vec;
use alloc::vec::Vec;

use baton_kernel::model::prefix_end;
use baton_kernel::{ColumnFilter, Command, Reply};

use super::params::{execute, fetch, internal, present, text, ttl_ms};
use super::{Operation, Param, State, Step, Val, CELL, CLAIMED, CLAIM_STATE, TEXT, TWO_TEXTS};
use crate::sql::{Dialect, Statement};

impl<'c> Operation<'c> {
    /// The first step of a claim: one statement (PostgreSQL, MariaDB), or the two halves in one
    /// transaction (SQLite).
    pub(super) fn claim(&mut self, stamp: Param<'c>) -> Step<'c> {
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
            return self.next();
        };
        // `''` stands for "no counter yet" (a counter value is never empty).
        let expected = text(counter_expected.as_deref().unwrap_or(""));
        let ttl = Param::Int(ttl_ms(*ttl));
        if self.dialect != Dialect::Sqlite || self.ends_in_place() {
            self.state = State::ClaimOne;
            let statement = match counter_expected {
                Some(_) => self.release(Statement::Claim, Statement::ClaimAsync),
                None => self.release(Statement::ClaimFirst, Statement::ClaimFirstAsync),
            };
            let params = vec![
                text(row),
                text(column),
                text(value),
                ttl,
                stamp,
                text(counter),
                expected,
                text(counter_next),
            ];
            // MariaDB's and SQLite's one-row claims are a plain `UPDATE` (or `INSERT`): they
            // answer by the rows they found or changed.
            if self.ends_in_place() {
                return execute(statement, params);
            }
            return fetch(statement, params, CLAIMED);
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
    pub(super) fn vacate(&mut self, stamp: Param<'c>) -> Step<'c> {
        let Command::Vacate {
            row, column, read, ..
        } = self.command
        else {
            self.unexpected();
            return self.next();
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
        self.read(row, read)
    }

    /// SQLite: the read of what a claim's transaction left.
    pub(super) fn claim_state(&mut self) -> Step<'c> {
        let Command::Claim {
            row,
            column,
            counter,
            ..
        } = self.command
        else {
            self.unexpected();
            return self.next();
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
    pub(super) fn claim_outcome(&self, rows: Vec<Vec<Val>>) -> Reply {
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
    pub(super) fn guarded(&mut self, stamp: Param<'c>) -> Step<'c> {
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
            return self.next();
        };
        self.state = State::Guarded;
        let check = [text(row), text(guard), text(guard_value)];
        match new {
            None => {
                let mut params = vec![text(row), text(column), text(expected)];
                params.extend(check);
                let statement =
                    self.release(Statement::GuardedDelete, Statement::GuardedDeleteAsync);
                // MariaDB's and SQLite's one-row releases are an `UPDATE` that ends the cell
                // in place.
                if self.ends_in_place() {
                    return execute(statement, params);
                }
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

    /// The read of both cells after a guarded change, or a one-row claim, that was not
    /// applied.
    pub(super) fn guarded_current(&mut self) -> Step<'c> {
        let (Command::GuardedSet {
            row, column, guard, ..
        }
        | Command::Claim {
            row,
            column,
            counter: guard,
            ..
        }) = self.command
        else {
            self.unexpected();
            return self.next();
        };
        fetch(
            Statement::GuardedCurrent,
            vec![text(row), text(column), text(row), text(guard)],
            TWO_TEXTS,
        )
    }
}

/// A one-statement claim's reply from `(inserted, bumped, lock, counter)` (the last two as the
/// statement found them). Applied: the cells as the claim wrote them. Inserted without the
/// counter (PostgreSQL, when someone else created the counter in the same instant): not
/// applied, with our own value as the lock's.
pub(super) fn claimed(command: &Command, rows: Vec<Vec<Val>>) -> Reply {
    let Command::Claim { value, .. } = command else {
        return internal("a claim's outcome for another command");
    };
    let mut vals = rows.into_iter().next().unwrap_or_default().into_iter();
    let inserted = vals.next().and_then(|v| v.int()).unwrap_or(0) > 0;
    let bumped = vals.next().and_then(|v| v.int()).unwrap_or(0) > 0;
    let found = present(vals.next());
    let counter = present(vals.next());
    match (inserted, bumped) {
        (true, true) => claim_applied(command),
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

/// The reply of a claim that applied: the cells as it wrote them.
pub(super) fn claim_applied(command: &Command) -> Reply {
    let Command::Claim {
        value,
        counter_next,
        ..
    } = command
    else {
        return internal("a claim's outcome for another command");
    };
    Reply::Guarded {
        applied: true,
        current: Some(value.clone()),
        guard: Some(counter_next.clone()),
    }
}
