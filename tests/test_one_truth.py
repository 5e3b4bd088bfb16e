"""One truth per figure (issue 37): every corpus file through every surface — ``import``,
``sessions``, ``show``, ``context``, ``report`` (each ``--json``), ``statusline`` and the
workbench — gives the same window, auto-compact point, context tokens and cost.

Each surface is read where a user reads it (the command's JSON, the status line's text, the
workbench's gauge), never from the function they share, so a surface that computed a figure
again would fail here. Two figures are also checked against the file itself, worked out by hand
(docstrings below), so agreeing on a wrong figure fails too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_redirected as run

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
MAIN_FILES = sorted(
    p.name
    for p in CORPUS.iterdir()
    if p.suffix in (".jsonl", ".json", ".traj") and "__subagents__" not in p.name
)
FOLLOWED = {n for n in MAIN_FILES if n.endswith(".jsonl")}
"""What ``watch`` and ``statusline`` follow: Claude Code sessions and Codex rollouts."""


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def surfaces(name: str, tmp: Path) -> dict[str, dict[str, Any]]:
    """The four figures of ``name`` as each command-line surface prints them."""
    db = str(tmp / "one.db")
    code, out, err = run("import", str(CORPUS / name), "--db", db, "--json")
    assert code == 0, err
    imported = json.loads(out)
    sid = imported["session_id"]
    seen: dict[str, dict[str, Any]] = {"import": imported["figures"]}

    code, out, err = run("sessions", "--db", db, "--json")
    assert code == 0, err
    seen["sessions"] = next(s for s in json.loads(out) if s["id"] == sid)["figures"]
    code, out, err = run("show", str(sid), "--db", db, "--json")
    assert code == 0, err
    seen["show"] = json.loads(out)["figures"]
    code, out, err = run("context", str(sid), "--db", db, "--json")
    assert code == 0, err
    context = json.loads(out)
    seen["context"] = context["figures"]
    if "recorded" in context:  # the recorded agent's own block says the same
        rec = context["recorded"]
        seen["context.recorded"] = {
            "context_window": rec["context_window"],
            "auto_compact_at": rec["auto_compact_at"],
            "context_tokens": rec["context_tokens"],
            "cost": rec["cost"],
        }
    code, out, err = run("report", "--db", db, "--json", "--by", "session")
    assert code == 0, err
    line = next(s for s in json.loads(out)["sessions"] if s["id"] == sid)
    seen["report"] = {"cost": line["cost"]["total"], "requests": line["requests"]}
    return seen


KEYS = ("context_window", "auto_compact_at", "context_tokens", "until_auto_compact", "cost")


@pytest.mark.parametrize("name", MAIN_FILES)
def test_every_command_gives_the_same_figures(name: str, tmp_path: Path) -> None:
    seen = surfaces(name, tmp_path)
    first = seen["import"]
    for surface, figures in seen.items():
        for key in KEYS:
            if key in figures:
                assert figures[key] == first[key], (surface, key)
    assert seen["report"]["requests"] == first["requests"]
    # no screen names a window its context does not fit in
    if first["context_tokens"] is not None:
        assert first["context_tokens"] <= first["context_window"]


def test_marot_figures_are_the_files_own() -> None:
    """The corpus' Claude Code 2.1.39 session on claude-opus-4-6 (200,000 window): its last
    assistant record with usage (python over the jsonl) has input 3, cache read 77,272, cache
    write 59, output 85 → context 77,419; Claude Code compacts at 167,000 there (the file's own
    auto compaction fired at preTokens 167,094); its calls cost $11.853923 at list price
    (worked out by hand in tests/cli/test_recorded_figures.py)."""
    seen = surfaces("marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl", _tmp())
    figures = seen["import"]
    assert figures["context_tokens"] == 77_419
    assert figures["context_window"] == 200_000
    assert figures["auto_compact_at"] == 167_000
    assert figures["until_auto_compact"] == 167_000 - 77_419
    assert round(figures["cost"], 2) == 11.85


def _tmp() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="one-truth-"))


def statusline(transcript: Path, db: Path, cache: Path) -> str:
    """``ctxscope statusline --wait`` as Claude Code runs it: the status JSON on stdin."""
    status = {
        "hook_event_name": "Status",
        "session_id": "s",
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
        "workspace": {"current_dir": str(transcript.parent)},
    }
    done = subprocess.run(
        [sys.executable, "-m", "cli.workbench", "statusline", "--db", str(db), "--wait"],
        input=json.dumps(status),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("name", sorted(FOLLOWED))
def test_the_status_line_prints_the_same_figures(name: str, tmp_path: Path) -> None:
    figures = surfaces(name, tmp_path)["import"]
    copy = tmp_path / "session.jsonl"
    copy.write_bytes((CORPUS / name).read_bytes())
    line = statusline(copy, tmp_path / "followed.db", tmp_path / "cache")
    assert f"ctx {figures['context_tokens']:,}/{figures['context_window']:,}" in line
    if figures["until_auto_compact"] is not None:
        assert f"{figures['until_auto_compact']:,} to auto-compact" in line
    cost = figures["cost"]
    assert ("–" if cost is None else f"${cost:,.2f}") in line

