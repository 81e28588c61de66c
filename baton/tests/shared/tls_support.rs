//! What the TLS tests of every store share: editing a URL's parameters, and what a refused
//! first use must look like.

use std::time::Duration;

use baton::{Error, ErrorKind};

/// `url` with `key=value` in place of its own value of `key` (added if it has none; removed
/// when `value` is `None`).
pub fn param(url: &str, key: &str, value: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(key))
        .map(str::to_owned)
        .collect();
    if let Some(value) = value {
        pairs.push(format!("{key}={value}"));
    }
    format!("{base}?{}", pairs.join("&"))
}

/// Asserts that a first use of `url`, which gave `outcome` after `took`, failed with a store
/// error naming `cause`, within `bound`; returns the error.
pub fn assert_refused(
    url: &str,
    outcome: Result<(), Error>,
    took: Duration,
    cause: &str,
    bound: Duration,
) -> Error {
    let e = outcome.expect_err(url);
    assert!(
        matches!(
            e.kind(),
            ErrorKind::StoreUnavailable | ErrorKind::StoreError
        ),
        "{url}: {e}"
    );
    assert!(e.message().contains(cause), "{url}: {cause:?} not in: {e}");
    assert!(took < bound, "{url}: took {took:?}");
    e
}
