//! [`SqlConn`]: the database connections a store can run its statements on, its own pooled ones
//! or a caller's (inside the caller's transaction).
//!
//! The three sqlx connection types get the same three primitives (run a statement, fetch rows,
//! run statements in one transaction) from one macro, so the command logic above them is written
//! once for every database.

use std::future::Future;

use sqlx::{Row, SqlStr};

use baton_statements::sql::{Done, Kind, Param, Val};

use super::dialect::Dialect;

/// A database connection baton can run lock operations on: [`sqlx::SqliteConnection`],
/// [`sqlx::PgConnection`] or [`sqlx::MySqlConnection`] (each behind its cargo feature).
///
/// A [`sqlx::Transaction`] dereferences to its connection, so `&mut *tx` is a `&mut impl
/// SqlConn`; that is how [`Locker::lock_in`](crate::Locker::lock_in) and
/// [`Guard::release_in`](crate::Guard::release_in) join a caller's transaction. Sealed: baton
/// implements it for those types only.
pub trait SqlConn: Sealed {}

impl<C: Sealed> SqlConn for C {}

/// The primitives, implemented once per connection type. Public in a private module: callers
/// can name [`SqlConn`] but neither implement nor call these.
pub trait Sealed: Send {
    /// The database of this connection type.
    const DIALECT: Dialect;

    /// Runs a statement and reports the affected rows.
    fn run<'a>(
        &'a mut self,
        sql: &'a SqlStr,
        params: &'a [Param<'a>],
    ) -> impl Future<Output = Result<Done, sqlx::Error>> + Send + 'a;

    /// Runs a query and decodes every row by `kinds`.
    fn fetch<'a>(
        &'a mut self,
        sql: &'a SqlStr,
        params: &'a [Param<'a>],
        kinds: &'a [Kind],
    ) -> impl Future<Output = Result<Vec<Vec<Val>>, sqlx::Error>> + Send + 'a;

    /// Runs a statement as text, without preparing it (DDL such as `CREATE PROCEDURE`, which
    /// not every server prepares).
    fn script<'a>(
        &'a mut self,
        sql: &'a SqlStr,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'a;

    /// Runs statements in one transaction (a savepoint when the connection is already in one).
    fn batch<'a>(
        &'a mut self,
        statements: &'a [(&'a SqlStr, Vec<Param<'a>>)],
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'a;
}

/// A prepared query of `$db` with `$params` bound.
macro_rules! bound {
    ($db:ty, $sql:expr, $params:expr) => {{
        let mut query = sqlx::query::<$db>($sql);
        for param in $params {
            query = match param {
                Param::Text(s) => query.bind(s.as_ref()),
                Param::Int(i) => query.bind(*i),
            };
        }
        query
    }};
}

macro_rules! sql_conn {
    ($feature:literal, $conn:ty, $db:ty, $dialect:expr, $insert_id:expr) => {
        #[cfg(feature = $feature)]
        impl Sealed for $conn {
            const DIALECT: Dialect = $dialect;

            fn run<'a>(
                &'a mut self,
                sql: &'a SqlStr,
                params: &'a [Param<'a>],
            ) -> impl Future<Output = Result<Done, sqlx::Error>> + Send + 'a {
                async move {
                    let done = bound!($db, sql.clone(), params).execute(&mut *self).await?;
                    Ok(Done {
                        rows: done.rows_affected(),
                        insert_id: $insert_id(&done),
                    })
                }
            }

            fn fetch<'a>(
                &'a mut self,
                sql: &'a SqlStr,
                params: &'a [Param<'a>],
                kinds: &'a [Kind],
            ) -> impl Future<Output = Result<Vec<Vec<Val>>, sqlx::Error>> + Send + 'a {
                async move {
                    let rows = bound!($db, sql.clone(), params)
                        .fetch_all(&mut *self)
                        .await?;
                    let mut out = Vec::with_capacity(rows.len());
                    for row in rows {
                        let mut vals = Vec::with_capacity(kinds.len());
                        for (i, kind) in kinds.iter().enumerate() {
                            vals.push(match kind {
                                Kind::Text => Val::Text(row.try_get::<String, _>(i)?),
                                Kind::Int => Val::Int(row.try_get::<Option<i64>, _>(i)?),
                            });
                        }
                        out.push(vals);
                    }
                    Ok(out)
                }
            }

            fn script<'a>(
                &'a mut self,
                sql: &'a SqlStr,
            ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'a {
                async move {
                    sqlx::raw_sql(sql.clone()).execute(&mut *self).await?;
                    Ok(())
                }
            }

            fn batch<'a>(
                &'a mut self,
                statements: &'a [(&'a SqlStr, Vec<Param<'a>>)],
            ) -> impl Future<Output = Result<(), sqlx::Error>> + Send + 'a {
                async move {
                    let mut tx = sqlx::Connection::begin(&mut *self).await?;
                    for (sql, params) in statements {
                        bound!($db, (*sql).clone(), params)
                            .execute(&mut *tx)
                            .await?;
                    }
                    tx.commit().await
                }
            }
        }
    };
}

sql_conn!(
    "sqlite",
    sqlx::SqliteConnection,
    sqlx::Sqlite,
    Dialect::Sqlite,
    |_: &sqlx::sqlite::SqliteQueryResult| 0
);
sql_conn!(
    "postgres",
    sqlx::PgConnection,
    sqlx::Postgres,
    Dialect::Postgres,
    |_: &sqlx::postgres::PgQueryResult| 0
);
sql_conn!(
    "mysql",
    sqlx::MySqlConnection,
    sqlx::MySql,
    Dialect::MySql,
    |r: &sqlx::mysql::MySqlQueryResult| r.last_insert_id()
);
