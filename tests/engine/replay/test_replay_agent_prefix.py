"""A recorded session's replay plans with its agent's prefix (issue 30).

The corpus's Claude Code session sent Claude Code's system prompt, tools and CLAUDE.md with
every request; ctxscope's replayed request carries ctxscope's own, far smaller ones. Each
strategy's budget counts the request as the recorded agent would send it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_redirected as run

MAROT = (
    Path(__file__).resolve().parents[2]
    / "data"
    / "corpus"
    / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
)
FIRST_PROMPT = 25_882
"""The input side of the file's first API call (input + cache read + cache write of the first
assistant record with usage, python over the jsonl): Claude Code's prefix and the first prompt."""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    saved = os.environ.pop("ANTHROPIC_API_KEY", None)
    path = tmp_path_factory.mktemp("prefix") / "ctxscope.db"
    assert run("import", str(MAROT), "--db", str(path))[0] == 0
    yield path
    if saved is not None:
        os.environ["ANTHROPIC_API_KEY"] = saved


def replay(db: Path, *args: str) -> dict[str, Any]:
    code, out, err = run("replay", "1", "--strategy", "layered", "--db", str(db), "--json", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_every_request_is_counted_with_the_agents_prefix(db: Path) -> None:
    data = replay(db)
    recorded, layered = data["strategies"]
    extra = layered["agent_prefix_tokens"]
    assert 20_000 < extra < FIRST_PROMPT  # Claude Code's prefix less ctxscope's own, smaller
    steps = data["series"]["layered"]
    assert all(s["original_tokens"] - s["tokens"] == extra for s in steps)
    # The first request, as the agent would send it, is the agent's first prompt: its prefix
    # and the one user message before the first call.
    assert steps[0]["original_tokens"] == FIRST_PROMPT
    assert layered["total_input_original"] == layered["total_input"] + extra * len(steps)
    # The as-recorded row is the file's own figures (see tests/cli/test_recorded_figures.py).
    assert "agent_prefix_tokens" not in recorded
    assert (recorded["steps"], recorded["peak"], recorded["compactions"]) == (152, 166_759, 1)


def test_in_the_agents_own_window_the_request_is_the_size_it_really_was(db: Path) -> None:
    # reset-hint sends earlier tool results as they were returned, as Claude Code does: its
    # request as Claude Code would send it grows to the recorded session's real peak, 166,759
    # (the file's largest input side, python over its usage records), and it compacts in the
    # default window; without the prefix its own count peaked near 144,000 and it did not.
    code, out, err = run("replay", "1", "--strategy", "reset-hint", "--db", str(db), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["window"] == 200_000
    reset = data["strategies"][1]
    steps = data["series"]["reset-hint"]
    assert reset["compactions"] >= 1
    assert max(s["original_tokens"] for s in steps) == pytest.approx(166_759, rel=0.01)


def test_the_recorded_results_are_sent(db: Path) -> None:
    # Between its 3rd and 4th API calls the session read eight files (63,000 characters of
    # tool results, python over the jsonl) and its input side grew from 31,180 to 50,681.
    # The replay sends those results: the request grows by more than half of that too.
    steps = replay(db)["series"]["layered"]
    assert steps[3]["tokens"] - steps[2]["tokens"] > (50_681 - 31_180) // 2


def test_the_threshold_sees_the_agents_request(db: Path) -> None:
    # In a 70,000-token window layered fires at 0.8 x 70,000 = 56,000. ctxscope's own count
    # of the request never reaches it; the request as Claude Code would send it does.
    data = replay(db, "--window", "70000")
    layered = data["strategies"][1]
    steps = data["series"]["layered"]
    assert max(s["tokens"] for s in steps) < 56_000
    assert layered["compactions"] >= 1
    fired = [s for s in steps if s["compactions"]]
    assert fired and all(s["original_tokens"] <= 70_000 for s in steps)


def test_the_window_fit_counts_the_agents_prefix(db: Path) -> None:
    # In 60,000 tokens the engine's last resort keeps every request, as the agent would send
    # it, inside the window: ctxscope's own count must stay 60,000 - prefix difference.
    data = replay(db, "--window", "60000")
    layered = data["strategies"][1]
    extra = layered["agent_prefix_tokens"]
    steps = data["series"]["layered"]
    assert max(s["tokens"] for s in steps) <= 60_000 - extra
    assert layered["compactions"] >= 1


def test_a_window_the_prefix_does_not_fit_plans_ctxscopes_own_request(db: Path) -> None:
    # 20,000 tokens cannot hold Claude Code's prefix (25,882 with the first prompt): no
    # request could be sent, so the replay plans ctxscope's own and says nothing of a prefix.
    data = replay(db, "--window", "20000")
    layered = data["strategies"][1]
    assert "agent_prefix_tokens" not in layered
    steps = data["series"]["layered"]
    assert max(s["tokens"] for s in steps) <= 20_000


def test_the_table_says_the_prefix(db: Path) -> None:
    extra = replay(db)["strategies"][1]["agent_prefix_tokens"]
    code, text, _ = run("replay", "1", "--strategy", "layered", "--db", str(db))
    assert code == 0
    said = [line for line in text.splitlines() if line.startswith("planned as the recorded")]
    assert len(said) == 1 and f"{extra:+,} tokens" in said[0]
