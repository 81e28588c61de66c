//! Which layout a lock table uses, and how a host learns it: the table's layout flag, a row
//! `('', 'layout')` that no lock name can be (names are never empty).
//!
//! | layout | where the fencing counter `_LOCK_` of a name lives | tables |
//! | --- | --- | --- |
//! | [`Layout::TwoRows`] | a row of its own, `(name, '_LOCK_')` | every SQLite and MariaDB table; PostgreSQL tables made before the one-row layout, or with `layout=two-rows` (no flag) |
//! | [`Layout::OneRow`] | the `fence` and `fence_stamp` columns of the row `(name, 'lock')` | PostgreSQL tables made by this version (flag `fence`) |
//!
//! A new table is made in [`Layout::for_new_table`] unless its store asks for another.
//!
//! A host reads the table's columns and its flag once, at its first use, after the table check
//! ([`SchemaCheck`](super::SchemaCheck)), and runs every command with the statements of that
//! layout. The flag is written in the same statement that makes the table (a PostgreSQL `DO`
//! block, one transaction), so no client ever sees a new table without it, and nothing in
//! baton changes it afterwards: a table keeps its layout for life (an upgrade of existing
//! tables is planned in `docs/one-row-claim.md`, phase 2).

use alloc::format;
use alloc::string::String;

use super::Dialect;

/// The layout flag's row name: empty, which no lock name can be.
pub const FLAG_ROW: &str = "";
/// The layout flag's cell.
pub const FLAG_CELL: &str = "layout";
/// The flag's value in a one-row table.
pub const ONE_ROW_FLAG: &str = "fence";
/// The columns a one-row table has besides [`COLUMNS`](super::COLUMNS).
pub const ONE_ROW_COLUMNS: [&str; 2] = ["fence", "fence_stamp"];

/// Where a lock table keeps each name's fencing counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The counter in a row of its own, beside the lock's row (every table without a flag).
    TwoRows,
    /// The counter in the lock's own row, so that a claim and a release each change one row
    /// (PostgreSQL: `docs/one-row-claim.md`).
    OneRow,
}

impl Layout {
    /// The layout of a table a store of `dialect` creates when it is not asked for one: one
    /// row on PostgreSQL (a claim and a release each change one row version, where two rows
    /// change two: docs/performance.md), two rows elsewhere (the only layout there).
    pub fn for_new_table(dialect: Dialect) -> Layout {
        match dialect {
            Dialect::Postgres => Layout::OneRow,
            Dialect::Sqlite | Dialect::MySql => Layout::TwoRows,
        }
    }

    /// The layout of table `table` from its flag (`None`: no flag row) and its columns, or why
    /// this version cannot use it (an unknown flag: a later version's layout; a one-row flag
    /// on a database this version has no one-row statements for; a one-row table missing its
    /// columns).
    pub fn of_table(
        dialect: Dialect,
        table: &str,
        flag: Option<&str>,
        columns: &[String],
    ) -> Result<Layout, String> {
        match flag {
            None => Ok(Layout::TwoRows),
            Some(ONE_ROW_FLAG) if dialect == Dialect::Postgres => {
                let missing: alloc::vec::Vec<&str> = ONE_ROW_COLUMNS
                    .iter()
                    .copied()
                    .filter(|c| !columns.iter().any(|p| p.eq_ignore_ascii_case(c)))
                    .collect();
                if missing.is_empty() {
                    Ok(Layout::OneRow)
                } else {
                    Err(format!(
                        "the lock table {table:?} is flagged as one-row (row '', cell 'layout' = 'fence') but has no column {}; it was changed by hand: restore the columns or the table",
                        missing.join(", ")
                    ))
                }
            }
            Some(other) => Err(format!(
                "the lock table {table:?} uses a layout this version of baton does not know ({other:?} in row '', cell 'layout', on {}): upgrade baton, or use another table",
                dialect.name()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn the_flag_decides_and_unknown_layouts_are_refused() {
        let all = vec!["fence".to_string(), "FENCE_STAMP".to_string()];
        let pg = Dialect::Postgres;
        assert_eq!(Layout::of_table(pg, "t", None, &[]), Ok(Layout::TwoRows));
        assert_eq!(
            Layout::of_table(pg, "t", Some("fence"), &all),
            Ok(Layout::OneRow)
        );
        let missing = Layout::of_table(pg, "t", Some("fence"), &all[..1]).expect_err("refused");
        assert!(missing.contains("no column fence_stamp"), "{missing}");
        let later = Layout::of_table(pg, "t", Some("v3"), &all).expect_err("refused");
        assert!(later.contains("does not know (\"v3\""), "{later}");
        for d in [Dialect::Sqlite, Dialect::MySql] {
            assert!(Layout::of_table(d, "t", Some("fence"), &all).is_err());
        }
    }
}
