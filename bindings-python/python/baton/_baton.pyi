"""Type stubs of the native module baton._baton (see baton/__init__.py for the public API)."""

from typing import Callable, List, Mapping, Optional, Tuple, Type

class Guard:
    name: str
    token: int
    @property
    def held(self) -> bool: ...
    @property
    def expires_in(self) -> float: ...
    def check(self) -> None: ...
    def release(self) -> None: ...
    def release_async(self, done: Callable[[object], None]) -> None: ...

class Pending:
    def cancel(self) -> None: ...

class LockEntry:
    name: str
    strategy: str
    owner: str
    state: str
    token: Optional[int]
    expires_in: Optional[float]

class Locker:
    def __init__(
        self,
        url: str,
        *,
        strategy: Optional[str] = ...,
        ttl: Optional[float] = ...,
        timeout: Optional[float] = ...,
        consistency: Optional[str] = ...,
        table: Optional[str] = ...,
        keep_alive: bool = ...,
        password_file: Optional[str] = ...,
    ) -> None: ...
    def lock(self, name: str, timeout: Optional[float] = ..., blocking: bool = ...) -> Guard: ...
    def lock_async(
        self,
        name: str,
        done: Callable[[object], None],
        timeout: Optional[float] = ...,
        blocking: bool = ...,
    ) -> Pending: ...
    def locks(self) -> List[LockEntry]: ...
    def purge(self, name: Optional[str] = ...) -> List[Tuple[str, str]]: ...
    def force_release(self, name: str) -> List[LockEntry]: ...

def _register_errors(classes: Mapping[int, Type[BaseException]]) -> None: ...
def error_kinds() -> List[Tuple[int, str]]: ...
def _at_exit() -> None: ...
def _wait_for_cleanups() -> bool: ...
