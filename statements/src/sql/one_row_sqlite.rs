//! SQLite's one-row layout ([`Layout::OneRow`](super::Layout)): PostgreSQL's mapping
//! (`one_row.rs`: the counter `_LOCK_` of a name in the `fence` and `fence_stamp` columns of
//! its `lock` row) in the statements SQLite has, so that unique insert's claim and release
//! are each one plain `UPDATE` of one row (`docs/one-row-claim.md`, "SQLite").
//!
//! The shape is MariaDB's (`one_row_mysql.rs`), which SQLite shares the limits of: no
//! data-changing `WITH`, so a statement changes one kind of row, and a removal of the `lock`
//! cell *ends it in place* (`value = ''`, `expires_at = 0`, [`ABSENT`]) by a statement of its
//! own; claims, releases and conditional changes answer by the rows they changed
//! (`sqlite3_changes`); reads of many cells are a key-order scan of the row's table rows,
//! split into cells by the operation; statements written with `$n` run with positional `?`s
//! in the order [`binds`] gives (an adapter binds `?`s in order: `?NNN` would need every host
//! to bind by number). Where SQLite differs from MariaDB:
//!
//! - `ON CONFLICT … DO UPDATE … WHERE` answers by the rows it changed: a row kept is no row
//!   (no `LAST_INSERT_ID` marker is needed), and comparisons are binary (the columns' default
//!   `BINARY` collation), so `'_lock_'` is never taken for `'_LOCK_'`.
//! - **The purge** is two statements, each atomic and each checking expiry as it runs (no
//!   procedures): expired `lock` cells that hold a counter ended in place (`purge_all`,
//!   `purge_row`: `UPDATE … RETURNING`), then every other expired row deleted
//!   ([`Statements::purge_others`]: `DELETE … RETURNING`), a `lock` row absent already and
//!   without a counter among them, flagged so that it is not listed. A claim between them is
//!   never undone: each removes only what is expired when it runs.
//! - **The table and its flag** appear together by a rename: SQLite's DDL is transactional,
//!   but a host runs one statement at a time on a pool, so the table is made as
//!   `<table>__creating`, given its flag, and renamed ([`create`]).
//!
//! Cost: the claim is one `UPDATE` (a name's first, one `INSERT … ON CONFLICT DO UPDATE`), the
//! release one `UPDATE`, each in autocommit, where the two-row layout runs the claim as a
//! transaction of two statements and a read, and releases with `DELETE … RETURNING`.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::layout::{FLAG_CELL, FLAG_ROW, MARKER, ONE_ROW_FLAG};
use super::one_row_mysql::{in_place_statements, InPlace};
use super::{Dialect, Statement, Statements};

/// The `expires_at` of an absent `lock` cell: never live, told apart from an expired cell (a
/// past time, never 0: an expiry is the clock plus at least 1 ms) by equality.
pub(crate) const ABSENT: &str = "0";
/// The assignments that end a `lock` cell in place.
const END: &str = "value = '', expires_at = 0";
/// The `lock` cell is not absent already (`IS NOT`: a cell without a TTL is not absent).
const NOT_ABSENT: &str = "expires_at IS NOT 0";

/// The expiry of a cell written now with a TTL of `ms` milliseconds (NULL: none).
fn expiry(ms: &str) -> String {
    Dialect::Sqlite.expiry().replacen('?', ms, 1)
}

/// For each SQLite one-row statement whose `?`s do not take the operation's parameters one
/// for one in order, the parameter (from 1) each `?` takes; `None`: in order. A test checks
/// the list against the numbered texts.
pub(crate) fn binds(statement: Statement) -> Option<&'static [u8]> {
    Some(match statement {
        Statement::ReadAll => &[1],
        Statement::ReadRange => &[2, 3, 2, 3, 2, 3, 1, 2, 3, 2, 3],
        Statement::ReadFrom => &[2, 2, 2, 1, 2, 2],
        Statement::ReadExact => &[2, 2, 2, 2, 1, 2, 2, 2],
        Statement::Current => &[2, 1, 2, 2, 2],
        Statement::Put | Statement::InsertIfAbsent => {
            &[1, 2, 2, 2, 3, 2, 4, 2, 5, 2, 3, 2, 5, 2, 2, 2, 2, 2, 2]
        }
        Statement::CasUpdate => &[5, 1, 5, 3, 5, 1, 5, 2, 5, 3, 4, 5, 5, 5, 6, 6],
        Statement::ScanCells => &[1, 2, 1, 2],
        Statement::Claim | Statement::ClaimAsync => &[3, 4, 5, 8, 5, 1, 2, 6, 7],
        Statement::ClaimFirst | Statement::ClaimFirstAsync => &[1, 3, 4, 5, 8, 5, 2, 6, 7],
        Statement::PurgeOthers => &[1, 1],
        _ => return None,
    })
}

/// The statements written with `$n` placeholders, by statement: `positional` makes the text
/// SQLite runs, and the order [`binds`] gives.
fn numbered(t: &str, moving: bool) -> Vec<(Statement, String)> {
    let d = Dialect::Sqlite;
    let (rem, live, expired) = (d.remaining(), d.live(), d.expired());
    // A read of many cells of row $1: its table rows in key order, each with its own cell's
    // columns, whether that cell is in (`own`: in the range asked for, and live), and the
    // counter its `fence` columns hold when that is in (as MariaDB's: `split_cells`).
    let not_a_marker = if moving {
        format!("(cell <> '_LOCK_' OR value <> '{MARKER}')")
    } else {
        String::from("cell <> '_LOCK_'")
    };
    let split = |own: &str, counter_in: &str| {
        let counter = format!("cell = 'lock' AND fence IS NOT NULL AND {counter_in}");
        // A row named `_LOCK_` is never a cell here: in a table `migrate` moved, it is a
        // name's marker (`layout::MARKER`); a table made one-row refuses such rows. While
        // `migrate` moves the table, those that are no marker are counters of names not moved
        // yet, and cells.
        let own = if own.is_empty() {
            format!("{not_a_marker} AND {live}")
        } else {
            format!("{own} AND {not_a_marker} AND {live}")
        };
        format!(
            "SELECT cell, value, {rem}, stamp, ({own}), CASE WHEN {counter} THEN fence ELSE '' END, CASE WHEN {counter} THEN COALESCE(fence_stamp, 0) END FROM {t} WHERE lock_name = $1 AND (({own}) OR ({counter})) ORDER BY cell"
        )
    };
    // A read of one cell of row $1 ($2): the counter from the `lock` row's `fence`, any other
    // cell from its own row (a point read of the key either way).
    let c = "$2 = '_LOCK_'";
    // While `migrate` moves the table, the counter of a name not moved yet is its counter row
    // (when that is not a marker): both rows are candidates, and the last `CASE` keeps the
    // right one (the placeholders keep the one-row order: `binds` serves both).
    let from_lock_row = if moving { " AND cell = 'lock'" } else { "" };
    let exact = |columns: &str| {
        if moving {
            format!(
                "SELECT {columns} FROM {t} WHERE lock_name = $1 AND cell IN (CASE WHEN {c} THEN 'lock' ELSE $2 END, '_LOCK_') AND CASE WHEN {c} THEN (cell = 'lock' AND fence IS NOT NULL) OR (cell = '_LOCK_' AND value <> '{MARKER}') ELSE cell <> '_LOCK_' AND {live} END"
            )
        } else {
            format!(
                "SELECT {columns} FROM {t} WHERE lock_name = $1 AND cell = CASE WHEN {c} THEN 'lock' ELSE $2 END AND CASE WHEN {c} THEN fence IS NOT NULL ELSE {live} END"
            )
        }
    };
    // A write of `_LOCK_` is a write of the `lock` row's `fence` and `fence_stamp` (the row
    // created absent, at stamp 0, when missing); of any other cell, of its own row. On a
    // conflict, `written` says, for each kind, whether the row is written.
    let upsert = |counter_written: &str, other_written: &str| {
        format!(
            "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) VALUES ($1, CASE WHEN {c} THEN 'lock' ELSE $2 END, CASE WHEN {c} THEN '' ELSE $3 END, CASE WHEN {c} THEN {ABSENT} ELSE {} END, CASE WHEN {c} THEN 0 ELSE $5 END, CASE WHEN {c} THEN $3 END, CASE WHEN {c} THEN $5 END) \
ON CONFLICT (lock_name, cell) DO UPDATE SET fence = CASE WHEN {c} THEN excluded.fence ELSE fence END, fence_stamp = CASE WHEN {c} THEN excluded.fence_stamp ELSE fence_stamp END, \
value = CASE WHEN {c} THEN value ELSE excluded.value END, expires_at = CASE WHEN {c} THEN expires_at ELSE excluded.expires_at END, stamp = CASE WHEN {c} THEN stamp ELSE excluded.stamp END \
WHERE CASE WHEN {c} THEN {counter_written} ELSE {other_written} END",
            expiry("$4")
        )
    };
    // A put replaces an older counter or none; another cell an older one or an absent one.
    let put = upsert(
        "fence IS NULL OR fence_stamp < excluded.fence_stamp",
        &format!("stamp < excluded.stamp OR expires_at IS {ABSENT}"),
    );
    // An insert-if-absent writes a counter where there is none, another cell where it is not
    // live (absent or expired); a row kept changes nothing, and counts none.
    let insert_if_absent = upsert("fence IS NULL", &expired);
    let cc = "$5 = '_LOCK_'";
    let cas_update = format!(
        "UPDATE {t} SET fence = CASE WHEN {cc} THEN $1 ELSE fence END, fence_stamp = CASE WHEN {cc} THEN $3 ELSE fence_stamp END, \
value = CASE WHEN {cc} THEN value ELSE $1 END, expires_at = CASE WHEN {cc} THEN expires_at ELSE {} END, stamp = CASE WHEN {cc} THEN stamp ELSE $3 END \
WHERE lock_name = $4 AND cell = CASE WHEN {cc} THEN 'lock' ELSE $5 END AND CASE WHEN {cc} THEN fence = $6 ELSE value = $6 AND {live} END",
        expiry("$2")
    );
    let scan_cells = format!(
        "SELECT lock_name, cell, value, {rem}, stamp FROM (\
SELECT lock_name, cell, value, expires_at, stamp FROM {t} WHERE lock_name >= $1 AND lock_name <= $2 AND lock_name <> '' AND {not_a_marker} \
UNION ALL SELECT lock_name, '_LOCK_' AS cell, fence AS value, NULL AS expires_at, fence_stamp AS stamp FROM {t} WHERE lock_name >= $1 AND lock_name <= $2 AND lock_name <> '' AND cell = 'lock' AND fence IS NOT NULL\
) WHERE {live} ORDER BY lock_name, cell"
    );
    // Unique insert's claim of a name that has a counter: the row taken over where its lock
    // cell is not live and the counter is the expected one, both cells in one row. SQLite
    // runs one writer at a time: the conditions and the change are one step. Changed: applied;
    // not changed: the cells as found are read after (`guarded_current`).
    let claim = format!(
        "UPDATE {t} SET value = $3, expires_at = {}, stamp = $5, fence = $8, fence_stamp = $5 WHERE lock_name = $1 AND cell = 'lock' AND $2 = 'lock' AND $6 = '_LOCK_' AND {expired} AND fence IS NULLIF($7, '')",
        expiry("$4")
    );
    // A name's first claim (no counter expected): the row inserted, or one without a counter
    // whose lock cell is not live taken over. (SQLite's parser needs the `WHERE` before an
    // `ON CONFLICT` of an `INSERT … SELECT`; it has one.)
    let claim_first = format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) SELECT $1, 'lock', $3, {}, $5, $8, $5 WHERE $2 = 'lock' AND $6 = '_LOCK_' AND $7 = '' \
ON CONFLICT (lock_name, cell) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, stamp = excluded.stamp, fence = excluded.fence, fence_stamp = excluded.fence_stamp \
WHERE {expired} AND fence IS NULL",
        expiry("$4")
    );
    // The purge's second statement (`(row, or NULL for the whole table)`): every expired row
    // but a `lock` row that holds a counter (the first statement ended those in place),
    // flagged when it was absent already, which is no cell and is not listed.
    let purge_others = format!(
        "DELETE FROM {t} WHERE ($1 IS NULL OR lock_name = $1) AND lock_name <> '' AND {expired} AND (cell <> 'lock' OR fence IS NULL) RETURNING lock_name, cell, expires_at IS {ABSENT}"
    );
    alloc::vec![
        (Statement::ReadAll, split("", "1")),
        (
            Statement::ReadRange,
            split(
                "cell >= $2 AND cell < $3",
                "'_LOCK_' >= $2 AND '_LOCK_' < $3"
            ),
        ),
        (Statement::ReadFrom, split("cell >= $2", "'_LOCK_' >= $2")),
        (
            Statement::ReadExact,
            exact(&format!(
                "CASE WHEN {c} THEN '_LOCK_' ELSE cell END, CASE WHEN {c}{from_lock_row} THEN fence ELSE value END, CASE WHEN {c} THEN NULL ELSE {rem} END, CASE WHEN {c}{from_lock_row} THEN fence_stamp ELSE stamp END"
            )),
        ),
        (
            Statement::Current,
            exact(&format!("CASE WHEN {c}{from_lock_row} THEN fence ELSE value END")),
        ),
        (Statement::Put, put),
        (Statement::InsertIfAbsent, insert_if_absent),
        (Statement::CasUpdate, cas_update),
        (Statement::ScanCells, scan_cells),
        (Statement::Claim, claim.clone()),
        (Statement::ClaimAsync, claim),
        (Statement::ClaimFirst, claim_first.clone()),
        (Statement::ClaimFirstAsync, claim_first),
        (Statement::PurgeOthers, purge_others),
    ]
}

/// The statements that make a one-row table with its flag: the table as `<table>__creating`
/// (`IF NOT EXISTS`: left over by a creator that died, it is taken up), its flag row (`OR
/// IGNORE`), the rename (atomic: no client sees the table without its flag), and the drop of
/// a `__creating` table that a racing creator made after the rename. When a rename fails (the
/// table is there, or a racing creator renamed `__creating` first), the set-up reads the
/// columns again and goes on if the table is there, as after any failed creation
/// ([`SchemaSetup`](super::SchemaSetup)); a drop of another creator's `__creating` only makes
/// that creator's next statement fail the same way. The check refuses a counter row, which an
/// earlier version's client would write (its claims then fail rather than count apart).
pub(crate) fn create(table: &str, stamp: &str) -> Vec<String> {
    let d = Dialect::Sqlite;
    let t = d.quote(table);
    let creating = d.quote(&format!("{table}__creating"));
    alloc::vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {creating} (\n  lock_name TEXT NOT NULL,\n  cell TEXT NOT NULL,\n  value TEXT NOT NULL,\n  expires_at INTEGER,\n  {stamp},\n  fence TEXT,\n  fence_stamp INTEGER,\n  PRIMARY KEY (lock_name, cell),\n  CHECK (cell <> '_LOCK_')\n) WITHOUT ROWID"
        ),
        format!(
            "INSERT OR IGNORE INTO {creating} (lock_name, cell, value, expires_at, stamp) VALUES ('{FLAG_ROW}', '{FLAG_CELL}', '{ONE_ROW_FLAG}', NULL, 0)"
        ),
        format!("ALTER TABLE {creating} RENAME TO {t}"),
        format!("DROP TABLE IF EXISTS {creating}"),
    ]
}

/// `two_rows`, the SQLite statements of `table` in the two-row layout, with those of the
/// one-row layout in their place (the table-level ones stay).
pub(crate) fn one_row_sqlite_statements(
    table: &str,
    two_rows: Statements,
    moving: bool,
) -> Statements {
    let d = Dialect::Sqlite;
    let t = d.quote(table);
    // The purge's first statement: expired `lock` cells that hold a counter ended in place,
    // and listed (the second, `purge_others`, deletes the other expired rows).
    let purge_locks = |row: &str| {
        format!(
            "UPDATE {t} SET {END} WHERE {row}lock_name <> '' AND cell = 'lock' AND {} AND {NOT_ABSENT} AND fence IS NOT NULL RETURNING lock_name, cell",
            d.expired()
        )
    };
    let how = InPlace {
        end: END,
        not_absent: NOT_ABSENT,
        purge: (purge_locks(""), purge_locks("lock_name = ? AND ")),
        numbered: numbered(&t, moving),
        moving,
    };
    in_place_statements(d, table, two_rows, how)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_follow_the_numbered_texts() {
        super::super::one_row_mysql::check_binds(Dialect::Sqlite, &numbered("\"t\"", false), binds);
        super::super::one_row_mysql::check_binds(Dialect::Sqlite, &numbered("\"t\"", true), binds);
    }
}
