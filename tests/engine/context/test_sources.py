"""What ate the context, by source (engine/context/sources.py): a proxied request split by
source adds up exactly to its usage and names its MCP servers; a recording's is an estimate,
labelled, whose agent prefix is the one ``context`` already states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from engine.context.sources import request_breakdown
from engine.exchanges import Exchange
from engine.models import Usage
from engine.store import Store
from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import MAROT

CLAUDE_MD = "/home/u/proj/CLAUDE.md"


def _tool(name: str, description: str, **extra: object) -> dict:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    return {"name": name, "description": description, "input_schema": schema, **extra}


BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1000,
    "system": [{"type": "text", "text": "You are a coding agent. Be brief."}],
    "tools": [
        _tool("Read", "Read a file from the local filesystem."),
        _tool("Bash", "Run a shell command."),
        _tool("mcp__github__create_issue", "Create an issue in a GitHub repository."),
        _tool("mcp__github__list_pull_requests", "List the pull requests of a repository."),
        _tool("mcp__linear__search", "Search Linear issues."),
        _tool("NotebookEdit", "Edit a notebook cell.", defer_loading=True),
    ],
    "messages": [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": f"<system-reminder>Contents of {CLAUDE_MD} (project instructions, "
                    "checked into the codebase):\n\nRun pytest -q before every commit."
                    "</system-reminder>",
                },
                {"type": "text", "text": "Fix the failing test in src/a.py"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading it."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Read",
                    "input": {"file_path": "src/a.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "def f():\n    return 1\n"}
            ],
        },
    ],
}
USAGE = Usage(input_tokens=812, cache_read_input_tokens=5_000, cache_creation_input_tokens=388)
"""Input side 6,200: what the API says the request held."""


def test_a_request_split_by_source_adds_up_to_its_usage_and_names_its_mcp_servers() -> None:
    """Sources: the system prompt; the built-in tools Read and Bash; MCP github (its two tools)
    and linear (one); NotebookEdit deferred (0 tokens, listed); CLAUDE.md as a memory file;
    the conversation by what it is, the Read tool's call and result together; src/a.py in the
    files. Scaled to 6,200 they add up to 6,200 exactly."""
    b = request_breakdown(BODY, USAGE.input_side)
    assert b.exact is True and b.total == 6_200
    assert sum(s.tokens for s in b.sources) == 6_200
    by_name = {s.name: s for s in b.sources}
    assert b.mcp_servers() == ["github", "linear"]
    assert by_name["MCP github"].items == ["create_issue", "list_pull_requests"]
    assert by_name["MCP linear"].items == ["search"]
    assert by_name["built-in tools"].items == ["Read", "Bash"]
    deferred = by_name["deferred tools (defer_loading)"]
    assert deferred.items == ["NotebookEdit"] and deferred.tokens == 0
    assert by_name[CLAUDE_MD].kind == "memory" and by_name[CLAUDE_MD].tokens > 0
    assert {"system prompt", "user text", "assistant text", "tool Read"} <= set(by_name)
    assert list(b.files) == ["src/a.py"]
    # Unscaled, the same parts add up to the local count (no usage: not exact).
    local = request_breakdown(BODY)
    assert local.exact is False and local.total == sum(s.tokens for s in local.sources)


def test_context_json_of_a_proxied_session_is_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request stored as ``ctxscope proxy`` stores it: ``context --json``'s ``by_source``
    is its last request's, totalling its usage's 6,200."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    db = tmp_path / "p.db"
    store = Store.open(db)
    stored = store.add_exchange(Exchange(request=BODY, usage=USAGE, status=200), "proxy:s1")
    store.close()
    code, out, err = run(capsys, "context", str(stored.session_id), "--db", str(db), "--json")
    assert code == 0, err
    by_source = json.loads(out)["by_source"]
    assert by_source["exact"] is True and by_source["total"] == 6_200
    assert sum(s["tokens"] for s in by_source["sources"]) == 6_200
    mcp = [s for s in by_source["sources"] if s["kind"] == "mcp"]
    assert [s["name"] for s in mcp] == ["MCP github", "MCP linear"]
    _, text, _ = run(capsys, "context", str(stored.session_id), "--db", str(db))
    assert "\nby source (exact total, 6,200): " in text and "MCP github" in text


def test_a_recordings_breakdown_is_an_estimate_around_its_known_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """marot: Claude Code's prompt and tools stay one source, 25,870 tokens (the hidden prefix
    ``context`` states: first prompt − transcript); the total is its last call's input side,
    from the file: the last assistant record's usage (``jq -s '[.[]|select(.type==
    "assistant")]|last|.message.usage'``) is input 3, cache write 59, cache read 77,272 →
    77,334."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    db = tmp_path / "m.db"
    assert main(["import", str(MAROT), "--db", str(db)]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "context", "1", "--db", str(db), "--json")
    by_source = json.loads(out)["by_source"]
    assert by_source["exact"] is False and by_source["method"].startswith("estimated")
    assert by_source["total"] == 77_334
    assert sum(s["tokens"] for s in by_source["sources"]) == 77_334
    (prefix,) = [s for s in by_source["sources"] if s["kind"] == "agent_prefix"]
    assert prefix["tokens"] == 25_870


def test_report_sums_the_proxied_requests_by_source_and_mcp_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two proxied sessions with the same request: ``report --json``'s ``context_by_source``
    adds their breakdowns (2 × 6,200 in all) and names the MCP servers."""
    db = tmp_path / "p.db"
    store = Store.open(db)
    for source in ("proxy:a", "proxy:b"):
        store.add_exchange(Exchange(request=BODY, usage=USAGE, status=200), source)
    store.close()
    code, out, _ = run(capsys, "report", "--db", str(db), "--json")
    assert code == 0
    sources = json.loads(out)["context_by_source"]
    assert sources["sessions"] == 2
    assert sum(sources["by_kind"].values()) == 12_400
    assert set(sources["mcp_servers"]) == {"github", "linear"}


def test_ctxscope_own_session_by_source_adds_up_to_its_next_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offline ``ask``: the sources of the next request (its system prompt, its ten tools
    by name, the history) add up to the request's own total in the same output."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n", encoding="utf-8")
    db = str(tmp_path / "o.db")
    assert main(["ask", "read README.md", "--workspace", str(ws), "--db", db]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "context", "1", "--db", db, "--json")
    data = json.loads(out)
    by_source = data["by_source"]
    assert by_source["total"] == data["total"]
    assert sum(s["tokens"] for s in by_source["sources"]) == data["total"]
    (tools,) = [s for s in by_source["sources"] if s["kind"] == "tools"]
    assert {"Read", "Bash", "Edit"} <= set(tools["items"]) and len(tools["items"]) == 10
