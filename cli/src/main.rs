//! `baton`: run a job under a distributed lock so it runs at most once at a time across
//! servers, and look after lock tables (list, purge, break locks).
//!
//! The subcommands live in their own modules: [`run`] (`baton run`), [`locks`] (`locks`,
//! `purge`, `release`), [`demo`]; [`watchdog`] keeps a job from outliving a killed baton.
//! [`exit`] documents the exit statuses.

#![forbid(unsafe_code)]

mod args;
mod demo;
mod duration;
mod exit;
mod locks;
mod migrate;
mod object;
mod output;
mod process;
mod run;
mod store;
mod watchdog;

use std::process::ExitCode;

use clap::error::ErrorKind as ClapErrorKind;
use clap::Parser;

use crate::args::{Cli, Command};
use crate::exit::{CliError, OS_ERROR, USAGE};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let status = match e.kind() {
                ClapErrorKind::DisplayHelp
                | ClapErrorKind::DisplayVersion
                | ClapErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => USAGE,
            };
            let _ = e.print();
            return ExitCode::from(status);
        }
    };
    init_logging();
    let status = match execute(&cli) {
        Ok(status) => status,
        Err(e) => {
            output::error(&e);
            e.status
        }
    };
    ExitCode::from(status)
}

/// Runs the chosen subcommand on a tokio runtime.
fn execute(cli: &Cli) -> Result<u8, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(OS_ERROR, format!("cannot start the async runtime: {e}")))?;
    // The store is resolved (and the default's directory created) only by subcommands that use it.
    let store = || store::resolve(cli.store.as_deref());
    runtime.block_on(async {
        match &cli.command {
            Command::Run(args) => run::run(&store()?, args).await,
            Command::Locks(args) => locks::locks(&store()?, args).await,
            Command::Purge(args) => locks::purge(&store()?, args).await,
            Command::Migrate(args) => migrate::migrate(&store()?, args).await,
            Command::Release(args) => locks::release(&store()?, args).await,
            Command::Get(args) => object::get(&store()?, args).await,
            Command::Put(args) => object::put(&store()?, args).await,
            Command::Remove(args) => object::remove(&store()?, args).await,
            Command::Demo(args) => demo::demo(&store()?, args).await,
            Command::DemoWorker(args) => demo::worker(&store()?, args).await,
            Command::Watchdog(args) => watchdog::watch(args).await,
        }
    })
}

/// Shows the library's logs on stderr when `BATON_LOG` names a level (error, warn, info, debug,
/// trace); silent otherwise, since baton reports what matters itself.
fn init_logging() {
    let Some(level) = std::env::var("BATON_LOG")
        .ok()
        .and_then(|l| l.trim().parse::<tracing::Level>().ok())
    else {
        return;
    };
    let ansi = output::Style::stderr();
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(ansi.is_coloured())
        .try_init();
}
