//! MariaDB's one-row layout ([`Layout::OneRow`](super::Layout)): PostgreSQL's mapping
//! (`one_row.rs`: the counter `_LOCK_` of a name in the `fence` and `fence_stamp` columns of
//! its `lock` row) in the statements MariaDB has, so that unique insert's claim and release
//! are each one plain `UPDATE` of one row (`docs/one-row-claim.md`, "MariaDB").
//!
//! Where MariaDB differs from PostgreSQL, and what the statements do about it:
//!
//! - **No `UPDATE … RETURNING`, no data-changing `WITH`.** The claim, the release and every
//!   conditional change answer by the rows they found (the driver connects with
//!   `CLIENT_FOUND_ROWS`), and an insert that may keep a row reports the `LAST_INSERT_ID`
//!   marker the two-row statements use (1: a row was kept). A statement therefore changes one
//!   kind of row: a removal of the `lock` cell *ends it in place* (`value = ''`, `expires_at`
//!   at [`ABSENT`]) and is its own statement ([`Statements::end_lock`],
//!   [`Statements::cas_end_lock`]), which the operation picks by the cell's name; any other
//!   cell's removal deletes its row as in the two-row layout. Unlike PostgreSQL's, the `lock`
//!   row is ended in place even without a counter (a row that no claim made); a purge deletes
//!   such a row once it is absent, and lists nothing for it.
//! - **Positional placeholders.** A statement may need one of the operation's parameters
//!   twice or out of order; its text is written with PostgreSQL's `$n` (the operation's
//!   parameter `n`), turned into `?` here, and [`binds`] lists, for each statement that needs
//!   it, which parameter each `?` takes (a test checks the list against the text). The
//!   operation binds by that list.
//! - **Reads without a derived table.** A read of a row's cells answers its table rows in key
//!   order, each with whether its own cell is in (in the range asked for, and live) and the
//!   counter its `fence` columns hold when that is in; the operation splits them into cells
//!   (`split_cells`). A `UNION ALL` of the row's cells and its counter, sorted, as PostgreSQL
//!   reads them, made MariaDB fill and sort a temporary table on every read (bakery's
//!   lock + release 3.57 ms against 2.76 in two rows, 2026-12-01). A read of one cell is a
//!   point read of the row that holds it.
//! - **The purge** lists what it removed, which a statement that ends cells in place cannot
//!   return: it is a call of a procedure made with the table (`<table>_purge`, beside the
//!   claim procedure of the two-row layout), which reads the expired cells `FOR UPDATE`,
//!   answers them, and ends or deletes them in one transaction, at one instant.
//! - **The table and its flag in one statement**, as PostgreSQL's `DO` block makes them:
//!   `CREATE TABLE IF NOT EXISTS … SELECT` the flag row (an existing table is left as it is,
//!   with a note; MariaDB's DDL is atomic, so no client sees the table without its flag).
//!
//! Cost: the claim is one `UPDATE` (a name's first, one `INSERT … ON DUPLICATE KEY UPDATE`),
//! the release one `UPDATE`, each changing one row, where the two-row layout calls the claim
//! procedure (a transaction of five statements over two rows) and deletes with a subquery.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::claim::rollback_on_error;
use super::layout::MARKER;
use super::{Dialect, Layout, Statement, Statements};

/// The `expires_at` of an absent `lock` cell: the earliest `DATETIME`, never live, told apart
/// from an expired cell (any other past time) by equality.
macro_rules! absent {
    () => {
        "'1000-01-01 00:00:00'"
    };
}
pub(crate) const ABSENT: &str = absent!();
/// The assignments that end a `lock` cell in place.
const END: &str = concat!("value = '', expires_at = ", absent!());
/// The `lock` cell is not absent already (`<=>`: a cell without a TTL is not absent).
const NOT_ABSENT: &str = concat!("NOT (expires_at <=> ", absent!(), ")");
/// `_LOCK_` in the key column's binary collation: for the cell that scans merge in, and for
/// comparisons of a parameter with it (in the connection's collation, case-insensitive by
/// default, a cell named `_lock_` would be taken for the counter).
const COUNTER_CELL: &str = "_utf8mb4'_LOCK_' COLLATE utf8mb4_nopad_bin";

/// The expiry of a cell written now with a TTL of `ms` milliseconds (NULL: none).
fn expiry(ms: &str) -> String {
    Dialect::MySql.expiry().replacen('?', ms, 1)
}

/// `sql` written with `$n` placeholders, as MariaDB takes it: each `$n` a `?`, and the
/// parameter numbers in the order of the `?`s.
pub(crate) fn positional(sql: &str) -> (String, Vec<u8>) {
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' || !chars.peek().is_some_and(char::is_ascii_digit) {
            out.push(c);
            continue;
        }
        let mut n: u8 = 0;
        while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
            n = n * 10 + d as u8;
            chars.next();
        }
        out.push('?');
        order.push(n);
    }
    (out, order)
}

/// For each MariaDB one-row statement whose `?`s do not take the operation's parameters one
/// for one in order, the parameter (from 1) each `?` takes; `None`: in order.
pub(crate) fn binds(statement: Statement) -> Option<&'static [u8]> {
    Some(match statement {
        Statement::ReadAll => &[1],
        Statement::ReadRange => &[2, 3, 2, 3, 2, 3, 1, 2, 3, 2, 3],
        Statement::ReadFrom => &[2, 2, 2, 1, 2, 2],
        Statement::ReadExact => &[2, 2, 2, 2, 1, 2, 2, 2],
        Statement::Current => &[2, 1, 2, 2, 2],
        Statement::Put | Statement::InsertIfAbsent => &[1, 2, 2, 2, 3, 2, 4, 2, 5, 2, 3, 2, 5],
        Statement::CasUpdate => &[5, 1, 5, 3, 5, 1, 5, 2, 5, 3, 4, 5, 5, 5, 6, 6],
        Statement::ScanCells => &[1, 2, 1, 2],
        Statement::Claim | Statement::ClaimAsync => &[3, 4, 5, 8, 5, 1, 2, 6, 7],
        Statement::ClaimFirst | Statement::ClaimFirstAsync => &[1, 3, 4, 5, 8, 5, 2, 6, 7],
        _ => return None,
    })
}

/// The procedure a one-row table's purge calls: `(row)`, NULL for the whole table; answers
/// `(row, cell)` of each expired cell, then ends the `lock` cells among them in place and
/// deletes the others (and any absent `lock` row without a counter), in one transaction at
/// READ COMMITTED (as the claim procedure: a whole-table read `FOR UPDATE` at REPEATABLE READ
/// would lock the gaps between rows, and every new name's claim with them), at one instant.
/// Inside a caller's transaction, in a savepoint of it.
fn purge_procedure(name: &str, t: &str) -> String {
    let now = Dialect::MySql.now();
    let rows = "(p_row IS NULL OR lock_name = p_row) AND lock_name <> ''";
    let expired = "expires_at IS NOT NULL AND expires_at <= v_now";
    format!(
        "CREATE OR REPLACE PROCEDURE {name}(IN p_row VARCHAR(255))
MODIFIES SQL DATA
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT {now};
{}
  IF v_outer THEN SAVEPOINT baton_purge; ELSE SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION; END IF;
  SELECT lock_name, cell FROM {t} WHERE {rows} AND {expired} AND {NOT_ABSENT} FOR UPDATE;
  UPDATE {t} SET {END} WHERE {rows} AND cell = 'lock' AND {expired} AND {NOT_ABSENT};
  DELETE FROM {t} WHERE {rows} AND cell <> 'lock' AND {expired};
  DELETE FROM {t} WHERE {rows} AND cell = 'lock' AND expires_at <=> {ABSENT} AND fence IS NULL;
  IF v_outer THEN RELEASE SAVEPOINT baton_purge; ELSE COMMIT; END IF;
END",
        rollback_on_error("baton_purge")
    )
}

/// The name of a one-row table's purge procedure (its length is checked with the claim
/// procedure's, which has as many characters).
fn purge_name(table: &str) -> String {
    Dialect::MySql.quote(&format!("{table}_purge"))
}

/// The purge procedure of `table`, made with every MariaDB table's routines (MariaDB resolves
/// the columns it names when it runs: a two-row table's copy is never called, and is there
/// for the day the table is one-row).
pub(crate) fn purge_routine(table: &str) -> String {
    purge_procedure(&purge_name(table), &Dialect::MySql.quote(table))
}

/// The statements written with `$n` placeholders, by statement: [`positional`] makes the
/// text MariaDB runs, and the order [`binds`] gives.
fn numbered(t: &str, moving: bool) -> Vec<(Statement, String)> {
    let d = Dialect::MySql;
    let (rem, live, expired) = (d.remaining(), d.live(), d.expired());
    // A read of many cells of row $1: its table rows in key order (no sort, no derived
    // table), each with its own cell's columns, whether that cell is in (`own`: in the range
    // and live), and the counter `_LOCK_` its `fence` columns hold when it is in (the `lock`
    // row's, in the range; the stamp NULL otherwise). The operation splits each table row
    // into the cells it holds ([`Kind`](super::operation::Kind) list `SPLIT_CELL`).
    // Rows named `_LOCK_` that are cells: none in a one-row table (a moved name's row is its
    // marker), the counter rows of names not moved yet while `migrate` moves the table.
    let not_a_marker = if moving {
        format!("(cell <> {COUNTER_CELL} OR value <> '{MARKER}')")
    } else {
        format!("cell <> {COUNTER_CELL}")
    };
    let split = |own: &str, counter_in: &str| {
        let counter = format!("cell = 'lock' AND fence IS NOT NULL AND {counter_in}");
        // A row named `_LOCK_` is never a cell here: in a table `migrate` moved, it is a
        // name's marker (`layout::MARKER`); a table made one-row refuses such rows.
        let own = format!("({own}) AND {not_a_marker}");
        format!(
            "SELECT cell, value, {rem}, stamp, ({own}) AND {live}, IF({counter}, fence, ''), IF({counter}, COALESCE(fence_stamp, 0), NULL) FROM {t} WHERE lock_name = $1 AND ((({own}) AND {live}) OR ({counter})) ORDER BY cell"
        )
    };
    // A read of one cell of row $1 ($2): the counter from the `lock` row's `fence`, any
    // other cell from its own row (a point read of the key either way).
    let is_counter = format!("$2 = {COUNTER_CELL}");
    // While `migrate` moves the table (`moving`), the counter of a name not moved yet is its
    // counter row (when that is not a marker): both rows are candidates, and the last `IF`
    // keeps the right one (the placeholders keep the one-row order: `binds` serves both).
    let from_lock_row = if moving { " AND cell = 'lock'" } else { "" };
    let exact = |columns: &str| {
        if moving {
            format!(
                "SELECT {columns} FROM {t} WHERE lock_name = $1 AND cell IN (IF({is_counter}, 'lock', $2), {COUNTER_CELL}) AND IF({is_counter}, (cell = 'lock' AND fence IS NOT NULL) OR (cell = {COUNTER_CELL} AND value <> '{MARKER}'), cell <> {COUNTER_CELL} AND {live})"
            )
        } else {
            format!(
                "SELECT {columns} FROM {t} WHERE lock_name = $1 AND cell = IF({is_counter}, 'lock', $2) AND IF({is_counter}, fence IS NOT NULL, {live})"
            )
        }
    };
    // A write of `_LOCK_` is a write of the `lock` row's `fence` and `fence_stamp` (the row
    // created absent, at stamp 0, when missing); of any other cell, of its own row.
    let counter = format!("$2 = {COUNTER_CELL}");
    let insert = format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) VALUES ($1, IF({counter}, 'lock', $2), IF({counter}, '', $3), IF({counter}, {ABSENT}, {}), IF({counter}, 0, $5), IF({counter}, $3, NULL), IF({counter}, $5, NULL))",
        expiry("$4")
    );
    // On a duplicate row, the first assignment decides, through the `LAST_INSERT_ID` marker,
    // which of the row's cells is written (3: the counter, 2: the other cell, 1: neither),
    // before any column it reads is assigned; the others test the marker.
    let on_duplicate = |counter_written: &str, other_written: &str| {
        format!(
            " ON DUPLICATE KEY UPDATE fence = IF(LAST_INSERT_ID(IF(VALUES(fence) IS NOT NULL, IF({counter_written}, 3, 1), IF({other_written}, 2, 1))) = 3, VALUES(fence), fence), \
fence_stamp = IF(LAST_INSERT_ID() = 3, VALUES(fence_stamp), fence_stamp), \
value = IF(LAST_INSERT_ID() = 2, VALUES(value), value), \
expires_at = IF(LAST_INSERT_ID() = 2, VALUES(expires_at), expires_at), \
stamp = IF(LAST_INSERT_ID() = 2, VALUES(stamp), stamp)"
        )
    };
    // A put replaces an older counter or none; another cell an older one or an absent one.
    let put = format!(
        "{insert}{}",
        on_duplicate(
            "fence IS NULL OR fence_stamp < VALUES(fence_stamp)",
            &format!("stamp < VALUES(stamp) OR expires_at <=> {ABSENT}")
        )
    );
    // An insert-if-absent writes a counter where there is none, another cell where it is
    // not live (absent or expired); the marker 1 tells the operation it kept the row.
    let insert_if_absent = format!("{insert}{}", on_duplicate("fence IS NULL", &expired));
    let cas_counter = format!("$5 = {COUNTER_CELL}");
    let cas_update = format!(
        "UPDATE {t} SET fence = IF({cas_counter}, $1, fence), fence_stamp = IF({cas_counter}, $3, fence_stamp), \
value = IF({cas_counter}, value, $1), expires_at = IF({cas_counter}, expires_at, {}), stamp = IF({cas_counter}, stamp, $3) \
WHERE lock_name = $4 AND cell = IF({cas_counter}, 'lock', $5) AND IF({cas_counter}, fence = $6, value = $6 AND {live})",
        expiry("$2")
    );
    let scan_cells = format!(
        "SELECT lock_name, cell, value, {rem}, stamp FROM (\
SELECT lock_name, cell, value, expires_at, stamp FROM {t} WHERE lock_name >= $1 AND lock_name <= $2 AND lock_name <> '' AND {not_a_marker} \
UNION ALL SELECT lock_name, {COUNTER_CELL}, fence, CAST(NULL AS DATETIME(6)), fence_stamp FROM {t} WHERE lock_name >= $1 AND lock_name <= $2 AND lock_name <> '' AND cell = 'lock' AND fence IS NOT NULL\
) AS c WHERE {live} ORDER BY lock_name, cell"
    );
    // Unique insert's claim of a name that has a counter: the row taken over where its lock
    // cell is not live and the counter is the expected one, both cells in one row version.
    // Found: applied (the conditions are checked again on the newest version when a
    // concurrent claim made it wait); not found: the cells as found are read after
    // (`guarded_current`). A waiter's claim finds the row live and locks nothing.
    let claim = format!(
        "UPDATE {t} SET value = $3, expires_at = {}, stamp = $5, fence = $8, fence_stamp = $5 WHERE lock_name = $1 AND cell = 'lock' AND $2 = 'lock' AND $6 = '_LOCK_' AND {expired} AND fence <=> NULLIF($7, '')",
        expiry("$4")
    );
    // A name's first claim (no counter expected): the row inserted, or one without a counter
    // whose lock cell is not live taken over (marker 2); a row kept answers marker 1.
    let claim_first = format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) SELECT $1, 'lock', $3, {}, $5, $8, $5 FROM DUAL WHERE $2 = 'lock' AND $6 = '_LOCK_' AND $7 = '' \
ON DUPLICATE KEY UPDATE value = IF(LAST_INSERT_ID(IF({expired} AND fence IS NULL, 2, 1)) = 2, VALUES(value), value), \
stamp = IF(LAST_INSERT_ID() = 2, VALUES(stamp), stamp), expires_at = IF(LAST_INSERT_ID() = 2, VALUES(expires_at), expires_at), \
fence = IF(LAST_INSERT_ID() = 2, VALUES(fence), fence), fence_stamp = IF(LAST_INSERT_ID() = 2, VALUES(fence_stamp), fence_stamp)",
        expiry("$4")
    );
    alloc::vec![
        (Statement::ReadAll, split("TRUE", "TRUE")),
        (
            Statement::ReadRange,
            split(
                "cell >= $2 AND cell < $3",
                &format!("{COUNTER_CELL} >= $2 AND {COUNTER_CELL} < $3"),
            ),
        ),
        (
            Statement::ReadFrom,
            split("cell >= $2", &format!("{COUNTER_CELL} >= $2")),
        ),
        (
            Statement::ReadExact,
            exact(&format!(
                "IF({is_counter}, {COUNTER_CELL}, cell), IF({is_counter}{from_lock_row}, fence, value), IF({is_counter}, NULL, {rem}), IF({is_counter}{from_lock_row}, fence_stamp, stamp)"
            )),
        ),
        (
            Statement::Current,
            exact(&format!("IF({is_counter}{from_lock_row}, fence, value)")),
        ),
        (Statement::Put, put),
        (Statement::InsertIfAbsent, insert_if_absent),
        (Statement::CasUpdate, cas_update),
        (Statement::ScanCells, scan_cells),
        (Statement::Claim, claim.clone()),
        (Statement::ClaimAsync, claim),
        (Statement::ClaimFirst, claim_first.clone()),
        (Statement::ClaimFirstAsync, claim_first),
    ]
}

/// How a one-row table of a database that ends a `lock` cell in place (MariaDB, SQLite) differs
/// from another's: the assignments that end a cell, the test that it is not ended already, its
/// purge, and the statements written with `$n` placeholders.
pub(crate) struct InPlace {
    /// The assignments that end a `lock` cell in place.
    pub end: &'static str,
    /// The `lock` cell is not absent already.
    pub not_absent: &'static str,
    /// `purge_all` and `purge_row`.
    pub purge: (String, String),
    /// The statements written with `$n` placeholders ([`positional`] makes their text).
    pub numbered: Vec<(Statement, String)>,
    /// The set of a table `migrate` is moving: rows named `_LOCK_` that are no marker are
    /// counters of names not moved yet, and read as cells.
    pub moving: bool,
}

/// `two_rows`, the statements of `table` on `d` (MariaDB or SQLite) in the two-row layout,
/// with those of the one-row layout in their place (the table-level ones stay): those that
/// take the operation's parameters in order, here, and `how`'s.
pub(crate) fn in_place_statements(
    d: Dialect,
    table: &str,
    two_rows: Statements,
    how: InPlace,
) -> Statements {
    let t = d.quote(table);
    let t = t.as_str();
    let live = d.live();
    let (end, not_absent) = (how.end, how.not_absent);
    let not_a_marker = if how.moving {
        format!("(cell <> '_LOCK_' OR value <> '{MARKER}')")
    } else {
        String::from("cell <> '_LOCK_'")
    };
    let end_lock = format!(
        "UPDATE {t} SET {end} WHERE lock_name = ? AND cell = ? AND stamp <= ? AND {not_absent}"
    );
    let cas_end_lock =
        format!("UPDATE {t} SET {end} WHERE lock_name = ? AND cell = ? AND value = ? AND {live}");
    let names = |after: &str| {
        format!(
            "SELECT DISTINCT lock_name FROM {t} WHERE lock_name <> ''{after} AND (({not_a_marker} AND {live}) OR fence IS NOT NULL) ORDER BY lock_name LIMIT ?"
        )
    };
    // Unique insert's release, the only guarded removal the layout takes: the `lock` cell
    // ended in place while the row's counter is the guard's value.
    let released = format!(
        "UPDATE {t} SET {end} WHERE lock_name = ? AND cell = ? AND value = ? AND {live} AND ? = lock_name AND ? = '_LOCK_' AND fence = ?"
    );
    let guarded_update = format!(
        "UPDATE {t} SET value = ?, expires_at = {}, stamp = ? WHERE lock_name = ? AND cell = ? AND value = ? AND {live} AND ? = lock_name AND ? = '_LOCK_' AND fence = ?",
        d.expiry()
    );
    let guarded_current = format!(
        "SELECT COALESCE((SELECT value FROM {t} WHERE lock_name = ? AND cell = ? AND {live}), ''), COALESCE((SELECT fence FROM {t} WHERE lock_name = ? AND cell = 'lock' AND ? = '_LOCK_'), '')"
    );
    let objects = super::object::object_statements(d, table, Layout::OneRow);
    let (purge_all, purge_row) = how.purge;
    let mut st = Statements {
        layout: Layout::OneRow,
        end_lock,
        cas_end_lock,
        purge_all,
        purge_row,
        scan_first: names(""),
        scan_after: names(" AND lock_name > ?"),
        guarded_delete: released.clone(),
        guarded_delete_async: released,
        guarded_update,
        guarded_current,
        object_insert_held: objects.insert_held,
        object_update_held: objects.update_held,
        object_update_held_from: objects.update_held_from,
        object_current: objects.current,
        ..two_rows
    };
    for (statement, text) in how.numbered {
        *st.get_mut(statement) = positional(&text).0;
    }
    st
}

/// `two_rows`, the MariaDB statements of `table` in the two-row layout, with those of the
/// one-row layout in their place (the table-level ones stay, the routines among them).
pub(crate) fn one_row_mysql_statements(
    table: &str,
    two_rows: Statements,
    moving: bool,
) -> Statements {
    let purge = purge_name(table);
    let t = Dialect::MySql.quote(table);
    let how = InPlace {
        end: END,
        not_absent: NOT_ABSENT,
        purge: (format!("CALL {purge}(NULL)"), format!("CALL {purge}(?)")),
        numbered: numbered(&t, moving),
        moving,
    };
    in_place_statements(Dialect::MySql, table, two_rows, how)
}

/// Checks, for a test, that `binds` gives the order of every numbered text's placeholders, and
/// that no statement of `dialect`'s one-row set is left with a `$`.
#[cfg(test)]
pub(crate) fn check_binds(
    dialect: Dialect,
    sources: &[(Statement, String)],
    binds: fn(Statement) -> Option<&'static [u8]>,
) {
    for (statement, text) in sources {
        assert_eq!(
            binds(*statement),
            Some(positional(text).1.as_slice()),
            "{statement:?}"
        );
    }
    let st = Statements::in_layout(dialect, "t", Layout::OneRow).expect("statements");
    for statement in Statement::ALL {
        assert!(!st.get(statement).contains('$'), "{statement:?}");
        if !sources.iter().any(|(s, _)| *s == statement) {
            assert_eq!(binds(statement), None, "{statement:?} has no numbered text");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_follow_the_numbered_texts() {
        check_binds(Dialect::MySql, &numbered("`t`", false), binds);
        check_binds(Dialect::MySql, &numbered("`t`", true), binds);
    }

    #[test]
    fn positional_numbers_the_placeholders() {
        assert_eq!(
            positional("a = $1 AND b = $12 AND c = $1 AND d = '$x'"),
            (
                String::from("a = ? AND b = ? AND c = ? AND d = '$x'"),
                alloc::vec![1, 12, 1]
            )
        );
    }
}
