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
//! | claim | a conditional batch: the insert-if-absent of the lock cell, the counter's insert-if-absent or compare-and-set, and with a turn `DELETE probe FROM t WHERE lock_name = ? AND cell = '_NEXT_' IF value = null` (nobody's) or the compare-and-delete of `_NEXT_` (ours) | no |
//! | set-object | a conditional batch: the object's cell (`… IF value = null`, or `IF value >= ? AND value < ?`), and `DELETE probe FROM t WHERE lock_name = ? AND cell = ? IF value = ?` (or `= null`) for each guard cell | no |
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

use baton_kernel::Failure;
use baton_statements::cql::Statement;
use scylla::client::session::Session;
use scylla::errors::PrepareError;
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::prepared::PreparedStatement;
use tokio::sync::OnceCell;

use super::errors::prepare_failure;

/// The prepared statements of one lock table, in the order of [`Statement::ALL`].
///
/// Those that name the `probe` column ([`Statement::needs_probe`]) are prepared at their first
/// use, by the first object write: on a table whose column another client has just added, the
/// catalog read of the set-up can show it a moment before the node's schema has it, and
/// Cassandra then refuses to prepare them (`Undefined column name probe`). Prepared later, a
/// failure fails that object write only (and the next one prepares again), never the set-up
/// that locks depend on.
#[derive(Debug)]
pub(crate) struct Statements {
    /// The statements prepared with the set-up (`None` for those that name `probe`).
    prepared: Vec<Option<PreparedStatement>>,
    /// Those that name `probe`, once prepared.
    probes: Vec<OnceCell<PreparedStatement>>,
    /// Every statement's text.
    texts: Vec<String>,
    /// Each statement's client-side timeout.
    timeout: Duration,
    /// Why object writes cannot run on the table (it has no `probe` column), if they cannot.
    probe_refusal: Option<String>,
}

/// `text` prepared on `session` for `statement`, with `timeout`; conditional statements are
/// not idempotent and never retried by the driver.
async fn prepare_one(
    session: &Session,
    statement: Statement,
    text: &str,
    timeout: Duration,
) -> Result<PreparedStatement, PrepareError> {
    let mut p = session.prepare(text).await?;
    p.set_request_timeout(Some(timeout));
    let conditional = statement.is_conditional();
    p.set_is_idempotent(!conditional);
    if conditional {
        p.set_retry_policy(Some(Arc::new(FallthroughRetryPolicy::new())));
    }
    Ok(p)
}

impl Statements {
    /// Prepares every statement on `session` but those that name the `probe` column (at their
    /// first use), with `timeout` as each one's client-side timeout; `probe_refusal` says why
    /// object writes cannot run on the table, if it has no `probe` column.
    pub async fn prepare(
        session: &Session,
        table: &str,
        timeout: Duration,
        probe_refusal: Option<String>,
    ) -> Result<Statements, PrepareError> {
        let texts: Vec<String> = baton_statements::cql::statements(table)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        let mut prepared = Vec::with_capacity(texts.len());
        for (statement, text) in Statement::ALL.iter().zip(&texts) {
            prepared.push(match statement.needs_probe() {
                true => None,
                false => Some(prepare_one(session, *statement, text, timeout).await?),
            });
        }
        Ok(Statements {
            prepared,
            probes: texts.iter().map(|_| OnceCell::new()).collect(),
            texts,
            timeout,
            probe_refusal,
        })
    }

    /// Why object writes cannot run on the table, if they cannot.
    pub fn probe_refusal(&self) -> Option<&str> {
        self.probe_refusal.as_deref()
    }

    /// The prepared `statement`, preparing it on `session` at its first use if it names the
    /// `probe` column (a failure is not kept: the next use prepares again).
    pub async fn get(
        &self,
        session: &Session,
        statement: Statement,
    ) -> Result<&PreparedStatement, Failure> {
        let i = statement.index();
        if let Some(Some(p)) = self.prepared.get(i) {
            return Ok(p);
        }
        let (Some(cell), Some(text)) = (self.probes.get(i), self.texts.get(i)) else {
            return Err(Failure::Rejected(format!(
                "internal error: no statement {}",
                statement.name()
            )));
        };
        cell.get_or_try_init(|| async {
            prepare_one(session, statement, text, self.timeout)
                .await
                .map_err(|e| prepare_failure(&e, format!("preparing {}: {e}", statement.name())))
        })
        .await
    }
}
