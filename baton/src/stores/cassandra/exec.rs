//! Executing one kernel command: the driver-free [`Operation`] decides the statement, its
//! values, its consistency and what the rows mean; this module binds and runs its steps on the
//! scylla session and hands back the rows.
//!
//! Stamps: a plain write (put, delete, batch) is bound with a fresh stamp from the process's
//! generator as its `USING TIMESTAMP`, taken when the statement is built, just before it is
//! sent; a delete-version with its own stamp. Reads return each cell's `WRITETIME`.

use baton_kernel::{Command, Failure, Reply, SerialConsistency};
use baton_statements::cql::{Level, Levels, Operation, Rows, Statement, Step, Val, Value};
use scylla::client::session::Session;
use scylla::errors::ExecutionError;
use scylla::response::query_result::QueryResult;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::bound::BoundStatement;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency as Cl, SerialConsistency as Scl};
use scylla::value::CqlValue;

use super::errors::failure;
use super::statements::Statements;
use crate::stores::stamps::next_stamp_after;

/// The driver's consistency for `level`.
pub(crate) fn cl(level: Level) -> Cl {
    match level {
        Level::One => Cl::One,
        Level::Quorum => Cl::Quorum,
        Level::LocalQuorum => Cl::LocalQuorum,
        Level::EachQuorum => Cl::EachQuorum,
        Level::All => Cl::All,
        Level::Serial => Cl::Serial,
        Level::LocalSerial => Cl::LocalSerial,
    }
}

fn scl(s: SerialConsistency) -> Scl {
    match s {
        SerialConsistency::Serial => Scl::Serial,
        SerialConsistency::LocalSerial => Scl::LocalSerial,
    }
}

fn cql_values(values: Vec<Value<'_>>) -> Vec<CqlValue> {
    values
        .into_iter()
        .map(|v| match v {
            Value::Text(s) => CqlValue::Text(s.into_owned()),
            Value::Int(i) => CqlValue::Int(i),
            Value::BigInt(i) => CqlValue::BigInt(i),
        })
        .collect()
}

fn bind(p: &PreparedStatement, values: Vec<Value<'_>>) -> Result<BoundStatement, Failure> {
    p.clone()
        .bind(&cql_values(values))
        .map_err(|e| Failure::Rejected(format!("cannot bind the statement's values: {e}")))
}

/// The operation of `command`, with `given` as the timestamp of a plain write, or a fresh
/// stamp from the process's generator when `None` (always, but in tests that play a write
/// arriving late); on a table without the `probe` column, it refuses object writes.
fn operation<'c>(
    command: &'c Command,
    st: &Statements,
    levels: &Levels,
    given: Option<u64>,
) -> Result<Operation<'c>, Failure> {
    let stamp = |floor: u64| match given {
        None => next_stamp_after(floor),
        Some(g) if floor == 0 => g,
        Some(g) => g.max(floor.saturating_add(1)),
    };
    let op = Operation::new(command, *levels, stamp)?;
    Ok(match st.probe_refusal() {
        Some(why) => op.without_probe(why),
        None => op,
    })
}

/// `statement` bound to `values`, at `consistency` (and `serial` for a conditional one).
async fn bound(
    session: &Session,
    st: &Statements,
    statement: Statement,
    values: Vec<Value<'_>>,
    consistency: Level,
    serial: Option<SerialConsistency>,
) -> Result<BoundStatement, Failure> {
    let mut bound = bind(st.get(session, statement).await?, values)?;
    bound.set_consistency(cl(consistency));
    if let Some(s) = serial {
        bound.set_serial_consistency(Some(scl(s)));
    }
    Ok(bound)
}

/// A logged batch of `statements` at `consistency` (conditional when `serial` is set), with
/// their values.
async fn batch(
    session: &Session,
    st: &Statements,
    statements: Vec<(Statement, Vec<Value<'_>>)>,
    consistency: Level,
    serial: Option<SerialConsistency>,
) -> Result<(Batch, Vec<Vec<CqlValue>>), Failure> {
    let mut batch = Batch::new(BatchType::Logged);
    let mut values = Vec::with_capacity(statements.len());
    for (statement, v) in statements {
        batch.append_statement(st.get(session, statement).await?.clone());
        values.push(cql_values(v));
    }
    batch.set_consistency(cl(consistency));
    // A conditional batch is not idempotent: the kernel settles a failed one itself.
    batch.set_is_idempotent(serial.is_none());
    if let Some(serial) = serial {
        batch.set_serial_consistency(Some(scl(serial)));
    }
    Ok((batch, values))
}

/// The rows of a result, as the operation reads them (none for a write).
fn rows(result: QueryResult) -> Result<Rows, Failure> {
    if !result.is_rows() {
        return Ok(Rows::default());
    }
    let bad = |e: &dyn std::fmt::Display| {
        Failure::Rejected(format!("unexpected result from Cassandra: {e}"))
    };
    let result = result.into_rows_result().map_err(|e| bad(&e))?;
    let columns = result
        .column_specs()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let mut out = Vec::with_capacity(result.rows_num());
    for row in result.rows::<scylla::value::Row>().map_err(|e| bad(&e))? {
        let row = row.map_err(|e| bad(&e))?;
        out.push(
            row.columns
                .into_iter()
                .map(|v| {
                    v.map(|v| match v {
                        CqlValue::Text(s) | CqlValue::Ascii(s) => Val::Text(s),
                        CqlValue::Int(i) => Val::Int(i),
                        CqlValue::BigInt(i) => Val::BigInt(i),
                        CqlValue::Boolean(b) => Val::Boolean(b),
                        _ => Val::Other,
                    })
                })
                .collect(),
        );
    }
    Ok(Rows { columns, rows: out })
}

/// Executes `command` on `session`, with `stamp` as the timestamp of a plain write (a fresh
/// one when `None`). Returns the reply.
pub(crate) async fn execute(
    session: &Session,
    st: &Statements,
    levels: &Levels,
    command: &Command,
    stamp: Option<u64>,
) -> Reply {
    match run_stamped(session, st, levels, command, false, stamp).await {
        Ok((reply, _)) => reply,
        Err(f) => Reply::Failed(f),
    }
}

/// Executes `command`, optionally traced; also returns the driver's last result when traced
/// (for tracing ids).
pub(crate) async fn run(
    session: &Session,
    st: &Statements,
    levels: &Levels,
    command: &Command,
    trace: bool,
) -> Result<(Reply, Option<QueryResult>), Failure> {
    run_stamped(session, st, levels, command, trace, None).await
}

/// [`run`], with `given` as the timestamp of a plain write instead of a fresh stamp.
async fn run_stamped(
    session: &Session,
    st: &Statements,
    levels: &Levels,
    command: &Command,
    trace: bool,
    given: Option<u64>,
) -> Result<(Reply, Option<QueryResult>), Failure> {
    let mut op = operation(command, st, levels, given)?;
    let mut last = None;
    // A scan's statement and values, and where its next page starts.
    let mut scan: Option<(PreparedStatement, Vec<CqlValue>, PagingState)> = None;
    loop {
        match op.step() {
            Step::Execute {
                statement,
                values,
                consistency,
                serial,
            } => {
                let mut bound = bound(session, st, statement, values, consistency, serial).await?;
                bound.set_tracing(trace);
                let result = session
                    .execute_bound_unpaged(&bound)
                    .await
                    .map_err(|e| failure(&e))?;
                if trace {
                    last = Some(result.clone());
                }
                op.rows(rows(result)?);
            }
            Step::Batch {
                statements,
                consistency,
                serial,
            } => {
                let (batch, values) = batch(session, st, statements, consistency, serial).await?;
                let result = session
                    .batch(&batch, values)
                    .await
                    .map_err(|e| failure(&e))?;
                if trace {
                    last = Some(result.clone());
                }
                op.rows(rows(result)?);
            }
            Step::Scan {
                statement,
                values,
                consistency,
                page_size,
            } => {
                let mut paged = st.get(session, statement).await?.clone();
                paged.set_consistency(cl(consistency));
                paged.set_page_size(page_size);
                scan = Some((paged, cql_values(values), PagingState::start()));
                page(session, &mut op, &mut scan).await?;
            }
            Step::NextPage => page(session, &mut op, &mut scan).await?,
            Step::Reply(reply) => return Ok((reply, last)),
        }
    }
}

/// Fetches the scan's next page into `op`.
async fn page(
    session: &Session,
    op: &mut Operation<'_>,
    scan: &mut Option<(PreparedStatement, Vec<CqlValue>, PagingState)>,
) -> Result<(), Failure> {
    let Some((statement, values, paging)) = scan.as_mut() else {
        return Err(Failure::Rejected(String::from(
            "internal error: a next page was asked for before the scan started",
        )));
    };
    let (result, next) = session
        .execute_single_page(&*statement, &*values, paging.clone())
        .await
        .map_err(|e| failure(&e))?;
    let last = match next {
        PagingStateResponse::HasMorePages { state } => {
            *paging = state;
            false
        }
        PagingStateResponse::NoMorePages => true,
    };
    op.page(rows(result)?, last);
    Ok(())
}

/// Executes the statement of `command` and returns the driver's raw result, undecoded: the
/// floor the benchmark compares the full path against (`None` for commands without a single
/// statement or batch).
pub(crate) async fn execute_raw(
    session: &Session,
    st: &Statements,
    levels: &Levels,
    command: &Command,
) -> Result<Option<QueryResult>, ExecutionError> {
    let Ok(mut op) = operation(command, st, levels, None) else {
        return Ok(None);
    };
    match op.step() {
        Step::Execute {
            statement,
            values,
            consistency,
            serial,
        } => match bound(session, st, statement, values, consistency, serial).await {
            Ok(bound) => session.execute_bound_unpaged(&bound).await.map(Some),
            Err(_) => Ok(None),
        },
        Step::Batch {
            statements,
            consistency,
            serial,
        } => match batch(session, st, statements, consistency, serial).await {
            Ok((batch, values)) => session.batch(&batch, values).await.map(Some),
            Err(_) => Ok(None),
        },
        _ => Ok(None),
    }
}
