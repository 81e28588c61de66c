"""Optimistic locking of an object (seed 002, ScaleOut StateServer's "Optimistic Locking"):
read a stock quote with its version, change it, and write it back only if nobody wrote it in
between; on a collision, read it again and retry.

    python3 optimistic_quote.py [STORE_URL]  (default: $BATON_STORE, else a SQLite file in /tmp)
"""

import json
import os
import sys
import time
from typing import Any, Dict

import baton


def encode(quote: Dict[str, Any]) -> bytes:
    return json.dumps(quote).encode()


def main(url: str) -> None:
    max_update_attempts = 100
    update_attempts = 0
    quote_updated = False
    quote_cache = baton.Locker(url)

    while not quote_updated:
        if update_attempts > max_update_attempts:
            raise RuntimeError("Max optimistic update attempts exceeded.")

        update_attempts += 1

        try:
            # Retrieve the quote and change its price. The result holds the version number
            # of the object in the store, which will be used later for the update:
            get_result = quote_cache.get("GOOG")
            if get_result is None:
                # No quote (never inserted, or removed): handled below, as when a removal
                # comes between our get() and our update_optimistic().
                raise baton.ObjectNotFound("no quote for GOOG")

            print(get_result.version)

            quote = json.loads(get_result.value)
            quote["price"] = 1052.42

            # Perform optimistic update:
            update_result = quote_cache.update_optimistic("GOOG", encode(quote), get_result.version)

            # If we get this far without an exception then the update succeeded:
            quote_updated = True

            # Note that update_optimistic returns the object's new version, which could be
            # used for a subsequent optimistic update of our local quote:
            print(update_result)

        except baton.VersionMismatch:
            # A collision occurred because another client/thread updated the object in the
            # period between our get() and our update_optimistic() calls. We don't want
            # to overwrite the other client's changes, so we go round again and retry the
            # entire get/update_optimistic sequence.
            continue

        except baton.ObjectNotFound:
            # Another client or thread must have removed our object.
            # Attempt to recreate it with our desired value.
            quote = {"ticker": "GOOG", "price": 1052.42, "volume": -1}
            try:
                quote_cache.insert("GOOG", encode(quote))
                quote_updated = True
            except baton.AlreadyExists:
                pass  # another client recreated it first: retry the update on theirs

        except baton.Busy:
            # Unlike ScaleOut StateServer's, baton's unlocked writes honour locks: another
            # client holds the quote's lock (get_and_lock), and changes it under it. Retry
            # once it has had a moment.
            time.sleep(0.05)

    print(f"GOOG at 1052.42 after {update_attempts} attempt(s)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BATON_STORE", "sqlite:///tmp/baton-example.db"))
