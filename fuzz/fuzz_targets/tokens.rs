//! The short words baton reads back from a store or from its options: owner ids (in every
//! lock entry's column and value), modes (`mode=` of an entry), strategy, consistency and
//! serial consistency names, SQL dialects and table layouts, lock table and keyspace names
//! (which end up inside SQL and CQL text).
//!
//! Feeds: the input, as text, to each parser (Cassandra's consistency words with the `stores`
//! feature only).
//!
//! Asserts: no panic; an owner id that parses formats to a key that parses to the same owner
//! (and a refusal is a `StoreError` with a message); a mode token that parses is the mode's own
//! token; a strategy, dialect or layout that parses parses again from its own name; a refused
//! consistency is an `InvalidOption` naming it; a table or keyspace name accepted holds only
//! ASCII letters, digits and `_` (nothing that could close a quoted identifier), and the
//! statements of every dialect are built for exactly the names accepted (on MariaDB, those of
//! at most 58 characters, which leave room for its procedure's name).
#![no_main]

#[cfg(feature = "stores")]
use baton::cassandra::{parse_consistency, parse_serial};
use baton_kernel::{Consistency, ErrorKind, Mode, OwnerId, Strategy};
use baton_statements::cql::validate_identifier;
use baton_statements::sql::{validate_table, Dialect, Layout, StatementSets};
use libfuzzer_sys::fuzz_target;

fn identifier_chars(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();

    match OwnerId::parse(text) {
        Ok(owner) => {
            let key = owner.key();
            assert_eq!(
                OwnerId::parse(&key).as_ref(),
                Ok(&owner),
                "{text:?} -> {key:?}"
            );
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::StoreError, "{e}");
            assert!(!e.message().is_empty());
        }
    }

    if let Some(mode) = Mode::parse(text) {
        assert_eq!(mode.token(), text);
    }

    if let Ok(strategy) = text.parse::<Strategy>() {
        assert_eq!(strategy.as_str().parse::<Strategy>().ok(), Some(strategy));
    }
    match text.parse::<Consistency>() {
        #[cfg(feature = "stores")]
        Ok(level) => assert_eq!(parse_consistency(text), Some(level)),
        #[cfg(not(feature = "stores"))]
        Ok(_) => {}
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
            assert!(e.message().contains("consistency"), "{e}");
        }
    }
    #[cfg(feature = "stores")]
    let _ = parse_serial(text);
    if let Some(dialect) = Dialect::parse(text) {
        assert_eq!(Dialect::parse(dialect.name()), Some(dialect));
    }
    if let Some(layout) = Layout::parse(text) {
        assert_eq!(Layout::parse(layout.name()), Some(layout));
    }

    let table_ok = validate_table(text).is_ok();
    if table_ok {
        assert!(identifier_chars(text) && text.len() <= 63, "{text:?}");
    }
    for dialect in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
        // MariaDB's also name a procedure `<table>_claim`, within its 64 characters.
        let fits = dialect != Dialect::MySql || text.len() <= 58;
        match StatementSets::new(dialect, text, None) {
            Ok(_) => assert!(table_ok && fits, "{dialect:?} statements for {text:?}"),
            Err(e) => {
                assert!(!table_ok || !fits, "{dialect:?} refused {text:?}: {e}");
                assert_eq!(e.kind(), ErrorKind::InvalidOption);
            }
        }
    }
    if validate_identifier("keyspace", text).is_ok() {
        assert!(identifier_chars(text) && text.len() <= 48, "{text:?}");
    }
});
