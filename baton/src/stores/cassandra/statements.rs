//! The CQL of every kernel command, from [`baton_statements::cql`], prepared once per store.
//! (The table below is that module's, repeated for readers of this store.)
//!
//! | command | CQL | idempotent |
//! | --- | --- | --- |
//! | read, every cell | `SELECT cell, value, TTL(value), WRITETIME(value) FROM t WHERE lock_name = ?` | yes |
//! | read, prefix `p` | `… AND cell >= ? AND cell < ?` (bound to `p` and `prefix_end(p)` from the kernel's model; `cell >= ?` alone if `p` has no successor) | yes |
//! | read, exact | `… AND cell = ?` | yes |
//! | put | `UPDATE t USING TIMESTAMP ? AND TTL ? SET value = ? WHERE lock_name = ? AND cell = ?` (TTL 0: none) | yes |
//! | delete | `DELETE FROM t USING TIMESTAMP ? WHERE lock_name = ? AND cell = ?` | yes |
//! | delete-version | the same, with the command's stamp as the timestamp | yes |
//! | batch | a logged batch of the put and delete statements, on one partition, all with one timestamp | yes |
//! | insert-if-absent | `UPDATE t USING TTL ? SET value = ? WHERE lock_name = ? AND cell = ? IF value = null` | no |
//! | compare-and-set | `UPDATE t USING TTL ? SET value = ? WHERE … IF value = ?` | no |
//! | compare-and-delete | `DELETE FROM t WHERE lock_name = ? AND cell = ? IF value = ?` | no |
//! | scan | `SELECT lock_name, cell, value, TTL(value), WRITETIME(value) FROM t [WHERE token(lock_name) > token(?)]`, paged | yes |
//! | purge | none: Cassandra drops expired cells by itself | — |
//!
//! Consistency, serial consistency and tracing are set on each bound statement, from the
//! command. Conditional statements are not idempotent and use no driver retry policy: the
//! kernel decides what a failed conditional command means. They carry no timestamp (Cassandra
//! refuses `USING TIMESTAMP` on them: their writes take the Paxos ballot's). Plain statements
//! carry the stamp the store took for the command (`USING TIMESTAMP ?`, see the [module
//! docs](super)), so they are idempotent: a resent write lands at its original place in the
//! owner's sequence of writes, and the driver may retry them on another node.

use std::sync::Arc;
use std::time::Duration;

use baton_statements::cql::Statement;
use scylla::client::session::Session;
use scylla::errors::PrepareError;
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::prepared::PreparedStatement;

/// The prepared statements of one lock table, in the order of [`Statement::ALL`].
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    prepared: [PreparedStatement; Statement::ALL.len()],
}

impl Statements {
    /// Prepares every statement on `session`, with `timeout` as each one's client-side timeout.
    pub async fn prepare(
        session: &Session,
        table: &str,
        timeout: Duration,
    ) -> Result<Statements, PrepareError> {
        let texts = baton_statements::cql::statements(table);
        let mut prepared = Vec::with_capacity(texts.len());
        for (statement, text) in texts {
            let mut p = session.prepare(text).await?;
            p.set_request_timeout(Some(timeout));
            let conditional = statement.is_conditional();
            p.set_is_idempotent(!conditional);
            if conditional {
                p.set_retry_policy(Some(Arc::new(FallthroughRetryPolicy::new())));
            }
            prepared.push(p);
        }
        let prepared = prepared
            .try_into()
            .map_err(|_| PrepareError::PreparedStatementIdsMismatch)?;
        Ok(Statements { prepared })
    }

    /// The prepared `statement`.
    pub fn get(&self, statement: Statement) -> &PreparedStatement {
        &self.prepared[statement.index()]
    }
}
