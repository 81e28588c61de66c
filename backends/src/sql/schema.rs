//! The lock table: created on first use when allowed, otherwise checked, with errors that name
//! what is missing and print the DDL. A table made before the `stamp` column existed is
//! brought up to date when allowed (`ALTER TABLE … ADD COLUMN`), otherwise refused with that
//! statement.

use baton_kernel::Failure;
use baton_statements::sql::{
    add_stamp_failed, missing_columns, Kind, Layout, Param, SchemaCheck, Val,
};

use super::conn::Sealed;
use super::dialect::Statements;
use super::errors::{failure, Phase};

/// Makes sure the lock table exists with every column, as [`SchemaCheck`] decides: creates it
/// when missing and `create` is on (race-safe: concurrent creators across processes all
/// succeed), adds the `stamp` column when it is the only one missing and `create` is on
/// (race-safe too), and fails with [`Failure::Rejected`] naming the table, the missing column
/// and the DDL otherwise. Then reads the table's layout ([`Layout::of_table`]). Runs once per
/// store (the caller caches success and the layout).
pub(crate) async fn ensure<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    create: bool,
    table: &str,
) -> Result<Layout, Failure> {
    let present = columns(conn, st).await?;
    match SchemaCheck::of(&present, create, table, &st.ddl, &st.add_stamp_ddl) {
        SchemaCheck::Ready => {
            routines(conn, st, create).await?;
            return layout(conn, st, table, &present).await;
        }
        SchemaCheck::Refuse(message) => return Err(Failure::Rejected(message)),
        SchemaCheck::Create => {
            for statement in &st.create {
                if let Err(e) = conn.run(statement, &[]).await {
                    // Another process may have created it at the same moment (PostgreSQL
                    // reports that race as a duplicate): fine if the table is there now.
                    if !missing_columns(&columns(conn, st).await?).is_empty() {
                        return Err(failure(&e, st.dialect, Phase::Connect));
                    }
                }
            }
            tracing::info!(
                table,
                database = st.dialect.name(),
                "created the lock table"
            );
        }
        SchemaCheck::AddStamp => {
            if let Err(e) = conn.run(&st.add_stamp, &[]).await {
                // Another process may have added it at the same moment (SQLite has no
                // `ADD COLUMN IF NOT EXISTS`): fine if the column is there now.
                if !missing_columns(&columns(conn, st).await?).is_empty() {
                    return Err(match failure(&e, st.dialect, Phase::Connect) {
                        Failure::Rejected(m) => {
                            Failure::Rejected(add_stamp_failed(table, &m, &st.add_stamp_ddl))
                        }
                        other => other,
                    });
                }
            }
            tracing::info!(
                table,
                database = st.dialect.name(),
                "added the stamp column to the lock table"
            );
        }
    }
    let present = columns(conn, st).await?;
    match SchemaCheck::verify(&present, table, &st.ddl) {
        SchemaCheck::Ready => {
            routines(conn, st, create).await?;
            layout(conn, st, table, &present).await
        }
        SchemaCheck::Refuse(message) => Err(Failure::Rejected(message)),
        other => Err(Failure::Rejected(format!(
            "internal error: the lock table {table:?} still needs {other:?} after it was changed"
        ))),
    }
}

/// Makes the routines the statements use (MariaDB's claim procedure, PostgreSQL's release
/// notification trigger), when `create` is on, whether or not the table was made now: a table
/// made by an earlier version has none. Each is idempotent and safe to run concurrently.
async fn routines<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    create: bool,
) -> Result<(), Failure> {
    if !create {
        return Ok(());
    }
    for routine in &st.routines {
        conn.script(routine)
            .await
            .map_err(|e| failure(&e, st.dialect, Phase::Connect))?;
    }
    Ok(())
}

/// The layout of the table with columns `present`, from its flag.
async fn layout<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    table: &str,
    present: &[String],
) -> Result<Layout, Failure> {
    let flag = conn
        .fetch(&st.layout_flag, &[], &[Kind::Text])
        .await
        .map_err(|e| failure(&e, st.dialect, Phase::Connect))?
        .into_iter()
        .find_map(|r| r.into_iter().next().map(Val::into_text));
    Layout::of_table(st.dialect, table, flag.as_deref(), present).map_err(Failure::Rejected)
}

/// The table's column names (empty when the table does not exist).
async fn columns<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
) -> Result<Vec<String>, Failure> {
    let rows = conn
        .fetch(
            &st.columns,
            &[Param::Text(st.catalog_name.as_str().into())],
            &[Kind::Text],
        )
        .await
        .map_err(|e| failure(&e, st.dialect, Phase::Connect))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.into_iter().next().map(Val::into_text))
        .collect())
}
