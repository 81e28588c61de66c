//! Process plumbing for `baton run`: the job's process group, the signals baton forwards to it,
//! and exit statuses as shells report them.
//!
//! The job runs in a process group of its own, so one `killpg` reaches the command and whatever
//! it started (a shell script's children too), and a terminal's Ctrl-C reaches it once, through
//! baton, instead of twice.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::exit::{CliError, OS_ERROR};

/// A process group: the job's, whose id is the job's pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group(Pid);

impl Group {
    /// The group led by the process `pid` (spawned with `process_group(0)`).
    pub fn led_by(pid: u32) -> Option<Group> {
        i32::try_from(pid)
            .ok()
            .filter(|&p| p > 1)
            .map(|p| Group(Pid::from_raw(p)))
    }

    /// The group's id.
    pub fn id(self) -> i32 {
        self.0.as_raw()
    }

    /// Sends `sig` to every process of the group; false if the group is gone.
    pub fn signal(self, sig: Signal) -> bool {
        killpg(self.0, sig).is_ok()
    }

    /// Whether any process of the group is still running. On Linux, zombies do not count: an
    /// orphan whose new parent (a container's init, say) never reaps it still answers `kill`,
    /// but it runs nothing. Elsewhere any answer to `kill(-pgid, 0)` counts.
    pub fn is_alive(self) -> bool {
        if let Some(running) = running_members(self.id()) {
            return running > 0;
        }
        match killpg(self.0, None) {
            Ok(()) => true,
            Err(e) => e != Errno::ESRCH,
        }
    }

    /// Waits until the group is gone or `deadline` passes, polling with a growing interval;
    /// returns whether it is gone. Used for processes baton cannot `wait` for (they are not
    /// its children).
    pub async fn wait_gone(self, deadline: Instant) -> bool {
        let mut interval = Duration::from_millis(2);
        loop {
            if !self.is_alive() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            tokio::time::sleep(interval.min(deadline - now)).await;
            interval = (interval * 2).min(Duration::from_millis(100));
        }
    }

    /// SIGTERM, then SIGKILL if the group is still there after `grace`; returns whether it is
    /// gone at the end (it waits up to a second after SIGKILL).
    pub async fn terminate(self, grace: Duration) -> bool {
        if !self.signal(Signal::SIGTERM) {
            return true;
        }
        if self.wait_gone(Instant::now() + grace).await {
            return true;
        }
        self.signal(Signal::SIGKILL);
        self.wait_gone(Instant::now() + Duration::from_secs(1))
            .await
    }
}

/// How many processes of group `pgid` are running (not zombies), from `/proc`; `None` where
/// there is no `/proc` to read.
fn running_members(pgid: i32) -> Option<usize> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut running = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // A process may exit between listing and reading: then it is not running.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((state, group)) = parse_stat(&stat) {
            if group == pgid && !matches!(state, 'Z' | 'X' | 'x') {
                running += 1;
            }
        }
    }
    Some(running)
}

/// The state and process group of a `/proc/PID/stat` line: `pid (comm) state ppid pgrp …`,
/// where `comm` may itself contain spaces and parentheses (hence the last `)`).
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

/// The exit status a shell would report: the code, or 128 + the signal that killed it.
pub fn shell_status(status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        return u8::try_from(code & 0xff).unwrap_or(u8::MAX);
    }
    match status.signal() {
        Some(sig) => u8::try_from(128 + (sig & 0x7f)).unwrap_or(u8::MAX),
        None => u8::MAX,
    }
}

/// The signals `baton run` forwards to its job (after handling them itself: their default
/// action would kill baton and leave the lock to expire by TTL).
pub struct Forwarded {
    streams: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Forwarded {
    /// The forwarded signals: INT, TERM, HUP, QUIT, USR1, USR2.
    pub const SIGNALS: [Signal; 6] = [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
    ];

    /// Installs the handlers (from now on these signals no longer kill baton).
    pub fn install() -> Result<Forwarded, CliError> {
        let mut streams = Vec::new();
        for sig in Self::SIGNALS {
            let stream = signal(SignalKind::from_raw(sig as i32))
                .map_err(|e| CliError::new(OS_ERROR, format!("cannot handle signal {sig}: {e}")))?;
            streams.push((sig, stream));
        }
        Ok(Forwarded { streams })
    }

    /// The next signal received.
    pub async fn recv(&mut self) -> Signal {
        std::future::poll_fn(|cx| {
            for (sig, stream) in &mut self.streams {
                if stream.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*sig);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Whether a signal asks the receiver to stop (as opposed to USR1/USR2).
pub fn is_terminating(sig: Signal) -> bool {
    matches!(
        sig,
        Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_shell() {
        assert_eq!(shell_status(ExitStatus::from_raw(0)), 0);
        assert_eq!(shell_status(ExitStatus::from_raw(3 << 8)), 3);
        // Killed by SIGTERM (15): a raw wait status of 15.
        assert_eq!(shell_status(ExitStatus::from_raw(15)), 143);
        assert_eq!(shell_status(ExitStatus::from_raw(9)), 137);
    }

    #[test]
    fn proc_stat_lines_parse_even_with_odd_names() {
        assert_eq!(
            parse_stat("4242 (sh) S 4241 4242 4242 0 -1"),
            Some(('S', 4242))
        );
        assert_eq!(parse_stat("77 (a) b (c)) Z 1 70 70 0"), Some(('Z', 70)));
        assert_eq!(parse_stat("garbage"), None);
        // This test's own group is running.
        let own = std::fs::read_to_string("/proc/self/stat").expect("linux");
        let (_, group) = parse_stat(&own).expect("parses");
        assert!(running_members(group).is_some_and(|n| n >= 1));
    }

    #[test]
    fn groups_are_never_init_or_everything() {
        assert_eq!(Group::led_by(0), None);
        assert_eq!(Group::led_by(1), None);
        assert_eq!(Group::led_by(u32::MAX), None);
        assert_eq!(Group::led_by(4242).map(Group::id), Some(4242));
    }
}
