//! A SQL lock table through a JavaScript client: the statement layer
//! ([`baton_statements::sql::Operation`]) decides each statement, its parameters and what the
//! rows mean; the adapter object only runs them. The adapter's contract (what it receives,
//! what it returns, how it reports errors) is in the package's README, "Bring your own client".
//!
//! - `adapter.query(sql, params, { statement, access })` resolves to `{ rows, rowCount,
//!   insertId }`: `rows` as arrays of column values in select order (strings, numbers, bigints
//!   or null), `rowCount` the rows affected (MariaDB: found), `insertId` MariaDB's
//!   `LAST_INSERT_ID` (0 elsewhere). The third argument names the statement
//!   ([`Statement::name`], or a [`schema_statement`] name) and says what it does
//!   ([`Access::as_str`]), so that a wrapper can tell a write by what it is, not by its text.
//! - `adapter.transaction([{ sql, params, statement, access }, …])` runs the statements in one
//!   transaction.
//! - Errors are thrown as they come; an error with a `batonCause` of `"database"` (with `code`,
//!   the SQLSTATE, and `number`, MariaDB's error number), `"noConnection"` (nothing was sent),
//!   `"connection"` (the connection broke: a statement may have been applied) or `"other"` is
//!   classified by [`failure`]; an error without one counts as `"database"` when it has a
//!   five-character `code`, else as `"connection"` (the answer that assumes the least).

use std::cell::Cell;
use std::time::Duration;

use baton_kernel::{Command, Error, ErrorKind, Failure, Reply, Result};
use baton_statements::sql::{
    failure, names_a_migrate_guard, read_layout, schema_statement, Dialect, Done, DriverError,
    Kind, Layout, Next, Operation, Outcome, Param, Phase, SchemaSetup, SchemaStep, Statement,
    StatementSet, StatementSets, Statements, TableState, Val,
};
use baton_statements::{no_answer_within, Access};
use js_sys::{Array, BigInt, Object};
use wasm_bindgen::{JsCast, JsValue};

use super::{call, next_stamp_after, CallError};
use crate::js;

/// A SQL adapter and the statements of its dialect and table.
pub(crate) struct SqlHost {
    adapter: JsValue,
    /// The statements of every layout, and the layout of a table this host creates.
    sets: StatementSets,
    /// The table's layout, as last read (`baton migrate` may move it under the host).
    state: TableState,
    table: String,
    create: bool,
    timeout: Duration,
    ready: Cell<bool>,
}

impl SqlHost {
    /// Reads the adapter's `dialect` (`"postgres"`, `"mysql"`/`"mariadb"`, `"sqlite"`), `table`
    /// (default `baton_locks`), `create` (default true: create the table when missing) and
    /// `layout` (`"one-row"`, the default, or `"two-rows"`: the layout of a table this store
    /// creates; an existing table keeps its own).
    pub(crate) fn new(adapter: &JsValue, timeout: Duration) -> Result<SqlHost> {
        super::require_methods(adapter, "SQL", &["query", "transaction"])?;
        let dialect = js::string_field(adapter, "dialect");
        let Some(dialect) = dialect.as_deref().and_then(Dialect::parse) else {
            return Err(Error::new(
                ErrorKind::InvalidOption,
                format!("a SQL store's dialect must be \"postgres\", \"mysql\" or \"sqlite\", not {dialect:?}"),
            ));
        };
        let table = js::string_field(adapter, "table")
            .unwrap_or_else(|| baton_statements::sql::DEFAULT_TABLE.to_owned());
        let layout = match js::string_field(adapter, "layout") {
            None => None,
            Some(name) => Some(Layout::parse(&name).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOption,
                    format!(
                        "a SQL store's layout must be \"two-rows\" or \"one-row\", not {name:?}"
                    ),
                )
            })?),
        };
        let sets = StatementSets::new(dialect, &table, layout)?;
        let create = js::field(adapter, "create").is_none_or(|v| v.is_truthy());
        Ok(SqlHost {
            adapter: adapter.clone(),
            sets,
            state: TableState::default(),
            table,
            create,
            timeout,
            ready: Cell::new(false),
        })
    }

    pub(crate) fn dialect_name(&self) -> &'static str {
        self.sets.dialect().name()
    }

    /// Executes `command`, creating or checking the table first if it has not been yet.
    pub(crate) async fn execute(&self, command: &Command) -> Reply {
        super::schema_then(&self.ready, self.ensure_schema(), self.run(command)).await
    }

    /// Runs `command` in the table's layout as last read; when `baton migrate` changed the
    /// table under it, reads the layout again and runs it again as the shared decision says
    /// ([`TableState::after_run`]).
    async fn run(&self, command: &Command) -> std::result::Result<Reply, Failure> {
        let ran = self.state.get();
        let first = self.run_in(command, ran).await;
        let outcome = match &first {
            Ok(reply) => Outcome::Replied(reply),
            Err(f) if names_a_migrate_guard(f.message(), &self.table) => Outcome::MigrateGuard,
            Err(_) => Outcome::Failed,
        };
        // The adapter's statements are never in a caller's transaction.
        match self
            .state
            .after_run(command, ran, outcome, false, || js_sys::Date::now() as u64)
        {
            Next::Answer => first,
            Next::ReadLayout => {
                // Recorded, or due again, by the read itself.
                let _ = self.reread().await;
                first
            }
            Next::ReadLayoutThenRerun => {
                let reading = self.reread().await;
                match self.state.rerun_in(command, &reading) {
                    Some(route) => Box::pin(self.run_in(command, route)).await,
                    None => first,
                }
            }
        }
    }

    /// One run of `command` with the statements of `layout` (routed, when `moving`).
    async fn run_in(
        &self,
        command: &Command,
        (layout, moving): (Layout, bool),
    ) -> std::result::Result<Reply, Failure> {
        let mut op =
            Operation::new(self.sets.dialect(), command, next_stamp_after)?.in_layout(layout);
        if moving {
            op = op.moving();
        }
        let phase = Phase::Statement;
        loop {
            let step = op.step();
            let st = self.sets.get(op.statement_set());
            match step {
                baton_statements::sql::Step::Execute { statement, params } => {
                    let out = self.run_statement(st, statement, &params, phase).await?;
                    op.executed(done(&out));
                }
                baton_statements::sql::Step::Fetch {
                    statement,
                    params,
                    columns,
                } => {
                    let out = self.run_statement(st, statement, &params, phase).await?;
                    op.fetched(rows(&out, columns)?);
                }
                baton_statements::sql::Step::Transaction(statements) => {
                    let list: Array = statements
                        .iter()
                        .map(|(statement, params)| {
                            let item = Object::new();
                            js::set(&item, "sql", st.get(*statement).as_str());
                            js::set(&item, "params", params_array(params));
                            js::set(&item, "statement", statement.name());
                            js::set(&item, "access", statement.access().as_str());
                            JsValue::from(item)
                        })
                        .collect();
                    self.call("transaction", &[list.into()], phase).await?;
                    op.executed(Done::default());
                }
                baton_statements::sql::Step::Reply(reply) => {
                    if op.met_marker() {
                        self.state.due();
                    }
                    return Ok(reply);
                }
            }
        }
    }

    /// The table's layout read again (its columns and its flag) and recorded; a failure leaves
    /// it due for a later command.
    async fn reread(&self) -> std::result::Result<(Layout, bool), Failure> {
        let reading = async {
            let present = self.columns().await?;
            let flag = self.layout_flag().await?;
            read_layout(self.sets.dialect(), &self.table, flag.as_deref(), &present)
        }
        .await;
        self.state.read(&reading);
        reading
    }

    /// Runs one of the lock's statements.
    async fn run_statement(
        &self,
        st: &Statements,
        statement: Statement,
        params: &[Param<'_>],
        phase: Phase,
    ) -> std::result::Result<JsValue, Failure> {
        let about = (statement.name(), statement.access());
        self.query(st.get(statement), params, about, phase).await
    }

    /// Runs one of the schema's statements (`name`, a [`schema_statement`] name).
    async fn schema(
        &self,
        sql: &str,
        params: &[Param<'_>],
        name: &'static str,
    ) -> std::result::Result<JsValue, Failure> {
        self.query(sql, params, (name, Access::Schema), Phase::Connect)
            .await
    }

    /// `adapter.query(sql, params, { statement, access })`.
    async fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        (name, access): (&'static str, Access),
        phase: Phase,
    ) -> std::result::Result<JsValue, Failure> {
        let about = Object::new();
        js::set(&about, "statement", name);
        js::set(&about, "access", access.as_str());
        let args = [sql.into(), params_array(params).into(), about.into()];
        self.call("query", &args, phase).await
    }

    async fn call(
        &self,
        method: &str,
        args: &[JsValue],
        phase: Phase,
    ) -> std::result::Result<JsValue, Failure> {
        match call(&self.adapter, method, args, self.timeout).await {
            Ok(value) => Ok(value),
            Err(CallError::TimedOut(t)) => Err(failure(
                DriverError::ClientTimeout,
                self.sets.dialect(),
                phase,
                no_answer_within(t),
            )),
            Err(CallError::Thrown(thrown)) => Err(self.failure(&thrown, phase)),
        }
    }

    /// A thrown error as the kernel's failure.
    fn failure(&self, thrown: &JsValue, phase: Phase) -> Failure {
        let dialect = self.sets.dialect();
        let message = js::message_of(thrown);
        let code = js::string_field(thrown, "code");
        let number = js::field(thrown, "number")
            .and_then(|n| n.as_f64())
            .and_then(|n| u16::try_from(n as i64).ok());
        let cause = js::string_field(thrown, "batonCause");
        let error = match cause.as_deref() {
            Some("database") => DriverError::Database {
                code: code.as_deref(),
                number,
            },
            Some("noConnection") => DriverError::NoConnection,
            Some("connection") => DriverError::Connection,
            Some("other") => DriverError::Other,
            _ if code.as_deref().is_some_and(|c| c.len() == 5) => DriverError::Database {
                code: code.as_deref(),
                number,
            },
            _ => DriverError::Connection,
        };
        let message = match error {
            DriverError::Database { code, .. } => {
                baton_statements::sql::describe_database(dialect, code, &message)
            }
            _ => message,
        };
        failure(error, dialect, phase, message)
    }

    /// Makes sure the lock table exists with every column, and reads its layout: the sequence
    /// every host runs ([`SchemaSetup`]: creates the table when missing and allowed, adds the
    /// stamp column to an older table, makes the routines after the table, refuses a table that
    /// is not baton's), executed through the adapter.
    async fn ensure_schema(&self) -> std::result::Result<(), Failure> {
        let st = self.sets.for_new_table();
        let mut setup = SchemaSetup::new(st, &self.table, self.create);
        loop {
            let run = match setup.step() {
                SchemaStep::ReadColumns => {
                    let present = self.columns().await?;
                    setup.columns(present);
                    continue;
                }
                SchemaStep::ReadLayoutFlag => {
                    let flag = self.layout_flag().await?;
                    setup.layout_flag(flag.as_deref());
                    continue;
                }
                SchemaStep::Ready(layout) => {
                    self.state.set(layout, setup.moving());
                    return Ok(());
                }
                SchemaStep::Refused(message) => return Err(Failure::Rejected(message)),
                SchemaStep::Failed(failure) => return Err(failure),
                SchemaStep::CreateTable(i) => {
                    self.schema(&st.create[i], &[], schema_statement::CREATE_TABLE)
                        .await
                }
                SchemaStep::AddStamp => {
                    self.schema(&st.add_stamp, &[], schema_statement::ADD_STAMP)
                        .await
                }
                SchemaStep::CreateRoutine(i) => {
                    self.schema(&st.routines[i], &[], schema_statement::CREATE_ROUTINE)
                        .await
                }
            };
            setup.ran(run.map(drop));
        }
    }

    /// The table's layout flag, if it has one.
    async fn layout_flag(&self) -> std::result::Result<Option<String>, Failure> {
        let out = self
            .schema(
                &self.sets.get(StatementSet::TwoRows).layout_flag,
                &[],
                schema_statement::LAYOUT_FLAG,
            )
            .await?;
        Ok(rows(&out, &[Kind::Text])?
            .into_iter()
            .find_map(|r| r.into_iter().next().map(Val::into_text)))
    }

    /// The table's column names (none when the table does not exist).
    async fn columns(&self) -> std::result::Result<Vec<String>, Failure> {
        let st = self.sets.get(StatementSet::TwoRows);
        let out = self
            .schema(
                &st.columns,
                &[Param::Text(st.catalog_name.as_str().into())],
                schema_statement::COLUMNS,
            )
            .await?;
        Ok(rows(&out, &[Kind::Text])?
            .into_iter()
            .filter_map(|r| r.into_iter().next().map(Val::into_text))
            .collect())
    }
}

/// Parameters as JavaScript values: strings, numbers (bigints beyond 2^53), null.
fn params_array(params: &[Param<'_>]) -> Array {
    params
        .iter()
        .map(|p| match p {
            Param::Text(s) => JsValue::from_str(s),
            Param::Int(None) => JsValue::NULL,
            Param::Int(Some(i)) => int_value(*i),
        })
        .collect()
}

/// An integer as a JavaScript number when it is exact, else as a bigint.
pub(crate) fn int_value(i: i64) -> JsValue {
    const SAFE: i64 = (1 << 53) - 1;
    if (-SAFE..=SAFE).contains(&i) {
        JsValue::from_f64(i as f64)
    } else {
        BigInt::from(i).into()
    }
}

/// An integer result: a number, a bigint, decimal text (PostgreSQL's `int8` through `pg`), or
/// a boolean as 0 or 1 (a driver may type a condition's 0/1 as one: MariaDB's one-row reads
/// answer such a flag).
pub(crate) fn int_of(value: &JsValue) -> Option<i64> {
    if let Some(b) = value.as_bool() {
        return Some(i64::from(b));
    }
    if let Some(n) = value.as_f64() {
        return (n.fract() == 0.0 && n.abs() < 9.2e18).then_some(n as i64);
    }
    if let Some(b) = value.dyn_ref::<BigInt>() {
        return i64::try_from(b.clone()).ok();
    }
    value.as_string().and_then(|s| s.trim().parse().ok())
}

fn done(out: &JsValue) -> Done {
    let count = |name| {
        js::field(out, name)
            .and_then(|v| int_of(&v))
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0)
    };
    Done {
        rows: count("rowCount"),
        insert_id: count("insertId"),
    }
}

/// The result's rows decoded by `columns`; a value of the wrong type is a store error.
fn rows(out: &JsValue, columns: &[Kind]) -> std::result::Result<Vec<Vec<Val>>, Failure> {
    let Some(rows) = js::field(out, "rows") else {
        return Ok(Vec::new());
    };
    let rows: Array = rows
        .dyn_into()
        .map_err(|_| bad("the adapter's rows are not an array"))?;
    rows.iter()
        .map(|row| {
            let row: Array = row
                .dyn_into()
                .map_err(|_| bad("a row is not an array (use rowMode: 'array')"))?;
            columns
                .iter()
                .enumerate()
                .map(|(i, kind)| {
                    let value = row.get(i as u32);
                    match kind {
                        Kind::Text => value
                            .as_string()
                            .map(Val::Text)
                            .ok_or_else(|| bad(&format!("column {i} is not text: {value:?}"))),
                        Kind::Int if value.is_null() || value.is_undefined() => Ok(Val::Int(None)),
                        Kind::Int => int_of(&value).map(|n| Val::Int(Some(n))).ok_or_else(|| {
                            bad(&format!("column {i} is not an integer: {value:?}"))
                        }),
                    }
                })
                .collect()
        })
        .collect()
}

fn bad(what: &str) -> Failure {
    Failure::Rejected(format!("the SQL adapter gave an unexpected result: {what}"))
}
