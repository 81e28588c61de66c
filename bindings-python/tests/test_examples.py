"""The examples of examples/ run, from the installed wheel, on the store BATON_TEST_URL names
(the memory store when unset): seed 002's stock quote, locked and optimistic. The test command
copies examples/ beside tests/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

import baton

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


# A table of this module's own: the run's databases are shared by every binding's suite, and
# the C++ examples keep their own "GOOG" quote (as text, not JSON) in the default table.
_TABLE = f"py_examples_{os.getpid()}_{int(time.time())}"


def url() -> str:
    base = os.environ.get("BATON_TEST_URL") or "memory:"
    if base == "memory:":
        return base
    return f"{base}{'&' if '?' in base else '?'}table={_TABLE}"


def run(example: str, *args: str) -> "subprocess.CompletedProcess[str]":
    path = EXAMPLES / example
    assert path.exists(), f"no {path}"
    done = subprocess.run(
        [sys.executable, str(path), url(), *args], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stdout + done.stderr
    return done


def price(locker: baton.Locker) -> float:
    got = locker.get("GOOG")
    assert got is not None
    return float(json.loads(got.value)["price"])


def test_the_stock_quote_example_updates_under_the_lock() -> None:
    out = run("stock_quote.py").stdout
    assert "GOOG at 1053.26, volume 1657662" in out
    if url() != "memory:":  # the store outlives the example's process: read what it wrote
        locker = baton.Locker(url())
        assert price(locker) == 1053.26
        with locker.get_and_lock("GOOG") as quote:  # and it left the lock free
            assert quote.value is not None and json.loads(quote.value)["volume"] == 1657662


def test_the_optimistic_example_updates_or_inserts() -> None:
    out = run("optimistic_quote.py").stdout
    assert out.splitlines()[-1].startswith("GOOG at 1052.42 after 1 attempt")
    if url() == "memory:":
        return
    locker = baton.Locker(url())
    assert price(locker) == 1052.42
    # Removed by another client: the loop recreates it (its ObjectNotFound branch).
    locker.remove("GOOG")
    run("optimistic_quote.py")
    got = locker.get("GOOG")
    assert got is not None and json.loads(got.value) == {"ticker": "GOOG", "price": 1052.42, "volume": -1}


def test_optimistic_examples_side_by_side_all_get_through() -> None:
    if url() == "memory:":
        pytest.skip("the memory store is one process's: nothing to collide with")
    locker = baton.Locker(url())
    if locker.get("GOOG") is None:
        run("optimistic_quote.py")
    before = locker.get("GOOG")
    assert before is not None
    runs: List["subprocess.Popen[str]"] = [
        subprocess.Popen(
            [sys.executable, str(EXAMPLES / "optimistic_quote.py"), url()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for r in runs:
        out, err = r.communicate(timeout=120)
        assert (r.returncode, err) == (0, ""), out + err
    # Each run wrote once, whatever the collisions cost it.
    after = locker.get("GOOG")
    assert after is not None and after.version == before.version + 4
