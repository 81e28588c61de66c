//! The fencing counter: one cell per lock name, changed only by compare-and-set.
//!
//! After a strategy has won, the winner moves the counter from `token=n owner=X` to
//! `token=n+1 owner=me` (or creates `token=1 owner=me` with insert-if-absent). The counter has
//! no TTL and is never deleted (purge and forced release leave it), so tokens keep increasing
//! for the life of the table.
//!
//! Why tokens increase in grant order: counter updates are linearizable, so the tokens are
//! increasing in the order the updates took effect. A holder's update takes effect after it won
//! and before its grant is delivered; the next holder can only win after the previous one
//! released or its cell expired, which is after the previous holder's deadline; a grant whose
//! update answered after the deadline is refused. So successive valid grants update the counter
//! in grant order.
//!
//! Cost: one conditional round trip when the counter value is known (read in the same round trip
//! as the lock entries, or from a [`FenceHint`](crate::FenceHint)); two when the guess is stale.

use alloc::string::String;

use crate::error::unexpected;
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Command, Consistency, Reply, SerialConsistency};
use crate::record::Fence;

#[derive(Clone, Debug)]
pub(crate) struct FenceBump {
    row: String,
    column: String,
    owner: String,
    acq: u64,
    expected: Option<Fence>,
    consistency: Consistency,
    serial: SerialConsistency,
    tries: u32,
}

impl FenceBump {
    /// `current` is the counter's value as last seen (`None`: believed absent).
    pub fn new(
        row: &str,
        column: &str,
        owner: String,
        acq: u64,
        current: Option<&str>,
        consistency: Consistency,
        serial: SerialConsistency,
    ) -> Result<Self> {
        let expected = current.map(Fence::decode).transpose()?;
        Ok(FenceBump {
            row: row.into(),
            column: column.into(),
            owner,
            acq,
            expected,
            consistency,
            serial,
            tries: 0,
        })
    }

    /// The value this bump writes.
    pub fn next_value(&self) -> String {
        Fence {
            token: self.next_token(),
            owner: self.owner.clone(),
            acq: self.acq,
        }
        .encode()
    }

    pub fn command(&self) -> Command {
        let next = self.next_value();
        match &self.expected {
            None => Command::InsertIfAbsent {
                row: self.row.clone(),
                column: self.column.clone(),
                value: next,
                ttl: None,
                serial: self.serial,
                consistency: self.consistency,
            },
            Some(current) => Command::CompareAndSet {
                row: self.row.clone(),
                column: self.column.clone(),
                expected: current.encode(),
                new: Some(next),
                ttl: None,
                serial: self.serial,
                consistency: self.consistency,
            },
        }
    }

    fn next_token(&self) -> u64 {
        self.expected
            .as_ref()
            .map_or(1, |f| f.token.saturating_add(1))
    }

    /// `Ok(Some(token))` once the counter moved to our token; `Ok(None)` when another attempt is
    /// needed (send [`FenceBump::command`] again).
    pub fn on_reply(&mut self, reply: Reply) -> Result<Option<u64>> {
        match reply {
            Reply::Conditional { applied: true, .. } => Ok(Some(self.next_token())),
            Reply::Conditional {
                applied: false,
                current,
            } => {
                self.tries += 1;
                if self.tries > 64 {
                    return Err(Error::new(
                        ErrorKind::StoreError,
                        "the fencing counter changed 64 times during one grant; is the lock table shared with another program?",
                    ));
                }
                self.expected = current.as_deref().map(Fence::decode).transpose()?;
                Ok(None)
            }
            other => Err(unexpected("fencing counter update", &other)),
        }
    }
}
