//! The operator: purges and forced releases among the clients, and which grants a forced
//! release broke.

use baton_kernel::{ForceRelease, LockName, LockOptions, PrefixOptions, Purge};

use super::{GrantOwner, Role, Sim, State, MS};

impl Sim {
    /// The grant resting on a cell a forced release removed was broken from `at` on, whether
    /// it was delivered already or is delivered later.
    pub(super) fn mark_forced(&mut self, owner: String, value: String, at: u64) {
        let who = GrantOwner { owner, value };
        for (g, o) in self.grants.iter_mut().zip(&self.owners) {
            if *o == who && g.forced_at.is_none() {
                g.forced_at = Some(at);
            }
        }
        self.broken.push((who, at));
    }

    pub(super) fn operator_sleep(&mut self, i: usize) {
        let ttl = self.ttl();
        let at = self.now + 50 * MS + self.rng.below(2 * ttl);
        self.timer_at(i, at);
    }

    /// The operator's next command: mostly purges, sometimes a forced release.
    pub(super) fn operate(&mut self, i: usize) {
        if self
            .clients
            .iter()
            .all(|c| c.role == Role::Operator || c.crashed || matches!(c.state, State::Done))
        {
            self.clients[i].state = State::Done;
            return;
        }
        let name = self.names[self.rng.below(self.names.len() as u64) as usize].clone();
        let opts = LockOptions {
            strategy: self.cfg.strategy,
            prefix: PrefixOptions {
                cell_ttl: self.cfg.cell_ttl,
                ..PrefixOptions::default()
            },
            seed: self.rng.next_u64(),
            sabotage: self.cfg.sabotage,
            ttl: self.cfg.ttl,
            paths: self.cfg.paths,
            ..LockOptions::default()
        };
        self.clients[i].op += 1;
        if self.rng.below(10) < 3 {
            // Half the forced releases break one holder a grant named (`--holder`): one
            // reader or permit among others, or the only holder (a writer).
            // In runs with shared or counted holders, among grants not released yet, so that
            // it often breaks one live holder among others.
            let live: Vec<usize> = (0..self.grants.len())
                .filter(|&g| self.grants[g].released.is_none())
                .collect();
            let modes = self.cfg.modes != super::super::Modes::Exclusive;
            let one = (modes && !live.is_empty() && self.holder_rng.below(2) == 0).then(|| {
                let g = live[self.holder_rng.below(live.len() as u64) as usize];
                (self.grants[g].name.clone(), self.owners[g].owner.clone())
            });
            let op = match one.and_then(|(n, owner)| Some((LockName::new(&n).ok()?, owner))) {
                Some((name, owner)) => ForceRelease::new(name, &opts).holder(owner),
                None => ForceRelease::new(name, &opts),
            };
            self.clients[i].state = State::Forcing {
                op: Box::new(op),
                started: self.now,
            };
        } else {
            self.faults.purges += 1;
            let target = (self.rng.below(2) == 0).then_some(name);
            self.clients[i].state = State::Purging(Box::new(Purge::new(target, &opts)));
        }
        self.step(i);
    }
}
