//! What a lock table must have, and what a store does about a table that lacks it: the
//! decisions of the store's first use, for every host. [`SchemaSetup`] is the whole sequence as
//! a sans-IO machine that the native SQL stores and the WebAssembly host both run; it asks
//! [`SchemaCheck`] what a table's columns call for.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baton_kernel::Failure;

use super::{Dialect, Layout, Statements, COLUMNS, STAMP_COLUMN};

/// What [`SchemaSetup`] needs the host to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaStep {
    /// Read the table's column names: [`Statements::columns`] with
    /// [`Statements::catalog_name`] as its one text parameter (named
    /// [`schema_statement::COLUMNS`](super::schema_statement::COLUMNS)); answer with
    /// [`SchemaSetup::columns`].
    ReadColumns,
    /// Run `Statements::create[i]` ([`schema_statement::CREATE_TABLE`](super::schema_statement::CREATE_TABLE));
    /// answer with [`SchemaSetup::ran`].
    CreateTable(usize),
    /// Run [`Statements::add_stamp`] ([`schema_statement::ADD_STAMP`](super::schema_statement::ADD_STAMP));
    /// answer with [`SchemaSetup::ran`].
    AddStamp,
    /// Run the script `Statements::routines[i]` ([`schema_statement::CREATE_ROUTINE`](super::schema_statement::CREATE_ROUTINE));
    /// answer with [`SchemaSetup::ran`].
    CreateRoutine(usize),
    /// Read the layout flag: [`Statements::layout_flag`], one text column
    /// ([`schema_statement::LAYOUT_FLAG`](super::schema_statement::LAYOUT_FLAG)); answer with
    /// [`SchemaSetup::layout_flag`].
    ReadLayoutFlag,
    /// Done: the table is ready, in this layout.
    Ready(Layout),
    /// The table cannot be used as it is (a rejection, with what to do about it).
    Refused(String),
    /// The statement run last failed and the table still lacks what it was to add (or a
    /// routine could not be made): that statement's failure, as the host classified it
    /// (a refused addition of the stamp column says how to add it by hand).
    Failed(Failure),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    Start,
    /// The first read of the columns is on its way.
    Columns,
    /// `create[i]` is running.
    Creating(usize),
    /// `create[i]` failed: another process may have made the table meanwhile.
    CreateFailed(usize),
    AddingStamp,
    /// Adding the stamp failed: another process may have added it meanwhile.
    AddStampFailed,
    /// The columns again, after a change.
    Verify,
    /// `routines[i]` is running.
    Routines(usize),
    LayoutFlag,
    Done(SchemaStep),
}

/// The set-up of a lock table on a store's first use, for every host: reads the table's
/// columns; creates the table when it is missing and `create` is on (race-safe: a creation that
/// fails is fine when the table is there after all, as when another process made it in the same
/// instant), adds the `stamp` column to a table of an older baton likewise, or refuses a table
/// that is not baton's with the DDL to run; then, with `create`, makes the routines the
/// statements use (MariaDB's claim procedure, PostgreSQL's release notification trigger: after
/// the table, on which they depend, and whether or not it was made now, since a table of an
/// earlier version has none); then reads the table's layout flag ([`Layout::of_table`]).
///
/// The host loops on [`SchemaSetup::step`], does what each [`SchemaStep`] says and gives the
/// answer back, until `Ready`, `Refused` or `Failed`. Costs: two reads for a ready table (its
/// columns and its flag), plus the routines' scripts with `create`; a few more statements once,
/// when the table is made or altered.
#[derive(Clone, Debug)]
pub struct SchemaSetup {
    dialect: Dialect,
    table: String,
    create: bool,
    ddl: String,
    add_stamp_ddl: String,
    creates: usize,
    routines: usize,
    present: Vec<String>,
    changed: Option<&'static str>,
    stage: Stage,
    /// The failure of the statement run last, if it failed.
    last_failure: Option<Failure>,
    /// The table is being moved ([`super::is_moving`]), once its flag was read.
    moving: bool,
}

impl SchemaSetup {
    /// The set-up of table `table` run with `statements` (those of the layout a new table gets),
    /// creating or altering what is missing only when `create` is on.
    pub fn new<S>(statements: &Statements<S>, table: &str, create: bool) -> SchemaSetup {
        SchemaSetup {
            dialect: statements.dialect,
            table: String::from(table),
            create,
            ddl: statements.ddl.clone(),
            add_stamp_ddl: statements.add_stamp_ddl.clone(),
            creates: statements.create.len(),
            routines: statements.routines.len(),
            present: Vec::new(),
            changed: None,
            stage: Stage::Start,
            last_failure: None,
            moving: false,
        }
    }

    /// What the host does next (the same step again until it is answered).
    pub fn step(&mut self) -> SchemaStep {
        match &self.stage {
            Stage::Start => {
                self.stage = Stage::Columns;
                SchemaStep::ReadColumns
            }
            Stage::Columns | Stage::CreateFailed(_) | Stage::AddStampFailed | Stage::Verify => {
                SchemaStep::ReadColumns
            }
            Stage::Creating(i) => SchemaStep::CreateTable(*i),
            Stage::AddingStamp => SchemaStep::AddStamp,
            Stage::Routines(i) => SchemaStep::CreateRoutine(*i),
            Stage::LayoutFlag => SchemaStep::ReadLayoutFlag,
            Stage::Done(step) => step.clone(),
        }
    }

    /// What the set-up changed, once `Ready`, for the host's log: `"created the lock table"` or
    /// `"added the stamp column to the lock table"`.
    pub fn changed(&self) -> Option<&'static str> {
        self.changed
    }

    /// The answer to [`SchemaStep::ReadColumns`]: the table's column names (none when it does
    /// not exist).
    pub fn columns(&mut self, present: Vec<String>) {
        let ready = missing_columns(&present).is_empty();
        self.stage = match core::mem::replace(&mut self.stage, Stage::Start) {
            Stage::Columns => match SchemaCheck::of(
                &present,
                self.create,
                &self.table,
                &self.ddl,
                &self.add_stamp_ddl,
            ) {
                SchemaCheck::Ready => self.after_table(),
                SchemaCheck::Refuse(message) => Stage::Done(SchemaStep::Refused(message)),
                SchemaCheck::Create => self.creating(0),
                SchemaCheck::AddStamp => Stage::AddingStamp,
            },
            // Made by someone else meanwhile: go on as if ours had worked.
            Stage::CreateFailed(i) if ready => self.creating(i + 1),
            Stage::CreateFailed(_) => Stage::Done(self.failed(false)),
            Stage::AddStampFailed if ready => Stage::Verify,
            Stage::AddStampFailed => Stage::Done(self.failed(true)),
            Stage::Verify => match SchemaCheck::verify(&present, &self.table, &self.ddl) {
                SchemaCheck::Ready => self.after_table(),
                SchemaCheck::Refuse(message) => Stage::Done(SchemaStep::Refused(message)),
                other => Stage::Done(SchemaStep::Refused(format!(
                    "internal error: the lock table {:?} still needs {other:?} after it was changed",
                    self.table
                ))),
            },
            other => other,
        };
        if matches!(self.stage, Stage::Routines(_) | Stage::LayoutFlag) {
            self.present = present;
        }
    }

    /// The answer to [`SchemaStep::CreateTable`], [`SchemaStep::AddStamp`] or
    /// [`SchemaStep::CreateRoutine`]: what the statement gave, its failure as the host
    /// classifies any (kept for [`SchemaStep::Failed`]).
    pub fn ran(&mut self, outcome: Result<(), Failure>) {
        let ok = outcome.is_ok();
        self.last_failure = outcome.err();
        self.stage = match core::mem::replace(&mut self.stage, Stage::Start) {
            Stage::Creating(i) if ok => self.creating(i + 1),
            Stage::Creating(i) => Stage::CreateFailed(i),
            Stage::AddingStamp if ok => {
                self.changed = Some("added the stamp column to the lock table");
                Stage::Verify
            }
            Stage::AddingStamp => Stage::AddStampFailed,
            Stage::Routines(i) if ok => self.routine(i + 1),
            Stage::Routines(_) => Stage::Done(self.failed(false)),
            other => other,
        };
    }

    /// The answer to [`SchemaStep::ReadLayoutFlag`]: the flag's value (`None`: no flag row).
    pub fn layout_flag(&mut self, flag: Option<&str>) {
        if self.stage == Stage::LayoutFlag {
            self.moving = super::is_moving(flag, &self.present);
            let layout = Layout::of_table(self.dialect, &self.table, flag, &self.present);
            self.stage = Stage::Done(match layout {
                Ok(layout) => SchemaStep::Ready(layout),
                Err(message) => SchemaStep::Refused(message),
            });
        }
    }

    /// Whether the table is being moved by `baton migrate` (the `fence` columns, no flag yet),
    /// once [`SchemaStep::Ready`] was given: a host that routes its commands
    /// ([`super::moving_route`]) then runs them so; one that does not keeps the two-row
    /// statements, and fails on a moved name's marker rather than take a wrong token.
    pub fn moving(&self) -> bool {
        self.moving
    }

    /// The end of a set-up whose last statement failed: that failure (`add_stamp`: adding the
    /// stamp column was refused, and the message says how to add it by hand).
    fn failed(&mut self, add_stamp: bool) -> SchemaStep {
        SchemaStep::Failed(match self.last_failure.take() {
            Some(Failure::Rejected(m)) if add_stamp => {
                Failure::Rejected(add_stamp_failed(&self.table, &m, &self.add_stamp_ddl))
            }
            Some(failure) => failure,
            None => Failure::Rejected(format!(
                "internal error: setting up the lock table {:?} failed with no error",
                self.table
            )),
        })
    }

    /// `create[i]` next, or the check of the table made once every one has run.
    fn creating(&mut self, i: usize) -> Stage {
        if i < self.creates {
            Stage::Creating(i)
        } else {
            self.changed.get_or_insert("created the lock table");
            Stage::Verify
        }
    }

    /// The table has every column: its routines (with `create`), then its layout.
    fn after_table(&self) -> Stage {
        if self.create {
            self.routine(0)
        } else {
            Stage::LayoutFlag
        }
    }

    fn routine(&self, i: usize) -> Stage {
        if i < self.routines {
            Stage::Routines(i)
        } else {
            Stage::LayoutFlag
        }
    }
}

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

    /// Runs `setup` against a table with columns `present`, where each statement run succeeds
    /// as `ok` says (by the number of statements run so far) and adds every column when it
    /// does; returns the steps taken and the last.
    fn run(
        mut setup: SchemaSetup,
        mut present: Vec<String>,
        ok: impl Fn(usize) -> bool,
        flag: Option<&str>,
    ) -> Vec<SchemaStep> {
        let all: Vec<String> = COLUMNS
            .iter()
            .chain(super::super::ONE_ROW_COLUMNS.iter())
            .map(|c| c.to_string())
            .collect();
        let mut steps = Vec::new();
        let mut ran = 0;
        for _ in 0..50 {
            let step = setup.step();
            steps.push(step.clone());
            match step {
                SchemaStep::ReadColumns => setup.columns(present.clone()),
                SchemaStep::CreateTable(_)
                | SchemaStep::AddStamp
                | SchemaStep::CreateRoutine(_) => {
                    let worked = ok(ran);
                    ran += 1;
                    if worked && !matches!(step, SchemaStep::CreateRoutine(_)) {
                        present = all.clone();
                    }
                    setup.ran(if worked { Ok(()) } else { Err(refused()) });
                }
                SchemaStep::ReadLayoutFlag => setup.layout_flag(flag),
                _ => return steps,
            }
        }
        panic!("the set-up did not end: {steps:?}")
    }

    /// What the tests' failing statements give.
    fn refused() -> Failure {
        Failure::Rejected(String::from("no such privilege"))
    }

    fn setup(dialect: Dialect, create: bool) -> SchemaSetup {
        let st = Statements::in_layout(dialect, "t", Layout::for_new_table(dialect))
            .expect("statements");
        SchemaSetup::new(&st, "t", create)
    }

    fn columns(n: usize) -> Vec<String> {
        COLUMNS[..n].iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn a_ready_table_takes_two_reads_and_its_routines_after_it() {
        let steps = run(
            setup(Dialect::MySql, false),
            columns(COLUMNS.len()),
            |_| true,
            None,
        );
        assert_eq!(
            steps,
            [
                SchemaStep::ReadColumns,
                SchemaStep::ReadLayoutFlag,
                SchemaStep::Ready(Layout::TwoRows)
            ]
        );
        let steps = run(
            setup(Dialect::MySql, true),
            columns(COLUMNS.len()),
            |_| true,
            None,
        );
        assert_eq!(steps[0], SchemaStep::ReadColumns);
        assert!(
            matches!(steps[1], SchemaStep::CreateRoutine(0)),
            "{steps:?}"
        );
        assert_eq!(steps.last(), Some(&SchemaStep::Ready(Layout::TwoRows)));
    }

    #[test]
    fn a_missing_table_is_made_then_checked_then_given_its_routines() {
        let steps = run(setup(Dialect::MySql, true), Vec::new(), |_| true, None);
        let first_routine = steps
            .iter()
            .position(|s| matches!(s, SchemaStep::CreateRoutine(_)));
        let last_create = steps
            .iter()
            .rposition(|s| matches!(s, SchemaStep::CreateTable(_)));
        assert!(
            first_routine.is_some() && first_routine > last_create,
            "routines after the table: {steps:?}"
        );
        assert_eq!(steps.last(), Some(&SchemaStep::Ready(Layout::TwoRows)));
        // PostgreSQL's new table is one-row, as its flag says.
        let steps = run(
            setup(Dialect::Postgres, true),
            Vec::new(),
            |_| true,
            Some(super::super::ONE_ROW_FLAG),
        );
        assert_eq!(steps.last(), Some(&SchemaStep::Ready(Layout::OneRow)));
        // Without create: refused with the DDL.
        let steps = run(setup(Dialect::Postgres, false), Vec::new(), |_| true, None);
        assert!(matches!(steps.last(), Some(SchemaStep::Refused(m)) if m.contains("create=false")));
    }

    #[test]
    fn a_creation_that_fails_is_fine_when_the_table_is_there_after_all() {
        // Another process made the table: our CREATE fails, the columns are all there.
        let mut setup = setup(Dialect::Sqlite, true);
        assert_eq!(setup.step(), SchemaStep::ReadColumns);
        setup.columns(Vec::new());
        assert_eq!(setup.step(), SchemaStep::CreateTable(0));
        setup.ran(Err(refused()));
        assert_eq!(setup.step(), SchemaStep::ReadColumns);
        setup.columns(columns(COLUMNS.len()));
        let mut next = setup.step();
        while let SchemaStep::CreateTable(_) | SchemaStep::ReadColumns = next {
            match next {
                SchemaStep::ReadColumns => setup.columns(columns(COLUMNS.len())),
                _ => setup.ran(Ok(())),
            }
            next = setup.step();
        }
        assert_eq!(next, SchemaStep::ReadLayoutFlag);
        // And not fine when it is still missing: the statement's own failure.
        let steps = run(
            self::setup(Dialect::Sqlite, true),
            Vec::new(),
            |_| false,
            None,
        );
        assert_eq!(steps.last(), Some(&SchemaStep::Failed(refused())));
    }

    #[test]
    fn an_older_table_gets_its_stamp_column_or_the_statement_to_add_it() {
        let old = columns(COLUMNS.len() - 1);
        let steps = run(setup(Dialect::Sqlite, true), old.clone(), |_| true, None);
        assert!(steps.contains(&SchemaStep::AddStamp), "{steps:?}");
        assert_eq!(steps.last(), Some(&SchemaStep::Ready(Layout::TwoRows)));
        let steps = run(setup(Dialect::Sqlite, true), old.clone(), |_| false, None);
        assert!(
            matches!(steps.last(), Some(SchemaStep::Failed(Failure::Rejected(m)))
                if m.contains("no such privilege") && m.contains("ALTER TABLE")),
            "{steps:?}"
        );
        let steps = run(setup(Dialect::Sqlite, false), old, |_| true, None);
        assert!(matches!(steps.last(), Some(SchemaStep::Refused(m)) if m.contains("ADD")));
    }

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
