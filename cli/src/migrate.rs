//! `baton migrate`: moves a two-row SQL lock table's fencing counters into its lock rows (the
//! one-row layout), name by name, leaving held names for a later run
//! ([`baton::SqlStore::migrate`]; `docs/one-row-claim.md`, phase 2).

use crate::args::MigrateArgs;
use crate::exit::{CliError, BUSY, OK, USAGE};
use crate::output::{print, print_json, Progress};
use crate::store;

/// `baton migrate`: 0 when the table is one-row (now or already), 75 when names were left
/// (held, or busy in another transaction, or to look at by hand): run it again later.
pub async fn migrate(store_url: &str, args: &MigrateArgs) -> Result<u8, CliError> {
    let locker = store::open(store_url)?;
    let Some(sql) = locker.sql_store() else {
        return Err(CliError::new(
            USAGE,
            format!(
                "baton migrate moves a SQL lock table to one row; {} is not one",
                locker.store().describe()
            ),
        ));
    };
    let mut progress = Progress::stderr();
    let report = sql
        .migrate(&mut |r| {
            progress.show(|| {
                format!(
                    "moving counters: {} moved, {} left so far",
                    r.moved,
                    r.held.len() + r.busy.len() + r.conflicts.len()
                )
            })
        })
        .await;
    progress.clear();
    let report = report.map_err(|e| CliError::from_baton("cannot move the lock table", &e))?;
    let status = if report.finished || report.already_one_row {
        OK
    } else {
        BUSY
    };
    if args.json {
        print_json(&serde_json::json!({
            "already_one_row": report.already_one_row,
            "moved": report.moved,
            "held": report.held,
            "busy": report.busy,
            "conflicts": report.conflicts,
            "finished": report.finished,
        }))?;
    } else {
        print(&format!("{}\n", report.summary()))?;
    }
    Ok(status)
}
