//! What a lock table must have, and what a store does about a table that lacks it: the
//! decisions of the store's first use, for every host. The host reads the table's columns
//! ([`Statements::columns`](super::Statements::columns)), asks [`SchemaCheck::of`], runs what
//! it says, and reads the columns again.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{COLUMNS, STAMP_COLUMN};

/// What to do with a lock table, from its columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaCheck {
    /// Every column is there.
    Ready,
    /// There is no table: run [`Statements::create`](super::Statements::create).
    Create,
    /// Only the `stamp` column is missing (a table made by an older baton): run
    /// [`Statements::add_stamp`](super::Statements::add_stamp).
    AddStamp,
    /// The table cannot be used as it is: the message says why and how to fix it.
    Refuse(String),
}

impl SchemaCheck {
    /// The check of table `table` with columns `present` (empty when it does not exist),
    /// where the store may create or alter it when `create` is on. `ddl` and `add_stamp_ddl`
    /// are the statements shown to an operator who must run them by hand.
    pub fn of(
        present: &[String],
        create: bool,
        table: &str,
        ddl: &str,
        add_stamp_ddl: &str,
    ) -> SchemaCheck {
        let missing = missing_columns(present);
        if missing.is_empty() {
            SchemaCheck::Ready
        } else if present.is_empty() && create {
            SchemaCheck::Create
        } else if present.is_empty() {
            SchemaCheck::Refuse(format!(
                "the lock table {table:?} does not exist and the store may not create it (create=false); create it with:\n{ddl}"
            ))
        } else if missing == [STAMP_COLUMN] && create {
            SchemaCheck::AddStamp
        } else if missing == [STAMP_COLUMN] {
            SchemaCheck::Refuse(format!(
                "the lock table {table:?} has no column {STAMP_COLUMN} (it was made by an older version of baton) and the store may not alter it (create=false); add the column with:\n{add_stamp_ddl}"
            ))
        } else {
            SchemaCheck::Refuse(lacking(table, present, &missing, ddl))
        }
    }

    /// The check after the host created or altered the table: ready, or refused with what is
    /// still missing (never another change, so a host cannot loop).
    pub fn verify(present: &[String], table: &str, ddl: &str) -> SchemaCheck {
        let missing = missing_columns(present);
        if missing.is_empty() {
            SchemaCheck::Ready
        } else {
            SchemaCheck::Refuse(lacking(table, present, &missing, ddl))
        }
    }
}

fn lacking(table: &str, present: &[String], missing: &[&str], ddl: &str) -> String {
    format!(
        "the lock table {table:?} has no column {} (found {}); baton's lock table is:\n{ddl}",
        missing.join(", "),
        if present.is_empty() {
            String::from("no columns")
        } else {
            present.join(", ")
        }
    )
}

/// The message when adding the `stamp` column failed with `message`.
pub fn add_stamp_failed(table: &str, message: &str, add_stamp_ddl: &str) -> String {
    format!(
        "the lock table {table:?} has no column {STAMP_COLUMN} (it was made by an older version of baton), and adding it failed: {message}; add it with:\n{add_stamp_ddl}"
    )
}

/// The columns of [`COLUMNS`] that `present` lacks (compared without case).
pub fn missing_columns(present: &[String]) -> Vec<&'static str> {
    COLUMNS
        .iter()
        .copied()
        .filter(|c| !present.iter().any(|p| p.eq_ignore_ascii_case(c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn a_table_is_created_altered_or_refused() {
        let all: Vec<String> = COLUMNS.iter().map(|c| c.to_uppercase()).collect();
        let of = |present: &[String], create| SchemaCheck::of(present, create, "t", "DDL", "ALTER");
        assert_eq!(of(&all, false), SchemaCheck::Ready);
        assert_eq!(of(&[], true), SchemaCheck::Create);
        assert!(matches!(of(&[], false), SchemaCheck::Refuse(m) if m.ends_with("with:\nDDL")));
        let old: Vec<String> = all[..4].to_vec();
        assert_eq!(of(&old, true), SchemaCheck::AddStamp);
        assert!(matches!(of(&old, false), SchemaCheck::Refuse(m) if m.ends_with("with:\nALTER")));
        assert!(matches!(
            SchemaCheck::verify(&[], "t", "DDL"),
            SchemaCheck::Refuse(m) if m.contains("(found no columns)")
        ));
        assert_eq!(SchemaCheck::verify(&all, "t", "DDL"), SchemaCheck::Ready);
        let other = vec!["id".to_string()];
        assert!(matches!(
            of(&other, true),
            SchemaCheck::Refuse(m) if m.contains("no column lock_name, cell, value, expires_at, stamp (found id)")
        ));
    }
}
