"""A held lock and its object (ScaleOut StateServer's ``LockTicket``)."""

from __future__ import annotations

from typing import Callable, Optional, cast

from . import _baton
from ._asyncio import Done, _settled, _waited
from ._convert import Value, _value
from ._errors import Lost, NotOwner


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
