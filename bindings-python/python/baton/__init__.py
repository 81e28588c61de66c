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

import atexit

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
from ._convert import Seconds as Seconds
from ._convert import Value, Versioned
from ._lease import Lease
from ._locker import Locker
from ._object import Object
from ._primitives import Mutex, Semaphore

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

LockEntry = _baton.LockEntry

# The public classes are baton's, wherever they are written.
for _public in (Lease, Locker, Mutex, Object, Semaphore, Versioned):
    _public.__module__ = __name__
del _public
