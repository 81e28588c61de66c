"""A lock store and its default options, opened from a URL: what every lock, object and
semaphore is taken from."""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Awaitable, Callable, Iterable, List, Optional, Tuple, TypeVar, Union, cast

from . import _baton
from ._asyncio import _settled, _waited
from ._convert import Seconds, Value, Versioned, _name, _names, _permits, _seconds, _shared, _value, _version, _versioned
from ._baton import LockEntry
from ._errors import Busy, InvalidOption
from ._lease import Lease, _leave_all, _leave_all_async
from ._object import _ObjectContext
from ._primitives import Mutex, Semaphore


F = TypeVar("F", bound=Callable[..., Any])


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
