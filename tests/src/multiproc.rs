//! Multi-process lock tests: the `lock_worker` binary's record format, starting workers, and
//! judging what they recorded.
//!
//! Each worker (`lock_worker sections …`) runs critical sections on one lock. In each, it
//! appends a [`Section`] to its own file (token, wall-clock nanoseconds on entry and on exit,
//! and whether its guard was still held at exit) and increments a counter kept in a plain file
//! that nothing but the lock protects. [`check`] then demands: every section ran while held,
//! the counter equals the number of sections (no lost update), no two sections overlap in
//! time, and tokens strictly increase with entry time.
//!
//! Wall-clock nanoseconds (`CLOCK_REALTIME`) compare across processes on one machine; the
//! clock is not stepped during a run on the test machines.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch, by the wall clock.
pub fn wall_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// One critical section as a worker recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// The fencing token of the lease.
    pub token: u64,
    /// Wall-clock nanoseconds just after the lock was granted.
    pub enter: u128,
    /// Wall-clock nanoseconds just before the lock was released.
    pub exit: u128,
    /// Whether the guard still held the lock at exit.
    pub held: bool,
}

impl Section {
    /// The line a worker appends: `token enter exit held`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {}\n",
            self.token,
            self.enter,
            self.exit,
            u8::from(self.held)
        )
    }

    /// Parses a line written by [`Section::line`].
    pub fn parse(line: &str) -> Result<Section, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [token, enter, exit, held] = fields[..] else {
            return Err(format!("malformed section line {line:?}"));
        };
        let bad = |what: &str| format!("malformed {what} in section line {line:?}");
        Ok(Section {
            token: token.parse().map_err(|_| bad("token"))?,
            enter: enter.parse().map_err(|_| bad("enter time"))?,
            exit: exit.parse().map_err(|_| bad("exit time"))?,
            held: match held {
                "1" => true,
                "0" => false,
                _ => return Err(bad("held flag")),
            },
        })
    }
}

/// What one worker reported on its last stdout line:
/// `done sections=N lock_errors=kind:count,… release_errors=kind:count,…`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerSummary {
    /// Sections completed.
    pub sections: u64,
    /// Failed lock attempts (which the worker retried), by error kind.
    pub lock_errors: BTreeMap<String, u64>,
    /// Failed releases, by error kind.
    pub release_errors: BTreeMap<String, u64>,
}

impl WorkerSummary {
    /// The summary line.
    pub fn line(&self) -> String {
        fn counts(m: &BTreeMap<String, u64>) -> String {
            if m.is_empty() {
                return String::from("-");
            }
            m.iter()
                .map(|(k, v)| format!("{k}:{v}"))
                .collect::<Vec<_>>()
                .join(",")
        }
        format!(
            "done sections={} lock_errors={} release_errors={}",
            self.sections,
            counts(&self.lock_errors),
            counts(&self.release_errors)
        )
    }

    /// Parses [`WorkerSummary::line`].
    pub fn parse(line: &str) -> Result<WorkerSummary, String> {
        let bad = || format!("malformed worker summary {line:?}");
        let rest = line.strip_prefix("done ").ok_or_else(bad)?;
        let mut summary = WorkerSummary::default();
        for field in rest.split_whitespace() {
            let (key, value) = field.split_once('=').ok_or_else(bad)?;
            match key {
                "sections" => summary.sections = value.parse().map_err(|_| bad())?,
                "lock_errors" | "release_errors" => {
                    let map = if key == "lock_errors" {
                        &mut summary.lock_errors
                    } else {
                        &mut summary.release_errors
                    };
                    if value != "-" {
                        for pair in value.split(',') {
                            let (kind, n) = pair.split_once(':').ok_or_else(bad)?;
                            map.insert(kind.to_owned(), n.parse().map_err(|_| bad())?);
                        }
                    }
                }
                _ => return Err(bad()),
            }
        }
        Ok(summary)
    }
}

/// How a multi-process run is set up.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The store URL, with its table.
    pub url: String,
    /// The strategy name (`unique-insert`, …).
    pub strategy: String,
    /// How many worker processes.
    pub workers: usize,
    /// Critical sections per worker.
    pub sections: u64,
    /// The lease TTL.
    pub ttl: Duration,
    /// How long the whole run may take before the workers are killed.
    pub limit: Duration,
}

/// A running set of workers and their files.
#[derive(Debug)]
pub struct Run {
    spec: RunSpec,
    dir: PathBuf,
    children: Vec<Child>,
    started: Instant,
}

/// What a finished run left behind.
#[derive(Debug)]
pub struct Outcome {
    /// Every section of every worker.
    pub sections: Vec<Section>,
    /// Each worker's summary.
    pub summaries: Vec<WorkerSummary>,
    /// The shared counter's final value.
    pub counter: u64,
    /// How long the run took.
    pub elapsed: Duration,
    /// The failed calls the workers reported on stderr (`<wall ns> lock|release failed after
    /// <duration>: <error>`).
    pub error_lines: Vec<String>,
}

impl Outcome {
    /// Every lock error kind over all workers, summed.
    pub fn lock_errors(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for s in &self.summaries {
            for (k, v) in &s.lock_errors {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all
    }

    /// Every release error kind over all workers, summed.
    pub fn release_errors(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for s in &self.summaries {
            for (k, v) in &s.release_errors {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} sections in {:.1?} ({:.0}/s), counter {}, lock errors {:?}, release errors {:?}",
            self.sections.len(),
            self.elapsed,
            self.sections.len() as f64 / self.elapsed.as_secs_f64().max(1e-9),
            self.counter,
            self.lock_errors(),
            self.release_errors()
        )
    }
}

impl Run {
    /// Starts `spec.workers` copies of `worker` (the `lock_worker` binary) on one lock.
    pub fn start(worker: &Path, spec: RunSpec) -> std::io::Result<Run> {
        let dir = std::env::temp_dir().join(format!(
            "baton-multiproc-{}",
            crate::conformance::target::unique_table()
        ));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("counter"), "0")?;
        let mut children = Vec::new();
        for i in 0..spec.workers {
            // Output goes to files, not pipes: a chatty worker can never block on a full pipe.
            let stdout = std::fs::File::create(dir.join(format!("worker-{i}.out")))?;
            let stderr = std::fs::File::create(dir.join(format!("worker-{i}.err")))?;
            let child = Command::new(worker)
                .arg("sections")
                .args(["--url", &spec.url])
                .args(["--strategy", &spec.strategy])
                .args(["--name", "shared"])
                .args(["--sections", &spec.sections.to_string()])
                .args(["--ttl-ms", &spec.ttl.as_millis().to_string()])
                .args(["--limit-s", &spec.limit.as_secs().to_string()])
                .arg("--out")
                .arg(dir.join(format!("worker-{i}.log")))
                .arg("--counter")
                .arg(dir.join("counter"))
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(stderr)
                .spawn();
            match child {
                Ok(c) => children.push(c),
                Err(e) => {
                    for mut c in children {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(e);
                }
            }
        }
        Ok(Run {
            spec,
            dir,
            children,
            started: Instant::now(),
        })
    }

    /// The directory holding the workers' files (the shared counter is `counter`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Critical sections recorded so far, over all workers (for tests that act mid-run).
    pub fn progress(&self) -> usize {
        (0..self.spec.workers)
            .map(|i| {
                std::fs::read_to_string(self.dir.join(format!("worker-{i}.log")))
                    .map(|s| s.lines().count())
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Failed calls the workers have reported on stderr so far (lines with ` failed after `).
    pub fn errors_reported(&self) -> usize {
        self.reported(" failed after ")
    }

    /// Failed lock calls the workers have reported on stderr so far (` lock failed after `).
    pub fn lock_errors_reported(&self) -> usize {
        self.reported(" lock failed after ")
    }

    fn reported(&self, marker: &str) -> usize {
        (0..self.spec.workers)
            .map(|i| {
                std::fs::read_to_string(self.dir.join(format!("worker-{i}.err")))
                    .map(|s| s.lines().filter(|l| l.contains(marker)).count())
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Waits for every worker (killing them all after the run's limit), then reads what they
    /// recorded. Errors describe the failed worker with its stderr.
    pub fn finish(mut self) -> Result<Outcome, String> {
        let deadline = self.started + self.spec.limit;
        let mut statuses: Vec<Option<ExitStatus>> = vec![None; self.children.len()];
        while statuses.iter().any(Option::is_none) {
            for (i, child) in self.children.iter_mut().enumerate() {
                if statuses[i].is_none() {
                    statuses[i] = child.try_wait().map_err(|e| e.to_string())?;
                }
            }
            if Instant::now() >= deadline {
                for child in &mut self.children {
                    let _ = child.kill();
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let elapsed = self.started.elapsed();
        let mut summaries = Vec::new();
        let mut sections = Vec::new();
        let mut error_lines = Vec::new();
        for (i, status) in statuses.into_iter().enumerate() {
            let read = |ext: &str| {
                std::fs::read_to_string(self.dir.join(format!("worker-{i}.{ext}")))
                    .unwrap_or_default()
            };
            let (stdout, stderr) = (read("out"), read("err"));
            error_lines.extend(
                stderr
                    .lines()
                    .filter(|l| l.contains(" failed after "))
                    .map(|l| format!("worker {i}: {l}")),
            );
            let status = status.expect("every worker has exited");
            let describe = |why: &str| {
                format!(
                    "worker {i} {why} (status {status}, after {elapsed:.1?} of a {:?} limit)\n--- stdout\n{}--- stderr\n{}",
                    self.spec.limit,
                    tail(&stdout, 20),
                    tail(&stderr, 40)
                )
            };
            if !status.success() {
                return Err(describe("failed"));
            }
            let last = stdout.lines().last().unwrap_or("");
            summaries.push(WorkerSummary::parse(last).map_err(|e| describe(&e))?);
            let log = std::fs::read_to_string(self.dir.join(format!("worker-{i}.log")))
                .map_err(|e| describe(&format!("left no readable log: {e}")))?;
            for line in log.lines() {
                sections.push(Section::parse(line).map_err(|e| describe(&e))?);
            }
        }
        let counter_text = std::fs::read_to_string(self.dir.join("counter"))
            .map_err(|e| format!("the shared counter file is unreadable: {e}"))?;
        let counter = counter_text
            .trim()
            .parse()
            .map_err(|_| format!("the shared counter file holds {counter_text:?}"))?;
        Ok(Outcome {
            sections,
            summaries,
            counter,
            elapsed,
            error_lines,
        })
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        for child in &mut self.children {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        if std::env::var_os("BATON_KEEP_WORKER_FILES").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("worker files kept in {}", self.dir.display());
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let mut out = all[all.len().saturating_sub(lines)..].join("\n");
    out.push('\n');
    out
}

/// Checks a run's sections: `expected` of them, all held at exit, the counter equal to
/// `expected`, no two overlapping in time, tokens strictly increasing with entry time.
/// Returns every violation found (up to a few of each kind), or nothing.
pub fn check(outcome: &Outcome, expected: u64) -> Vec<String> {
    let mut problems = Vec::new();
    let recorded = outcome.sections.len() as u64;
    if recorded != expected {
        problems.push(format!("{recorded} sections recorded, {expected} expected"));
    }
    if outcome.counter != recorded {
        problems.push(format!(
            "the shared counter is {} after {recorded} sections: updates were lost",
            outcome.counter
        ));
    }
    let unheld: Vec<_> = outcome.sections.iter().filter(|s| !s.held).collect();
    if !unheld.is_empty() {
        problems.push(format!(
            "{} sections ended after their lease was lost, e.g. {:?}",
            unheld.len(),
            &unheld[..unheld.len().min(3)]
        ));
    }
    let mut sorted = outcome.sections.clone();
    sorted.sort_by_key(|s| (s.enter, s.exit));
    let mut overlaps = 0;
    let mut disorder = 0;
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b.enter < a.exit {
            overlaps += 1;
            if overlaps <= 3 {
                problems.push(format!(
                    "sections overlap: token {} [{}, {}] and token {} [{}, {}] ({} ns of overlap)",
                    a.token,
                    a.enter,
                    a.exit,
                    b.token,
                    b.enter,
                    b.exit,
                    a.exit - b.enter
                ));
            }
        }
        if b.token <= a.token {
            disorder += 1;
            if disorder <= 3 {
                problems.push(format!(
                    "token {} entered at {} after token {} entered at {}: tokens must increase",
                    b.token, b.enter, a.token, a.enter
                ));
            }
        }
    }
    if overlaps > 3 {
        problems.push(format!("{overlaps} overlapping pairs in all"));
    }
    if disorder > 3 {
        problems.push(format!("{disorder} out-of-order tokens in all"));
    }
    problems
}
