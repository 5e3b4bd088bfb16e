"""Issue 39: importing the aider history of 702 sessions built the ten tools' JSON schemas
7,020 times (36 s of 67): ten per session. They are built once per import, whatever the number
of sessions (``engine/recordings/repeated.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.recordings import repeated
from engine.recordings.importing import import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store
from tools.registry import ToolRegistry


def test_three_sessions_build_the_tool_schemas_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three Anthropic-messages files in a folder, each its own session: the registry's
    ``schemas()`` (ten tools' JSON schemas) is asked once, not three times."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    for n in (1, 2, 3):
        lines = [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]},
        ]
        (folder / f"s{n}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    calls: list[int] = []
    built = ToolRegistry.schemas

    def counted(self: ToolRegistry) -> list[dict[str, Any]]:
        calls.append(1)
        return built(self)

    monkeypatch.setattr(ToolRegistry, "schemas", counted)
    repeated._prompt_and_tools.cache_clear()  # noqa: SLF001 - as a fresh process starts
    store = Store.open(tmp_path / "db.sqlite")
    try:
        reports = import_parsed(store, parse_path(folder), str(tmp_path), Settings())
    finally:
        store.close()
    assert len(reports) == 3 and len({r.session.id for r in reports}) == 3
    assert len(calls) == 1
