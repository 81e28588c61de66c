"""Arguments as the native module takes them, checked here so that a wrong type gets baton's
error, naming what was wrong."""

from __future__ import annotations

import datetime
from typing import Iterable, List, NamedTuple, Optional, Tuple, Union, cast

from ._errors import InvalidName, InvalidOption


Seconds = Union[float, int, datetime.timedelta]
"""A duration: seconds as a number, or a ``datetime.timedelta``."""


Value = Union[bytes, bytearray, memoryview]
"""An object's value: bytes, or any bytes-like object (copied as it is when the call is made)."""


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


def _versioned(got: Optional[Tuple[bytes, int]]) -> Optional[Versioned]:
    return None if got is None else Versioned(*got)
