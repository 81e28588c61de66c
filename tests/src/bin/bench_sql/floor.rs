//! The floor: the storage commands of one lock+release, recorded from a locker ([`Recorder`])
//! and replayed straight to `Store::execute` with fresh values ([`Replay`]), without the kernel
//! or the host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use baton::{Command, Reply, Store, StoreFuture, Write};
use tokio::sync::watch;

/// Commands with the replies they got, when each was handed to the store and how long the
/// store took.
pub(crate) type Log = Vec<(Command, Reply, Instant, Duration)>;

/// A store that forwards to another and, while recording, keeps each command and its reply.
#[derive(Clone)]
pub(crate) struct Recorder {
    inner: Arc<dyn Store>,
    log: Arc<Mutex<Option<Log>>>,
}

impl Recorder {
    /// Forwards to `inner`, recording nothing until [`Recorder::start`].
    pub(crate) fn new(inner: Arc<dyn Store>) -> Recorder {
        Recorder {
            inner,
            log: Arc::new(Mutex::new(None)),
        }
    }

    /// The store it forwards to (for commands that must not be recorded).
    pub(crate) fn store(&self) -> &dyn Store {
        &*self.inner
    }

    pub(crate) fn start(&self) {
        *self.slot() = Some(Vec::new());
    }

    pub(crate) fn stop(&self) -> Log {
        self.slot().take().unwrap_or_default()
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Log>> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for Recorder {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        Box::pin(async move {
            let recording = self.slot().is_some();
            let copy = recording.then(|| command.clone());
            let started = Instant::now();
            let reply = self.inner.execute(command).await;
            let took = started.elapsed();
            if let Some(command) = copy {
                if let Some(log) = self.slot().as_mut() {
                    log.push((command, reply.clone(), started, took));
                }
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

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Replays a captured command sequence with fresh values each iteration, chaining every
/// compare-and-set to the value the replay itself wrote last, so conditionals apply exactly as
/// they did when captured.
pub(crate) struct Replay {
    template: Vec<(Command, Reply)>,
    /// The value each `(row, column)` holds now, as far as the replay knows.
    last: HashMap<(String, String), String>,
}

impl Replay {
    pub(crate) fn new(template: Vec<(Command, Reply)>) -> Replay {
        let mut replay = Replay {
            template: Vec::new(),
            last: HashMap::new(),
        };
        // The table holds what the captured sequence left behind.
        for (command, _) in &template {
            replay.note(command);
        }
        replay.template = template;
        replay
    }

    /// What the replay knows each `(row, column)` holds now.
    pub(crate) fn known(&self) -> HashMap<(String, String), String> {
        self.last.clone()
    }

    /// Compare-and-sets that put every cell the template compare-and-sets without a TTL (the
    /// fencing counter) back to its value in `to`, where the replay changed it; noted as
    /// applied.
    pub(crate) fn restore(&mut self, to: &HashMap<(String, String), String>) -> Vec<Command> {
        let mut out = Vec::new();
        let mut restored = std::collections::HashSet::new();
        for (command, _) in &self.template {
            let counter = match command {
                Command::CompareAndSet {
                    row,
                    column,
                    ttl: None,
                    serial,
                    consistency,
                    ..
                } => Some((row, column, serial, consistency)),
                Command::Claim {
                    row,
                    counter,
                    serial,
                    consistency,
                    ..
                } => Some((row, counter, serial, consistency)),
                _ => None,
            };
            if let Some((row, column, serial, consistency)) = counter {
                let key = (row.clone(), column.clone());
                if let (Some(now), Some(then)) = (self.last.get(&key), to.get(&key)) {
                    if now != then && restored.insert(key.clone()) {
                        out.push(Command::CompareAndSet {
                            row: row.clone(),
                            column: column.clone(),
                            expected: now.clone(),
                            new: Some(then.clone()),
                            ttl: None,
                            serial: *serial,
                            consistency: *consistency,
                        });
                    }
                }
            }
        }
        for command in &out {
            self.note(command);
        }
        out
    }

    /// Tracks the values `command` writes.
    pub(crate) fn note(&mut self, command: &Command) {
        match command {
            Command::Put {
                row, column, value, ..
            }
            | Command::InsertIfAbsent {
                row, column, value, ..
            } => {
                self.last
                    .insert((row.clone(), column.clone()), value.clone());
            }
            Command::CompareAndSet {
                row, column, new, ..
            }
            | Command::GuardedSet {
                row, column, new, ..
            } => match new {
                Some(v) => {
                    self.last.insert((row.clone(), column.clone()), v.clone());
                }
                None => {
                    self.last.remove(&(row.clone(), column.clone()));
                }
            },
            Command::Delete { row, column, .. } | Command::Vacate { row, column, .. } => {
                self.last.remove(&(row.clone(), column.clone()));
            }
            Command::Claim {
                row,
                column,
                value,
                counter,
                counter_next,
                ..
            } => {
                self.last
                    .insert((row.clone(), column.clone()), value.clone());
                self.last
                    .insert((row.clone(), counter.clone()), counter_next.clone());
            }
            Command::Batch { row, writes, .. } => {
                for w in writes {
                    match w {
                        Write::Put { column, value, .. } => {
                            self.last
                                .insert((row.clone(), column.clone()), value.clone());
                        }
                        Write::Delete { column } => {
                            self.last.remove(&(row.clone(), column.clone()));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The commands of iteration `i`, with the replies they should get.
    pub(crate) fn iteration(&mut self, i: u64) -> Vec<(Command, Reply)> {
        let fresh = |v: &str| format!("{v}#{i}");
        let mut out = Vec::with_capacity(self.template.len());
        for (command, reply) in self.template.clone() {
            let command = match command {
                Command::Put {
                    row,
                    column,
                    value,
                    ttl,
                    consistency,
                } => Command::Put {
                    value: fresh(&value),
                    row,
                    column,
                    ttl,
                    consistency,
                },
                Command::InsertIfAbsent {
                    row,
                    column,
                    value,
                    ttl,
                    serial,
                    consistency,
                } => Command::InsertIfAbsent {
                    value: fresh(&value),
                    row,
                    column,
                    ttl,
                    serial,
                    consistency,
                },
                Command::CompareAndSet {
                    row,
                    column,
                    expected,
                    new,
                    ttl,
                    serial,
                    consistency,
                } => Command::CompareAndSet {
                    expected: self
                        .last
                        .get(&(row.clone(), column.clone()))
                        .cloned()
                        .unwrap_or(expected),
                    new: new.as_deref().map(fresh),
                    row,
                    column,
                    ttl,
                    serial,
                    consistency,
                },
                Command::Claim {
                    row,
                    column,
                    value,
                    ttl,
                    counter,
                    counter_expected,
                    counter_next,
                    turn,
                    serial,
                    consistency,
                } => Command::Claim {
                    value: fresh(&value),
                    counter_expected: self
                        .last
                        .get(&(row.clone(), counter.clone()))
                        .cloned()
                        .or(counter_expected),
                    counter_next: fresh(&counter_next),
                    row,
                    column,
                    ttl,
                    counter,
                    turn,
                    serial,
                    consistency,
                },
                Command::GuardedSet {
                    row,
                    column,
                    expected,
                    new,
                    ttl,
                    guard,
                    guard_value,
                    serial,
                    consistency,
                } => Command::GuardedSet {
                    expected: self
                        .last
                        .get(&(row.clone(), column.clone()))
                        .cloned()
                        .unwrap_or(expected),
                    guard_value: self
                        .last
                        .get(&(row.clone(), guard.clone()))
                        .cloned()
                        .unwrap_or(guard_value),
                    new: new.as_deref().map(fresh),
                    row,
                    column,
                    ttl,
                    guard,
                    serial,
                    consistency,
                },
                Command::Batch {
                    row,
                    writes,
                    consistency,
                    after,
                } => Command::Batch {
                    after,
                    writes: writes
                        .into_iter()
                        .map(|w| match w {
                            Write::Put { column, value, ttl } => Write::Put {
                                value: fresh(&value),
                                column,
                                ttl,
                            },
                            other => other,
                        })
                        .collect(),
                    row,
                    consistency,
                },
                other => other,
            };
            self.note(&command);
            out.push((command, reply));
        }
        out
    }
}

/// Whether `got` is the same kind of reply as `want` (and, for conditionals, equally applied).
pub(crate) fn same_outcome(want: &Reply, got: &Reply) -> bool {
    match (want, got) {
        (Reply::Conditional { applied: a, .. }, Reply::Conditional { applied: b, .. })
        | (Reply::Guarded { applied: a, .. }, Reply::Guarded { applied: b, .. }) => a == b,
        (Reply::Failed(_), _) | (_, Reply::Failed(_)) => false,
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}
