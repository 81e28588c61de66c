"""How an asyncio call waits for the native module: a future settled from baton's thread."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from . import _baton


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
