"""asyncio: many tasks share one resource; each waits its turn without a thread of its own."""

import asyncio
import sys

import baton


async def worker(locker: baton.Locker, n: int) -> None:
    async with locker.lock("shared-report", timeout=30) as lease:
        print(f"worker {n} writes the report under token {lease.token}")
        await asyncio.sleep(0.01)


async def main(url: str) -> None:
    locker = baton.Locker(url)
    await asyncio.gather(*(worker(locker, n) for n in range(5)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///tmp/baton-example.db"))
