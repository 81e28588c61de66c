//! The stores a JavaScript locker can use: the kernel's reference table inside the module
//! ([`memory`]), and a JavaScript SQL or CQL client behind an adapter object ([`sql`], [`cql`])
//! that runs the statements the statement layer decides, one step at a time.
//!
//! Every store counts the changes that may free a lock ([`Store::changes`]), so this module's
//! waiters retry at once instead of at the end of their backoff.

pub(crate) mod cql;
pub(crate) mod memory;
pub(crate) mod sql;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use baton_kernel::host::may_free_a_lock;
use baton_kernel::{Command, Failure, Reply};
use wasm_bindgen::JsValue;

use crate::js;
use crate::wake::{race, First, Watch};

/// Where commands go.
pub(crate) enum Backend {
    Memory(Rc<memory::Shared>),
    Sql(Box<sql::SqlHost>),
    Cql(cql::CqlHost),
}

/// A store as the host loop sees it.
pub(crate) struct Store {
    backend: Backend,
    changes: Rc<Watch>,
    description: String,
    /// The machine name the adapter gave, for owner ids.
    host: Option<String>,
}

impl Store {
    pub(crate) fn memory(shared: Rc<memory::Shared>) -> Store {
        let changes = Rc::clone(&shared.changes);
        Store {
            backend: Backend::Memory(shared),
            changes,
            description: String::from("memory"),
            host: None,
        }
    }

    pub(crate) fn adapter(backend: Backend, adapter: &JsValue) -> Store {
        let fallback = match backend {
            Backend::Sql(ref s) => s.dialect_name(),
            Backend::Cql(_) => "cassandra",
            Backend::Memory(_) => "memory",
        };
        Store {
            backend,
            changes: Rc::new(Watch::default()),
            description: js::string_field(adapter, "description")
                .unwrap_or_else(|| fallback.to_owned()),
            host: js::string_field(adapter, "host"),
        }
    }

    pub(crate) fn describe(&self) -> &str {
        &self.description
    }

    pub(crate) fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// The largest object value the store takes, in bytes ([`baton_statements::object_limit`]).
    pub(crate) fn max_object_bytes(&self) -> usize {
        match &self.backend {
            Backend::Sql(host) => baton_statements::object_limit(
                baton_statements::sql::Dialect::parse(host.dialect_name()),
            ),
            Backend::Memory(_) | Backend::Cql(_) => baton_statements::object_limit(None),
        }
    }

    pub(crate) fn changes(&self) -> &Watch {
        &self.changes
    }

    /// Executes `command`; a store failure is the reply's [`Reply::Failed`], never an abandoned
    /// command.
    pub(crate) async fn execute(self: Rc<Self>, command: Command) -> Reply {
        let reply = match &self.backend {
            Backend::Memory(shared) => shared.apply(&command),
            Backend::Sql(host) => host.execute(&command).await,
            Backend::Cql(host) => host.execute(&command).await,
        };
        if may_free_a_lock(&command, &reply) {
            self.changes.bump();
        }
        reply
    }
}

/// Runs `ensure` (the schema's creation or check) unless `ready` says it succeeded before, then
/// `run` (a command): a failure of either is the command's reply.
pub(crate) async fn schema_then(
    ready: &Cell<bool>,
    ensure: impl core::future::Future<Output = Result<(), Failure>>,
    run: impl core::future::Future<Output = Result<Reply, Failure>>,
) -> Reply {
    if !ready.get() {
        if let Err(f) = ensure.await {
            return Reply::Failed(f);
        }
        ready.set(true);
    }
    run.await.unwrap_or_else(Reply::Failed)
}

/// Checks that `adapter` has each of `methods` as a function: a store that lacks one is a
/// mistake to report when the locker is made, not at its first command.
pub(crate) fn require_methods(
    adapter: &JsValue,
    kind: &str,
    methods: &[&str],
) -> baton_kernel::Result<()> {
    for method in methods {
        if !js::field(adapter, method).is_some_and(|f| f.is_function()) {
            return Err(baton_kernel::Error::new(
                baton_kernel::ErrorKind::InvalidOption,
                format!("a {kind} store adapter needs a method {method}() (see the README, \"Bring your own client\")"),
            ));
        }
    }
    Ok(())
}

/// The write stamp of a command by the kernel's rule ([`next_stamp`](baton_kernel::host::next_stamp)):
/// wall-clock microseconds, above `floor` and above every stamp this module instance gave before.
pub(crate) fn next_stamp_after(floor: u64) -> u64 {
    thread_local!(static LAST: Cell<u64> = const { Cell::new(0) });
    let now = js::unix_ms().saturating_mul(1000);
    LAST.with(|last| {
        let stamp = baton_kernel::host::next_stamp(now, floor, last.get());
        last.set(stamp);
        stamp
    })
}

/// Why an adapter call did not give a value.
pub(crate) enum CallError {
    /// It threw or rejected with this.
    Thrown(JsValue),
    /// No answer within the store's command timeout (the statement may still run).
    TimedOut(Duration),
}

/// Calls `adapter[method](...args)`, giving up after `timeout`. Giving up does not stop the
/// statement: the kernel treats it as a command that may have been applied, and the stamps
/// make a late write harmless.
pub(crate) async fn call(
    adapter: &JsValue,
    method: &str,
    args: &[JsValue],
    timeout: Duration,
) -> Result<JsValue, CallError> {
    let mut reply = Box::pin(js::call(adapter, method, args));
    let mut timer = Box::pin(js::Sleep::for_duration(timeout));
    let mut never = Box::pin(core::future::pending::<()>());
    match race(Some(reply.as_mut()), timer.as_mut(), never.as_mut(), None).await {
        First::Reply(Ok(value)) => Ok(value),
        First::Reply(Err(thrown)) => Err(CallError::Thrown(thrown)),
        _ => Err(CallError::TimedOut(timeout)),
    }
}
