//! The SQL of every statement comes from [`baton_statements::sql`]: written once, driver-free,
//! shared by every host, so a table written by one is read correctly by every other. This
//! module only turns that text into sqlx's statement type (see that module for the statements,
//! the server clocks they use and the stamps they compare).

use baton_kernel::Result;
pub use baton_statements::sql::{validate_table, Dialect, Layout, DEFAULT_TABLE, MARKER};
use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

/// Every statement a store runs, as sqlx statements, built once per store.
pub(crate) type Statements = baton_statements::sql::Statements<SqlStr>;

/// A store's statements in every layout its database has, as sqlx statements.
pub(crate) type StatementSets = baton_statements::sql::StatementSets<SqlStr>;

/// The statements of `dialect` on `table`, a new table getting `layout` (or the database's
/// default): validated ([`ErrorKind::InvalidOption`] otherwise, see
/// [`baton_statements::sql::StatementSets::new`]).
///
/// [`ErrorKind::InvalidOption`]: crate::ErrorKind::InvalidOption
pub(crate) fn statement_sets(
    dialect: Dialect,
    table: &str,
    layout: Option<Layout>,
) -> Result<StatementSets> {
    let text = baton_statements::sql::StatementSets::new(dialect, table, layout)?;
    // Safe: built from constant text and the validated, quoted table name only; every value
    // travels as a bound parameter.
    Ok(text.map(|sql| AssertSqlSafe(sql).into_sql_str()))
}
