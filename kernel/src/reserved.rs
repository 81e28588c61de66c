//! The cell names whose meaning is the same on every lock name, whichever strategy locks
//! it: the fencing counter, unique insert's lock cell and turn cell, and the object cell. No other cell may take one of these names,
//! so that a column-prefix entry or a release's data column never overwrites or removes the
//! counter (tokens would go back) or unique insert's record, even on a name misused by two
//! strategies. A leaf module: options and strategies both check against it.

/// The fencing counter's column for every strategy but column prefix with a custom prefix:
/// the default column prefix itself, so one name has one counter whichever strategy grants it
/// (tokens stay ordered even on a name misused by two strategies, which exclude nothing).
pub const COUNTER_COLUMN: &str = "_LOCK_";

/// The column holding unique insert's lock record.
pub const LOCK_COLUMN: &str = "lock";

/// The column holding unique insert's *turn*: the one waiter the next grant is reserved for
/// (see [`crate::Turn`]).
pub const TURN_COLUMN: &str = "_NEXT_";

/// The column holding a name's object (see [`crate::object`]).
pub use crate::object::OBJECT_COLUMN;

/// Whether `column` is one of the reserved cells.
pub(crate) fn is_reserved(column: &str) -> bool {
    RESERVED.contains(&column)
}

/// Every reserved cell.
const RESERVED: [&str; 4] = [COUNTER_COLUMN, LOCK_COLUMN, TURN_COLUMN, OBJECT_COLUMN];

/// The reserved cell that starts with `prefix` (itself included), if any: a column prefix that
/// would count it among its entries.
pub(crate) fn starting_with(prefix: &str) -> Option<&'static str> {
    RESERVED.into_iter().find(|cell| cell.starts_with(prefix))
}

/// Why a reserved `column` cannot be used, for error messages.
pub(crate) fn why(column: &str) -> &'static str {
    debug_assert!(is_reserved(column), "{column:?} is not reserved");
    if column == COUNTER_COLUMN {
        "every strategy's fencing counter"
    } else if column == OBJECT_COLUMN {
        "the name's object"
    } else if column == TURN_COLUMN {
        "unique insert's reservation of the next grant"
    } else {
        "unique insert's lock cell"
    }
}
