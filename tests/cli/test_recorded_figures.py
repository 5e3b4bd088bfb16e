"""Issue 30: a recorded session's figures are its own agent's — ``context --json`` gives Claude
Code's auto-compact point and its L1 as recorded, not ctxscope's system prompt."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import run_redirected as run

MAROT = (
    Path(__file__).parent.parent
    / "data"
    / "corpus"
    / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)
# Its last assistant record with usage (python over the jsonl): input 3, cache read 77,272,
# cache write 59, output 85. Claude Code on its 200,000 window compacts at 167,000.
CONTEXT = 3 + 77_272 + 59 + 85


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    saved = os.environ.pop("ANTHROPIC_API_KEY", None)
    path = tmp_path_factory.mktemp("figures") / "ctxscope.db"
    assert run("import", str(MAROT), "--db", str(path))[0] == 0
    yield path
    if saved is not None:
        os.environ["ANTHROPIC_API_KEY"] = saved


def test_context_json_gives_the_agents_own_point(db: Path) -> None:
    code, out, _ = run("context", "1", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    own = data["recorded"]
    assert own["agent"] == "Claude Code" and own["model"] == "claude-opus-4-6"
    assert own["context_window"] == 200_000
    assert own["auto_compact_at"] == data["auto_compact_at"] == 167_000
    assert own["context_tokens"] == CONTEXT
    assert own["until_auto_compact"] == 167_000 - CONTEXT
    assert own["compactions"] == 1  # the one compact_boundary of the file
    # L1 is the recorded agent's (its hidden prefix), not ctxscope's system prompt
    layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    ours = {layer["name"]: layer["tokens"] for layer in data["what_if"]["layers"]}
    assert layers["L1 system"] == data["as_original_agent"]["hidden_prefix_tokens"]
    assert layers["L1 system"] != ours["L1 system"] and layers["L1 tools"] == 0
    assert data["total"] == sum(layers.values())
    # ctxscope's threshold is a what-if, not the session's figure
    assert "threshold" not in data and data["what_if"]["threshold"] == 160_000
    code, text, _ = run("context", "1", "--db", str(db))
    first = text.splitlines()[0]
    assert first.startswith(f"recorded by Claude Code (claude-opus-4-6): context {CONTEXT:,}")
    assert f"{167_000 - CONTEXT:,} until auto-compact at 167,000" in first


# The recorded cost, worked out by hand from the file: each API call once (its message id's
# last record, 152 calls), at Anthropic's list price for Claude Opus 4.6 ($5 input, $25
# output per million; cache writes 1.25x input for 5 minutes, 2x for 1 hour, from each call's
# `cache_creation.ephemeral_1h_input_tokens`; cache reads 0.1x): $11.853923.
COST = 11.853923


def test_show_and_sessions_state_the_recorded_cost(db: Path) -> None:
    code, out, _ = run("show", "1", "--db", str(db))
    assert code == 0 and "the recorded calls cost $11.85 " in out
    code, out, _ = run("sessions", "--db", str(db), "--json")
    (row,) = json.loads(out)
    assert row["cost"] == pytest.approx(COST, abs=1e-6)
    code, out, _ = run("sessions", "--db", str(db))
    header, line = out.splitlines()
    assert "COST" in header.split() and "$11.85" in line.split()


def test_replay_has_an_as_recorded_row(db: Path) -> None:
    code, out, _ = run("replay", "1", "--strategy", "layered", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["window"] == 200_000  # Claude Code's own window
    recorded, layered = data["strategies"]
    assert layered["strategy"] == "layered"
    # Sums over the file's 152 API calls (each message id once, python over the jsonl):
    # input side = input + cache read + cache write.
    assert recorded["strategy"] == "as-recorded"
    assert recorded["steps"] == 152
    assert recorded["total_input"] == 15_121_271
    assert recorded["peak"] == 166_759
    assert recorded["cache_read"] == 14_771_617
    assert recorded["cache_write"] == 349_474
    assert recorded["cost"] == pytest.approx(COST, abs=1e-4)
    assert recorded["compactions"] == 1  # the one compact_boundary (preTokens 167,094)
    steps = data["series"]["as-recorded"]
    assert sum(s["compactions"] for s in steps) == 1
    code, text, _ = run("replay", "1", "--strategy", "layered", "--db", str(db))
    assert text.splitlines()[1].split()[0] == "strategy"
    assert text.splitlines()[2].split()[:3] == ["as-recorded", "152", "1"]
