"""The Python API on the store BATON_TEST_URL names (the memory store when unset), every strategy."""

from __future__ import annotations

import asyncio
import datetime
import os
import threading
import uuid
from typing import Iterator

import pytest

import baton
from baton import _baton

STRATEGIES = ["unique-insert", "bakery", "column-prefix"]


def url() -> str:
    return os.environ.get("BATON_TEST_URL") or "memory:"


def fresh(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=STRATEGIES)
def locker(request: pytest.FixtureRequest) -> Iterator[baton.Locker]:
    yield baton.Locker(url(), strategy=request.param, timeout=0.3, ttl=5)


def test_error_table_is_the_kernels() -> None:
    native = dict(_baton.error_kinds())
    ours = {cls.code: cls.kind for cls in baton._errors.error_classes().values()}
    assert ours == native


def test_with_excludes_fences_and_releases(locker: baton.Locker) -> None:
    name = fresh("nightly-digest")
    with locker.lock(name) as lease:
        assert lease.held and lease.token > 0 and lease.expires_in > 0
        lease.check()
        assert locker.try_lock(name) is None
        with pytest.raises(baton.TimedOut):
            with locker.lock(name, timeout=0.05):
                pass
        with pytest.raises(TimeoutError):  # the built-in catches it too
            with locker.lock(name, timeout=datetime.timedelta(milliseconds=50)):
                pass
        first = lease.token
    assert not lease.held
    again = locker.try_lock(name)
    assert again is not None and again.token > first
    again.release()
    with pytest.raises(baton.NotOwner):
        again.release()  # twice


def test_async_with(locker: baton.Locker) -> None:
    name = fresh("async")

    async def main() -> None:
        async with locker.lock(name) as lease:
            assert lease.held
            with pytest.raises(baton.TimedOut):
                async with locker.lock(name, timeout=0.05):
                    pass
        assert not lease.held

    asyncio.run(main())


@pytest.mark.parametrize("strategy", ["unique-insert", "bakery"])
def test_many_tasks_each_get_it_once(strategy: str) -> None:
    # (Column prefix is left out to keep the suite short: 100-way contention on one name is
    # its worst case, 13-17 s for the 100 acquisitions on SQLite, PostgreSQL and MariaDB against
    # 2-4 s for the others. See docs/strategies.md.)
    locker = baton.Locker(url(), strategy=strategy, ttl=5)
    name = fresh("tasks")
    inside = 0
    overlaps = 0
    got = []

    async def worker(i: int) -> None:
        nonlocal inside, overlaps
        async with locker.lock(name, timeout=60):
            inside += 1
            if inside > 1:
                overlaps += 1
            await asyncio.sleep(0)
            got.append(i)
            inside -= 1

    async def main() -> None:
        await asyncio.gather(*(worker(i) for i in range(100)))

    asyncio.run(main())
    assert overlaps == 0
    assert sorted(got) == list(range(100))


def test_cancelling_a_waiting_task_stops_its_wait(locker: baton.Locker) -> None:
    name = fresh("cancel")

    async def main() -> None:
        async with locker.lock(name):
            waiter = asyncio.ensure_future(locker.lock(name, timeout=60).__aenter__())
            await asyncio.sleep(0.05)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        lease = locker.try_lock(name)  # nothing left behind by the cancelled wait
        assert lease is not None
        lease.release()

    asyncio.run(main())


def test_mutex_is_lock_shaped(locker: baton.Locker) -> None:
    name = fresh("mutex")
    a, b = locker.mutex(name), locker.mutex(name)
    assert a.acquire()
    assert a.locked() and a.token > 0
    assert not b.acquire(blocking=False)
    assert not b.acquire(timeout=0.05)
    a.release()
    with pytest.raises(RuntimeError):
        a.release()
    with b:
        assert b.locked()


def test_decorator(locker: baton.Locker) -> None:
    name = fresh("decorated")

    @locker.locked(name)
    def job(x: int) -> int:
        assert locker.try_lock(name) is None
        return x * 2

    @locker.locked(name)
    async def job_async(x: int) -> int:
        return x + 1

    assert job(21) == 42
    assert asyncio.run(job_async(41)) == 42


def test_threads_share_a_locker(locker: baton.Locker) -> None:
    name = fresh("threads")
    inside = 0
    overlaps = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, overlaps
        for _ in range(5):
            with locker.lock(name, timeout=60):
                with lock:
                    inside += 1
                    overlaps += inside > 1
                with lock:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == 0


def test_loss_is_raised_when_leaving_the_block() -> None:
    locker = baton.Locker(url(), ttl=0.2, keep_alive=False)
    with pytest.raises(baton.Lost):
        with locker.lock(fresh("lost")) as lease:
            deadline = 10.0
            while lease.held and deadline > 0:  # wait for the deadline to pass
                deadline -= 0.01
                threading.Event().wait(0.01)
            assert not lease.held
    # ... unless another exception is already leaving
    with pytest.raises(KeyError):
        with locker.lock(fresh("lost")) as lease:
            while lease.held:
                threading.Event().wait(0.01)
            raise KeyError("mine")


@pytest.mark.parametrize(
    "name,error",
    [
        ("", baton.InvalidName),
        ("a\0b", baton.InvalidName),
        ("x" * (1 << 20), baton.InvalidName),
        ("bad-\udcff", baton.InvalidName),  # not UTF-8: os.fsdecode's lone surrogate
        (b"bytes", baton.InvalidName),
        (42, baton.InvalidName),
    ],
)
def test_bad_names(name: object, error: type) -> None:
    locker = baton.Locker(url())
    with pytest.raises(error):
        with locker.lock(name):  # type: ignore[arg-type]
            pass
    assert issubclass(error, ValueError)


def test_bad_options() -> None:
    for kwargs in ({"ttl": 0}, {"ttl": -1}, {"timeout": -1}, {"strategy": "queue"}, {"consistency": "most"}, {"ttl": "5"}):
        with pytest.raises(baton.InvalidOption):
            baton.Locker(url(), **kwargs)
    with pytest.raises(baton.InvalidOption):
        baton.Locker("nosuch://x")
    with pytest.raises(baton.InvalidOption):
        with baton.Locker(url()).lock("x", timeout=-1):
            pass


def test_dead_store() -> None:
    locker = baton.Locker("postgres://baton@127.0.0.1:9/baton?timeout=1s", timeout=0)
    with pytest.raises(baton.StoreUnavailable) as raised:
        with locker.lock("x"):
            pass
    assert raised.value.code == 8 and raised.value.kind == "store_unavailable"
    assert isinstance(raised.value, ConnectionError)


def test_operators(locker: baton.Locker) -> None:
    name = fresh("operated")
    lease = locker.acquire(name)
    assert any(e.name == name for e in locker.locks())
    removed = locker.force_release(name)
    assert removed
    with pytest.raises(baton.Lost):  # broken by an operator: releasing reports it
        lease.release()
    locker.purge()
