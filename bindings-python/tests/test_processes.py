"""Processes: many holders on one shared store, Ctrl-C in a blocked wait, fork, and the
`baton` command on the same store. The store is BATON_TEST_URL when it is shared between
processes (not memory:), otherwise a SQLite file of the test's own."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator, List

import pytest

import baton


@pytest.fixture
def store(tmp_path: Path) -> Iterator[str]:
    url = os.environ.get("BATON_TEST_URL") or ""
    yield url if url and url != "memory:" else f"sqlite://{tmp_path}/locks.db"


def fresh(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:12]}"


def _contend(url: str, name: str, rounds: int, directory: str) -> None:
    locker = baton.Locker(url, timeout=120)
    marker = os.path.join(directory, "marker")
    for _ in range(rounds):
        with locker.lock(name) as lease:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails on overlap
            os.close(fd)
            with open(os.path.join(directory, "tokens"), "a") as out:
                out.write(f"{lease.token}\n")
            os.unlink(marker)


def test_eight_processes_never_overlap_and_tokens_increase(store: str, tmp_path: Path) -> None:
    name = fresh("processes")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_contend, args=(store, name, 100, str(tmp_path))) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert [w.exitcode for w in workers] == [0] * 8
    tokens: List[int] = [int(t) for t in (tmp_path / "tokens").read_text().split()]
    assert len(tokens) == 800
    assert all(a < b for a, b in zip(tokens, tokens[1:]))


CHILD = """
import signal, sys, baton
# A process started in the background by a non-interactive shell inherits SIGINT ignored, and
# Python then leaves it so: restore the handler a terminal's Ctrl-C meets.
signal.signal(signal.SIGINT, signal.default_int_handler)
locker = baton.Locker(sys.argv[1], strategy="bakery", timeout=60)
print("waiting", flush=True)
try:
    with locker.lock(sys.argv[2]):
        print("acquired", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_interrupts_a_blocked_wait_and_leaves_no_lock(store: str) -> None:
    name = fresh("ctrl-c")
    locker = baton.Locker(store, strategy="bakery", timeout=5)
    held = locker.acquire(name)
    child = subprocess.Popen([sys.executable, "-c", CHILD, store, name], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "waiting"
        # Until the child's ticket is in the store: it is then inside lock().
        deadline = time.monotonic() + 30
        while not any(str(child.pid) in e.owner for e in locker.locks() if e.name == name):
            assert time.monotonic() < deadline, "the child never queued"
            time.sleep(0.01)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        said = child.stdout.readline().strip()  # printed by the KeyboardInterrupt handler
        took = time.monotonic() - sent
        assert said == "interrupted", said + child.stdout.read()
        assert took < 1.0, f"KeyboardInterrupt took {took:.2f} s"
        assert child.wait(timeout=10) == 3
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    held.release()
    # The interrupted wait left nothing behind: the lock is free at once.
    deadline = time.monotonic() + 5
    lease = locker.try_lock(name)
    while lease is None and time.monotonic() < deadline:
        time.sleep(0.01)
        lease = locker.try_lock(name)
    assert lease is not None
    assert not any(str(child.pid) in e.owner for e in locker.locks() if e.name == name)
    lease.release()


CANCELLING_CHILD = """
import asyncio, sys, baton
async def main() -> None:
    locker = baton.Locker(sys.argv[1], strategy="bakery", timeout=60)
    async def wait() -> None:
        async with locker.lock(sys.argv[2]):
            print("acquired", flush=True)
    task = asyncio.ensure_future(wait())
    print("waiting", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled", flush=True)
asyncio.run(main())
sys.exit(3)
"""


def test_a_cancelled_asyncio_wait_then_exit_leaves_no_lock(store: str) -> None:
    name = fresh("async-cancel")
    locker = baton.Locker(store, strategy="bakery", timeout=5)
    held = locker.acquire(name)
    child = subprocess.Popen(
        [sys.executable, "-c", CANCELLING_CHILD, store, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == "waiting"
        deadline = time.monotonic() + 30
        while not any(str(child.pid) in e.owner for e in locker.locks() if e.name == name):
            assert time.monotonic() < deadline, "the child never queued"
            time.sleep(0.01)
        child.stdin.write("cancel\n")
        child.stdin.flush()
        said = child.stdout.readline().strip()
        assert said == "cancelled", said + child.stdout.read()
        # The child exits at once after the cancel; its exit waits for the wait's cleanup.
        assert child.wait(timeout=10) == 3
    finally:
        child.kill()
        child.wait()
        for f in (child.stdin, child.stdout):
            if f is not None:
                f.close()
    # Nothing of the child's wait is left: the queue holds only our lease.
    assert not any(str(child.pid) in e.owner for e in locker.locks() if e.name == name)
    held.release()
    lease = locker.try_lock(name)
    assert lease is not None
    lease.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_cannot_release_the_parents_lock(store: str) -> None:
    name = fresh("fork")
    locker = baton.Locker(store, timeout=0.2)
    lease = locker.acquire(name)
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            try:
                lease.release()
            except baton.NotOwner:
                try:
                    locker.try_lock(name + "-parents-locker")
                except baton.WrongContext:
                    pass  # the parent's locker is the parent's
                else:
                    raise AssertionError("the parent's locker worked in the child")
                own = baton.Locker(store, timeout=0.2)
                ok = own.try_lock(name) is None
                other = own.try_lock(name + "-child")
                ok = ok and other is not None
                if other is not None:
                    other.release()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    lease.check()
    lease.release()


def _cli() -> str:
    cli = os.environ.get("BATON_CLI")
    if not cli:
        pytest.skip("BATON_CLI is not set (the test command sets it)")
    return cli


def test_the_command_and_python_see_each_others_locks(store: str, tmp_path: Path) -> None:
    cli = _cli()
    name = fresh("interop")
    env = dict(os.environ, BATON_STORE=store)
    locker = baton.Locker(store, timeout=0.2)
    inside = tmp_path / "inside"
    runner = subprocess.Popen(
        [cli, "run", "--lock", name, "--", "sh", "-c", f"touch {inside}; while [ -e {inside} ]; do sleep 0.01; done"],
        env=env,
    )
    deadline = time.monotonic() + 30
    while not inside.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert locker.try_lock(name) is None  # the command (Rust) holds it
    inside.unlink()
    assert runner.wait(timeout=30) == 0
    with locker.lock(name):
        busy = subprocess.run([cli, "run", "--lock", name, "--no-wait", "--", "true"], env=env)
        assert busy.returncode == 75
        listed = subprocess.run([cli, "locks"], env=env, capture_output=True, text=True, check=True)
        assert name in listed.stdout
    assert subprocess.run([cli, "run", "--lock", name, "--no-wait", "--", "true"], env=env).returncode == 0


ASYNC_CHILD = """
import asyncio, sys, baton

async def worker(locker: baton.Locker, n: int) -> None:
    async with locker.lock(sys.argv[2], timeout=30):
        pass

async def main() -> None:
    locker = baton.Locker(sys.argv[1])
    await asyncio.gather(*(worker(locker, n) for n in range(5)))

asyncio.run(main())
"""


def test_an_asyncio_program_exits_cleanly_right_after_its_last_release(store: str) -> None:
    # The last release's callback runs on baton's thread and gives the GIL up inside
    # call_soon_threadsafe; the main thread may then reach the interpreter's exit before the
    # callback takes the GIL back. Without the exit's gate this aborted about one run in ten.
    name = fresh("exit")
    for run in range(40):
        child = subprocess.run(
            [sys.executable, "-c", ASYNC_CHILD, store, name], capture_output=True, text=True, timeout=60
        )
        assert (child.returncode, child.stderr) == (0, ""), f"run {run}"
