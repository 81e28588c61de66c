//! SQL stores: SQLite (the embedded default), PostgreSQL and MariaDB, through sqlx.
//!
//! A [`SqlStore`] keeps the kernel's cells in one lock table, one row per cell:
//!
//! | column | holds |
//! | --- | --- |
//! | `lock_name` | the lock's name (the kernel's row), up to 255 bytes, compared in byte order |
//! | `cell` | the cell (the kernel's column), up to 255 bytes, byte order |
//! | `value` | the cell's value, in the kernel's documented text encoding |
//! | `expires_at` | when the cell expires by the database server's clock; NULL: never |
//! | `stamp` | the stamp of the write that made the row (microseconds since 1970 by the writer's clock, from a generator that never goes back in a process); 0 for rows written before the column existed |
//!
//! with the primary key `(lock_name, cell)` and an index on `expires_at`. A table made before
//! the `stamp` column existed gets it on first use (`ALTER TABLE … ADD COLUMN`), or, with
//! `create=false`, is refused with the statement to run. Expired rows stay until
//! they are taken over, overwritten or purged, invisible to every read. "Live" below means
//! `expires_at IS NULL OR expires_at > <server now>`, with the server's clock read once per
//! statement (PostgreSQL `statement_timestamp()`, MariaDB `UTC_TIMESTAMP(6)`, SQLite
//! `unixepoch('subsec')`); TTLs travel as integer milliseconds and are added by the server.
//!
//! | kernel command | statements (prepared; one round trip each) |
//! | --- | --- |
//! | read | `SELECT cell, value, <ms left>, stamp … WHERE lock_name = ? [AND cell >= ? AND cell < ?] AND <live> ORDER BY cell` (a prefix is a byte range, never a `LIKE` pattern) |
//! | put | upsert that replaces only an older row: `INSERT … ON CONFLICT (lock_name, cell) DO UPDATE SET … WHERE <t>.stamp < excluded.stamp` (MariaDB `ON DUPLICATE KEY UPDATE` with `IF(stamp < VALUES(stamp), new, old)` per column) |
//! | delete | `DELETE … WHERE lock_name = ? AND cell = ? AND stamp <= ?`, with a fresh stamp |
//! | delete-version | the same statement, with the command's stamp |
//! | insert-if-absent | one upsert that replaces the row only if it has expired (`… DO UPDATE … WHERE <old row expired>`; MariaDB `IF(<expired>, new, old)` per column); when not applied, a `SELECT` of the live value in the way |
//! | compare-and-set | `UPDATE … SET … WHERE … AND value = ? AND <live>` or `DELETE … WHERE … AND value = ? AND <live>`; when not applied, the same `SELECT` |
//! | batch | its puts and deletes in one transaction (a savepoint inside a caller's transaction), all with one fresh stamp |
//! | purge | `DELETE … WHERE expires_at <= <now> RETURNING lock_name, cell` |
//! | scan | `SELECT DISTINCT lock_name … ORDER BY lock_name LIMIT ?`, then the live cells of that page |
//!
//! Stores are opened by URL ([`SqlStore::open`], [`crate::open_store`], [`crate::Locker::open`]):
//! `sqlite:///abs/path.db`, `sqlite://relative.db`, `sqlite::memory:`,
//! `postgres://user:pass@host:port/db`, `mysql://user:pass@host:port/db` (MariaDB 10.5+), each
//! with the optional parameters `table`, `create`, `timeout` and `pool` of [`SqlOptions`].
//! Opening never connects: the first operation does, and an unreachable server makes it fail
//! with [`ErrorKind::StoreUnavailable`] after the
//! connection timeout.
//!
//! Stamps: each command that writes gets a fresh stamp from the process's generator when it is
//! sent, and the conditional commands write theirs too. A plain write changes a row only if the
//! row's stamp is older (a put) or at most as new (a delete), so an owner's writes apply in the
//! order it sent them even when one reaches the server late: a statement the client gave up on
//! can still be waiting in a connection pooler's queue or a socket buffer, and start after the
//! owner's next write. The statement timeout bounds a statement only once the server has started
//! it.
//!
//! Transactions: [`Locker::lock_in`](crate::Locker::lock_in) and
//! [`Guard::release_in`](crate::Guard::release_in) run a lock operation on the caller's
//! connection, inside the caller's transaction, so the lock row commits or rolls back with the
//! caller's own writes. The lock table must be in the database of that transaction.

mod conn;
mod deadline;
mod detached;
pub(crate) mod dialect;
mod errors;
pub(crate) mod exec;
#[cfg(feature = "postgres")]
mod listen;
mod migrate;
mod options;
mod pool;
mod schema;
pub(crate) mod tx;

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use baton_kernel::{Command, Error, Failure, Reply, Result};
// The docs name its kinds.
#[cfg(doc)]
use baton_kernel::ErrorKind;
use tokio::sync::{watch, OnceCell};

pub use conn::SqlConn;
pub use dialect::{Dialect, Layout, DEFAULT_TABLE, MARKER};
pub use migrate::MigrationReport;
pub use options::SqlOptions;
pub use pool::SqlPool;

use detached::Detached;

use crate::stores::store::{may_free_a_lock, Store, StoreFuture};
use dialect::{StatementSets, Statements};
use errors::{failure, Phase};
use exec::ExecError;

/// A lock table in a SQL database: SQLite, PostgreSQL or MariaDB.
///
/// Cheap to clone (clones share the connection pool). See the [module docs](self) for the
/// table, the URLs and the statements.
#[derive(Clone)]
pub struct SqlStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: SqlPool,
    /// The connections the store's own statements run on (PostgreSQL, MariaDB, and a SQLite
    /// file the store opened from a URL; `None` for an in-memory database or a caller's SQLite
    /// pool, whose statements run on pooled connections): see [`detached`].
    #[cfg(feature = "sqlite")]
    sqlite_conns: Option<Detached<sqlx::SqliteConnection>>,
    #[cfg(feature = "postgres")]
    pg_conns: Detached<sqlx::PgConnection>,
    #[cfg(feature = "mysql")]
    my_conns: Detached<sqlx::MySqlConnection>,
    /// The statements of every layout, and the layout of a table this store creates.
    sets: StatementSets,
    options: SqlOptions,
    /// Set, to the table's layout, once the table is known to exist with every column.
    ready: OnceCell<Layout>,
    /// The table's layout as last read, which `baton migrate` can change under the store.
    table: exec::TableState,
    /// Bumped when a lock of this store may have been freed (by this process, or, on
    /// PostgreSQL, by another: see [`listen`]).
    changes: Arc<watch::Sender<u64>>,
    #[cfg(feature = "postgres")]
    listening: listen::Listening,
    describe: String,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("store", &self.inner.describe)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl SqlStore {
    /// A store on the database a URL names. Connects lazily (on first use), so this only
    /// checks the URL: [`ErrorKind::InvalidOption`] for a malformed URL, an unknown parameter
    /// or bad value, or a database whose cargo feature is not compiled in (passwords shown as
    /// `***`). Needs no runtime.
    pub fn open(url: &str) -> Result<SqlStore> {
        let (target, options) = options::parse(url)?;
        let pool = pool::connect_lazy(&target, &options, url)?;
        let file = matches!(target, options::Target::SqliteFile(_));
        SqlStore::assemble(pool, options, file)
    }

    /// A store on a pool the caller already has, so that the lock table lives in the caller's
    /// database and [`Locker::lock_in`](crate::Locker::lock_in) can join its transactions.
    /// The pool keeps the caller's settings: `options.timeout` then only bounds baton's own
    /// client-side wait (set the server's statement timeout on the pool yourself).
    pub fn from_pool(pool: impl Into<SqlPool>, options: SqlOptions) -> Result<SqlStore> {
        options.validate()?;
        SqlStore::assemble(pool.into(), options, false)
    }

    /// The store on `pool`; with `sqlite_file`, a SQLite file's pool of the store's own, whose
    /// connections it may detach (a caller's pool may hold an in-memory database, which lives
    /// in its connections: those stay in the pool).
    fn assemble(pool: SqlPool, options: SqlOptions, sqlite_file: bool) -> Result<SqlStore> {
        let dialect = pool.dialect();
        let sets = dialect::statement_sets(dialect, &options.table, options.layout)?;
        let describe = format!("{}, table {}", pool.describe(), options.table);
        let size = pool.max_connections();
        #[cfg(not(feature = "sqlite"))]
        let _ = sqlite_file;
        Ok(SqlStore {
            inner: Arc::new(Inner {
                #[cfg(feature = "sqlite")]
                sqlite_conns: sqlite_file.then(|| Detached::new(size)),
                #[cfg(feature = "postgres")]
                pg_conns: Detached::new(size),
                #[cfg(feature = "mysql")]
                my_conns: Detached::new(size),
                pool,
                sets,
                options,
                ready: OnceCell::new(),
                table: exec::TableState::default(),
                changes: Arc::new(watch::Sender::new(0)),
                #[cfg(feature = "postgres")]
                listening: listen::Listening::default(),
                describe,
            }),
        })
    }

    /// The connection pool, to begin transactions on the lock table's database (see
    /// [`Locker::lock_in`](crate::Locker::lock_in)). Its connections carry the store's settings
    /// (PostgreSQL `statement_timeout`, MariaDB `max_statement_time`, SQLite WAL and busy
    /// timeout).
    pub fn pool(&self) -> &SqlPool {
        &self.inner.pool
    }

    /// The database.
    pub fn dialect(&self) -> Dialect {
        self.inner.sets.dialect()
    }

    /// The options.
    pub fn options(&self) -> &SqlOptions {
        &self.inner.options
    }

    /// Creates or checks the lock table now, instead of on first use: a way to fail at startup
    /// on a missing table or an unreachable server. Afterwards a no-op.
    ///
    /// Errors: [`ErrorKind::StoreError`] for a missing table (with `create` off) or column,
    /// naming it and showing the DDL; [`ErrorKind::StoreUnavailable`] when the database cannot
    /// be reached.
    pub async fn ensure_schema(&self) -> Result<()> {
        self.ready()
            .await
            .map_err(|f| Error::new(f.setup_kind(), f.message()))
    }

    /// The schema check, once per store; failures are not cached (the next call tries again).
    pub(crate) async fn ready(&self) -> std::result::Result<(), Failure> {
        if self.inner.ready.initialized() {
            return Ok(());
        }
        // Boxed: the check is a large future (it connects, reads the catalog, may create the
        // table), which every command's future would otherwise carry and copy, though it runs
        // once per store.
        Box::pin(self.check_schema()).await
    }

    /// The first use's schema check, shared by concurrent first commands, remembered (with the
    /// table's layout, which [`SqlStore::statements`] follows) once it succeeded.
    async fn check_schema(&self) -> std::result::Result<(), Failure> {
        self.inner
            .ready
            .get_or_try_init(|| async {
                // A few statements, each bounded by the server; this bounds them together.
                let limit = self.client_timeout() * 3;
                match tokio::time::timeout(limit, self.ensure_schema_retrying_busy()).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(Failure::NotApplied(format!(
                        "checking the lock table took longer than {limit:?}"
                    ))),
                }
            })
            .await
            .map(|_| ())
    }

    /// [`SqlStore::ensure_schema_once`], again after a short pause while SQLite says "database
    /// is locked" (for up to the statement timeout). SQLite answers that at once, without
    /// waiting out its busy timeout, in a few cases that concurrent first users of a new file
    /// meet: a connection switching the file to WAL, or a read transaction that must become a
    /// write while another connection writes. Nothing was applied then, so trying again is
    /// safe. Other databases and other failures are not retried here.
    async fn ensure_schema_retrying_busy(&self) -> std::result::Result<Layout, Failure> {
        let deadline = tokio::time::Instant::now() + self.inner.options.timeout;
        let mut pause = Duration::from_millis(5);
        loop {
            match self.ensure_schema_once().await {
                Err(Failure::Unavailable(message) | Failure::NotApplied(message))
                    if self.dialect() == Dialect::Sqlite
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tracing::debug!(%message, "lock table check: SQLite busy, trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                outcome => return outcome,
            }
        }
    }

    async fn ensure_schema_once(&self) -> std::result::Result<Layout, Failure> {
        let inner = &self.inner;
        match &inner.pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => {
                let (create, table) = (inner.options.create, &inner.options.table);
                if let Some(conns) = &inner.sqlite_conns {
                    return self.ensure_detached(p, conns).await;
                }
                let mut conn = self.acquire(p).await?;
                let st = inner.sets.for_new_table();
                let (layout, moving) = schema::ensure(&mut *conn, st, create, table).await?;
                Ok(self.inner.table.set(layout, moving))
            }
            // On a connection the store then keeps for its statements: the check opens none of
            // its own.
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => self.ensure_detached(p, &inner.pg_conns).await,
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => self.ensure_detached(p, &inner.my_conns).await,
        }
    }

    async fn acquire<DB: sqlx::Database>(
        &self,
        pool: &sqlx::Pool<DB>,
    ) -> std::result::Result<sqlx::pool::PoolConnection<DB>, Failure> {
        pool.acquire()
            .await
            .map_err(|e| failure(&e, self.dialect(), Phase::Connect))
    }

    /// Executes `command` with `stamp` as its write stamp instead of a fresh one from the
    /// process's generator: a write that reaches the database after later ones, as a statement
    /// held in a pooler's queue would. For tests of the stamp rules only; the stamp of a
    /// [`Command::DeleteVersion`] is its own, whatever `stamp` says.
    #[doc(hidden)]
    pub async fn execute_stamped(&self, command: Command, stamp: u64) -> Reply {
        let reply = self.execute_pooled(&command, Some(stamp)).await;
        self.notify(&command, &reply);
        reply
    }

    /// Runs `command` on a pooled connection, with a fresh stamp unless `stamp` is given.
    async fn execute_pooled(&self, command: &Command, stamp: Option<u64>) -> Reply {
        if let Err(f) = self.ready().await {
            return Reply::Failed(f);
        }
        match &self.inner.pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => match &self.inner.sqlite_conns {
                Some(conns) => self.execute_detached(p, conns, command, stamp).await,
                None => self.execute_on(p, command, stamp).await,
            },
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => {
                self.execute_detached(p, &self.inner.pg_conns, command, stamp)
                    .await
            }
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => {
                self.execute_detached(p, &self.inner.my_conns, command, stamp)
                    .await
            }
        }
    }

    /// The schema check on one of the store's detached connections, kept if it succeeded.
    async fn ensure_detached<DB>(
        &self,
        pool: &sqlx::Pool<DB>,
        conns: &Detached<DB::Connection>,
    ) -> std::result::Result<Layout, Failure>
    where
        DB: sqlx::Database,
        DB::Connection: conn::Sealed,
    {
        let inner = &self.inner;
        let connect = || async {
            let conn = self.acquire(pool).await?;
            Ok::<_, Failure>(conn.detach())
        };
        let mut conn = conns.checkout(connect).await?;
        let (create, table) = (inner.options.create, &inner.options.table);
        let st = inner.sets.for_new_table();
        let (layout, moving) = schema::ensure(&mut *conn, st, create, table).await?;
        conn.keep();
        Ok(self.inner.table.set(layout, moving))
    }

    /// Runs `command` on one of the store's detached connections (no ping before or after),
    /// kept for the next command only if this one succeeded.
    async fn execute_detached<DB>(
        &self,
        pool: &sqlx::Pool<DB>,
        conns: &Detached<DB::Connection>,
        command: &Command,
        stamp: Option<u64>,
    ) -> Reply
    where
        DB: sqlx::Database,
        DB::Connection: conn::Sealed,
    {
        let connect = || async {
            let conn = self.acquire(pool).await?;
            Ok::<_, Failure>(conn.detach())
        };
        let mut conn = match conns.checkout(connect).await {
            Ok(conn) => conn,
            Err(f) => return Reply::Failed(f),
        };
        let (on, deadline) = conn.with_deadline();
        let plan = self.plan();
        let run = exec::execute(on, &plan, command, stamp, true);
        match deadline.within(self.client_timeout(), run).await {
            Some(outcome) => {
                let reply = self.reply(outcome);
                if !matches!(reply, Reply::Failed(_)) {
                    conn.keep();
                }
                reply
            }
            // The statement may still be running on the server: the connection is dropped.
            None => Reply::Failed(self.client_timed_out()),
        }
    }

    #[cfg(feature = "sqlite")]
    async fn execute_on<DB>(
        &self,
        pool: &sqlx::Pool<DB>,
        command: &Command,
        stamp: Option<u64>,
    ) -> Reply
    where
        DB: sqlx::Database,
        DB::Connection: conn::Sealed,
    {
        let mut conn = match self.acquire(pool).await {
            Ok(conn) => conn,
            Err(f) => return Reply::Failed(f),
        };
        let plan = self.plan();
        let run = exec::execute(&mut *conn, &plan, command, stamp, true);
        match tokio::time::timeout(self.client_timeout(), run).await {
            Ok(reply) => self.reply(reply),
            Err(_) => {
                // The statement may still be running on the server: do not hand the connection
                // to anyone else. (SQLite's connection runs its statements one after another
                // on its own thread and stays usable; closing `sqlite::memory:`'s only
                // connection would lose the database.)
                if self.dialect() != Dialect::Sqlite {
                    conn.close_on_drop();
                }
                Reply::Failed(self.client_timed_out())
            }
        }
    }

    /// How long baton waits for a statement: the server's timeout plus a second, so that a
    /// statement the server has started is given up (and rolled back) by the server first. A
    /// statement still queued on its way to the server (in a pooler, in a socket buffer) can
    /// start after that; the stamps make such a late write harmless.
    pub(crate) fn client_timeout(&self) -> Duration {
        self.inner.options.timeout + Duration::from_secs(1)
    }

    /// A statement given up after [`SqlStore::client_timeout`].
    pub(crate) fn client_timed_out(&self) -> Failure {
        baton_statements::sql::failure(
            baton_statements::sql::DriverError::ClientTimeout,
            self.dialect(),
            Phase::Statement,
            baton_statements::no_answer_within(self.client_timeout()),
        )
    }

    /// A command's outcome as a reply.
    pub(crate) fn reply(&self, outcome: std::result::Result<Reply, ExecError>) -> Reply {
        match outcome {
            Ok(reply) => reply,
            Err(ExecError::Sql(e)) => Reply::Failed(failure(&e, self.dialect(), Phase::Statement)),
            Err(ExecError::Invalid(f)) => Reply::Failed(f),
        }
    }

    /// The statements of the table's layout (two-row ones until the first check read it:
    /// every command runs after [`SqlStore::ready`]). The table-level statements are the same
    /// in every set.
    pub(crate) fn statements(&self) -> &Statements {
        (self.inner.sets).of(self.inner.table.layout())
    }

    /// How the next command runs: the statement sets, the table's layout as last read, and
    /// whether `baton migrate` is moving it.
    pub(crate) fn plan(&self) -> exec::Plan<'_> {
        exec::Plan {
            sets: &self.inner.sets,
            table: &self.inner.options.table,
            state: &self.inner.table,
        }
    }

    /// The table's layout ([`Layout`]: where it keeps each name's fencing counter), once the
    /// first use (or [`SqlStore::ensure_schema`]) read it; `None` before. Read again after a
    /// command meets a name `baton migrate` moved.
    pub fn layout(&self) -> Option<Layout> {
        self.inner.ready.get().map(|_| self.inner.table.layout())
    }

    /// Whether a command met a moved name since the layout was last read.
    pub(crate) fn layout_refresh_due(&self) -> bool {
        self.inner.table.refresh_due()
    }

    /// After a command in a caller's transaction met a moved name's marker or the flag's
    /// guard: the table's columns and flag read again on a pooled connection (at most once a
    /// second; the store's own commands read them on their own connection, `exec::execute`),
    /// so that the store goes on in one row once `baton migrate` finished. A failure leaves it
    /// due for a later command.
    pub(crate) async fn refresh_layout_if_due(&self) {
        let table = &self.inner.table;
        // Due, and not read in the last second (then a later command reads it).
        if !table.take_refresh(exec::now_ms) {
            return;
        }
        let plan = self.plan();
        // A connection of the pool, if one comes quickly (the caller's transaction may hold
        // the only one): otherwise a later command tries again.
        macro_rules! read_on {
            ($pool:expr) => {
                match tokio::time::timeout(Duration::from_millis(250), $pool.acquire()).await {
                    Ok(Ok(mut c)) => {
                        // Recorded, or due again, by the read itself.
                        let _ = exec::reread(&mut *c, &plan).await;
                    }
                    _ => table.due(),
                }
            };
        }
        match &self.inner.pool {
            #[cfg(feature = "sqlite")]
            SqlPool::Sqlite(p) => read_on!(p),
            #[cfg(feature = "postgres")]
            SqlPool::Postgres(p) => read_on!(p),
            #[cfg(feature = "mysql")]
            SqlPool::MySql(p) => read_on!(p),
        }
    }

    /// Tells this process's waiters that a lock may have been freed.
    pub(crate) fn notify(&self, command: &Command, reply: &Reply) {
        if may_free_a_lock(command, reply) {
            self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

impl Store for SqlStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            let reply = self.execute_pooled(&command, None).await;
            self.notify(&command, &reply);
            reply
        })
    }

    /// Wakes waiters in this process when one of its own operations frees a lock; on
    /// PostgreSQL also, while they wait, when another process frees one (see
    /// [`Store::waiting`]). Elsewhere other processes' releases are seen at the next poll.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.changes.subscribe())
    }

    /// On PostgreSQL, listens on the table's channel from now until no waiter has waited for
    /// 30 s (see the `listen` module); nothing elsewhere.
    fn waiting(&self) {
        // The only variant when PostgreSQL is the only database compiled in.
        #[cfg(feature = "postgres")]
        #[allow(irrefutable_let_patterns)]
        if let SqlPool::Postgres(pool) = &self.inner.pool {
            let channel = &self.inner.options.table;
            let changes = Arc::downgrade(&self.inner.changes);
            self.inner.listening.waiting(pool, channel, changes);
        }
    }

    fn describe(&self) -> String {
        self.inner.describe.clone()
    }

    fn max_object_bytes(&self) -> usize {
        baton_statements::object_limit(Some(self.dialect()))
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
