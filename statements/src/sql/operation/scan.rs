//! A scan's pages: row names first, then their cells.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use baton_kernel::{Cell, Reply};

use super::params::{cell, fetch, owned};
use super::{Operation, Param, State, Step, Val, ROW_CELL, TEXT};
use crate::sql::Statement;

/// A scan's progress.
#[derive(Debug)]
pub(super) struct Scan {
    pub(super) limit: usize,
    pub(super) after: Option<String>,
    pub(super) out: Vec<(String, Vec<Cell>)>,
    /// The row names of the page being read, when `scan_cells` was sent.
    pub(super) names: Option<Vec<String>>,
    /// How many row names were asked for.
    pub(super) want: usize,
}

impl<'c> Operation<'c> {
    pub(super) fn scan_step(&mut self) -> Step<'c> {
        let State::Scan(scan) = &mut self.state else {
            self.unexpected();
            return self.next();
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
    pub(super) fn fetched(&mut self, rows: Vec<Vec<Val>>) -> Option<Reply> {
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
