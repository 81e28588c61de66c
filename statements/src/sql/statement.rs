//! The statement list, defined once: [`Statements`], every statement a store runs with its
//! parameters and result columns, and [`Statement`], which of them a host runs, with its
//! stable name and access for adapters and logs; then the names of the table-level
//! statements ([`schema_statement`]).
//!
//! Adding a statement is one entry in the list at the bottom (its doc, field, variant, name
//! and access) and its text in each constructor (`Statements::two_rows`, and `one_row.rs`
//! where the one-row table needs other SQL).

use alloc::string::String;
use alloc::vec::Vec;

use super::{Dialect, Layout};
use crate::statement_list::statement_list;

// The docs name these.
#[cfg(doc)]
use super::{create_table, Operation};

/// Defines [`Statements`], [`Statement`], [`Statements::map`] and [`Statements::get`] from
/// one list of `field: Variant = "stable-name", Access;` entries.
macro_rules! sql_statements {
    ( $( $(#[$doc:meta])* $field:ident: $Variant:ident = $name:literal, $access:ident; )* ) => {
        statement_list! {
            /// The statements an [`Operation`](super::Operation) asks a host to run (each is
            /// the [`Statements`] field of the same name, where its parameters and result
            /// columns are listed).
            pub enum Statement {
                $(
                    #[doc = concat!("[`Statements::", stringify!($field), "`].")]
                    $Variant = $name, $access;
                )*
            }
        }

        #[cfg(test)]
        impl Statement {
            /// The [`Statements`] field that holds the statement.
            pub(super) fn field(self) -> &'static str {
                match self {
                    $( Statement::$Variant => stringify!($field), )*
                }
            }
        }

        /// Every statement a store runs, built once per store: the text of each (`S =
        /// String`), or whatever a driver makes of it ([`Statements::map`]), such as a
        /// prepared-statement handle.
        #[derive(Clone, Debug)]
        pub struct Statements<S = String> {
            /// The database they are written for.
            pub dialect: Dialect,
            /// The table layout they are written for (see [`Layout`]).
            pub layout: Layout,
            $( $(#[$doc])* pub $field: S, )*
            /// Routines the statements call, made (or replaced) whenever the store starts with
            /// `create` on: MariaDB's claim procedure (`<table>_claim`); none elsewhere.
            pub routines: Vec<S>,
            /// The same, as text to show an operator.
            pub routines_ddl: String,
            /// `(table)` → the names of the table's columns (no rows if it does not exist).
            pub columns: S,
            /// `()` → `(value)` of the table's layout flag, if it has one ([`Layout::of_table`]).
            pub layout_flag: S,
            /// The statements that create the table.
            pub create: Vec<S>,
            /// The same, as text to show an operator.
            pub ddl: String,
            /// Adds the `stamp` column to a table made before it existed.
            pub add_stamp: S,
            /// The same, as text to show an operator.
            pub add_stamp_ddl: String,
            /// The table's name as the catalog query of `columns` expects it.
            pub catalog_name: String,
        }

        impl<S> Statements<S> {
            /// The same statements with each text turned into `T` by `f` (a driver's
            /// statement type).
            pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> Statements<T> {
                Statements {
                    dialect: self.dialect,
                    layout: self.layout,
                    $( $field: f(self.$field), )*
                    routines: self.routines.into_iter().map(&mut f).collect(),
                    routines_ddl: self.routines_ddl,
                    columns: f(self.columns),
                    layout_flag: f(self.layout_flag),
                    create: self.create.into_iter().map(&mut f).collect(),
                    ddl: self.ddl,
                    add_stamp: f(self.add_stamp),
                    add_stamp_ddl: self.add_stamp_ddl,
                    catalog_name: self.catalog_name,
                }
            }

            /// The statement `which`.
            pub fn get(&self, which: Statement) -> &S {
                match which {
                    $( Statement::$Variant => &self.$field, )*
                }
            }

            /// The statement `which`, to change.
            pub(crate) fn get_mut(&mut self, which: Statement) -> &mut S {
                match which {
                    $( Statement::$Variant => &mut self.$field, )*
                }
            }
        }
    };
}

sql_statements! {
    /// `(row)` → `(cell, value, remaining_ms, stamp)` of every live cell.
    read_all: ReadAll = "read-all", Read;
    /// `(row, from, to)` → live cells with `from <= cell < to`.
    read_range: ReadRange = "read-range", Read;
    /// `(row, from)` → live cells with `from <= cell`.
    read_from: ReadFrom = "read-from", Read;
    /// `(row, cell)` → the live cell.
    read_exact: ReadExact = "read-exact", Read;
    /// `(row, cell, value, ttl_ms, stamp)`: insert, or replace a row with a smaller stamp.
    put: Put = "put", Write;
    /// `(row, cell, stamp)`: remove the row if its stamp is at most `stamp`.
    delete: Delete = "delete", Write;
    /// [`Statements::delete`] as its own transaction, for operations on the store's own
    /// connections: on PostgreSQL it commits without waiting for the disk. It serves an
    /// acquisition removing its own cell as it backs off or gives up
    /// ([`Command::Delete`](baton_kernel::Command::Delete)), or another owner's cell at the
    /// version it read ([`Command::DeleteVersion`](baton_kernel::Command::DeleteVersion): a
    /// stale entry, a purge, a forced release, whose closing counter move is flushed and takes
    /// these deletes to the disk with it): lost in a server crash, the cell is back until its
    /// TTL, in others' way (a later holder, never two). Elsewhere the same text.
    delete_async: DeleteAsync = "delete-async", Write;
    /// `(row, cell, value, ttl_ms, stamp)`: insert, or take over an expired row; whether
    /// it was applied depends on the dialect (MariaDB reports a `LAST_INSERT_ID` marker), which
    /// [`Operation`] reads.
    insert_if_absent: InsertIfAbsent = "insert-if-absent", Write;
    /// `(new, ttl_ms, stamp, row, cell, expected)`: one row affected when applied.
    cas_update: CasUpdate = "cas-update", Write;
    /// `(row, cell, expected)`: one row affected when applied.
    cas_delete: CasDelete = "cas-delete", Write;
    /// MariaDB's and SQLite's one-row tables: [`Statements::delete`] (and its `_async` and `_notify`
    /// forms) of the `lock` cell, which ends the cell in place (the row keeps the name's
    /// fencing counter) where the others delete a row: `(row, cell, stamp)`. Elsewhere the
    /// same text as `delete`, and not used.
    end_lock: EndLock = "end-lock", Write;
    /// MariaDB's and SQLite's one-row tables: [`Statements::cas_delete`] of the `lock` cell, ended in place:
    /// `(row, cell, expected)`, one row affected when applied. Elsewhere the same text as
    /// `cas_delete`, and not used.
    cas_end_lock: CasEndLock = "cas-end-lock", Write;
    /// `(row, cell)` → `(value)` of the live cell.
    current: Current = "current", Read;
    /// `()` → `(row, cell)` of every expired row removed. Reads the whole table (no index on
    /// `expires_at`: see [`create_table`]).
    purge_all: PurgeAll = "purge-all", Write;
    /// `(row)` → `(row, cell)` of the row's expired cells removed.
    purge_row: PurgeRow = "purge-row", Write;
    /// SQLite's one-row table: the purge's second statement, after `purge_all` or `purge_row`
    /// ended the expired `lock` cells that hold a counter in place: `(row, or NULL for every
    /// row)` → `(row, cell, absent)` of every other expired row, deleted (`absent` 1: a `lock`
    /// row ended before, without a counter, which was no cell and is not listed). Elsewhere
    /// the same text as `purge_row`, and not used.
    purge_others: PurgeOthers = "purge-others", Write;
    /// `(limit)` → the first live row names.
    scan_first: ScanFirst = "scan-first", Read;
    /// `(after, limit)` → live row names after `after`.
    scan_after: ScanAfter = "scan-after", Read;
    /// `(first, last)` → `(row, cell, value, remaining_ms, stamp)` of live cells of rows in
    /// `[first, last]`.
    scan_cells: ScanCells = "scan-cells", Read;
    /// A claim ([`Command::Claim`](baton_kernel::Command::Claim)), in one statement on
    /// PostgreSQL (a data-modifying `WITH`, the counter row locked first) and MariaDB (a call
    /// of the routine in [`Statements::routines`]): `(row, cell, value, ttl_ms, stamp, counter,
    /// expected, next)` → `(inserted, bumped, lock, counter)`, the last two the live values
    /// found (`''`: none; an `expected` of `''` means no counter yet; a one-row table answers
    /// `''` for both: see [`Statements::claim_first`]). SQLite: the lock cell's half of a claim, run in one transaction with
    /// [`Statements::claim_counter`]: `(row, cell, value, ttl_ms, stamp, row, counter,
    /// expected)`, inserted (or an expired row taken over) only if the counter holds `expected`
    /// (NULL: absent).
    claim: Claim = "claim", Write;
    /// [`Statements::claim`] as its own transaction, for operations on the store's own
    /// connections: on PostgreSQL a claim that inserted nothing then commits without waiting
    /// for the disk (it wrote nothing, but the counter row's lock it may have taken would make
    /// its commit wait for a flush). Elsewhere the same text as `claim`.
    claim_async: ClaimAsync = "claim-async", Write;
    /// A claim that expects no counter (a name's first, or the first this client makes):
    /// [`Statements::claim`], but on a one-row table the only claim that may insert the row
    /// (there [`Statements::claim`] updates an existing row only, and both answer only
    /// whether they applied: `(applied, applied, '', '')`, the cells as found read after by
    /// [`Statements::guarded_current`]). The same text as `claim` on a two-row table.
    claim_first: ClaimFirst = "claim-first", Write;
    /// [`Statements::claim_first`] as [`Statements::claim_async`] is [`Statements::claim`].
    claim_first_async: ClaimFirstAsync = "claim-first-async", Write;
    /// SQLite: the counter's half of a claim: `(row, counter, next, stamp, row, cell, value,
    /// stamp, expected)`, written only if the lock cell holds this claim's value and stamp.
    claim_counter: ClaimCounter = "claim-counter", Write;
    /// SQLite: `(row, cell, row, cell, row, counter)` → `(lock value, lock stamp, counter)` as a
    /// claim left them (`''` and 0: none).
    claim_state: ClaimState = "claim-state", Read;
    /// A guarded removal ([`Command::GuardedSet`](baton_kernel::Command::GuardedSet) to nothing):
    /// `(row, cell, expected, row, guard, guard_value)` → one row when applied (PostgreSQL: and a
    /// notification on the table's channel).
    guarded_delete: GuardedDelete = "guarded-delete", Write;
    /// A guarded change: `(new, ttl_ms, stamp, row, cell, expected, row, guard, guard_value)`,
    /// one row affected when applied.
    guarded_update: GuardedUpdate = "guarded-update", Write;
    /// The delete of a release (a batch's delete): as [`Statements::delete`], `(row, cell,
    /// stamp)` → one row per row removed; on PostgreSQL it also notifies the table's channel
    /// with the lock's name, which wakes the waiters of every process that listens.
    delete_notify: DeleteNotify = "delete-notify", Write;
    /// [`Statements::guarded_delete`] as its own transaction, which on PostgreSQL commits
    /// without waiting for the disk (a release lost in a crash leaves the lock held until its
    /// TTL: later, never two holders). For operations on the store's own connections only.
    guarded_delete_async: GuardedDeleteAsync = "guarded-delete-async", Write;
    /// [`Statements::delete_notify`] likewise.
    delete_notify_async: DeleteNotifyAsync = "delete-notify-async", Write;
    /// PostgreSQL: a release of a bakery or column-prefix cell
    /// ([`Command::Vacate`](baton_kernel::Command::Vacate)) in one statement: `(row, row, cell,
    /// stamp)` → the row's live cells as `read_all` gives them, read before our cell is deleted.
    /// (Other databases read, then delete.)
    vacate_all: VacateAll = "vacate-all", Write;
    /// The same for a column prefix: `(row, from, to, row, cell, stamp)`.
    vacate_range: VacateRange = "vacate-range", Write;
    /// [`Statements::vacate_all`] committing without waiting for the disk (own connection).
    vacate_all_async: VacateAllAsync = "vacate-all-async", Write;
    /// [`Statements::vacate_range`] likewise.
    vacate_range_async: VacateRangeAsync = "vacate-range-async", Write;
    /// `(row, cell, row, guard)` → `(live value, guard value)` (`''`: none), after a guarded
    /// command that was not applied.
    guarded_current: GuardedCurrent = "guarded-current", Read;
    /// An object write ([`Command::SetObject`](baton_kernel::Command::SetObject)) that expects
    /// no object, guarded by a held lock: `(row, cell, value, stamp, row, lock, lock_value, row,
    /// counter, counter_value)`, one row affected when applied (MariaDB: with no
    /// `LAST_INSERT_ID` marker 1). The shapes of the object statements are in `object.rs`.
    object_insert_held: ObjectInsertHeld = "object-insert-held", Write;
    /// The same, guarded by a free lock: `(row, cell, value, stamp, row, lock)`.
    object_insert_free: ObjectInsertFree = "object-insert-free", Write;
    /// An object write that expects a value starting with `p`, guarded by a held lock:
    /// `(value, stamp, row, cell, p, prefix_end(p), row, lock, lock_value, row, counter,
    /// counter_value)`, one row affected when applied.
    object_update_held: ObjectUpdateHeld = "object-update-held", Write;
    /// The same, guarded by a free lock: `(value, stamp, row, cell, p, prefix_end(p), row,
    /// lock)`; on MariaDB `(row, lock, value, stamp, row, cell, p, prefix_end(p))`.
    object_update_free: ObjectUpdateFree = "object-update-free", Write;
    /// [`Statements::object_update_held`] for a prefix without an end (no `prefix_end(p)`).
    object_update_held_from: ObjectUpdateHeldFrom = "object-update-held-from", Write;
    /// [`Statements::object_update_free`] for a prefix without an end (no `prefix_end(p)`).
    object_update_free_from: ObjectUpdateFreeFrom = "object-update-free-from", Write;
    /// `(row, cell, row, lock, row, counter)` → `(object, lock, counter)`, their live values
    /// (`''`: none), after an object write that was not applied.
    object_current: ObjectCurrent = "object-current", Read;
}

/// The names of the table-level statements ([`Statements::columns`], [`Statements::layout_flag`],
/// [`Statements::create`], [`Statements::routines`], [`Statements::add_stamp`]) as a host
/// gives them to adapters, all of [`Access::Schema`](crate::Access::Schema).
pub mod schema_statement {
    /// [`Statements::columns`](super::Statements::columns).
    pub const COLUMNS: &str = "columns";
    /// [`Statements::layout_flag`](super::Statements::layout_flag).
    pub const LAYOUT_FLAG: &str = "layout-flag";
    /// Each of [`Statements::create`](super::Statements::create).
    pub const CREATE_TABLE: &str = "create-table";
    /// Each of [`Statements::routines`](super::Statements::routines).
    pub const CREATE_ROUTINE: &str = "create-routine";
    /// [`Statements::add_stamp`](super::Statements::add_stamp).
    pub const ADD_STAMP: &str = "add-stamp";
}
