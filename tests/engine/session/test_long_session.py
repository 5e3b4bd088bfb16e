"""Forty offline ``ctxscope ask`` rounds on a code base under a 30 000-token window.

The issue's acceptance run: large Reads make compaction fire several times; at the end the
session has compactions recorded, at least ``keep_rounds`` whole rounds kept, summaries in A5
form, and ``ctxscope context --json`` shows the layers in the seed's order.

The code base is written by the test (eight Python modules of 11–22 KB, the sizes of the
ctxscope modules this test once read from the checkout, and a README): reading the checkout
itself made the session's course change whenever those files did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from engine.context.builder import LAYERS

FILES = {
    "engine/session.py": 16_000,
    "engine/store/archive.py": 12_700,
    "engine/context/builder.py": 18_800,
    "engine/context/history.py": 21_600,
    "cli/main.py": 11_700,
    "engine/compaction/summary.py": 13_400,
    "engine/recordings/importing.py": 11_700,
    "engine/messages/tokens.py": 12_200,
}
"""Each module of the workspace and its size in bytes."""


def write_workspace(root: Path) -> Path:
    """The code base the forty asks read: each module a run of small functions (names and
    docstrings vary, so no two lines are alike) up to its size, and a README."""
    for n, (name, size) in enumerate(FILES.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f'"""Module {name}: part {n} of the test\'s code base."""', ""]
        i = 0
        while sum(len(line) + 1 for line in lines) < size:
            lines += [
                f"def step_{n}_{i}(value: int, limit: int = {i + 10}) -> int:",
                f'    """Step {i} of module {n}: the value, bounded by {i + 10}."""',
                f"    return min(value + {i}, limit)  # {name}, function {i}",
                "",
            ]
            i += 1
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "README.md").write_text(
        "# A code base\n\n" + "".join(f"- `{name}`\n" for name in FILES), encoding="utf-8"
    )
    return root


OTHER = ["ls engine", "glob **/*.py", "grep def ", "read README.md"]


def test_forty_asks_compact_several_times_and_keep_ten_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CTXSCOPE_CONTEXT_WINDOW", "30000")
    db = tmp_path / "long.db"
    common = ["--db", str(db), "--json"]
    workspace = write_workspace(tmp_path / "ws")
    files = list(FILES)

    session_id = None
    warnings = 0
    for i in range(40):
        text = f"read {files[i % len(files)]}" if i % 3 else OTHER[(i // 3) % len(OTHER)]
        argv = ["ask", text, "--workspace", str(workspace), *common]
        if session_id is not None:
            argv += ["--session", str(session_id)]
        assert main(argv) == 0
        lines = capsys.readouterr().out.splitlines()
        events = [json.loads(line) for line in lines]
        warnings += sum(e["type"] == "budget_warning" for e in events)
        result = events[-1]
        assert result["type"] == "result" and result["status"] == "finished"
        assert result["provider"] == "offline (rule-based, no LLM)"
        session_id = result["session_id"]

    assert main(["show", str(session_id), *common]) == 0
    shown = json.loads(capsys.readouterr().out)
    done = [c for c in shown["compactions"] if c["outcome"] in ("success", "fallback")]
    assert len(done) >= 2
    # between compactions the keep zone alone is over the threshold: the engine warns
    # instead of compacting one round per input
    assert warnings >= 10
    auto = [c for c in done if c["trigger"] == "auto"]
    assert all(c["rounds_compacted"] >= 10 for c in auto[1:])
    # a round whose Reads go over the window mid-round: the engine's last resort archives
    # just enough of the oldest rounds, never sending a request over the window
    assert {c["trigger"] for c in done} <= {"auto", "emergency"}
    assert max(u["usage"]["input_tokens"] for u in shown["usage"]) <= 30000  # offline: no cache
    assert all(c["tokens_after"] < c["tokens_before"] for c in done)
    kept = [r for r in shown["rounds"] if not r["archived"]]
    # keep_rounds (10) whole rounds, except where the last resort had to go below them
    # because ten rounds and a large Read did not fit in 30 000 tokens (measured: 6 kept)
    assert all(r["status"] == "finished" for r in kept)
    assert len(kept) >= (10 if "emergency" not in {c["trigger"] for c in done} else 5)
    assert len(shown["rounds"]) == 40
    # whole rounds: every kept round starts with its user message and ends with the answer
    by_round: dict[int, list[dict]] = {}
    for m in shown["history"]:
        by_round.setdefault(m["meta"]["round"], []).append(m)
    for msgs in by_round.values():
        assert msgs[0]["role"] == "user" and msgs[-1]["meta"].get("final")
    for s in shown["summaries"]:
        assert s["content"].startswith("## 📌 Archived Session Summary\n*(Contains context from")
        assert "### 📂 File System State (Snapshot)" in s["content"]
    archived = sum(len(seg["messages"]) for seg in shown["archived_segments"])
    assert archived == sum(c["messages_compacted"] for c in done)

    assert main(["context", str(session_id), *common]) == 0
    context = json.loads(capsys.readouterr().out)
    assert [layer["name"] for layer in context["layers"]] == list(LAYERS)
    assert context["context_window"] == 30000
