//! The keyspace and lock table, created or checked on first use. Their definition (names, the
//! DDL, the catalog queries and the check of an existing table) is
//! [`baton_statements::cql`]'s, shared by every host; see there for each choice of the table:
//!
//! ```text
//! CREATE TABLE "<keyspace>"."<table>" (
//!     lock_name text,      -- the kernel's row: one partition per lock name
//!     cell text,           -- the kernel's column: a clustering key, so prefix reads are ranges
//!     value text,          -- the cell's value; its TTL is the cell's TTL
//!     PRIMARY KEY ((lock_name), cell)
//! ) WITH gc_grace_seconds = 3600 AND compaction = {…tombstone compaction…} AND ID = <uuid>
//! ```
//!
//! - **One partition per lock**, the cells of a lock as clustering rows: a row read is one
//!   partition read; a prefix read is the clustering range `cell >= p AND cell < succ(p)`.
//! - **No row markers.** Cells are written with `UPDATE` (never `INSERT`), so a clustering row
//!   exists exactly while its `value` is live, and its TTL is `TTL(value)`. An `INSERT` would
//!   add a primary-key liveness marker with its own TTL, which a later conditional update with a
//!   different TTL would not move: the row would outlive its value.
//! - **`gc_grace_seconds = 3600`** instead of 10 days, so a deleted cell's tombstone stops being
//!   read an hour after the delete (reads skip purgeable tombstones even before compaction). It is
//!   safe because every lock cell the kernel writes carries a TTL, and fencing counters are never
//!   deleted: a tombstone forgotten too early can only let a replica that missed the delete
//!   resurrect a lock cell until that cell's own TTL ends, which delays contenders and never grants
//!   a lock (grants need our own, newer cell). If the table also holds your own data columns
//!   (column prefix's read-modify-write), run repairs within an hour or raise it with
//!   `ALTER TABLE … WITH gc_grace_seconds = …`.
//! - **Tombstone compaction** (`unchecked_tombstone_compaction`, `tombstone_threshold 0.1`):
//!   single-SSTable compactions drop purgeable tombstones without waiting for size tiers.
//! - **A table id derived from the names** (`WITH ID`), so clients that create the table
//!   concurrently through different coordinators create the same table instead of conflicting
//!   schema versions.
//!
//! Names are validated identifiers (`[A-Za-z][A-Za-z0-9_]{0,47}`) and always double-quoted, so
//! they are case-sensitive and never interpolated unchecked.

use baton_kernel::Failure;
use baton_statements::cql::{ddl_failure, SchemaSetup, SchemaStep, COLUMNS_QUERY, KEYSPACE_QUERY};
use scylla::client::session::Session;
use scylla::statement::unprepared::Statement;
use scylla::statement::Consistency;

use super::errors::setup_failure;
use super::exec::cl;
use super::options::CassandraOptions;

pub use baton_statements::cql::{
    validate_identifier, DEFAULT_KEYSPACE, DEFAULT_TABLE, GC_GRACE_SECONDS,
};

/// `"keyspace"."table"`, for statements.
pub(crate) fn qualified(options: &CassandraOptions) -> String {
    baton_statements::cql::qualified(&options.keyspace, &options.table)
}

/// The `CREATE KEYSPACE` statement for the options.
pub fn create_keyspace_cql(options: &CassandraOptions) -> String {
    baton_statements::cql::create_keyspace(&options.keyspace, &options.replication.cql())
}

/// The `CREATE TABLE` statement for the options.
pub fn create_table_cql(options: &CassandraOptions) -> String {
    baton_statements::cql::create_table(&options.keyspace, &options.table)
}

/// Creates (when allowed and missing) or checks the keyspace and table, by the steps of
/// [`SchemaSetup`], which every host runs, adding the `probe` column to a table made before it
/// existed when allowed. `Rejected` failures name what is missing or wrong and show the CQL
/// that fixes it. Answers why object writes cannot run on the table, if they cannot (it has no
/// `probe` column: [`SchemaSetup::probe_refusal`]).
pub(crate) async fn ensure(
    session: &Session,
    options: &CassandraOptions,
) -> std::result::Result<Option<String>, Failure> {
    let mut setup = SchemaSetup::new(
        &options.keyspace,
        &options.table,
        &options.replication.cql(),
        options.create,
    );
    loop {
        let step = setup.step();
        let level = step.level().map(cl);
        match step {
            SchemaStep::ReadKeyspace => {
                let rows: Vec<(String,)> =
                    system_query(session, KEYSPACE_QUERY, (options.keyspace.as_str(),), level)
                        .await?;
                setup.keyspace(!rows.is_empty());
            }
            SchemaStep::ReadColumns => {
                let columns = system_query(
                    session,
                    COLUMNS_QUERY,
                    (options.keyspace.as_str(), options.table.as_str()),
                    level,
                )
                .await?;
                setup.columns(&columns);
            }
            SchemaStep::CreateKeyspace(cql) | SchemaStep::CreateTable(cql) => {
                ddl(session, &cql, level)
                    .await
                    .map_err(|f| ddl_failure(f, &cql))?;
                setup.created();
            }
            // Another client may add the column in the same instant: the set-up reads the
            // columns again after a failure.
            SchemaStep::AddProbe(cql) => match ddl(session, &cql, level).await {
                Ok(()) => setup.created(),
                Err(f) => setup.add_probe_failed(f),
            },
            SchemaStep::Ready => return Ok(setup.probe_refusal().map(str::to_owned)),
            SchemaStep::Refused(message) => return Err(Failure::Rejected(message)),
            SchemaStep::Failed(failure) => return Err(failure),
        }
    }
}

/// Runs a DDL statement at `level` (`ALL` by default).
async fn ddl(
    session: &Session,
    cql: &str,
    level: Option<Consistency>,
) -> std::result::Result<(), Failure> {
    let mut statement = Statement::new(cql);
    statement.set_consistency(level.unwrap_or(Consistency::All));
    session
        .query_unpaged(statement, ())
        .await
        .map(drop)
        .map_err(|e| setup_failure(&e))
}

/// The rows of a catalog read at `level`.
async fn system_query<V, R>(
    session: &Session,
    cql: &str,
    values: V,
    level: Option<Consistency>,
) -> std::result::Result<Vec<R>, Failure>
where
    V: scylla::serialize::row::SerializeRow,
    R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    let mut statement = Statement::new(cql);
    statement.set_consistency(level.unwrap_or(Consistency::One));
    let result = session
        .query_unpaged(statement, values)
        .await
        .map_err(|e| setup_failure(&e))?;
    let rows = result
        .into_rows_result()
        .map_err(|e| Failure::Rejected(format!("reading the schema: {e}")))?;
    let rows = rows
        .rows::<R>()
        .map_err(|e| Failure::Rejected(format!("reading the schema: {e}")))?
        .collect::<std::result::Result<Vec<R>, _>>()
        .map_err(|e| Failure::Rejected(format!("reading the schema: {e}")))?;
    Ok(rows)
}
