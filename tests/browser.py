"""A real browser for the tests of ctxscope's HTML pages: Debian's ``chromium``, headless.

Each run gets its own profile folder and every networked feature off; nothing is fetched (the
pages fetch nothing either: their Content-Security-Policy is ``default-src 'none'``). Without
a ``chromium`` binary (``apt-get install chromium``; ``.ci/run`` installs it as root) the
tests that need it are skipped with one line saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

MISSING = "no chromium binary: install Debian's chromium package to test the HTML pages"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
TIMEOUT = 120
"""Seconds a run may take on a loaded 2-core machine before the test fails."""


def chromium() -> str:
    """The chromium binary (``CTXSCOPE_CHROMIUM`` or ``chromium`` on the PATH), else skip."""
    found = os.environ.get("CTXSCOPE_CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.skip(MISSING)
    return found


def run(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Chromium over ``page`` (a file) with ``extra`` flags; its own profile folder."""
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )


def dump_dom(page: Path, profile: Path) -> str:
    """The document as the browser holds it once loaded (after any script would have run)."""
    return run(page, profile, "--dump-dom").stdout


def screenshot(page: Path, profile: Path, out: Path, size: str = "1200,1600") -> None:
    run(page, profile, f"--window-size={size}", f"--screenshot={out}")
