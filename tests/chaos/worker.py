"""The Python client of the fault harness (docs/faults-design.md), through the ``baton``
package: the same critical sections as the Rust worker (tests/src/bin/chaos_worker.rs), flag
for flag::

    python worker.py --url URL --strategy S --name NAME --register HOST:PORT --client ID
                     [--seconds 60] [--ttl-ms 2000] [--hold-ms 50] [--wait-ms 10000]

Each section: lock (keep-alive on, waiting up to ``--wait-ms``), ``begin``, fenced ``read``, a
pause of up to ``--hold-ms``, fenced ``write``, ``lost`` if the lease knows by then that it was
lost, ``end``, then the release and ``release`` with its outcome. A failed lock call is
reported (``error CODE``) and retried after 20 ms. Every lock decision is baton's; the register
is one TCP connection for the whole run. Prints a summary line at the end; exits 0, 2 on bad
flags, 1 if the register cannot be reached or answers ``bad ...``, or the locker cannot be
opened.

Run with the interpreter of the virtual environment ``scripts/python-bindings chaos-worker``
names (the wheel installed there).
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import BinaryIO, List, Optional, Set

import baton

# How long the register may take to connect or answer: it is never partitioned from clients, so
# a slow answer means it is gone and the run is void (as the Rust client).
ANSWER_DEADLINE = 30.0

# The strategy names the Rust worker accepts (baton's Strategy::from_str), as the canonical name.
STRATEGIES = {
    "unique-insert": "unique-insert",
    "unique_insert": "unique-insert",
    "unique": "unique-insert",
    "bakery": "bakery",
    "column-prefix": "column-prefix",
    "column_prefix": "column-prefix",
    "prefix": "column-prefix",
}


class RegisterError(Exception):
    """The register could not be reached, did not answer, or refused a request."""


class Register:
    """A connection to the register: one request line at a time, one answer line each."""

    def __init__(self, address: str) -> None:
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit():
            raise RegisterError(f"register {address}: not HOST:PORT")
        try:
            self._socket = socket.create_connection((host.strip("[]"), int(port)), timeout=ANSWER_DEADLINE)
        except OSError as e:
            raise RegisterError(f"register {address}: {e}") from e
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._answers: BinaryIO = self._socket.makefile("rb")

    def request(self, line: str) -> str:
        """Sends one request line and returns the answer; a ``bad ...`` answer is an error."""
        try:
            self._socket.sendall(f"{line}\n".encode())
        except OSError as e:
            raise RegisterError(f"register: sending {line!r}: {e}") from e
        try:
            answer = self._answers.readline()
        except TimeoutError as e:
            raise RegisterError(f"register: no answer to {line!r} within {ANSWER_DEADLINE:g}s") from e
        except OSError as e:
            raise RegisterError(f"register: answer to {line!r}: {e}") from e
        if not answer.endswith(b"\n"):
            raise RegisterError(f"register: closed before answering {line!r}")
        text = answer[:-1].decode()
        if text.startswith("bad "):
            raise RegisterError(f"register refused {line!r}: {text[4:]}")
        return text

    def close(self) -> None:
        self._answers.close()
        self._socket.close()


@dataclass
class Tally:
    sections: int = 0
    refused: int = 0
    lost: int = 0
    lock_errors: int = 0
    # The error codes seen so far: each one's first message goes to the log.
    codes_seen: Set[str] = field(default_factory=set)


def count(text: str) -> int:
    """A flag's number: a decimal u64, as the Rust worker reads it."""
    if not text.isdigit() or not text.isascii() or int(text) >= 1 << 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    return int(text)


def strategy(text: str) -> str:
    try:
        return STRATEGIES[text]
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {text!r}; expected bakery, unique-insert or column-prefix"
        ) from None


def parse(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The flags; a bad one exits with status 2 and a message (argparse's way)."""
    parser = argparse.ArgumentParser(
        prog="worker.py", description="A client of the fault harness's register.", allow_abbrev=False
    )
    parser.add_argument("--url", required=True, help="the store URL")
    parser.add_argument("--strategy", type=strategy, default="unique-insert")
    parser.add_argument("--name", default="chaos", help="the lock's name")
    parser.add_argument("--register", required=True, help="HOST:PORT of the register")
    parser.add_argument("--client", required=True, help="this client's name in the register")
    parser.add_argument("--seconds", type=count, default=60)
    parser.add_argument("--ttl-ms", type=count, default=2_000)
    parser.add_argument("--hold-ms", type=count, default=50)
    parser.add_argument("--wait-ms", type=count, default=10_000)
    args = parser.parse_args(argv)
    if not args.url or not args.register or not args.client:
        parser.error("--register, --client and --url are needed")
    return args


def run(args: argparse.Namespace, reg: Register) -> Tally:
    c: str = args.client
    reg.request(f"hello {c} python {os.getpid()}")
    locker = baton.Locker(
        args.url,
        strategy=args.strategy,
        ttl=args.ttl_ms / 1000,
        timeout=args.wait_ms / 1000,
        keep_alive=True,
    )
    tally = Tally()
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        try:
            lease = locker.acquire(args.name)  # waits up to the locker's timeout: TimedOut after
        except baton.BatonError as e:
            tally.lock_errors += 1
            if e.kind not in tally.codes_seen:
                tally.codes_seen.add(e.kind)
                print(f"worker.py {c}: first {e.kind}: {e}", file=sys.stderr, flush=True)
            reg.request(f"error {c} {e.kind}")
            time.sleep(0.02)
            continue
        with lease:  # releases if the register fails mid-section
            token = lease.token
            reg.request(f"begin {c} {token}")
            read = reg.request(f"read {c} {token}")
            time.sleep(random.randint(0, args.hold_ms) / 1000)
            if read.startswith("value "):
                answer = reg.request(f"write {c} {token} {read[len('value '):]}")
                tally.refused += answer.startswith("refused")
            else:
                tally.refused += 1
            try:
                lease.check()
            except baton.Lost:
                tally.lost += 1
                reg.request(f"lost {c} {token}")
            reg.request(f"end {c} {token}")
            try:
                lease.release()
                outcome = "ok"
            except baton.BatonError as e:
                outcome = e.kind
            reg.request(f"release {c} {token} {outcome}")
        tally.sections += 1
    return tally


def main() -> int:
    args = parse()
    try:
        reg = Register(args.register)
        try:
            tally = run(args, reg)
        finally:
            reg.close()
    except (RegisterError, baton.BatonError) as e:
        print(f"worker.py {args.client}: {e}", file=sys.stderr)
        return 1
    print(
        f"done client={args.client} sections={tally.sections} refused={tally.refused} "
        f"lost={tally.lost} lock_errors={tally.lock_errors}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
