//! Which layout a lock table uses, and how a host learns it: the table's layout flag, a row
//! `('', 'layout')` that no lock name can be (names are never empty).
//!
//! | layout | where the fencing counter `_LOCK_` of a name lives | tables |
//! | --- | --- | --- |
//! | [`Layout::TwoRows`] | a row of its own, `(name, '_LOCK_')` | tables made before their database's one-row layout, or with `layout=two-rows` (no flag) |
//! | [`Layout::OneRow`] | the `fence` and `fence_stamp` columns of the row `(name, 'lock')` | tables made by this version (flag `fence`) |
//!
//! A new table is made in [`Layout::for_new_table`] unless its store asks for another.
//!
//! A host reads the table's columns and its flag once, at its first use, after the table check
//! ([`SchemaCheck`](super::SchemaCheck)), and runs every command with the statements of that
//! layout. The flag is written with the table (a PostgreSQL `DO` block, one transaction;
//! MariaDB's `CREATE TABLE … SELECT`; on SQLite, in a table renamed into place once it has its
//! flag), so no client ever sees a new table without it, and nothing in
//! baton changes it afterwards: a table keeps its layout for life (an upgrade of existing
//! tables is planned in `docs/one-row-claim.md`, phase 2).

use alloc::format;
use alloc::string::String;

use baton_kernel::Result;

use super::{Dialect, Statements};

/// The layout flag's row name: empty, which no lock name can be.
pub const FLAG_ROW: &str = "";
/// The layout flag's cell.
pub const FLAG_CELL: &str = "layout";
/// The flag's value in a one-row table.
pub const ONE_ROW_FLAG: &str = "fence";
/// The value `baton migrate` leaves in a moved name's counter row `(name, '_LOCK_')`, whose
/// counter is then the `lock` row's `fence` (`docs/one-row-claim.md`, phase 2): not a number,
/// so an earlier client's claim never applies against it, and no one-row statement shows the
/// row as a cell.
pub const MARKER: &str = "moved=fence";
/// The columns a one-row table has besides [`COLUMNS`](super::COLUMNS).
pub const ONE_ROW_COLUMNS: [&str; 2] = ["fence", "fence_stamp"];

/// Where a lock table keeps each name's fencing counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The counter in a row of its own, beside the lock's row (every table without a flag).
    TwoRows,
    /// The counter in the lock's own row, so that a claim and a release each change one row
    /// (`docs/one-row-claim.md`).
    OneRow,
}

impl Layout {
    /// The layout named `name` as users write it (`"one-row"`, `"two-rows"`).
    pub fn parse(name: &str) -> Option<Layout> {
        match name {
            "one-row" => Some(Layout::OneRow),
            "two-rows" => Some(Layout::TwoRows),
            _ => None,
        }
    }

    /// The layout's name as users write it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::OneRow => "one-row",
            Layout::TwoRows => "two-rows",
        }
    }

    /// The layout of a table a store of `dialect` creates when it is not asked for one: one
    /// row on every database (a claim and a release each change one row, where two rows
    /// change two: docs/performance.md).
    pub fn for_new_table(dialect: Dialect) -> Layout {
        match dialect {
            Dialect::Postgres | Dialect::MySql | Dialect::Sqlite => Layout::OneRow,
        }
    }

    /// The layout of table `table` from its flag (`None`: no flag row) and its columns, or why
    /// this version cannot use it (an unknown flag: a later version's layout; a one-row table
    /// missing its columns).
    pub fn of_table(
        dialect: Dialect,
        table: &str,
        flag: Option<&str>,
        columns: &[String],
    ) -> Result<Layout, String> {
        match flag {
            None => Ok(Layout::TwoRows),
            Some(ONE_ROW_FLAG) => {
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
    use baton_kernel::ErrorKind;

    #[test]
    fn statement_sets_hold_each_layout_a_database_has() {
        for layout in [Layout::OneRow, Layout::TwoRows] {
            assert_eq!(Layout::parse(layout.name()), Some(layout));
        }
        assert_eq!(Layout::parse("one_row"), None);
        let pg = StatementSets::new(Dialect::Postgres, "t", None).expect("valid");
        assert_eq!(pg.new_table(), Layout::OneRow);
        assert_eq!(pg.for_new_table().layout, Layout::OneRow);
        assert_eq!(pg.of(Layout::TwoRows).layout, Layout::TwoRows);
        let asked = StatementSets::new(Dialect::Postgres, "t", Some(Layout::TwoRows));
        assert_eq!(
            asked.expect("valid").for_new_table().layout,
            Layout::TwoRows
        );
        let mariadb = StatementSets::new(Dialect::MySql, "t", None).expect("valid");
        assert_eq!(mariadb.new_table(), Layout::OneRow);
        assert_eq!(mariadb.of(Layout::TwoRows).layout, Layout::TwoRows);
        let sqlite = StatementSets::new(Dialect::Sqlite, "t", None).expect("valid");
        assert_eq!(sqlite.new_table(), Layout::OneRow);
        assert_eq!(sqlite.of(Layout::OneRow).layout, Layout::OneRow);
        assert_eq!(sqlite.of(Layout::TwoRows).layout, Layout::TwoRows);
        let asked = StatementSets::new(Dialect::Sqlite, "t", Some(Layout::TwoRows));
        assert_eq!(
            asked.expect("valid").for_new_table().layout,
            Layout::TwoRows
        );
        assert!(StatementSets::new(Dialect::Sqlite, "bad name", None).is_err());
        for (name, dialect) in [
            ("postgresql", Dialect::Postgres),
            ("mariadb", Dialect::MySql),
            ("sqlite", Dialect::Sqlite),
        ] {
            assert_eq!(Dialect::parse(name), Some(dialect));
            assert_eq!(Dialect::parse(dialect.name()), Some(dialect));
        }
        assert_eq!(Dialect::parse("Postgres"), None);
    }

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
        assert_eq!(
            Layout::of_table(Dialect::MySql, "t", Some("fence"), &all),
            Ok(Layout::OneRow)
        );
        assert_eq!(
            Layout::of_table(Dialect::Sqlite, "t", Some("fence"), &all),
            Ok(Layout::OneRow)
        );
        let e = StatementSets::new(Dialect::Sqlite, "bad name", None).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidOption);
    }
}

/// A store's statements in each layout (two rows, one row), and the layout of a table the
/// store creates. A host builds it once, runs the
/// schema set-up with [`StatementSets::for_new_table`], then every command with the statements
/// of the layout the table turned out to have ([`StatementSets::of`]).
#[derive(Clone, Debug)]
pub struct StatementSets<S = String> {
    two_rows: Statements<S>,
    one_row: Statements<S>,
    moving: Statements<S>,
    new_table: Layout,
}

/// Which of a store's statement sets a step's statement comes from
/// ([`Operation::statement_set`](super::Operation::statement_set)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatementSet {
    /// The two-row layout's.
    TwoRows,
    /// The one-row layout's.
    OneRow,
    /// A table being moved ([`Statements::moving`]).
    Moving,
}

impl StatementSets {
    /// The statements of `dialect` on `table` (validated:
    /// [`ErrorKind::InvalidOption`](baton_kernel::ErrorKind::InvalidOption)), a new
    /// table getting `layout`, or by default [`Layout::for_new_table`].
    pub fn new(dialect: Dialect, table: &str, layout: Option<Layout>) -> Result<StatementSets> {
        let two_rows = Statements::new(dialect, table)?;
        let one_row = Statements::in_layout(dialect, table, Layout::OneRow)?;
        let moving = Statements::moving(dialect, table)?;
        let new_table = layout.unwrap_or_else(|| Layout::for_new_table(dialect));
        Ok(StatementSets {
            two_rows,
            one_row,
            moving,
            new_table,
        })
    }
}

impl<S> StatementSets<S> {
    /// The same sets with each statement turned into `T` by `f` (a driver's statement type).
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> StatementSets<T> {
        StatementSets {
            two_rows: self.two_rows.map(&mut f),
            one_row: self.one_row.map(&mut f),
            moving: self.moving.map(&mut f),
            new_table: self.new_table,
        }
    }

    /// The database they are written for.
    pub fn dialect(&self) -> Dialect {
        self.two_rows.dialect
    }

    /// The layout of a table the store creates.
    pub fn new_table(&self) -> Layout {
        self.new_table
    }

    /// The statements of a table in `layout` (every set has the same table-level statements).
    pub fn of(&self, layout: Layout) -> &Statements<S> {
        match layout {
            Layout::OneRow => &self.one_row,
            Layout::TwoRows => &self.two_rows,
        }
    }

    /// The statements of `set`.
    pub fn get(&self, set: StatementSet) -> &Statements<S> {
        match set {
            StatementSet::TwoRows => &self.two_rows,
            StatementSet::OneRow => &self.one_row,
            StatementSet::Moving => &self.moving,
        }
    }

    /// The statements the schema set-up runs: those of the layout a new table gets, whose
    /// `create` makes a table of that layout.
    pub fn for_new_table(&self) -> &Statements<S> {
        self.of(self.new_table)
    }
}
