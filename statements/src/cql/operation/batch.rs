//! Which of a batch's writes Cassandra is sent.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use baton_kernel::Write;

/// The writes of a batch that matter, at most one per column, in the batch's order: the first
/// put after the column's last delete, or that delete if no put follows it.
///
/// Every statement of a Cassandra batch carries the batch's one timestamp, and at one timestamp
/// the statements of a column do not apply in order (a delete wins a tie, and of two puts the
/// greater value). The kernel's reference table applies the writes in order, each under the
/// rules of its stamp, the same for all of them: a delete removes whatever the batch wrote
/// before it (its version is not newer), and a put applies only over an older version, so
/// after a put of the column, later puts change nothing until a delete. Sending only the write
/// that decides the outcome gives Cassandra the same result, whatever the cell held before.
pub fn effective_writes(writes: &[Write]) -> Vec<&Write> {
    let column = |w: &Write| match w {
        Write::Put { column, .. } | Write::Delete { column } => column.clone(),
    };
    let mut decisive: BTreeMap<String, usize> = BTreeMap::new();
    for (i, w) in writes.iter().enumerate() {
        match w {
            Write::Delete { .. } => {
                decisive.insert(column(w), i);
            }
            Write::Put { .. } => {
                let slot = decisive.entry(column(w)).or_insert(i);
                if matches!(writes[*slot], Write::Delete { .. }) {
                    *slot = i;
                }
            }
        }
    }
    writes
        .iter()
        .enumerate()
        .filter(|(i, w)| decisive.get(&column(w)) == Some(i))
        .map(|(_, w)| w)
        .collect()
}
