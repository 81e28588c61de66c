"""baton: distributed locks with fencing tokens, over SQLite, PostgreSQL, MariaDB and Cassandra.

    import baton

    locker = baton.Locker("sqlite:///var/lib/app/locks.db")
    with locker.lock("nightly-digest", timeout=10) as lease:
        run_digest(fencing_token=lease.token)

Shared locks and semaphores (on a locker whose strategy is ``"bakery"`` or
``"column-prefix"``)::

    with locker.lock("catalog", shared=True) as lease:     # readers hold it together
        read_catalog()

    encoders = locker.semaphore("encoders", 3)             # at most 3 holders at once
    with encoders:
        encode()

Several names at once, all or nothing, in one global order (no two callers deadlock); with
``paths=True`` names are dot-separated paths, and ``app.cache`` covers ``app.cache.users``::

    tree = baton.Locker(url, strategy="bakery", paths=True)
    with tree.lock_all(["app.cache", "app.db"], timeout=5) as leases:
        rebuild()

Objects (ScaleOut StateServer's): a named object is an opaque ``bytes`` value with a version,
kept beside its lock. Read and write it under the lock, or optimistically::

    with locker.get_and_lock("GOOG") as quote:
        quote.update_and_release(reprice(quote.value))

    got = locker.get("GOOG")
    locker.update_optimistic("GOOG", reprice(got.value), got.version)  # or VersionMismatch

Every decision (waiting, renewing the lease, loss, releasing, whether a write applies) is made by
baton's Rust core; this package adapts its types, errors and waiting to Python: ``with`` and
``async with`` locks and objects, a ``threading.Lock``-shaped mutex, a
``threading.BoundedSemaphore``-shaped semaphore, a decorator, and one exception class per error
kind.
"""

from __future__ import annotations

import asyncio
import atexit
import datetime
import functools
import inspect
import os
import threading
from typing import Any, Awaitable, Callable, Iterable, List, NamedTuple, Optional, Tuple, TypeVar, Union, cast

from . import _baton
from ._errors import (
    AlreadyExists,
    Ambiguous,
    BatonError,
    Busy,
    Cancelled,
    Internal,
    InvalidName,
    InvalidOption,
    Lost,
    NotOwner,
    ObjectNotFound,
    RuntimeFailed,
    StaleLock,
    StoreError,
    StoreUnavailable,
    TimedOut,
    VersionMismatch,
    WrongContext,
    error_classes,
)

__all__ = [
    "AlreadyExists",
    "Ambiguous",
    "BatonError",
    "Busy",
    "Cancelled",
    "Internal",
    "InvalidName",
    "InvalidOption",
    "Lease",
    "LockEntry",
    "Locker",
    "Lost",
    "Mutex",
    "NotOwner",
    "Object",
    "ObjectNotFound",
    "RuntimeFailed",
    "Semaphore",
    "StaleLock",
    "StoreError",
    "StoreUnavailable",
    "TimedOut",
    "Value",
    "VersionMismatch",
    "Versioned",
    "WrongContext",
]

_baton._register_errors(error_classes())
# Before the interpreter finalizes, baton's threads stop calling back into Python.
atexit.register(_baton._at_exit)

Seconds = Union[float, int, datetime.timedelta]
"""A duration: seconds as a number, or a ``datetime.timedelta``."""

LockEntry = _baton.LockEntry

Value = Union[bytes, bytearray, memoryview]
"""An object's value: bytes, or any bytes-like object (copied as it is when the call is made)."""

F = TypeVar("F", bound=Callable[..., Any])


def _seconds(what: str, value: Optional[Seconds]) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidOption(f"{what} must be seconds (a number or a timedelta), not {type(value).__name__}")
    return float(value)


def _name(name: object) -> str:
    """``name`` as the native module takes it: a str that is valid UTF-8 (a str holding a lone
    surrogate, as ``os.fsdecode`` makes of undecodable bytes, is not)."""
    if not isinstance(name, str):
        raise InvalidName(f"a lock name must be a str, not {type(name).__name__}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidName(f"lock name is not valid UTF-8: {e.reason} at index {e.start}") from None
    return name


def _permits(permits: object) -> int:
    """``permits`` as the native module takes it: an int (its range is baton's to check; one
    past a 64-bit integer is passed as the nearest, which baton refuses as out of range)."""
    if isinstance(permits, bool) or not isinstance(permits, int):
        raise InvalidOption(f"a semaphore's permits must be an int, not {type(permits).__name__}")
    return max(min(permits, (1 << 63) - 1), -(1 << 63))


def _value(value: object) -> bytes:
    """``value`` as the bytes the native module takes: bytes-like only (a ``str`` must be
    encoded by its caller, who knows the encoding)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        raise TypeError("an object's value is bytes, not str: encode it first (value.encode())")
    raise TypeError(f"an object's value is bytes (or bytearray, memoryview), not {type(value).__name__}")


def _version(version: object) -> int:
    """``version`` as the native module takes it: an int from 0 to 2**64 - 1."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"an object's version is an int, not {type(version).__name__}")
    if not 0 <= version < 1 << 64:
        raise InvalidOption(f"an object's version is from 0 to 2**64 - 1, not {version}")
    return version


class Versioned(NamedTuple):
    """An object's value and version, as :meth:`Locker.get` reads it."""

    value: bytes
    """The value: exactly the bytes written."""
    version: int
    """Its version: grows by one on every write of the object, removals included."""


def _shared(shared: object) -> bool:
    if not isinstance(shared, bool):
        raise InvalidOption(f"shared must be a bool, not {type(shared).__name__}")
    return shared


def _names(names: object) -> List[str]:
    """``names`` as the native module takes them: a list of valid names (an iterable of them;
    a lone ``str`` or ``bytes`` is refused, not read as its characters). The rest (none, a name
    twice, a path with its ancestor) is baton's to refuse."""
    if isinstance(names, (str, bytes, bytearray, memoryview)):
        raise InvalidOption(f"lock_all takes a list of names, not one {type(names).__name__}")
    try:
        items = list(cast(Iterable[object], names))
    except TypeError:
        raise InvalidOption(f"lock_all takes a list of names, not {type(names).__name__}") from None
    return [_name(name) for name in items]


def _leave_all(leases: List["Lease"], failing: bool) -> None:
    """End of a ``lock_all`` block: release every lease, last taken first, even when one
    release fails; then raise the first failure (a loss only unless an exception is leaving)."""
    first: Optional[BaseException] = None
    for lease in reversed(leases):
        try:
            lease._leave(failing)
        except BaseException as e:  # noqa: BLE001 - the others are released before it is raised
            if first is None:
                first = e
    if first is not None:
        raise first


async def _leave_all_async(leases: List["Lease"], failing: bool) -> None:
    first: Optional[BaseException] = None
    for lease in reversed(leases):
        try:
            await lease._leave_async(failing)
        except BaseException as e:  # noqa: BLE001
            if first is None:
                first = e
    if first is not None:
        raise first


def _versioned(got: Optional[Tuple[bytes, int]]) -> Optional[Versioned]:
    return None if got is None else Versioned(*got)


class Lease:
    """A held lock: its ``token`` (fencing), ``held``, ``expires_in``, ``check()`` and ``release()``.

    Used as ``with locker.lock(name) as lease`` (or ``async with``), it is released when the
    block ends; if the lease was lost meanwhile, leaving the block raises :class:`Lost` (unless
    another exception is already on its way out), so the script learns its work may have
    overlapped another holder's.
    """

    __slots__ = ("_guard", "_released")

    def __init__(self, guard: _baton.Guard) -> None:
        self._guard = guard
        self._released = False

    @property
    def name(self) -> str:
        """The lock's name."""
        return self._guard.name

    @property
    def token(self) -> int:
        """The fencing token: strictly greater for every later holder of this name."""
        return self._guard.token

    @property
    def mode(self) -> str:
        """What it is held as: ``"exclusive"``, ``"shared"`` or ``"counted(N)"`` (one permit
        of a semaphore of N)."""
        return self._guard.mode

    @property
    def held(self) -> bool:
        """Whether the lock is still held (false once released, lost or past its deadline)."""
        return self._guard.held

    @property
    def expires_in(self) -> float:
        """Seconds left before the lease's deadline (renewed in the background while held)."""
        return self._guard.expires_in

    def check(self) -> None:
        """Raise :class:`Lost` if the lease was lost (:class:`NotOwner` after a release)."""
        self._guard.check()

    def release(self) -> None:
        """Release the lock, waiting for the store; raises :class:`Lost` if the lease had
        ended before, :class:`NotOwner` on a second call."""
        self._released = True
        self._guard.release()

    async def release_async(self) -> None:
        """The asyncio form of :meth:`release`."""
        self._released = True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._guard.release_async(_settler(loop, future))
        await future

    def _leave(self, failing: bool) -> None:
        """End of a ``with`` block: release; report a loss unless an exception is leaving."""
        if self._released:
            return
        try:
            self.release()
        except Lost:
            if not failing:
                raise

    async def _leave_async(self, failing: bool) -> None:
        if self._released:
            return
        try:
            await self.release_async()
        except Lost:
            if not failing:
                raise

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._leave(failing=kind is not None)

    def __repr__(self) -> str:
        return f"Lease(name={self.name!r}, token={self.token}, mode={self.mode!r}, held={self.held})"


async def _cleaned_up(loop: asyncio.AbstractEventLoop) -> None:
    """After a cancelled wait: waits, on an executor thread and at most 2 seconds, until its
    cell is removed from the store (one delete, sent in the background), so that, as with
    asyncio's own locks, nothing of the wait is left once its caller sees ``CancelledError``.
    A second cancellation of the caller ends this wait early; the delete still goes on."""
    cleaned = loop.run_in_executor(None, _baton._wait_for_cleanups)
    try:
        await asyncio.shield(cleaned)
    except asyncio.CancelledError:
        pass


Done = Callable[[object], None]
"""The callback an asyncio call hands the native module: it settles the call's future."""


def _settler(loop: asyncio.AbstractEventLoop, future: "asyncio.Future[Any]") -> Done:
    """A callback for baton's thread that settles ``future`` on its loop."""

    def settle(result: object) -> None:
        if future.done():
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)

    def done(result: object) -> None:
        try:
            loop.call_soon_threadsafe(settle, result)
        except RuntimeError:  # the loop was closed: nobody waits any more
            pass

    return done


async def _settled(start: Callable[[Done], None]) -> Any:
    """The outcome of one native asyncio call that runs to its end (a read, a write, a release):
    ``start(done)`` starts it. Cancelling the awaiting task does not stop the call."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    start(_settler(loop, future))
    return await future


async def _waited(start: Callable[[Done], _baton.Pending]) -> Any:
    """The outcome of one native asyncio wait (a lock; a lock and its object): ``start(done)``
    starts it. Cancelling the awaiting task stops the wait, and its ``CancelledError`` goes on
    once the wait's cell is removed (:func:`_cleaned_up`)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    pending = start(_settler(loop, future))
    try:
        return await future
    except asyncio.CancelledError:
        pending.cancel()
        await _cleaned_up(loop)
        raise


class Object:
    """A held lock and its object (ScaleOut StateServer's ``LockTicket``), from
    ``with locker.get_and_lock(name) as obj`` (or ``async with``, or
    :meth:`Locker.insert_and_lock`).

    ``value`` and ``version`` are the object as last read or written here (``value`` is
    ``None`` when there is no object). Each call has an asyncio form (``update_async``...):

    - :meth:`get` reads the object again and renews the lock (SOSS's ``get_locked``);
    - :meth:`update` writes it and keeps the lock, renewed (``update_locked_and_retain``);
    - :meth:`update_and_release` writes it and releases the lock (``update_locked_and_release``);
    - :meth:`insert` creates it while locked; :meth:`remove` deletes it and releases the lock
      (``remove_locked``); :meth:`refresh` renews the lock (``lock_refresh``);
      :meth:`unlock` releases it without writing.

    The store applies a write only while this holder still holds the lock: after an expiry or
    a forced release it raises :class:`Lost` and writes nothing. Leaving the block releases the
    lock unless a call did; if the lease was lost meanwhile, leaving raises :class:`Lost`
    (unless another exception is already on its way out), as a :class:`Lease` does. After the
    release every call raises :class:`NotOwner`.
    """

    __slots__ = ("_guard", "_released")

    def __init__(self, guard: _baton.ObjectGuard) -> None:
        self._guard = guard
        self._released = False

    @property
    def name(self) -> str:
        """The object's (and its lock's) name."""
        return self._guard.name

    @property
    def token(self) -> int:
        """The lock's fencing token: strictly greater for every later holder of this name."""
        return self._guard.token

    @property
    def held(self) -> bool:
        """Whether the lock is still held (false once released, lost or past its deadline)."""
        return self._guard.held

    @property
    def expires_in(self) -> float:
        """Seconds left before the lease's deadline (renewed in the background while held)."""
        return self._guard.expires_in

    @property
    def value(self) -> Optional[bytes]:
        """The object's value as last read or written (``None``: there is no object)."""
        return self._guard.value

    @property
    def version(self) -> int:
        """The object's version as last read or written (0: never written)."""
        return self._guard.version

    def check(self) -> None:
        """Raise :class:`Lost` if the lease was lost (:class:`NotOwner` after a release)."""
        self._guard.check()

    def get(self) -> Optional[bytes]:
        """Read the object again and renew the lock: its value (``None``: no object)."""
        return self._guard.get_locked()

    async def get_async(self) -> Optional[bytes]:
        """The asyncio form of :meth:`get`."""
        return cast(Optional[bytes], await _settled(self._guard.get_locked_async))

    def update(self, value: Value) -> int:
        """Write ``value`` and keep the lock, renewed (SOSS's ``update_locked_and_retain``);
        returns the new version. :class:`ObjectNotFound` when there is no object (create it
        with :meth:`insert`)."""
        return self._guard.update_locked_and_retain(_value(value))

    async def update_async(self, value: Value) -> int:
        """The asyncio form of :meth:`update`."""
        data = _value(value)
        return cast(int, await _settled(lambda done: self._guard.update_locked_and_retain_async(data, done)))

    def update_and_release(self, value: Value) -> int:
        """Write ``value`` and release the lock (SOSS's ``update_locked_and_release``); returns
        the new version. On an error the lock stays held (leaving the block releases it)."""
        data = _value(value)
        try:
            version = self._guard.update_locked_and_release(data)
        except BaseException:
            self._after_failed_release()
            raise
        self._released = True
        return version

    async def update_and_release_async(self, value: Value) -> int:
        """The asyncio form of :meth:`update_and_release`."""
        data = _value(value)
        try:
            version = await _settled(lambda done: self._guard.update_locked_and_release_async(data, done))
        except BaseException:
            self._after_failed_release()
            raise
        self._released = True
        return cast(int, version)

    def insert(self, value: Value) -> int:
        """Create the object, which must not exist (:class:`AlreadyExists`), keeping the lock;
        returns its version."""
        return self._guard.insert_locked(_value(value))

    async def insert_async(self, value: Value) -> int:
        """The asyncio form of :meth:`insert`."""
        data = _value(value)
        return cast(int, await _settled(lambda done: self._guard.insert_locked_async(data, done)))

    def remove(self) -> None:
        """Delete the object and release the lock (SOSS's ``remove_locked``)."""
        try:
            self._guard.remove_locked()
        except BaseException:
            self._after_failed_release()
            raise
        self._released = True

    async def remove_async(self) -> None:
        """The asyncio form of :meth:`remove`."""
        try:
            await _settled(self._guard.remove_locked_async)
        except BaseException:
            self._after_failed_release()
            raise
        self._released = True

    def refresh(self) -> None:
        """Renew the lock now (SOSS's ``lock_refresh``; the lease is also renewed in the
        background while held)."""
        self._guard.lock_refresh()

    async def refresh_async(self) -> None:
        """The asyncio form of :meth:`refresh`."""
        await _settled(self._guard.lock_refresh_async)

    def unlock(self) -> None:
        """Release the lock without writing; :class:`Lost` if the lease had ended before,
        :class:`NotOwner` on a second call."""
        self._released = True
        self._guard.unlock()

    async def unlock_async(self) -> None:
        """The asyncio form of :meth:`unlock`."""
        self._released = True
        await _settled(self._guard.unlock_async)

    def _after_failed_release(self) -> None:
        """A call that writes and then releases failed: if its release went through, leaving
        the block has nothing left to release; otherwise (the write was refused: the lock is
        held, or lost) leaving releases, as it would have without the call."""
        try:
            self._guard.check()
        except NotOwner:
            self._released = True
        except Lost:
            pass

    def _leave(self, failing: bool) -> None:
        """End of a ``with`` block: release unless released; report a loss unless an exception
        is leaving."""
        if self._released:
            return
        try:
            self.unlock()
        except Lost:
            if not failing:
                raise

    async def _leave_async(self, failing: bool) -> None:
        if self._released:
            return
        try:
            await self.unlock_async()
        except Lost:
            if not failing:
                raise

    def __repr__(self) -> str:
        return f"Object(name={self.name!r}, token={self.token}, version={self.version}, held={self.held})"


class _ObjectContext:
    """What ``locker.get_and_lock(name)`` and ``locker.insert_and_lock(name, value)`` return: a
    context manager, sync or async, whose block holds the lock and sees the :class:`Object`."""

    __slots__ = ("_take", "_take_async", "_object")

    def __init__(
        self,
        take: Callable[[], _baton.ObjectGuard],
        take_async: Callable[[Done], _baton.Pending],
    ) -> None:
        self._take = take
        self._take_async = take_async
        self._object: Optional[Object] = None

    def __enter__(self) -> Object:
        self._object = Object(self._take())
        return self._object

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if self._object is not None:
            self._object._leave(failing=kind is not None)

    async def __aenter__(self) -> Object:
        self._object = Object(cast(_baton.ObjectGuard, await _waited(self._take_async)))
        return self._object

    async def __aexit__(self, kind: object, value: object, traceback: object) -> None:
        if self._object is not None:
            await self._object._leave_async(failing=kind is not None)


class _LockContext:
    """What ``locker.lock(name)`` returns: a context manager, sync or async."""

    __slots__ = ("_locker", "_name", "_timeout", "_blocking", "_shared", "_lease")

    def __init__(
        self, locker: "Locker", name: str, timeout: Optional[float], blocking: bool, shared: bool = False
    ) -> None:
        self._locker = locker
        self._name = name
        self._timeout = timeout
        self._blocking = blocking
        self._shared = shared
        self._lease: Optional[Lease] = None

    def __enter__(self) -> Lease:
        self._lease = Lease(self._locker._native.lock(self._name, self._timeout, self._blocking, self._shared))
        return self._lease

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if self._lease is not None:
            self._lease._leave(failing=kind is not None)

    async def __aenter__(self) -> Lease:
        self._lease = await self._locker._acquire_async(self._name, self._timeout, self._blocking, self._shared)
        return self._lease

    async def __aexit__(self, kind: object, value: object, traceback: object) -> None:
        if self._lease is not None:
            await self._lease._leave_async(failing=kind is not None)


class _LockAllContext:
    """What ``locker.lock_all(names)`` returns: a context manager, sync or async, whose block
    holds every lock and sees their leases (in the order taken)."""

    __slots__ = ("_locker", "_names", "_timeout", "_shared", "_leases")

    def __init__(self, locker: "Locker", names: List[str], timeout: Optional[float], shared: bool) -> None:
        self._locker = locker
        self._names = names
        self._timeout = timeout
        self._shared = shared
        self._leases: List[Lease] = []

    def __enter__(self) -> List[Lease]:
        guards = self._locker._native.lock_all(self._names, self._timeout, True, self._shared)
        self._leases = [Lease(guard) for guard in guards]
        return list(self._leases)

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        leases, self._leases = self._leases, []
        _leave_all(leases, failing=kind is not None)

    async def __aenter__(self) -> List[Lease]:
        self._leases = await self._locker._acquire_all_async(self._names, self._timeout, self._shared)
        return list(self._leases)

    async def __aexit__(self, kind: object, value: object, traceback: object) -> None:
        leases, self._leases = self._leases, []
        await _leave_all_async(leases, failing=kind is not None)


class Locker:
    """A lock store and default options, opened from a URL.

    ``url``: ``memory:``, ``sqlite:///path.db``, ``postgres://user:pw@host/db``,
    ``mysql://user:pw@host/db`` (MariaDB), ``cassandra://h1,h2/keyspace``. Opening does not
    connect: an unreachable store is reported by the first lock (:class:`StoreUnavailable`).

    Options: ``strategy`` (``"unique-insert"``, the default, ``"bakery"`` or
    ``"column-prefix"``), ``ttl`` (the lease, renewed in the background while held; default
    60 s), ``timeout`` (how long :meth:`lock` waits; default 30 s), ``consistency``
    (Cassandra: ``"quorum"`` by default), ``table`` (the lock table), ``password_file`` (a
    file holding the store's password, so that the URL holds none; the URL may also carry TLS
    settings such as ``sslmode=verify-full&sslrootcert=/path/ca.pem``), ``paths`` (names are
    dot-separated paths: a lock on ``app.cache`` also conflicts with ``app`` and with
    ``app.cache.users``, when either side is exclusive, and not with ``app.db`` or ``apple``;
    bakery or column prefix only, and every user of a tree must turn it on; objects are
    refused on such a locker). Durations are seconds or ``timedelta``s. A Locker is safe to
    share between threads.

    Shared locks (``lock(name, shared=True)``) and semaphores (:meth:`semaphore`) need the
    ``"bakery"`` or ``"column-prefix"`` strategy (:class:`InvalidOption` on unique insert).
    """

    __slots__ = ("_native",)

    def __init__(
        self,
        url: str,
        *,
        strategy: Optional[str] = None,
        ttl: Optional[Seconds] = None,
        timeout: Optional[Seconds] = None,
        consistency: Optional[str] = None,
        table: Optional[str] = None,
        keep_alive: bool = True,
        password_file: Optional[Union[str, "os.PathLike[str]"]] = None,
        paths: bool = False,
    ) -> None:
        if not isinstance(url, str):
            raise InvalidOption(f"the store URL must be a str, not {type(url).__name__}")
        if not isinstance(paths, bool):
            raise InvalidOption(f"paths must be a bool, not {type(paths).__name__}")
        if password_file is not None and not isinstance(password_file, (str, os.PathLike)):
            raise InvalidOption(
                f"password_file must be a path, not {type(password_file).__name__}"
            )
        self._native = _baton.Locker(
            url,
            strategy=strategy,
            ttl=_seconds("ttl", ttl),
            timeout=_seconds("timeout", timeout),
            consistency=consistency,
            table=table,
            keep_alive=keep_alive,
            password_file=None if password_file is None else os.fspath(password_file),
            paths=paths,
        )

    def lock(self, name: str, timeout: Optional[Seconds] = None, *, shared: bool = False) -> _LockContext:
        """Take ``name``: ``with locker.lock(name) as lease`` or ``async with ...``.

        ``shared=True`` takes it as a reader: any number of shared holders at once, never
        beside an exclusive one (a writer that waits is not starved by readers that keep
        coming). Needs the bakery or column-prefix strategy (:class:`InvalidOption` otherwise).

        Waits up to ``timeout`` (default: the locker's), then raises :class:`TimedOut`. A
        blocking wait releases the GIL and Ctrl-C interrupts it; cancelling an asyncio task
        stops its wait, and its ``CancelledError`` comes once the wait's entry is gone from the
        store (at most 2 seconds later on a store that does not answer). Either way no lock is
        left behind.
        """
        return _LockContext(self, _name(name), _seconds("timeout", timeout), True, _shared(shared))

    def try_lock(self, name: str, *, shared: bool = False) -> Optional[Lease]:
        """One attempt: the lease, or ``None`` when another owner holds the lock (with
        ``shared=True``: when a writer holds it or waits for it). Release it with
        ``lease.release()`` (or use it in a ``with`` block)."""
        try:
            return Lease(self._native.lock(_name(name), None, False, _shared(shared)))
        except Busy:
            return None

    def acquire(self, name: str, timeout: Optional[Seconds] = None, *, shared: bool = False) -> Lease:
        """Take ``name`` (``shared=True``: as a reader) and return the lease without a
        ``with`` block."""
        return Lease(self._native.lock(_name(name), _seconds("timeout", timeout), True, _shared(shared)))

    async def _acquire_async(self, name: str, timeout: Optional[float], blocking: bool, shared: bool) -> Lease:
        guard = await _waited(lambda done: self._native.lock_async(name, done, timeout, blocking, shared))
        return Lease(cast(_baton.Guard, guard))

    def lock_all(self, names: Iterable[str], timeout: Optional[Seconds] = None, *, shared: bool = False) -> _LockAllContext:
        """Take every name in ``names``, all or nothing:
        ``with locker.lock_all(["a", "b"]) as leases`` (or ``async with``); the leases come in
        the order taken, and leaving the block releases them all (last taken first).

        The names are taken one at a time in one global order, whatever order they are given in
        (``foo``, ``foo.bar``, ``foo.bar.woof``, ``foo.baz``), so two callers never each hold
        what the other waits for. ``timeout`` (default: the locker's) is the budget of the
        whole call; on any error (:class:`TimedOut` included) every lock already taken is
        released before it is raised: nothing is left held. ``shared=True`` takes each as a
        reader. :class:`InvalidOption` for no names, a name given twice, or (with paths) a
        path given with one of its ancestors; :class:`InvalidName` for a bad name.
        """
        return _LockAllContext(self, _names(names), _seconds("timeout", timeout), _shared(shared))

    def acquire_all(self, names: Iterable[str], timeout: Optional[Seconds] = None, *, shared: bool = False) -> List[Lease]:
        """:meth:`lock_all` without a ``with`` block: the leases, in the order taken (release
        each yourself)."""
        checked, wait = _names(names), _seconds("timeout", timeout)
        return [Lease(guard) for guard in self._native.lock_all(checked, wait, True, _shared(shared))]

    async def _acquire_all_async(self, names: List[str], timeout: Optional[float], shared: bool) -> List[Lease]:
        guards = await _waited(lambda done: self._native.lock_all_async(names, done, timeout, True, shared))
        return [Lease(guard) for guard in cast(List[_baton.Guard], guards)]

    def semaphore(self, name: str, permits: int) -> "Semaphore":
        """A semaphore of ``permits`` on ``name``, shared by every process on the store: at
        most ``permits`` holders at once (see :class:`Semaphore`). Every user of the name must
        give the same ``permits``: an acquire that finds another size in use, or the name held
        as a shared or exclusive lock, raises :class:`InvalidOption` naming both.
        :class:`InvalidOption` now for ``permits`` outside 1 to 10 000 or not an int, or a
        locker whose strategy is unique insert; :class:`InvalidName` for a bad name."""
        return Semaphore(self, self._native.semaphore(_name(name), _permits(permits)))

    def mutex(self, name: str) -> "Mutex":
        """A ``threading.Lock``-shaped object for ``name``."""
        return Mutex(self, _name(name))

    def locked(self, name: str, timeout: Optional[Seconds] = None, *, shared: bool = False) -> Callable[[F], F]:
        """Decorator: run the function (or coroutine function) under lock ``name``
        (``shared=True``: as a reader)."""

        def decorate(function: F) -> F:
            if inspect.iscoroutinefunction(function):

                @functools.wraps(function)
                async def run_async(*args: Any, **kwargs: Any) -> Any:
                    async with self.lock(name, timeout, shared=shared):
                        return await cast(Callable[..., Awaitable[Any]], function)(*args, **kwargs)

                return cast(F, run_async)

            @functools.wraps(function)
            def run(*args: Any, **kwargs: Any) -> Any:
                with self.lock(name, timeout, shared=shared):
                    return function(*args, **kwargs)

            return cast(F, run)

        return decorate

    def locks(self) -> List[LockEntry]:
        """Every lock entry in the store (name, strategy, owner, state, token, expires_in)."""
        return self._native.locks()

    def purge(self, name: Optional[str] = None) -> List[Tuple[str, str]]:
        """Remove expired entries (of ``name``, or of the whole table)."""
        return self._native.purge(None if name is None else _name(name))

    def force_release(self, name: str) -> List[LockEntry]:
        """Break lock ``name`` on purpose; returns the entries removed (whose it was)."""
        return self._native.force_release(_name(name))

    # Objects: a named object is an opaque bytes value with a version, kept in the row of the
    # lock of the same name (ScaleOut StateServer's objects).

    @property
    def max_object_bytes(self) -> int:
        """The largest value this store takes, in bytes (1 MiB; MariaDB 48 000). An empty or
        larger value raises :class:`InvalidOption`; nothing is ever truncated."""
        return self._native.max_object_bytes

    def get(self, name: str) -> Optional[Versioned]:
        """Object ``name``'s value and version, or ``None`` when there is none (never inserted,
        or removed). Does not look at the lock: use it for :meth:`update_optimistic`."""
        return _versioned(self._native.get(_name(name)))

    async def get_async(self, name: str) -> Optional[Versioned]:
        """The asyncio form of :meth:`get`."""
        checked = _name(name)
        got = await _settled(lambda done: self._native.get_async(checked, done))
        return _versioned(cast(Optional[Tuple[bytes, int]], got))

    def insert(self, name: str, value: Value) -> int:
        """Create object ``name`` with ``value``; returns its version. :class:`AlreadyExists`
        when it exists, :class:`Busy` while someone holds its lock."""
        return self._native.insert(_name(name), _value(value))

    async def insert_async(self, name: str, value: Value) -> int:
        """The asyncio form of :meth:`insert`."""
        checked, data = _name(name), _value(value)
        return cast(int, await _settled(lambda done: self._native.insert_async(checked, data, done)))

    def update_optimistic(self, name: str, value: Value, version: int) -> int:
        """Replace object ``name``'s value if it is still at ``version`` (as :meth:`get` read
        it); returns the new version. :class:`VersionMismatch` when another client wrote it
        since (read it again and retry), :class:`ObjectNotFound` when it is gone,
        :class:`Busy` while someone holds its lock. Nothing is written on an error."""
        return self._native.update_optimistic(_name(name), _value(value), _version(version))

    async def update_optimistic_async(self, name: str, value: Value, version: int) -> int:
        """The asyncio form of :meth:`update_optimistic`."""
        checked, data, at = _name(name), _value(value), _version(version)
        return cast(int, await _settled(lambda done: self._native.update_optimistic_async(checked, data, at, done)))

    def remove(self, name: str) -> None:
        """Delete object ``name``: :class:`ObjectNotFound` when there is none, :class:`Busy`
        while someone holds its lock."""
        self._native.remove(_name(name))

    async def remove_async(self, name: str) -> None:
        """The asyncio form of :meth:`remove`."""
        checked = _name(name)
        await _settled(lambda done: self._native.remove_async(checked, done))

    def get_and_lock(
        self, name: str, *, timeout: Optional[Seconds] = None, blocking: bool = True
    ) -> _ObjectContext:
        """Lock ``name`` and read its object, atomically for every other client:
        ``with locker.get_and_lock(name) as obj`` (or ``async with``) gives the
        :class:`Object`, whose ``value`` is ``None`` when there is no object yet.

        Waits as :meth:`lock` does, up to ``timeout`` (default: the locker's), then raises
        :class:`TimedOut`; ``blocking=False`` tries once and raises :class:`Busy` when the lock
        is held. Ctrl-C, or cancelling an asyncio task, stops the wait and leaves no lock.
        Leaving the block releases the lock unless a call did.
        """
        checked, wait = _name(name), _seconds("timeout", timeout)
        return _ObjectContext(
            lambda: self._native.get_and_lock(checked, wait, blocking),
            lambda done: self._native.get_and_lock_async(checked, done, wait, blocking),
        )

    def insert_and_lock(self, name: str, value: Value) -> _ObjectContext:
        """Lock ``name`` (waiting up to the locker's timeout) and create its object with
        ``value``: ``with locker.insert_and_lock(name, value) as obj`` (or ``async with``).
        :class:`AlreadyExists` when it exists (the lock is then released)."""
        checked, data = _name(name), _value(value)
        return _ObjectContext(
            lambda: self._native.insert_and_lock(checked, data),
            lambda done: self._native.insert_and_lock_async(checked, data, done),
        )


class Mutex:
    """One named lock shaped like ``threading.Lock``: ``acquire(blocking=True, timeout=-1)``,
    ``release()``, ``locked()``, and ``with``. ``timeout=-1`` waits up to the locker's
    timeout (then returns False)."""

    __slots__ = ("_locker", "_name", "_lease")

    def __init__(self, locker: Locker, name: str) -> None:
        self._locker = locker
        self._name = name
        self._lease: Optional[Lease] = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock; False when it could not be had (busy, or the wait ran out)."""
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout != -1 and timeout < 0:
            raise ValueError("timeout value must be a non-negative number")
        wait = None if timeout == -1 else float(timeout)
        try:
            self._lease = Lease(self._locker._native.lock(self._name, wait, blocking))
        except (Busy, TimedOut):
            return False
        return True

    def release(self) -> None:
        """Release the lock (``RuntimeError``, as ``threading.Lock`` raises, if not held here)."""
        lease, self._lease = self._lease, None
        if lease is None:
            raise RuntimeError(f"release of baton.Mutex {self._name!r}, which is not held here")
        lease.release()

    def locked(self) -> bool:
        """Whether this mutex holds its lock."""
        return self._lease is not None and self._lease.held

    @property
    def token(self) -> int:
        """The fencing token while held (0 otherwise)."""
        return self._lease.token if self._lease is not None else 0

    def __enter__(self) -> bool:
        if not self.acquire():
            raise TimedOut(f"timed out waiting for lock {self._name!r}")
        return True

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self.release()


class Semaphore:
    """A semaphore shared by every process on the store, shaped like
    ``threading.BoundedSemaphore``: ``acquire(blocking=True, timeout=None)``, ``release()`` and
    ``with``, and for asyncio ``await acquire_async(...)``, ``await release_async()`` and
    ``async with``. Made by :meth:`Locker.semaphore`.

    Each acquire takes one permit, a lease of its own (renewed in the background while held,
    with its own fencing token); this object keeps the leases it took, and ``release()`` gives
    one of them back (the most recent). Releasing more than it holds raises ``ValueError``, as
    ``threading.BoundedSemaphore`` does. ``timeout=None`` waits up to the locker's timeout.
    Safe to share between threads and tasks.
    """

    __slots__ = ("_locker", "_native", "_leases", "_guard")

    def __init__(self, locker: Locker, native: _baton.Semaphore) -> None:
        self._locker = locker
        self._native = native
        self._leases: List[Lease] = []
        self._guard = threading.Lock()

    @property
    def name(self) -> str:
        """The name its permits are taken on."""
        return self._native.name

    @property
    def permits(self) -> int:
        """How many holders it admits at once."""
        return self._native.permits

    @property
    def held(self) -> int:
        """How many permits this object holds now."""
        with self._guard:
            return len(self._leases)

    @staticmethod
    def _wait(blocking: bool, timeout: Optional[Seconds]) -> Optional[float]:
        if not blocking and timeout is not None:
            raise ValueError("can't specify timeout for non-blocking acquire")
        return _seconds("timeout", timeout)

    def _keep(self, guard: _baton.Guard) -> Lease:
        lease = Lease(guard)
        with self._guard:
            self._leases.append(lease)
        return lease

    def _take(self) -> Lease:
        with self._guard:
            if not self._leases:
                raise ValueError("Semaphore released too many times")
            return self._leases.pop()

    def acquire(self, blocking: bool = True, timeout: Optional[Seconds] = None) -> bool:
        """Take a permit: True, or False when none could be had (all taken and
        ``blocking=False``, or the wait ran out). Ctrl-C interrupts the wait."""
        wait = self._wait(blocking, timeout)
        try:
            self._keep(self._native.acquire(wait, blocking))
        except (Busy, TimedOut):
            return False
        return True

    async def acquire_async(self, blocking: bool = True, timeout: Optional[Seconds] = None) -> bool:
        """The asyncio form of :meth:`acquire`: cancelling the task stops its wait."""
        wait = self._wait(blocking, timeout)
        try:
            guard = await _waited(lambda done: self._native.acquire_async(done, wait, blocking))
        except (Busy, TimedOut):
            return False
        self._keep(cast(_baton.Guard, guard))
        return True

    def release(self) -> None:
        """Give back one permit this object holds (``ValueError`` when it holds none); raises
        :class:`Lost` if that permit's lease had ended."""
        self._take().release()

    async def release_async(self) -> None:
        """The asyncio form of :meth:`release`."""
        await self._take().release_async()

    def __enter__(self) -> bool:
        self._keep(self._native.acquire(None, True))  # TimedOut when the wait runs out
        return True

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self._take()._leave(failing=kind is not None)

    async def __aenter__(self) -> bool:
        guard = await _waited(lambda done: self._native.acquire_async(done, None, True))
        self._keep(cast(_baton.Guard, guard))
        return True

    async def __aexit__(self, kind: object, value: object, traceback: object) -> None:
        await self._take()._leave_async(failing=kind is not None)

    def __repr__(self) -> str:
        return f"Semaphore(name={self.name!r}, permits={self.permits}, held={self.held})"
