"""Shared locks and semaphores (issue 43) on the store BATON_TEST_URL names (the memory store
when unset), with the strategies that have them (bakery, column prefix): readers together, a
writer shut out, a semaphore shaped like threading.BoundedSemaphore, sync and asyncio, and every
error a user meets (bad permits, unique insert, one name used in two modes, bad names)."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from typing import Iterator

import pytest

import baton

MODAL = ["bakery", "column-prefix"]


def url() -> str:
    return os.environ.get("BATON_TEST_URL") or "memory:"


def fresh(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=MODAL)
def strategy(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def locker(strategy: str) -> Iterator[baton.Locker]:
    yield baton.Locker(url(), strategy=strategy, timeout=0.3, ttl=5)


# --- shared locks ---------------------------------------------------------------------------


def test_readers_share_and_a_writer_waits(locker: baton.Locker) -> None:
    name = fresh("catalog")
    with locker.lock(name, shared=True) as a, locker.lock(name, shared=True) as b:
        assert a.held and b.held and a.mode == b.mode == "shared"
        assert a.token != b.token
        assert locker.try_lock(name) is None  # an exclusive try is Busy
        with pytest.raises(baton.TimedOut):
            with locker.lock(name, timeout=0.05):
                pass
        c = locker.try_lock(name, shared=True)  # a third reader, once
        assert c is not None and c.mode == "shared"
        c.release()
        with pytest.raises(baton.NotOwner):
            c.release()  # twice
    assert not a.held and not b.held
    with locker.lock(name) as writer:
        assert writer.mode == "exclusive"
        assert locker.try_lock(name, shared=True) is None  # readers wait for the writer
    lease = locker.acquire(name, shared=True)
    assert lease.mode == "shared" and "shared" in repr(lease)
    lease.release()


def test_shared_async_and_decorator(locker: baton.Locker) -> None:
    name = fresh("async-catalog")

    @locker.locked(name, shared=True)
    def read() -> str:
        lease = locker.try_lock(name, shared=True)  # another reader gets in meanwhile
        assert lease is not None
        lease.release()
        assert locker.try_lock(name) is None
        return "read"

    async def main() -> None:
        async with locker.lock(name, shared=True) as a:
            async with locker.lock(name, shared=True) as b:
                assert a.mode == b.mode == "shared"
                with pytest.raises(baton.TimedOut):
                    async with locker.lock(name, timeout=0.05):
                        pass

    asyncio.run(main())
    assert read() == "read"


def test_shared_needs_a_modal_strategy() -> None:
    locker = baton.Locker(url(), strategy="unique-insert", timeout=0.3)
    with pytest.raises(baton.InvalidOption, match="bakery|column"):
        with locker.lock(fresh("unique"), shared=True):
            pass
    with pytest.raises(baton.InvalidOption):
        locker.try_lock(fresh("unique"), shared=True)
    with pytest.raises(baton.InvalidOption, match="bakery|column"):
        locker.semaphore(fresh("unique"), 3)

    async def main() -> None:
        async with locker.lock(fresh("unique"), shared=True):
            pass

    with pytest.raises(baton.InvalidOption):
        asyncio.run(main())
    with pytest.raises(baton.InvalidOption):
        baton.Locker(url()).lock("x", shared="yes")  # type: ignore[arg-type]


# --- semaphores -----------------------------------------------------------------------------


def test_semaphore_admits_its_permits(locker: baton.Locker) -> None:
    name = fresh("encoders")
    sem = locker.semaphore(name, 3)
    assert (sem.name, sem.permits, sem.held) == (name, 3, 0)
    assert sem.acquire() and sem.acquire(timeout=1) and sem.acquire(blocking=False)
    assert sem.held == 3
    assert sem.acquire(blocking=False) is False  # a 4th: Busy, as threading says it
    assert sem.acquire(timeout=0.05) is False  # TimedOut likewise
    other = locker.semaphore(name, 3)  # another user of the same semaphore
    assert other.acquire(blocking=False) is False
    sem.release()  # gives one back
    assert sem.held == 2
    assert other.acquire(blocking=False)
    other.release()
    sem.release()
    sem.release()
    with pytest.raises(ValueError, match="released too many times"):
        sem.release()
    with pytest.raises(ValueError):
        sem.acquire(blocking=False, timeout=1)
    assert "permits=3" in repr(sem)


def test_semaphore_with_and_mode(locker: baton.Locker) -> None:
    name = fresh("with")
    sem = locker.semaphore(name, 2)
    with sem:
        assert sem._leases[0].mode == "counted(2)"  # each permit is a lease of its own
        with sem:
            assert sem.held == 2
            assert not sem.acquire(blocking=False)
        assert sem.held == 1
    assert sem.held == 0
    assert sem.acquire()
    sem.release()
    with pytest.raises(baton.TimedOut):
        with sem, sem, sem:
            pass
    assert sem.held == 0  # the two taken before the third timed out were given back


def test_semaphore_async(locker: baton.Locker, strategy: str) -> None:
    name = fresh("async-sem")
    sem = locker.semaphore(name, 2)
    inside = 0
    most = 0

    async def worker(s: baton.Semaphore) -> None:
        nonlocal inside, most
        async with s:
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    async def main() -> None:
        assert await sem.acquire_async()
        assert await sem.acquire_async(blocking=False)
        assert await sem.acquire_async(blocking=False) is False
        assert await sem.acquire_async(timeout=0.05) is False
        await sem.release_async()
        await sem.release_async()
        with pytest.raises(ValueError, match="released too many times"):
            await sem.release_async()
        async with sem:
            async with sem:
                assert sem.held == 2
                with pytest.raises(baton.TimedOut):
                    async with sem:
                        pass
        assert sem.held == 0
        patient = baton.Locker(url(), strategy=strategy, timeout=30, ttl=5).semaphore(fresh("gather"), 2)
        await asyncio.gather(*(worker(patient) for _ in range(6)))

    asyncio.run(main())
    assert 1 <= most <= 2 and inside == 0  # 2 unless contention spaced them out


def test_semaphore_threads(strategy: str) -> None:
    name = fresh("threads-sem")
    sem = baton.Locker(url(), strategy=strategy, timeout=30, ttl=5).semaphore(name, 2)
    inside = 0
    most = 0
    count = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        for _ in range(3):
            with sem:
                with count:
                    inside += 1
                    most = max(most, inside)
                threading.Event().wait(0.005)
                with count:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most <= 2 and inside == 0 and sem.held == 0


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("permits", [0, -1, 10_001, 1 << 70, -(1 << 70)])
def test_permits_out_of_range(locker: baton.Locker, permits: int) -> None:
    with pytest.raises(baton.InvalidOption, match="permits"):
        locker.semaphore(fresh("bad"), permits)


@pytest.mark.parametrize("permits", ["3", 3.0, None, True, b"3"])
def test_permits_not_an_int(locker: baton.Locker, permits: object) -> None:
    with pytest.raises(baton.InvalidOption, match="int"):
        locker.semaphore(fresh("bad"), permits)  # type: ignore[arg-type]


def test_the_extremes_of_permits(locker: baton.Locker) -> None:
    one = locker.semaphore(fresh("one"), 1)
    assert one.acquire() and not one.acquire(blocking=False)
    one.release()
    most = locker.semaphore(fresh("most"), 10_000)
    assert most.acquire()
    most.release()


def test_two_sizes_on_one_name(locker: baton.Locker) -> None:
    name = fresh("sizes")
    three, four = locker.semaphore(name, 3), locker.semaphore(name, 4)
    assert three.acquire()
    with pytest.raises(baton.InvalidOption) as raised:
        four.acquire()  # an error, not False: it is a mistake, not a full semaphore
    assert "counted(3)" in str(raised.value) and "counted(4)" in str(raised.value)
    with pytest.raises(baton.InvalidOption):
        four.acquire(blocking=False)
    assert four.held == 0
    three.release()


def test_semaphore_and_lock_on_one_name(locker: baton.Locker) -> None:
    name = fresh("mixed")
    sem = locker.semaphore(name, 3)
    with locker.lock(name, shared=True):
        with pytest.raises(baton.InvalidOption) as raised:
            sem.acquire()
        assert "shared" in str(raised.value) and "counted(3)" in str(raised.value)
    assert sem.acquire()
    with pytest.raises(baton.InvalidOption):
        locker.try_lock(name, shared=True)
    with pytest.raises(baton.InvalidOption):
        locker.try_lock(name)
    sem.release()


@pytest.mark.parametrize(
    "name",
    ["", "a\0b", "x" * (1 << 20), "bad-\udcff", b"bytes", 42],
)
def test_bad_names(locker: baton.Locker, name: object) -> None:
    with pytest.raises(baton.InvalidName):
        locker.semaphore(name, 3)  # type: ignore[arg-type]
    with pytest.raises(baton.InvalidName):
        with locker.lock(name, shared=True):  # type: ignore[arg-type]
            pass


def test_odd_but_valid_names(locker: baton.Locker) -> None:
    for name in (fresh("ünïcode-名前"), fresh("x" * 200)):
        sem = locker.semaphore(name, 2)
        assert sem.acquire()
        sem.release()
        with locker.lock(name, shared=True) as lease:
            assert lease.name == name
