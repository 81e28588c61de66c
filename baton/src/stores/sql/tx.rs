//! A store that runs every command on one borrowed connection: the caller's transaction, for
//! [`Locker::lock_in`](crate::Locker::lock_in) and [`Guard::release_in`](crate::Guard::release_in)
//! (the `transaction` module).

use baton_kernel::{Command, Error, ErrorKind, Reply, Result};
use tokio::sync::Mutex;

use super::{exec, SqlConn, SqlStore};
use crate::stores::store::{Store, StoreFuture};

/// A store that runs every command on one borrowed connection (the caller's transaction).
pub(crate) struct ConnStore<'c, C: ?Sized> {
    conn: Mutex<&'c mut C>,
    sql: SqlStore,
}

impl<'c, C: SqlConn + ?Sized> ConnStore<'c, C> {
    /// Checks that `conn` is a connection to the database of `sql` (the same kind, at least:
    /// the same database it cannot tell) and makes sure the table exists, through the pool.
    pub(crate) async fn new(conn: &'c mut C, sql: SqlStore) -> Result<Self> {
        if C::DIALECT != sql.dialect() {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!(
                    "a {} connection was given for a lock table in {}",
                    C::DIALECT.name(),
                    Store::describe(&sql)
                ),
            ));
        }
        sql.ensure_schema().await?;
        Ok(ConnStore {
            conn: Mutex::new(conn),
            sql,
        })
    }
}

impl<C: SqlConn + ?Sized> Store for ConnStore<'_, C> {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            let mut conn = self.conn.lock().await;
            // Stamped like the pool's commands, from the same generator: a release in the
            // caller's transaction follows the same rules as any other write.
            let plan = self.sql.plan();
            let run = exec::execute(&mut **conn, &plan, &command, None, false);
            let reply: Reply = match tokio::time::timeout(self.sql.client_timeout(), run).await {
                Ok(outcome) => self.sql.reply(outcome),
                Err(_) => Reply::Failed(self.sql.client_timed_out()),
            };
            self.sql.notify(&command, &reply);
            drop(conn);
            if self.sql.layout_refresh_due() {
                Box::pin(self.sql.refresh_layout_if_due()).await;
            }
            reply
        })
    }

    fn describe(&self) -> String {
        format!(
            "{}, in the caller's transaction",
            Store::describe(&self.sql)
        )
    }
}
