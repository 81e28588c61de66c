"""A cron job that must run on one host at a time (DBIx::Locker's digest job).

On every server: */5 * * * * python3 nightly_digest.py sqlite:///var/lib/app/locks.db
The first to get the lock runs the digest; the others find it busy and exit at once.
"""

import sys

import baton


def run_digest(fencing_token: int) -> None:
    print(f"digest written under fencing token {fencing_token}")


def main(url: str) -> int:
    locker = baton.Locker(url, ttl=60)
    lease = locker.try_lock("nightly-digest")
    if lease is None:
        print("another host is running the digest")
        return 75
    with lease:
        run_digest(fencing_token=lease.token)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///tmp/baton-example.db"))
