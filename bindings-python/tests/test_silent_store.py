"""A store that accepts connections and never answers costs a caller no more than the
lock's timeout: the wait ends with StoreUnavailable then, sync and async alike."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Iterator, List

import pytest

import baton

TIMEOUT = 2.0
SLACK = 0.7  # scheduling, not the store


@pytest.fixture
def silent_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A TCP server on loopback that accepts every connection and never writes a byte."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    held: List[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (socket.timeout, OSError):
                continue
            held.append(conn)  # kept open: a reset would be an answer

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    scheme = request.param
    user = "" if scheme == "cassandra" else "baton@"  # Cassandra: no authenticator here
    yield f"{scheme}://{user}127.0.0.1:{port}/baton"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


SCHEMES = ["postgres", "mysql", "cassandra"]


@pytest.mark.parametrize("silent_url", SCHEMES, indirect=True)
def test_lock_fails_at_its_timeout(silent_url: str) -> None:
    locker = baton.Locker(silent_url)
    started = time.monotonic()
    with pytest.raises(baton.StoreUnavailable) as raised:
        with locker.lock("job", timeout=TIMEOUT):
            pass
    took = time.monotonic() - started
    assert TIMEOUT <= took < TIMEOUT + SLACK, f"failed after {took:.2f}s: {raised.value}"


@pytest.mark.parametrize("silent_url", ["postgres"], indirect=True)
def test_async_lock_fails_at_its_timeout(silent_url: str) -> None:
    locker = baton.Locker(silent_url)

    async def main() -> float:
        started = time.monotonic()
        with pytest.raises(baton.StoreUnavailable):
            async with locker.lock("job", timeout=TIMEOUT):
                pass
        return time.monotonic() - started

    took = asyncio.run(main())
    assert TIMEOUT <= took < TIMEOUT + SLACK, f"failed after {took:.2f}s"
