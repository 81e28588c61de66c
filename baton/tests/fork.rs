//! Guards and forked children: a guard dropped in a child process must not release (or even
//! touch the runtime of) the parent's lock, and the blocking API must work again in a child.
//!
//! This is the one place in the crate with `unsafe` code: fork(2), waitpid(2) and _exit(2).

#![cfg(unix)]
#![allow(unsafe_code)]

use std::fs::OpenOptions;
use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton::{Command, EntryState, LockRequest, Locker, MemoryStore, Store, StoreFuture, Strategy};
use tokio::sync::watch;

/// A memory store that writes down every command a process other than the parent sends it.
/// The child's copy of the table is its own after fork, so the table cannot show what the
/// child did; this log (a file, shared across processes) can.
struct ProbeStore {
    inner: MemoryStore,
    parent: u32,
    log: PathBuf,
}

impl Store for ProbeStore {
    fn execute(&self, command: Command) -> StoreFuture<'_> {
        if std::process::id() != self.parent {
            if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(&self.log) {
                let _ = writeln!(file, "pid {}: {command:?}", std::process::id());
            }
        }
        self.inner.execute(command)
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn describe(&self) -> String {
        String::from("fork probe store")
    }
}

/// Makes the tests of this file fork one at a time. fork(2) copies only the calling thread: a
/// lock another test's thread held at that instant (the blocking API's runtime slot, say)
/// would stay held in the child for ever. That is POSIX's rule for forking a threaded
/// process, which applications that fork follow too (fork before starting threads, or while
/// no other thread is inside the library).
fn forking_alone() -> std::sync::MutexGuard<'static, ()> {
    static FORKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    FORKING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Forks; returns the child's pid in the parent and `None` in the child.
fn fork() -> Option<libc::pid_t> {
    // SAFETY: the child only drops guards or uses the blocking API (both made for this) and
    // then leaves through `exit_child`, skipping destructors and atexit handlers that belong
    // to the parent.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    (pid != 0).then_some(pid)
}

/// Ends the child: status 0 if `work` returned true, 1 if it returned false or panicked.
fn exit_child(work: impl FnOnce() -> bool) -> ! {
    let ok = catch_unwind(AssertUnwindSafe(work)).unwrap_or(false);
    // SAFETY: _exit never returns and is async-signal-safe.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

/// Waits for the child and returns its exit status; kills it if it hangs for 10 s.
fn wait_for(pid: libc::pid_t) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid out-pointer.
        let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(reaped >= 0, "waitpid failed");
        if reaped == pid {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: kills and reaps our own hung child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the child hung (did it touch the parent's runtime?)");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(libc::WIFEXITED(status), "child died: status {status}");
    libc::WEXITSTATUS(status)
}

#[test]
fn guards_dropped_in_a_forked_child_leave_the_parents_locks_alone() {
    let _alone = forking_alone();
    let parent = std::process::id();
    let log = std::env::temp_dir().join(format!("baton-fork-probe-{parent}.log"));
    let _ = std::fs::remove_file(&log);
    let locker = Locker::new(ProbeStore {
        inner: MemoryStore::new(),
        parent,
        log: log.clone(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("runtime");
    for strategy in Strategy::ALL {
        let request = || LockRequest::new().strategy(strategy);
        let mut guard = runtime
            .block_on(locker.lock_with("async", request()))
            .expect("lock");
        let mut blocking_guard = locker
            .blocking()
            .lock_with("blocking", request())
            .expect("blocking lock");

        let Some(child) = fork() else {
            exit_child(move || {
                // Releasing or renewing the parent's lock is refused, touching nothing.
                let mut blocking_guard = blocking_guard;
                let refused =
                    |r: baton::Result<()>| r.is_err_and(|e| e.kind() == baton::ErrorKind::NotOwner);
                let refused = refused(blocking_guard.release()) && refused(blocking_guard.renew());
                drop(guard);
                drop(blocking_guard);
                refused
            })
        };
        let status = wait_for(child);
        assert_eq!(status, 0, "{strategy}: the child failed");
        let child_commands = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(child_commands, "", "{strategy}: the child sent commands");

        for (name, owner) in [
            ("async", guard.lease().owner().key()),
            ("blocking", blocking_guard.lease().owner().key()),
        ] {
            let infos = runtime
                .block_on(locker.inspect_with(name, strategy))
                .expect("inspect");
            assert_eq!(infos.len(), 1, "{strategy}: {infos:?}");
            assert_eq!(infos[0].owner, owner, "{strategy}");
            assert_eq!(infos[0].state, EntryState::Held, "{strategy}");
        }
        assert!(guard.is_held() && blocking_guard.is_held(), "{strategy}");
        runtime.block_on(guard.release()).expect("release");
        blocking_guard.release().expect("release");
    }
    let _ = std::fs::remove_file(&log);
}

#[test]
fn a_forked_child_opens_a_locker_of_its_own_and_the_parents_refuses() {
    let _alone = forking_alone();
    let locker = Locker::open("memory:").expect("memory").blocking();
    // The parent builds the process-wide runtime; the child inherits it without its thread.
    drop(locker.lock("parent").expect("lock"));
    let parent = std::process::id();
    let Some(child) = fork() else {
        exit_child(move || {
            // The parent's locker: its store and bookkeeping are the parent's.
            let wrong = |e: baton::Error| {
                e.kind() == baton::ErrorKind::WrongContext
                    && e.to_string()
                        .contains(&format!("opened by process {parent}"))
            };
            let refused = locker.lock("child").err().is_some_and(wrong)
                && locker.inspect("parent").err().is_some_and(wrong);
            let Ok(own) = Locker::open("memory:").map(|l| l.blocking()) else {
                return false;
            };
            let Ok(mut guard) = own.lock("child") else {
                return false;
            };
            // Timers and the keep-alive task need a live runtime, not the parent's husk.
            refused
                && guard.is_held()
                && guard.wait_lost(Duration::from_millis(20)) == Ok(false)
                && guard.renew().is_ok()
                && guard.release().is_ok()
        })
    };
    let status = wait_for(child);
    assert_eq!(
        status, 0,
        "the child's own locker failed, or the parent's did not refuse"
    );
    // The parent's locker is still the parent's.
    drop(locker.lock("after").expect("lock in the parent"));
}
