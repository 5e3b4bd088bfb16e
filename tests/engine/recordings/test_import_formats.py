"""``ctxscope import`` of Claude Code sessions and agent trajectories.

Expected values are read off the fixtures by hand (see the comments), not recomputed with the
importer.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli.common import make_agent
from engine.compaction.tool_results import ToolResultCompressor
from engine.messages.tokens import count_text
from engine.messages.wire_check import validate_request
from engine.models import Message, RoundStatus, Trigger
from engine.recordings.envelopes import ERROR_CAP
from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_main as run
from tools.base import ToolError, ToolResult

DATA = Path(__file__).parents[2] / "data"
CLAUDE = DATA / "claude_code" / "resumed_session.jsonl"
MINI = DATA / "mini_swe_agent.traj.json"
SWE = DATA / "swe_agent.traj"


def fixture_line(path: Path, number: int) -> dict[str, Any]:
    line: dict[str, Any] = json.loads(path.read_text().splitlines()[number - 1])
    return line


def all_messages(store: Store, sid: int) -> list[Message]:
    """Archived segments then history: every stored message in order."""
    archived = [m for seg in store.segments(sid) for m in seg.messages]
    return archived + store.history(sid).messages


def assert_request_valid(store: Store, sid: int) -> dict[str, Any]:
    agent = make_agent(store, store.get_session(sid), Settings())
    built, _ = agent.preview_and_budget("and now?")
    assert validate_request(built.request) == []
    return built.request.model_dump(mode="json")


# ---------------------------------------------------------------------- Claude Code
def test_claude_code_session_follows_the_active_chain(store: Store) -> None:
    report = import_session(store, CLAUDE, "/ws")
    sid = report.session.id
    assert sid is not None
    assert report.fmt == "claude-code"
    assert report.records == 31
    # lines 1, 2, 10 (progress), 21 (title summary), 22 (api_error); lines 3-4 are the
    # earlier run the resume replayed under other uuids; lines 18-19 (sidechain) are a subagent
    assert report.skipped == {
        "queue-operation": 1,
        "file-history-snapshot": 1,
        "progress": 1,
        "summary": 1,
        "system:api_error": 1,
        "off_chain:user": 1,
        "off_chain:assistant": 1,
    }
    assert report.session.title == "import: Fix the failing test in tests/test_app.py"
    # round 1: user, 4 steps, 4 results; round 2: user, Write, its interrupted result;
    # round 3: "[Request interrupted by user]" and the synthetic answer; round 4: user, Bash,
    # the paired missing result
    assert (report.rounds, report.messages) == (4, 17)
    assert (report.observations, report.missing_results, report.compactions) == (5, 1, 1)
    assert report.warnings == [
        "line 16: tool_use id toolu_B repeats an earlier one; stored as toolu_B~2"
    ]

    messages = all_messages(store, sid)
    assert [m.role for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool",
        "assistant", "user", "assistant", "tool", "user", "assistant", "user", "assistant",
        "tool",
    ]  # fmt: skip
    first, step1 = messages[0], messages[1]
    assert first.content.startswith("<ide_opened_file>")  # markup kept in the stored text
    assert first.created_at == datetime(2026, 11, 2, 10, 0, 0, tzinfo=UTC)
    # four records of msg_1 merged: thinking, text, two tool_use
    assert step1.content == "I'll read the test and run it."
    assert [c.id for c in step1.tool_calls] == ["toolu_A", "toolu_B"]
    assert step1.meta.origin == {
        "thinking": [
            {
                "type": "thinking",
                "thinking": "Let me look at the test first.",
                "signature": "c2lnbmF0dXJl",
            }
        ]
    }
    assert [m.meta.tool_use_id for m in messages if m.role == "tool"] == [
        "toolu_A", "toolu_B", "toolu_C", "toolu_B~2", "toolu_D", "toolu_E",
    ]  # fmt: skip
    assert messages[6].tool_calls[0].id == "toolu_B~2"
    assert all(m.created_at.tzinfo is not None for m in messages)
    assert messages[9].created_at == datetime(2026, 11, 2, 10, 0, 15, tzinfo=UTC)

    assert [r.status for r in store.rounds(sid)] == [
        RoundStatus.FINISHED,
        RoundStatus.INTERRUPTED,
        RoundStatus.FINISHED,
        RoundStatus.INTERRUPTED,
    ]
    usage = store.usages(sid)
    # msg_1..msg_5 and msg_7 (the last record of each); msg_6 is <synthetic> with zero usage
    assert [u.usage.input_side for u in usage] == [2100, 2950, 3040, 3030, 1020, 1115]
    assert [(u.round_index, u.step) for u in usage] == [
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 1),
        (4, 1),
    ]
    assert usage[0].created_at == datetime(2026, 11, 2, 10, 0, 2, tzinfo=UTC)


def test_claude_code_compaction_becomes_a_compaction_with_its_summary(store: Store) -> None:
    sid = import_session(store, CLAUDE, "/ws").session.id
    assert sid is not None
    (comp,) = store.compactions(sid)
    assert comp.trigger == Trigger.MANUAL
    assert (comp.messages_compacted, comp.rounds_compacted) == (9, 1)
    assert comp.stats["recorded_pre_tokens"] == 4200
    history = store.history(sid)
    (summary,) = history.summaries
    assert summary.content == fixture_line(CLAUDE, 24)["message"]["content"]
    assert [m.meta.round for m in history.messages] == [2, 2, 2, 3, 3, 4, 4, 4]
    assert store.rounds(sid)[0].archived


def test_claude_code_results_are_whole_observations_and_a3_in_history(store: Store) -> None:
    sid = import_session(store, CLAUDE, "/ws").session.id
    assert sid is not None
    traceback = fixture_line(CLAUDE, 12)["message"]["content"][0]["content"]
    obs = store.observation_for(sid, "toolu_B")
    assert obs is not None and obs.text == traceback and obs.tool_name == "Bash"
    tools = {m.meta.tool_use_id: m for m in all_messages(store, sid) if m.role == "tool"}
    bash = json.loads(tools["toolu_B"].content)
    assert bash["error"] == {"code": "nonzero_exit", "message": "The command exited with code 1."}
    assert bash["data"]["exit_code"] == 1
    assert bash["data"]["stderr_tail"].endswith("AssertionError: assert 0 == 4")
    interrupted = json.loads(tools["toolu_D"].content)
    assert interrupted["error"]["message"] == "[Request interrupted by user for tool use]"
    assert tools["toolu_E"].meta.interrupted and store.observation_for(sid, "toolu_E") is None


def test_imported_history_costs_what_a_live_session_would(store: Store) -> None:
    """The four results of round 1 as the live tools would have returned them (their data
    shapes from tools/*.py), compressed by A3: the imported forms are within 10 %."""
    sid = import_session(store, CLAUDE, "/ws").session.id
    assert sid is not None
    traceback = fixture_line(CLAUDE, 12)["message"]["content"][0]["content"]
    live = {
        "toolu_A": (
            "Read",
            ToolResult(
                status="success",
                data={
                    "file": "/ws/tests/test_app.py",
                    "content": "     1\tfrom app import add\n     2\tdef test_add():\n"
                    "     3\t    assert add(2, 2) == 4",
                    "start_line": 1,
                    "end_line": 3,
                    "total_lines": 3,
                    "mtime": None,
                },
            ),
        ),
        "toolu_B": (
            "Bash",
            ToolResult(
                status="error",
                error=ToolError(code="nonzero_exit", message="The command exited with code 1."),
                data={
                    "command": "pytest -q",
                    "exit_code": 1,
                    "stdout": "",
                    "stderr": traceback.removeprefix("Exit code 1\n"),
                },
            ),
        ),
        "toolu_C": (
            "Edit",
            ToolResult(
                status="success",
                data={
                    "file": "/ws/src/app.py",
                    "replacements": 1,
                    "lines_added": 1,
                    "lines_removed": 1,
                    "changed_ranges": ["2-2"],
                    "diff": "@@ -2 +2 @@\n-    return a - b\n+    return a + b",
                },
            ),
        ),
        "toolu_B~2": (
            "Bash",
            ToolResult(
                status="success",
                data={
                    "command": "pytest -q",
                    "exit_code": 0,
                    "stdout": "1 passed in 0.01s\n",
                    "stderr": "",
                },
            ),
        ),
    }
    compressor = ToolResultCompressor(Settings())
    live_tokens = sum(count_text(compressor.to_json(name, r)) for name, r in live.values())
    tools = {m.meta.tool_use_id: m for m in all_messages(store, sid) if m.role == "tool"}
    imported = sum(count_text(tools[k].content) for k in live)
    assert abs(imported - live_tokens) <= 0.10 * live_tokens, (imported, live_tokens)


def test_claude_code_session_builds_a_valid_request_without_thinking(store: Store) -> None:
    sid = import_session(store, CLAUDE, "/ws").session.id
    assert sid is not None
    request = assert_request_valid(store, sid)
    kinds = {b["type"] for m in request["messages"] for b in m["content"] if isinstance(b, dict)}
    assert "thinking" not in kinds


def write_claude(path: Path, result: str, tool: str, is_error: bool) -> None:
    def rec(kind: str, uuid: str, parent: str | None, message: dict[str, Any]) -> str:
        return json.dumps(
            {
                "type": kind,
                "uuid": uuid,
                "parentUuid": parent,
                "isSidechain": False,
                "sessionId": "s",
                "timestamp": "2026-11-02T10:00:00Z",
                "message": message,
            }
        )

    lines = [
        rec("user", "u", None, {"role": "user", "content": "go"}),
        rec(
            "assistant",
            "a",
            "u",
            {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"q": 1}}],
            },
        ),
        rec(
            "user",
            "r",
            "a",
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": result,
                        "is_error": is_error,
                    }
                ],
            },
        ),
    ]
    path.write_text("\n".join(lines) + "\n")


def test_huge_observation_is_stored_whole_and_history_keeps_a_summary(
    store: Store, tmp_path: Path
) -> None:
    big = "\n".join(f"row {i}: " + "x" * 40 for i in range(3000))
    assert len(big) >= 100_000
    path = tmp_path / "big.jsonl"
    write_claude(path, big, "Bash", False)
    report = import_session(store, path, "/ws")
    sid = report.session.id
    assert sid is not None
    obs = store.observation_for(sid, "t1")
    assert obs is not None and obs.text == big
    (tool,) = [m for m in store.history(sid).messages if m.role == "tool"]
    form = json.loads(tool.content)
    assert form["data"]["stdout"]["lines"] == 3000 and form["data"]["truncated"] is True
    assert len(tool.content) < 1000
    assert report.tokens_raw > 10 * report.tokens_stored


def test_long_error_keeps_head_and_tail(store: Store, tmp_path: Path) -> None:
    frames = "".join(f'  File "m{i}.py", line {i}, in f{i}\n    g{i}()\n' for i in range(300))
    error = "Traceback (most recent call last):\n" + frames + "ValueError: boom"
    assert len(error) > ERROR_CAP
    path = tmp_path / "err.jsonl"
    write_claude(path, error, "mcp__db__query", True)
    sid = import_session(store, path, "/ws").session.id
    assert sid is not None
    (tool,) = [m for m in store.history(sid).messages if m.role == "tool"]
    message = json.loads(tool.content)["error"]["message"]
    assert message.startswith('Traceback (most recent call last):\n  File "m0.py"')
    assert message.endswith("ValueError: boom")
    assert "characters omitted" in message and len(message) < ERROR_CAP + 100


# ---------------------------------------------------------------------- trajectories
def test_mini_swe_agent_trajectory(store: Store) -> None:
    report = import_session(store, MINI, "/ws")
    sid = report.session.id
    assert sid is not None
    assert report.fmt == "mini-swe-agent"
    assert report.skipped == {"system_prompt": 1}
    assert report.session.title == "import: add() returns the wrong result"
    # round 1: task, cat, its result, the two-block answer (text); round 2: the format
    # complaint, sed+assert (exit 1), its result, submit, its result
    assert (report.rounds, report.messages, report.observations) == (2, 9, 3)
    messages = store.history(sid).messages
    assert [m.role for m in messages] == [
        "user", "assistant", "tool", "assistant",
        "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip
    calls = [c for m in messages for c in m.tool_calls]
    assert [c.name for c in calls] == ["Bash"] * 3
    assert [c.input["command"] for c in calls] == [
        "cat calc.py",
        "sed -i 's/a - b/a + b/' calc.py && python -c 'import calc; assert calc.add(2, 3) == 6'",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
    ]
    assert messages[1].content == "THOUGHT: Let me look at calc.py first."
    assert messages[3].content.count("```bash") == 2 and not messages[3].tool_calls
    assert messages[4].content.startswith("Please always provide EXACTLY ONE action")
    assert [m.meta.is_error for m in messages if m.role == "tool"] == [False, True, False]
    obs = store.observation_for(sid, calls[1].id)
    assert obs is not None
    assert obs.text == (
        'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nAssertionError'
    )
    # exit_status "Submitted": the last round is finished although it ends on a tool result
    assert [r.status for r in store.rounds(sid)] == [RoundStatus.FINISHED, RoundStatus.FINISHED]
    assert_request_valid(store, sid)


def test_swe_agent_trajectory_marks_demonstrations(store: Store) -> None:
    report = import_session(store, SWE, "/ws")
    sid = report.session.id
    assert sid is not None
    assert report.fmt == "swe-agent" and report.skipped == {"system_prompt": 1}
    messages = store.history(sid).messages
    assert [m.role for m in messages] == [
        "user", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip
    assert messages[0].content.startswith("We're currently solving the following issue")
    assert messages[1].content.startswith("[demonstration]\nHere is a demonstration")
    assert messages[1].meta.origin == {"demonstration": True}
    assert [c.input["command"] for m in messages for c in m.tool_calls] == [
        "find_file calc.py",
        "edit 2:2\n    return a + b\nend_of_edit",
        "submit",
    ]
    assert messages[2].content == "DISCUSSION\nFind the file."
    assert [r.status for r in store.rounds(sid)] == [RoundStatus.FINISHED]
    assert report.rounds == 1
    assert_request_valid(store, sid)


# ---------------------------------------------------------------------- CLI: refusal, dirs
@pytest.mark.usefixtures("no_key")
def test_refusal_is_one_line_and_never_touches_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "kept.db"
    assert run(capsys, "import", str(MINI), "--db", str(db))[0] == 0
    before = db.read_bytes()
    bad = tmp_path / "bad.jsonl"
    # A Claude Code record that is no conversation, then seven damaged lines: nothing to import.
    hook = '{"type": "progress", "uuid": "p1", "parentUuid": null, "sessionId": "s"}'
    bad.write_text(hook + "\n" + "\n".join(["{nope"] * 7) + "\n")
    code, out, err = run(capsys, "import", str(bad), "--db", str(db))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "looks like claude-code" in err
    said = "holds no conversation (no user or assistant record): 8 lines, 7 not JSON, 1 progress"
    assert said in err
    assert db.read_bytes() == before

    fresh = tmp_path / "never.db"
    code, _, err = run(capsys, "import", str(bad), "--db", str(fresh))
    assert code == 1 and not fresh.exists()
    other = tmp_path / "notes.jsonl"
    other.write_text('{"title": "shopping"}\n')
    code, _, err = run(capsys, "import", str(other), "--db", str(fresh))
    assert code == 1 and "not a recognised session format" in err and not fresh.exists()


@pytest.mark.usefixtures("no_key")
def test_directory_imports_each_file_with_its_subagents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    (project / "abc" / "subagents").mkdir(parents=True)
    (project / "abc.jsonl").write_text(CLAUDE.read_text())
    # A subagent of its own: the same conversation under other uuids and API responses (one
    # that repeated the parent's would be a copy of its context, counted only for what is new).
    (project / "abc" / "subagents" / "agent-1.jsonl").write_text(
        CLAUDE.read_text()
        .replace('"uuid": "', '"uuid": "sub-')
        .replace('"parentUuid": "', '"parentUuid": "sub-')
        .replace('"id": "msg', '"id": "sub-msg')
    )
    (project / "run.traj.json").write_text(MINI.read_text())
    (project / "notes.txt").write_text("hello")
    db = tmp_path / "dir.db"
    code, out, err = run(capsys, "import", str(project), "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)  # a folder: a list, one object per session (issue 28)
    assert [(Path(s["path"]).name, s["format"]) for s in data] == [
        ("abc.jsonl", "claude-code"),
        ("run.traj.json", "mini-swe-agent"),
    ]
    assert err == "ctxscope: files skipped: 1 not a session file\n"
    first = data[0]
    assert (first["observations"], first["records_read"]) == (5, 31)
    assert "sidechain" not in first["records_skipped"]  # lines 18-19: a subagent of its own
    assert first["tokens_raw"] > 0 and first["tokens_stored"] > 0
    # the sidechain of lines 18-19 (no agentId), then abc/subagents/agent-1.jsonl (a copy of
    # the same file, so with its own sidechain child)
    subagents = first["subagents"]
    assert [(s["agent_id"], s["parent_session_id"]) for s in subagents] == [
        (None, first["session_id"]),
        ("1", first["session_id"]),
    ]
    assert len(subagents[1]["subagents"]) == 1
    code, out, _ = run(capsys, "sessions", "--db", str(db), "--json")
    listed = json.loads(out)
    assert len(listed) == 5
    assert sorted(s["parent_session_id"] or 0 for s in listed) == sorted(
        [0, 0, first["session_id"], first["session_id"], subagents[1]["session_id"]]
    )


# ---------------------------------------------------------------------- export
def stored_conversation(store: Store, sid: int, dated: bool = True) -> list[tuple[Any, ...]]:
    """What a round trip must keep: roles, contents, calls, results' full text, thinking; and
    each message's time where the recording has times (not ``dated``: a trajectory's are the
    import's, which its export leaves out)."""
    out: list[tuple[Any, ...]] = []
    for m in all_messages(store, sid):
        obs = store.observation_for(sid, m.meta.tool_use_id) if m.meta.tool_use_id else None
        out.append(
            (
                m.role,
                m.content,
                [c.model_dump() for c in m.tool_calls],
                m.meta.round,
                m.meta.step,
                m.meta.is_error,
                m.meta.interrupted,
                m.meta.origin,
                obs.text if obs else None,
                m.created_at
                if dated and (m.role != "tool" or m.meta.interrupted is False)
                else None,
            )
        )
    return out


@pytest.mark.usefixtures("no_key")
@pytest.mark.parametrize("source", [CLAUDE, MINI, SWE])
def test_export_jsonl_imports_back_identically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: Path
) -> None:
    db = tmp_path / "rt.db"
    assert run(capsys, "import", str(source), "--db", str(db))[0] == 0
    out = tmp_path / "out.jsonl"
    code, _, _ = run(capsys, "export", "1", "--db", str(db), "--include-archived", "-o", str(out))
    assert code == 0
    code, printed, err = run(capsys, "import", str(out), "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(printed)["format"] == "anthropic-jsonl"
    back = json.loads(printed)["session_id"]  # CLAUDE's sidechain took id 2 as a subagent
    store = Store.open(db)
    try:
        dated = source == CLAUDE  # the trajectories record no time (docs/importing.md)
        assert stored_conversation(store, back, dated) == stored_conversation(store, 1, dated)
        assert [(u.round_index, u.step, u.usage) for u in store.usages(back)] == [
            (u.round_index, u.step, u.usage) for u in store.usages(1)
        ]
        assert [r.status for r in store.rounds(back)] == [r.status for r in store.rounds(1)]
        assert [s.content for s in store.history(back).summaries] == [
            s.content for s in store.history(1).summaries
        ]
    finally:
        store.close()


@pytest.mark.usefixtures("no_key")
def test_export_markdown_marks_compactions_and_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "md.db"
    run(capsys, "import", str(CLAUDE), "--db", str(db))
    code, text, _ = run(capsys, "export", "1", "--db", str(db), "--format", "markdown")
    assert code == 0
    assert text.startswith("# Session 1: import: Fix the failing test")
    assert "> **Compaction 1 (manual, 9 messages of 1 round archived" in text
    assert "> This session is being continued from a previous conversation." in text
    assert "## Round 1" not in text  # archived: left out without --include-archived
    assert "## Round 2 (interrupted)" in text and "Now add a test for negative numbers" in text
    code, full, _ = run(
        capsys, "export", "1", "--db", str(db), "--format", "markdown", "--include-archived"
    )
    assert "## Round 1 (finished, archived)" in full
    assert full.index("## Round 1") < full.index("**Compaction 1") < full.index("## Round 2")
    assert "AssertionError: assert 0 == 4" in full  # results whole
    assert "<summary>thinking</summary>" in full and "Let me look at the test first." in full


# ---------------------------------------------------------------------- hidden prefix
@pytest.mark.usefixtures("no_key")
def test_context_shows_the_request_as_the_original_agent_saw_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    run(capsys, "import", str(CLAUDE), "--db", str(db))
    code, out, _ = run(capsys, "context", "1", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    seen = data["as_original_agent"]
    store = Store.open(db)
    try:
        first_user = all_messages(store, 1)[0]
    finally:
        store.close()
    # line 9 (the last record of msg_1): 100 input + 2000 cache creation; before that call
    # the transcript shows only the first user message
    assert seen["first_prompt_tokens"] == 2100
    assert seen["transcript_tokens"] == first_user.tokens
    assert seen["hidden_prefix_tokens"] == 2100 - (first_user.tokens or 0)
    layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    conversation = sum(layers[name] for name in list(layers)[3:])
    assert seen["conversation_tokens"] == conversation
    assert seen["total"] == seen["hidden_prefix_tokens"] + conversation
    # a trajectory records no usage: nothing to compare, no field
    code, out, _ = run(capsys, "import", str(MINI), "--db", str(db), "--json")
    mini = json.loads(out)["session_id"]  # CLAUDE's sidechain took id 2 as a subagent
    code, out, _ = run(capsys, "context", str(mini), "--db", str(db), "--json")
    assert "as_original_agent" not in json.loads(out)


def claude_lines(*records: tuple[str, str, str | None, Any, dict[str, Any]]) -> str:
    out = []
    for kind, uuid, parent, content, extra in records:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message["id"] = f"m_{uuid}"
        rec = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": "s",
            "timestamp": "2026-11-02T10:00:00Z",
            "message": message,
            **extra,
        }
        out.append(json.dumps(rec))
    return "\n".join(out) + "\n"


@pytest.mark.usefixtures("no_key")
def test_continued_session_starts_with_its_summary_and_orphans_are_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "continued.jsonl"
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    orphan = {"type": "tool_result", "tool_use_id": "gone", "content": "y"}
    path.write_text(
        claude_lines(
            ("user", "c", None, "Summary of the earlier session.", {"isCompactSummary": True}),
            ("assistant", "a", "c", [use], {}),
            ("user", "r", "a", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}], {}),
            ("user", "o", "r", [orphan], {}),
            ("assistant", "b", "o", [{"type": "text", "text": "Done."}], {}),
        )
    )
    db = tmp_path / "c.db"
    code, out, err = run(capsys, "import", str(path), "--db", str(db), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["records_skipped"] == {"orphan_result": 1}
    assert report["warnings"] == [
        "line 4: tool_result for 'gone' answers no call on the active chain; left out"
    ]
    assert (report["rounds"], report["messages"], report["compactions"]) == (1, 4, 0)
    store = Store.open(db)
    try:
        messages = store.history(1).messages
        assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
        assert messages[0].content == "Summary of the earlier session."
        assert messages[0].meta.origin == {"compact_summary": True}
        assert [r.status for r in store.rounds(1)] == [RoundStatus.FINISHED]
        assert_request_valid(store, 1)
    finally:
        store.close()
    out_file = tmp_path / "again.jsonl"
    run(capsys, "export", "1", "--db", str(db), "-o", str(out_file))
    assert run(capsys, "import", str(out_file), "--db", str(db))[0] == 0
    store = Store.open(db)
    try:
        assert stored_conversation(store, 2) == stored_conversation(store, 1)
    finally:
        store.close()


def test_store_append_round_writes_a_whole_round_in_order(store: Store) -> None:
    sid = store.create_session("/ws", "t").id
    assert sid is not None
    t0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    t1 = datetime(2026, 11, 2, 9, 5, tzinfo=UTC)
    msgs = [
        Message(role="user", content="q", created_at=t0, tokens=5),
        Message(role="assistant", content="a", created_at=t1, tokens=5),
    ]
    rnd, stored = store.append_round(sid, msgs, RoundStatus.FINISHED)
    assert (rnd.index, rnd.status, rnd.started_at, rnd.finished_at) == (
        1,
        RoundStatus.FINISHED,
        t0,
        t1,
    )
    assert [m.id for m in stored] == [m.id for m in store.history(sid).messages]
    assert [(m.content, m.meta.round) for m in store.history(sid).messages] == [
        ("q", 1),
        ("a", 1),
    ]
    assert store.append_round(sid, msgs[:1], RoundStatus.INTERRUPTED)[0].index == 2
