"""What the repository holds: no database file is tracked (``make lint``'s ``no-databases``).

A 3.9 MB ``dbg.db`` was once committed at the root. ``make lint`` now refuses any tracked
``*.db``, ``*.sqlite``, ``*.sqlite3`` or SQLite side file (``-wal``, ``-shm``, ``-journal``);
these tests run that very target on small git repositories made here, and on this checkout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = ROOT / "Makefile"


def _no_databases(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "-f", str(MAKEFILE), "-C", str(folder), "no-databases"],
        capture_output=True,
        text=True,
        check=False,
    )


def _repo(tmp_path: Path, files: list[str]) -> Path:
    """A git repository with ``files`` staged (``git ls-files`` lists staged files)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in files:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"SQLite format 3\x00")  # what is inside does not matter: the name does
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", *files], check=True)
    return tmp_path


@pytest.mark.parametrize(
    "name", ["dbg.db", "data/cache.sqlite", "x.sqlite3", "sessions/a.db-wal", "a.db-shm"]
)
def test_a_tracked_database_file_is_refused(tmp_path: Path, name: str) -> None:
    done = _no_databases(_repo(tmp_path, ["README.md", name]))
    assert done.returncode != 0
    assert f"tracked database file: {name}" in done.stderr
    assert "README.md" not in done.stderr


def test_sources_alone_pass(tmp_path: Path) -> None:
    done = _no_databases(_repo(tmp_path, ["README.md", "engine/store/schema.py", "docs/db.md"]))
    assert (done.returncode, done.stderr) == (0, "")


def test_this_checkout_tracks_no_database() -> None:
    done = _no_databases(ROOT)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
