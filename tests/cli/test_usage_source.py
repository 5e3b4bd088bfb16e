"""Who counted a usage figure, end to end: the offline provider's usage is ctxscope's local count
and says so in the store, ``show --json``, ``context --json`` and the gauge; an API's usage says
``api`` (issue 20, deviation 15)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply
from tui.gauge_state import GaugeState
from tui.widgets.token_gauge import usage_label


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CTXSCOPE_MODEL", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n")
    return ws


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_offline_usage_is_labelled_local_everywhere(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    assert main(["ask", "read README.md", "--workspace", str(workspace), "--db", db]) == 0
    capsys.readouterr()

    usage = _json(capsys, "show", "1", "--db", db)["usage"]
    assert usage and {u["source"] for u in usage} == {"local"}  # one per model call
    context = _json(capsys, "context", "1", "--db", db)
    assert context["budget"]["source"] == "local"
    plan = context["strategy"]["plan"]
    assert plan["source"] == "local" and plan["measure"] == "local count + input estimate"
    assert plan["value"] == usage[-1]["usage"]["input_tokens"]  # the stored count, labelled


def test_api_usage_is_labelled_api(
    workspace: Path,
    tmp_path: Path,
    server: FakeAnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    server.script([text_reply("Hello.", usage={"input_tokens": 1_234, "output_tokens": 3})])
    db = str(tmp_path / "s.db")
    assert main(["ask", "say hello", "--workspace", str(workspace), "--db", db]) == 0
    capsys.readouterr()

    usage = _json(capsys, "show", "1", "--db", db)["usage"]
    assert [u["source"] for u in usage] == ["api"]
    context = _json(capsys, "context", "1", "--db", db)
    assert context["budget"]["source"] == "api" and context["budget"]["last_usage"] == 1_234
    assert context["strategy"]["plan"]["measure"] == "last API usage + input estimate"


def test_the_gauge_names_a_local_count_even_when_a_key_is_set_now() -> None:
    """A session run offline and opened later with a key: its last usage is still a local
    count, and the gauge says so instead of "last API call"."""
    state = GaugeState(context_window=200_000, threshold=160_000, usage_source="local")
    assert usage_label(state) == "last call (offline provider: ctxscope's local count) "
    api = GaugeState(context_window=200_000, threshold=160_000, usage_source="api")
    assert usage_label(api) == "last API call "
