//! The keyspace and lock table, defined once for every host: names, the DDL, the catalog
//! queries and the check of an existing table (a host runs them on first use).
//!
//! ```text
//! CREATE TABLE "<keyspace>"."<table>" (
//!     lock_name text,      -- the kernel's row: one partition per lock name
//!     cell text,           -- the kernel's column: a clustering key, so prefix reads are ranges
//!     value text,          -- the cell's value; its TTL is the cell's TTL
//!     probe text,          -- never holds a value: object writes delete it (below)
//!     PRIMARY KEY ((lock_name), cell)
//! ) WITH gc_grace_seconds = 3600 AND compaction = {…tombstone compaction…} AND ID = <uuid>
//! ```
//!
//! - **One partition per lock**, the cells of a lock as clustering rows: a row read is one
//!   partition read; a prefix read is the clustering range `cell >= p AND cell < succ(p)`.
//! - **No row markers.** Cells are written with `UPDATE` (never `INSERT`), so a clustering row
//!   exists exactly while its `value` is live, and its TTL is `TTL(value)`. An `INSERT` would
//!   add a primary-key liveness marker with its own TTL, which a later conditional update with a
//!   different TTL would not move: the row would outlive its value.
//! - **`gc_grace_seconds = 3600`** instead of 10 days, so a deleted cell's tombstone stops being
//!   read an hour after the delete (reads skip purgeable tombstones even before compaction). It is
//!   safe because every lock cell the kernel writes carries a TTL, and fencing counters are never
//!   deleted: a tombstone forgotten too early can only let a replica that missed the delete
//!   resurrect a lock cell until that cell's own TTL ends, which delays contenders and never grants
//!   a lock (grants need our own, newer cell). If the table also holds your own data columns
//!   (column prefix's read-modify-write), run repairs within an hour or raise it with
//!   `ALTER TABLE … WITH gc_grace_seconds = …`.
//! - **Tombstone compaction** (`unchecked_tombstone_compaction`, `tombstone_threshold 0.1`):
//!   single-SSTable compactions drop purgeable tombstones without waiting for size tiers.
//! - **A table id derived from the names** (`WITH ID`), so clients that create the table
//!   concurrently through different coordinators create the same table instead of conflicting
//!   schema versions.
//! - **`probe`**, a column nothing reads and nothing sets: an object write checks its guard's
//!   cells in its conditional batch with `DELETE probe … IF value = …` (see [the
//!   statements](super)), a statement that is conditional on a cell's value without writing
//!   it. Its tombstones are row cells like any deleted cell's (one per guard cell, each
//!   superseding the one before), gone after `gc_grace_seconds`. A table made before the
//!   column existed is accepted without it; the set-up adds it (`ALTER TABLE … ADD probe
//!   text`, [`add_probe`]) when the store may create its schema, and otherwise object writes
//!   are refused with that statement to run.
//!
//! Names are validated identifiers (`[A-Za-z][A-Za-z0-9_]{0,47}`) and always double-quoted, so
//! they are case-sensitive and never interpolated unchecked.

use alloc::format;
use alloc::string::String;

use baton_kernel::{Error, ErrorKind, Failure, Result};

use super::Level;

/// The default keyspace.
pub const DEFAULT_KEYSPACE: &str = "baton";
/// The default lock table (the same name as the SQL stores').
pub const DEFAULT_TABLE: &str = "baton_locks";
/// `gc_grace_seconds` of a table baton creates (see the module docs).
pub const GC_GRACE_SECONDS: u32 = 3600;
/// The column an object write's guard deletes, and nothing else uses (see the module docs).
pub const PROBE_COLUMN: &str = "probe";

/// `(keyspace)` → `(keyspace_name)`: one row when the keyspace exists. Run at `ONE`.
pub const KEYSPACE_QUERY: &str =
    "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?";
/// `(keyspace, table)` → `(column_name, kind, type)` of every column of the table (no rows
/// when it does not exist); see [`check_columns`]. Run at `ONE`.
pub const COLUMNS_QUERY: &str = "SELECT column_name, kind, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?";

/// Checks a keyspace or table name: 1 to 48 ASCII letters, digits and underscores, starting with
/// a letter (Cassandra's own limit is 48 characters).
pub fn validate_identifier(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidOption,
            format!(
                "Cassandra {what} name {name:?} must be 1 to 48 ASCII letters, digits or underscores, starting with a letter"
            ),
        ))
    }
}

/// `"keyspace"."table"`, for statements. Both names must be validated identifiers.
pub fn qualified(keyspace: &str, table: &str) -> String {
    format!("\"{keyspace}\".\"{table}\"")
}

/// The replication map of a keyspace with `factor` copies of each row in one data centre
/// (`SimpleStrategy`); a new keyspace gets 1 unless told otherwise.
pub fn simple_replication(factor: u32) -> String {
    format!("{{'class': 'SimpleStrategy', 'replication_factor': {factor}}}")
}

/// The `CREATE KEYSPACE` statement, with `replication` the CQL map of its replication.
pub fn create_keyspace(keyspace: &str, replication: &str) -> String {
    format!("CREATE KEYSPACE IF NOT EXISTS \"{keyspace}\" WITH replication = {replication}")
}

/// The `CREATE TABLE` statement (see the module docs for each choice).
pub fn create_table(keyspace: &str, table: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (lock_name text, cell text, value text, {PROBE_COLUMN} text, PRIMARY KEY ((lock_name), cell)) \
         WITH gc_grace_seconds = {GC_GRACE_SECONDS} \
         AND compaction = {{'class': 'SizeTieredCompactionStrategy', 'unchecked_tombstone_compaction': 'true', 'tombstone_threshold': '0.1'}} \
         AND comment = 'baton lock table' \
         AND ID = {}",
        qualified(keyspace, table),
        table_id(keyspace, table)
    )
}

/// The `ALTER TABLE` that adds the [`PROBE_COLUMN`] to a table made before it existed.
pub fn add_probe(keyspace: &str, table: &str) -> String {
    format!(
        "ALTER TABLE {} ADD {PROBE_COLUMN} text",
        qualified(keyspace, table)
    )
}

/// Why object writes are refused on a table without the [`PROBE_COLUMN`], and what to run.
fn no_probe(keyspace: &str, table: &str, why: &str) -> String {
    format!(
        "the lock table {keyspace}.{table} has no column {PROBE_COLUMN}, which object writes need ({why}); add it with: {}",
        add_probe(keyspace, table)
    )
}

/// A UUID derived from the keyspace and table names (two FNV-1a hashes, version and variant
/// bits set), so every creator of one table proposes the same table id.
pub fn table_id(keyspace: &str, table: &str) -> String {
    fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
        let mut h = seed;
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
    let name = format!("baton-lock-table/{keyspace}/{table}");
    let hi = fnv1a(0xcbf2_9ce4_8422_2325, name.as_bytes());
    let lo = fnv1a(0x8422_2325_cbf2_9ce4, name.as_bytes());
    let hi = (hi & !0xf000) | 0x5000; // version 5 (name-based)
    let lo = (lo & !(0xc << 60)) | (0x8 << 60); // RFC 4122 variant
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

/// Checks the `(column_name, kind, type)` rows of [`COLUMNS_QUERY`] for an existing table:
/// the message says what is wrong and shows baton's table otherwise.
pub fn check_columns(
    keyspace: &str,
    table: &str,
    columns: &[(String, String, String)],
) -> core::result::Result<(), String> {
    let want = [
        ("lock_name", "partition_key", "text"),
        ("cell", "clustering", "text"),
        ("value", "regular", "text"),
    ];
    for (name, kind, ty) in want {
        let found = columns.iter().find(|(n, _, _)| n == name);
        let ok = found.is_some_and(|(_, k, t)| k == kind && (t == ty || t == "varchar"));
        if !ok {
            let seen = found
                .map(|(_, k, t)| format!("a {k} column of type {t}"))
                .unwrap_or_else(|| String::from("missing"));
            return Err(format!(
                "table {keyspace}.{table} is not a baton lock table: column {name} should be a {kind} column of type {ty}, but is {seen}; baton's lock table is: {}",
                create_table(keyspace, table)
            ));
        }
    }
    if let Some((extra, _, _)) = columns.iter().find(|(n, k, _)| {
        !want.iter().any(|(w, _, _)| w == n) && (k == "partition_key" || k == "clustering")
    }) {
        return Err(format!(
            "table {keyspace}.{table} is not a baton lock table: it has an extra key column {extra}"
        ));
    }
    // The probe column may be missing (a table of an earlier version), not another column.
    if let Some((_, kind, ty)) = columns.iter().find(|(n, _, _)| n == PROBE_COLUMN) {
        if kind != "regular" || (ty != "text" && ty != "varchar") {
            return Err(format!(
                "table {keyspace}.{table} is not a baton lock table: column {PROBE_COLUMN} should be a regular column of type text, but is a {kind} column of type {ty}"
            ));
        }
    }
    Ok(())
}

/// What a host runs next to set up the keyspace and lock table ([`SchemaSetup::step`]). A
/// statement that fails ends the set-up: the host reports that failure as it reports any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaStep {
    /// Run [`KEYSPACE_QUERY`] with the keyspace, at `ONE`
    /// ([`schema_statement::KEYSPACE`](super::schema_statement::KEYSPACE)); answer with
    /// [`SchemaSetup::keyspace`].
    ReadKeyspace,
    /// Run this `CREATE KEYSPACE`, at `ALL`
    /// ([`schema_statement::CREATE_KEYSPACE`](super::schema_statement::CREATE_KEYSPACE));
    /// answer with [`SchemaSetup::created`].
    CreateKeyspace(String),
    /// Run [`COLUMNS_QUERY`] with the keyspace and table, at `ONE`
    /// ([`schema_statement::COLUMNS`](super::schema_statement::COLUMNS)); answer with
    /// [`SchemaSetup::columns`].
    ReadColumns,
    /// Run this `CREATE TABLE`, at `ALL`
    /// ([`schema_statement::CREATE_TABLE`](super::schema_statement::CREATE_TABLE)); answer
    /// with [`SchemaSetup::created`].
    CreateTable(String),
    /// Run this `ALTER TABLE … ADD probe text` ([`add_probe`]), at `ALL`
    /// ([`schema_statement::ADD_PROBE`](super::schema_statement::ADD_PROBE)); answer with
    /// [`SchemaSetup::created`], or, when it fails, with [`SchemaSetup::add_probe_failed`]
    /// (another client may have added the column in the same instant).
    AddProbe(String),
    /// Done: the keyspace and table exist, of baton's shape ([`SchemaSetup::probe_refusal`]
    /// says whether object writes can run on it).
    Ready,
    /// They cannot be used (missing with `create=false`, or a table of another shape): the
    /// message says what is wrong and shows the CQL that fixes it.
    Refused(String),
    /// Adding the `probe` column failed without an answer (a timeout, no replica), and the
    /// column is still missing: that failure (the next set-up tries again).
    Failed(Failure),
}

impl SchemaStep {
    /// The name a host gives the step's statement ([`schema_statement`](super::schema_statement),
    /// all of [`Access::Schema`](crate::Access::Schema)). `None` for `Ready` and `Refused`.
    pub fn statement(&self) -> Option<&'static str> {
        use super::schema_statement as name;
        match self {
            SchemaStep::ReadKeyspace => Some(name::KEYSPACE),
            SchemaStep::CreateKeyspace(_) => Some(name::CREATE_KEYSPACE),
            SchemaStep::ReadColumns => Some(name::COLUMNS),
            SchemaStep::CreateTable(_) => Some(name::CREATE_TABLE),
            SchemaStep::AddProbe(_) => Some(name::ADD_PROBE),
            SchemaStep::Ready | SchemaStep::Refused(_) | SchemaStep::Failed(_) => None,
        }
    }

    /// The consistency the step's statement runs at: `ONE` for the catalog reads (the schema is
    /// replicated to every node), `ALL` for the DDL (so that the next read, on any node, sees
    /// it). `None` for `Ready` and `Refused`.
    pub fn level(&self) -> Option<Level> {
        match self {
            SchemaStep::ReadKeyspace | SchemaStep::ReadColumns => Some(Level::One),
            SchemaStep::CreateKeyspace(_)
            | SchemaStep::CreateTable(_)
            | SchemaStep::AddProbe(_) => Some(Level::All),
            SchemaStep::Ready | SchemaStep::Refused(_) | SchemaStep::Failed(_) => None,
        }
    }
}

/// A DDL statement's failure, naming the statement when the server refused it. (One that timed
/// out may have been applied: the next set-up's `IF NOT EXISTS` copes with either.)
pub fn ddl_failure(failure: Failure, cql: &str) -> Failure {
    match failure {
        Failure::Rejected(m) => Failure::Rejected(format!("{m} (running: {cql})")),
        other => other,
    }
}

/// The set-up of the keyspace and lock table a host runs on first use, sans-IO, so that every
/// host (the native store, WebAssembly) takes the same steps and refuses with the same
/// words: the keyspace is read, and created if missing and allowed; then the table's columns,
/// and the table created if missing and allowed, or checked ([`check_columns`]); a table
/// without the [`PROBE_COLUMN`] gets it when allowed. Four statements at most, each `IF NOT
/// EXISTS`, so that concurrent set-ups and a retry after a timed-out DDL are harmless (the
/// probe's `ALTER TABLE`, which has no such clause here, is followed by a second read of the
/// columns when it fails: another client may have added the column).
#[derive(Clone, Debug)]
pub struct SchemaSetup {
    keyspace: String,
    table: String,
    replication: String,
    create: bool,
    step: SchemaStep,
    /// Why object writes cannot run on the table, once it is known to lack the probe column.
    probe_refusal: Option<String>,
    /// The failure of the probe's `ALTER TABLE`, while the columns are read again.
    probe_failure: Option<Failure>,
}

impl SchemaSetup {
    /// The set-up of `keyspace`.`table` (validated names), with `replication` the CQL map a
    /// new keyspace gets, creating what is missing only when `create` is on.
    pub fn new(keyspace: &str, table: &str, replication: &str, create: bool) -> SchemaSetup {
        SchemaSetup {
            keyspace: String::from(keyspace),
            table: String::from(table),
            replication: String::from(replication),
            create,
            step: SchemaStep::ReadKeyspace,
            probe_refusal: None,
            probe_failure: None,
        }
    }

    /// Once [`SchemaStep::Ready`]: why object writes cannot run on the table (it has no
    /// [`PROBE_COLUMN`], and the store may not add it, or adding it was refused), with the
    /// `ALTER TABLE` to run; `None` when they can. A host answers every
    /// [`Command::SetObject`](baton_kernel::Command::SetObject) with this as a
    /// [`Failure::Rejected`] ([`Operation::without_probe`](super::Operation::without_probe)).
    pub fn probe_refusal(&self) -> Option<&str> {
        self.probe_refusal.as_deref()
    }

    /// What the host does next (the same step again until it is answered).
    pub fn step(&self) -> SchemaStep {
        self.step.clone()
    }

    /// The answer to [`SchemaStep::ReadKeyspace`]: whether the query returned a row.
    pub fn keyspace(&mut self, exists: bool) {
        if self.step != SchemaStep::ReadKeyspace {
            return;
        }
        let create_keyspace = create_keyspace(&self.keyspace, &self.replication);
        self.step = match (exists, self.create) {
            (true, _) => SchemaStep::ReadColumns,
            (false, true) => SchemaStep::CreateKeyspace(create_keyspace),
            (false, false) => SchemaStep::Refused(format!(
                "the keyspace {:?} does not exist and the store may not create it (create=false); create it with: {create_keyspace}; then: {}",
                self.keyspace,
                create_table(&self.keyspace, &self.table)
            )),
        };
    }

    /// The answer to [`SchemaStep::ReadColumns`]: the `(column_name, kind, type)` rows (none
    /// when the table does not exist).
    pub fn columns(&mut self, columns: &[(String, String, String)]) {
        if self.step != SchemaStep::ReadColumns {
            return;
        }
        let create_table = create_table(&self.keyspace, &self.table);
        let probe = columns.iter().any(|(n, _, _)| n == PROBE_COLUMN);
        self.step = if !columns.is_empty() {
            match check_columns(&self.keyspace, &self.table, columns) {
                Err(message) => SchemaStep::Refused(message),
                Ok(()) if probe => SchemaStep::Ready,
                Ok(()) => match self.probe_failure.take() {
                    // Adding it failed, and nobody else added it.
                    Some(Failure::Rejected(why)) => {
                        self.probe_refusal = Some(no_probe(
                            &self.keyspace,
                            &self.table,
                            &format!("adding it was refused: {why}"),
                        ));
                        SchemaStep::Ready
                    }
                    Some(failure) => SchemaStep::Failed(ddl_failure(
                        failure,
                        &add_probe(&self.keyspace, &self.table),
                    )),
                    None if self.create => {
                        SchemaStep::AddProbe(add_probe(&self.keyspace, &self.table))
                    }
                    None => {
                        self.probe_refusal = Some(no_probe(
                            &self.keyspace,
                            &self.table,
                            "the table was made by an earlier version, and the store may not alter it (create=false)",
                        ));
                        SchemaStep::Ready
                    }
                },
            }
        } else if self.create {
            SchemaStep::CreateTable(create_table)
        } else {
            SchemaStep::Refused(format!(
                "the lock table {}.{} does not exist and the store may not create it (create=false); create it with: {create_table}",
                self.keyspace, self.table
            ))
        };
    }

    /// The answer to [`SchemaStep::CreateKeyspace`], [`SchemaStep::CreateTable`] or
    /// [`SchemaStep::AddProbe`]: the statement succeeded.
    pub fn created(&mut self) {
        self.step = match self.step {
            SchemaStep::CreateKeyspace(_) => SchemaStep::ReadColumns,
            SchemaStep::CreateTable(_) | SchemaStep::AddProbe(_) => SchemaStep::Ready,
            ref other => other.clone(),
        };
    }

    /// The answer to [`SchemaStep::AddProbe`] when it failed (as the host classified the
    /// driver's error): the columns are read again, since another client may have added the
    /// column meanwhile (Cassandra then refuses this one). Still missing: a refusal makes
    /// object writes fail with it (locks work on); a failure without an answer ends the
    /// set-up ([`SchemaStep::Failed`]).
    pub fn add_probe_failed(&mut self, failure: Failure) {
        if let SchemaStep::AddProbe(_) = self.step {
            self.probe_failure = Some(failure);
            self.step = SchemaStep::ReadColumns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    fn run(
        setup: &mut SchemaSetup,
        keyspace: bool,
        columns: &[(String, String, String)],
    ) -> alloc::vec::Vec<SchemaStep> {
        let mut steps = alloc::vec::Vec::new();
        for _ in 0..8 {
            let step = setup.step();
            steps.push(step.clone());
            match step {
                SchemaStep::ReadKeyspace => setup.keyspace(keyspace),
                SchemaStep::ReadColumns => setup.columns(columns),
                SchemaStep::CreateKeyspace(_)
                | SchemaStep::CreateTable(_)
                | SchemaStep::AddProbe(_) => setup.created(),
                SchemaStep::Ready | SchemaStep::Refused(_) | SchemaStep::Failed(_) => break,
            }
        }
        steps
    }

    #[test]
    fn schema_setup_creates_what_is_missing_only_when_allowed() {
        let col = |n: &str, k: &str, t: &str| (n.to_string(), k.to_string(), t.to_string());
        let good = vec![
            col("lock_name", "partition_key", "text"),
            col("cell", "clustering", "text"),
            col("value", "regular", "text"),
        ];
        let rf = "{'class': 'SimpleStrategy', 'replication_factor': 1}";
        // Nothing there: keyspace, then table (the columns read once the keyspace exists).
        let steps = run(&mut SchemaSetup::new("Ks", "T", rf, true), false, &[]);
        assert_eq!(steps.len(), 5, "{steps:?}");
        assert!(
            matches!(&steps[1], SchemaStep::CreateKeyspace(c) if c.contains(rf)),
            "{steps:?}"
        );
        assert_eq!(steps[2], SchemaStep::ReadColumns);
        assert!(matches!(&steps[3], SchemaStep::CreateTable(c) if c.contains("\"Ks\".\"T\"")));
        assert_eq!(steps[4], SchemaStep::Ready);
        // Both there: two reads.
        let steps = run(&mut SchemaSetup::new("Ks", "T", rf, false), true, &good);
        assert_eq!(
            steps,
            [
                SchemaStep::ReadKeyspace,
                SchemaStep::ReadColumns,
                SchemaStep::Ready
            ]
        );
        // create=false: refused with the CQL that fixes it.
        let steps = run(&mut SchemaSetup::new("Ks", "T", rf, false), false, &[]);
        assert!(
            matches!(steps.last(), Some(SchemaStep::Refused(m))
            if m.contains("create=false") && m.contains("CREATE KEYSPACE") && m.contains("CREATE TABLE")),
            "{steps:?}"
        );
        let steps = run(&mut SchemaSetup::new("Ks", "T", rf, false), true, &[]);
        assert!(
            matches!(steps.last(), Some(SchemaStep::Refused(m))
            if m.contains("does not exist") && m.contains("CREATE TABLE") && !m.contains("CREATE KEYSPACE")),
            "{steps:?}"
        );
        // Another shape: refused even with create on (nothing is altered).
        let foreign = vec![
            col("lock_name", "partition_key", "int"),
            good[1].clone(),
            good[2].clone(),
        ];
        let steps = run(&mut SchemaSetup::new("Ks", "T", rf, true), true, &foreign);
        assert!(
            matches!(steps.last(), Some(SchemaStep::Refused(m)) if m.contains("not a baton lock table")),
            "{steps:?}"
        );
        // Reads at ONE, DDL at ALL, each under its schema statement's name.
        for step in run(&mut SchemaSetup::new("Ks", "T", rf, true), false, &[]) {
            let expected = match step {
                SchemaStep::ReadKeyspace | SchemaStep::ReadColumns => Some(Level::One),
                SchemaStep::CreateKeyspace(_) | SchemaStep::CreateTable(_) => Some(Level::All),
                _ => None,
            };
            assert_eq!(step.level(), expected, "{step:?}");
            assert_eq!(step.statement().is_some(), expected.is_some(), "{step:?}");
        }
        assert_eq!(
            ddl_failure(Failure::Rejected("no".into()), "CREATE X"),
            Failure::Rejected("no (running: CREATE X)".into())
        );
        // An answer to a step not asked changes nothing.
        let mut setup = SchemaSetup::new("Ks", "T", rf, true);
        setup.created();
        setup.columns(&good);
        assert_eq!(setup.step(), SchemaStep::ReadKeyspace);
    }

    #[test]
    fn a_table_without_the_probe_column_gets_it_or_refuses_object_writes() {
        let col = |n: &str, k: &str, t: &str| (n.to_string(), k.to_string(), t.to_string());
        let old = vec![
            col("lock_name", "partition_key", "text"),
            col("cell", "clustering", "text"),
            col("value", "regular", "text"),
        ];
        let mut new = old.clone();
        new.push(col("probe", "regular", "text"));
        let rf = "{'class': 'SimpleStrategy', 'replication_factor': 1}";
        assert!(create_table("Ks", "T").contains("value text, probe text,"));
        assert_eq!(
            add_probe("Ks", "T"),
            "ALTER TABLE \"Ks\".\"T\" ADD probe text"
        );
        // A new table has it; an old one is accepted, and altered when allowed.
        let steps = run(&mut SchemaSetup::new("Ks", "T", rf, true), true, &new);
        assert_eq!(steps.last(), Some(&SchemaStep::Ready));
        let mut setup = SchemaSetup::new("Ks", "T", rf, true);
        setup.keyspace(true);
        setup.columns(&old);
        let SchemaStep::AddProbe(cql) = setup.step() else {
            panic!("{:?}", setup.step());
        };
        assert_eq!(cql, add_probe("Ks", "T"));
        assert_eq!(setup.step().level(), Some(Level::All));
        assert_eq!(setup.step().statement(), Some("add-probe"));
        setup.created();
        assert_eq!(
            (setup.step(), setup.probe_refusal()),
            (SchemaStep::Ready, None)
        );
        // Refused because another client added it meanwhile: the columns again, then ready.
        let mut setup = SchemaSetup::new("Ks", "T", rf, true);
        setup.keyspace(true);
        setup.columns(&old);
        setup.add_probe_failed(Failure::Rejected(
            "Column with name 'probe' already exists".into(),
        ));
        assert_eq!(setup.step(), SchemaStep::ReadColumns);
        setup.columns(&new);
        assert_eq!(
            (setup.step(), setup.probe_refusal()),
            (SchemaStep::Ready, None)
        );
        // Refused (no permission), still missing: locks work on, object writes say what to run.
        let mut setup = SchemaSetup::new("Ks", "T", rf, true);
        setup.keyspace(true);
        setup.columns(&old);
        setup.add_probe_failed(Failure::Rejected("no ALTER permission".into()));
        setup.columns(&old);
        assert_eq!(setup.step(), SchemaStep::Ready);
        let why = setup.probe_refusal().expect("refused");
        assert!(
            why.contains("no ALTER permission") && why.ends_with(&add_probe("Ks", "T")),
            "{why}"
        );
        // No answer: the set-up fails (the next one tries again).
        let mut setup = SchemaSetup::new("Ks", "T", rf, true);
        setup.keyspace(true);
        setup.columns(&old);
        setup.add_probe_failed(Failure::Timeout("no answer".into()));
        setup.columns(&old);
        assert!(
            matches!(setup.step(), SchemaStep::Failed(Failure::Timeout(_))),
            "{:?}",
            setup.step()
        );
        // create=false: accepted as it is, object writes refused with the statement to run.
        let mut setup = SchemaSetup::new("Ks", "T", rf, false);
        assert_eq!(run(&mut setup, true, &old).last(), Some(&SchemaStep::Ready));
        let why = setup.probe_refusal().expect("refused");
        assert!(
            why.contains("create=false") && why.contains("ALTER TABLE \"Ks\".\"T\" ADD probe text"),
            "{why}"
        );
        // A probe column of another kind is not baton's.
        let mut other = old.clone();
        other.push(col("probe", "static", "text"));
        assert!(check_columns("Ks", "T", &other).is_err_and(|m| m.contains("column probe")));
    }

    #[test]
    fn identifiers() {
        for ok in ["baton_locks", "libQtCassandraLockTable", "t_1_2_abc", "a"] {
            assert!(validate_identifier("table", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "_x",
            "1x",
            "x-y",
            "x\"y",
            "x y",
            "ks.t",
            &"x".repeat(49),
        ] {
            let e = validate_identifier("table", bad).expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidOption);
        }
    }

    #[test]
    fn ddl_quotes_names_and_ids_are_stable() {
        let ddl = create_table("Ks", "QtLocks");
        assert!(ddl.contains("\"Ks\".\"QtLocks\""), "{ddl}");
        assert!(ddl.contains("gc_grace_seconds = 3600"), "{ddl}");
        let id = table_id("Ks", "QtLocks");
        assert_eq!(id, table_id("Ks", "QtLocks"));
        assert_ne!(id, table_id("Ks", "QtLocks2"));
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "5");
    }

    #[test]
    fn a_table_of_another_shape_is_refused() {
        let col = |n: &str, k: &str, t: &str| (n.to_string(), k.to_string(), t.to_string());
        let good = vec![
            col("lock_name", "partition_key", "text"),
            col("cell", "clustering", "text"),
            col("value", "regular", "text"),
        ];
        assert_eq!(check_columns("k", "t", &good), Ok(()));
        let mut extra = good.clone();
        extra.push(col("id", "clustering", "int"));
        assert!(
            check_columns("k", "t", &extra).is_err_and(|m| m.ends_with("an extra key column id"))
        );
        let wrong = vec![col("lock_name", "partition_key", "int")];
        assert!(check_columns("k", "t", &wrong)
            .is_err_and(|m| m.contains("should be a partition_key column of type text, but is a partition_key column of type int")));
    }
}
