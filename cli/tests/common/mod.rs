//! Helpers for the `baton` command's tests: a private SQLite store per test, the built binary,
//! and waits for conditions with deadlines (never sleeps to let things settle).

#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The longest any condition is waited for before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// One test's world: a scratch directory and a SQLite store inside it.
pub struct World {
    pub dir: PathBuf,
    pub store: String,
}

impl World {
    /// A fresh directory and store, named after the test.
    pub fn new(test: &str) -> World {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "baton-cli-{test}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = format!("sqlite://{}", dir.join("locks.db").display());
        World { dir, store }
    }

    /// A path inside the scratch directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `baton --store <this world's store> ARGS`, with a clean environment for baton's own
    /// variables (no colour, no inherited store, a private HOME).
    pub fn baton(&self, args: &[&str]) -> Command {
        let mut cmd = bare_baton(&self.dir);
        cmd.arg("--store").arg(&self.store).args(args);
        cmd
    }

    /// Runs `baton ARGS` to completion.
    pub fn output(&self, args: &[&str]) -> Out {
        Out::of(self.baton(args).output().unwrap())
    }

    /// Starts `baton ARGS` in the background (killed when dropped).
    pub fn spawn(&self, args: &[&str]) -> Proc {
        Proc::spawn(self.baton(args))
    }

    /// Starts `baton run --lock LOCK -- sh -c SCRIPT` and waits until the script has started
    /// (it must `touch "$READY"`); `READY` and `DIR` are set for the script.
    pub fn hold(&self, lock: &str, extra: &[&str], script: &str) -> Proc {
        let ready = self.path(&format!("ready-{}", unique()));
        let mut args = vec!["run", "--lock", lock];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        let mut cmd = self.baton(&args);
        cmd.env("READY", &ready).env("DIR", &self.dir);
        let mut proc = Proc::spawn(cmd);
        proc.wait_for_file(&ready);
        proc
    }

    /// Holds `lock` until the file `release` appears.
    pub fn hold_until_file(&self, lock: &str, extra: &[&str], release: &Path) -> Proc {
        let script = format!(
            "touch \"$READY\"; while [ ! -e '{}' ]; do sleep 0.02; done",
            release.display()
        );
        self.hold(lock, extra, &script)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `baton` with baton's variables cleared and HOME/XDG_DATA_HOME under `home`.
pub fn bare_baton(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.env_remove("BATON_STORE")
        .env_remove("BATON_LOG")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

fn unique() -> u32 {
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A finished command's status and text.
#[derive(Debug)]
pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn of(output: Output) -> Out {
        Out {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts the exit status, showing the output if it differs.
    pub fn expect_code(&self, code: i32) -> &Out {
        assert_eq!(self.code, Some(code), "unexpected exit status; {self:#?}");
        self.expect_no_panic();
        self
    }

    /// Asserts stderr mentions `needle`.
    pub fn expect_stderr(&self, needle: &str) -> &Out {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}; {self:#?}"
        );
        self
    }

    /// Asserts stdout mentions `needle`.
    pub fn expect_stdout(&self, needle: &str) -> &Out {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}; {self:#?}"
        );
        self
    }

    /// Asserts no Rust panic or debug dump reached the user.
    pub fn expect_no_panic(&self) -> &Out {
        for text in [&self.stdout, &self.stderr] {
            assert!(
                !text.contains("panicked") && !text.contains("RUST_BACKTRACE"),
                "{self:#?}"
            );
        }
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}); {self:#?}"))
    }
}

/// A background process, killed and reaped when dropped.
pub struct Proc {
    pub child: Child,
    done: Option<ExitStatus>,
}

impl Proc {
    pub fn spawn(mut cmd: Command) -> Proc {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Proc { child, done: None }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `path` exists, failing if the process ends first or the deadline passes.
    pub fn wait_for_file(&mut self, path: &Path) {
        let start = Instant::now();
        while !path.exists() {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.done = Some(status);
                let out = self.take_output();
                panic!(
                    "process ended ({status}) before {} appeared; {out:#?}",
                    path.display()
                );
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{} did not appear in time",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends a signal (by name: TERM, INT, KILL) with kill(1).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    /// Waits for the process to end (within the deadline) and returns its output.
    pub fn finish(mut self) -> Out {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.done {
                break status;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("process did not end in time: {:#?}", self.take_output());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.done = Some(status);
        let mut out = self.take_output();
        out.code = status.code();
        out
    }

    fn take_output(&mut self) -> Out {
        use std::io::Read;
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut s) = self.child.stdout.take() {
            let _ = s.read_to_string(&mut stdout);
        }
        if let Some(mut s) = self.child.stderr.take() {
            let _ = s.read_to_string(&mut stderr);
        }
        Out {
            code: None,
            stdout,
            stderr,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.done.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until `condition` holds, failing after the deadline with `what`.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` is gone (or a zombie: it runs nothing).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z"),
    }
}

/// The names of live locks, from `baton locks --json`.
pub fn live_locks(world: &World) -> Vec<String> {
    let out = world.output(&["locks", "--json"]);
    out.expect_code(0);
    out.json()["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The store URL in `var`, or `None` (the test is skipped, and says so) when it is not set;
/// with `BATON_REQUIRE_SERVICES=1` a missing URL fails the test instead.
pub fn store_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("BATON_REQUIRE_SERVICES").as_deref() == Ok("1") => {
            panic!("{var} is not set, and BATON_REQUIRE_SERVICES=1 requires every store")
        }
        _ => {
            eprintln!("skipped: {var} is not set");
            None
        }
    }
}

/// A lock name starting with `prefix` that no earlier run used (the databases outlive a run).
pub fn fresh_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}
