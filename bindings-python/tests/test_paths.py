"""Paths and several locks at once (issue 43) on the store BATON_TEST_URL names (the memory store
when unset), with the strategies that have them (bakery, column prefix): a path conflicts with
its ancestors and descendants, not its siblings; bad paths and unique insert are refused;
``lock_all`` takes its names in one order, all or nothing, sync and asyncio, and refuses what
it cannot take."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from typing import Iterator, List

import pytest

import baton

MODAL = ["bakery", "column-prefix"]


def url() -> str:
    return os.environ.get("BATON_TEST_URL") or "memory:"


def fresh(base: str) -> str:
    """A root of its own for each test (no dot in it): the store's tables outlive a run."""
    return f"{base}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=MODAL)
def strategy(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def tree(strategy: str) -> Iterator[baton.Locker]:
    yield baton.Locker(url(), strategy=strategy, timeout=0.3, ttl=5, paths=True)


@pytest.fixture
def flat(strategy: str) -> Iterator[baton.Locker]:
    yield baton.Locker(url(), strategy=strategy, timeout=0.3, ttl=5)


def free(locker: baton.Locker, name: str) -> bool:
    """Whether an exclusive lock on ``name`` can be had now (it is then released again)."""
    lease = locker.try_lock(name)
    if lease is None:
        return False
    lease.release()
    return True


# --- paths ----------------------------------------------------------------------------------


def test_a_path_conflicts_with_its_ancestors_and_descendants(tree: baton.Locker) -> None:
    app = fresh("app")
    with tree.lock(f"{app}.cache") as cache:
        assert cache.name == f"{app}.cache" and cache.mode == "exclusive"
        assert tree.try_lock(app) is None  # an ancestor
        assert tree.try_lock(app, shared=True) is None
        assert tree.try_lock(f"{app}.cache") is None  # itself
        assert tree.try_lock(f"{app}.cache.users") is None  # a descendant
        assert tree.try_lock(f"{app}.cache.users.x", shared=True) is None
        with pytest.raises(baton.TimedOut):
            with tree.lock(f"{app}.cache.users", timeout=0.05):
                pass
        assert free(tree, f"{app}.db")  # a sibling
        assert free(tree, f"{app}.cachex")  # not a descendant: segments, not prefixes
        assert free(tree, f"{app}le")  # `apple` beside `app`
    assert free(tree, app) and free(tree, f"{app}.cache.users")


def test_shared_paths_share_and_exclude_writers(tree: baton.Locker) -> None:
    app = fresh("app")
    with tree.lock(app, shared=True), tree.lock(f"{app}.cache", shared=True) as reader:
        assert reader.mode == "shared"
        assert tree.try_lock(f"{app}.cache.users") is None  # a writer below a reader
        assert tree.try_lock(app) is None
        assert free(tree, f"{fresh('other')}.cache")


def test_a_descendant_held_keeps_an_ancestor_out_async(tree: baton.Locker) -> None:
    app = fresh("app")

    async def main() -> None:
        async with tree.lock(f"{app}.a.b.c"):
            with pytest.raises(baton.TimedOut):
                async with tree.lock(app, timeout=0.05):
                    pass
            async with tree.lock(f"{app}.a.x"):
                pass

    asyncio.run(main())


def test_flat_names_see_no_tree(flat: baton.Locker) -> None:
    app = fresh("app")
    with flat.lock(f"{app}.cache"):
        assert free(flat, app) and free(flat, f"{app}.cache.users")


@pytest.mark.parametrize("name", ["a..b", "a.", ".a", "a|b", ".", "a.b.", ".".join(["s"] * 17)])
def test_bad_paths(tree: baton.Locker, name: str) -> None:
    with pytest.raises(baton.InvalidName):
        with tree.lock(name):
            pass
    with pytest.raises(baton.InvalidName):
        tree.try_lock(name, shared=True)
    with pytest.raises(baton.InvalidName):
        tree.semaphore(name, 2).acquire()  # Locker.semaphore checks a flat name; the acquire a path
    with pytest.raises(baton.InvalidName):
        with tree.lock_all([f"{fresh('ok')}.x", name]):
            pass


def test_sixteen_segments_are_a_path(tree: baton.Locker) -> None:
    deep = ".".join([fresh("d")] + ["s"] * 15)
    with tree.lock(deep) as lease:
        assert lease.name == deep


@pytest.mark.parametrize("strategy", [None, "unique-insert"])
def test_unique_insert_takes_no_paths(strategy: str | None) -> None:
    with pytest.raises(baton.InvalidOption, match="bakery|column"):
        baton.Locker(url(), strategy=strategy, paths=True)


@pytest.mark.parametrize("paths", ["yes", 1, None])
def test_paths_must_be_a_bool(paths: object) -> None:
    with pytest.raises(baton.InvalidOption, match="paths"):
        baton.Locker(url(), strategy="bakery", paths=paths)  # type: ignore[arg-type]


def test_objects_are_refused_on_paths(tree: baton.Locker) -> None:
    name = fresh("obj")
    with pytest.raises(baton.InvalidOption, match="path"):
        with tree.get_and_lock(name):
            pass
    with pytest.raises(baton.InvalidOption):
        tree.insert(name, b"v")
    with pytest.raises(baton.InvalidOption):
        tree.get(name)
    with pytest.raises(baton.InvalidOption):
        with tree.insert_and_lock(name, b"v"):
            pass

    async def main() -> None:
        async with tree.get_and_lock(name):
            pass

    with pytest.raises(baton.InvalidOption):
        asyncio.run(main())


# --- lock_all -------------------------------------------------------------------------------


def test_lock_all_takes_names_in_one_order(flat: baton.Locker) -> None:
    r = fresh("r")
    given = [f"{r}.b", f"{r}.a.x", f"{r}", f"{r}.a"]
    with flat.lock_all(given) as leases:
        assert [lease.name for lease in leases] == [r, f"{r}.a", f"{r}.a.x", f"{r}.b"]
        assert all(lease.held and lease.mode == "exclusive" for lease in leases)
        for name in given:
            assert flat.try_lock(name) is None
    assert not any(lease.held for lease in leases)
    assert all(free(flat, name) for name in given)


def test_lock_all_on_paths(tree: baton.Locker) -> None:
    r, s = fresh("r"), fresh("s")
    with tree.lock_all([s, f"{r}.z", f"{r}.a.b"], timeout=2) as leases:
        assert [lease.name for lease in leases] == sorted([f"{r}.a.b", f"{r}.z", s])
        assert tree.try_lock(r) is None  # the common ancestor
        assert tree.try_lock(f"{r}.a") is None
        assert free(tree, f"{r}.m")  # a sibling of both
    assert free(tree, r) and free(tree, s)


def test_lock_all_shared(tree: baton.Locker) -> None:
    r = fresh("r")
    with tree.lock_all([f"{r}.a", f"{r}.b"], shared=True) as one:
        with tree.lock_all([f"{r}.b", f"{r}.c"], shared=True) as two:
            assert [lease.mode for lease in one + two] == ["shared"] * 4
            assert tree.try_lock(f"{r}.b") is None
            root = tree.try_lock(r, shared=True)  # readers share the root
            assert root is not None
            root.release()
        assert free(tree, f"{r}.c")


def test_acquire_all(flat: baton.Locker) -> None:
    names = [fresh("y"), fresh("x")]
    leases = flat.acquire_all(iter(names))
    assert sorted(lease.name for lease in leases) == sorted(names)
    assert all(flat.try_lock(name) is None for name in names)
    for lease in leases:
        lease.release()
    assert all(free(flat, name) for name in names)


@pytest.mark.parametrize("tries", [0, 1, 2])
def test_a_timeout_leaves_nothing_held(flat: baton.Locker, tries: int) -> None:
    r = fresh("r")
    names = [f"{r}.a", f"{r}.b", f"{r}.c"]
    blocker = flat.acquire(names[tries])  # the first, the middle or the last is busy
    started = time.monotonic()
    with pytest.raises(baton.TimedOut):
        with flat.lock_all(list(reversed(names)), timeout=0.2):
            pytest.fail("lock_all went in while a name was held")
    assert time.monotonic() - started < 5
    for name in names:
        if name != names[tries]:
            assert free(flat, name), f"{name} was left held"
    blocker.release()
    with flat.lock_all(names, timeout=1) as leases:
        assert len(leases) == 3


def test_a_timeout_leaves_nothing_held_async(tree: baton.Locker) -> None:
    r = fresh("r")
    blocker = tree.acquire(f"{r}.z.deep")  # a descendant of the last

    async def main() -> None:
        with pytest.raises(baton.TimedOut):
            async with tree.lock_all([f"{r}.z", f"{r}.a"], timeout=0.2):
                pass
        assert free(tree, f"{r}.a")
        blocker.release()
        async with tree.lock_all([f"{r}.z", f"{r}.a"]) as leases:
            assert [lease.name for lease in leases] == [f"{r}.a", f"{r}.z"]
        assert not any(lease.held for lease in leases)

    asyncio.run(main())
    assert free(tree, r)


def test_lock_all_cancelled_leaves_nothing_held(flat: baton.Locker, strategy: str) -> None:
    r = fresh("r")
    patient = baton.Locker(url(), strategy=strategy, timeout=30, ttl=5)
    blocker = patient.acquire(f"{r}.b")

    async def main() -> None:
        task = asyncio.ensure_future(patient.lock_all([f"{r}.a", f"{r}.b"]).__aenter__())
        await asyncio.sleep(0.2)
        assert patient.try_lock(f"{r}.a") is None  # taken, waiting for b
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    blocker.release()
    deadline = time.monotonic() + 5  # the dropped guard is released in the background
    while not free(flat, f"{r}.a"):
        assert time.monotonic() < deadline, "a cancelled lock_all left a lock held"
        time.sleep(0.02)


def test_lock_all_does_not_deadlock(strategy: str) -> None:
    locker = baton.Locker(url(), strategy=strategy, timeout=30, ttl=5)
    r = fresh("r")
    a, b = f"{r}.a", f"{r}.b"
    done: List[int] = []

    def work(names: List[str]) -> None:
        for _ in range(5):
            with locker.lock_all(names):
                time.sleep(0.002)
        done.append(1)

    threads = [threading.Thread(target=work, args=(order,)) for order in ([a, b], [b, a], [a, b])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(done) == 3


def test_leaving_releases_every_lease_after_a_failed_release(flat: baton.Locker) -> None:
    r = fresh("r")
    try:
        with flat.lock_all([f"{r}.a", f"{r}.b"]) as leases:
            flat.force_release(leases[-1].name)  # released first on leaving: it fails
    except baton.Lost:
        pass  # reported once every lease was released
    assert not leases[0].held
    assert free(flat, f"{r}.a")


# --- what lock_all refuses ------------------------------------------------------------------


def test_no_names(flat: baton.Locker, tree: baton.Locker) -> None:
    for locker in (flat, tree):
        with pytest.raises(baton.InvalidOption, match="at least one"):
            with locker.lock_all([]):
                pass
        with pytest.raises(baton.InvalidOption):
            locker.acquire_all(())


def test_a_name_twice(flat: baton.Locker, tree: baton.Locker) -> None:
    for locker in (flat, tree):
        name = fresh("twice")
        with pytest.raises(baton.InvalidOption, match="twice|overlap"):
            with locker.lock_all([name, fresh("other"), name]):
                pass
        assert free(locker, name)


def test_a_path_with_its_ancestor(tree: baton.Locker, flat: baton.Locker) -> None:
    r = fresh("r")
    for names in ([r, f"{r}.a"], [f"{r}.a.b.c", f"{r}.x", f"{r}.a"]):
        with pytest.raises(baton.InvalidOption, match="overlap"):
            with tree.lock_all(names):
                pass

        async def main() -> None:
            async with tree.lock_all(names):
                pass

        with pytest.raises(baton.InvalidOption):
            asyncio.run(main())
    assert free(tree, r)
    f = fresh("flat")  # a root of its own: flat and path locks on one name are not to be mixed
    with flat.lock_all([f, f"{f}.a"]) as leases:  # flat names: two names, no tree
        assert len(leases) == 2


def test_not_a_list(flat: baton.Locker) -> None:
    for names in ("ab", b"ab", 42, None):
        with pytest.raises(baton.InvalidOption, match="list"):
            flat.lock_all(names)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name",
    ["", "a\0b", "x" * (1 << 20), "bad-\udcff", b"bytes", b"\xff\xfe", 42, None],
)
def test_bad_names(flat: baton.Locker, tree: baton.Locker, name: object) -> None:
    for locker in (flat, tree):
        with pytest.raises(baton.InvalidName):
            with locker.lock_all([fresh("ok"), name]):  # type: ignore[list-item]
                pass
        with pytest.raises(baton.InvalidName):
            locker.acquire_all([name])  # type: ignore[list-item]
        with pytest.raises(baton.InvalidName):
            with locker.lock(name):  # type: ignore[arg-type]
                pass


def test_a_bad_name_takes_nothing(flat: baton.Locker) -> None:
    good = fresh("good")
    with pytest.raises(baton.InvalidName):
        flat.acquire_all([good, "a\0b"])
    assert free(flat, good)


def test_bad_timeout_and_shared(flat: baton.Locker) -> None:
    with pytest.raises(baton.InvalidOption):
        with flat.lock_all([fresh("t")], timeout=-1):
            pass
    with pytest.raises(baton.InvalidOption):
        flat.lock_all([fresh("t")], timeout="soon")  # type: ignore[arg-type]
    with pytest.raises(baton.InvalidOption):
        flat.lock_all([fresh("t")], shared=1)  # type: ignore[arg-type]


def test_shared_lock_all_needs_a_modal_strategy() -> None:
    locker = baton.Locker(url(), timeout=0.3)
    with pytest.raises(baton.InvalidOption, match="bakery|column"):
        with locker.lock_all([fresh("u")], shared=True):
            pass
    with locker.lock_all([fresh("u"), fresh("v")]) as leases:  # exclusive: any strategy
        assert len(leases) == 2
