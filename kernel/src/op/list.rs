//! Listing every lock of the table (`baton locks`): [`ListLocks`] whole, [`ListPage`] a page
//! at a time, both decoding each row as [`Inspect::any_strategy`](super::Inspect::any_strategy)
//! does.

use alloc::string::String;
use alloc::vec::Vec;

use super::admin::{row_entries, Steps};
use super::io::Io;
use super::{CommandId, Operation, Poll};
use crate::error::unexpected;
use crate::lease::LockInfo;
use crate::model::{Cell, Command, Reply};
use crate::options::LockOptions;
use crate::time::Instant;

/// Lists the live entries of every lock in the table (`baton locks`): pages through the table
/// with [`Command::Scan`] and decodes each row by the layout its columns show. Costs one scan
/// per [`LIST_PAGE_ROWS`] rows (fewer after a failed scan) and one more, empty, at the end, and
/// holds every entry until then; meant for operators, not hot paths ([`ListPage`] reads one
/// page at a time).
pub struct ListLocks {
    opts: LockOptions,
    found: Vec<LockInfo>,
    steps: Steps<Vec<LockInfo>>,
}

impl ListLocks {
    /// A listing; `opts` supplies the consistency and the column prefix to recognise.
    pub fn new(opts: &LockOptions) -> Self {
        ListLocks {
            opts: opts.clone(),
            found: Vec::new(),
            steps: Steps::new(opts),
        }
    }
}

/// The rows a scan of [`ListLocks`] or [`ListPage`] asks for at a time.
pub const LIST_PAGE_ROWS: u32 = 256;

/// Sends the scan of the page after the row `after` (the table's first when `None`).
fn scan_after(io: &mut Io, opts: &LockOptions, after: Option<String>) {
    io.send(Command::Scan {
        after,
        limit: LIST_PAGE_ROWS,
        consistency: opts.consistency,
    });
}

/// Decodes one page of a scan into `found`: each row's live entries by the layout its cells
/// show (rows of no lock layout, such as objects', add none). Returns the row the next page
/// starts after, `None` when this page was empty (the end). A short page is not the end: a
/// scan that failed is sent again asking for fewer rows (`io.rs`, `smaller_scan`), so only
/// an empty page says that nothing is left, at the cost of one more scan at the end.
fn decode_page(
    rows: Vec<(String, Vec<Cell>)>,
    opts: &LockOptions,
    found: &mut Vec<LockInfo>,
) -> Option<String> {
    let last = rows.last().map(|(row, _)| row.clone());
    for (row, cells) in rows {
        found.extend(row_entries(&row, &cells, opts));
    }
    last
}

impl Operation for ListLocks {
    type Output = Vec<LockInfo>;

    fn poll(&mut self, now: Instant) -> Poll<Vec<LockInfo>> {
        let (opts, found) = (&self.opts, &mut self.found);
        self.steps.poll(now, |io, reply| {
            let after = match reply {
                None => None,
                Some(Reply::Rows(rows)) => match decode_page(rows, opts, found) {
                    Some(last) => Some(last),
                    None => return Some(Ok(core::mem::take(found))),
                },
                Some(other) => return Some(Err(unexpected("lock table scan", &other))),
            };
            scan_after(io, opts, after);
            None
        })
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.steps.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}

/// One page of a listing ([`ListPage`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockPage {
    /// The live entries of the page's rows, in the store's row order.
    pub entries: Vec<LockInfo>,
    /// The rows the page read (locks', objects', any row of the table).
    pub rows: usize,
    /// Where the next page starts: give it to [`ListPage::after`]; `None` after the last page
    /// (an empty one: a page may be short and not the last).
    pub next: Option<String>,
}

/// One page of [`ListLocks`]: the live entries of up to [`LIST_PAGE_ROWS`] rows of the table,
/// after a given row, and where the next page starts. One scan. For a listing that shows its
/// progress or holds one page in memory at a time; pages read at different times are not one
/// snapshot (a lock taken or released meanwhile may be seen in either state, or, on a store
/// whose scan order is not the names' order, a row moved past may be missed), as with one
/// [`ListLocks`], whose pages are not one snapshot either.
pub struct ListPage {
    opts: LockOptions,
    after: Option<String>,
    steps: Steps<LockPage>,
}

impl ListPage {
    /// The table's first page.
    pub fn first(opts: &LockOptions) -> Self {
        ListPage {
            opts: opts.clone(),
            after: None,
            steps: Steps::new(opts),
        }
    }

    /// The page after the row `after` (a [`LockPage::next`]).
    pub fn after(opts: &LockOptions, after: String) -> Self {
        ListPage {
            after: Some(after),
            ..ListPage::first(opts)
        }
    }
}

impl Operation for ListPage {
    type Output = LockPage;

    fn poll(&mut self, now: Instant) -> Poll<LockPage> {
        let (opts, after) = (&self.opts, &mut self.after);
        self.steps.poll(now, |io, reply| match reply {
            None => {
                scan_after(io, opts, after.take());
                None
            }
            Some(Reply::Rows(rows)) => {
                let mut entries = Vec::new();
                let read = rows.len();
                let next = decode_page(rows, opts, &mut entries);
                Some(Ok(LockPage {
                    entries,
                    rows: read,
                    next,
                }))
            }
            Some(other) => Some(Err(unexpected("lock table scan", &other))),
        })
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.steps.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}
