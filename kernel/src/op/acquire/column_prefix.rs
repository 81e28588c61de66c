//! Column prefix's steps of an acquisition: our column written, then the prefix read.

use alloc::format;

use super::{Acquire, Phase, Then};
use crate::error::{Error, ErrorKind};
use crate::model::Reply;
use crate::strategy::prefix;
use crate::time::Instant;

impl Acquire {
    /// A reply to one of column prefix's commands.
    pub(super) fn on_prefix_reply(
        &mut self,
        phase: Phase,
        reply: Reply,
        sent: Instant,
        now: Instant,
    ) {
        match (phase, reply) {
            (Phase::PrefixWrite, Reply::Written) => {
                self.cell_written(sent);
                self.phase = Phase::PrefixRead;
                self.io.send(self.read_row(self.opts.prefix.read_row));
            }
            (Phase::PrefixRead, Reply::Cells(cells)) => {
                self.newest_stamp = cells.iter().map(|c| c.stamp).max().unwrap_or(0);
                let found = prefix::classify(&self.layout, cells, &self.column);
                if !found.ours || self.lapsed(now) {
                    return self.abandon(Then::Restart);
                }
                if let Some(other) = found.others.first() {
                    let busy = self.busy_because_of("held by", other);
                    return self.abandon(Then::Contended(busy));
                }
                if !found.stale.is_empty() && self.opts.prefix.fail_on_stale_lock {
                    let e = Error::new(
                        ErrorKind::StaleLock,
                        format!(
                            "lock {:?} has stale lock column(s) {:?}; purge them or acquire without fail_on_stale_lock",
                            self.name.as_str(),
                            found.stale
                        ),
                    );
                    return self.abandon(Then::Fail(e));
                }
                self.stale = found.stale;
                self.data = found.data;
                self.start_fence(found.fence, true);
            }
            (phase, reply) => self.unexpected_reply(&phase, &reply),
        }
    }
}
