//! PostgreSQL's one-row layout ([`Layout::OneRow`](super::Layout)): the fencing counter
//! `_LOCK_` of a name is kept in the `fence` and `fence_stamp` columns of its `lock` row, so
//! that unique insert's claim and release each change one row (`docs/one-row-claim.md`).
//!
//! The kernel still speaks of two cells; these statements map them, with the parameters and
//! result columns of the two-row statements they replace, so that an
//! [`Operation`](super::Operation) steps through them unchanged:
//!
//! - *the `_LOCK_` cell* is `fence` (value) and `fence_stamp` (stamp) of the row
//!   `(name, 'lock')`, without a TTL; it exists when `fence` is not NULL. Reads, scans and the
//!   replies of claims and guarded changes show it there; writes of `_LOCK_` write those two
//!   columns, creating the `lock` row *absent* when it is missing. No statement removes it
//!   (the kernel never does; the operation refuses it on this layout, and a `_LOCK_` with a
//!   TTL).
//! - *the `lock` cell* is the row's `value`, `expires_at` and `stamp`. It is *absent* when
//!   `expires_at = '-infinity'`: every removal of it (release, compare-and-delete, delete,
//!   purge of an expired one) ends it in place that way when the row holds a counter, and
//!   deletes the row only when it holds none. An absent cell is dead to every read and claim,
//!   is not purged or listed, and is overwritten by a put whatever its stamp, as a cell the
//!   reference table dropped would be. Any other past `expires_at` is an *expired* cell, as in
//!   the two-row layout.
//!
//! Every other cell is stored as in the two-row layout. The choice between a counter and
//! another cell is made inside each statement from its cell parameter (conditions on
//! parameters only, which PostgreSQL evaluates once, before touching a row), so a statement
//! reaches the one row it needs. The claim and the guarded change, the hot path, take only
//! unique insert's pair of cells (the operation refuses others) and have no such branches:
//! PostgreSQL sets up every branch of a statement on every call, and a general guard made the
//! release half again as slow. Parameters are cast (`$1::text`) so that a host that sends
//! them untyped (node-postgres) prepares the same statements.
//!
//! Cost: the claim (one `UPDATE` of the `lock` row, or the `INSERT` of a name's first) and the
//! release (one `UPDATE`) each change one row version, where the two-row layout changes two; a
//! claim that does not apply is followed by a read of both cells (a second round trip, for
//! waiters only: see [`one_row_claim`]); reads of a whole row probe the same row twice (its
//! cells, then its counter).

use alloc::format;
use alloc::string::String;

use super::layout::MARKER;
use super::{Dialect, Layout, Statements};

const NOW: &str = "statement_timestamp()";
const LIVE: &str = "(expires_at IS NULL OR expires_at > statement_timestamp())";
const REMAINING: &str =
    "CEIL(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000)::bigint";
/// The assignments that end a `lock` cell in place.
const END: &str = "value = '', expires_at = '-infinity'";
/// `synchronous_commit` off for the statement's own transaction.
const ASYNC: &str = "set_config('synchronous_commit', 'off', true)";

/// The expiry of a cell written now with a TTL of `ms` milliseconds (NULL: none).
fn expiry(ms: &str) -> String {
    format!("({NOW} + {ms}::bigint * interval '1 millisecond')")
}

/// The cells of row `r` as the kernel sees them: every row but a counter's (a migrated name's
/// marker, none in a table made one-row), and the `_LOCK_` cell from the `lock` row's `fence`.
/// Columns `(cell, value, expires_at, stamp)`.
fn cells(t: &str, r: &str, not_a_marker: &str) -> String {
    format!(
        "(SELECT cell, value, expires_at, stamp FROM {t} WHERE lock_name = {r}::text AND {not_a_marker} \
UNION ALL SELECT '_LOCK_'::varchar COLLATE \"C\", fence, NULL::timestamptz, fence_stamp FROM {t} WHERE lock_name = {r}::text AND cell = 'lock' AND fence IS NOT NULL) AS c"
    )
}

/// The rows named `_LOCK_` that are cells: none in a one-row table (a moved name's row is its
/// marker); while `migrate` moves the table (`moving`), the counter rows of names not moved
/// yet, which are no marker.
fn not_a_marker(moving: bool) -> String {
    if moving {
        format!("(cell <> '_LOCK_' OR value <> '{MARKER}')")
    } else {
        String::from("cell <> '_LOCK_'")
    }
}

/// The removal of cells matching `cond`: ended in place (and returned) where the row holds a
/// counter and the cell is not absent already, deleted (and returned) elsewhere: two
/// sub-statements, `e` and `d`, returning `returning`.
fn removal(t: &str, cond: &str, returning: &str) -> String {
    format!(
        "e AS (UPDATE {t} SET {END} WHERE {cond} AND fence IS NOT NULL AND expires_at IS DISTINCT FROM '-infinity' RETURNING {returning}), \
d AS (DELETE FROM {t} WHERE {cond} AND fence IS NULL RETURNING {returning})"
    )
}

/// `two_rows`, the statements of `table` in the two-row layout, with those of the one-row
/// layout in their place (the table-level ones stay).
pub(crate) fn one_row_statements(table: &str, two_rows: Statements, moving: bool) -> Statements {
    let t = Dialect::Postgres.quote(table);
    let t = t.as_str();
    let not_a_marker = not_a_marker(moving);
    let not_a_marker = not_a_marker.as_str();
    let cells = |t: &str, r: &str| cells(t, r, not_a_marker);
    let select = |r: &str| {
        format!(
            "SELECT cell, value, {REMAINING}, stamp FROM {}",
            cells(t, r)
        )
    };
    let notify = format!("pg_notify('{table}', lock_name)::text");
    let key = "lock_name = $1::text AND cell = $2::text";
    let delete_cond = format!("{key} AND stamp <= $3::bigint");
    let deleted = format!("WITH {}", removal(t, &delete_cond, "lock_name"));
    let both = "SELECT lock_name FROM e UNION ALL SELECT lock_name FROM d";
    // Unique insert's release, the only guarded change the layout takes (the operation refuses
    // others): the `lock` cell guarded by its own row's counter, which is compared on the
    // newest row version when a concurrent change made the statement wait. The row holds the
    // counter, so the cell is ended in place. (`$4`, `$5`: the guard's row and cell, always the
    // same row's `_LOCK_`, compared once, before any row is read.)
    // A plain `UPDATE … RETURNING`: wrapped in a `WITH`, it took 20-21 µs of execution against
    // 16-18 (median of 1,000 with `EXPLAIN (ANALYZE, TIMING OFF)`).
    let released = format!(
        "UPDATE {t} SET {END} WHERE {key} AND value = $3::text AND {LIVE} AND fence = $6::text AND $4::text = $1::text AND $5::text = '_LOCK_' RETURNING"
    );
    let purged = |cond: &str| {
        let expired = format!("expires_at IS NOT NULL AND expires_at <= {NOW}{cond}");
        format!(
            "WITH {} SELECT lock_name, cell FROM e UNION ALL SELECT lock_name, cell FROM d",
            removal(t, &expired, "lock_name, cell")
        )
    };
    let names = |after: &str, limit: &str| {
        format!(
            "SELECT DISTINCT lock_name FROM {t} WHERE lock_name <> ''{after} AND (({not_a_marker} AND {LIVE}) OR fence IS NOT NULL) ORDER BY lock_name LIMIT {limit}::bigint"
        )
    };
    // A counter's first write creates the `lock` row absent, at stamp 0 (any put replaces it).
    let counter_row = format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) SELECT $1::text, 'lock', '', '-infinity', 0, $3::text, $5::bigint WHERE $2::text = '_LOCK_' ON CONFLICT (lock_name, cell) DO UPDATE SET fence = excluded.fence, fence_stamp = excluded.fence_stamp"
    );
    let other_row = format!(
        "INSERT INTO {t} (lock_name, cell, value, expires_at, stamp) SELECT $1::text, $2::text, $3::text, {}, $5::bigint WHERE $2::text <> '_LOCK_' ON CONFLICT (lock_name, cell) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, stamp = excluded.stamp",
        expiry("$4")
    );
    let vacate = |range: &str, unflushed: bool| {
        let (r, c, s) = if range.is_empty() {
            ("$2", "$3", "$4")
        } else {
            ("$4", "$5", "$6")
        };
        let sync = if unflushed {
            format!(", {ASYNC}")
        } else {
            String::new()
        };
        let cond = format!("lock_name = {r}::text AND cell = {c}::text AND stamp <= {s}::bigint");
        format!(
            "WITH b AS (SELECT cell, value, {REMAINING} AS remaining, stamp FROM {} WHERE {LIVE}{range}), {} \
SELECT cell, value, remaining, stamp FROM b ORDER BY cell",
            cells(t, "$1"),
            removal(t, &cond, &format!("pg_notify('{table}', lock_name){sync}"))
        )
    };
    let claim = |first: bool, unflushed_losers: bool| one_row_claim(t, first, unflushed_losers);
    let cas_delete = format!(
        "WITH {} SELECT 1 FROM e UNION ALL SELECT 1 FROM d",
        removal(t, &format!("{key} AND value = $3::text AND {LIVE}"), "1")
    );
    // An object write's held guard, and the read after one, take the counter from `fence`.
    let objects = super::object::object_statements(Dialect::Postgres, table, Layout::OneRow);
    let numbered = |sql: &str| Dialect::Postgres.finish(sql);
    Statements {
        layout: Layout::OneRow,
        read_all: format!("{} WHERE {LIVE} ORDER BY cell", select("$1")),
        read_range: format!(
            "{} WHERE cell >= $2::text AND cell < $3::text AND {LIVE} ORDER BY cell",
            select("$1")
        ),
        read_from: format!(
            "{} WHERE cell >= $2::text AND {LIVE} ORDER BY cell",
            select("$1")
        ),
        read_exact: format!("{} WHERE cell = $2::text AND {LIVE}", select("$1")),
        current: format!(
            "SELECT value FROM {} WHERE cell = $2::text AND {LIVE}",
            cells(t, "$1")
        ),
        // A counter replaces an older one or none; another cell an older one or an absent one.
        put: format!(
            "WITH k AS ({counter_row} WHERE {t}.fence IS NULL OR {t}.fence_stamp < excluded.fence_stamp RETURNING 1), \
o AS ({other_row} WHERE {t}.stamp < excluded.stamp OR {t}.expires_at = '-infinity' RETURNING 1) \
SELECT 1 FROM k UNION ALL SELECT 1 FROM o"
        ),
        delete: format!("{deleted} {both}"),
        delete_async: format!("{deleted} SELECT {ASYNC}"),
        delete_notify: format!("{deleted} SELECT {notify} FROM ({both}) AS x"),
        delete_notify_async: format!("{deleted} SELECT {notify}, {ASYNC} FROM ({both}) AS x"),
        // A counter is written where there is none; another cell where it is not live
        // (absent or expired).
        insert_if_absent: format!(
            "WITH k AS ({counter_row} WHERE {t}.fence IS NULL RETURNING 1), \
o AS ({other_row} WHERE {t}.expires_at IS NOT NULL AND {t}.expires_at <= {NOW} RETURNING 1) \
SELECT 1 FROM k UNION ALL SELECT 1 FROM o"
        ),
        cas_update: format!(
            "WITH k AS (UPDATE {t} SET fence = $1::text, fence_stamp = $3::bigint WHERE lock_name = $4::text AND cell = 'lock' AND fence = $6::text AND $5::text = '_LOCK_' RETURNING 1), \
o AS (UPDATE {t} SET value = $1::text, expires_at = {}, stamp = $3::bigint WHERE lock_name = $4::text AND cell = $5::text AND value = $6::text AND {LIVE} AND $5::text <> '_LOCK_' RETURNING 1) \
SELECT 1 FROM k UNION ALL SELECT 1 FROM o",
            expiry("$2")
        ),
        cas_delete: cas_delete.clone(),
        // Not used on PostgreSQL (its removals choose between the counter's row and another
        // inside each statement), but the same as the statements they stand for.
        end_lock: format!("{deleted} {both}"),
        cas_end_lock: cas_delete,
        purge_all: purged(""),
        purge_row: purged(" AND lock_name = $1::text"),
        scan_first: names("", "$1"),
        scan_after: names(" AND lock_name > $1::text", "$2"),
        scan_cells: format!(
            "SELECT lock_name, cell, value, {REMAINING}, stamp FROM (\
SELECT lock_name, cell, value, expires_at, stamp FROM {t} WHERE lock_name >= $1::text AND lock_name <= $2::text AND lock_name <> '' AND {not_a_marker} \
UNION ALL SELECT lock_name, '_LOCK_'::varchar COLLATE \"C\", fence, NULL::timestamptz, fence_stamp FROM {t} WHERE lock_name >= $1::text AND lock_name <= $2::text AND lock_name <> '' AND cell = 'lock' AND fence IS NOT NULL\
) AS c WHERE {LIVE} ORDER BY lock_name, cell"
        ),
        claim: claim(false, false),
        claim_async: claim(false, true),
        claim_first: claim(true, false),
        claim_first_async: claim(true, true),
        guarded_delete: format!("{released} {notify}"),
        guarded_delete_async: format!("{released} {notify}, {ASYNC}"),
        guarded_update: format!(
            "UPDATE {t} SET value = $1::text, expires_at = {}, stamp = $3::bigint WHERE lock_name = $4::text AND cell = $5::text AND value = $6::text AND {LIVE} AND fence = $9::text AND $7::text = $4::text AND $8::text = '_LOCK_'",
            expiry("$2"),
        ),
        guarded_current: format!(
            "SELECT COALESCE((SELECT value FROM {t} WHERE lock_name = $1::text AND cell = $2::text AND {LIVE}), ''), COALESCE((SELECT fence FROM {t} WHERE lock_name = $3::text AND cell = 'lock' AND $4::text = '_LOCK_'), '')"
        ),
        vacate_all: vacate("", false),
        vacate_range: vacate(" AND cell >= $2::text AND cell < $3::text", false),
        vacate_all_async: vacate("", true),
        vacate_range_async: vacate(" AND cell >= $2::text AND cell < $3::text", true),
        object_insert_held: numbered(&objects.insert_held),
        object_update_held: numbered(&objects.update_held),
        object_update_held_from: numbered(&objects.update_held_from),
        object_current: numbered(&objects.current),
        ..two_rows
    }
}

/// The one-row claim: `$1` row, `$2` cell (`lock`), `$3` value, `$4` TTL in ms, `$5` stamp, `$6`
/// counter (`_LOCK_`), `$7` expected counter (`''`: none), `$8` next counter; the result is
/// `(1, 1, '', '')` when it applied and no row when it did not (`claimed` reads both as the
/// two-row claim's counts): the cells as found are read by a second statement, only when it
/// did not apply ([`Statements::guarded_current`](super::Statements::guarded_current)).
///
/// - The `UPDATE` takes the row over, setting the lock cell and the counter in one row
///   version, where the lock cell is not live (expired or absent) and the counter is the
///   expected one. Both conditions are checked again on the newest version when a concurrent
///   claim made it wait (READ COMMITTED), so of two claims on one row one applies; a claim
///   that reaches the server late applies only if nobody moved the counter since it was sent.
///   A row whose lock is live in the statement's snapshot fails the conditions before it is
///   locked: a waiter's claim locks and writes nothing, so waiters woken together cost a read
///   each, not a flush.
/// - With `first` only (a claim that expects no counter), wrapped in a `WITH` with it: the
///   `INSERT` of a name's first claim, when the update changed nothing; `ON CONFLICT DO
///   NOTHING`, so of two first claims one inserts.
///
/// Why the "as found" read is a second statement, and the claim that expects a counter a bare
/// `UPDATE`: PostgreSQL sets up every sub-plan of a statement on each call, used or not.
/// Measured with `EXPLAIN (ANALYZE, TIMING OFF)`, median of 1,000 executions: with the insert
/// and the reads (the first version of this statement) 50–61 µs of execution, the update in a
/// `WITH` answering its counts 26–27 µs, the bare `UPDATE … RETURNING` 16–18 µs (a plain
/// `UPDATE` of the same row 16). The second statement also reads the winner of a race that
/// made the claim wait (its snapshot is newer), where a read inside the claim saw the row as
/// it was before.
///
/// With `unflushed_losers`, a claim that changed nothing commits without waiting for the disk
/// (see the two-row claim: row locks are all it may hold). In the bare `UPDATE` that is a
/// `CASE` in its `WHERE` (whose order of evaluation `CASE` fixes): evaluated on the row as
/// found, and again on its newest version after a wait, it turns `synchronous_commit` off
/// exactly when the row is not taken over, the one case in which an `UPDATE` that locked
/// nothing may still have been given a transaction id (it qualified the row, then lost it to
/// a concurrent claim).
fn one_row_claim(t: &str, first: bool, unflushed_losers: bool) -> String {
    let ours = "$2::text = 'lock' AND $6::text = '_LOCK_'";
    let exp = expiry("$4");
    let set = format!(
        "SET value = $3::text, expires_at = {exp}, stamp = $5::bigint, fence = $8::text, fence_stamp = $5::bigint"
    );
    let free = format!(
        "expires_at IS NOT NULL AND expires_at <= {NOW} AND fence IS NOT DISTINCT FROM NULLIF($7::text, '')"
    );
    let key = "lock_name = $1::text AND cell = 'lock'";
    if !first {
        let cond = if unflushed_losers {
            format!("CASE WHEN {free} THEN true ELSE {ASYNC} IS NULL END")
        } else {
            free
        };
        return format!(
            "UPDATE {t} {set} WHERE {key} AND {ours} AND {cond} RETURNING 1::bigint, 1::bigint, '', ''"
        );
    }
    let applied = "(SELECT count(*) FROM u) + (SELECT count(*) FROM i)";
    let losers = if unflushed_losers {
        format!(" WHERE CASE WHEN {applied} > 0 THEN true ELSE {ASYNC} IS NOT NULL END")
    } else {
        String::new()
    };
    format!(
        "WITH u AS (UPDATE {t} {set} WHERE {key} AND {free} AND {ours} RETURNING 1 AS one), \
i AS (INSERT INTO {t} (lock_name, cell, value, expires_at, stamp, fence, fence_stamp) \
SELECT $1::text, 'lock', $3::text, {exp}, $5::bigint, $8::text, $5::bigint WHERE NOT EXISTS (SELECT 1 FROM u) AND $7::text = '' AND {ours} \
ON CONFLICT (lock_name, cell) DO NOTHING RETURNING 1 AS one) \
SELECT {applied}, {applied}, '', ''{losers}"
    )
}
