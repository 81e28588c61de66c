//! The future of one store command stays small. Every lock operation builds and boxes one per
//! command; a store whose command future also carries what runs once (connecting, checking
//! the table, preparing statements) copies kilobytes on every statement. Opening a store
//! connects to nothing, and building a future runs nothing, so no server is needed.

use baton::baton_kernel::{ColumnFilter, ReadConsistency};
use baton::{Command, Consistency, Store};

/// The bounds, in this test's (dev) build: twice the SQL store's 1.4 KB, and 1.3 times the
/// Cassandra store's 5.1 KB (its command is the driver's query futures). Carrying the first
/// use along, they were 6.0 KB and 7.8 KB here (26 KB and more in a release build).
const MAX_SQL: usize = 3 * 1024;
const MAX_CASSANDRA: usize = 6 * 1024 + 512;

fn read() -> Command {
    Command::Read {
        row: "job".into(),
        filter: ColumnFilter::All,
        consistency: ReadConsistency::Plain(Consistency::Quorum),
    }
}

fn size_of_command_future(store: &dyn Store) -> usize {
    let future = store.execute(read());
    std::mem::size_of_val(&*future)
}

#[test]
fn command_futures_do_not_carry_the_first_use() {
    let mut urls = vec![("sqlite::memory:", MAX_SQL)];
    if cfg!(feature = "postgres") {
        urls.push(("postgres://baton@127.0.0.1:1/none", MAX_SQL));
    }
    if cfg!(feature = "mysql") {
        urls.push(("mysql://baton@127.0.0.1:1/none", MAX_SQL));
    }
    if cfg!(feature = "cassandra") {
        urls.push(("cassandra://127.0.0.1:1/none?table=locks", MAX_CASSANDRA));
    }
    for (url, max) in urls {
        let store = baton::open_store(url).expect("a valid URL opens without connecting");
        let size = size_of_command_future(&*store);
        eprintln!("{url}: {size} bytes");
        assert!(
            size <= max,
            "{url}: a command's future is {size} bytes (at most {max} expected)"
        );
    }
}
