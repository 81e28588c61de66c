//! The table's layout as a host last read it, and what a host does when `baton migrate` changes
//! it under a command: one decision for every host (the native store and the WebAssembly
//! package's SQL host), so that the hosts only run what it says.
//!
//! A host keeps one [`TableState`] per table. Each command runs with the layout it gives
//! ([`TableState::get`]); after that first run, [`TableState::after_run`] says whether the
//! table changed under it (a two-row command met a moved name's marker, or the guard
//! `migrate` makes with the layout flag refused a counter row) and what to do: answer, read
//! the layout again, or read it and run the command again in the layout read
//! ([`TableState::rerun_in`]). A command that met a marker on its own (a routed command that
//! ran again in one row, [`Operation::met_marker`](super::Operation::met_marker)) makes the
//! layout due for a read ([`TableState::due`]), taken by a later command at most once a second
//! ([`TableState::take_refresh`]).
//!
//! Costs: two atomic loads per command when nothing changed (the host's clock is read only
//! when a read is due); a read of the layout (two statements: the columns and the flag) and at
//! most one more run of the command when it did.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use alloc::string::String;

use baton_kernel::{Command, Failure, Reply};

use super::layout::Layout;
use super::moving::{is_moving, moving_route, shows_marker, Route};
use super::Dialect;

/// How long after one read of the layout the next may be taken for a due refresh.
const REFRESH_EVERY_MS: u64 = 1_000;

/// No read taken yet.
const NEVER: u64 = u64::MAX;

/// The table's layout as a host last read it: two rows, being moved, or one row, in that order
/// only (`baton migrate` moves a table forward, never back, so an older reading, from a slow
/// check or a caller's transaction's snapshot, never takes a host back). One value, so that a
/// command never sees half of a change. Shared by every command of a store (atomics only).
#[derive(Debug)]
pub struct TableState {
    /// 0: two rows; 1: being moved; 2: one row.
    stage: AtomicU8,
    /// A command met a moved name's marker (or could not read the layout) since the layout was
    /// last read.
    refresh_due: AtomicBool,
    /// When the layout was last read for a due refresh, in the host's milliseconds ([`NEVER`]).
    last_read_ms: AtomicU64,
}

impl Default for TableState {
    fn default() -> Self {
        TableState {
            stage: AtomicU8::new(0),
            refresh_due: AtomicBool::new(false),
            last_read_ms: AtomicU64::new(NEVER),
        }
    }
}

/// How a command's first run ended, as [`TableState::after_run`] needs it.
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'a> {
    /// The store answered.
    Replied(&'a Reply),
    /// The database refused a statement by a guard `baton migrate` makes
    /// ([`names_a_migrate_guard`]): the flag's (no counter row in a one-row table), or the one
    /// that keeps moved counters (never deleted, a marker never set back).
    MigrateGuard,
    /// Any other failure.
    Failed,
}

/// What a host does after a command's first run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Answer with the first run's outcome.
    Answer,
    /// Read the layout again ([`TableState::read`]), then answer with the first run's outcome.
    ReadLayout,
    /// Read the layout again, then run the command again as [`TableState::rerun_in`] says
    /// (answering with the first run's outcome when it says not to).
    ReadLayoutThenRerun,
}

impl TableState {
    /// The layout, and whether the table is being moved.
    pub fn get(&self) -> (Layout, bool) {
        match self.stage.load(Ordering::Acquire) {
            0 => (Layout::TwoRows, false),
            1 => (Layout::TwoRows, true),
            _ => (Layout::OneRow, false),
        }
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.get().0
    }

    /// Records a reading ([`read_layout`]'s answer); one older than what is known changes
    /// nothing. Returns `layout`.
    pub fn set(&self, layout: Layout, moving: bool) -> Layout {
        let stage = match (layout, moving) {
            (Layout::OneRow, _) => 2,
            (Layout::TwoRows, true) => 1,
            (Layout::TwoRows, false) => 0,
        };
        self.stage.fetch_max(stage, Ordering::AcqRel);
        layout
    }

    /// Records a read of the layout: the reading, or a failure, which leaves the layout due
    /// for a later command.
    pub fn read(&self, reading: &Result<(Layout, bool), Failure>) {
        match reading {
            Ok((layout, moving)) => {
                self.set(*layout, *moving);
            }
            Err(_) => self.due(),
        }
    }

    /// Makes the layout due for a read: a command met a moved name's marker (the table's flag
    /// may be there now), or one in a caller's transaction met the table changed.
    pub fn due(&self) {
        self.refresh_due.store(true, Ordering::Relaxed);
    }

    /// Whether a read of the layout is due.
    pub fn refresh_due(&self) -> bool {
        self.refresh_due.load(Ordering::Relaxed)
    }

    /// Takes a due read of the layout: true (and no longer due) when one is due and none was
    /// taken in the last second by the host's clock `now_ms` (any milliseconds that do not go
    /// back, as a rule; read only when a read is due); the host then reads the layout and
    /// records it ([`TableState::read`]).
    pub fn take_refresh(&self, now_ms: impl FnOnce() -> u64) -> bool {
        if !self.refresh_due() {
            return false;
        }
        let now_ms = now_ms();
        let last = self.last_read_ms.load(Ordering::Relaxed);
        // A clock that went back allows a read rather than none.
        if last != NEVER && now_ms >= last && now_ms - last < REFRESH_EVERY_MS {
            return false;
        }
        if self
            .last_read_ms
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false; // another command took it
        }
        self.refresh_due.store(false, Ordering::Relaxed);
        true
    }

    /// What to do after `command`'s first run, which ran in `ran` (the layout and whether it
    /// was routed as moving, as [`TableState::get`] gave it) and ended as `outcome`.
    /// `in_callers_transaction`: the command ran in a caller's transaction, where the layout
    /// cannot be read (an error has aborted a PostgreSQL transaction, and its snapshot may be
    /// old): it is made due for a later command instead. `now_ms`: as for
    /// [`TableState::take_refresh`].
    ///
    /// The table changed under the command when it ran in two rows, not routed, and met a
    /// moved name's marker, or ran in two rows and was refused by a guard of `migrate`'s: the
    /// layout is read at once, and the command runs again when that is safe
    /// ([`TableState::rerun_in`]); any other fails this once, closed (a marker is no counter).
    /// Otherwise a due read is taken when one is.
    pub fn after_run(
        &self,
        command: &Command,
        ran: (Layout, bool),
        outcome: Outcome<'_>,
        in_callers_transaction: bool,
        now_ms: impl FnOnce() -> u64,
    ) -> Next {
        let (layout, moving) = ran;
        let changed = layout == Layout::TwoRows
            && match outcome {
                Outcome::Replied(reply) => !moving && shows_marker(command, reply),
                Outcome::MigrateGuard => true,
                Outcome::Failed => false,
            };
        match (changed, in_callers_transaction) {
            (true, true) => {
                self.due();
                Next::Answer
            }
            (true, false) => Next::ReadLayoutThenRerun,
            (false, false) if self.take_refresh(now_ms) => Next::ReadLayout,
            (false, _) => Next::Answer,
        }
    }

    /// After [`Next::ReadLayoutThenRerun`] and the read (recorded, [`TableState::read`]): the
    /// layout and routing to run `command` again in, or `None` to answer with the first run
    /// (the read failed, or the table is still two-row and not being moved, or the command is
    /// not one of these). Run again: a command that applied nothing on meeting a marker or a
    /// guard (one that writes or guards by the counter, [`Route::TwoRowsFirst`]); a read (a
    /// `Read` or `Scan`, which changes nothing: its answer is one it could have had a moment
    /// later); a purge, which only a guard stops (MariaDB's, on a moved counter's row an
    /// earlier reading takes for an expired cell) and which deletes only expired cells: if a
    /// step before the refused one deleted some, the second run does not list them again.
    /// Not run again: a `Vacate` (it deleted before its read showed the marker) and plain
    /// writes.
    pub fn rerun_in(
        &self,
        command: &Command,
        reading: &Result<(Layout, bool), Failure>,
    ) -> Option<(Layout, bool)> {
        let (layout, moving) = *reading.as_ref().ok()?;
        let moved = moving || layout == Layout::OneRow;
        let again = matches!(
            command,
            Command::Read { .. } | Command::Scan { .. } | Command::Purge { .. }
        ) || moving_route(command) == Route::TwoRowsFirst;
        (moved && again).then_some((layout, moving && layout == Layout::TwoRows))
    }
}

/// The layout of table `table` and whether `baton migrate` is moving it, from its layout flag
/// (`None`: no flag row) and its columns: what a host's read of the layout answers (the same
/// two reads as [`SchemaSetup`](super::SchemaSetup)'s, without its checks), or why this
/// version cannot use the table ([`Layout::of_table`]).
pub fn read_layout(
    dialect: Dialect,
    table: &str,
    flag: Option<&str>,
    columns: &[String],
) -> Result<(Layout, bool), Failure> {
    let layout = Layout::of_table(dialect, table, flag, columns).map_err(Failure::Rejected)?;
    Ok((layout, is_moving(flag, columns)))
}

/// Whether a database error's `message` is the refusal of a guard `baton migrate` makes on
/// table `table`: the layout flag's (a counter row made in a table whose counters are in its
/// lock rows: PostgreSQL's and MariaDB's constraint `<table>_moved`, SQLite's trigger of that
/// name and message), or the one that keeps moved counters (MariaDB's delete trigger, and
/// every database's trigger that keeps a marker: "… is never removed or set back").
pub fn names_a_migrate_guard(message: &str, table: &str) -> bool {
    let mut name = String::from(table);
    name.push_str("_moved");
    message.contains(name.as_str())
        || message.contains("keeps its fencing counters in its lock rows")
        || message.contains("is never removed or set back (baton migrate)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;
    use baton_kernel::strategy::COUNTER_COLUMN;
    use baton_kernel::{Cell, ColumnFilter, Consistency, ReadConsistency, SerialConsistency};

    fn claim() -> Command {
        Command::Claim {
            row: "job".into(),
            column: "lock".into(),
            value: "me".into(),
            ttl: Some(core::time::Duration::from_secs(30)),
            counter: COUNTER_COLUMN.into(),
            counter_expected: Some("token=3".into()),
            counter_next: "token=4".into(),
            turn: None,
            serial: SerialConsistency::Serial,
            consistency: Consistency::default(),
        }
    }

    fn read() -> Command {
        Command::Read {
            row: "job".into(),
            filter: ColumnFilter::All,
            consistency: ReadConsistency::Plain(Consistency::default()),
        }
    }

    fn marker_cells() -> Reply {
        Reply::Cells(vec![Cell {
            column: COUNTER_COLUMN.to_string(),
            value: super::super::MARKER.to_string(),
            ttl_remaining: None,
            stamp: 1,
        }])
    }

    #[test]
    fn the_stage_only_moves_forward() {
        let s = TableState::default();
        assert_eq!(s.get(), (Layout::TwoRows, false));
        s.set(Layout::TwoRows, true);
        assert_eq!(s.get(), (Layout::TwoRows, true));
        s.set(Layout::TwoRows, false);
        assert_eq!(
            s.get(),
            (Layout::TwoRows, true),
            "an older reading moved it back"
        );
        s.set(Layout::OneRow, false);
        s.set(Layout::TwoRows, true);
        assert_eq!(s.get(), (Layout::OneRow, false));
    }

    #[test]
    fn a_due_read_is_taken_once_a_second_at_most() {
        let s = TableState::default();
        assert!(!s.take_refresh(|| 10), "nothing due");
        s.due();
        assert!(s.take_refresh(|| 10));
        assert!(!s.refresh_due());
        s.due();
        assert!(!s.take_refresh(|| 500), "within a second of the last");
        assert!(s.refresh_due(), "still due");
        assert!(s.take_refresh(|| 1_010));
        s.due();
        assert!(s.take_refresh(|| 5), "a clock that went back allows one");
    }

    #[test]
    fn a_marker_met_in_two_rows_reads_the_layout_and_reruns_a_claim() {
        let s = TableState::default();
        let guarded = Reply::Guarded {
            applied: false,
            guard: Some(super::super::MARKER.into()),
            current: None,
        };
        let ran = s.get();
        assert_eq!(
            s.after_run(&claim(), ran, Outcome::Replied(&guarded), false, || 0),
            Next::ReadLayoutThenRerun
        );
        // Being moved: the claim runs routed; one-row: in one row.
        assert_eq!(
            s.rerun_in(&claim(), &Ok((Layout::TwoRows, true))),
            Some((Layout::TwoRows, true))
        );
        assert_eq!(
            s.rerun_in(&claim(), &Ok((Layout::OneRow, false))),
            Some((Layout::OneRow, false))
        );
        // Not moved after all, or the read failed: the first answer stands.
        assert_eq!(s.rerun_in(&claim(), &Ok((Layout::TwoRows, false))), None);
        assert_eq!(
            s.rerun_in(&claim(), &Err(Failure::Rejected("x".into()))),
            None
        );
        // A read that met a marker runs again (it changed nothing); a write that is not of
        // the counter does not (it may have applied).
        let next = s.after_run(&read(), ran, Outcome::Replied(&marker_cells()), false, || 0);
        assert_eq!(next, Next::ReadLayoutThenRerun);
        assert_eq!(
            s.rerun_in(&read(), &Ok((Layout::TwoRows, true))),
            Some((Layout::TwoRows, true))
        );
        let vacate = Command::Vacate {
            row: "job".into(),
            column: "ticket".into(),
            read: ColumnFilter::All,
            consistency: Consistency::default(),
        };
        let next = s.after_run(&vacate, ran, Outcome::Replied(&marker_cells()), false, || 0);
        assert_eq!(next, Next::ReadLayoutThenRerun);
        assert_eq!(s.rerun_in(&vacate, &Ok((Layout::OneRow, false))), None);
        // A purge refused by the guard that keeps moved counters runs again.
        let purge = Command::Purge { row: None };
        let next = s.after_run(&purge, ran, Outcome::MigrateGuard, false, || 0);
        assert_eq!(next, Next::ReadLayoutThenRerun);
        assert_eq!(
            s.rerun_in(&purge, &Ok((Layout::TwoRows, true))),
            Some((Layout::TwoRows, true))
        );
    }

    #[test]
    fn in_a_callers_transaction_the_read_waits_for_a_later_command() {
        let s = TableState::default();
        let ran = s.get();
        assert_eq!(
            s.after_run(&claim(), ran, Outcome::MigrateGuard, true, || 0),
            Next::Answer
        );
        assert!(s.refresh_due());
        assert_eq!(
            s.after_run(&read(), ran, Outcome::Failed, false, || 0),
            Next::ReadLayout
        );
        assert!(!s.refresh_due());
    }

    #[test]
    fn routed_or_one_row_commands_do_not_count_a_marker_as_a_change() {
        let s = TableState::default();
        for ran in [(Layout::TwoRows, true), (Layout::OneRow, false)] {
            let next = s.after_run(&read(), ran, Outcome::Replied(&marker_cells()), false, || 0);
            assert_eq!(next, Next::Answer, "{ran:?}");
        }
        assert_eq!(
            s.after_run(
                &claim(),
                (Layout::OneRow, false),
                Outcome::MigrateGuard,
                false,
                || 0
            ),
            Next::Answer
        );
    }

    #[test]
    fn migrates_guards_are_named() {
        assert!(names_a_migrate_guard(
            "new row for relation \"locks\" violates check constraint \"locks_moved\"",
            "locks"
        ));
        assert!(names_a_migrate_guard(
            "the lock table keeps its fencing counters in its lock rows",
            "t"
        ));
        assert!(names_a_migrate_guard(
            "baton: a moved fencing counter of table locks is never removed or set back (baton migrate)",
            "locks"
        ));
        assert!(!names_a_migrate_guard("duplicate key", "locks"));
    }
}
