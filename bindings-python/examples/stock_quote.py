"""Pessimistic locking of an object (seed 002, ScaleOut StateServer's "Locking Objects"):
read and lock a stock quote, change it, then update it and unlock it in one step.

    python3 stock_quote.py [STORE_URL]      (default: $BATON_STORE, else a SQLite file in /tmp)

The quote is an object: an opaque bytes value (JSON here) with a version, kept beside the lock
of the same name. While this client holds the lock, no other client changes the quote: their
writes get baton.Busy, their get_and_lock waits.
"""

import json
import os
import sys
from typing import Any, Dict

import baton


def encode(quote: Dict[str, Any]) -> bytes:
    return json.dumps(quote).encode()


def main(url: str) -> None:
    quote_cache = baton.Locker(url)
    try:
        quote_cache.insert("GOOG", encode({"ticker": "GOOG", "price": 1053.00, "volume": 0}))
    except baton.AlreadyExists:
        pass  # an earlier run (or another client) created it

    # Read & lock the object in the store:
    with quote_cache.get_and_lock("GOOG", timeout=30) as get_result:
        # Change the retrieved object's state to contain the latest info:
        assert get_result.value is not None
        quote = json.loads(get_result.value)
        quote["price"] = 1053.26
        quote["volume"] = 1657662

        # Atomically update & unlock the object in the store. Only the holder of the lock
        # taken by the earlier locking get can write it: the store checks, in the same step
        # as the write, that this lock is still ours (else baton.Lost, and nothing is written).
        version = get_result.update_and_release(encode(quote))

    print(f"GOOG at {quote['price']}, volume {quote['volume']} (version {version})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BATON_STORE", "sqlite:///tmp/baton-example.db"))
