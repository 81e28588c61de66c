//! The lock table: created on first use when allowed, otherwise checked, with errors that name
//! what is missing and print the DDL. A table made before the `stamp` column existed is
//! brought up to date when allowed (`ALTER TABLE … ADD COLUMN`), otherwise refused with that
//! statement.

use baton_kernel::Failure;

use super::conn::{Arg, Kind, Sealed, Val};
use super::dialect::{Statements, COLUMNS, STAMP_COLUMN};
use super::errors::{failure, Phase};

/// Makes sure the lock table exists with every column: creates it when missing and `create`
/// is on (race-safe: concurrent creators across processes all succeed), adds the `stamp`
/// column when it is the only one missing and `create` is on (race-safe too), and fails with
/// [`Failure::Rejected`] naming the table, the missing column and the DDL otherwise. Runs
/// once per store (the caller caches success).
pub(crate) async fn ensure<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    create: bool,
    table: &str,
) -> Result<(), Failure> {
    let mut present = columns(conn, st).await?;
    if present.is_empty() {
        if !create {
            return Err(Failure::Rejected(format!(
                "the lock table {table:?} does not exist and the store may not create it (create=false); create it with:\n{}",
                st.ddl
            )));
        }
        for statement in &st.create {
            if let Err(e) = conn.run(statement, &[]).await {
                // Another process may have created it at the same moment (PostgreSQL reports
                // that race as a duplicate): fine if the table is there now.
                let now_present = columns(conn, st).await?;
                if !has_all(&now_present) {
                    return Err(failure(&e, st.dialect, Phase::Connect));
                }
            }
        }
        tracing::info!(
            table,
            database = st.dialect.name(),
            "created the lock table"
        );
        present = columns(conn, st).await?;
    }
    let mut missing = missing_columns(&present);
    if missing == [STAMP_COLUMN] {
        if !create {
            return Err(Failure::Rejected(format!(
                "the lock table {table:?} has no column {STAMP_COLUMN} (it was made by an older version of baton) and the store may not alter it (create=false); add the column with:\n{}",
                st.add_stamp_ddl
            )));
        }
        if let Err(e) = conn.run(&st.add_stamp, &[]).await {
            // Another process may have added it at the same moment (SQLite has no
            // `ADD COLUMN IF NOT EXISTS`): fine if the column is there now.
            if !missing_columns(&columns(conn, st).await?).is_empty() {
                return Err(match failure(&e, st.dialect, Phase::Connect) {
                    Failure::Rejected(m) => Failure::Rejected(format!(
                        "the lock table {table:?} has no column {STAMP_COLUMN} (it was made by an older version of baton), and adding it failed: {m}; add it with:\n{}",
                        st.add_stamp_ddl
                    )),
                    other => other,
                });
            }
        }
        tracing::info!(
            table,
            database = st.dialect.name(),
            "added the stamp column to the lock table"
        );
        present = columns(conn, st).await?;
        missing = missing_columns(&present);
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(Failure::Rejected(format!(
        "the lock table {table:?} has no column {} (found {}); baton's lock table is:\n{}",
        missing.join(", "),
        if present.is_empty() {
            String::from("no columns")
        } else {
            present.join(", ")
        },
        st.ddl
    )))
}

fn has_all(present: &[String]) -> bool {
    missing_columns(present).is_empty()
}

/// The columns of [`COLUMNS`] that `present` lacks.
fn missing_columns(present: &[String]) -> Vec<&'static str> {
    COLUMNS
        .iter()
        .copied()
        .filter(|c| !present.iter().any(|p| p.eq_ignore_ascii_case(c)))
        .collect()
}

/// The table's column names (empty when the table does not exist).
async fn columns<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
) -> Result<Vec<String>, Failure> {
    let rows = conn
        .fetch(&st.columns, &[Arg::Text(&st.catalog_name)], &[Kind::Text])
        .await
        .map_err(|e| failure(&e, st.dialect, Phase::Connect))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.into_iter().next().map(Val::into_text))
        .collect())
}
