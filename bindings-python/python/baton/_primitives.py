"""``threading``-shaped objects over one locker: a mutex, and a semaphore."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, List, Optional, cast

from . import _baton
from ._asyncio import _waited
from ._convert import Seconds, _seconds
from ._errors import Busy, TimedOut
from ._lease import Lease

if TYPE_CHECKING:
    from ._locker import Locker


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
