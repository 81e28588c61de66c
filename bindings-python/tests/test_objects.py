"""Objects beside locks (seed 002, ScaleOut StateServer's objects) on the store BATON_TEST_URL
names (the memory store when unset), every strategy: every call, sync and asyncio, and every
error a user meets."""

from __future__ import annotations

import asyncio
import datetime
import os
import threading
import time
import uuid
from typing import Any, Awaitable, Callable, Iterator, List, Tuple

import pytest

import baton

STRATEGIES = ["unique-insert", "bakery", "column-prefix"]


def url() -> str:
    return os.environ.get("BATON_TEST_URL") or "memory:"


def fresh(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=STRATEGIES)
def locker(request: pytest.FixtureRequest) -> Iterator[baton.Locker]:
    yield baton.Locker(url(), strategy=request.param, timeout=0.3, ttl=5)


def free(locker: baton.Locker, name: str) -> bool:
    """Whether the lock of ``name`` is free now (taken once and given back)."""
    lease = locker.try_lock(name)
    if lease is None:
        return False
    lease.release()
    return True


def test_the_error_classes_carry_the_kernels_codes() -> None:
    for cls, code, kind in (
        (baton.VersionMismatch, 15, "version_mismatch"),
        (baton.ObjectNotFound, 16, "object_not_found"),
        (baton.AlreadyExists, 17, "already_exists"),
    ):
        assert issubclass(cls, baton.BatonError)
        assert (cls.code, cls.kind) == (code, kind)
        assert baton._errors.error_classes()[code] is cls


def test_the_store_names_its_limit() -> None:
    expected = 48_000 if url().startswith(("mysql:", "mariadb:")) else 1 << 20
    assert baton.Locker(url()).max_object_bytes == expected


# --- the quote example and every call, sync ---------------------------------------------------


def test_get_and_lock_then_update_and_release(locker: baton.Locker) -> None:
    name = fresh("GOOG")
    assert locker.get(name) is None
    assert locker.insert(name, b"1053.00") == 1
    with locker.get_and_lock(name) as quote:
        assert (quote.value, quote.version, quote.name) == (b"1053.00", 1, name)
        assert quote.held and quote.token > 0 and quote.expires_in > 0
        quote.check()
        assert quote.update_and_release(b"1053.26") == 2
        assert not quote.held
    assert locker.get(name) == baton.Versioned(b"1053.26", 2)
    got = locker.get(name)
    assert got is not None and got.value == b"1053.26" and got.version == 2
    # The spent guard: every call says NotOwner, and nothing is written.
    for call in (
        quote.get,
        quote.refresh,
        quote.unlock,
        quote.remove,
        lambda: quote.update(b"x"),
        lambda: quote.update_and_release(b"x"),
        lambda: quote.insert(b"x"),
        quote.check,
    ):
        with pytest.raises(baton.NotOwner):
            call()
    assert locker.get(name) == (b"1053.26", 2)


def test_every_locked_call(locker: baton.Locker) -> None:
    name = fresh("locked")
    with locker.insert_and_lock(name, b"v1") as obj:
        assert (obj.value, obj.version) == (b"v1", 1)
        assert locker.try_lock(name) is None
        assert obj.get() == b"v1"
        assert obj.update(b"v2") == 2  # update_locked_and_retain: still held
        assert obj.held and obj.value == b"v2" and obj.version == 2
        obj.refresh()
        assert obj.held
        assert obj.update_and_release(bytearray(b"v3")) == 3
    assert free(locker, name)
    # A name with a lock but no object: value None; update needs one; insert makes it.
    bare = fresh("bare")
    with locker.get_and_lock(bare) as obj:
        assert (obj.value, obj.version) == (None, 0)
        assert obj.get() is None
        with pytest.raises(baton.ObjectNotFound):
            obj.update(b"x")
        assert obj.held  # the failed write kept the lock
        assert obj.insert(memoryview(b"first")) == 1
        with pytest.raises(baton.AlreadyExists):
            obj.insert(b"again")
        assert obj.value == b"first"
        obj.remove()  # remove_locked: deletes and releases
        assert not obj.held
    assert locker.get(bare) is None
    assert free(locker, bare)
    # unlock releases without writing; a second unlock is NotOwner; leaving is then quiet.
    with locker.get_and_lock(name) as obj:
        obj.unlock()
        assert free(locker, name)
        with pytest.raises(baton.NotOwner):
            obj.unlock()
    assert locker.get(name) == (b"v3", 3)


def test_optimistic_updates_mismatch_not_found_and_already_exists(locker: baton.Locker) -> None:
    name = fresh("optimistic")
    with pytest.raises(baton.ObjectNotFound):
        locker.update_optimistic(name, b"x", 0)
    with pytest.raises(baton.ObjectNotFound):
        locker.remove(name)
    assert locker.insert(name, b"1") == 1
    with pytest.raises(baton.AlreadyExists):
        locker.insert(name, b"1")
    assert locker.update_optimistic(name, b"2", 1) == 2
    with pytest.raises(baton.VersionMismatch) as raised:
        locker.update_optimistic(name, b"stale", 1)  # another client wrote version 2 first
    assert (raised.value.code, raised.value.kind) == (15, "version_mismatch")
    assert locker.get(name) == (b"2", 2)  # nothing written on an error
    locker.remove(name)
    assert locker.get(name) is None
    with pytest.raises(baton.ObjectNotFound) as gone:
        locker.update_optimistic(name, b"3", 2)
    assert (gone.value.code, gone.value.kind) == (16, "object_not_found")
    # Inserted again after its removal, it goes on from its last version.
    assert locker.insert(name, b"again") == 4
    with pytest.raises(baton.AlreadyExists) as exists:
        locker.insert(name, b"again")
    assert (exists.value.code, exists.value.kind) == (17, "already_exists")


def test_a_locked_object_is_busy_for_everyone_else(locker: baton.Locker) -> None:
    name = fresh("busy")
    locker.insert(name, b"1")
    with locker.get_and_lock(name) as held:
        for call in (
            lambda: locker.update_optimistic(name, b"2", 1),
            lambda: locker.remove(name),
        ):
            with pytest.raises(baton.Busy):
                call()
        with pytest.raises(baton.Busy):
            with locker.get_and_lock(name, blocking=False):
                pass
        with pytest.raises(baton.TimedOut):
            with locker.get_and_lock(name, timeout=0.05):
                pass
        with pytest.raises(baton.TimedOut):
            with locker.insert_and_lock(name, b"x"):
                pass
        assert locker.get(name) == (b"1", 1)  # reading does not look at the lock
        held.update(b"mine")
    assert locker.update_optimistic(name, b"theirs", 2) == 3  # free again
    bare = fresh("busy-bare")
    with locker.get_and_lock(bare):
        with pytest.raises(baton.Busy):
            locker.insert(bare, b"x")
    assert locker.insert(bare, b"x") == 1


def test_an_existing_object_refuses_insert_and_lock_and_frees_the_lock(locker: baton.Locker) -> None:
    name = fresh("taken")
    locker.insert(name, b"1")
    with pytest.raises(baton.AlreadyExists):
        with locker.insert_and_lock(name, b"2"):
            pass
    assert free(locker, name)
    assert locker.get(name) == (b"1", 1)


def test_an_exception_in_the_block_releases(locker: baton.Locker) -> None:
    name = fresh("raising")
    with pytest.raises(KeyError):
        with locker.insert_and_lock(name, b"1") as obj:
            obj.update(b"2")
            raise KeyError("mine")
    assert not obj.held
    assert free(locker, name)
    assert locker.get(name) == (b"2", 2)


def test_a_failed_update_and_release_keeps_the_lock_until_the_block_ends(locker: baton.Locker) -> None:
    name = fresh("failed-release")
    with locker.insert_and_lock(name, b"1") as obj:
        with pytest.raises(baton.InvalidOption):
            obj.update_and_release(b"")  # refused before anything is sent
        assert obj.held and not free(locker, name)
    assert free(locker, name)
    assert locker.get(name) == (b"1", 1)


def test_a_broken_lock_refuses_its_holders_write(locker: baton.Locker) -> None:
    name = fresh("broken")
    locker.insert(name, b"1")
    with pytest.raises(baton.Lost):
        with locker.get_and_lock(name) as obj:
            locker.force_release(name)  # an operator breaks it
            obj.update(b"2")  # fenced at the store: refused, nothing written
    assert not obj.held
    assert locker.get(name) == (b"1", 1)


def test_an_expired_lock_refuses_its_holders_write_and_leaving_reports_it() -> None:
    locker = baton.Locker(url(), ttl=0.3, keep_alive=False)
    name = fresh("expired")
    locker.insert(name, b"1")
    with pytest.raises(baton.Lost):
        with locker.get_and_lock(name) as obj:
            deadline = time.monotonic() + 10
            while obj.held:  # until the lease's deadline passes
                assert time.monotonic() < deadline
                threading.Event().wait(0.01)
            with pytest.raises(baton.Lost):
                obj.update_and_release(b"2")
            with pytest.raises(baton.Lost):
                obj.update(b"2")
    assert locker.get(name) == (b"1", 1)
    # Leaving the block after the loss raises Lost, as a lease does ...
    with pytest.raises(baton.Lost):
        with locker.get_and_lock(name) as obj:
            while obj.held:
                threading.Event().wait(0.01)
    # ... unless another exception is already leaving.
    with pytest.raises(KeyError):
        with locker.get_and_lock(name) as obj:
            while obj.held:
                threading.Event().wait(0.01)
            raise KeyError("mine")


# --- the same, asyncio ------------------------------------------------------------------------


def test_async_every_call(locker: baton.Locker) -> None:
    name = fresh("async")

    async def main() -> None:
        assert await locker.get_async(name) is None
        assert await locker.insert_async(name, b"1") == 1
        with pytest.raises(baton.AlreadyExists):
            await locker.insert_async(name, b"1")
        assert await locker.update_optimistic_async(name, b"2", 1) == 2
        with pytest.raises(baton.VersionMismatch):
            await locker.update_optimistic_async(name, b"x", 1)
        assert await locker.get_async(name) == (b"2", 2)
        async with locker.get_and_lock(name) as obj:
            assert (obj.value, obj.version) == (b"2", 2)
            with pytest.raises(baton.Busy):
                await locker.update_optimistic_async(name, b"x", 2)
            with pytest.raises(baton.Busy):
                await locker.remove_async(name)
            with pytest.raises(baton.TimedOut):
                async with locker.get_and_lock(name, timeout=0.05):
                    pass
            assert await obj.get_async() == b"2"
            assert await obj.update_async(b"3") == 3
            await obj.refresh_async()
            assert obj.held
            assert await obj.update_and_release_async(b"4") == 4
            assert not obj.held
        with pytest.raises(baton.NotOwner):
            await obj.update_async(b"5")
        await locker.remove_async(name)
        with pytest.raises(baton.ObjectNotFound):
            await locker.remove_async(name)
        with pytest.raises(baton.ObjectNotFound):
            await locker.update_optimistic_async(name, b"x", 5)
        async with locker.insert_and_lock(name, b"again") as obj:
            assert (obj.value, obj.version) == (b"again", 6)
            with pytest.raises(baton.AlreadyExists):
                await obj.insert_async(b"x")
            await obj.remove_async()
            assert not obj.held
        async with locker.get_and_lock(name) as obj:
            assert obj.value is None
            with pytest.raises(baton.ObjectNotFound):
                await obj.update_async(b"x")
            assert await obj.insert_async(b"new") == 8
            await obj.unlock_async()
            with pytest.raises(baton.NotOwner):
                await obj.unlock_async()
        with pytest.raises(baton.AlreadyExists):
            async with locker.insert_and_lock(name, b"x"):
                pass
        with pytest.raises(KeyError):
            async with locker.get_and_lock(name) as obj:
                raise KeyError("mine")
        assert not obj.held
        assert free(locker, name)
        assert await locker.get_async(name) == (b"new", 8)

    asyncio.run(main())


def test_async_bad_input_is_refused_before_anything_runs(locker: baton.Locker) -> None:
    async def main() -> None:
        with pytest.raises(baton.InvalidName):
            await locker.get_async("a\0b")
        with pytest.raises(TypeError, match="encode"):
            await locker.insert_async(fresh("x"), "text")  # type: ignore[arg-type]
        with pytest.raises(baton.InvalidOption):
            await locker.insert_async(fresh("x"), b"")
        with pytest.raises(baton.InvalidOption):
            await locker.update_optimistic_async(fresh("x"), b"1", -1)
        with pytest.raises(baton.InvalidOption):
            async with locker.get_and_lock(fresh("x"), timeout=-1):
                pass
        with pytest.raises(baton.InvalidOption):
            async with locker.insert_and_lock(fresh("x"), b"x" * (locker.max_object_bytes + 1)):
                pass

    asyncio.run(main())


def test_cancelling_a_waiting_get_and_lock_leaves_no_lock(locker: baton.Locker) -> None:
    name = fresh("cancel")

    async def main() -> None:
        async with locker.get_and_lock(name):
            waiter = asyncio.ensure_future(locker.get_and_lock(name, timeout=60).__aenter__())
            await asyncio.sleep(0.05)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        assert free(locker, name)

    asyncio.run(main())


def test_async_tasks_take_turns_on_one_object() -> None:
    locker = baton.Locker(url(), ttl=5)
    name = fresh("tasks")

    async def worker() -> None:
        for _ in range(5):
            async with locker.get_and_lock(name, timeout=60) as obj:
                n = int(obj.value or b"0")
                await asyncio.sleep(0)
                if obj.value is None:
                    await obj.insert_async(b"1")
                    await obj.unlock_async()
                else:
                    await obj.update_and_release_async(str(n + 1).encode())

    async def main() -> None:
        await asyncio.gather(*(worker() for _ in range(8)))

    asyncio.run(main())
    assert locker.get(name) == (b"40", 40)


# --- bad input -------------------------------------------------------------------------------

BAD_NAMES: List[Tuple[object, type]] = [
    ("", baton.InvalidName),
    ("a\0b", baton.InvalidName),
    ("x" * (1 << 20), baton.InvalidName),
    ("bad-\udcff", baton.InvalidName),  # not UTF-8: os.fsdecode's lone surrogate
    (b"bytes", baton.InvalidName),
    (42, baton.InvalidName),
]


def name_calls(locker: baton.Locker, name: Any) -> List[Callable[[], object]]:
    """Every call that takes a name, with a good value and version."""

    def enter(context: Any) -> None:
        with context:
            pass

    return [
        lambda: locker.get(name),
        lambda: locker.insert(name, b"x"),
        lambda: locker.update_optimistic(name, b"x", 1),
        lambda: locker.remove(name),
        lambda: enter(locker.get_and_lock(name)),
        lambda: enter(locker.insert_and_lock(name, b"x")),
    ]


@pytest.mark.parametrize("name,error", BAD_NAMES)
def test_bad_names(name: object, error: type) -> None:
    locker = baton.Locker(url())
    for call in name_calls(locker, name):
        with pytest.raises(error):
            call()


def value_calls(locker: baton.Locker, name: str, value: Any) -> List[Callable[[], object]]:
    """Every call that takes a value, on an object that exists, with its lock held for the
    locked ones."""

    def locked(write: Callable[[baton.Object], object]) -> Callable[[], object]:
        def run() -> None:
            with locker.get_and_lock(name) as obj:
                write(obj)
                assert obj.held, "a refused write keeps the lock"

        return run

    def enter(context: Any) -> None:
        with context:
            pass

    return [
        lambda: locker.insert(fresh("new"), value),
        lambda: locker.update_optimistic(name, value, 1),
        lambda: enter(locker.insert_and_lock(fresh("new"), value)),
        locked(lambda obj: obj.update(value)),
        locked(lambda obj: obj.update_and_release(value)),
        locked(lambda obj: obj.insert(value)),
    ]


def test_bad_values(locker: baton.Locker) -> None:
    name = fresh("values")
    locker.insert(name, b"1")
    limit = locker.max_object_bytes
    for value, error, match in (
        (b"", baton.InvalidOption, "empty"),
        (b"x" * (limit + 1), baton.InvalidOption, str(limit)),
        (bytearray(limit + 1), baton.InvalidOption, str(limit)),
        ("text", TypeError, r"encode"),
        (42, TypeError, "int"),
        (None, TypeError, "NoneType"),
        ([1, 2], TypeError, "list"),
    ):
        for call in value_calls(locker, name, value):
            with pytest.raises(error, match=match):
                call()
    assert locker.get(name) == (b"1", 1)  # never truncated, never written
    assert free(locker, name)


def test_bad_versions(locker: baton.Locker) -> None:
    name = fresh("versions")
    locker.insert(name, b"1")
    bad: List[Tuple[object, type]] = [
        (-1, baton.InvalidOption),
        (1 << 64, baton.InvalidOption),
        ("1", TypeError),
        (True, TypeError),
        (1.0, TypeError),
    ]
    for version, error in bad:
        with pytest.raises(error):
            locker.update_optimistic(name, b"2", version)  # type: ignore[arg-type]
    with pytest.raises(baton.VersionMismatch):  # the largest version is one, just not this one's
        locker.update_optimistic(name, b"2", (1 << 64) - 1)
    assert locker.get(name) == (b"1", 1)


def test_bad_durations(locker: baton.Locker) -> None:
    name = fresh("durations")
    for timeout in (-1, -0.001, datetime.timedelta(seconds=-1), float("nan"), "1"):
        with pytest.raises(baton.InvalidOption):
            with locker.get_and_lock(name, timeout=timeout):  # type: ignore[arg-type]
                pass
    # Zero: one look, then TimedOut while it is held; at once when free.
    with locker.get_and_lock(name, timeout=0) as obj:
        assert obj.held
        with pytest.raises(baton.TimedOut):
            with locker.get_and_lock(name, timeout=datetime.timedelta(0)):
                pass
    for ttl in (0, -1):
        with pytest.raises(baton.InvalidOption):
            baton.Locker(url(), ttl=ttl)


def test_values_round_trip_byte_for_byte(locker: baton.Locker) -> None:
    every_byte = bytes(range(256)) * 3  # NUL, bytes that are not UTF-8, all of them
    name = fresh("bytes")
    assert locker.insert(name, every_byte) == 1
    assert locker.get(name) == (every_byte, 1)
    with locker.get_and_lock(name) as obj:
        assert obj.value == every_byte
        obj.update(b"\0")
        assert obj.get() == b"\0"
        obj.update_and_release(b"\xff\xfe\0\x80")
    assert locker.get(name) == (b"\xff\xfe\0\x80", 3)
    # Exactly the store's limit fits, and comes back whole.
    big = bytes((i * 7) % 251 for i in range(locker.max_object_bytes))
    assert locker.update_optimistic(name, big, 3) == 4
    assert locker.get(name) == (big, 4)
    with locker.get_and_lock(name) as obj:
        assert obj.value == big
        assert obj.update(memoryview(big)[::-1]) == 5
    assert locker.get(name) == (big[::-1], 5)


def test_object_names_are_lock_names() -> None:
    locker = baton.Locker(url())
    for name in (fresh("ünïcødé-名前"), fresh("x" * 200), fresh("with space/and:colon")):
        locker.insert(name, b"1")
        assert locker.get(name) == (b"1", 1)
        with locker.get_and_lock(name) as obj:
            assert obj.name == name and obj.value == b"1"


def test_dead_store() -> None:
    if url() != "memory:":
        pytest.skip("the store is not BATON_TEST_URL's: run once, in the memory-store pass")
    locker = baton.Locker("postgres://baton@127.0.0.1:9/baton?timeout=100ms", timeout=0)
    get, insert, update, remove, get_and_lock, insert_and_lock = name_calls(locker, "x")
    for call in (get, remove, get_and_lock, insert_and_lock):
        with pytest.raises(baton.StoreUnavailable) as raised:
            call()
        assert raised.value.code == 8 and isinstance(raised.value, ConnectionError)
    # A write in one step (unique insert's) whose sending failed is Ambiguous where the kernel
    # cannot rule out that it reached the store: either is a typed error, never a crash.
    for call in (insert, update):
        with pytest.raises((baton.StoreUnavailable, baton.Ambiguous)):
            call()

    async def main() -> None:
        with pytest.raises(baton.StoreUnavailable):
            await locker.get_async("x")
        with pytest.raises(baton.StoreUnavailable):
            await locker.remove_async("x")
        writes: List[Callable[[], Awaitable[object]]] = [
            lambda: locker.insert_async("x", b"1"),
            lambda: locker.update_optimistic_async("x", b"1", 1),
        ]
        for write in writes:
            with pytest.raises((baton.StoreUnavailable, baton.Ambiguous)):
                await write()
        with pytest.raises(baton.StoreUnavailable):
            async with locker.get_and_lock("x"):
                pass

    asyncio.run(main())
