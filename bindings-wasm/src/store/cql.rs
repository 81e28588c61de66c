//! A Cassandra (or ScyllaDB) lock table through a JavaScript client: the statement layer
//! ([`baton_statements::cql::Operation`]) decides each statement, its values, consistency and
//! what the rows mean; the adapter object only runs them. The adapter's contract is in the
//! package's README, "Bring your own client":
//!
//! - `adapter.execute(cql, values, options)` resolves to `{ columns, rows, pageState }`:
//!   `columns` the result's column names (`[applied]` first for a conditional statement),
//!   `rows` arrays of values (strings, booleans, numbers for `int`, bigints for `bigint`, null),
//!   `pageState` the opaque state of the next page or null. `options` has `consistency`
//!   (`"one"`, `"quorum"`, `"localQuorum"`, `"eachQuorum"`, `"all"`, `"serial"`,
//!   `"localSerial"`), `serialConsistency` for conditional statements, `idempotent` (false for
//!   conditional statements: never retry them), for scans `fetchSize` and `pageState`, and
//!   `statement` and `access`: the statement's name ([`Statement::name`], or a
//!   [`schema_statement`](baton_statements::cql::schema_statement) name) and what it does ([`Access::as_str`]), so that a wrapper can
//!   tell a write by what it is, not by its text. Values are strings, numbers (`int`) and
//!   bigints (`bigint`, write timestamps).
//! - `adapter.batch([{ query, params, statement, access }, …], { consistency, access })` runs
//!   one logged batch (`access` is `"write"`).
//! - Errors carry a `batonCause`: `"server"` (with `server`, the protocol error:
//!   `"unavailable"`, `"overloaded"`, `"isBootstrapping"`, `"unprepared"`, `"readTimeout"`,
//!   `"writeTimeout"`, `"readFailure"`, `"writeFailure"`, `"serverError"`, or `"other"`),
//!   `"notSent"` (no node took it), `"broken"` (the connection broke after sending),
//!   `"clientTimeout"`, `"invalid"` or `"other"`, classified by [`failure`]; an error without
//!   one counts as `"broken"` (it may have been applied: the kernel reads back).

use std::cell::{Cell, RefCell};
use std::time::Duration;

use baton_kernel::{Command, Failure, Reply, Result, SerialConsistency};
use baton_statements::cql::{
    ddl_failure, failure, qualified, simple_replication, validate_identifier, DriverError, Level,
    Levels, Operation, Phase, Rows, SchemaSetup, SchemaStep, ServerError, Statement, Step, Val,
    Value, COLUMNS_QUERY, DEFAULT_KEYSPACE, DEFAULT_TABLE, KEYSPACE_QUERY,
};
use baton_statements::{no_answer_within, Access};
use js_sys::{Array, BigInt, Object};
use wasm_bindgen::{JsCast, JsValue};

use super::{call, next_stamp_after, CallError};
use crate::js;

/// A CQL adapter, its table and its statements.
pub(crate) struct CqlHost {
    adapter: JsValue,
    keyspace: String,
    table: String,
    replication: String,
    create: bool,
    cql: Vec<String>,
    levels: Levels,
    timeout: Duration,
    ready: Cell<bool>,
    /// Why object writes cannot run on the table (it has no `probe` column), as the set-up
    /// found it.
    probe_refusal: RefCell<Option<String>>,
}

impl CqlHost {
    /// Reads the adapter's `keyspace` (default `baton`), `table` (default `baton_locks`),
    /// `replication` (CQL map text for a keyspace baton creates), `create` (default true).
    pub(crate) fn new(adapter: &JsValue, timeout: Duration) -> Result<CqlHost> {
        super::require_methods(adapter, "CQL", &["execute", "batch"])?;
        let keyspace =
            js::string_field(adapter, "keyspace").unwrap_or_else(|| DEFAULT_KEYSPACE.to_owned());
        let table = js::string_field(adapter, "table").unwrap_or_else(|| DEFAULT_TABLE.to_owned());
        validate_identifier("keyspace", &keyspace)?;
        validate_identifier("table", &table)?;
        let name = qualified(&keyspace, &table);
        Ok(CqlHost {
            adapter: adapter.clone(),
            replication: js::string_field(adapter, "replication")
                .unwrap_or_else(|| simple_replication(1).to_owned()),
            create: js::field(adapter, "create").is_none_or(|v| v.is_truthy()),
            cql: Statement::ALL.iter().map(|s| s.cql(&name)).collect(),
            keyspace,
            table,
            levels: Levels::default(),
            timeout,
            ready: Cell::new(false),
            probe_refusal: RefCell::new(None),
        })
    }

    /// Executes `command`, creating or checking the keyspace and table first if not done yet.
    pub(crate) async fn execute(&self, command: &Command) -> Reply {
        super::schema_then(&self.ready, self.ensure_schema(), self.run(command)).await
    }

    async fn run(&self, command: &Command) -> std::result::Result<Reply, Failure> {
        let mut op = Operation::new(command, self.levels, next_stamp_after)?;
        if let Some(why) = self.probe_refusal.borrow().as_deref() {
            op = op.without_probe(why);
        }
        // The scan being paged: its statement, values, level and the next page's state.
        let mut scan: Option<(Statement, Array, Level, i32, JsValue)> = None;
        loop {
            match op.step() {
                Step::Execute {
                    statement,
                    values,
                    consistency,
                    serial,
                } => {
                    let options = Object::new();
                    js::set(&options, "consistency", level_name(consistency));
                    if let Some(serial) = serial {
                        js::set(&options, "serialConsistency", serial_name(serial));
                    }
                    js::set(&options, "idempotent", !statement.is_conditional());
                    let out = self
                        .execute_cql(statement, values_array(&values), options)
                        .await?;
                    op.rows(rows(&out)?);
                }
                Step::Batch {
                    statements,
                    consistency,
                    serial,
                } => {
                    let list: Array = statements
                        .iter()
                        .map(|(statement, values)| {
                            let item = Object::new();
                            js::set(&item, "query", self.cql[statement.index()].as_str());
                            js::set(&item, "params", values_array(values));
                            js::set(&item, "statement", statement.name());
                            js::set(&item, "access", statement.access().as_str());
                            JsValue::from(item)
                        })
                        .collect();
                    let options = Object::new();
                    js::set(&options, "consistency", level_name(consistency));
                    // A conditional batch (a claim, a guarded release) is not idempotent, and
                    // its result rows say whether it was applied.
                    js::set(&options, "idempotent", serial.is_none());
                    js::set(&options, "access", Access::Write.as_str());
                    if let Some(serial) = serial {
                        js::set(&options, "serialConsistency", serial_name(serial));
                    }
                    let out = self
                        .call("batch", &[list.into(), options.into()], Phase::Execute)
                        .await?;
                    if serial.is_some() {
                        op.rows(rows(&out)?);
                    } else {
                        op.rows(Rows::default());
                    }
                }
                Step::Scan {
                    statement,
                    values,
                    consistency,
                    page_size,
                } => {
                    let values = values_array(&values);
                    let out = self
                        .page(statement, &values, consistency, page_size, &JsValue::NULL)
                        .await?;
                    let next = js::field(&out, "pageState").unwrap_or(JsValue::NULL);
                    let last = next.is_null();
                    scan = Some((statement, values, consistency, page_size, next));
                    op.page(rows(&out)?, last);
                }
                Step::NextPage => {
                    let Some((statement, values, consistency, page_size, state)) = scan.take()
                    else {
                        return Err(Failure::Rejected(String::from(
                            "internal error: a next page was asked for before a scan",
                        )));
                    };
                    if state.is_null() {
                        op.page(Rows::default(), true);
                        continue;
                    }
                    let out = self
                        .page(statement, &values, consistency, page_size, &state)
                        .await?;
                    let next = js::field(&out, "pageState").unwrap_or(JsValue::NULL);
                    let last = next.is_null();
                    scan = Some((statement, values, consistency, page_size, next));
                    op.page(rows(&out)?, last);
                }
                Step::Reply(reply) => return Ok(reply),
            }
        }
    }

    async fn page(
        &self,
        statement: Statement,
        values: &Array,
        consistency: Level,
        page_size: i32,
        state: &JsValue,
    ) -> std::result::Result<JsValue, Failure> {
        let options = Object::new();
        js::set(&options, "consistency", level_name(consistency));
        js::set(&options, "idempotent", true);
        js::set(&options, "fetchSize", page_size);
        if !state.is_null() {
            js::set(&options, "pageState", state.clone());
        }
        self.execute_cql(statement, values.clone(), options).await
    }

    async fn execute_cql(
        &self,
        statement: Statement,
        values: Array,
        options: Object,
    ) -> std::result::Result<JsValue, Failure> {
        let cql = self.cql[statement.index()].as_str();
        js::set(&options, "statement", statement.name());
        js::set(&options, "access", statement.access().as_str());
        self.call(
            "execute",
            &[cql.into(), values.into(), options.into()],
            Phase::Execute,
        )
        .await
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
                phase,
                no_answer_within(t),
            )),
            Err(CallError::Thrown(thrown)) => Err(failure(
                driver_error(&thrown),
                phase,
                js::message_of(&thrown),
            )),
        }
    }

    /// A statement of the schema's set-up (`name`, a [`schema_statement`](baton_statements::cql::schema_statement) name), at `level`.
    async fn setup(
        &self,
        cql: &str,
        values: &[&str],
        level: Option<Level>,
        name: &'static str,
    ) -> std::result::Result<Rows, Failure> {
        let options = Object::new();
        js::set(
            &options,
            "consistency",
            level_name(level.unwrap_or(Level::One)),
        );
        js::set(&options, "idempotent", true);
        js::set(&options, "statement", name);
        js::set(&options, "access", Access::Schema.as_str());
        let values: Array = values.iter().map(|v| JsValue::from_str(v)).collect();
        let out = self
            .call(
                "execute",
                &[cql.into(), values.into(), options.into()],
                Phase::Connect,
            )
            .await?;
        rows(&out)
    }

    /// Creates (when allowed and missing) or checks the keyspace and table, by the steps of
    /// [`SchemaSetup`], which the native Cassandra store runs too.
    async fn ensure_schema(&self) -> std::result::Result<(), Failure> {
        let mut setup =
            SchemaSetup::new(&self.keyspace, &self.table, &self.replication, self.create);
        loop {
            let step = setup.step();
            let (level, name) = (step.level(), step.statement().unwrap_or_default());
            match step {
                SchemaStep::ReadKeyspace => {
                    let found = self
                        .setup(KEYSPACE_QUERY, &[&self.keyspace], level, name)
                        .await?;
                    setup.keyspace(!found.rows.is_empty());
                }
                SchemaStep::ReadColumns => {
                    let columns = self
                        .setup(COLUMNS_QUERY, &[&self.keyspace, &self.table], level, name)
                        .await?;
                    setup.columns(&column_rows(columns));
                }
                SchemaStep::CreateKeyspace(cql) | SchemaStep::CreateTable(cql) => {
                    self.setup(&cql, &[], level, name)
                        .await
                        .map_err(|f| ddl_failure(f, &cql))?;
                    setup.created();
                }
                // Another client may add the column in the same instant: the set-up reads the
                // columns again after a failure.
                SchemaStep::AddProbe(cql) => match self.setup(&cql, &[], level, name).await {
                    Ok(_) => setup.created(),
                    Err(f) => setup.add_probe_failed(f),
                },
                SchemaStep::Ready => {
                    *self.probe_refusal.borrow_mut() = setup.probe_refusal().map(str::to_owned);
                    return Ok(());
                }
                SchemaStep::Refused(message) => return Err(Failure::Rejected(message)),
                SchemaStep::Failed(failure) => return Err(failure),
            }
        }
    }
}

/// The `(column_name, kind, type)` rows of [`COLUMNS_QUERY`], as text.
fn column_rows(columns: Rows) -> Vec<(String, String, String)> {
    columns
        .rows
        .into_iter()
        .map(|row| {
            let mut text = row.into_iter().map(|v| match v {
                Some(Val::Text(s)) => s,
                _ => String::new(),
            });
            (
                text.next().unwrap_or_default(),
                text.next().unwrap_or_default(),
                text.next().unwrap_or_default(),
            )
        })
        .collect()
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::One => "one",
        Level::Quorum => "quorum",
        Level::LocalQuorum => "localQuorum",
        Level::EachQuorum => "eachQuorum",
        Level::All => "all",
        Level::Serial => "serial",
        Level::LocalSerial => "localSerial",
    }
}

fn serial_name(serial: SerialConsistency) -> &'static str {
    match serial {
        SerialConsistency::Serial => "serial",
        SerialConsistency::LocalSerial => "localSerial",
    }
}

fn values_array(values: &[Value<'_>]) -> Array {
    values
        .iter()
        .map(|v| match v {
            Value::Text(s) => JsValue::from_str(s),
            Value::Int(i) => JsValue::from_f64(f64::from(*i)),
            Value::BigInt(i) => BigInt::from(*i).into(),
        })
        .collect()
}

fn driver_error(thrown: &JsValue) -> DriverError {
    match js::string_field(thrown, "batonCause").as_deref() {
        Some("server") => {
            DriverError::Server(match js::string_field(thrown, "server").as_deref() {
                Some("unavailable") => ServerError::Unavailable,
                Some("overloaded") => ServerError::Overloaded,
                Some("isBootstrapping") => ServerError::IsBootstrapping,
                Some("rateLimited") => ServerError::RateLimited,
                Some("unprepared") => ServerError::Unprepared,
                Some("readTimeout") => ServerError::ReadTimeout,
                Some("writeTimeout") => ServerError::WriteTimeout,
                Some("readFailure") => ServerError::ReadFailure,
                Some("writeFailure") => ServerError::WriteFailure,
                Some("serverError") => ServerError::ServerError,
                _ => ServerError::Other,
            })
        }
        Some("notSent") => DriverError::NotSent,
        Some("clientTimeout") => DriverError::ClientTimeout,
        Some("invalid") => DriverError::Invalid,
        Some("other") => DriverError::Other,
        _ => DriverError::Broken,
    }
}

/// The adapter's result as neutral rows.
fn rows(out: &JsValue) -> std::result::Result<Rows, Failure> {
    let bad = |what: &str| {
        Failure::Rejected(format!("the CQL adapter gave an unexpected result: {what}"))
    };
    let columns = match js::field(out, "columns") {
        None => Vec::new(),
        Some(c) => c
            .dyn_into::<Array>()
            .map_err(|_| bad("columns is not an array"))?
            .iter()
            .map(|c| c.as_string().unwrap_or_default())
            .collect(),
    };
    let rows = match js::field(out, "rows") {
        None => Vec::new(),
        Some(r) => r
            .dyn_into::<Array>()
            .map_err(|_| bad("rows is not an array"))?
            .iter()
            .map(|row| {
                row.dyn_into::<Array>()
                    .map(|row| row.iter().map(|v| val(&v)).collect())
                    .map_err(|_| bad("a row is not an array"))
            })
            .collect::<std::result::Result<_, _>>()?,
    };
    Ok(Rows { columns, rows })
}

fn val(value: &JsValue) -> Option<Val> {
    if value.is_null() || value.is_undefined() {
        return None;
    }
    Some(if let Some(s) = value.as_string() {
        Val::Text(s)
    } else if let Some(b) = value.as_bool() {
        Val::Boolean(b)
    } else if let Some(b) = value.dyn_ref::<BigInt>() {
        i64::try_from(b.clone()).map_or(Val::Other, Val::BigInt)
    } else if let Some(n) = value.as_f64() {
        if n.fract() == 0.0 && n >= f64::from(i32::MIN) && n <= f64::from(i32::MAX) {
            Val::Int(n as i32)
        } else {
            Val::Other
        }
    } else {
        Val::Other
    })
}
