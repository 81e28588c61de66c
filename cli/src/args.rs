//! The command line: subcommands, flags, their help and examples.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use baton::Strategy;
use clap::{Args, Parser, Subcommand};

use crate::duration;
use crate::exit::HELP_TABLE;

/// `baton`: run a job under a distributed lock, and look after lock tables.
#[derive(Debug, Parser)]
#[command(
    name = "baton",
    version,
    about = "Run a job under a distributed lock, so it runs at most once at a time across servers; list, purge and break locks",
    after_help = TOP_HELP,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// The lock store: sqlite:///path.db, postgres://…, mysql://… or memory:
    /// [default: a SQLite file at $XDG_DATA_HOME/baton/locks.db or ~/.local/share/baton/locks.db]
    #[arg(long, global = true, env = "BATON_STORE", value_name = "URL")]
    pub store: Option<String>,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

const TOP_HELP: &str = "\
Examples:
  baton demo                                    # workers take turns on one lock; a summary follows
  baton run --lock nightly-digest --no-wait -- /usr/local/bin/digest.sh
  baton locks                                   # who holds what, for how long
  baton release --force nightly-digest          # break a lock on purpose
  baton purge                                   # remove expired entries

Crontab: run the job on every server; at most one runs at a time:
  */5 * * * * baton run --lock nightly-digest --no-wait -- /usr/local/bin/digest.sh

Environment:
  BATON_STORE            the lock store URL, as --store
  BATON_LOG              library log level on stderr: error, warn, info, debug or trace
  NO_COLOR               when set (not empty), no colour in the output
  BATON_FENCING_TOKEN    set by `baton run` for the command: its fencing token
  BATON_LOCK             set by `baton run` for the command: the lock's name
  BATON_LEASE_LEFT_MS    set by `baton run` for the command: the lease left when it started, in ms

Exit status:
  See `baton run --help` for the table (75 lock busy, 69 store unavailable, 64 usage, 70 lease lost).";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Acquire a lock, run a command while keeping the lease alive, release when it ends.
    #[command(after_help = run_help())]
    Run(RunArgs),
    /// List live locks: name, strategy, holder's host and pid, age, time to expiry, token.
    #[command(after_help = LOCKS_HELP)]
    Locks(LocksArgs),
    /// Remove expired lock entries from the store and print what was removed.
    #[command(after_help = PURGE_HELP)]
    Purge(PurgeArgs),
    /// Move a SQL lock table made by an earlier version to one row per lock (faster), leaving
    /// held locks for a later run.
    #[command(after_help = MIGRATE_HELP)]
    Migrate(MigrateArgs),
    /// Break a lock on purpose (needs --force), saying whose it was.
    #[command(after_help = RELEASE_HELP)]
    Release(ReleaseArgs),
    /// Print a name's object (its value, exactly; or its version, or JSON).
    #[command(after_help = GET_HELP)]
    Get(GetArgs),
    /// Store standard input as a name's object: insert it, or update it at --version.
    #[command(after_help = PUT_HELP, disable_version_flag = true)]
    Put(PutArgs),
    /// Remove a name's object.
    #[command(after_help = REMOVE_HELP)]
    Remove(RemoveArgs),
    /// Start worker processes that contend for one lock, then summarize (overlaps must be 0).
    #[command(after_help = DEMO_HELP)]
    Demo(DemoArgs),
    /// Internal: watches a `baton run` and stops its command if baton dies.
    #[command(name = "__watchdog", hide = true)]
    Watchdog(WatchdogArgs),
    /// Internal: one worker of `baton demo`.
    #[command(name = "__demo-worker", hide = true)]
    DemoWorker(DemoWorkerArgs),
}

fn run_help() -> String {
    format!(
        "\
The command sees BATON_FENCING_TOKEN (its fencing token: larger than every earlier holder's),
BATON_LOCK (the lock name) and BATON_LEASE_LEFT_MS (the lease left when it started, in
milliseconds). It starts only with at least --min-lease of the lease left: a lock granted with
less (the store answered late) is renewed first, and if that fails or still leaves too little,
baton exits 69 without running the command. It runs in its own process group: SIGINT,
SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to baton are forwarded to that group, and the
lock is released once the command has ended. The lease is renewed in the background; if it is
lost (the store is unreachable for too long, or someone ran `baton release --force`), the
command's group gets SIGTERM, then SIGKILL after --grace, and baton exits 70. If baton itself is
killed, a watchdog process terminates the command the same way, so the command never outlives
the lock. For batch jobs: started from a terminal, the command reads end-of-file on its
standard input.

Examples:
  baton run --lock nightly-digest --no-wait -- /usr/local/bin/digest.sh
  baton run --lock deploy --wait 10m -- ./deploy.sh --env prod
  baton run --lock report --ttl 5m --strategy bakery -- sh -c 'echo token $BATON_FENCING_TOKEN'

{HELP_TABLE}"
    )
}

const LOCKS_HELP: &str = "\
Examples:
  baton locks
  baton locks --json | jq -r '.locks[].name'
  baton --store postgres://locks@db1/ops locks

Exit status: 0, 64 (bad store URL), 69 (store unavailable).";

const PURGE_HELP: &str = "\
Expired entries are invisible to lock operations already; purging only tidies the table
(DBIx::Locker's periodic purge). Fencing counters are kept, so tokens keep increasing.

Examples:
  baton purge
  baton purge --lock nightly-digest
  0 * * * * baton purge --json >> /var/log/baton-purge.log

Exit status: 0, 64 (bad store URL), 69 (store unavailable).";

const MIGRATE_HELP: &str = "\
A table made before its database's one-row layout keeps each lock's fencing counter in a row
of its own, so a lock and a release change two rows. This moves every counter into its lock's
row, one lock at a time, while clients keep working (each serves a lock in the layout it is
in), and marks the table one-row in the run that leaves no lock behind. Locks held during a
run (and rows another transaction holds) are left for the next: run it again once they are
released. Tokens keep increasing throughout. Every client of the table must run this version
of baton or later first (docs/one-row-claim.md, phase 2). Needs the right to alter the table
and make triggers.

Examples:
  baton --store postgres://locks@db1/ops migrate
  baton migrate --json

Exit status: 0 (the table is one-row), 64 (bad store URL, or not a SQL store), 69 (store
unavailable, or the table busy with a long transaction), 75 (locks left: run again).";

const RELEASE_HELP: &str = "\
The holder is not asked: its baton finds out at its next renewal, stops its command (SIGTERM,
then SIGKILL) and exits 70. Until then both may run: break a lock only when its holder is
known to be gone or stuck. The next holder's fencing token is still larger.

Examples:
  baton release --force nightly-digest
  baton release --force nightly-digest --json

Exit status: 0 (released, or it was not held), 64 (no --force, bad name or URL), 69 (store
unavailable).";

const DEMO_HELP: &str = "\
Each worker is this same program, run as a separate process; they take turns on one lock
and record when they entered and left it. The summary shows acquisitions per worker, the
overlaps seen (a marker file plus the recorded intervals: must be 0), whether fencing tokens
increased in the order the lock was granted, and the wait times. Uses the default store
unless --store is given (memory: cannot be shared between processes).

Examples:
  baton demo
  baton demo --workers 8 --rounds 10 --strategy bakery
  baton --store sqlite:///tmp/demo.db demo --json

Exit status: 0 (no overlap), 70 (an overlap was seen), 64, 69, 75 (a worker timed out).";

fn parse_strategy(text: &str) -> Result<Strategy, String> {
    text.parse::<Strategy>().map_err(|e| e.message().to_owned())
}

/// How long `baton run` waits for a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitArg {
    /// Up to this long.
    For(Duration),
    /// As long as it takes.
    Forever,
}

fn parse_wait(text: &str) -> Result<WaitArg, String> {
    match text.trim() {
        "forever" | "inf" | "infinity" => Ok(WaitArg::Forever),
        other => duration::parse(other).map(WaitArg::For),
    }
}

/// How much lease `baton run` wants left before it starts the command (`--min-lease`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MinLease {
    /// This percentage of the TTL, from 0 (no check) up to, not including, 100.
    Percent(f64),
    /// This long.
    Left(Duration),
}

impl MinLease {
    /// The lease left that this asks for, with `ttl`.
    pub fn of(self, ttl: Duration) -> Duration {
        match self {
            MinLease::Percent(percent) => ttl.mul_f64(percent / 100.0),
            MinLease::Left(d) => d,
        }
    }
}

impl std::fmt::Display for MinLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MinLease::Percent(percent) => write!(f, "{percent}%"),
            MinLease::Left(d) => f.write_str(&duration::human(*d)),
        }
    }
}

fn parse_min_lease(text: &str) -> Result<MinLease, String> {
    let s = text.trim();
    if let Some(number) = s.strip_suffix('%') {
        let percent: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| {
                format!("{s:?} is not a percentage, such as 50% (or 0% for no check)")
            })?;
        if percent < 0.0 || number.trim().starts_with('-') {
            return Err(format!(
                "{s:?} is negative; use a part of --ttl from 0% to under 100%"
            ));
        }
        if percent >= 100.0 {
            return Err(format!(
                "{s:?} is too much: a lease never has its whole TTL left (it counts from when the request was sent), so use under 100%, such as 50%"
            ));
        }
        return Ok(MinLease::Percent(percent));
    }
    if !s.is_empty() && s.parse::<f64>().is_ok() {
        return Err(format!(
            "{s:?} has no unit: write a part of --ttl, such as 50%, or a duration, such as 20s"
        ));
    }
    duration::parse(s)
        .map(MinLease::Left)
        .map_err(|e| format!("{e}; or a part of --ttl, such as 50%"))
}

/// `baton run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The lock's name (the same on every server that runs the job).
    #[arg(long, short = 'l', value_name = "NAME")]
    pub lock: String,

    /// Lease length: how long the lock outlives a baton that vanished without releasing
    /// (renewed every third of it while the command runs).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration::parse_positive)]
    pub ttl: Duration,

    /// How long to wait for a held lock: a duration (500ms, 30s, 5m, 2h) or `forever`.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_wait, conflicts_with = "no_wait")]
    pub wait: WaitArg,

    /// Do not wait: if the lock is held, exit 75 at once (the usual choice in a crontab).
    #[arg(long, short = 'n')]
    pub no_wait: bool,

    /// Lock algorithm: unique-insert, bakery or column-prefix. Every user of a lock name must
    /// use the same one.
    #[arg(long, value_name = "STRATEGY", default_value = "unique-insert", value_parser = parse_strategy)]
    pub strategy: Strategy,

    /// Take the lock shared (a reader): any number of --shared runs of the name at once, none
    /// beside a run without it. Needs --strategy bakery or column-prefix, on every run of the
    /// name (writers included).
    #[arg(long, conflicts_with = "permits")]
    pub shared: bool,

    /// Take one of N permits (a semaphore): at most N runs of the name at once. Every run of
    /// the name must give the same N, and --strategy bakery or column-prefix.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub permits: Option<u32>,

    /// The name is a dot-separated path: a lock on app.cache also excludes app and
    /// app.cache.users (when either side is exclusive), not app.db. Needs --strategy bakery or
    /// column-prefix, on every run of the tree.
    #[arg(long)]
    pub paths: bool,

    /// After SIGTERM (lease lost), how long the command has to exit before SIGKILL.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration::parse)]
    pub grace: Duration,

    /// Start the command only with at least this much lease left: a part of --ttl (50%) or a
    /// duration (20s). A lock granted with less (a slow store) is renewed first; if the renewal
    /// fails or still leaves too little, baton exits 69 without running the command. 0% turns
    /// the check off.
    #[arg(long, value_name = "PART", default_value = "50%", value_parser = parse_min_lease)]
    pub min_lease: MinLease,

    /// The command to run, and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<OsString>,
}

/// `baton locks`.
#[derive(Debug, Args)]
pub struct LocksArgs {
    /// Print JSON (one object with a `locks` array) instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Cassandra only: the consistency level of the listing's reads (one, quorum, local_quorum
    /// or all; default: the store URL's). `one` answers from a single replica:
    /// quicker on a loaded cluster, and it may miss a lock taken a moment ago or show one
    /// released a moment ago. The listing writes nothing, so this changes nothing for holders.
    #[arg(long, value_name = "LEVEL", value_parser = parse_read_level)]
    pub consistency: Option<String>,
}

/// The consistency levels `baton locks --consistency` takes: those of a Cassandra store URL.
pub const READ_LEVELS: [&str; 4] = ["one", "quorum", "local_quorum", "all"];

fn parse_read_level(text: &str) -> Result<String, String> {
    let level = text.trim().to_ascii_lowercase();
    if READ_LEVELS.contains(&level.as_str()) {
        Ok(level)
    } else {
        Err(format!(
            "unknown consistency level {text:?}: use one of {}",
            READ_LEVELS.join(", ")
        ))
    }
}

/// `baton migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Print JSON (moved, held, busy, conflicts, finished) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `baton purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// Purge only this lock (default: the whole table).
    #[arg(long, short = 'l', value_name = "NAME")]
    pub lock: Option<String>,

    /// With --lock: the strategy that lock uses (column-prefix also removes stale columns).
    #[arg(long, value_name = "STRATEGY", value_parser = parse_strategy, requires = "lock")]
    pub strategy: Option<Strategy>,

    /// Print JSON (one object with a `removed` array) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `baton release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The lock to break.
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Confirms breaking a lock someone else holds (required).
    #[arg(long)]
    pub force: bool,

    /// The lock's strategy (default: the one its entries in the store show).
    #[arg(long, value_name = "STRATEGY", value_parser = parse_strategy)]
    pub strategy: Option<Strategy>,

    /// The name is a path (its holders ran with --paths): break the entries on exactly that
    /// path, not those above or below it.
    #[arg(long)]
    pub paths: bool,

    /// Break only this holder (its owner as `baton locks --json` lists it, host:pid:nonce):
    /// one reader of a shared lock or one permit of a semaphore; the others keep holding.
    #[arg(long, value_name = "OWNER")]
    pub holder: Option<String>,

    /// Print JSON (one object with a `released` array) instead of text.
    #[arg(long)]
    pub json: bool,
}

const GET_HELP: &str = "\
An object is a value stored beside a lock, with a version that grows on every write
(ScaleOut StateServer's model; docs/objects.md). `baton get` writes the value to standard
output exactly as stored (bytes), and exits 66 when there is no object.

Examples:
  baton get config/feature-flags > flags.json
  v=$(baton get config/feature-flags --print-version)
  baton get config/feature-flags --json        # {name, version, value, value_base64}

Exit status: 0 found, 66 no such object, 75 (never for get), 69 store unavailable, 64 usage.";

const PUT_HELP: &str = "\
Reads the whole of standard input as the value. Without --version it inserts the object,
which must not exist (65 if it does). With --version V it replaces the value only if the
object is still at version V: an optimistic update, exit 65 if another client wrote it since
(read it again and retry), 66 if it is gone. While someone holds the name's lock the object is
not changed (75). Prints the new version.

Examples:
  baton put config/feature-flags < flags.json
  v=$(baton get config/feature-flags --print-version)
  jq '.beta = true' flags.json | baton put config/feature-flags --version \"$v\"

Exit status: 0 written, 65 changed since --version or already exists, 66 no such object,
75 the object is locked, 69 store unavailable, 64 usage (an empty value, a value too large).";

const REMOVE_HELP: &str = "\
Removes the object (its version is kept: inserted again, it goes on from there).

Exit status: 0 removed, 66 no such object, 75 the object is locked, 69 store unavailable.";

/// `baton get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The object's name (its lock's name).
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Print only the version (a decimal number and a newline).
    #[arg(long, conflicts_with = "json")]
    pub print_version: bool,

    /// Print JSON: {name, version, value (text, or null if not UTF-8), value_base64}.
    #[arg(long)]
    pub json: bool,

    /// The strategy of the name's lock (the one its holders use).
    #[arg(long, value_name = "STRATEGY", default_value = "unique-insert", value_parser = parse_strategy)]
    pub strategy: Strategy,
}

/// `baton put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// The object's name (its lock's name).
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Update only if the object is at this version (as `baton get --print-version` gave it).
    #[arg(long, value_name = "V")]
    pub version: Option<u64>,

    /// The strategy of the name's lock (the one its holders use).
    #[arg(long, value_name = "STRATEGY", default_value = "unique-insert", value_parser = parse_strategy)]
    pub strategy: Strategy,
}

/// `baton remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The object's name (its lock's name).
    #[arg(value_name = "NAME")]
    pub name: String,

    /// The strategy of the name's lock (the one its holders use).
    #[arg(long, value_name = "STRATEGY", default_value = "unique-insert", value_parser = parse_strategy)]
    pub strategy: Strategy,
}

/// `baton demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How many worker processes contend for the lock.
    #[arg(long, short = 'w', value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,

    /// How many times each worker takes the lock.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,

    /// How long a worker holds the lock each time.
    #[arg(long, value_name = "DURATION", default_value = "20ms", value_parser = duration::parse_positive)]
    pub hold: Duration,

    /// Lock algorithm: unique-insert, bakery or column-prefix.
    #[arg(long, value_name = "STRATEGY", default_value = "unique-insert", value_parser = parse_strategy)]
    pub strategy: Strategy,

    /// The lock the workers share.
    #[arg(long, short = 'l', value_name = "NAME", default_value = "baton-demo")]
    pub lock: String,

    /// Print the summary as JSON instead of a table (progress lines go to stderr).
    #[arg(long)]
    pub json: bool,
}

/// `baton __watchdog` (internal).
#[derive(Debug, Args)]
pub struct WatchdogArgs {
    /// The pid of the baton process watched.
    #[arg(long)]
    pub parent: u32,

    /// Grace between SIGTERM and SIGKILL, in milliseconds.
    #[arg(long)]
    pub grace_ms: u64,
}

/// `baton __demo-worker` (internal).
#[derive(Debug, Args)]
pub struct DemoWorkerArgs {
    /// The lock.
    #[arg(long)]
    pub lock: String,

    /// Rounds to run.
    #[arg(long)]
    pub rounds: u32,

    /// Hold time, in microseconds.
    #[arg(long)]
    pub hold_us: u64,

    /// Lock algorithm.
    #[arg(long, value_parser = parse_strategy)]
    pub strategy: Strategy,

    /// The marker file that exists while some worker is inside the lock.
    #[arg(long)]
    pub marker: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_the_command_after_its_flags() {
        let cli = Cli::try_parse_from([
            "baton",
            "run",
            "--lock",
            "x",
            "--no-wait",
            "--",
            "sh",
            "-c",
            "exit 3",
        ])
        .expect("valid");
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert!(run.no_wait);
        assert_eq!(run.command, ["sh", "-c", "exit 3"]);
        let cli = Cli::try_parse_from(["baton", "run", "-l", "x", "ls", "-la"]).expect("valid");
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.command, ["ls", "-la"]);
        assert_eq!(run.wait, WaitArg::For(Duration::from_secs(30)));
    }

    #[test]
    fn bad_values_name_the_problem() {
        let e = Cli::try_parse_from(["baton", "run", "--lock", "x", "--ttl", "5x", "true"])
            .expect_err("bad duration");
        assert!(e.to_string().contains("unknown unit"), "{e}");
        let e = Cli::try_parse_from(["baton", "run", "--lock", "x", "--strategy", "nope", "true"])
            .expect_err("bad strategy");
        assert!(e.to_string().contains("unknown strategy"), "{e}");
        let e = Cli::try_parse_from(["baton", "run", "--lock", "x", "--ttl", "0s", "true"])
            .expect_err("zero ttl");
        assert!(e.to_string().contains("zero"), "{e}");
    }

    #[test]
    fn min_lease_is_a_part_of_the_ttl_or_a_duration() {
        let ttl = Duration::from_secs(60);
        let cases = [
            ("50%", 30_000),
            ("0%", 0),
            ("99.5%", 59_700),
            ("20s", 20_000),
            ("0s", 0),
        ];
        for (text, ms) in cases {
            let min = parse_min_lease(text).expect(text);
            assert_eq!(min.of(ttl), Duration::from_millis(ms), "{text}");
        }
        assert_eq!(
            parse_min_lease("33.3%").expect("33.3%").to_string(),
            "33.3%"
        );
        assert_eq!(
            parse_min_lease("1m30s").expect("1m30s").to_string(),
            "1m30s"
        );
        for (text, needle) in [
            ("100%", "under 100%"),
            ("150%", "under 100%"),
            ("-5%", "negative"),
            ("-0%", "negative"),
            ("-5s", "negative"),
            ("half%", "not a percentage"),
            ("NaN%", "not a percentage"),
            ("50", "no unit"),
            ("0.5", "no unit"),
            ("half", "50%"),
            ("", "50%"),
        ] {
            let e = parse_min_lease(text).expect_err(text);
            assert!(e.contains(needle), "{text}: {e}");
        }
        let cli = Cli::try_parse_from(["baton", "run", "-l", "x", "true"]).expect("valid");
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.min_lease, MinLease::Percent(50.0));
    }
}
