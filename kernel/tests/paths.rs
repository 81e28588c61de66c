//! Paths (issue 43, docs/modes-design.md "Counters with paths"), driven against the memory
//! model: a lock on a path conflicts with its ancestors and descendants, not with its siblings
//! or with names that merely share a prefix; shared requests on related paths hold together;
//! tokens exceed every earlier related grant's; grants on unrelated paths of the same tree
//! never read as a loss; bad paths and strategies that cannot carry them are refused.

use std::time::Duration;

use baton_kernel::{
    Acquire, ErrorKind, ForceRelease, Grant, Instant, LockName, LockOptions, MemoryTable, Mode,
    Operation, OwnerId, Poll, Release, Renew, Strategy, Wait,
};

const STRATEGIES: [Strategy; 2] = [Strategy::Bakery, Strategy::ColumnPrefix];

/// Every reply takes this long.
const RT: Duration = Duration::from_millis(3);

fn opts(strategy: Strategy, mode: Mode) -> LockOptions {
    LockOptions {
        strategy,
        mode,
        paths: true,
        wait: Wait::TryOnce,
        ..LockOptions::default()
    }
}

fn acquire(strategy: Strategy, mode: Mode, path: &str, host: &str) -> Acquire {
    let owner = OwnerId::new(host, 1, 7).expect("owner");
    Acquire::new(
        LockName::new(path).expect("name"),
        owner,
        opts(strategy, mode),
    )
    .expect("valid")
}

fn run<O: Operation>(
    table: &mut MemoryTable,
    op: &mut O,
    mut now: Instant,
) -> (baton_kernel::Result<O::Output>, Instant) {
    loop {
        match op.poll(now) {
            Poll::Execute(id, command) => {
                let reply = table.apply(&command, now);
                now = now.saturating_add(RT);
                op.handle(id, reply);
            }
            Poll::WaitUntil(_) => panic!("a try-once operation slept"),
            Poll::Ready(r) => return (r, now),
        }
    }
}

struct World {
    table: MemoryTable,
    now: Instant,
    hosts: u32,
}

impl World {
    fn new() -> Self {
        World {
            table: MemoryTable::default(),
            now: Instant::from_nanos(1),
            hosts: 0,
        }
    }

    fn lock(&mut self, strategy: Strategy, mode: Mode, path: &str) -> baton_kernel::Result<Grant> {
        self.hosts += 1;
        let host = format!("h{}", self.hosts);
        let (r, now) = run(
            &mut self.table,
            &mut acquire(strategy, mode, path, &host),
            self.now,
        );
        self.now = now;
        r
    }

    fn release(&mut self, grant: Grant) -> baton_kernel::Result<()> {
        let (r, now) = run(&mut self.table, &mut Release::new(&grant.lease), self.now);
        self.now = now;
        r
    }

    fn renew(&mut self, grant: &Grant) -> baton_kernel::Result<()> {
        let (r, now) = run(&mut self.table, &mut Renew::new(&grant.lease), self.now);
        self.now = now;
        r.map(|_| ())
    }
}

impl World {
    /// Breaks `path`'s entries (all, or `holder`'s only), as an operator.
    fn force(&mut self, strategy: Strategy, path: &str, holder: Option<&Grant>) -> usize {
        let name = LockName::new(path).expect("name");
        let opts = opts(strategy, Mode::Exclusive);
        let mut op = ForceRelease::new(name, &opts);
        if let Some(g) = holder {
            op = op.holder(g.lease.owner().key());
        }
        let (r, now) = run(&mut self.table, &mut op, self.now);
        self.now = now;
        r.expect("forced release").len()
    }
}

fn kind<T>(r: baton_kernel::Result<T>) -> ErrorKind {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.kind(),
    }
}

#[test]
fn a_path_conflicts_with_its_ancestors_and_descendants_only() {
    for strategy in STRATEGIES {
        let mut w = World::new();
        let x = Mode::Exclusive;
        let cache = w.lock(strategy, x, "app.cache").expect("app.cache");
        assert_eq!(
            kind(w.lock(strategy, x, "app")),
            ErrorKind::Busy,
            "{strategy}"
        );
        assert_eq!(
            kind(w.lock(strategy, x, "app.cache.users")),
            ErrorKind::Busy
        );
        assert_eq!(kind(w.lock(strategy, Mode::Shared, "app")), ErrorKind::Busy);
        let db = w.lock(strategy, x, "app.db").expect("a sibling is free");
        let apple = w
            .lock(strategy, x, "apple")
            .expect("a prefix is not a parent");
        let other = w
            .lock(strategy, x, "app.cachex")
            .expect("nor is a longer segment");
        for g in [cache, db, apple, other] {
            w.release(g).expect("intact");
        }
        w.lock(strategy, x, "app").expect("the tree is free again");
    }
}

#[test]
fn shared_requests_on_related_paths_hold_together() {
    for strategy in STRATEGIES {
        let mut w = World::new();
        let s = Mode::Shared;
        let root = w.lock(strategy, s, "app").expect("app");
        let leaf = w
            .lock(strategy, s, "app.cache.users")
            .expect("app.cache.users");
        assert_eq!(
            kind(w.lock(strategy, Mode::Exclusive, "app.cache")),
            ErrorKind::Busy
        );
        w.release(root).expect("intact");
        w.release(leaf).expect("intact");
        w.lock(strategy, Mode::Exclusive, "app.cache")
            .expect("free");
    }
}

#[test]
fn tokens_exceed_every_earlier_related_grant() {
    for strategy in STRATEGIES {
        let mut w = World::new();
        let x = Mode::Exclusive;
        let mut last = 0;
        for path in ["app.db", "app.db", "app.db", "app.cache"] {
            let g = w.lock(strategy, x, path).expect("free");
            last = last.max(g.lease.token());
            w.release(g).expect("intact");
        }
        let root = w.lock(strategy, x, "app").expect("free");
        assert!(
            root.lease.token() > last,
            "{strategy}: {} <= {last}",
            root.lease.token()
        );
        let token = root.lease.token();
        w.release(root).expect("intact");
        let shared = w
            .lock(strategy, Mode::Shared, "app.cache.users")
            .expect("free");
        assert!(
            shared.lease.token() > token,
            "{strategy}: a reader after the writer"
        );
    }
}

#[test]
fn unrelated_grants_in_the_tree_are_no_loss() {
    for strategy in STRATEGIES {
        let mut w = World::new();
        let held = w
            .lock(strategy, Mode::Exclusive, "app.cache")
            .expect("free");
        let reader = w
            .lock(strategy, Mode::Shared, "app.db.users")
            .expect("free");
        for _ in 0..3 {
            let g = w
                .lock(strategy, Mode::Exclusive, "app.queue")
                .expect("a sibling");
            w.release(g).expect("intact");
        }
        w.renew(&held)
            .expect("still held: nothing related was granted");
        w.renew(&reader).expect("still held");
        w.release(held).expect("intact");
        w.release(reader).expect("intact");
    }
}

#[test]
fn bad_paths_and_strategies_are_refused() {
    let owner = OwnerId::new("h", 1, 7).expect("owner");
    for strategy in STRATEGIES {
        for bad in ["a..b", "a.", ".a", "a|b"] {
            let e = Acquire::new(
                LockName::new(bad).expect("a valid flat name"),
                owner.clone(),
                opts(strategy, Mode::Exclusive),
            )
            .expect_err(bad);
            assert_eq!(e.kind(), ErrorKind::InvalidName, "{bad}: {e}");
        }
    }
    let e = Acquire::new(
        LockName::new("app").expect("name"),
        owner,
        opts(Strategy::UniqueInsert, Mode::Exclusive),
    )
    .expect_err("unique insert");
    assert_eq!(e.kind(), ErrorKind::InvalidOption);
}

#[test]
fn breaking_one_reader_leaves_the_others_holding() {
    for strategy in STRATEGIES {
        let mut w = World::new();
        let s = Mode::Shared;
        let a = w.lock(strategy, s, "app.cache").expect("a");
        let b = w.lock(strategy, s, "app.cache").expect("b");
        let below = w.lock(strategy, s, "app.cache.users").expect("below");
        assert_eq!(
            w.force(strategy, "app.cache", Some(&a)),
            1,
            "{strategy}: a's entry"
        );
        assert_eq!(
            kind(w.renew(&a)),
            ErrorKind::Lost,
            "{strategy}: a was broken"
        );
        w.renew(&b).expect("b keeps its lease");
        w.renew(&below).expect("a reader below keeps its lease");
        // A writer still waits for b.
        assert_eq!(
            kind(w.lock(strategy, Mode::Exclusive, "app")),
            ErrorKind::Busy
        );
        w.release(b).expect("b was never broken");
        w.release(below).expect("intact");
        assert_eq!(kind(w.release(a)), ErrorKind::Lost);
        // Breaking everyone on a path tells every holder there.
        let c = w.lock(strategy, s, "app.db").expect("c");
        let d = w.lock(strategy, s, "app.db").expect("d");
        assert_eq!(w.force(strategy, "app.db", None), 2);
        assert_eq!(kind(w.renew(&c)), ErrorKind::Lost);
        assert_eq!(kind(w.renew(&d)), ErrorKind::Lost);
    }
}

/// A flat lock on a root's name after its tree was used: the tree's counters are no holders
/// (they never expire: reading one as an entry blocked the flat lock for good on SQL stores).
#[test]
fn a_flat_lock_on_the_root_after_the_tree_is_free() {
    for strategy in STRATEGIES {
        let mut w = World::new();
        let g = w
            .lock(strategy, Mode::Exclusive, "app.cache")
            .expect("path");
        w.release(g).expect("intact");
        let owner = OwnerId::new("flat", 1, 7).expect("owner");
        let flat = LockOptions {
            strategy,
            wait: Wait::TryOnce,
            ..LockOptions::default()
        };
        let mut op = Acquire::new(LockName::new("app").expect("name"), owner, flat).expect("valid");
        let (r, _) = run(&mut w.table, &mut op, w.now);
        r.expect("the root's flat lock is free");
    }
}
