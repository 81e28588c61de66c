//! Store URLs and their options, as a user, a config file or a binding gives them.
//!
//! Feeds: the input as a store URL (invalid UTF-8 replaced, as the C API would refuse it first)
//! to `baton::open_store`, which picks the store by scheme and parses the URL and its query
//! options (the SQL stores' `table`, `create`, `timeout`, `pool`, `layout`, TLS parameters, the
//! network URL itself through the driver's parser; Cassandra's hosts, keyspace, consistency,
//! replication, TLS...). Opening never connects. URLs naming a `password_file=` are skipped:
//! that option reads the file it names, and the fuzzer must not read devices.
//!
//! Asserts: no panic; an error is `InvalidOption` with a message; a password in the URL's user
//! info (`user:password@`) never appears in the message (the same URL with the password
//! replaced shows the text as often); an opened store describes itself.
#![no_main]

use baton::ErrorKind;
use libfuzzer_sys::fuzz_target;

/// Where the password of `url`'s user info is (`scheme://user:password@host`), as a byte range.
fn password_range(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (userinfo, _) = authority.rsplit_once('@')?;
    let colon = userinfo.find(':')?;
    Some(start + colon + 1..start + userinfo.len())
}

fn message(url: &str) -> Option<String> {
    match baton::open_store(url) {
        Ok(store) => {
            assert!(!store.describe().is_empty(), "{url:?}: no description");
            None
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidOption, "{url:?}: {e}");
            assert!(!e.message().is_empty(), "{url:?}: an empty message");
            Some(e.to_string())
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let url = String::from_utf8_lossy(data);
    if url.contains("password_file") {
        return;
    }
    let Some(shown) = message(&url) else {
        return;
    };
    let Some(range) = password_range(&url) else {
        return;
    };
    let password = &url[range.clone()];
    if password.len() < 3 || !shown.contains(password) {
        return;
    }
    // The text is in the message: from the password, or from elsewhere (the user name, the
    // host, the message's own words)? With the password replaced by one of the same length,
    // text from elsewhere is still there as often.
    let mut other = url.to_string();
    other.replace_range(range, &"Z".repeat(password.len()));
    let shown_other = message(&other).unwrap_or_default();
    assert!(
        shown.matches(password).count() <= shown_other.matches(password).count(),
        "the password {password:?} of {url:?} is shown: {shown}"
    );
});
