"""baton's exceptions: one class per error kind, with the kernel's stable ``code``.

Each derives from :class:`BatonError` and, where one fits, from the matching built-in, so
``except TimeoutError`` catches :class:`TimedOut`.
"""

from __future__ import annotations

from typing import Dict, Type


class BatonError(Exception):
    """Every error baton raises. ``code``: the kernel's stable code; ``kind``: its name."""

    code: int = 0
    kind: str = "unknown"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class TimedOut(BatonError, TimeoutError):
    """Waited the whole timeout without acquiring."""

    code, kind = 1, "timed_out"


class Busy(BatonError):
    """A one-attempt lock found it held."""

    code, kind = 2, "busy"


class Lost(BatonError):
    """The lease ended while the holder still believed it held it."""

    code, kind = 3, "lost"


class NotOwner(BatonError):
    """Release or renewal of a lock not (or no longer) held here (a second release)."""

    code, kind = 4, "not_owner"


class StaleLock(BatonError):
    """Column prefix found an expired lock column and was told to fail on it."""

    code, kind = 5, "stale_lock"


class InvalidName(BatonError, ValueError):
    """A lock name broke a rule (empty, over 255 bytes, NUL inside, not a str)."""

    code, kind = 6, "invalid_name"


class InvalidOption(BatonError, ValueError):
    """An option is out of range (a negative duration, a bad URL, an unknown strategy), or an
    object's value is empty or larger than the store takes."""

    code, kind = 7, "invalid_option"


class StoreUnavailable(BatonError, ConnectionError):
    """The store could not be reached; nothing was applied."""

    code, kind = 8, "store_unavailable"


class StoreError(BatonError):
    """The store refused (schema, permissions, a corrupt cell)."""

    code, kind = 9, "store_error"


class Ambiguous(BatonError):
    """A write may or may not have been applied, and reading back could not settle it."""

    code, kind = 10, "ambiguous"


class Cancelled(BatonError):
    """A wait was cancelled by its caller."""

    code, kind = 11, "cancelled"


class Internal(BatonError):
    """A bug in baton: please report it with the message."""

    code, kind = 12, "internal"


class RuntimeFailed(BatonError):
    """baton could not start the runtime it runs on."""

    code, kind = 13, "runtime_failed"


class WrongContext(BatonError):
    """A call from where it cannot run."""

    code, kind = 14, "wrong_context"


class VersionMismatch(BatonError):
    """An optimistic update named a version the object no longer has: another client wrote it
    first (ScaleOut StateServer's ``VersionMismatchException``). Read it again and retry."""

    code, kind = 15, "version_mismatch"


class ObjectNotFound(BatonError):
    """The object does not exist (never inserted, or removed): an update or a locked write
    needs one (ScaleOut StateServer's ``ObjectNotFoundException``)."""

    code, kind = 16, "object_not_found"


class AlreadyExists(BatonError):
    """An insert found the object already there."""

    code, kind = 17, "already_exists"


_ALL = (
    TimedOut,
    Busy,
    Lost,
    NotOwner,
    StaleLock,
    InvalidName,
    InvalidOption,
    StoreUnavailable,
    StoreError,
    Ambiguous,
    Cancelled,
    Internal,
    RuntimeFailed,
    WrongContext,
    VersionMismatch,
    ObjectNotFound,
    AlreadyExists,
)


def error_classes() -> Dict[int, Type[BatonError]]:
    """``{code: class}`` for the native module."""
    return {cls.code: cls for cls in _ALL}
