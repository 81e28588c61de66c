//! The Cassandra (and ScyllaDB) store, through the scylla driver on tokio (feature `cassandra`).
//!
//! A [`CassandraStore`] keeps the kernel's cells in one lock table, one partition per lock name
//! and one clustering row per cell (see [`schema`] for the table and its options, and
//! [`baton_statements::cql`] for the CQL of every command). It is opened by URL:
//!
//! ```text
//! cassandra://[user:password@]host1[:port],host2,host3/keyspace?consistency=quorum&serial=serial&replication=3&table=baton_locks&create=true&timeout=10s
//! ```
//!
//! (scheme `scylla://` too; every parameter is optional, see [`CassandraOptions`]). Opening never
//! connects: the first command connects, creates or checks the keyspace and table, and prepares
//! the statements; an unreachable cluster fails it with
//! [`ErrorKind::StoreUnavailable`] (after the kernel's
//! retries).
//!
//! # Consistency
//! Each command runs at the level it carries (the locker's, default QUORUM; ONE, LOCAL_QUORUM,
//! EACH_QUORUM and ALL selectable), conditional commands with its serial level (SERIAL or
//! LOCAL_SERIAL) for Paxos and its plain level for the commit, and serial reads at SERIAL or
//! LOCAL_SERIAL. The URL's `consistency=` and `serial=` override every command's level, so a
//! deployment can be moved to LOCAL_QUORUM without touching code. The strategies need a
//! *quorum* level: with ONE, a write and a later read may miss each other (as QCassandraLock's
//! docs warn), and mutual exclusion holds only if every client uses one node.
//!
//! # Conditional and plain cells never mix
//! Cells the kernel writes conditionally (unique insert's `lock`, every fencing counter) are
//! only ever touched by lightweight transactions and serial reads; the others (bakery tickets,
//! column-prefix lock columns, data columns) only by plain writes. That is the kernel's layout
//! discipline; this store adds nothing that would break it (`Purge` writes nothing).
//!
//! # Timestamp discipline for plain writes
//! Cassandra orders the writes of one cell by their timestamps, not by their arrival. Every
//! plain write carries the kernel's **stamp** as its timestamp (`USING TIMESTAMP ?`): a fresh
//! one for a put, a delete and a batch (one for the whole batch), taken when the statement is
//! sent from the process-wide generator every store shares (wall-clock microseconds, strictly
//! increasing in the process); the read's own stamp for a delete-version. Reads return each
//! cell's `WRITETIME`, so Cassandra applies exactly the kernel's stamp rules: a put wins over
//! older versions only, and a tombstone at stamp `s` removes every version up to `s`. Why that
//! is enough:
//!
//! - A plain lock cell is written only by its owner, one command at a time (the kernel never has
//!   two commands of one operation outstanding, and an owner id is in use by one operation at a
//!   time: a locker frees an owner-id slot only after that acquisition's release has run). Owner
//!   ids carry the process id, so all writes of one cell by its owner come from one
//!   generator and carry strictly increasing timestamps, in the order the owner issued them. So
//!   the owner's delete always supersedes its earlier puts, even when a put that timed out is
//!   applied by a replica (or replayed from a hint) after the delete: no ghost cell can block
//!   others until its TTL.
//! - With server-side timestamps, each write would be stamped by its coordinator's clock, and
//!   two coordinators' clocks disagree: a put coordinated by a node whose clock runs ahead could
//!   shadow the owner's later delete.
//! - A plain delete of someone else's cell (a contender removing a *stale* column-prefix cell)
//!   is a delete-version at the stamp its read returned: it removes the version that was judged
//!   stale and nothing newer, so an owner that wrote its cell again since keeps it, whatever
//!   the two hosts' clocks say.
//! - Across processes reusing one owner id (which the Rust API never does: owner ids carry the
//!   process id and a nonce), ordering would rest on the hosts' clocks.
//!
//! Conditional commands carry no timestamp: Cassandra refuses `USING TIMESTAMP` on them, and
//! writes a lightweight transaction's changes at its Paxos ballot's time (the coordinator's
//! clock), whatever the client sends (`Commit.Proposal.of` in Cassandra 5.0). Their cells are
//! never written by plain writes (above), so the two kinds of timestamps never compete. The
//! session has no timestamp generator of its own: nothing it would stamp needs one.
//!
//! # Tombstones
//! Every acquire reads its lock's partition (bakery and column prefix read it on every attempt,
//! unique insert's lightweight transaction reads its cell), so deleted cells must not pile up
//! there. What keeps the tombstones read per acquire bounded, however long the lock's history:
//!
//! - **Cells are reused.** A lock entry's column is `<prefix><owner id>`, and a
//!   [`Locker`](crate::Locker) gives each acquisition the owner id of a *slot*: the smallest slot
//!   of that name not held by another of its live acquisitions, with a fresh acquisition id
//!   written into each value. So a process taking a lock over and over writes and deletes the
//!   *same* clustering row every time. Later writes supersede
//!   the earlier tombstone, and a merged read sees at most one tombstone per column, and none
//!   while the column is live. So a read finds at most one tombstone per owner that released
//!   the lock in the last `gc_grace_seconds`, whatever the number of cycles.
//! - **Short `gc_grace_seconds`** (an hour, argued in [`schema`]): reads skip purgeable
//!   tombstones even before compaction removes them, so owners that went away stop costing
//!   anything after an hour.
//! - **Tombstone compaction** options, so SSTables dominated by tombstones are compacted alone.
//!
//! `tests/tests/cassandra_tombstones.rs` measures it: after 10,000 acquire/release cycles on one
//! name, a traced acquire read reports the tombstones read ([`CassandraStore::trace`]).
//!
//! # Failures
//! See [`baton_statements::cql::failure`]: not enough replicas, no node, refused connections are
//! [`Failure::Unavailable`] (not applied); write and read
//! timeouts, including lightweight-transaction timeouts, are
//! [`Failure::Timeout`] (maybe applied), which the kernel settles
//! with a SERIAL read of the cell; everything else is
//! [`Failure::Rejected`] with the server's message.
//!
//! # Purge and scan
//! `Purge` answers an empty list: Cassandra drops expired cells by itself (TTL), and there is
//! nothing left to remove. `Scan` pages through the table in token order
//! (`token(lock_name) > token(after)`), so a listing's order is the partitioner's, stable
//! between pages.

mod errors;
pub(crate) mod exec;
mod options;
pub mod schema;
mod statements;
mod tls;

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use baton_kernel::{Command, Error, ErrorKind, Failure, Reply, Result};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::ExecutionError;
use scylla::policies::retry::DefaultRetryPolicy;
use scylla::response::query_result::QueryResult;
use tokio::sync::{watch, OnceCell};

pub use options::{parse_consistency, parse_serial, CassandraOptions, Replication, DEFAULT_PORT};
pub use tls::{CassandraTls, TlsMode};

use crate::stores::store::{may_free_a_lock, Store, StoreFuture};
use baton_statements::cql::Levels;
use statements::Statements;

/// A lock table in a Cassandra (or ScyllaDB) cluster.
///
/// Cheap to clone (clones share the session). See the [module docs](self) for the URL, the
/// consistency levels, the timestamp discipline and the tombstone argument.
#[derive(Clone)]
pub struct CassandraStore {
    inner: Arc<Inner>,
}

struct Inner {
    options: CassandraOptions,
    levels: Levels,
    /// The session, with the table checked and the statements prepared, once connected.
    ready: OnceCell<Ready>,
    changes: watch::Sender<u64>,
    describe: String,
}

struct Ready {
    session: Arc<Session>,
    statements: Statements,
}

impl std::fmt::Debug for CassandraStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassandraStore")
            .field("store", &self.inner.describe)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// What a traced command read, from Cassandra's trace events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// The command's reply.
    pub reply: Option<Reply>,
    /// The most tombstones one replica reported reading ("Read N live rows and M tombstone
    /// cells").
    pub tombstones: u64,
    /// The most live rows one replica reported reading.
    pub live_rows: u64,
    /// Every trace event's activity, in order, for diagnostics.
    pub events: Vec<String>,
    /// Warnings the server attached to the response (tombstone warnings among them).
    pub warnings: Vec<String>,
}

impl CassandraStore {
    /// A store on the cluster a URL names (see the [module docs](self)). Only checks the URL:
    /// [`ErrorKind::InvalidOption`] for a malformed one (passwords shown as `***`). Needs no
    /// runtime and never connects.
    pub fn open(url: &str) -> Result<CassandraStore> {
        CassandraStore::new(options::parse(url)?)
    }

    /// A store with these options ([`ErrorKind::InvalidOption`] if one is out of range).
    pub fn new(options: CassandraOptions) -> Result<CassandraStore> {
        options.validate()?;
        let describe = format!(
            "cassandra at {}, table {}.{}",
            options.hosts.join(","),
            options.keyspace,
            options.table
        );
        Ok(CassandraStore {
            inner: Arc::new(Inner {
                levels: Levels {
                    consistency: options.consistency,
                    serial: options.serial,
                },
                options,
                ready: OnceCell::new(),
                changes: watch::Sender::new(0),
                describe,
            }),
        })
    }

    /// The options.
    pub fn options(&self) -> &CassandraOptions {
        &self.inner.options
    }

    /// Connects, and creates or checks the keyspace and table, now instead of on first use: a
    /// way to fail at startup. Afterwards a no-op.
    ///
    /// Errors: [`ErrorKind::StoreError`] for a missing keyspace or table (with `create` off) or a
    /// table of the wrong shape, showing the CQL to run; [`ErrorKind::StoreUnavailable`] when the
    /// cluster cannot be reached.
    pub async fn ensure_schema(&self) -> Result<()> {
        self.ready().await.map(|_| ()).map_err(error)
    }

    /// The driver session (connecting first if needed), for running your own CQL next to the
    /// locks: the benchmark issues the raw statements on it.
    pub async fn session(&self) -> Result<Arc<Session>> {
        self.ready().await.map(|r| r.session.clone()).map_err(error)
    }

    /// Executes the statement `command` maps to and returns the driver's result undecoded
    /// (`None` for commands without a statement, and for scans): the raw cost of the command,
    /// without the kernel or the reply decoding.
    pub async fn execute_raw(
        &self,
        command: &Command,
    ) -> std::result::Result<Option<QueryResult>, ExecutionError> {
        let ready = match self.ready().await {
            Ok(r) => r,
            Err(_) => return Err(ExecutionError::EmptyPlan),
        };
        exec::execute_raw(
            &ready.session,
            &ready.statements,
            &self.inner.levels,
            command,
        )
        .await
    }

    /// Executes `command` with CQL tracing on and reports what the replicas read (live rows and
    /// tombstones) from the trace events. For diagnostics and the tombstone test: tracing costs
    /// the cluster extra writes, so never use it on a hot path.
    pub async fn trace(&self, command: &Command) -> Result<Trace> {
        let ready = self.ready().await.map_err(error)?;
        let (reply, result) = exec::run(
            &ready.session,
            &ready.statements,
            &self.inner.levels,
            command,
            true,
        )
        .await
        .map_err(error)?;
        let mut trace = Trace {
            reply: Some(reply),
            ..Trace::default()
        };
        let Some(result) = result else {
            return Ok(trace);
        };
        trace.warnings = result.warnings().map(str::to_owned).collect();
        let Some(id) = result.tracing_id() else {
            return Ok(trace);
        };
        // Trace events are written asynchronously: wait until the session row says the request
        // finished, then a little longer for the replicas' events.
        let mut info = None;
        for _ in 0..40 {
            match ready.session.get_tracing_info(&id).await {
                Ok(i) if i.duration.is_some() => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    info = ready.session.get_tracing_info(&id).await.ok().or(Some(i));
                    break;
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        let info = info.ok_or_else(|| {
            Error::new(
                ErrorKind::StoreError,
                format!("the trace {id} of a command did not appear in system_traces"),
            )
        })?;
        for event in info.events {
            let Some(activity) = event.activity else {
                continue;
            };
            if let Some((live, dead)) = read_counts(&activity) {
                trace.live_rows = trace.live_rows.max(live);
                trace.tombstones = trace.tombstones.max(dead);
            }
            trace.events.push(activity);
        }
        Ok(trace)
    }

    /// Connects, creates or checks the table and prepares the statements, once per store;
    /// failures are not cached (the next command tries again).
    ///
    /// Once ready, returns at once; the first use's work is boxed, so that the future of every
    /// later command does not carry (and copy) the large futures of connecting and preparing.
    async fn ready(&self) -> std::result::Result<&Ready, Failure> {
        match self.inner.ready.get() {
            Some(ready) => Ok(ready),
            None => Box::pin(self.first_ready()).await,
        }
    }

    async fn first_ready(&self) -> std::result::Result<&Ready, Failure> {
        let inner = &self.inner;
        inner
            .ready
            .get_or_try_init(|| async {
                let session = connect(&inner.options).await?;
                let probe_refusal = schema::ensure(&session, &inner.options).await?;
                let statements = prepare_after_ddl(&session, &inner.options, probe_refusal)
                    .await
                    .map_err(|e| {
                        errors::prepare_failure(&e, format!("preparing statements: {e}"))
                    })?;
                Ok(Ready {
                    session: Arc::new(session),
                    statements,
                })
            })
            .await
    }

    /// Executes `command` with `stamp` as the timestamp of its plain writes instead of a fresh
    /// one from the process's generator: a write that reaches the cluster after later ones, as
    /// a mutation held in a coordinator's queue would. For tests of the stamp rules only; a
    /// [`Command::DeleteVersion`] keeps its own stamp, and conditional commands carry none.
    #[doc(hidden)]
    pub async fn execute_stamped(&self, command: Command, stamp: u64) -> Reply {
        let reply = self.execute_command(&command, Some(stamp)).await;
        self.notify(&command, &reply);
        reply
    }

    async fn execute_command(&self, command: &Command, stamp: Option<u64>) -> Reply {
        let ready = match self.ready().await {
            Ok(r) => r,
            Err(f) => return Reply::Failed(f),
        };
        exec::execute(
            &ready.session,
            &ready.statements,
            &self.inner.levels,
            command,
            stamp,
        )
        .await
    }

    /// Tells this process's waiters that a lock may have been freed.
    fn notify(&self, command: &Command, reply: &Reply) {
        if may_free_a_lock(command, reply) {
            self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

/// `(live rows, tombstones)` from a trace event such as `Read 1 live rows and 3 tombstone cells`.
fn read_counts(activity: &str) -> Option<(u64, u64)> {
    let rest = activity.strip_prefix("Read ")?;
    let (live, rest) = rest.split_once(" live rows and ")?;
    let (dead, _) = rest.split_once(" tombstone cells")?;
    Some((live.trim().parse().ok()?, dead.trim().parse().ok()?))
}

async fn connect(options: &CassandraOptions) -> std::result::Result<Session, Failure> {
    let hosts = options
        .contact_points()
        .map_err(|e| Failure::Rejected(e.message().to_owned()))?;
    let profile = ExecutionProfile::builder()
        .consistency(scylla::statement::Consistency::Quorum)
        .serial_consistency(Some(scylla::statement::SerialConsistency::Serial))
        .request_timeout(Some(options.timeout))
        .retry_policy(Arc::new(DefaultRetryPolicy::new()))
        .build();
    let mut builder = SessionBuilder::new()
        .known_nodes(&hosts)
        .connection_timeout(options.connect_timeout)
        .default_execution_profile_handle(profile.into_handle())
        .keyspaces_to_fetch([options.keyspace.clone()]);
    if let (Some(user), Some(password)) = (&options.user, &options.password) {
        builder = builder.user(user, password);
    }
    if let Some(tls) = &options.tls {
        let config = tls
            .client_config()
            .map_err(|e| Failure::Rejected(e.message().to_owned()))?;
        builder = builder.tls_context(Some(config));
    }
    let connecting = builder.build();
    // Building a session resolves names and fetches metadata; bound it in case a node accepts
    // connections but never answers.
    match tokio::time::timeout(options.connect_timeout + options.timeout, connecting).await {
        Ok(Ok(session)) => Ok(session),
        Ok(Err(e)) => Err(errors::session_failure(&e, options.tls.is_some())),
        Err(_) => Err(Failure::NotApplied(format!(
            "cannot connect to the Cassandra cluster at {}: no answer within {:?} (opening a session reads the cluster's topology and the keyspace's schema first, which a cluster under heavy load can take longer to answer: raise connect_timeout= and timeout= in the store URL)",
            hosts.join(","),
            options.connect_timeout + options.timeout
        ))),
    }
}

/// A setup failure as an error of the store kinds.
fn error(f: Failure) -> Error {
    match f.setup_kind() {
        ErrorKind::StoreUnavailable => Error::new(
            ErrorKind::StoreUnavailable,
            format!("store unavailable: {}", f.message()),
        ),
        kind => Error::new(kind, f.message()),
    }
}

/// Prepares the statements once the table exists for the node preparing them. Clients that
/// create a new table in the same instant (processes starting together on a fresh keyspace)
/// can see their `CREATE TABLE IF NOT EXISTS` answer before the table is visible to every
/// connection: seen with 8 processes on one Cassandra 5.0 node, whose preparations failed with
/// "table … does not exist". Such a failure waits for schema agreement and tries again, for at
/// most 10 s; any other failure is returned at once.
async fn prepare_after_ddl(
    session: &Session,
    options: &CassandraOptions,
    probe_refusal: Option<String>,
) -> std::result::Result<Statements, scylla::errors::PrepareError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut pause = Duration::from_millis(20);
    loop {
        match Statements::prepare(
            session,
            &schema::qualified(options),
            options.timeout,
            probe_refusal.clone(),
        )
        .await
        {
            Err(e)
                if e.to_string().contains("does not exist")
                    && tokio::time::Instant::now() + pause < deadline =>
            {
                let _ = session.await_schema_agreement().await;
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            other => return other,
        }
    }
}

impl Store for CassandraStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            let reply = self.execute_command(&command, None).await;
            self.notify(&command, &reply);
            reply
        })
    }

    /// Wakes waiters in this process when one of its own operations frees a lock; other
    /// processes' releases are seen at the next poll.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.changes.subscribe())
    }

    /// The claim's batch checks the turn cell (`probe` it, or delete ours): lockers on
    /// Cassandra reserve turns, which keep a looping releaser from winning every hand-off.
    fn honours_turns(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        self.inner.describe.clone()
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_events_are_parsed() {
        assert_eq!(
            read_counts("Read 1 live rows and 3 tombstone cells"),
            Some((1, 3))
        );
        assert_eq!(
            read_counts("Read 0 live rows and 0 tombstone cells [ReadStage-2]"),
            Some((0, 0))
        );
        assert_eq!(read_counts("Merging memtable contents"), None);
    }

    #[test]
    fn opening_checks_the_url_only() {
        let store = CassandraStore::open("cassandra://127.0.0.1:1/ks?table=t1").expect("valid");
        assert_eq!(store.describe(), "cassandra at 127.0.0.1:1, table ks.t1");
        assert_eq!(
            CassandraStore::open("cassandra://h/ks?table=a.b")
                .map(|_| ())
                .map_err(|e| e.kind()),
            Err(ErrorKind::InvalidOption)
        );
    }
}
