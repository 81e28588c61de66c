//! Operations for operators: inspect a lock, purge expired entries, force a release.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use super::io::{Io, IoPoll};
use super::{CommandId, Operation, Poll};
use crate::error::{unexpected, Error, ErrorKind, Result};
use crate::lease::{EntryState, LockInfo};
use crate::mode::Mode;
use crate::model::{Cell, ColumnFilter, Command, ReadConsistency, Reply};
use crate::name::LockName;
use crate::options::{LockOptions, Sabotage, Strategy};
use crate::owner::OwnerId;
use crate::path::LockPath;
use crate::record::{decode_bakery, BakeryState, Fence, LockRecord};
use crate::retry::SplitMix64;
use crate::strategy::fence::{Bumped, FenceBump};
use crate::strategy::grant::{self, Place, Seen};
use crate::strategy::{prefix, RowColumns};

use super::acquire::delete_version;
use crate::time::Instant;

/// Decodes the live entries of one row: one lock's, or with paths a root's tree (each entry
/// then named by the path its column names).
pub(crate) fn entries(row: &str, opts: &LockOptions, cells: &[Cell]) -> Vec<LockInfo> {
    let columns = RowColumns::of(opts);
    // The counter of a path (the row's one counter without paths).
    let counter_of = |path: &str| {
        let column = match &columns.counters {
            Some(counters) => format!("{counters}{path}"),
            None => columns.fence.clone(),
        };
        cells
            .iter()
            .find(|c| c.column == column)
            .and_then(|c| Fence::decode(&c.value).ok())
    };
    let mut out: Vec<LockInfo> = Vec::new();
    for cell in cells.iter().filter(|c| columns.is_entry(&c.column)) {
        let base = LockInfo {
            name: String::from(columns.path_part(&cell.column).unwrap_or(row)),
            strategy: opts.strategy,
            column: cell.column.clone(),
            owner: String::from(columns.owner_part(&cell.column)),
            state: EntryState::Held,
            token: None,
            ticket: None,
            created_unix_ms: None,
            acquisition: crate::record::acq_of(&cell.value),
            mode: crate::record::entry_mode(&cell.value),
            value: cell.value.clone(),
            expires_in: cell.ttl_remaining,
        };
        let info = match opts.strategy {
            Strategy::Bakery => {
                let (state, created) =
                    decode_bakery(&cell.value).unwrap_or((BakeryState::Entering, 0));
                LockInfo {
                    state: if state == BakeryState::Entering {
                        EntryState::Entering
                    } else {
                        EntryState::Waiting
                    },
                    ticket: match state {
                        BakeryState::Ticket(n) => Some(n),
                        BakeryState::Entering => None,
                    },
                    created_unix_ms: Some(created),
                    ..base
                }
            }
            _ => {
                let record = LockRecord::decode(&cell.value).ok();
                let stale = opts.strategy == Strategy::ColumnPrefix && prefix::is_stale(cell);
                LockInfo {
                    owner: record
                        .as_ref()
                        .map_or(base.owner.clone(), |r| r.owner.clone()),
                    created_unix_ms: record.as_ref().map(|r| r.created_ms),
                    state: if stale {
                        EntryState::Stale
                    } else {
                        EntryState::Held
                    },
                    ..base
                }
            }
        };
        let token = counter_of(&info.name)
            .filter(|f| f.owner == info.owner)
            .map(|f| f.token);
        out.push(LockInfo { token, ..info });
    }
    if opts.strategy == Strategy::Bakery {
        // Queue order: by ticket, then by owner (the bakery's tie-break).
        out.sort_by(|a, b| match (a.ticket, b.ticket) {
            (Some(x), Some(y)) => {
                x.cmp(&y).then_with(
                    || match (OwnerId::parse(&a.owner), OwnerId::parse(&b.owner)) {
                        (Ok(p), Ok(q)) => p.tie_break(&q),
                        _ => a.owner.cmp(&b.owner),
                    },
                )
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.owner.cmp(&b.owner),
        });
    }
    mark_holders(opts, &mut out);
    out
}

/// Which of a row's entries hold, by the grant rule the strategy decides with
/// ([`grant::blockers`]): an entry holds when nothing placed before it keeps it out. Bakery
/// places entries by ticket (`out` is in queue order; a choosing entry may yet come first);
/// column prefix has no order, so the listing places them by their writers' `created` times,
/// which is right for a waiting writer behind readers and, for two columns that collided
/// (both about to back off), names the older one as holding. Informational: the strategies
/// decide from their own reads, never from this.
fn mark_holders(opts: &LockOptions, out: &mut [LockInfo]) {
    let strategy = opts.strategy;
    if strategy == Strategy::UniqueInsert {
        return;
    }
    // Each entry's path (without paths, its name as one segment; `None`: unreadable, which
    // conflicts with everything in the row).
    let paths: Vec<Option<LockPath>> = out
        .iter()
        .map(|e| {
            let name = LockName::new(&e.name).ok()?;
            if opts.paths {
                LockPath::from_name(name).ok()
            } else {
                Some(LockPath::flat(name))
            }
        })
        .collect();
    let live: Vec<usize> = (0..out.len())
        .filter(|&i| out[i].state != EntryState::Stale)
        .collect();
    let mut holds = alloc::vec![false; out.len()];
    for &i in &live {
        if strategy == Strategy::Bakery && out[i].state == EntryState::Entering {
            continue;
        }
        let me = &out[i];
        let seen: Vec<Seen<'_>> = live
            .iter()
            .filter(|&&j| j != i)
            .map(|&j| {
                let other = &out[j];
                let before = match strategy {
                    Strategy::Bakery => (j < i) && other.state != EntryState::Entering,
                    _ => (other.created_unix_ms, &other.column) < (me.created_unix_ms, &me.column),
                };
                Seen {
                    path: paths[j].as_ref(),
                    mode: other.mode,
                    place: if strategy == Strategy::Bakery && other.state == EntryState::Entering {
                        Place::Entering
                    } else if before {
                        Place::Before
                    } else {
                        Place::After
                    },
                }
            })
            .collect();
        let mode = me.mode.unwrap_or(Mode::Exclusive);
        holds[i] = paths[i].as_ref().is_some_and(|path| {
            grant::blockers(path, mode, &seen, Sabotage::None).is_ok_and(|b| b.is_empty())
        });
    }
    for (i, info) in out.iter_mut().enumerate() {
        info.state = match (info.state, holds[i]) {
            (EntryState::Stale | EntryState::Entering, _) => info.state,
            (_, true) => EntryState::Held,
            (_, false) if strategy == Strategy::Bakery => EntryState::Waiting,
            (_, false) => EntryState::Contending,
        };
    }
}

/// The strategy whose layout a row follows, judged from its columns (`None`: no lock entries,
/// e.g. only the fencing counter of a released lock). Column-prefix rows are recognised by the
/// prefix in `opts`.
pub(crate) fn infer_strategy(cells: &[Cell], opts: &LockOptions) -> Option<Strategy> {
    for strategy in Strategy::ALL {
        let probe = LockOptions {
            strategy,
            prefix: if strategy == Strategy::ColumnPrefix {
                opts.prefix.clone()
            } else {
                Default::default()
            },
            ..opts.clone()
        };
        let columns = RowColumns::of(&probe);
        if cells.iter().any(|c| columns.is_entry(&c.column)) {
            return Some(strategy);
        }
    }
    None
}

/// Whether a row's entries are laid out for paths (`<entries><path>|<owner>`): an owner id
/// never contains `|`, so an entry that does names a path (a column-prefix lock id with a `|`
/// in it is read as one too, which only changes how the listing names it).
fn holds_paths(cells: &[Cell], strategy: Strategy, opts: &LockOptions) -> bool {
    let columns = RowColumns::of(&LockOptions {
        strategy,
        paths: false,
        ..opts.clone()
    });
    cells.iter().any(|c| {
        columns.is_entry(&c.column)
            && columns
                .owner_part(&c.column)
                .contains(crate::strategy::PATH_END)
    })
}

fn read_for(name: &str, opts: &LockOptions) -> Command {
    let columns = RowColumns::of(opts);
    let consistency = match opts.strategy {
        Strategy::UniqueInsert => ReadConsistency::Serial(opts.serial),
        _ => ReadConsistency::Plain(opts.consistency),
    };
    Command::Read {
        row: String::from(RowColumns::row_of(opts, name)),
        filter: columns.filter(false),
        consistency,
    }
}

/// The entries of `name` among those of its row (with paths, the row holds its whole tree).
fn entries_of(name: &str, opts: &LockOptions, cells: &[Cell]) -> Vec<LockInfo> {
    let mut found = entries(RowColumns::row_of(opts, name), opts, cells);
    found.retain(|e| e.name == name);
    found
}

/// The plumbing every admin operation shares: one command at a time and a result.
pub(super) struct Steps<T> {
    pub(super) io: Io,
    rng: SplitMix64,
    started: bool,
    result: Option<Result<T>>,
}

impl<T: Clone> Steps<T> {
    pub(super) fn new(opts: &LockOptions) -> Self {
        Steps {
            io: Io::new(opts.store_attempts, opts.retry),
            rng: SplitMix64::new(opts.seed),
            started: false,
            result: None,
        }
    }

    /// Runs the plumbing; `step` gets each reply (`None` to start) and queues the next command or
    /// sets the result.
    pub(super) fn poll(
        &mut self,
        now: Instant,
        mut step: impl FnMut(&mut Io, Option<Reply>) -> Option<Result<T>>,
    ) -> Poll<T> {
        loop {
            if let Some(result) = &self.result {
                return Poll::Ready(result.clone());
            }
            match self.io.poll(now, &mut self.rng) {
                IoPoll::Out(out) => return out.into(),
                IoPoll::Done(Err(e), _) => self.result = Some(Err(e)),
                IoPoll::Done(Ok(reply), _) => self.result = step(&mut self.io, Some(reply)),
                IoPoll::Idle if !self.started => {
                    self.started = true;
                    self.result = step(&mut self.io, None);
                }
                IoPoll::Idle => {
                    self.result = Some(Err(Error::new(
                        ErrorKind::Internal,
                        "internal error: operation stalled",
                    )));
                }
            }
            if self.result.is_none() && self.io.is_idle() {
                self.result = Some(Err(Error::new(
                    ErrorKind::Internal,
                    "internal error: no next step",
                )));
            }
        }
    }
}

/// Lists the live entries of one lock: owner, state, token, ticket, age and expiry.
/// One read (serial for unique insert; plain for [`Inspect::any_strategy`]).
pub struct Inspect {
    name: LockName,
    opts: LockOptions,
    /// The strategy is read from the row's cells, as [`ListLocks`](super::ListLocks) reads it.
    any_strategy: bool,
    steps: Steps<Vec<LockInfo>>,
}

impl Inspect {
    /// An inspection of `name` as laid out by `opts.strategy`.
    pub fn new(name: LockName, opts: &LockOptions) -> Self {
        Inspect {
            name,
            opts: opts.clone(),
            any_strategy: false,
            steps: Steps::new(opts),
        }
    }

    /// An inspection of `name` whatever its strategy: its row read whole (plain consistency)
    /// and decoded by the layout its cells show, exactly as [`ListLocks`](super::ListLocks) decodes it, so that
    /// the entries are those a listing would give for `name` (`opts.paths` picks the row: the
    /// path's root). For an operator who knows a name but not how it was locked, at the cost
    /// of one read instead of a listing of the table.
    pub fn any_strategy(name: LockName, opts: &LockOptions) -> Self {
        Inspect {
            any_strategy: true,
            ..Inspect::new(name, opts)
        }
    }
}

impl Operation for Inspect {
    type Output = Vec<LockInfo>;

    fn poll(&mut self, now: Instant) -> Poll<Vec<LockInfo>> {
        let (name, opts, any) = (&self.name, &self.opts, self.any_strategy);
        let row = RowColumns::row_of(opts, name.as_str());
        self.steps.poll(now, |io, reply| match reply {
            None if any => {
                io.send(Command::Read {
                    row: String::from(row),
                    filter: ColumnFilter::All,
                    consistency: ReadConsistency::Plain(opts.consistency),
                });
                None
            }
            None => {
                io.send(read_for(name.as_str(), opts));
                None
            }
            Some(Reply::Cells(cells)) if any => {
                let mut found = row_entries(row, &cells, opts);
                found.retain(|e| e.name == name.as_str());
                Some(Ok(found))
            }
            Some(Reply::Cells(cells)) => Some(Ok(entries_of(name.as_str(), opts, &cells))),
            Some(other) => Some(Err(unexpected("inspection read", &other))),
        })
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.steps.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}

/// The live entries of one row of any strategy, decoded by the layout its cells show (none
/// for a row of no lock layout, such as an object's); with paths when its entries name paths.
pub(super) fn row_entries(row: &str, cells: &[Cell], opts: &LockOptions) -> Vec<LockInfo> {
    let Some(strategy) = infer_strategy(cells, opts) else {
        return Vec::new();
    };
    let layout_opts = LockOptions {
        strategy,
        // A tree's row: its entries name their paths.
        paths: holds_paths(cells, strategy, opts),
        prefix: if strategy == Strategy::ColumnPrefix {
            opts.prefix.clone()
        } else {
            Default::default()
        },
        ..opts.clone()
    };
    entries(row, &layout_opts, cells)
}

/// Removes expired entries (DBIx::Locker's periodic purge, Astyanax's `releaseExpiredLocks`).
///
/// First the store drops cells whose TTL has run out (of one lock, or of the whole table);
/// then, for a column-prefix lock named here, stale lock columns (older than their lease but
/// not yet expired) are deleted too, each at the version the read returned, so a column its
/// owner wrote again since the read (a new acquisition reusing the owner id, with a cell TTL
/// longer than the lease) survives. Returns the `(row, column)` pairs removed (a stale column
/// written again meanwhile is listed but kept). The fencing counter is never removed. Cost: one
/// purge, plus one read and one delete per stale column.
pub struct Purge {
    name: Option<LockName>,
    opts: LockOptions,
    removed: Vec<(String, String)>,
    stale: Vec<(String, u64)>,
    steps: Steps<Vec<(String, String)>>,
}

impl Purge {
    /// A purge of `name`, or of the whole table when `None`.
    pub fn new(name: Option<LockName>, opts: &LockOptions) -> Self {
        Purge {
            name,
            opts: opts.clone(),
            removed: Vec::new(),
            stale: Vec::new(),
            steps: Steps::new(opts),
        }
    }
}

impl Operation for Purge {
    type Output = Vec<(String, String)>;

    fn poll(&mut self, now: Instant) -> Poll<Self::Output> {
        let (name, opts, removed, stale) =
            (&self.name, &self.opts, &mut self.removed, &mut self.stale);
        let columns = RowColumns::of(opts);
        self.steps.poll(now, |io, reply| {
            match reply {
                None => {
                    io.send(Command::Purge {
                        row: name.as_ref().map(|n| String::from(n.as_str())),
                    });
                    return None;
                }
                Some(Reply::Purged(cells)) => {
                    removed.extend(cells);
                    let Some(name) = name
                        .as_ref()
                        .filter(|_| opts.strategy == Strategy::ColumnPrefix)
                    else {
                        return Some(Ok(removed.clone()));
                    };
                    io.send(read_for(name.as_str(), opts));
                    return None;
                }
                Some(Reply::Cells(cells)) => {
                    stale.extend(
                        cells
                            .iter()
                            .filter(|c| columns.is_entry(&c.column) && prefix::is_stale(c))
                            .map(|c| (c.column.clone(), c.stamp)),
                    );
                }
                Some(Reply::Written) => {}
                Some(other) => return Some(Err(unexpected("purge step", &other))),
            }
            let name = name
                .as_ref()
                .map(|n| String::from(n.as_str()))
                .unwrap_or_default();
            match stale.pop() {
                Some((column, stamp)) => {
                    removed.push((name.clone(), column.clone()));
                    io.send(delete_version(
                        name,
                        column,
                        stamp,
                        opts.consistency,
                        opts.sabotage(),
                    ));
                    None
                }
                None => Some(Ok(removed.clone())),
            }
        })
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.steps.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}

/// Breaks a lock on purpose (`baton release --force`, Astyanax's `releaseAllLocks`): removes
/// every entry of the lock, whoever owns it, and returns what was removed.
///
/// First it moves the fencing counter to the next token, written by the owner `forced-release`
/// with its count of forced releases one higher (compare-and-set, as grants do), so the broken
/// holder can tell its lease was broken: its next renewal reports [`ErrorKind::Lost`], and so
/// does its release; the next holder's token is still larger. Then it removes each entry it
/// read: unique insert by compare-and-set of the record found (never a blind delete of a
/// conditional cell); bakery and column prefix by a delete of the version read
/// ([`Command::DeleteVersion`]). Then it moves the counter once more, so a bakery waiter whose
/// ticket it deleted, and who read the queue between the two moves, sees the count change at
/// its next read and starts over at once (safety does not depend on this second move: a
/// waiter compares with the count it took before its `entering` write, which no forced release
/// able to delete that write is counted in, so a forced release that dies in between is caught
/// too). It reads the lock again afterwards and repeats for an entry that is still there with
/// the same value (a plain-strategy renewal racing it wrote it again), up to 3 reads; an entry
/// of a new acquisition is left alone.
///
/// Until the holder learns of it (within a third of its TTL, at its next renewal), it still
/// believes it holds: breaking a lock is an operator's decision to allow that overlap. Cost:
/// one read and two counter updates, plus one command per entry removed, and one read to check.
pub struct ForceRelease {
    name: LockName,
    opts: LockOptions,
    /// Only this holder's entry (an owner key), see [`ForceRelease::holder`].
    only: Option<String>,
    /// Entries still to remove, with the value and stamp each held.
    pending: Vec<(LockInfo, String, u64)>,
    /// Values of the entries targeted so far.
    targeted: Vec<String>,
    /// Every entry a removal was sent for (it may have been applied even if the operation
    /// then failed).
    attempted: Vec<LockInfo>,
    removed: Vec<LockInfo>,
    bump: Option<FenceBump>,
    /// Whether the counter update under way is the one after the deletes.
    closing: bool,
    /// The counter as our last update wrote it.
    written: Option<String>,
    reads: u32,
    steps: Steps<Vec<LockInfo>>,
}

impl ForceRelease {
    /// The entries this forced release sent a removal for so far: after a failure, the lock
    /// may already be broken for these holders (the error message names them too).
    pub fn attempted(&self) -> &[LockInfo] {
        &self.attempted
    }

    /// Breaks only the entry of the holder whose owner key (as listed, [`LockInfo::owner`])
    /// is `owner`: one reader of a shared lock, one permit of a semaphore. Its co-holders keep
    /// their leases (the counter's value names whom it broke, `fb=`); the broken holder learns
    /// at its next renewal. Nothing is released when no entry of the name has that owner.
    pub fn holder(mut self, owner: impl Into<String>) -> Self {
        self.only = Some(owner.into());
        self
    }

    /// A forced release of `name` as laid out by `opts.strategy`.
    pub fn new(name: LockName, opts: &LockOptions) -> Self {
        ForceRelease {
            name,
            opts: opts.clone(),
            only: None,
            pending: Vec::new(),
            targeted: Vec::new(),
            attempted: Vec::new(),
            removed: Vec::new(),
            bump: None,
            closing: false,
            written: None,
            reads: 0,
            steps: Steps::new(opts),
        }
    }
}

/// What a forced release does after a reply.
enum ForceNext {
    Read,
    Remove,
    /// Move the counter again after the deletes.
    Close,
    Done,
}

/// The forced release's update of the counter from `current`, breaking one holder (`only`)
/// or all.
fn forced_bump(
    name: &str,
    fence: &str,
    current: Option<&str>,
    opts: &LockOptions,
    only: Option<&String>,
) -> Result<FenceBump> {
    Ok(FenceBump::new(
        name,
        fence,
        String::from(crate::record::FORCED),
        0,
        current,
        false,
        opts.consistency,
        opts.serial,
    )?
    .forced(opts.paths, only.cloned()))
}

impl Operation for ForceRelease {
    type Output = Vec<LockInfo>;

    fn poll(&mut self, now: Instant) -> Poll<Vec<LockInfo>> {
        match self.poll_steps(now) {
            Poll::Ready(Err(e)) if !self.attempted.is_empty() => {
                let who: Vec<&str> = self.attempted.iter().map(|a| a.owner.as_str()).collect();
                Poll::Ready(Err(Error::new(
                    e.kind(),
                    format!(
                        "{} (the forced release had already sent the removal of the entries of {})",
                        e.message(),
                        who.join(", ")
                    ),
                )))
            }
            other => other,
        }
    }

    fn handle(&mut self, id: CommandId, reply: Reply) {
        self.steps.io.handle(id, reply);
    }

    fn wake(&mut self) {}
}

impl ForceRelease {
    fn poll_steps(&mut self, now: Instant) -> Poll<Vec<LockInfo>> {
        let (name, opts, only) = (&self.name, &self.opts, &self.only);
        let (pending, targeted, attempted, removed, bump, closing, written, reads) = (
            &mut self.pending,
            &mut self.targeted,
            &mut self.attempted,
            &mut self.removed,
            &mut self.bump,
            &mut self.closing,
            &mut self.written,
            &mut self.reads,
        );
        let columns = RowColumns::at(opts, name.as_str());
        let row = RowColumns::row_of(opts, name.as_str());
        self.steps.poll(now, |io, reply| {
            let next = match reply {
                None => ForceNext::Read,
                Some(Reply::Cells(cells)) => {
                    let first = *reads == 1;
                    *pending = entries_of(name.as_str(), opts, &cells)
                        .into_iter()
                        .filter(|info| only.as_ref().is_none_or(|o| &info.owner == o))
                        .filter_map(|info| {
                            let cell = cells.iter().find(|c| c.column == info.column)?;
                            let again = targeted.contains(&cell.value);
                            (first || again).then(|| (info, cell.value.clone(), cell.stamp))
                        })
                        .collect();
                    if pending.is_empty() {
                        ForceNext::Done
                    } else {
                        targeted.extend(pending.iter().map(|(_, v, _)| v.clone()));
                        let fence = cells
                            .iter()
                            .find(|c| c.column == columns.fence)
                            .map(|c| c.value.as_str());
                        match forced_bump(row, &columns.fence, fence, opts, only.as_ref()) {
                            Ok(b) => {
                                io.send(b.command());
                                *bump = Some(b);
                                *closing = false;
                                return None;
                            }
                            Err(e) => return Some(Err(e)),
                        }
                    }
                }
                Some(reply) if bump.is_some() => {
                    let Some(b) = bump.as_mut() else {
                        return Some(Err(unexpected("forced release step", &reply)));
                    };
                    match b.on_reply(reply) {
                        Ok(Bumped::Token(_)) if *closing => {
                            *bump = None;
                            ForceNext::Read
                        }
                        Ok(Bumped::Token(_)) => {
                            *written = Some(b.next_value());
                            *bump = None;
                            ForceNext::Remove
                        }
                        Ok(Bumped::Retry) => {
                            io.send(b.command());
                            return None;
                        }
                        // The closing update always lands, from whatever the counter holds
                        // now, so a grant that raced the deletes still sees the break counted.
                        Ok(Bumped::Moved(current)) if *closing => {
                            match forced_bump(
                                row,
                                &columns.fence,
                                Some(&current),
                                opts,
                                only.as_ref(),
                            ) {
                                Ok(b) => {
                                    io.send(b.command());
                                    *bump = Some(b);
                                    return None;
                                }
                                Err(e) => return Some(Err(e)),
                            }
                        }
                        // The counter moved under us (a grant): read the lock again.
                        Ok(Bumped::Moved(_)) => {
                            *bump = None;
                            ForceNext::Read
                        }
                        Err(e) => return Some(Err(e)),
                    }
                }
                Some(Reply::Written | Reply::Conditional { .. }) => {
                    if let Some((info, _, _)) = pending.pop() {
                        if !removed.iter().any(|r| r.column == info.column) {
                            removed.push(info);
                        }
                    }
                    ForceNext::Remove
                }
                Some(other) => return Some(Err(unexpected("forced release step", &other))),
            };
            let next = match next {
                ForceNext::Remove if pending.is_empty() => ForceNext::Close,
                other => other,
            };
            match next {
                ForceNext::Done => Some(Ok(removed.clone())),
                ForceNext::Close => {
                    // From the counter as our first update left it (read by compare-and-set).
                    let current = written.as_deref();
                    let b = match forced_bump(row, &columns.fence, current, opts, only.as_ref()) {
                        Ok(b) => b,
                        Err(e) => return Some(Err(e)),
                    };
                    io.send(b.command());
                    *bump = Some(b);
                    *closing = true;
                    None
                }
                ForceNext::Read => {
                    if *reads >= 3 {
                        // Removed, but written again by a racing renewal: the counter has moved,
                        // so its holder learns at its next renewal.
                        if !removed.is_empty() {
                            return Some(Ok(removed.clone()));
                        }
                        return Some(Err(Error::new(
                            ErrorKind::StoreError,
                            format!(
                                "lock {:?} kept changing during a forced release; try again",
                                name.as_str()
                            ),
                        )));
                    }
                    *reads += 1;
                    io.send(read_for(name.as_str(), opts));
                    None
                }
                ForceNext::Remove => {
                    let (next, value, stamp) = pending.last()?;
                    if !attempted
                        .iter()
                        .any(|a| a.column == next.column && a.value == next.value)
                    {
                        attempted.push(next.clone());
                    }
                    let row = String::from(row);
                    io.send(match opts.strategy {
                        Strategy::UniqueInsert => Command::CompareAndSet {
                            row,
                            column: next.column.clone(),
                            expected: value.clone(),
                            new: None,
                            ttl: None,
                            serial: opts.serial,
                            consistency: opts.consistency,
                        },
                        _ => delete_version(
                            row,
                            next.column.clone(),
                            *stamp,
                            opts.consistency,
                            opts.sabotage(),
                        ),
                    });
                    None
                }
            }
        })
    }
}
