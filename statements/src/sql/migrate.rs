//! The statements of `baton migrate`: moving a two-row table's fencing counters into the
//! one-row layout (`docs/one-row-claim.md`, "Phase 2, revised", and its second reading).
//!
//! What a host runs, in this order:
//!
//! 1. [`Migration::add_columns`] (SQLite: only those [`Migration::missing_columns`] says are
//!    missing) and [`Migration::guards`]: the `fence` columns, and triggers that keep every
//!    moved counter (a row whose `fence` is set, or a counter row, is never deleted: PostgreSQL
//!    and SQLite skip the row, MariaDB fails the statement; on PostgreSQL and SQLite a marker
//!    never becomes a number again).
//! 2. Pages of [`Migration::pending`]: names whose counter row is not a marker yet.
//! 3. Per name, [`Migration::held`] (a plain read: a name with a live cell that has a TTL,
//!    the lock of unique insert, bakery's tickets, column prefix's entries, is skipped and
//!    reported), then one transaction: [`Migration::lock_counter`] (the counter row, locked
//!    first as every claim does; `NOWAIT`: a name whose row another transaction holds is
//!    skipped, never waited for, so that no lock order of an object write or a release can
//!    deadlock with it), [`Migration::lock_row`] (the `lock` row, the same way), `held` again
//!    (a statement that starts after both locks are held, so it sees a claim that just
//!    committed), then [`Migration::write_fence`] and [`Migration::mark`], and the commit.
//!    SQLite runs it in `BEGIN IMMEDIATE` (one writer: no `FOR UPDATE`).
//! 4. When no name is pending and none was skipped, [`Migration::finish`], in one
//!    transaction ([`Migration::finish_begin`] first): writers kept out, `pending` checked
//!    empty again, the guard that refuses any new counter row (a `CHECK`; SQLite a trigger),
//!    and the layout flag. MariaDB's DDL commits on its own: there the constraint is added
//!    first, alone, and checks the rows already there, so that from then on no counter row can
//!    be made, and the flag follows.
//!
//! Every text takes its parameters in order (`?`; PostgreSQL's numbered), text but for the
//! limit of `pending` and the stamp of `write_fence`.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::layout::{FLAG_CELL, FLAG_ROW, MARKER, ONE_ROW_COLUMNS, ONE_ROW_FLAG};
use super::{one_row_mysql, one_row_sqlite, Dialect};

/// The statements that move `table`'s counters, in `dialect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The database.
    pub dialect: Dialect,
    /// `ALTER TABLE` adding the columns (PostgreSQL and MariaDB: one statement that skips
    /// those present; SQLite: one per column, for the host to run where missing).
    pub add_columns: Vec<String>,
    /// The triggers that keep moved counters (scripts: MariaDB's hold semicolons), made only
    /// when [`Migration::guards_present`] counts fewer than [`Migration::guards_count`]: each
    /// waits for every open transaction on the table.
    pub guards: Vec<String>,
    /// PostgreSQL: run first in the transaction of the columns and guards, so that runs at the
    /// same time on any table of the database make them one after another (the guards share
    /// one trigger function, which two transactions replacing it at once fail on). Empty
    /// elsewhere.
    pub ddl_turn: String,
    /// Columns `(count)`: how many of the guards the table has.
    pub guards_present: String,
    /// How many guards the dialect makes.
    pub guards_count: i64,
    /// `(after, limit)`: up to `limit` names after `after` whose counter row is not a
    /// marker, in order. Columns: `(lock_name)`.
    pub pending: String,
    /// `(name)`: how many cells with a TTL the name has live. Columns: `(count)`.
    pub held: String,
    /// `(name)`: the counter row, locked. Columns: `(value, stamp)`.
    pub lock_counter: String,
    /// `(name)`: the `lock` row, locked. Columns: `(fence)`, empty when it has none (a counter
    /// value is never empty); a name whose `lock` row has a fence while its counter row is no
    /// marker is left alone, for a person to look at.
    pub lock_row: String,
    /// `(name, fence, fence_stamp)`: the counter written into the `lock` row (made absent
    /// where missing); `fence_stamp` an integer.
    pub write_fence: String,
    /// `(name)`: the counter row's value replaced by the marker.
    pub mark: String,
    /// What begins the last transaction (keeping writers out until it ends).
    pub finish_begin: Vec<String>,
    /// The last transaction's statements after `pending` was found empty: the guard against
    /// new counter rows, then the flag.
    pub finish: Vec<String>,
}

impl Migration {
    /// The statements of `table` (validated by the caller) in `dialect`.
    pub fn new(dialect: Dialect, table: &str) -> Migration {
        let d = dialect;
        let t = d.quote(table);
        let held = format!(
            "SELECT COUNT(*) FROM {t} WHERE lock_name = ? AND cell <> '_LOCK_' AND expires_at IS NOT NULL AND expires_at > {}",
            d.now()
        );
        let not_marker = format!("cell = '_LOCK_' AND value <> '{MARKER}'");
        let pending = format!(
            "SELECT lock_name FROM {t} WHERE {not_marker} AND lock_name > ? ORDER BY lock_name LIMIT ?"
        );
        // The largest stamp: no plain write of the cell (an earlier build's blind put) is
        // newer, so none sets the marker back.
        let mark = format!(
            "UPDATE {t} SET value = '{MARKER}', stamp = {} WHERE lock_name = ? AND cell = '_LOCK_'",
            i64::MAX
        );
        let flag = format!(
            "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp) VALUES ('{FLAG_ROW}', '{FLAG_CELL}', '{ONE_ROW_FLAG}', NULL, 0)"
        );
        let check = format!("CHECK (cell <> '_LOCK_' OR value = '{MARKER}')");
        let moved = d.quote(&format!("{table}_moved"));
        let refused = format!(
            "baton: a moved fencing counter of table {table} is never removed or set back (baton migrate)"
        );
        let new_counter = format!(
            "baton: table {table} keeps its fencing counters in its lock rows now (baton migrate): read the layout of the table again"
        );
        let (fence_type, stamp_type) = match d {
            Dialect::Postgres => ("text", "bigint"),
            Dialect::MySql => (
                "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL",
                "BIGINT NULL",
            ),
            Dialect::Sqlite => ("TEXT", "INTEGER"),
        };
        let [fence, fence_stamp] = ONE_ROW_COLUMNS;
        match d {
            Dialect::Postgres => Migration {
                dialect: d,
                add_columns: vec![format!(
                    "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {fence} {fence_type}, ADD COLUMN IF NOT EXISTS {fence_stamp} {stamp_type}"
                )],
                guards: vec![
                    // One function for every table: it reads only the row it is called for.
                    format!(
                        "CREATE OR REPLACE FUNCTION baton_keep_fence() RETURNS trigger LANGUAGE plpgsql AS $baton$\nBEGIN\n  IF TG_OP = 'DELETE' THEN RETURN NULL; END IF;\n  RAISE EXCEPTION '%', TG_ARGV[0];\nEND $baton$"
                    ),
                    // `DROP … IF EXISTS` then `CREATE`: `CREATE OR REPLACE TRIGGER` needs 14.
                    format!("DROP TRIGGER IF EXISTS baton_keep_fence ON {t}"),
                    format!(
                        "CREATE TRIGGER baton_keep_fence BEFORE DELETE ON {t} FOR EACH ROW WHEN (OLD.fence IS NOT NULL OR OLD.cell = '_LOCK_') EXECUTE FUNCTION baton_keep_fence('')"
                    ),
                    format!("DROP TRIGGER IF EXISTS baton_keep_marker ON {t}"),
                    format!(
                        "CREATE TRIGGER baton_keep_marker BEFORE UPDATE ON {t} FOR EACH ROW WHEN (OLD.cell = '_LOCK_' AND OLD.value = '{MARKER}' AND NEW.value IS DISTINCT FROM '{MARKER}') EXECUTE FUNCTION baton_keep_fence('{refused}')"
                    ),
                ],
                // A constant key ("baton" in ASCII), held until the transaction ends.
                ddl_turn: "SELECT pg_advisory_xact_lock(422541815662)".into(),
                guards_present: format!(
                    "SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = '{t}'::regclass AND tgname IN ('baton_keep_fence', 'baton_keep_marker')"
                ),
                guards_count: 2,
                pending: d.finish(&pending),
                held: d.finish(&held),
                lock_counter: d.finish(&format!(
                    "SELECT value, stamp FROM {t} WHERE lock_name = ? AND cell = '_LOCK_' FOR UPDATE NOWAIT"
                )),
                lock_row: d.finish(&format!(
                    "SELECT COALESCE(fence, '') FROM {t} WHERE lock_name = ? AND cell = 'lock' FOR UPDATE NOWAIT"
                )),
                write_fence: d.finish(&format!(
                    "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) VALUES (?, 'lock', '', '-infinity', 0, ?, ?) ON CONFLICT (lock_name, cell) DO UPDATE SET fence = excluded.fence, fence_stamp = excluded.fence_stamp"
                )),
                mark: d.finish(&mark),
                // `ACCESS EXCLUSIVE` at once: the constraint needs it, and a weaker lock taken first
                // could deadlock with a claim between its two table locks.
                finish_begin: vec![format!("LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE")],
                finish: vec![
                    format!("ALTER TABLE {t} DROP CONSTRAINT IF EXISTS {moved}"),
                    format!("ALTER TABLE {t} ADD CONSTRAINT {moved} {check}"),
                    format!("{flag} ON CONFLICT DO NOTHING"),
                ],
            },
            Dialect::MySql => Migration {
                dialect: d,
                add_columns: vec![format!(
                    "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {fence} {fence_type}, ADD COLUMN IF NOT EXISTS {fence_stamp} {stamp_type}"
                )],
                // A trigger's body runs for every row a statement changes, claims and releases
                // included (MariaDB has no `WHEN`): only deletes are guarded before the flag;
                // the constraint guards updates after it.
                guards: vec![format!(
                    "CREATE OR REPLACE TRIGGER {} BEFORE DELETE ON {t} FOR EACH ROW BEGIN IF OLD.fence IS NOT NULL OR OLD.cell = '_LOCK_' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{refused}'; END IF; END",
                    d.quote(&format!("{table}_fdel"))
                )],
                ddl_turn: String::new(),
                guards_present: format!(
                    "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = '{table}' AND TRIGGER_NAME = '{table}_fdel'"
                ),
                guards_count: 1,
                pending,
                held,
                lock_counter: format!(
                    "SELECT value, stamp FROM {t} WHERE lock_name = ? AND cell = '_LOCK_' FOR UPDATE NOWAIT"
                ),
                lock_row: format!(
                    "SELECT COALESCE(fence, '') FROM {t} WHERE lock_name = ? AND cell = 'lock' FOR UPDATE NOWAIT"
                ),
                write_fence: format!(
                    "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) VALUES (?, 'lock', '', {}, 0, ?, ?) ON DUPLICATE KEY UPDATE fence = VALUES(fence), fence_stamp = VALUES(fence_stamp)",
                    one_row_mysql::ABSENT
                ),
                mark,
                // Added, never dropped first: each DDL statement commits on its own, and a gap
                // without the constraint would let a counter row in. Present already (a run
                // stopped before the flag): the host takes the duplicate name as done.
                finish_begin: vec![format!("ALTER TABLE {t} ADD CONSTRAINT {moved} {check}")],
                finish: vec![format!("{flag} ON DUPLICATE KEY UPDATE value = value")],
            },
            Dialect::Sqlite => Migration {
                dialect: d,
                add_columns: vec![
                    format!("ALTER TABLE {t} ADD COLUMN {fence} {fence_type}"),
                    format!("ALTER TABLE {t} ADD COLUMN {fence_stamp} {stamp_type}"),
                ],
                guards: vec![
                    format!(
                        "CREATE TRIGGER IF NOT EXISTS {} BEFORE DELETE ON {t} FOR EACH ROW WHEN OLD.fence IS NOT NULL OR OLD.cell = '_LOCK_' BEGIN SELECT RAISE(IGNORE); END",
                        d.quote(&format!("{table}_keep_fence"))
                    ),
                    format!(
                        "CREATE TRIGGER IF NOT EXISTS {} BEFORE UPDATE ON {t} FOR EACH ROW WHEN OLD.cell = '_LOCK_' AND OLD.value = '{MARKER}' AND NEW.value IS NOT '{MARKER}' BEGIN SELECT RAISE(ABORT, '{refused}'); END",
                        d.quote(&format!("{table}_keep_marker"))
                    ),
                ],
                ddl_turn: String::new(),
                guards_present: format!(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ('{table}_keep_fence', '{table}_keep_marker')"
                ),
                guards_count: 2,
                pending,
                held,
                // One writer: `BEGIN IMMEDIATE` holds the file; these only read.
                lock_counter: format!(
                    "SELECT value, stamp FROM {t} WHERE lock_name = ? AND cell = '_LOCK_'"
                ),
                lock_row: format!(
                    "SELECT COALESCE(fence, '') FROM {t} WHERE lock_name = ? AND cell = 'lock'"
                ),
                write_fence: format!(
                    "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) VALUES (?, 'lock', '', {}, 0, ?, ?) ON CONFLICT (lock_name, cell) DO UPDATE SET fence = excluded.fence, fence_stamp = excluded.fence_stamp",
                    one_row_sqlite::ABSENT
                ),
                mark,
                finish_begin: vec![],
                finish: vec![
                    format!(
                        "CREATE TRIGGER IF NOT EXISTS {moved} BEFORE INSERT ON {t} FOR EACH ROW WHEN NEW.cell = '_LOCK_' AND NEW.value IS NOT '{MARKER}' BEGIN SELECT RAISE(ABORT, '{new_counter}'); END"
                    ),
                    format!("INSERT OR IGNORE{}", &flag["INSERT".len()..]),
                ],
            },
        }
    }

    /// The statements of [`Migration::add_columns`] a table with `present` columns still
    /// needs (SQLite's, one per column; elsewhere all, which skip what is there).
    /// (An `ALTER TABLE` waits for every open transaction on the table, and every statement
    /// that comes after waits for it: none is run for columns that are there.)
    pub fn missing_columns(&self, present: &[String]) -> Vec<&str> {
        let missing = |c: &&str| !present.iter().any(|p| p.eq_ignore_ascii_case(c));
        match self.dialect {
            Dialect::Sqlite => ONE_ROW_COLUMNS
                .iter()
                .zip(&self.add_columns)
                .filter(|(c, _)| missing(c))
                .map(|(_, s)| s.as_str())
                .collect(),
            Dialect::Postgres | Dialect::MySql if ONE_ROW_COLUMNS.iter().any(missing) => {
                self.add_columns.iter().map(String::as_str).collect()
            }
            Dialect::Postgres | Dialect::MySql => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn placeholders_and_names() {
        for d in [Dialect::Postgres, Dialect::MySql, Dialect::Sqlite] {
            let m = Migration::new(d, "locks");
            let count = |s: &str| match d {
                Dialect::Postgres => s.matches('$').count(),
                _ => s.matches('?').count(),
            };
            assert_eq!(count(&m.pending), 2, "{d:?}");
            assert_eq!(count(&m.held), 1, "{d:?}");
            assert_eq!(count(&m.lock_counter), 1, "{d:?}");
            assert_eq!(count(&m.lock_row), 1, "{d:?}");
            assert_eq!(count(&m.write_fence), 3, "{d:?}");
            assert_eq!(count(&m.mark), 1, "{d:?}");
            assert!(m.mark.contains(MARKER));
            assert!(m.finish.last().is_some_and(|f| f.contains("'layout'")));
        }
        let sqlite = Migration::new(Dialect::Sqlite, "locks");
        assert_eq!(sqlite.missing_columns(&[]).len(), 2);
        assert_eq!(
            sqlite.missing_columns(&["FENCE".to_string()]),
            [sqlite.add_columns[1].as_str()]
        );
        let pg = Migration::new(Dialect::Postgres, "locks");
        assert_eq!(pg.missing_columns(&[]).len(), 1);
        let both = ["fence".to_string(), "fence_stamp".to_string()];
        assert!(pg.missing_columns(&both).is_empty());
    }
}
