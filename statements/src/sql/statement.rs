//! Which statement a host runs: [`Statement`], its stable name and access for adapters and
//! logs, and the names of the table-level statements ([`schema_statement`]).

// The docs name each statement's field of `Statements`.
#[cfg(doc)]
use super::Statements;

/// The statements an [`Operation`](super::Operation) asks a host to run (each is the
/// [`Statements`] field of the same name, where its parameters and result columns are listed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Statement {
    /// [`Statements::read_all`].
    ReadAll,
    /// [`Statements::read_range`].
    ReadRange,
    /// [`Statements::read_from`].
    ReadFrom,
    /// [`Statements::read_exact`].
    ReadExact,
    /// [`Statements::put`].
    Put,
    /// [`Statements::delete`].
    Delete,
    /// [`Statements::delete_async`].
    DeleteAsync,
    /// [`Statements::insert_if_absent`].
    InsertIfAbsent,
    /// [`Statements::cas_update`].
    CasUpdate,
    /// [`Statements::cas_delete`].
    CasDelete,
    /// [`Statements::current`].
    Current,
    /// [`Statements::purge_all`].
    PurgeAll,
    /// [`Statements::purge_row`].
    PurgeRow,
    /// [`Statements::scan_first`].
    ScanFirst,
    /// [`Statements::scan_after`].
    ScanAfter,
    /// [`Statements::scan_cells`].
    ScanCells,
    /// [`Statements::claim`].
    Claim,
    /// [`Statements::claim_async`].
    ClaimAsync,
    /// [`Statements::claim_first`].
    ClaimFirst,
    /// [`Statements::claim_first_async`].
    ClaimFirstAsync,
    /// [`Statements::claim_counter`].
    ClaimCounter,
    /// [`Statements::claim_state`].
    ClaimState,
    /// [`Statements::guarded_delete`].
    GuardedDelete,
    /// [`Statements::guarded_update`].
    GuardedUpdate,
    /// [`Statements::delete_notify`].
    DeleteNotify,
    /// [`Statements::guarded_delete_async`].
    GuardedDeleteAsync,
    /// [`Statements::delete_notify_async`].
    DeleteNotifyAsync,
    /// [`Statements::vacate_all`].
    VacateAll,
    /// [`Statements::vacate_range`].
    VacateRange,
    /// [`Statements::vacate_all_async`].
    VacateAllAsync,
    /// [`Statements::vacate_range_async`].
    VacateRangeAsync,
    /// [`Statements::guarded_current`].
    GuardedCurrent,
}

impl Statement {
    /// Every statement.
    pub const ALL: [Statement; 32] = [
        Statement::ReadAll,
        Statement::ReadRange,
        Statement::ReadFrom,
        Statement::ReadExact,
        Statement::Put,
        Statement::Delete,
        Statement::DeleteAsync,
        Statement::InsertIfAbsent,
        Statement::CasUpdate,
        Statement::CasDelete,
        Statement::Current,
        Statement::PurgeAll,
        Statement::PurgeRow,
        Statement::ScanFirst,
        Statement::ScanAfter,
        Statement::ScanCells,
        Statement::Claim,
        Statement::ClaimAsync,
        Statement::ClaimFirst,
        Statement::ClaimFirstAsync,
        Statement::ClaimCounter,
        Statement::ClaimState,
        Statement::GuardedDelete,
        Statement::GuardedUpdate,
        Statement::DeleteNotify,
        Statement::GuardedDeleteAsync,
        Statement::DeleteNotifyAsync,
        Statement::VacateAll,
        Statement::VacateRange,
        Statement::VacateAllAsync,
        Statement::VacateRangeAsync,
        Statement::GuardedCurrent,
    ];

    /// The statement's stable name, as adapters and logs are given it (`"claim"`,
    /// `"guarded-delete-async"`, …): the [`Statements`] field's name, in kebab case.
    pub fn name(self) -> &'static str {
        match self {
            Statement::ReadAll => "read-all",
            Statement::ReadRange => "read-range",
            Statement::ReadFrom => "read-from",
            Statement::ReadExact => "read-exact",
            Statement::Put => "put",
            Statement::Delete => "delete",
            Statement::DeleteAsync => "delete-async",
            Statement::InsertIfAbsent => "insert-if-absent",
            Statement::CasUpdate => "cas-update",
            Statement::CasDelete => "cas-delete",
            Statement::Current => "current",
            Statement::PurgeAll => "purge-all",
            Statement::PurgeRow => "purge-row",
            Statement::ScanFirst => "scan-first",
            Statement::ScanAfter => "scan-after",
            Statement::ScanCells => "scan-cells",
            Statement::Claim => "claim",
            Statement::ClaimAsync => "claim-async",
            Statement::ClaimFirst => "claim-first",
            Statement::ClaimFirstAsync => "claim-first-async",
            Statement::ClaimCounter => "claim-counter",
            Statement::ClaimState => "claim-state",
            Statement::GuardedDelete => "guarded-delete",
            Statement::GuardedUpdate => "guarded-update",
            Statement::DeleteNotify => "delete-notify",
            Statement::GuardedDeleteAsync => "guarded-delete-async",
            Statement::DeleteNotifyAsync => "delete-notify-async",
            Statement::VacateAll => "vacate-all",
            Statement::VacateRange => "vacate-range",
            Statement::VacateAllAsync => "vacate-all-async",
            Statement::VacateRangeAsync => "vacate-range-async",
            Statement::GuardedCurrent => "guarded-current",
        }
    }

    /// Whether the statement reads or may write the lock table.
    pub fn access(self) -> crate::Access {
        match self {
            Statement::ReadAll
            | Statement::ReadRange
            | Statement::ReadFrom
            | Statement::ReadExact
            | Statement::Current
            | Statement::ScanFirst
            | Statement::ScanAfter
            | Statement::ScanCells
            | Statement::ClaimState
            | Statement::GuardedCurrent => crate::Access::Read,
            Statement::Put
            | Statement::Delete
            | Statement::DeleteAsync
            | Statement::InsertIfAbsent
            | Statement::CasUpdate
            | Statement::CasDelete
            | Statement::PurgeAll
            | Statement::PurgeRow
            | Statement::Claim
            | Statement::ClaimAsync
            | Statement::ClaimFirst
            | Statement::ClaimFirstAsync
            | Statement::ClaimCounter
            | Statement::GuardedDelete
            | Statement::GuardedUpdate
            | Statement::DeleteNotify
            | Statement::GuardedDeleteAsync
            | Statement::DeleteNotifyAsync
            | Statement::VacateAll
            | Statement::VacateRange
            | Statement::VacateAllAsync
            | Statement::VacateRangeAsync => crate::Access::Write,
        }
    }
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
