//! Which lock store to use: `--store URL`, else `BATON_STORE`, else a SQLite file in a per-user
//! data directory, so `baton` works from a fresh checkout with no configuration.
//!
//! The default file is `$XDG_DATA_HOME/baton/locks.db`, or `~/.local/share/baton/locks.db` when
//! `XDG_DATA_HOME` is unset or not absolute (the XDG base directory rules). Its directory is
//! created on first use. A SQLite file locks processes of one machine; to lock across servers,
//! point every server at one PostgreSQL or MySQL/MariaDB database or Cassandra cluster.

use std::path::PathBuf;

use baton::Locker;

use crate::exit::{CliError, CANT_CREATE, USAGE};

/// The store URL forms, for hints.
pub const URL_FORMS: &str = "sqlite:///absolute/path.db, postgres://user:password@host/db, mysql://user:password@host/db, cassandra://host1,host2/keyspace or memory:";

/// The default store's file: `$XDG_DATA_HOME/baton/locks.db` or `~/.local/share/baton/locks.db`.
pub fn default_path() -> Result<PathBuf, CliError> {
    let xdg = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let data = match xdg {
        Some(dir) => dir,
        None => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .ok_or_else(|| {
                    CliError::usage(
                        "no store given, and neither XDG_DATA_HOME nor HOME is set to find the default one",
                    )
                    .hint(format!("pass --store URL or set BATON_STORE ({URL_FORMS})"))
                })?;
            home.join(".local").join("share")
        }
    };
    Ok(data.join("baton").join("locks.db"))
}

/// The default store's URL, creating its directory.
pub fn default_url() -> Result<String, CliError> {
    let path = default_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::new(
                CANT_CREATE,
                format!(
                    "cannot create {} for the default lock store: {e}",
                    dir.display()
                ),
            )
            .hint(format!(
                "fix the directory's permissions, or pass --store URL / set BATON_STORE ({URL_FORMS})"
            ))
        })?;
    }
    let text = path.to_str().ok_or_else(|| {
        CliError::usage(format!(
            "the default store path {} is not valid UTF-8",
            path.display()
        ))
        .hint("pass --store URL or set BATON_STORE")
    })?;
    Ok(format!("sqlite://{text}"))
}

/// The store URL to use: the one given (`--store` or `BATON_STORE`, when not empty), else the
/// default.
pub fn resolve(given: Option<&str>) -> Result<String, CliError> {
    match given.map(str::trim).filter(|s| !s.is_empty()) {
        Some(url) => Ok(url.to_owned()),
        None => default_url(),
    }
}

/// A locker on the store `url` names. A URL baton cannot use is a usage error (64) that says
/// what the URL forms are.
pub fn open(url: &str) -> Result<Locker, CliError> {
    Locker::open(url).map_err(|e| {
        let status = crate::exit::status_of(e.kind());
        let error = CliError::new(status, format!("cannot open the lock store: {}", e.message()));
        if status == USAGE {
            error.hint(format!(
                "store URLs look like {URL_FORMS}; pass one with --store or BATON_STORE"
            ))
        } else {
            error.hint("check that the store is reachable, or choose another with --store URL (or BATON_STORE)")
        }
    })
}

/// `url` (a Cassandra store's) with its plain reads and writes at `level` (one of
/// [`READ_LEVELS`](crate::args::READ_LEVELS)): the URL's `consistency` replaced or added, and
/// for `one` also `allow_weak_consistency=true`, which the store asks for below a quorum. For a
/// command that only reads (`baton locks`). Another store's URL is a usage error: SQL stores
/// have no levels.
pub fn with_read_level(url: &str, level: &str) -> Result<String, CliError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if scheme.as_deref() != Some("cassandra") {
        return Err(CliError::usage(format!(
            "--consistency {level} applies to Cassandra stores only, not to {}",
            scheme.map_or_else(|| String::from("this store"), |s| format!("{s}:// stores"))
        ))
        .hint(
            "a SQL store answers every read from what it has committed; leave --consistency out",
        ));
    }
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let key = p.split_once('=').map_or(*p, |(k, _)| k);
            key != "consistency" && !(level == "one" && key == "allow_weak_consistency")
        })
        .map(String::from)
        .collect();
    params.push(format!("consistency={level}"));
    if level == "one" {
        params.push(String::from("allow_weak_consistency=true"));
    }
    Ok(format!("{base}?{}", params.join("&")))
}

/// Whether a store URL names a store that lives inside one process (useless across processes).
pub fn is_in_process(url: &str) -> bool {
    url.trim().to_ascii_lowercase().starts_with("memory:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_level_replaces_the_urls_own() {
        let set = |url: &str, level: &str| with_read_level(url, level).expect("cassandra");
        assert_eq!(
            set("cassandra://h/ks", "one"),
            "cassandra://h/ks?consistency=one&allow_weak_consistency=true"
        );
        assert_eq!(
            set(
                "cassandra://u:p%3Fw@h1,h2/ks?consistency=quorum&timeout=30s",
                "one"
            ),
            "cassandra://u:p%3Fw@h1,h2/ks?timeout=30s&consistency=one&allow_weak_consistency=true"
        );
        assert_eq!(
            set(
                "cassandra://h/ks?consistency=one&allow_weak_consistency=true&table=t",
                "quorum"
            ),
            "cassandra://h/ks?allow_weak_consistency=true&table=t&consistency=quorum"
        );
        assert_eq!(
            set("CASSANDRA://h/ks?allow_weak_consistency=false", "one"),
            "CASSANDRA://h/ks?consistency=one&allow_weak_consistency=true"
        );
        for url in ["sqlite:///tmp/x.db", "postgres://u@h/db", "memory:"] {
            let e = with_read_level(url, "one").expect_err("not cassandra");
            assert_eq!(e.status, USAGE, "{url}");
            assert!(e.message.contains("Cassandra stores only"), "{}", e.message);
        }
    }

    #[test]
    fn given_urls_win_and_blank_means_default() {
        assert_eq!(resolve(Some(" memory: ")), Ok(String::from("memory:")));
        assert!(is_in_process("MEMORY:"));
        assert!(!is_in_process("sqlite:///tmp/x.db"));
    }

    #[test]
    fn bad_urls_are_usage_errors_with_the_forms() {
        let e = open("nosuch://x").expect_err("unknown scheme");
        assert_eq!(e.status, USAGE);
        assert!(e.message.contains("nosuch"), "{e}");
        assert!(
            e.hint.as_deref().unwrap_or("").contains("sqlite:///"),
            "{e}"
        );
        let e = open("no scheme at all").expect_err("malformed");
        assert_eq!(e.status, USAGE);
    }
}
