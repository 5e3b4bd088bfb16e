"""The corpus the importer tests read is the real one: each file's git blob is the one its
README names (``(blob 6aed0d56)`` and so on), so no test reads a file anyone edited without
the README saying what (one file has its owner's e-mail address and name replaced)."""

from __future__ import annotations

import hashlib
import re

from tests.engine.recordings.corpus import CORPUS


def git_blob(data: bytes) -> str:
    """What ``git hash-object`` prints for ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_every_recording_is_the_blob_its_readme_names() -> None:
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\(blob ([0-9a-f]{8})\)", readme))
    files = sorted(p for p in CORPUS.iterdir() if p.name != "README.md")
    assert len(files) == 17
    blobs = {git_blob(p.read_bytes())[:8] for p in files}
    assert blobs == {
        "3ffa3caf", "4da99171", "6aed0d56", "d4f9e1a6",
        "00881aec", "e291f207", "9d90bb7a", "6d81fc44",
        "137eb8b0", "04782e05", "89cb56a2", "8ab75bdf",
        "03580ea9", "22fc468c", "7bf70bb2", "99adb0fd",
        "0f4d83bb",
    }  # fmt: skip
    assert named == blobs
