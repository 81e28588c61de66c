//! `baton run`: acquire a lock, run a command under it, release when it ends.
//!
//! The sequence, and what each failure does:
//!
//! 1. Install handlers for the forwarded signals (so a Ctrl-C while waiting ends baton cleanly:
//!    status 128 + signal, nothing run).
//! 2. Acquire, waiting as asked. Busy or timed out: 75; store trouble: 69; bad options: 64.
//! 3. If the lease was granted with less than `--min-lease` left (a slow store: the lease counts
//!    from when the request was sent), renew it once; if that fails or still leaves too little,
//!    release and exit 69 without running the command. A job started on such a lease would only
//!    be stopped moments later.
//! 4. Start the [watchdog](crate::watchdog), then the command in its own process group, with
//!    `BATON_FENCING_TOKEN`, `BATON_LOCK` and `BATON_LEASE_LEFT_MS` in its environment. The
//!    guard's keep-alive renews the lease in the background all along.
//! 5. Wait for the command, forwarding signals to its group. If the lease is lost, the group
//!    gets SIGTERM, then SIGKILL after `--grace`, and baton exits 70 whatever the command
//!    returned.
//! 6. When the command has exited, stop anything it left in its group (nothing may outlive the
//!    lock), dismiss the watchdog, release the lock, and exit with the command's status.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use baton::{Error, ErrorKind, Guard, LockOptions, LockRequest, Locker, Mode, Wait};
use nix::sys::signal::Signal;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::args::{MinLease, RunArgs, WaitArg};
use crate::duration::human;
use crate::exit::{CliError, BUSY, CANNOT_EXECUTE, LOST, NOT_FOUND, OS_ERROR, UNAVAILABLE};
use crate::locks::describe_holders;
use crate::output::{say, warn};
use crate::process::{is_terminating, shell_status, Forwarded, Group};
use crate::store;
use crate::watchdog::Watchdog;

/// Environment variable carrying the fencing token to the command.
pub const TOKEN_VAR: &str = "BATON_FENCING_TOKEN";
/// Environment variable carrying the lock name to the command.
pub const LOCK_VAR: &str = "BATON_LOCK";
/// Environment variable carrying to the command how much lease was left when it started, in
/// milliseconds (at least `--min-lease`; the keep-alive renews it from then on).
pub const LEASE_LEFT_VAR: &str = "BATON_LEASE_LEFT_MS";

/// Runs `baton run`; returns the exit status.
pub async fn run(store_url: &str, args: &RunArgs) -> Result<u8, CliError> {
    let min_lease = min_lease(args)?;
    let mut signals = Forwarded::install()?;
    let locker = store::open(store_url)?;
    let wait = if args.no_wait {
        Wait::TryOnce
    } else {
        match args.wait {
            WaitArg::For(d) => Wait::Timeout(d),
            WaitArg::Forever => Wait::Timeout(Duration::MAX),
        }
    };
    let mode = match (args.shared, args.permits) {
        (_, Some(n)) => Mode::Counted(n),
        (true, None) => Mode::Shared,
        (false, None) => Mode::Exclusive,
    };
    let request = LockRequest::new()
        .strategy(args.strategy)
        .ttl(args.ttl)
        .wait(wait)
        .mode(mode)
        .paths(args.paths);
    let mut guard = match acquire(&locker, args, request, wait, &mut signals).await? {
        Ok(guard) => guard,
        Err(sig) => {
            say(&format!(
                "{sig} received while waiting for lock {:?}; the command was not run",
                args.lock
            ));
            return Ok(128 + sig as u8);
        }
    };

    match ensure_lease(&guard, args, min_lease, &mut signals).await {
        Ok(Ok(())) => {}
        Ok(Err(sig)) => {
            release_after_failure(&mut guard).await;
            say(&format!(
                "{sig} received while renewing the lease on lock {:?}; the command was not run",
                args.lock
            ));
            return Ok(128 + sig as u8);
        }
        Err(e) => {
            release_after_failure(&mut guard).await;
            return Err(e);
        }
    }

    let watchdog = match Watchdog::start(args.grace) {
        Ok(watchdog) => watchdog,
        Err(e) => {
            release_after_failure(&mut guard).await;
            return Err(e);
        }
    };
    let mut child = match spawn(&args.command, &guard) {
        Ok(child) => child,
        Err(e) => {
            watchdog.disarm().await;
            release_after_failure(&mut guard).await;
            return Err(e);
        }
    };
    let Some(group) = child.id().and_then(Group::led_by) else {
        // Not reachable in practice: a child just spawned has a pid.
        let _ = child.start_kill();
        let _ = child.wait().await;
        watchdog.disarm().await;
        release_after_failure(&mut guard).await;
        return Err(CliError::new(
            OS_ERROR,
            "the command started without a process id",
        ));
    };
    let mut watchdog = watchdog;
    if let Err(e) = watchdog.arm(group).await {
        warn(&format!(
            "{}; the command runs without a watchdog (if baton is killed, it is not stopped)",
            e.message
        ));
    }

    let ending = supervise(&mut child, group, &guard, &mut signals, args.grace).await;
    let (status, lost) = match ending {
        Ok(ending) => ending,
        Err(e) => {
            group.terminate(args.grace).await;
            watchdog.disarm().await;
            release_after_failure(&mut guard).await;
            return Err(e);
        }
    };
    if lost.is_some() {
        // The lease is gone: nothing of the job may go on, not even for a grace period.
        group.signal(Signal::SIGKILL);
        group
            .wait_gone(Instant::now() + Duration::from_secs(1))
            .await;
    } else if group.is_alive() {
        warn(&format!(
            "the command exited but left processes in its process group {}; stopping them before releasing the lock (SIGTERM, SIGKILL after {})",
            group.id(),
            human(args.grace)
        ));
        if !group.terminate(args.grace).await {
            warn(&format!(
                "processes of group {} are still there after SIGKILL",
                group.id()
            ));
        }
    }
    watchdog.disarm().await;

    let released = guard.release().await;
    let status = shell_status(status);
    if let Some(e) = lost {
        return Err(CliError::new(
            LOST,
            format!(
                "the lease on lock {:?} was lost while the command ran, so it was stopped (its status was {status}): {}",
                args.lock,
                e.message()
            ),
        )
        .hint(LOST_HINT));
    }
    match released {
        Ok(()) => Ok(status),
        Err(e) if e.kind() == ErrorKind::Lost => Err(CliError::new(
            LOST,
            format!(
                "the command finished (status {status}), but the lease on lock {:?} was found lost on release, so it may have run without the lock at the end: {}",
                args.lock,
                e.message()
            ),
        )
        .hint(LOST_HINT)),
        Err(e) => {
            warn(&format!(
                "could not release lock {:?}: {}; it expires by itself within {}",
                args.lock,
                e.message(),
                human(args.ttl)
            ));
            Ok(status)
        }
    }
}

/// The lease `--min-lease` asks for with `--ttl`; a usage error when no lease can have that much
/// left: a lease counts from when its request was sent, less a drift margin (1% of the TTL plus
/// 1 ms), so even a fresh one has less than its TTL.
fn min_lease(args: &RunArgs) -> Result<Duration, CliError> {
    let min = args.min_lease.of(args.ttl);
    let options = LockOptions {
        ttl: args.ttl,
        ..LockOptions::default()
    };
    let most = options.lease_validity();
    if min >= most {
        let asked = match args.min_lease {
            MinLease::Percent(_) => format!("{} ({})", args.min_lease, human(min)),
            MinLease::Left(_) => args.min_lease.to_string(),
        };
        return Err(CliError::usage(format!(
            "--min-lease {asked} is more than a lease can have left with --ttl {}: at most {} (the TTL less a margin for clock drift), less its request's round trip",
            human(args.ttl),
            human(most)
        ))
        .hint("use a smaller --min-lease (the default is 50%, 0% turns the check off) or a longer --ttl"));
    }
    Ok(min)
}

/// Before the command starts: if the lease has less than `min` left (it was granted late: under
/// faults a grant's reply can take most of the TTL), renews it once and checks again. Gives the
/// error to exit with when it still has too little, or the signal that interrupted the renewal.
///
/// One renewal, no more: its round trip measured the store as it is now, and a store too slow to
/// renew within `TTL - min` would most likely fail the keep-alive's next renewals too, stopping
/// the job soon after its start. Exiting 69 leaves the next run (cron's) to try again.
async fn ensure_lease(
    guard: &Guard,
    args: &RunArgs,
    min: Duration,
    signals: &mut Forwarded,
) -> Result<Result<(), Signal>, CliError> {
    let granted = guard.remaining();
    if granted >= min {
        return Ok(Ok(()));
    }
    tracing::info!(
        lock = %args.lock,
        left_ms = granted.as_millis(),
        min_ms = min.as_millis(),
        "lease granted with less than --min-lease left; renewing it before starting the command"
    );
    let renewal = tokio::select! {
        result = guard.renew() => result,
        // The deadline passed while the renewal was on its way.
        () = guard.lost() => Err(guard.loss().unwrap_or_else(|| Error::new(ErrorKind::Lost, "the lease ended"))),
        sig = signals.recv() => return Ok(Err(sig)),
    };
    let left = guard.remaining();
    if renewal.is_ok() && left >= min {
        tracing::info!(lock = %args.lock, left_ms = left.as_millis(), "lease renewed");
        return Ok(Ok(()));
    }
    let outcome = match renewal {
        Ok(()) => format!("a renewal left only {}", human(left)),
        Err(e) => format!("renewing it failed: {}", e.message()),
    };
    Err(CliError::new(
        UNAVAILABLE,
        format!(
            "lock {:?} was granted with only {} of its {} lease left (--min-lease {} asks for {}), and {outcome}; the command was not run",
            args.lock,
            human(granted),
            human(args.ttl),
            args.min_lease,
            human(min)
        ),
    )
    .hint("the store answers too slowly for this --ttl: check its health, or use a longer --ttl or a smaller --min-lease (0% starts the command whatever is left)"))
}

const LOST_HINT: &str = "another holder may have run meanwhile; if nobody broke the lock (baton release --force), check the store's health or use a longer --ttl";

/// Acquires the lock, or gives the signal that interrupted the wait. On a terminal, says who
/// holds the lock once the wait has lasted a second.
async fn acquire(
    locker: &Locker,
    args: &RunArgs,
    request: LockRequest,
    wait: Wait,
    signals: &mut Forwarded,
) -> Result<Result<Guard, Signal>, CliError> {
    let attempt = locker.lock_with(&args.lock, request);
    tokio::pin!(attempt);
    let mut notice_due = wait != Wait::TryOnce && std::io::stderr().is_terminal();
    let notice = tokio::time::sleep(Duration::from_secs(1));
    tokio::pin!(notice);
    let result = loop {
        tokio::select! {
            result = &mut attempt => break result,
            sig = signals.recv() => return Ok(Err(sig)),
            () = &mut notice, if notice_due => {
                notice_due = false;
                let holders = describe_holders(locker, &args.lock, args.strategy).await;
                let wait_text = match args.wait {
                    WaitArg::For(d) => format!("up to {}", human(d)),
                    WaitArg::Forever => String::from("until it is free"),
                };
                say(&format!("waiting {wait_text} for lock {:?}{}", args.lock, holders.map(|h| format!(", {h}")).unwrap_or_default()));
            }
        }
    };
    match result {
        Ok(guard) => Ok(Ok(guard)),
        Err(e) => Err(acquire_error(locker, args, &e).await),
    }
}

/// The error for a failed acquisition, naming the holder when the lock is busy.
async fn acquire_error(locker: &Locker, args: &RunArgs, e: &Error) -> CliError {
    match e.kind() {
        ErrorKind::Busy | ErrorKind::TimedOut => {
            let holder = describe_holders(locker, &args.lock, args.strategy)
                .await
                .map(|h| format!(": {h}"))
                .unwrap_or_default();
            let (message, hint) = if e.kind() == ErrorKind::Busy {
                (
                    format!("lock {:?} is busy{holder}; the command was not run", args.lock),
                    "this is exit status 75: try again later, wait for it with --wait DURATION, or see holders with `baton locks`",
                )
            } else {
                let waited = match args.wait {
                    WaitArg::For(d) => human(d),
                    WaitArg::Forever => String::from("ever"),
                };
                (
                    format!(
                        "timed out after {waited} waiting for lock {:?}{holder}; the command was not run",
                        args.lock
                    ),
                    "this is exit status 75: wait longer with --wait DURATION (or forever), or see holders with `baton locks`",
                )
            };
            CliError::new(BUSY, message).hint(hint)
        }
        _ => CliError::from_baton(&format!("cannot acquire lock {:?}", args.lock), e),
    }
}

/// Starts the command in its own process group, with its token and lock name.
fn spawn(command: &[OsString], guard: &Guard) -> Result<Child, CliError> {
    let Some((program, rest)) = command.split_first() else {
        return Err(CliError::usage("no command to run")
            .hint("put it after --: baton run --lock NAME -- COMMAND [ARGS]"));
    };
    Command::new(program)
        .args(rest)
        .env(TOKEN_VAR, guard.token().to_string())
        .env(LOCK_VAR, guard.name())
        .env(LEASE_LEFT_VAR, guard.remaining().as_millis().to_string())
        // From its own process group the command cannot read a terminal (it would be stopped
        // by SIGTTIN and never finish): on a terminal it reads end-of-file instead.
        .stdin(if std::io::stdin().is_terminal() {
            Stdio::null()
        } else {
            Stdio::inherit()
        })
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| {
            let shown = program.to_string_lossy();
            match e.kind() {
                std::io::ErrorKind::NotFound => CliError::new(
                    NOT_FOUND,
                    format!("cannot run {shown:?}: command not found"),
                )
                .hint("check the command's name and PATH (or give its full path)"),
                std::io::ErrorKind::PermissionDenied => CliError::new(
                    CANNOT_EXECUTE,
                    format!("cannot run {shown:?}: permission denied"),
                )
                .hint("make it executable (chmod +x) or run it through its interpreter"),
                _ => CliError::new(CANNOT_EXECUTE, format!("cannot run {shown:?}: {e}")),
            }
        })
}

/// Waits for the command to exit, forwarding signals, and stopping it if the lease is lost.
/// Returns its exit status and, if the lease was lost, why.
async fn supervise(
    child: &mut Child,
    group: Group,
    guard: &Guard,
    signals: &mut Forwarded,
    grace: Duration,
) -> Result<(ExitStatus, Option<Error>), CliError> {
    let mut lost: Option<Error> = None;
    let mut kill_at: Option<Instant> = None;
    loop {
        let kill_timer = tokio::time::sleep_until(kill_at.unwrap_or_else(far_future));
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(|e| CliError::new(OS_ERROR, format!("cannot wait for the command: {e}")))?;
                return Ok((status, lost));
            }
            () = guard.lost(), if lost.is_none() => {
                let why = guard.loss().unwrap_or_else(|| Error::new(ErrorKind::Lost, format!("the lease on lock {:?} ended", guard.name())));
                say(&format!(
                    "{} {}; sending SIGTERM to the command (SIGKILL in {})",
                    crate::output::Style::stderr().red("lease lost:"),
                    why.message(),
                    human(grace)
                ));
                group.signal(Signal::SIGTERM);
                kill_at = Some(Instant::now() + grace);
                lost = Some(why);
            }
            () = kill_timer, if kill_at.is_some() => {
                say(&format!("the command is still running {} after SIGTERM; sending SIGKILL", human(grace)));
                group.signal(Signal::SIGKILL);
                kill_at = None;
            }
            sig = signals.recv() => {
                if is_terminating(sig) {
                    say(&format!("{sig} received: passed to the command; the lock is released when it exits"));
                }
                group.signal(sig);
            }
        }
    }
}

/// An instant far enough away to stand for "never" in a timer that is switched off.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

/// Releases after a failure of baton's own (the command did not run): errors are only warned,
/// except a lost lease's (nothing was protected, and nothing is left to release).
async fn release_after_failure(guard: &mut Guard) {
    if let Err(e) = guard.release().await.or_else(|e| match e.kind() {
        ErrorKind::Lost => Ok(()),
        _ => Err(e),
    }) {
        warn(&format!(
            "could not release lock {:?}: {}; it expires by itself with its TTL",
            guard.name(),
            e.message()
        ));
    }
}
