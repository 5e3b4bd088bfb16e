"""Fixtures for the attack tests: a workspace, a secret outside it, and a flipper thread that
keeps swapping a workspace name between a real entry and a symlink to the outside.

The swap is ``renameat2(RENAME_EXCHANGE)`` (Linux ≥ 3.15, glibc ≥ 2.28): the two names trade
places in one step, so at every instant the name is either the real entry or the link —
the window a check-then-open race needs is open all the time. Where the call is missing the
flipper falls back to unlink + symlink + rename, which is slower but flips as well.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

SECRET = "TOPSECRET-7f3a9c"
"""What lives outside the workspace; no tool result, context or workspace file may hold it."""

AT_FDCWD = -100
RENAME_EXCHANGE = 2

_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def exchange(a: Path, b: Path) -> None:
    """Swap the names ``a`` and ``b`` atomically."""
    if _renameat2 is not None:
        if _renameat2(AT_FDCWD, bytes(a), AT_FDCWD, bytes(b), RENAME_EXCHANGE) == 0:
            return
    tmp = a.with_name(a.name + ".swap")
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)


class Flipper:
    """Swaps ``name`` with ``spare`` (a symlink to the outside) until stopped."""

    def __init__(self, name: Path, spare: Path) -> None:
        self.name = name
        self.spare = spare
        self.flips = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            exchange(self.name, self.spare)
            self.flips += 1

    def __enter__(self) -> Flipper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.name.is_symlink():  # leave the real entry under its name
            exchange(self.name, self.spare)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace; ``outside/f.txt`` holds the secret."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "f.txt").write_text(f"alpha {SECRET}\n")
    (out / "CODE_LAW.md").write_text(f"alpha {SECRET}\n")
    return out


@pytest.fixture
def flip_dir(workspace: Path, outside: Path) -> Iterator[Flipper]:
    """``ws/d`` flips between a real directory (holding ``f.txt``) and a link to outside."""
    real = workspace / "d"
    real.mkdir()
    (real / "f.txt").write_text("alpha public\n")
    spare = workspace / ".d-spare"
    spare.symlink_to(outside)
    with Flipper(real, spare) as flipper:
        yield flipper


@pytest.fixture
def flip_file(workspace: Path, outside: Path) -> Iterator[Flipper]:
    """``ws/f.txt`` flips between a regular file and a link to ``outside/f.txt``."""
    real = workspace / "f.txt"
    real.write_text("alpha public\n")
    spare = workspace / ".f-spare"
    spare.symlink_to(outside / "f.txt")
    with Flipper(real, spare) as flipper:
        yield flipper
