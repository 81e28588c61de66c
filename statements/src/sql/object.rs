//! The SQL of an object write ([`Command::SetObject`]): one statement that writes the object's
//! cell only if its live value is as expected and the guard holds, all checked by the
//! statement itself; and the read of what was in the way when it wrote nothing.
//!
//! | expected | guard | statement | parameters |
//! | --- | --- | --- | --- |
//! | none | held | `object_insert_held` | `(row, cell, value, stamp, row, lock, lock_value, row, counter, counter_value)` |
//! | none | free | `object_insert_free` | `(row, cell, value, stamp, row, lock)` |
//! | prefix `p` | held | `object_update_held` | `(value, stamp, row, cell, p, prefix_end(p), row, lock, lock_value, row, counter, counter_value)` |
//! | prefix `p` | free | `object_update_free` | `(value, stamp, row, cell, p, prefix_end(p), row, lock)`; MariaDB: `(row, lock, value, stamp, row, cell, p, prefix_end(p))` |
//!
//! (`object_update_held_from` and `object_update_free_from` are the same without
//! `prefix_end(p)`, for a prefix that has none.) Each answers with the rows it wrote: one when
//! it applied (MariaDB's insert: and no `LAST_INSERT_ID` marker 1, the mark of a row that was
//! there). When it wrote nothing, `object_current`, `(row, cell, row, lock, row, counter)`,
//! reads the object's, the lock's and the counter's live values (`''`: none), informational
//! and possibly a moment newer than the write's own check. One round trip when it applies, two
//! when it does not.
//!
//! The shapes, per database:
//!
//! - **Insert** (no object expected): `INSERT … SELECT ?, ?, ?, NULL, ? WHERE <guard>` that
//!   inserts nothing when a row is there (PostgreSQL `ON CONFLICT DO NOTHING`, SQLite `INSERT
//!   OR IGNORE`, MariaDB `… FROM DUAL WHERE … ON DUPLICATE KEY UPDATE` with the marker). An
//!   object cell has no TTL, so no expired row of it can be in the way: a row is a live cell.
//!   MariaDB's insert is not `INSERT IGNORE`, which would turn a value too long for the column
//!   into a truncated one rather than an error (strict mode).
//! - **Update** (a prefix expected): `UPDATE … SET value, expires_at = NULL, stamp WHERE
//!   lock_name = ? AND cell = ? AND value >= p AND value < prefix_end(p) AND <live> AND
//!   <guard>`: values compare by their bytes (binary collations), so the range is exactly the
//!   values that start with `p` (see [`prefix_end`](baton_kernel::model::prefix_end)).
//!   MariaDB refuses a subquery on the table an `UPDATE` changes, so it joins the table to
//!   itself: a held guard's lock and counter rows by inner joins, a free guard's live lock row
//!   by a `LEFT JOIN … IS NULL`.
//! - **The guard**, with each database's liveness test (the server's clock; no expiry is
//!   live): held, the lock cell holds its value and the counter its value; free, no live lock
//!   cell. PostgreSQL locks the rows it checks (`FOR SHARE`), so a release, a forced release or
//!   a claim that changes one of them waits for the write, or the write for it, and then sees
//!   its outcome; a free guard locks the lock row whether or not it is live (a claim takes an
//!   existing row over by updating it). MariaDB's locking reads of the joined rows (and, at
//!   REPEATABLE READ, of the gap where an absent lock row would go) do the same. SQLite runs
//!   one writer at a time.
//!
//! In a one-row PostgreSQL or MariaDB table ([`Layout::OneRow`]) the counter `_LOCK_` is the `fence`
//! column of the row `(name, 'lock')`: a held guard compares that (the operation refuses a
//! counter other than `_LOCK_` there), and `object_current` reads it.
//!
//! One case is not serialized by PostgreSQL: a free guard against a lock row that does not
//! exist (a name never locked, or a two-row table's lock released since) locks nothing, so a
//! claim that inserts the row while the write runs is not waited for; the write is then
//! ordered before that claim, which its check saw (the object's version still tells a later
//! write that it came first).
//!
//! [`Command::SetObject`]: baton_kernel::Command::SetObject

use alloc::format;
use alloc::string::String;

use baton_kernel::strategy::unique::LOCK_COLUMN;
use baton_kernel::strategy::COUNTER_COLUMN;

use super::{Dialect, Layout};

/// The texts [`Statements`](super::Statements) takes (before placeholders are numbered).
pub(crate) struct Objects {
    pub insert_held: String,
    pub insert_free: String,
    pub update_held: String,
    pub update_free: String,
    pub update_held_from: String,
    pub update_free_from: String,
    pub current: String,
}

/// The largest cell value MariaDB's lock table holds, in bytes: its `value` column is `TEXT`.
pub const MYSQL_MAX_VALUE_BYTES: usize = 65_535;

/// A text parameter compared with a literal: PostgreSQL needs its type.
fn param(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "?::text",
        Dialect::Sqlite | Dialect::MySql => "?",
    }
}

/// The condition that the row `alias` is live at the server's current time.
fn live(d: Dialect, alias: &str) -> String {
    let now = d.now();
    format!("({alias}.expires_at IS NULL OR {alias}.expires_at > {now})")
}

/// The held guard's two conditions as `EXISTS` subqueries (PostgreSQL, SQLite): `(row, lock,
/// lock_value, row, counter, counter_value)`.
fn held_exists(d: Dialect, t: &str, layout: Layout) -> String {
    let share = if d == Dialect::Postgres {
        " FOR SHARE"
    } else {
        ""
    };
    let lock = format!(
        "EXISTS (SELECT 1 FROM {t} AS g WHERE g.lock_name = ? AND g.cell = ? AND g.value = ? AND {}{share})",
        live(d, "g")
    );
    let counter = match layout {
        Layout::TwoRows => format!(
            "EXISTS (SELECT 1 FROM {t} AS k WHERE k.lock_name = ? AND k.cell = ? AND k.value = ? AND {}{share})",
            live(d, "k")
        ),
        // The counter is the `lock` row's `fence` (no expiry); the counter's name is compared
        // with `_LOCK_` once, before any row is read.
        Layout::OneRow => format!(
            "EXISTS (SELECT 1 FROM {t} AS k WHERE k.lock_name = ? AND k.cell = '{LOCK_COLUMN}' AND {} = '{COUNTER_COLUMN}' AND k.fence = ?{share})",
            param(d)
        ),
    };
    format!("{lock} AND {counter}")
}

/// The free guard (PostgreSQL, SQLite): `(row, lock)`, no live lock row. PostgreSQL locks the
/// lock row, live or not, and tests the liveness of the version it locked: the test is the
/// locked query's result, computed on that version, not a condition of the query (which the
/// planner would move below the lock, leaving a row that is not live unlocked).
fn free_not_exists(d: Dialect, t: &str) -> String {
    match d {
        Dialect::Postgres => format!(
            "NOT COALESCE((SELECT {} FROM {t} AS g WHERE g.lock_name = ? AND g.cell = ? FOR SHARE), FALSE)",
            live(d, "g")
        ),
        Dialect::Sqlite | Dialect::MySql => format!(
            "NOT EXISTS (SELECT 1 FROM {t} AS g WHERE g.lock_name = ? AND g.cell = ? AND {})",
            live(d, "g")
        ),
    }
}

/// The object's value range: `value >= p AND value < end`, or `value >= p` when `p` has no end.
fn range(alias: &str, with_end: bool) -> String {
    if with_end {
        format!("{alias}value >= ? AND {alias}value < ?")
    } else {
        format!("{alias}value >= ?")
    }
}

pub(crate) fn object_statements(d: Dialect, table: &str, layout: Layout) -> Objects {
    let t = d.quote(table);
    let t = t.as_str();
    let now_live = d.live();
    // The inserted row: `(row, cell, value, stamp)`; PostgreSQL needs the types of parameters
    // that only a select list holds.
    let values = match d {
        Dialect::Postgres => "?::text, ?::text, ?::text, NULL::timestamptz, ?::bigint",
        Dialect::Sqlite | Dialect::MySql => "?, ?, ?, NULL, ?",
    };
    let columns = "(lock_name, cell, value, expires_at, stamp)";
    let insert = |guard: &str| {
        match d {
        Dialect::Postgres => format!(
            "INSERT INTO {t} {columns} SELECT {values} WHERE {guard} ON CONFLICT (lock_name, cell) DO NOTHING"
        ),
        Dialect::Sqlite => {
            format!("INSERT OR IGNORE INTO {t} {columns} SELECT {values} WHERE {guard}")
        }
        // A row there is kept, and marked: `LAST_INSERT_ID` 1 (as insert-if-absent does).
        Dialect::MySql => format!(
            "INSERT INTO {t} {columns} SELECT {values} FROM DUAL WHERE {guard} ON DUPLICATE KEY UPDATE value = IF(LAST_INSERT_ID(1), value, value)"
        ),
    }
    };
    let set = "value = ?, expires_at = NULL, stamp = ?";
    let update = |guard: &str, with_end: bool| {
        format!(
            "UPDATE {t} SET {set} WHERE lock_name = ? AND cell = ? AND {} AND {now_live} AND {guard}",
            range("", with_end)
        )
    };
    let (held, free) = match d {
        Dialect::Postgres | Dialect::Sqlite => (held_exists(d, t, layout), free_not_exists(d, t)),
        // The same subqueries serve MariaDB's insert (it reads the table it inserts into
        // through a temporary copy); its update joins instead (below).
        Dialect::MySql => (held_exists(d, t, layout), free_not_exists(d, t)),
    };
    let (update_held, update_free, update_held_from, update_free_from) = match d {
        Dialect::Postgres | Dialect::Sqlite => (
            update(&held, true),
            update(&free, true),
            update(&held, false),
            update(&free, false),
        ),
        Dialect::MySql => {
            let object = |with_end: bool| {
                format!(
                    "o.lock_name = ? AND o.cell = ? AND {} AND {}",
                    range("o.", with_end),
                    live(d, "o")
                )
            };
            let set = "o.value = ?, o.expires_at = NULL, o.stamp = ?";
            // On a one-row table the counter is the lock row's `fence` (`k` is `l`'s row).
            let counter = match layout {
                Layout::TwoRows => format!("k.cell = ? AND k.value = ? AND {}", live(d, "k")),
                Layout::OneRow => {
                    format!("k.cell = '{LOCK_COLUMN}' AND ? = '{COUNTER_COLUMN}' AND k.fence = ?")
                }
            };
            let held = |with_end: bool| {
                format!(
                    "UPDATE {t} AS o, {t} AS l, {t} AS k SET {set} WHERE {} AND l.lock_name = ? AND l.cell = ? AND l.value = ? AND {} AND k.lock_name = ? AND {counter}",
                    object(with_end),
                    live(d, "l"),
                )
            };
            let free = |with_end: bool| {
                format!(
                    "UPDATE {t} AS o LEFT JOIN {t} AS l ON l.lock_name = ? AND l.cell = ? AND {} SET {set} WHERE {} AND l.lock_name IS NULL",
                    live(d, "l"),
                    object(with_end)
                )
            };
            (held(true), free(true), held(false), free(false))
        }
    };
    let value_of = || {
        format!(
            "COALESCE((SELECT value FROM {t} WHERE lock_name = ? AND cell = ? AND {now_live}), '')"
        )
    };
    let counter = match layout {
        Layout::TwoRows => value_of(),
        Layout::OneRow => format!(
            "COALESCE((SELECT fence FROM {t} WHERE lock_name = ? AND cell = '{LOCK_COLUMN}' AND {} = '{COUNTER_COLUMN}'), '')",
            param(d)
        ),
    };
    Objects {
        insert_held: insert(&held),
        insert_free: insert(&free),
        update_held,
        update_free,
        update_held_from,
        update_free_from,
        current: format!("SELECT {}, {}, {counter}", value_of(), value_of()),
    }
}
