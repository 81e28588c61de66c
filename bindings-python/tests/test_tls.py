"""TLS and credentials from Python, against the test command's TLS-only users
(BATON_POSTGRES_TLS_URL, BATON_MYSQL_TLS_URL, the certificates in BATON_TLS_DIR). Run once, in
the memory-store pass of the suite."""

from __future__ import annotations

import os
import pathlib
import re
import uuid
from typing import List, Tuple

import pytest

import baton


def tls_urls() -> List[Tuple[str, str]]:
    """(url, name of its CA parameter) of each TLS-only user the environment names."""
    if (os.environ.get("BATON_TEST_URL") or "memory:") != "memory:":
        pytest.skip("run once, in the memory-store pass")
    found = []
    for var, ca in (("BATON_POSTGRES_TLS_URL", "sslrootcert"), ("BATON_MYSQL_TLS_URL", "ssl-ca")):
        if os.environ.get(var):
            found.append((os.environ[var], ca))
        elif os.environ.get("BATON_REQUIRE_SERVICES") == "1":
            pytest.fail(f"BATON_REQUIRE_SERVICES=1 but {var} is not set")
    if not found:
        pytest.skip("no TLS store URL is set")
    return found


def split_password_file(url: str) -> Tuple[str, str]:
    """The URL without its password_file= parameter, and that file."""
    base, _, query = url.partition("?")
    params = [p for p in query.split("&") if p]
    files = [p.split("=", 1)[1] for p in params if p.startswith("password_file=")]
    kept = [p for p in params if not p.startswith("password_file=")]
    assert files, url
    return base + ("?" + "&".join(kept) if kept else ""), files[0]


def test_verified_tls_with_the_password_file_as_a_keyword() -> None:
    for url, _ in tls_urls():
        bare, password_file = split_password_file(url)
        locker = baton.Locker(bare, password_file=pathlib.Path(password_file), timeout=5)
        with locker.lock(f"py-tls-{uuid.uuid4().hex[:8]}") as lease:
            assert lease.held and lease.token > 0


def test_a_wrong_ca_is_a_store_unavailable_that_names_the_cause() -> None:
    urls = tls_urls()  # skips first when there is none, and BATON_TLS_DIR with them
    other = os.path.join(os.environ["BATON_TLS_DIR"], "other-ca.pem")
    for url, ca in urls:
        wrong = re.sub(rf"{ca}=[^&]*", f"{ca}={other}", url)
        with pytest.raises(baton.StoreUnavailable, match="not trusted"):
            with baton.Locker(wrong, timeout=5).lock("py-tls-wrong-ca"):
                pass


def test_no_password_shows_in_errors_or_reprs(tmp_path: pathlib.Path) -> None:
    secret = "Wr0ng-py-pa55"
    wrong = tmp_path / "password"
    wrong.write_text(secret + "\n")
    for url, _ in tls_urls():
        bare, _ = split_password_file(url)
        locker = baton.Locker(bare, password_file=str(wrong), timeout=5)
        assert secret not in repr(locker)
        with pytest.raises(baton.BatonError) as caught:
            with locker.lock("py-tls-wrong-password"):
                pass
        assert secret not in str(caught.value) and secret not in repr(caught.value)
        inline = bare.replace("baton_tls@", f"baton_tls:{secret}@", 1)
        with pytest.raises(baton.BatonError) as caught:
            with baton.Locker(inline, timeout=5).lock("py-tls-inline"):
                pass
        assert secret not in str(caught.value) and secret not in repr(caught.value)
    with pytest.raises(baton.InvalidOption, match="password_file"):
        baton.Locker("memory:", password_file=42)  # type: ignore[arg-type]
