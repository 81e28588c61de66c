"""One uncontended lock+release from Python, sync and asyncio, timed like the Rust side
(bindings-c/examples/lock_unlock.rs): prints `python-sync URL N P50 P99` and
`python-async URL N P50 P99` (microseconds). Run by `scripts/python-bindings bench`."""

import asyncio
import sys
import time
from typing import List

import baton


def report(label: str, url: str, times: List[float]) -> None:
    times.sort()
    at = lambda q: times[int((len(times) - 1) * q)]  # noqa: E731
    print(f"{label} {url} {len(times)} {at(0.5):.1f} {at(0.99):.1f}")


def sync(locker: baton.Locker, n: int) -> List[float]:
    times = []
    for i in range(n + n // 10):
        start = time.perf_counter()
        with locker.lock("bench"):
            pass
        if i >= n // 10:  # after a warm-up tenth
            times.append((time.perf_counter() - start) * 1e6)
    return times


async def asynchronous(locker: baton.Locker, n: int) -> List[float]:
    times = []
    for i in range(n + n // 10):
        start = time.perf_counter()
        async with locker.lock("bench"):
            pass
        if i >= n // 10:
            times.append((time.perf_counter() - start) * 1e6)
    return times


def main() -> None:
    url, n = sys.argv[1], int(sys.argv[2])
    locker = baton.Locker(url)
    report("python-sync", url, sync(locker, n))
    report("python-async", url, asyncio.run(asynchronous(locker, n)))


if __name__ == "__main__":
    main()
