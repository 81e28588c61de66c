//! The SQL of every statement, per database ([`Statements`]); how each kernel command runs
//! them ([`Operation`]); how driver errors classify ([`failure`]); what the table must have
//! ([`missing_columns`]).
//!
//! Statements are written once, here, with `?` placeholders and a handful of per-database
//! fragments (the server's clock, an expiry, a remaining TTL); PostgreSQL's `$n` placeholders are
//! numbered from the `?`s. The only identifier ever formatted into SQL is the lock table's name,
//! validated by [`validate_table`] and quoted. Every value travels as a bound parameter of a
//! prepared statement.
//!
//! Clocks: expiry is always decided by the database server's clock, read once per statement:
//! SQLite's `unixepoch('subsec')` (fixed for one `sqlite3_step`), MariaDB's `UTC_TIMESTAMP(6)`
//! (fixed for one statement), PostgreSQL's `statement_timestamp()` (fixed for one statement, and
//! unlike `now()` not frozen at the start of a transaction). One instant per statement keeps a
//! statement's liveness test and the expiry it writes consistent; as the instant is the
//! statement's start, which is after the client sent it, an expiry measured from it is never
//! earlier than the client's own deadline (send time + TTL), which is all the kernel needs.
//!
//! Stamps: every row carries the `stamp` of the write that made it (see `stamps.rs`), and the
//! plain writes compare it in the statement itself, so that a write the server applies late
//! cannot undo a later one: a put replaces a row only if the row's stamp is smaller than the
//! put's (`… DO UPDATE … WHERE <t>.stamp < excluded.stamp`, MariaDB `IF(stamp < VALUES(stamp),
//! …)` per column), and a delete removes a row only if its stamp is at most the delete's
//! (`… AND stamp <= ?`). Conditional statements write their stamp too, so that reads return a
//! meaningful one. A delete removes the row: no tombstone is kept, so a put that arrives after
//! a delete of a newer version recreates the cell (as in the kernel's reference table).
//!
//! Layouts ([`Layout`]): every statement above is written for a two-row table, where each
//! name's fencing counter is a row of its own. A one-row PostgreSQL or MariaDB table keeps it in
//! the `lock` row's `fence` column; [`Statements::in_layout`] then puts the mapped statements of
//! `one_row.rs` (MariaDB: `one_row_mysql.rs`) in their place, with the same parameters and results, so that an
//! [`Operation`] runs either.
//!
//! Commands and their statements (the [`Operation`]'s table has each step):
//!
//! | command | statement(s) | round trips |
//! | --- | --- | --- |
//! | read | `read_all`, `read_exact`, `read_range` or `read_from` | 1 |
//! | put, delete, delete-version | `put`, `delete` (`delete_async` on the store's own connection) | 1 |
//! | batch | `put` and `delete_notify` in one transaction | 1 (a transaction) |
//! | insert-if-absent, compare-and-set | `insert_if_absent`, `cas_update` or `cas_delete`; `current` when not applied | 1, or 2 |
//! | claim | `claim`/`claim_first` (SQLite: with `claim_counter` in a transaction, then `claim_state`); one-row: `guarded_current` when not applied | 1, or 2 |
//! | guarded set | `guarded_update` or `guarded_delete`; `guarded_current` when not applied | 1, or 2 |
//! | vacate | PostgreSQL `vacate_all`/`vacate_range`; elsewhere a read, then `delete` | 1 (PostgreSQL), 2 |
//! | set-object | `object_insert_held`/`_free` (no object expected) or `object_update_held`/`_free` (a prefix; `…_from` when it has no end): `INSERT … SELECT … WHERE <guard>` or `UPDATE … WHERE value >= p AND value < prefix_end(p) AND <guard>`, one statement that checks and writes; `object_current` when not applied | 1, or 2 |
//! | purge | `purge_row` or `purge_all` | 1 |
//! | scan | `scan_first`/`scan_after`, then `scan_cells` | 2 or more |
//!
//! The object statements' shapes per database (MariaDB's self-joins, PostgreSQL's `FOR
//! SHARE`, the one-row counter in `fence`) are in `object.rs`.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use baton_kernel::{Error, ErrorKind, Result};

mod claim;
mod errors;
mod layout;
mod migrate;
mod moving;
mod object;
mod one_row;
pub(crate) mod one_row_mysql;
pub(crate) mod one_row_sqlite;
mod operation;
mod schema;
mod statement;
mod table_state;

use claim::claim_statements;
pub use errors::{describe_database, failure, DriverError, Phase};
pub use layout::{
    Layout, StatementSet, StatementSets, FLAG_CELL, FLAG_ROW, MARKER, ONE_ROW_COLUMNS, ONE_ROW_FLAG,
};
pub use migrate::Migration;
pub use moving::{is_moving, moving_route, shows_marker, Route};
use object::object_statements;
pub use object::MYSQL_MAX_VALUE_BYTES;
pub use operation::{ttl_ms, Done, Kind, Operation, Param, Step, Val, MAX_KEY_BYTES};
pub use schema::{add_stamp_failed, missing_columns, SchemaCheck, SchemaSetup, SchemaStep};
pub use statement::{schema_statement, Statement, Statements};
pub use table_state::{names_a_migrate_guard, read_layout, Next, Outcome, TableState};

/// The database a store talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// SQLite 3.35+ (the bundled library).
    Sqlite,
    /// PostgreSQL 12+.
    Postgres,
    /// MariaDB 10.5+ (`DELETE … RETURNING`; MySQL proper lacks it).
    MySql,
}

impl Dialect {
    /// The database named `name`, as URL schemes and adapters name it (`"postgres"` or
    /// `"postgresql"`, `"mysql"` or `"mariadb"`, `"sqlite"`).
    pub fn parse(name: &str) -> Option<Dialect> {
        match name {
            "postgres" | "postgresql" => Some(Dialect::Postgres),
            "mysql" | "mariadb" => Some(Dialect::MySql),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    /// The database's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mysql",
        }
    }

    /// `ident` quoted as an identifier (it has been validated: no quote characters inside).
    pub(crate) fn quote(self, ident: &str) -> String {
        match self {
            Dialect::MySql => format!("`{ident}`"),
            Dialect::Sqlite | Dialect::Postgres => format!("\"{ident}\""),
        }
    }

    /// The server's current time, in the type of `expires_at`.
    pub(crate) fn now(self) -> &'static str {
        match self {
            Dialect::Sqlite => "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)",
            Dialect::Postgres => "statement_timestamp()",
            Dialect::MySql => "UTC_TIMESTAMP(6)",
        }
    }

    /// The expiry of a cell written now with a TTL of `?` milliseconds (NULL when `?` is NULL).
    /// SQLite's clock is read in whole milliseconds, rounded down, so one is added: a TTL is
    /// rounded up, never down.
    pub(crate) fn expiry(self) -> String {
        match self {
            Dialect::Sqlite => format!("({} + 1 + ?)", self.now()),
            Dialect::Postgres => format!("({} + ?::bigint * interval '1 millisecond')", self.now()),
            Dialect::MySql => format!("TIMESTAMPADD(MICROSECOND, ? * 1000, {})", self.now()),
        }
    }

    /// Milliseconds until `expires_at`, rounded up (NULL when there is no TTL): a live cell never
    /// reports less time than it has.
    pub(crate) fn remaining(self) -> String {
        match self {
            Dialect::Sqlite => format!("(expires_at - {})", self.now()),
            Dialect::Postgres => format!(
                "CEIL(EXTRACT(EPOCH FROM (expires_at - {})) * 1000)::bigint",
                self.now()
            ),
            Dialect::MySql => format!(
                "((TIMESTAMPDIFF(MICROSECOND, {}, expires_at) + 999) DIV 1000)",
                self.now()
            ),
        }
    }

    /// The condition that a row is live at the server's current time.
    pub(crate) fn live(self) -> String {
        format!("(expires_at IS NULL OR expires_at > {})", self.now())
    }

    /// The condition that a row has expired (a row without a TTL never does).
    fn expired(self) -> String {
        format!("(expires_at IS NOT NULL AND expires_at <= {})", self.now())
    }

    /// The final statement text: PostgreSQL numbers its placeholders.
    fn finish(self, sql: &str) -> String {
        let text = match self {
            Dialect::Postgres => {
                let mut out = String::with_capacity(sql.len() + 16);
                let mut n = 0;
                for c in sql.chars() {
                    if c == '?' {
                        n += 1;
                        out.push_str(&format!("${n}"));
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            Dialect::Sqlite | Dialect::MySql => sql.to_string(),
        };
        // Built from constant text and the validated, quoted table name only.
        text
    }
}

/// What a host sets on every new connection, as statements, for a store whose statements time
/// out after `timeout` on the server: the server then aborts (and rolls back) a statement
/// rather than letting it run on after the client gave up, and lock waits give up at the same
/// time. SQLite: write-ahead log with `synchronous=FULL` (a power loss must not lose a commit:
/// a lost commit can take a fencing counter back to a token already handed out, or forget a
/// granted lock; `journal_mode` applies to file databases only) and a busy timeout;
/// PostgreSQL: `statement_timeout`; MariaDB: `max_statement_time` and
/// `innodb_lock_wait_timeout` (whole seconds, at least 1). The native stores set the same
/// through their driver's connection options.
pub fn session_setup(dialect: Dialect, timeout: core::time::Duration) -> Vec<String> {
    let ms = timeout.as_millis();
    match dialect {
        Dialect::Sqlite => vec![
            String::from("PRAGMA journal_mode = WAL"),
            String::from("PRAGMA synchronous = FULL"),
            format!("PRAGMA busy_timeout = {ms}"),
        ],
        Dialect::Postgres => vec![format!("SET statement_timeout = {ms}")],
        Dialect::MySql => vec![format!(
            "SET SESSION max_statement_time = {:.3}, innodb_lock_wait_timeout = {}",
            timeout.as_secs_f64(),
            timeout.as_secs().max(1) + u64::from(timeout.subsec_nanos() > 0)
        )],
    }
}

/// The default lock table.
pub const DEFAULT_TABLE: &str = "baton_locks";

/// Checks a table name: `[A-Za-z_][A-Za-z0-9_]{0,62}` ([`ErrorKind::InvalidOption`] otherwise).
pub fn validate_table(table: &str) -> Result<()> {
    let mut chars = table.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if first_ok && rest_ok && table.len() <= 63 {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidOption,
        format!(
            "invalid lock table name {table:?}: it must be 1 to 63 characters of ASCII letters, digits and _, not starting with a digit"
        ),
    ))
}

impl Statements {
    /// The statements of `dialect` on a two-row `table` (validated here).
    pub fn new(dialect: Dialect, table: &str) -> Result<Statements> {
        Statements::in_layout(dialect, table, Layout::TwoRows)
    }

    /// The statements of `dialect` on `table` (validated here) in `layout`. The table-level
    /// statements (`columns`, `layout_flag`, `add_stamp`, …) are the same in every layout but
    /// `create`, which makes a table of that layout.
    pub fn in_layout(dialect: Dialect, table: &str, layout: Layout) -> Result<Statements> {
        Statements::in_layout_moving(dialect, table, layout, false)
    }

    /// The statements of a table `baton migrate` is moving (it has the `fence` columns and no
    /// layout flag yet): the one-row set, but for reads, which also show, as a name's counter,
    /// its counter row where that is no marker (a name not moved yet). Correct for both kinds
    /// of name in every command that does not write or guard by the counter; those run on the
    /// two-row set first ([`moving_route`]).
    pub fn moving(dialect: Dialect, table: &str) -> Result<Statements> {
        Statements::in_layout_moving(dialect, table, Layout::OneRow, true)
    }

    fn in_layout_moving(
        dialect: Dialect,
        table: &str,
        layout: Layout,
        moving: bool,
    ) -> Result<Statements> {
        let mut st = Statements::two_rows(dialect, table)?;
        if layout == Layout::OneRow {
            st = match dialect {
                Dialect::Postgres => one_row::one_row_statements(table, st, moving),
                Dialect::MySql => one_row_mysql::one_row_mysql_statements(table, st, moving),
                Dialect::Sqlite => one_row_sqlite::one_row_sqlite_statements(table, st, moving),
            };
            let create = create_table(dialect, table, layout);
            st.ddl = ddl_with_routines(&create, &st.routines);
            st.create = create;
        }
        Ok(st)
    }

    fn two_rows(dialect: Dialect, table: &str) -> Result<Statements> {
        validate_table(table)?;
        let d = dialect;
        let t = d.quote(table);
        let live = d.live();
        let rem = d.remaining();
        let select = format!("SELECT cell, value, {rem}, stamp FROM {t} WHERE lock_name = ?");
        let insert = format!(
            "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp) VALUES (?, ?, ?, {}, ?)",
            d.expiry()
        );
        let (put, insert_if_absent) = match d {
            Dialect::Sqlite | Dialect::Postgres => (
                // The conflicting row is replaced only by a newer write: a put that reaches the
                // server after a later write of the same cell changes nothing.
                format!(
                    "{insert} ON CONFLICT (lock_name, cell) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, stamp = excluded.stamp WHERE {t}.stamp < excluded.stamp"
                ),
                // The conflicting row is replaced only if it has expired; otherwise nothing is
                // written and no row is counted. Atomic: the unique key serializes contenders.
                format!(
                    "{insert} ON CONFLICT (lock_name, cell) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, stamp = excluded.stamp WHERE {t}.expires_at IS NOT NULL AND {t}.expires_at <= {}",
                    d.now()
                ),
            ),
            Dialect::MySql => {
                let expired = d.expired();
                let newer = "stamp < VALUES(stamp)";
                (
                    // MariaDB evaluates the assignments left to right, and each one sees the
                    // columns assigned before it: `stamp` is assigned last, so the tests before
                    // it compare the old row's stamp.
                    format!(
                        "{insert} ON DUPLICATE KEY UPDATE value = IF({newer}, VALUES(value), value), expires_at = IF({newer}, VALUES(expires_at), expires_at), stamp = GREATEST(stamp, VALUES(stamp))"
                    ),
                    // Left to right as well: `value` and `stamp` are assigned while `expires_at`
                    // still holds the old row's expiry. The driver reports found rows rather
                    // than changed ones (CLIENT_FOUND_ROWS), so an unchanged row and an
                    // inserted one both count 1; LAST_INSERT_ID(x) tells them apart: the OK
                    // packet carries 1 when a live row was kept, 2 when an expired row was
                    // taken over, and 0 after a plain insert.
                    format!(
                        "{insert} ON DUPLICATE KEY UPDATE value = IF(LAST_INSERT_ID(IF({expired}, 2, 1)) = 2, VALUES(value), value), stamp = IF({expired}, VALUES(stamp), stamp), expires_at = IF({expired}, VALUES(expires_at), expires_at)"
                    ),
                )
            }
        };
        let returning = "RETURNING lock_name, cell";
        let (columns, catalog_name) = match d {
            Dialect::Sqlite => (
                String::from("SELECT name FROM pragma_table_info(?)"),
                table.to_owned(),
            ),
            // to_regclass resolves the name through the search path, as the statements do.
            Dialect::Postgres => (
                String::from(
                    "SELECT attname::text FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass(?) AND attnum > 0 AND NOT attisdropped",
                ),
                t.clone(),
            ),
            Dialect::MySql => (
                String::from(
                    "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
                ),
                table.to_owned(),
            ),
        };
        let mut claims = claim_statements(d, table)?;
        // MariaDB's one-row purge procedure is made with every MariaDB table's routines: a
        // store asked for two rows may meet a one-row table another store made.
        if d == Dialect::MySql {
            claims.routines.push(one_row_mysql::purge_routine(table));
        }
        let objects = object_statements(d, table, Layout::TwoRows);
        let create_sql = create_table(d, table, Layout::TwoRows);
        let add_stamp = add_stamp_column(d, table);
        let purge_row = format!(
            "DELETE FROM {t} WHERE lock_name = ? AND {} {returning}",
            d.expired()
        );
        let delete = format!("DELETE FROM {t} WHERE lock_name = ? AND cell = ? AND stamp <= ?");
        let cas_delete =
            format!("DELETE FROM {t} WHERE lock_name = ? AND cell = ? AND value = ? AND {live}");
        Ok(Statements {
            dialect: d,
            layout: Layout::TwoRows,
            read_all: d.finish(&format!("{select} AND {live} ORDER BY cell")),
            read_range: d.finish(&format!(
                "{select} AND cell >= ? AND cell < ? AND {live} ORDER BY cell"
            )),
            read_from: d.finish(&format!("{select} AND cell >= ? AND {live} ORDER BY cell")),
            read_exact: d.finish(&format!("{select} AND cell = ? AND {live}")),
            put: d.finish(&put),
            delete: d.finish(&delete),
            delete_async: d.finish(&match d {
                Dialect::Postgres => format!(
                    "WITH d AS ({delete}) SELECT set_config('synchronous_commit', 'off', true)"
                ),
                Dialect::Sqlite | Dialect::MySql => delete.clone(),
            }),
            insert_if_absent: d.finish(&insert_if_absent),
            cas_update: d.finish(&format!(
                "UPDATE {t} SET value = ?, expires_at = {}, stamp = ? WHERE lock_name = ? AND cell = ? AND value = ? AND {live}",
                d.expiry()
            )),
            cas_delete: d.finish(&cas_delete),
            end_lock: d.finish(&delete),
            cas_end_lock: d.finish(&cas_delete),
            current: d.finish(&format!(
                "SELECT value FROM {t} WHERE lock_name = ? AND cell = ? AND {live}"
            )),
            purge_all: d.finish(&format!(
                "DELETE FROM {t} WHERE {} {returning}",
                d.expired()
            )),
            purge_row: d.finish(&purge_row),
            purge_others: d.finish(&purge_row),
            scan_first: d.finish(&format!(
                "SELECT DISTINCT lock_name FROM {t} WHERE {live} ORDER BY lock_name LIMIT ?"
            )),
            scan_after: d.finish(&format!(
                "SELECT DISTINCT lock_name FROM {t} WHERE lock_name > ? AND {live} ORDER BY lock_name LIMIT ?"
            )),
            scan_cells: d.finish(&format!(
                "SELECT lock_name, cell, value, {rem}, stamp FROM {t} WHERE lock_name >= ? AND lock_name <= ? AND {live} ORDER BY lock_name, cell"
            )),
            claim: d.finish(&claims.claim),
            claim_async: d.finish(&claims.claim_async),
            claim_first: d.finish(&claims.claim),
            claim_first_async: d.finish(&claims.claim_async),
            claim_counter: d.finish(&claims.counter),
            claim_state: d.finish(&claims.state),
            guarded_delete: d.finish(&claims.guarded_delete),
            delete_notify: d.finish(&claims.delete_notify),
            guarded_delete_async: d.finish(&claims.guarded_delete_async),
            delete_notify_async: d.finish(&claims.delete_notify_async),
            vacate_all: d.finish(&claims.vacate_all),
            vacate_range: d.finish(&claims.vacate_range),
            vacate_all_async: d.finish(&claims.vacate_all_async),
            vacate_range_async: d.finish(&claims.vacate_range_async),
            guarded_update: d.finish(&claims.guarded_update),
            guarded_current: d.finish(&claims.guarded_current),
            object_insert_held: d.finish(&objects.insert_held),
            object_insert_free: d.finish(&objects.insert_free),
            object_update_held: d.finish(&objects.update_held),
            object_update_free: d.finish(&objects.update_free),
            object_update_held_from: d.finish(&objects.update_held_from),
            object_update_free_from: d.finish(&objects.update_free_from),
            object_current: d.finish(&objects.current),
            routines_ddl: claims.routines.join("\n\n"),
            ddl: ddl_with_routines(&create_sql, &claims.routines),
            routines: claims.routines,
            columns: d.finish(&columns),
            layout_flag: format!(
                "SELECT value FROM {t} WHERE lock_name = '{FLAG_ROW}' AND cell = '{FLAG_CELL}'"
            ),
            create: create_sql.iter().map(|s| d.finish(s)).collect(),
            add_stamp_ddl: format!("{add_stamp};"),
            add_stamp: d.finish(&add_stamp),
            catalog_name,
        })
    }
}

/// The columns every lock table has (checked when `create` is off).
pub const COLUMNS: [&str; 5] = ["lock_name", "cell", "value", "expires_at", "stamp"];

/// The column added after the first release of the table: a table that lacks only this one is
/// altered (with `create` on) rather than refused.
pub const STAMP_COLUMN: &str = "stamp";

/// The definition of the `stamp` column, in `CREATE TABLE` and in `ALTER TABLE … ADD COLUMN`:
/// the stamp of the write that made the row (rows written before the column existed have 0).
fn stamp_definition(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "stamp INTEGER NOT NULL DEFAULT 0",
        Dialect::Postgres => "stamp bigint NOT NULL DEFAULT 0",
        Dialect::MySql => "stamp BIGINT NOT NULL DEFAULT 0",
    }
}

/// The DDL an operator runs for a new table: the table, its index, and the routines its
/// statements call (MariaDB's claim procedure, which a client runs with `DELIMITER` set, since its
/// body holds semicolons).
fn ddl_with_routines(create: &[String], routines: &[String]) -> String {
    let mut ddl = create.join(";\n") + ";";
    for routine in routines {
        ddl.push_str("\nDELIMITER $$\n");
        ddl.push_str(routine);
        ddl.push_str("$$\nDELIMITER ;");
    }
    ddl
}

/// `CREATE TABLE IF NOT EXISTS`, for `dialect`, in `layout` (one row: PostgreSQL and MariaDB,
/// with the table's layout flag; see [`Layout`]).
///
/// The primary key is the table's only index. Every statement but a table-wide purge finds its
/// rows by `(lock_name, cell)`; an index on `expires_at` would be written by every claim (a new
/// row) and every renewal (which then cannot update the row in place: PostgreSQL's HOT update
/// needs no indexed column changed), to speed up only that purge, an operator's occasional
/// command that reads the whole table without it. Tables made by earlier builds have one,
/// `<table>_expires`, which the store leaves alone; docs/sql-store.md, "The lock table", says
/// how to drop it.
pub fn create_table(dialect: Dialect, table: &str, layout: Layout) -> Vec<String> {
    let t = dialect.quote(table);
    let stamp = stamp_definition(dialect);
    match (dialect, layout) {
        (Dialect::Sqlite, Layout::OneRow) => one_row_sqlite::create(table, stamp),
        (Dialect::Sqlite, Layout::TwoRows) => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  lock_name TEXT NOT NULL,\n  cell TEXT NOT NULL,\n  value TEXT NOT NULL,\n  expires_at INTEGER,\n  {stamp},\n  PRIMARY KEY (lock_name, cell)\n) WITHOUT ROWID"
            ),
        ],
        (Dialect::Postgres, Layout::TwoRows) => vec![
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (\n  lock_name varchar(255) COLLATE \"C\" NOT NULL,\n  cell varchar(255) COLLATE \"C\" NOT NULL,\n  value text NOT NULL,\n  expires_at timestamptz,\n  {stamp},\n  PRIMARY KEY (lock_name, cell)\n)"
            ),
        ],
        // The table and its layout flag in one transaction (a `DO` block), so no client sees
        // the table without its flag. The flag's insert names `fence`: run in a race against
        // an earlier version's creator of a two-row table, it fails, and the block changes
        // nothing. The check refuses a counter row, which an earlier version's client would
        // write (its claims then fail rather than count apart).
        (Dialect::Postgres, Layout::OneRow) => vec![
            format!(
                "DO $baton$ BEGIN\nCREATE TABLE IF NOT EXISTS {t} (\n  lock_name varchar(255) COLLATE \"C\" NOT NULL,\n  cell varchar(255) COLLATE \"C\" NOT NULL,\n  value text NOT NULL,\n  expires_at timestamptz,\n  {stamp},\n  fence text,\n  fence_stamp bigint,\n  PRIMARY KEY (lock_name, cell),\n  CHECK (cell <> '_LOCK_')\n);\nINSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence) VALUES ('{FLAG_ROW}', '{FLAG_CELL}', '{ONE_ROW_FLAG}', NULL, 0, NULL) ON CONFLICT DO NOTHING;\nEND $baton$"
            ),
        ],
        (Dialect::MySql, Layout::TwoRows) => vec![format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n  lock_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n  cell VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n  value TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n  expires_at DATETIME(6) NULL,\n  {stamp},\n  PRIMARY KEY (lock_name, cell)\n) ENGINE=InnoDB"
        )],
        // The table and its flag row in one statement (`CREATE … SELECT`, atomic in MariaDB:
        // no client sees the table without its flag; an existing table is left as it is, with
        // a note, and gets no row). The check refuses a counter row, as PostgreSQL's does.
        (Dialect::MySql, Layout::OneRow) => vec![format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n  lock_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n  cell VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n  value TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,\n  expires_at DATETIME(6) NULL,\n  {stamp},\n  fence TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,\n  fence_stamp BIGINT NULL,\n  PRIMARY KEY (lock_name, cell),\n  CHECK (cell <> '_LOCK_')\n) ENGINE=InnoDB\nSELECT '{FLAG_ROW}' AS lock_name, '{FLAG_CELL}' AS cell, '{ONE_ROW_FLAG}' AS value, NULL AS expires_at, 0 AS stamp, NULL AS fence, NULL AS fence_stamp"
        )],
    }
}

/// `ALTER TABLE … ADD COLUMN` of the `stamp` column, for a table created before it existed.
/// PostgreSQL and MariaDB skip it if a concurrent store added the column first; SQLite has no
/// `IF NOT EXISTS` here, and its caller checks the columns again after a failure.
pub fn add_stamp_column(dialect: Dialect, table: &str) -> String {
    let t = dialect.quote(table);
    let stamp = stamp_definition(dialect);
    match dialect {
        Dialect::Sqlite => format!("ALTER TABLE {t} ADD COLUMN {stamp}"),
        Dialect::Postgres | Dialect::MySql => {
            format!("ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {stamp}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a statement that changes rows has, as this module writes them.
    fn writes_rows(sql: &str) -> bool {
        let sql = sql.replace("FOR UPDATE", "");
        ["INSERT ", "UPDATE ", "DELETE ", "CALL "]
            .iter()
            .any(|w| sql.contains(w))
    }

    #[test]
    fn statement_names_are_unique_and_access_matches_the_text() {
        let mut names: Vec<&str> = Statement::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Statement::ALL.len(), "{names:?}");
        assert_eq!(Statement::GuardedDeleteAsync.name(), "guarded-delete-async");
        for (i, s) in Statement::ALL.iter().enumerate() {
            // A statement's name is its field's, in kebab case, and ALL is in declaration order.
            assert_eq!(s.name(), s.field().replace('_', "-"), "{s:?}");
            assert_eq!(*s as usize, i, "{s:?}");
        }
        let layouts = [
            (Dialect::Sqlite, Layout::TwoRows),
            (Dialect::MySql, Layout::TwoRows),
            (Dialect::Postgres, Layout::TwoRows),
            (Dialect::Postgres, Layout::OneRow),
        ];
        for (d, layout) in layouts {
            let st = Statements::in_layout(d, "t", layout).expect("valid");
            for s in Statement::ALL {
                let sql = st.get(s).as_str();
                let read = s.access() == crate::Access::Read;
                // SQLite's claim_state and the read-only statements never write; every other
                // statement may (MariaDB's claim is a CALL of the claim procedure).
                assert_eq!(
                    !writes_rows(sql),
                    read,
                    "{d:?} {layout:?} {s:?} is {:?}: {sql}",
                    s.access()
                );
            }
        }
    }

    #[test]
    fn table_names_are_identifiers() {
        for ok in ["baton_locks", "_x", "T1", &"a".repeat(63)] {
            assert!(validate_table(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "a-b",
            "a b",
            "x\"; DROP TABLE y; --",
            "tä",
            &"a".repeat(64),
        ] {
            let e = validate_table(bad).expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
        }
    }

    #[test]
    fn postgres_placeholders_are_numbered() {
        let st = Statements::new(Dialect::Postgres, "t").expect("valid");
        assert!(
            st.cas_update.as_str().starts_with(
                "UPDATE \"t\" SET value = $1, expires_at = (statement_timestamp() + $2::bigint"
            ),
            "{}",
            st.cas_update.as_str()
        );
        assert!(!st.cas_update.as_str().contains('?'));
        let my = Statements::new(Dialect::MySql, "t").expect("valid");
        assert_eq!(
            my.delete.as_str(),
            "DELETE FROM `t` WHERE lock_name = ? AND cell = ? AND stamp <= ?"
        );
    }

    #[test]
    fn puts_replace_only_older_rows() {
        let pg = Statements::new(Dialect::Postgres, "t").expect("valid");
        assert!(
            pg.put.as_str().ends_with(
                "DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, stamp = excluded.stamp WHERE \"t\".stamp < excluded.stamp"
            ),
            "{}",
            pg.put.as_str()
        );
        assert_eq!(pg.put.as_str().matches('$').count(), 5);
        let my = Statements::new(Dialect::MySql, "t").expect("valid");
        // `stamp` is assigned last: MariaDB's later assignments see the earlier ones' values.
        assert!(
            my.put
                .as_str()
                .ends_with(", stamp = GREATEST(stamp, VALUES(stamp))"),
            "{}",
            my.put.as_str()
        );
        // In insert-if-absent, `expires_at` is assigned last, after the tests that read it.
        assert!(
            my.insert_if_absent
                .as_str()
                .ends_with(", expires_at = IF((expires_at IS NOT NULL AND expires_at <= UTC_TIMESTAMP(6)), VALUES(expires_at), expires_at)"),
            "{}",
            my.insert_if_absent.as_str()
        );
    }

    #[test]
    fn object_writes_lock_what_they_check_and_never_truncate() {
        let objects = [
            Statement::ObjectInsertHeld,
            Statement::ObjectInsertFree,
            Statement::ObjectUpdateHeld,
            Statement::ObjectUpdateFree,
            Statement::ObjectUpdateHeldFrom,
            Statement::ObjectUpdateFreeFrom,
        ];
        let my = Statements::new(Dialect::MySql, "t").expect("valid");
        let pg = Statements::new(Dialect::Postgres, "t").expect("valid");
        let one = Statements::in_layout(Dialect::Postgres, "t", Layout::OneRow).expect("valid");
        for s in objects {
            // IGNORE would turn a value too long for TEXT into a truncated one.
            assert!(!my.get(s).contains("IGNORE"), "{s:?}: {}", my.get(s));
            // PostgreSQL locks the guard's rows: a change of them waits, or is waited for.
            assert!(pg.get(s).contains("FOR SHARE"), "{s:?}: {}", pg.get(s));
            assert_eq!(
                one.get(s).contains("k.fence = $"),
                matches!(
                    s,
                    Statement::ObjectInsertHeld
                        | Statement::ObjectUpdateHeld
                        | Statement::ObjectUpdateHeldFrom
                ),
                "{s:?}: {}",
                one.get(s)
            );
            // Every placeholder of the text is numbered, from 1.
            assert!(
                !pg.get(s).contains('?') && pg.get(s).contains("$1"),
                "{s:?}"
            );
        }
        // MariaDB updates join the table to itself: no subquery on the table they change.
        for s in [Statement::ObjectUpdateHeld, Statement::ObjectUpdateFree] {
            assert!(!my.get(s).contains("SELECT"), "{s:?}: {}", my.get(s));
        }
        assert!(one.object_current.contains("SELECT fence FROM"));
    }

    #[test]
    fn every_table_definition_has_a_stamp_column() {
        for d in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            let st = Statements::new(d, "t").expect("valid");
            assert!(st.ddl.contains(stamp_definition(d)), "{}", st.ddl);
            assert!(
                st.add_stamp_ddl.starts_with("ALTER TABLE ")
                    && st.add_stamp_ddl.contains(stamp_definition(d)),
                "{}",
                st.add_stamp_ddl
            );
            for c in COLUMNS {
                assert!(st.ddl.contains(&format!("  {c} ")), "{c}: {}", st.ddl);
            }
        }
    }
}
