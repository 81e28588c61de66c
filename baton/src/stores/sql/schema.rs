//! The lock table: created on first use when allowed, otherwise checked, with errors that name
//! what is missing and print the DDL. A table made before the `stamp` column existed is
//! brought up to date when allowed (`ALTER TABLE … ADD COLUMN`), otherwise refused with that
//! statement.

use baton_kernel::Failure;
use baton_statements::sql::{Kind, Layout, Param, SchemaSetup, SchemaStep, Val};

use super::conn::Sealed;
use super::dialect::Statements;
use super::errors::{failure, Phase};

/// Makes sure the lock table exists with every column, and reads its layout: the kernel-side
/// sequence every host runs ([`SchemaSetup`]: creates the table when missing and `create` is
/// on, race-safe; adds the `stamp` column to an older table; makes the routines; refuses a
/// table that is not baton's with the DDL), executed here on `conn`. Runs once per store (the
/// caller caches success and the layout). Also says whether `baton migrate` is moving the
/// table ([`SchemaSetup::moving`]).
pub(crate) async fn ensure<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    create: bool,
    table: &str,
) -> Result<(Layout, bool), Failure> {
    let mut setup = SchemaSetup::new(st, table, create);
    loop {
        let run = match setup.step() {
            SchemaStep::ReadColumns => {
                let present = columns(conn, st).await?;
                setup.columns(present);
                continue;
            }
            SchemaStep::ReadLayoutFlag => {
                let flag = layout_flag(conn, st).await?;
                setup.layout_flag(flag.as_deref());
                continue;
            }
            SchemaStep::Ready(layout) => {
                if let Some(what) = setup.changed() {
                    tracing::info!(table, database = st.dialect.name(), "{what}");
                }
                return Ok((layout, setup.moving()));
            }
            SchemaStep::Refused(message) => return Err(Failure::Rejected(message)),
            SchemaStep::Failed(failure) => return Err(failure),
            SchemaStep::CreateTable(i) => conn.run(&st.create[i], &[]).await.map(drop),
            SchemaStep::AddStamp => conn.run(&st.add_stamp, &[]).await.map(drop),
            SchemaStep::CreateRoutine(i) => conn.script(&st.routines[i]).await,
        };
        setup.ran(run.map_err(|e| failure(&e, st.dialect, Phase::Connect)));
    }
}

/// The table's layout flag, if it has one.
async fn layout_flag<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
) -> Result<Option<String>, Failure> {
    Ok(conn
        .fetch(&st.layout_flag, &[], &[Kind::Text])
        .await
        .map_err(|e| failure(&e, st.dialect, Phase::Connect))?
        .into_iter()
        .find_map(|r| r.into_iter().next().map(Val::into_text)))
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

/// The table's layout and whether it is being moved, read again (its columns and its flag): after
/// a command met a moved name's marker.
pub(crate) async fn read_layout<C: Sealed + ?Sized>(
    conn: &mut C,
    st: &Statements,
    table: &str,
) -> Result<(Layout, bool), Failure> {
    let present = columns(conn, st).await?;
    let flag = layout_flag(conn, st).await?;
    baton_statements::sql::read_layout(st.dialect, table, flag.as_deref(), &present)
}
