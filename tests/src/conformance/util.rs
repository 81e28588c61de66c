//! Helpers of the behaviours: bounded waits and a store wrapper that counts commands.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton::{Command, ErrorKind, Failure, Locker, LockerBuilder, Reply, Store, StoreFuture};
use baton_kernel::Turn;
use tokio::sync::watch;

/// `future`'s output, or a panic naming `what` if it takes longer than `limit`. The limit is
/// only there so a broken store fails a test instead of hanging it: pick it generously.
pub async fn within<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(limit, future).await {
        Ok(output) => output,
        Err(_) => panic!("{what} did not finish within {limit:?}"),
    }
}

/// Polls `condition` every few milliseconds until it holds, or panics naming `what` after
/// `limit`.
pub async fn wait_until(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not happen within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Builds the locker and makes its first round trip (connecting, and creating or checking the
/// table) before a behaviour starts measuring: connection setup is not what the suite tests, and
/// on a loaded machine it can take seconds (PostgreSQL's SCRAM login costs a few hundred
/// milliseconds of CPU per connection in a debug build). A store that stays unavailable for a
/// minute fails the test.
pub async fn ready(builder: LockerBuilder) -> Locker {
    let locker = builder.build().expect("valid options");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match locker.inspect("warm-up").await {
            Ok(_) => return locker,
            Err(e)
                if e.kind() == ErrorKind::StoreUnavailable
                    && tokio::time::Instant::now() < deadline =>
            {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "baton-tests: a new client's first command failed, retrying: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("a new client cannot use the store: {e}"),
        }
    }
}

/// The text of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        String::from("(a panic without a message)")
    }
}

/// A store that forwards to another and counts the commands it was given, so a test can wait
/// until a client has tried (and found a lock held) without sleeping.
#[derive(Clone, Debug)]
pub struct CountingStore {
    inner: Arc<dyn Store>,
    executed: Arc<AtomicU64>,
    by_kind: Arc<Mutex<BTreeMap<(&'static str, &'static str), u64>>>,
}

impl CountingStore {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        CountingStore {
            inner,
            executed: Arc::new(AtomicU64::new(0)),
            by_kind: Arc::default(),
        }
    }

    /// Commands executed so far.
    pub fn executed(&self) -> u64 {
        self.executed.load(Ordering::SeqCst)
    }

    /// Commands answered so far, by the command's kind and the reply's (`CompareAndSet
    /// Conditional(applied)`, `Claim Guarded(refused)`, `Read Failed(Timeout)`, ...): where a
    /// client's commands went.
    pub fn answered_by_kind(&self) -> BTreeMap<String, u64> {
        let by_kind = self.by_kind.lock().map(|m| m.clone()).unwrap_or_default();
        by_kind
            .into_iter()
            .map(|((command, reply), n)| (format!("{command} {reply}"), n))
            .collect()
    }
}

/// A command's kind, for [`CountingStore::answered_by_kind`].
fn command_kind(command: &Command) -> &'static str {
    match command {
        Command::Read { .. } => "Read",
        Command::Put { .. } => "Put",
        Command::Delete { .. } => "Delete",
        Command::Vacate { .. } => "Vacate",
        Command::DeleteVersion { .. } => "DeleteVersion",
        Command::InsertIfAbsent { .. } => "InsertIfAbsent",
        Command::CompareAndSet { .. } => "CompareAndSet",
        Command::Claim { turn: None, .. } => "Claim",
        Command::Claim {
            turn: Some(Turn::Free),
            ..
        } => "Claim(turn free)",
        Command::Claim {
            turn: Some(Turn::Ours(_)),
            ..
        } => "Claim(turn ours)",
        Command::GuardedSet { .. } => "GuardedSet",
        Command::Batch { .. } => "Batch",
        Command::SetObject { .. } => "SetObject",
        Command::Purge { .. } => "Purge",
        Command::Scan { .. } => "Scan",
        _ => "another command",
    }
}

/// A reply's kind, one level in for a failure (`Failed(Timeout)`); a refused claim's by what
/// refused it (`expected`: the counter the claim expected): the lock held, the counter moved,
/// or else the turn (the lock free and the counter as expected).
fn reply_kind(reply: &Reply, expected: Option<&Option<String>>) -> &'static str {
    match reply {
        Reply::Guarded {
            applied: false,
            current,
            guard,
        } if expected.is_some() => match (current, expected) {
            (Some(_), _) => "Guarded(refused: held)",
            (None, Some(expected)) if guard != expected => "Guarded(refused: counter moved)",
            _ => "Guarded(refused: turn)",
        },
        Reply::Cells(_) => "Cells",
        Reply::Written => "Written",
        Reply::Conditional { applied: true, .. } => "Conditional(applied)",
        Reply::Conditional { .. } => "Conditional(refused)",
        Reply::Guarded { applied: true, .. } => "Guarded(applied)",
        Reply::Guarded { .. } => "Guarded(refused)",
        Reply::Object { .. } => "Object",
        Reply::Purged(_) => "Purged",
        Reply::Rows(_) => "Rows",
        Reply::Failed(Failure::Unavailable(_)) => "Failed(Unavailable)",
        Reply::Failed(Failure::Timeout(_)) => "Failed(Timeout)",
        Reply::Failed(Failure::Rejected(_)) => "Failed(Rejected)",
        Reply::Failed(Failure::NotApplied(_)) => "Failed(NotApplied)",
        _ => "another reply",
    }
}

impl Store for CountingStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        self.executed.fetch_add(1, Ordering::SeqCst);
        let kind = command_kind(&command);
        let expected = match &command {
            Command::Claim {
                counter_expected, ..
            } => Some(counter_expected.clone()),
            _ => None,
        };
        let reply = self.inner.execute(command);
        Box::pin(async move {
            let reply = reply.await;
            if let Ok(mut by_kind) = self.by_kind.lock() {
                *by_kind
                    .entry((kind, reply_kind(&reply, expected.as_ref())))
                    .or_default() += 1;
            }
            reply
        })
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn waiting(&self) {
        self.inner.waiting()
    }

    fn honours_turns(&self) -> bool {
        self.inner.honours_turns()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}
