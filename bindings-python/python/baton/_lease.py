"""A held lock's lease, and leaving a block that holds several."""

from __future__ import annotations

import asyncio
from typing import List, Optional

from . import _baton
from ._asyncio import _settler
from ._errors import Lost


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
