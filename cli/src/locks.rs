//! The operator's subcommands: `baton locks`, `baton purge` and `baton release --force`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::baton_kernel::{LockName, OwnerId};
use baton::{EntryState, LockInfo, Locker, LockerBuilder, Strategy};
use serde::Serialize;

use crate::args::{LocksArgs, PurgeArgs, ReleaseArgs};
use crate::duration::human;
use crate::exit::{CliError, OK};
use crate::output::{print, print_json, table, Progress, Style};
use crate::store;

/// One entry of `baton locks --json`.
#[derive(Debug, Serialize)]
struct LockJson {
    name: String,
    strategy: &'static str,
    mode: String,
    state: &'static str,
    owner: String,
    host: Option<String>,
    pid: Option<u32>,
    token: Option<u64>,
    ticket: Option<u64>,
    column: String,
    created_unix_ms: Option<u64>,
    age_ms: Option<u64>,
    expires_in_ms: Option<u64>,
}

impl LockJson {
    fn new(info: &LockInfo) -> Self {
        let (host, pid) = owner_parts(&info.owner);
        LockJson {
            name: info.name.clone(),
            strategy: info.strategy.as_str(),
            mode: mode_text(info),
            state: info.state.as_str(),
            owner: info.owner.clone(),
            host,
            pid,
            token: info.token,
            ticket: info.ticket,
            column: info.column.clone(),
            created_unix_ms: info.created_unix_ms,
            age_ms: age(info).map(millis),
            expires_in_ms: info.expires_in.map(millis),
        }
    }
}

/// `exclusive`, `shared`, `counted(3)`; `?` for a mode this version cannot read.
fn mode_text(info: &LockInfo) -> String {
    info.mode
        .map_or_else(|| String::from("?"), |m| m.to_string())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The host and pid of an owner id (`host:pid:nonce`); `None`s for a custom column-prefix lock
/// id, which says neither.
pub fn owner_parts(owner: &str) -> (Option<String>, Option<u32>) {
    match OwnerId::parse(owner) {
        Ok(id) => (Some(id.host().to_owned()), Some(id.pid())),
        Err(_) => (None, None),
    }
}

/// How long ago an entry was written, by the writer's wall clock against ours (informational).
fn age(info: &LockInfo) -> Option<Duration> {
    let created = info.created_unix_ms?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(millis)?;
    Some(Duration::from_millis(now.saturating_sub(created)))
}

/// "web-1 pid 4242" (or the raw owner when it is not a baton owner id).
fn holder_text(info: &LockInfo) -> String {
    match owner_parts(&info.owner) {
        (Some(host), Some(pid)) => format!("{host} pid {pid}"),
        _ => info.owner.clone(),
    }
}

/// One line about an entry: "held by web-1 pid 4242 for 3m (token 12, expires in 57s)".
fn entry_text(info: &LockInfo) -> String {
    let mut details = Vec::new();
    if let Some(token) = info.token {
        details.push(format!("token {token}"));
    }
    if let Some(ticket) = info.ticket {
        details.push(format!("ticket {ticket}"));
    }
    if let Some(expires) = info.expires_in {
        details.push(format!("expires in {}", human(expires)));
    }
    let since = age(info)
        .map(|a| format!(" for {}", human(a)))
        .unwrap_or_default();
    let details = if details.is_empty() {
        String::new()
    } else {
        format!(" ({})", details.join(", "))
    };
    format!(
        "{} by {}{since}{details}",
        info.state.as_str(),
        holder_text(info)
    )
}

/// Who holds `name` (and who waits), for messages about a busy lock; `None` if that cannot be
/// read or nobody does.
pub async fn describe_holders(locker: &Locker, name: &str, strategy: Strategy) -> Option<String> {
    let entries = locker.inspect_with(name, strategy).await.ok()?;
    let held: Vec<String> = entries
        .iter()
        .filter(|e| e.state == EntryState::Held)
        .map(entry_text)
        .collect();
    let others = entries.len() - held.len();
    let mut text = held.join("; ");
    if others > 0 {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!(
            "{others} other entr{}",
            if others == 1 { "y" } else { "ies" }
        ));
    }
    (!text.is_empty()).then_some(text)
}

/// Every live entry of the store's table, read a page at a time, with the rows and entries
/// read so far on a terminal's standard error when the listing takes a moment (a table of
/// 100 000 locks takes seconds).
async fn list_with_progress(locker: &Locker) -> Result<Vec<LockInfo>, CliError> {
    let mut pages = locker.list_pages();
    let mut progress = Progress::stderr();
    let (mut rows, mut entries) = (0usize, Vec::new());
    while let Some(page) = pages
        .next()
        .await
        .map_err(|e| CliError::from_baton("cannot list locks", &e))?
    {
        rows += page.rows;
        entries.extend(page.entries);
        progress.show(|| {
            format!(
                "listing {}: {rows} rows read, {} live entries so far",
                locker.store().describe(),
                entries.len()
            )
        });
    }
    progress.clear();
    Ok(entries)
}

/// Runs `work` with, on a terminal, a line saying it runs (`what`) and for how long, once it
/// has taken a moment: for a step the store does in one go (a purge of a whole table).
async fn with_progress<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    let mut progress = Progress::stderr();
    let mut work = std::pin::pin!(work);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
    loop {
        tokio::select! {
            out = &mut work => {
                progress.clear();
                return out;
            }
            _ = tick.tick() => {
                let secs = progress.elapsed_secs();
                progress.show(|| format!("{what}: {secs} s"));
            }
        }
    }
}

/// `baton locks`.
pub async fn locks(store_url: &str, args: &LocksArgs) -> Result<u8, CliError> {
    let locker = match &args.consistency {
        Some(level) => store::open(&store::with_read_level(store_url, level)?)?,
        None => store::open(store_url)?,
    };
    let mut entries = list_with_progress(&locker).await?;
    entries.sort_by(|a, b| (&a.name, a.ticket, &a.column).cmp(&(&b.name, b.ticket, &b.column)));
    if args.json {
        let locks: Vec<LockJson> = entries.iter().map(LockJson::new).collect();
        print_json(&serde_json::json!({ "locks": locks }))?;
        return Ok(OK);
    }
    if entries.is_empty() {
        print(&format!("no live locks in {}\n", locker.store().describe()))?;
        return Ok(OK);
    }
    let dash = || String::from("-");
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let (host, pid) = owner_parts(&e.owner);
            vec![
                e.name.clone(),
                e.strategy.as_str().to_owned(),
                mode_text(e),
                e.state.as_str().to_owned(),
                host.unwrap_or_else(|| e.owner.clone()),
                pid.map_or_else(dash, |p| p.to_string()),
                age(e).map_or_else(dash, human),
                e.expires_in.map_or_else(dash, human),
                e.token.map_or_else(dash, |t| t.to_string()),
            ]
        })
        .collect();
    let style = Style::stdout();
    print(&table(
        style,
        &[
            "NAME",
            "STRATEGY",
            "MODE",
            "STATE",
            "HOST",
            "PID",
            "AGE",
            "EXPIRES IN",
            "TOKEN",
        ],
        &rows,
    ))?;
    Ok(OK)
}

/// `baton purge`.
pub async fn purge(store_url: &str, args: &PurgeArgs) -> Result<u8, CliError> {
    let locker = store::open(store_url)?;
    if let Some(name) = &args.lock {
        LockName::new(name).map_err(|e| CliError::from_baton("bad --lock", &e))?;
    }
    let strategy = args.strategy.unwrap_or(locker.defaults().strategy);
    let what = format!(
        "purging expired entries of {} in {}",
        args.lock.as_deref().map_or_else(
            || String::from("every lock"),
            |name| format!("lock {name:?}")
        ),
        locker.store().describe()
    );
    let mut removed = with_progress(&what, locker.purge_with(args.lock.as_deref(), strategy))
        .await
        .map_err(|e| CliError::from_baton("cannot purge expired locks", &e))?;
    removed.sort();
    if args.json {
        let removed: Vec<_> = removed
            .iter()
            .map(|(name, column)| serde_json::json!({ "name": name, "column": column }))
            .collect();
        print_json(&serde_json::json!({ "removed": removed }))?;
        return Ok(OK);
    }
    if removed.is_empty() {
        print("nothing to purge: no expired entries\n")?;
        return Ok(OK);
    }
    let count = removed.len();
    let mut text = format!(
        "removed {count} expired entr{}:\n",
        if count == 1 { "y" } else { "ies" }
    );
    let rows: Vec<Vec<String>> = removed
        .into_iter()
        .map(|(name, column)| vec![name, column])
        .collect();
    text.push_str(&table(Style::stdout(), &["NAME", "COLUMN"], &rows));
    print(&text)?;
    Ok(OK)
}

/// `baton release --force NAME`.
pub async fn release(store_url: &str, args: &ReleaseArgs) -> Result<u8, CliError> {
    if !args.force {
        return Err(CliError::usage(format!(
            "releasing lock {:?} breaks it whoever holds it, so it needs --force",
            args.name
        ))
        .hint(format!(
            "run `baton release --force {}`; its holder's `baton run` then stops its command and exits 70",
            shell_word(&args.name)
        )));
    }
    LockName::new(&args.name).map_err(|e| CliError::from_baton("bad lock name", &e))?;
    let locker = store::open(store_url)?;
    let locker_for = |strategy: Strategy| {
        if args.paths {
            LockerBuilder::new(std::sync::Arc::clone(locker.store()))
                .strategy(strategy)
                .paths(true)
                .build()
                .map_err(|e| CliError::from_baton("bad --paths", &e))
        } else {
            Ok(locker.clone())
        }
    };
    let strategies: Vec<Strategy> = match args.strategy {
        Some(s) => vec![s],
        None => {
            // The strategy its entries show (one read of its row, as `baton locks` decodes it;
            // the locker's own strategy only has to allow paths).
            let mut found = Vec::new();
            let entries = locker_for(Strategy::ColumnPrefix)?
                .inspect_any(&args.name)
                .await
                .map_err(|e| {
                    CliError::from_baton(&format!("cannot read lock {:?}", args.name), &e)
                })?;
            for entry in entries {
                if !found.contains(&entry.strategy) {
                    found.push(entry.strategy);
                }
            }
            found
        }
    };
    let mut released = Vec::new();
    for strategy in strategies {
        let locker = locker_for(strategy)?;
        let entries = match &args.holder {
            Some(owner) => {
                locker
                    .force_release_holder(&args.name, strategy, owner)
                    .await
            }
            None => locker.force_release_with(&args.name, strategy).await,
        }
        .map_err(|e| CliError::from_baton(&format!("cannot release lock {:?}", args.name), &e))?;
        released.extend(entries);
    }
    if args.json {
        let entries: Vec<LockJson> = released.iter().map(LockJson::new).collect();
        print_json(&serde_json::json!({ "name": args.name, "released": entries }))?;
        return Ok(OK);
    }
    if released.is_empty() {
        print(&format!(
            "lock {:?} is not held: nothing to release\n",
            args.name
        ))?;
        return Ok(OK);
    }
    let style = Style::stdout();
    let mut text = String::new();
    for entry in &released {
        text.push_str(&format!(
            "{} lock {:?} ({}): it was {}\n",
            style.green("released"),
            args.name,
            entry.strategy,
            entry_text(entry)
        ));
    }
    text.push_str("its holder finds out at its next renewal (`baton run` then stops its command and exits 70); the next holder's token is larger\n");
    print(&text)?;
    Ok(OK)
}

/// `name` quoted for a shell command line when it needs it.
fn shell_word(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:@".contains(c))
    {
        name.to_owned()
    } else {
        format!("'{}'", name.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(owner: &str) -> LockInfo {
        LockInfo {
            name: String::from("nightly-digest"),
            strategy: Strategy::UniqueInsert,
            column: String::from("lock"),
            owner: owner.to_owned(),
            state: EntryState::Held,
            token: Some(12),
            ticket: None,
            created_unix_ms: None,
            acquisition: 0,
            mode: Some(baton::Mode::Exclusive),
            value: format!("owner={owner} ttl_ms=60000 cell_ttl_ms=60000 created_ms=0"),
            expires_in: Some(Duration::from_secs(57)),
        }
    }

    #[test]
    fn entries_read_like_sentences() {
        let owner = OwnerId::new("web-1", 4242, 7).expect("valid").key();
        assert_eq!(
            entry_text(&info(&owner)),
            "held by web-1 pid 4242 (token 12, expires in 57s)"
        );
        assert_eq!(owner_parts("worker-7"), (None, None));
        assert_eq!(
            entry_text(&info("worker-7")),
            "held by worker-7 (token 12, expires in 57s)"
        );
    }

    #[test]
    fn names_are_quoted_for_the_shell_when_needed() {
        assert_eq!(shell_word("nightly-digest"), "nightly-digest");
        assert_eq!(shell_word("digest 42"), "'digest 42'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
