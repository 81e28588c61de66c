"""baton: distributed locks with fencing tokens, over SQLite, PostgreSQL, MariaDB and Cassandra.

    import baton

    locker = baton.Locker("sqlite:///var/lib/app/locks.db")
    with locker.lock("nightly-digest", timeout=10) as lease:
        run_digest(fencing_token=lease.token)

Every decision (waiting, renewing the lease, loss, releasing) is made by baton's Rust core; this
package adapts its types, errors and waiting to Python: ``with`` and ``async with`` locks, a
``threading.Lock``-shaped mutex, a decorator, and one exception class per error kind.
"""

from __future__ import annotations

import asyncio
import atexit
import datetime
import functools
import inspect
import os
from typing import Any, Awaitable, Callable, List, Optional, Tuple, TypeVar, Union, cast

from . import _baton
from ._errors import (
    Ambiguous,
    BatonError,
    Busy,
    Cancelled,
    Internal,
    InvalidName,
    InvalidOption,
    Lost,
    NotOwner,
    RuntimeFailed,
    StaleLock,
    StoreError,
    StoreUnavailable,
    TimedOut,
    WrongContext,
    error_classes,
)

__all__ = [
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
    "RuntimeFailed",
    "StaleLock",
    "StoreError",
    "StoreUnavailable",
    "TimedOut",
    "WrongContext",
]

_baton._register_errors(error_classes())
# Before the interpreter finalizes, baton's threads stop calling back into Python.
atexit.register(_baton._at_exit)

Seconds = Union[float, int, datetime.timedelta]
"""A duration: seconds as a number, or a ``datetime.timedelta``."""

LockEntry = _baton.LockEntry

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
        return f"Lease(name={self.name!r}, token={self.token}, held={self.held})"


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


def _settler(loop: asyncio.AbstractEventLoop, future: "asyncio.Future[Any]") -> Callable[[object], None]:
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


class _LockContext:
    """What ``locker.lock(name)`` returns: a context manager, sync or async."""

    __slots__ = ("_locker", "_name", "_timeout", "_blocking", "_lease")

    def __init__(self, locker: "Locker", name: str, timeout: Optional[float], blocking: bool) -> None:
        self._locker = locker
        self._name = name
        self._timeout = timeout
        self._blocking = blocking
        self._lease: Optional[Lease] = None

    def __enter__(self) -> Lease:
        self._lease = Lease(self._locker._native.lock(self._name, self._timeout, self._blocking))
        return self._lease

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if self._lease is not None:
            self._lease._leave(failing=kind is not None)

    async def __aenter__(self) -> Lease:
        self._lease = await self._locker._acquire_async(self._name, self._timeout, self._blocking)
        return self._lease

    async def __aexit__(self, kind: object, value: object, traceback: object) -> None:
        if self._lease is not None:
            await self._lease._leave_async(failing=kind is not None)


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
    settings such as ``sslmode=verify-full&sslrootcert=/path/ca.pem``). Durations are seconds
    or ``timedelta``s. A Locker is safe to share between threads.
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
    ) -> None:
        if not isinstance(url, str):
            raise InvalidOption(f"the store URL must be a str, not {type(url).__name__}")
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
        )

    def lock(self, name: str, timeout: Optional[Seconds] = None) -> _LockContext:
        """Take ``name``: ``with locker.lock(name) as lease`` or ``async with ...``.

        Waits up to ``timeout`` (default: the locker's), then raises :class:`TimedOut`. A
        blocking wait releases the GIL and Ctrl-C interrupts it; cancelling an asyncio task
        stops its wait, and its ``CancelledError`` comes once the wait's entry is gone from the
        store (at most 2 seconds later on a store that does not answer). Either way no lock is
        left behind.
        """
        return _LockContext(self, _name(name), _seconds("timeout", timeout), True)

    def try_lock(self, name: str) -> Optional[Lease]:
        """One attempt: the lease, or ``None`` when another owner holds the lock. Release it
        with ``lease.release()`` (or use it in a ``with`` block)."""
        try:
            return Lease(self._native.lock(_name(name), None, False))
        except Busy:
            return None

    def acquire(self, name: str, timeout: Optional[Seconds] = None) -> Lease:
        """Take ``name`` and return the lease without a ``with`` block."""
        return Lease(self._native.lock(_name(name), _seconds("timeout", timeout), True))

    async def _acquire_async(self, name: str, timeout: Optional[float], blocking: bool) -> Lease:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_baton.Guard] = loop.create_future()
        pending = self._native.lock_async(name, _settler(loop, future), timeout, blocking)
        try:
            guard = await future
        except asyncio.CancelledError:
            pending.cancel()
            await _cleaned_up(loop)
            raise
        return Lease(guard)

    def mutex(self, name: str) -> "Mutex":
        """A ``threading.Lock``-shaped object for ``name``."""
        return Mutex(self, _name(name))

    def locked(self, name: str, timeout: Optional[Seconds] = None) -> Callable[[F], F]:
        """Decorator: run the function (or coroutine function) under lock ``name``."""

        def decorate(function: F) -> F:
            if inspect.iscoroutinefunction(function):

                @functools.wraps(function)
                async def run_async(*args: Any, **kwargs: Any) -> Any:
                    async with self.lock(name, timeout):
                        return await cast(Callable[..., Awaitable[Any]], function)(*args, **kwargs)

                return cast(F, run_async)

            @functools.wraps(function)
            def run(*args: Any, **kwargs: Any) -> Any:
                with self.lock(name, timeout):
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
