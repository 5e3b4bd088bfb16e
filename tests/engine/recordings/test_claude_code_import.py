"""``ctxscope import`` of real Claude Code sessions: what is stored, linked and priced.

Expected figures come from the files without ctxscope (commands quoted; see
``test_claude_code_parse.py`` for the shorthands and ``tests/data/corpus_facts/README.md``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli.main import main
from engine.models import Usage
from engine.settings.config import ModelPrice
from engine.store import Store
from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import MAROT, MOREDIP, MOREDIP_AGENT, YOAVF


@pytest.fixture(scope="module")
def marot_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("marot") / "m.db"
    assert main(["import", str(MAROT), "--db", str(db), "--json"]) == 0
    return db


@pytest.mark.usefixtures("no_key")
def test_marot_stores_the_whole_conversation(
    marot_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """186 tool calls and 186 results (message-complete view), 152 responses with usage
    (``jq -s '[.[]|select(.type=="assistant").message.id]|unique|length' $M`` → 152), the
    recorded cwd as workspace, model claude-opus-4-6 ×299."""
    code, out, _ = run(capsys, "show", "1", "--db", str(marot_db), "--json")
    assert code == 0
    data = json.loads(out)
    messages = [m for seg in data["archived_segments"] for m in seg["messages"]] + data["history"]
    calls = [c for m in messages for c in m.get("tool_calls", [])]
    assert len(calls) == 186
    assert sum(m["role"] == "tool" for m in messages) == 186
    assert sum(m["role"] == "assistant" for m in messages) == 152
    assert len(data["usage"]) == 152
    assert data["session"]["workspace"] == "/home/USER/projects/spotter-worktrees/spotter-gqc"
    assert data["session"]["model"] == "claude-opus-4-6"
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert "Implement spotter-gqc" in users and "did you push?" in users


@pytest.mark.usefixtures("no_key")
def test_marot_recorded_compaction_with_fidelity(
    marot_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The boundary (``jq -c 'select(.subtype=="compact_boundary")|{timestamp,
    compactMetadata}' $M``): auto, preTokens 167094, 2026-02-11T21:18:41.543Z; the summary
    is the isCompactSummary record's 14518 characters. Before it, the user's own requests are
    "Implement spotter-gqc" (line 5) and the two typed while the agent worked, "check again"
    (line 497) and "new beads for the epic were added. tackle them" (line 603); the interrupt
    (line 495) and the task-notification (line 496) are the harness's, not requests (before,
    the ledger counted those two and missed the queued ones: "requests 1/3"). The summary
    (line 1257, whitespace folded, lower case) contains all three: ``python -c`` over
    ``message.content`` of that line finds "implement spotter-gqc", "check again" and the
    whole "new beads…" sentence → 3 of 3."""
    code, out, _ = run(capsys, "show", "1", "--db", str(marot_db), "--json")
    data = json.loads(out)
    (comp,) = data["compactions"]
    assert comp["trigger"] == "auto"
    assert comp["stats"]["recorded"] is True
    assert comp["stats"]["recorded_pre_tokens"] == 167094
    assert comp["created_at"].startswith("2026-02-11T21:18:41.543")
    (summary,) = data["summaries"]
    assert len(summary["content"]) == 14518
    fidelity = comp["fidelity"]
    assert set(fidelity) >= {"file_read", "file_changed", "command", "error", "request"}
    assert (fidelity["request"]["kept"], fidelity["request"]["total"]) == (3, 3)
    _, text, _ = run(capsys, "show", "1", "--db", str(marot_db))
    assert "recorded: made by the original agent" in text
    assert "the summary keeps files read" in text


@pytest.mark.usefixtures("no_key")
def test_marot_stores_queued_inputs_and_marks_the_harness(
    marot_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user messages in order, with their marks (how the file gives them:
    ``test_claude_code_parse.test_marot_user_inputs_and_queued_ones``): the queued inputs are
    user messages that open a round each where the model got them; the harness's three are
    marked by kind. Of the seven, four are the user's own."""
    code, out, _ = run(capsys, "show", "1", "--db", str(marot_db), "--json")
    assert code == 0
    data = json.loads(out)
    messages = [m for seg in data["archived_segments"] for m in seg["messages"]] + data["history"]
    # Not the summary, nor the round the writer opens after it ({"synthetic": true}).
    users = [
        m
        for m in messages
        if m["role"] == "user"
        and m["content"][:10] != "This sessi"
        and not (m["meta"].get("origin") or {}).get("synthetic")
    ]
    marks = [((m["meta"].get("origin") or {}).get("input"), m["content"][:24]) for m in users]
    assert marks == [
        (None, "Implement spotter-gqc"),
        ("interrupt", "[Request interrupted by "),
        ("task-notification", "<task-notification>\n<tas"),
        ("queued", "check again"),
        ("queued", "new beads for the epic w"),
        ("task-notification", "<task-notification>\n<tas"),
        (None, "did you push?"),
    ]
    queued = [m for m in users if (m["meta"].get("origin") or {}).get("input") == "queued"]
    assert [m["meta"]["origin"]["queued_line"] for m in queued] == [497, 603]
    # Each opens a round: the message before it is the tool result the step before answered.
    rounds = [m["meta"]["round"] for m in queued]
    assert len(set(rounds)) == 2


@pytest.mark.usefixtures("no_key")
def test_marot_recorded_cost_prices_one_hour_writes_at_twice_input(
    marot_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every one of M's usage records writes its cache with the 1-hour lifetime (facts:
    ephemeral_1h > 0 in 299 records, ephemeral_5m in 0). Sums over the last record per
    message.id: input 180, cache_read 14771617, cache_creation 349474, output 38899. At
    claude-opus-4-6's list price (Anthropic's pricing page: $5 input, $10 1-hour write, $0.50
    cache hit, $25 output; every request under 200k tokens, the largest 166 759):
    (180*5 + 349474*10 + 14771617*0.5 + 38899*25) / 1e6 = 11.8539235."""
    code, out, _ = run(capsys, "show", "1", "--db", str(marot_db), "--json")
    data = json.loads(out)
    usage = data["usage"]
    assert sum(u["usage"]["cache_creation_input_tokens"] for u in usage) == 349474
    assert sum(u["usage"]["cache_creation_1h_input_tokens"] for u in usage) == 349474
    assert data["recorded_cost"] == pytest.approx(11.8539235, rel=0.01)


def test_usage_cost_prices_each_lifetime() -> None:
    """Anthropic: a 5-minute write costs 1.25x input, a 1-hour one 2x. 1M written, 400k of
    it for an hour, at $3 input: 600k*3.75 + 400k*6 = $2.25 + $2.40."""
    price = ModelPrice(input=3.0, output=15.0)
    usage = Usage(cache_creation_input_tokens=1_000_000, cache_creation_1h_input_tokens=400_000)
    assert price.usage_cost(usage) == pytest.approx(4.65)
    assert price.write_ratio("1h") == 2.0 and price.write_ratio("5m") == 1.25


@pytest.mark.usefixtures("no_key")
def test_project_folder_imports_the_session_with_its_subagent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The moredip pair in Claude Code's layout: ``<id>.jsonl`` and
    ``<id>/subagents/agent-a2018e5.jsonl``. The child: agentId a2018e5 (``jq -r .agentId $S |
    sort -u``), 1 input, 2 responses, 1 WebSearch call."""
    sid = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
    project = tmp_path / "-Users-pete-git-moredip-session-share"
    (project / sid / "subagents").mkdir(parents=True)
    shutil.copy(MOREDIP, project / f"{sid}.jsonl")
    shutil.copy(MOREDIP_AGENT, project / sid / "subagents" / "agent-a2018e5.jsonl")
    db = tmp_path / "p.db"
    code, out, err = run(capsys, "import", str(project), "--db", str(db), "--json")
    assert code == 0, err
    (parent,) = json.loads(out)  # a folder: a list of its sessions
    assert err == ""  # nothing left out
    (child,) = parent["subagents"]
    assert (child["agent_id"], child["parent_session_id"]) == ("a2018e5", parent["session_id"])
    assert (child["rounds"], child["messages"], child["observations"]) == (1, 4, 1)
    code, out, _ = run(capsys, "sessions", "--db", str(db), "--json")
    listed = {s["id"]: s for s in json.loads(out)}
    assert listed[child["session_id"]]["parent_session_id"] == parent["session_id"]
    assert listed[child["session_id"]]["agent_id"] == "a2018e5"
    code, out, _ = run(capsys, "show", str(parent["session_id"]), "--db", str(db), "--json")
    assert json.loads(out)["subagents"] == [
        {"session_id": child["session_id"], "agent_id": "a2018e5"}
    ]


@pytest.mark.usefixtures("no_key")
def test_show_observations_prints_full_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Y's first Read result (``jq -r 'select(.type=="user" and (.message.content|type)==
    "array").message.content[]|select(.type=="tool_result").content|strings' $Y``) is printed
    whole; 37 observations in all."""
    db = tmp_path / "y.db"
    assert run(capsys, "import", str(YOAVF), "--db", str(db))[0] == 0
    code, out, _ = run(capsys, "show", "1", "--db", str(db), "--observations", "--json")
    observations = json.loads(out)["observations"]
    assert len(observations) == 37
    recorded = []
    for line in YOAVF.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        content = rec.get("message", {}).get("content") if rec.get("type") == "user" else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                recorded.append(block["content"])
    assert [o["text"] for o in observations][: len(recorded)] == recorded[: len(observations)]
    _, text, _ = run(capsys, "show", "1", "--db", str(db), "--observations")
    assert recorded[0] in text


def test_tools_refuse_a_recorded_workspace_that_is_not_here(tmp_path: Path) -> None:
    """An imported session keeps its recorded cwd; with that folder absent a tool call is
    refused with a message naming --workspace, and nothing runs."""
    from engine.llm.offline import OfflineProvider
    from engine.models import Message, ToolCall
    from engine.session import Agent
    from engine.settings.config import Settings

    store = Store.open(tmp_path / "w.db")
    session = store.create_session(workspace="/nowhere/on/this/machine", title="x")
    agent = Agent(store, session, Settings(), OfflineProvider(Settings()), Path(session.workspace))
    rnd, _ = store.open_round(session.id or 0, Message(role="user", content="hi"))
    done = agent.loop.run_tool(ToolCall(id="t1", name="LS", input={"path": "."}), rnd.index, 1)
    assert done.is_error
    assert done.text.startswith("Error [no_workspace]: the session's workspace /nowhere/on")
    assert f"ctxscope ask INPUT --session {session.id} --workspace FOLDER --move-workspace" in (
        done.text
    )
    store.close()


@pytest.mark.usefixtures("no_key")
def test_marot_markdown_export_names_the_harness_and_the_queued_inputs(
    marot_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The transcript labels what the user did not type (2 task notices, 1 interruption: the
    user records of lines 495, 496, 1847) and the 2 inputs typed while the agent worked; the
    user's own 2 typed inputs stay plain "**User** ·"."""
    code, out, _ = run(
        capsys, "export", "1", "--db", str(marot_db), "--format", "markdown", "--include-archived"
    )
    assert code == 0
    assert out.count("**Background task** (not the user) ·") == 2
    assert out.count("**Interruption** (not the user) ·") == 1
    assert out.count("**User** (typed while the agent worked) ·") == 2
    assert (
        "**User** (typed while the agent worked) · 2026-02-11T20:51:19+00:00\n\ncheck again" in out
    )
