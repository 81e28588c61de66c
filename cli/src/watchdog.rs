//! The watchdog: a second process that stops the job if `baton run` dies without stopping it.
//!
//! `baton run` can be killed outright (SIGKILL, the OOM killer); its lock then expires with its
//! TTL while the job, left behind, would go on running unprotected. So before starting the job,
//! baton starts this process (the same binary, hidden subcommand `__watchdog`) in a process
//! group of its own, holding the write end of a pipe to its standard input:
//!
//! 1. baton writes the job's process group id, one line;
//! 2. when the job has ended, baton writes `done` and closes the pipe: the watchdog exits;
//! 3. if the pipe closes without `done`, baton died: the watchdog sends the job's group
//!    SIGTERM, then SIGKILL after the grace period, while the dead baton's lease is still
//!    valid (it is renewed a third of the way through, so at least two thirds of the TTL are
//!    left when baton stops renewing).
//!
//! The pipe is close-on-exec, so the job cannot hold it open. Terminal signals do not reach the
//! watchdog (its own process group), and it ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::args::WatchdogArgs;
use crate::duration::human;
use crate::exit::{CliError, OK, OS_ERROR};
use crate::output::say;
use crate::process::{Forwarded, Group};

/// The `baton run` side: a started watchdog.
pub struct Watchdog {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Watchdog {
    /// Starts the watchdog (before the job, so a failure here leaves nothing running).
    pub fn start(grace: Duration) -> Result<Watchdog, CliError> {
        let exe = std::env::current_exe().map_err(|e| {
            CliError::new(
                OS_ERROR,
                format!("cannot find baton's own executable to start its watchdog: {e}"),
            )
        })?;
        let mut child = Command::new(&exe)
            .arg("__watchdog")
            .arg("--parent")
            .arg(std::process::id().to_string())
            .arg("--grace-ms")
            .arg(grace.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                CliError::new(
                    OS_ERROR,
                    format!("cannot start baton's watchdog ({}): {e}", exe.display()),
                )
            })?;
        let pipe = child.stdin.take();
        Ok(Watchdog { child, pipe })
    }

    /// Tells the watchdog which process group to stop if baton dies.
    pub async fn arm(&mut self, group: Group) -> Result<(), CliError> {
        self.send(&format!("{}\n", group.id())).await
    }

    /// The job has ended: the watchdog exits without doing anything.
    pub async fn disarm(mut self) {
        if self.send("done\n").await.is_err() {
            let _ = self.child.start_kill();
        }
        drop(self.pipe.take());
        match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(_) => {}
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
            }
        }
    }

    async fn send(&mut self, line: &str) -> Result<(), CliError> {
        let pipe = self
            .pipe
            .as_mut()
            .ok_or_else(|| CliError::new(OS_ERROR, "baton's watchdog has no pipe"))?;
        pipe.write_all(line.as_bytes())
            .await
            .and(pipe.flush().await)
            .map_err(|e| CliError::new(OS_ERROR, format!("cannot reach baton's watchdog: {e}")))
    }
}

/// The watchdog process itself (`baton __watchdog`).
pub async fn watch(args: &WatchdogArgs) -> Result<u8, CliError> {
    // Installed handlers replace the default action: these signals no longer stop us.
    let _ignored = Forwarded::install()?;
    let mut input = BufReader::new(tokio::io::stdin());
    let mut line = String::new();
    let group = match input.read_line(&mut line).await {
        Ok(0) | Err(_) => return Ok(OK),
        Ok(_) if line.trim() == "done" => return Ok(OK),
        Ok(_) => match line.trim().parse::<u32>().ok().and_then(Group::led_by) {
            Some(group) => group,
            None => return Ok(OK),
        },
    };
    loop {
        line.clear();
        match input.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) if line.trim() == "done" => return Ok(OK),
            Ok(_) => {}
        }
    }
    if !group.is_alive() {
        return Ok(OK);
    }
    let grace = Duration::from_millis(args.grace_ms);
    say(&format!(
        "baton (pid {}) ended without stopping its command; stopping the command's process group {} (SIGTERM, SIGKILL after {})",
        args.parent,
        group.id(),
        human(grace)
    ));
    group.terminate(grace).await;
    Ok(OK)
}
