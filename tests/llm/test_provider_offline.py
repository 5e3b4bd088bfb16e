"""OfflineProvider: the rule-based stand-in for a model, driven step by step on a workspace."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from engine.compaction.summary import SummaryCompressor
from engine.compaction.summary_call import ProviderSummariser
from engine.context.preprocess import InputPreprocessor
from engine.llm.base import (
    OFFLINE_NAME,
    Cancelled,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    StreamText,
    StreamToolUse,
)
from engine.llm.offline import CAPABILITIES, OfflineProvider, describe_result, split_requests
from engine.messages.tokens import count_blocks, count_request
from engine.models import Message, ToolCall
from engine.settings.config import Settings

SYSTEM = [{"type": "text", "text": "You are a coding agent."}]
TOOLS = [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in ("LS", "Read")]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "README.md").write_text("# Demo\n\nTODO: write docs\n")
    (tmp_path / "src" / "app.py").write_text("print('hi')  # TODO\nx = 1\n")
    return tmp_path


def run_tool(workspace: Path, call: ToolCall) -> tuple[str, bool]:
    """A stand-in tool runner producing results shaped like ctxscope's tools."""
    if call.name == "Read":
        path = workspace / call.input["file_path"]
        if not path.is_file():
            return f"Error [file_not_found]: {call.input['file_path']} does not exist.", True
        lines = path.read_text().splitlines()
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, 1)), False
    if call.name == "LS":
        names = sorted(p.name for p in (workspace / call.input["path"]).iterdir())
        return f"{call.input['path']}/ — {len(names)} entries\n" + "\n".join(names), False
    if call.name == "Grep":
        head = "2 matching lines in 2 files for 'TODO' in .:"
        return f"{head}\nREADME.md:3: TODO\nsrc/app.py:1: x", False
    return "ok", False


def step(
    provider: OfflineProvider, messages: list[dict[str, Any]]
) -> tuple[ProviderResponse, list[StreamEvent]]:
    events: list[StreamEvent] = []
    response = provider.complete(
        ProviderRequest(system=SYSTEM, tools=TOOLS, messages=messages), events.append
    )
    return response, events


def drive(
    provider: OfflineProvider, workspace: Path, user_input: str, history: list[dict[str, Any]]
) -> list[ProviderResponse]:
    """Run one round to its end the way the agent does: answer, run tools, send results."""
    text = InputPreprocessor(Settings()).process(user_input).text
    history.append({"role": "user", "content": text})
    responses: list[ProviderResponse] = []
    for _ in range(10):
        response, _ = step(provider, history)
        responses.append(response)
        history.append({"role": "assistant", "content": response.content})
        if not response.tool_calls:
            return responses
        results = []
        for call in response.tool_calls:
            output, is_error = run_tool(workspace, call)
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": output,
                    "is_error": is_error,
                }
            )
        history.append({"role": "user", "content": results})
    raise AssertionError("the round never ended")


def test_mentions_are_read_in_order_one_per_step_then_reported(workspace: Path) -> None:
    provider = OfflineProvider(Settings())
    responses = drive(
        provider, workspace, "compare @README.md with @src/app.py and @missing.txt", []
    )

    reads = [[(c.name, c.input) for c in r.tool_calls] for r in responses[:-1]]
    assert reads == [
        [("Read", {"file_path": "README.md"})],
        [("Read", {"file_path": "src/app.py"})],
        [("Read", {"file_path": "missing.txt"})],
    ]
    assert responses[0].text.startswith("Thought: the user mentioned README.md")
    assert all(r.stop_reason == "tool_use" for r in responses[:-1])
    final = responses[-1]
    assert final.stop_reason == "end_turn"
    assert final.tool_calls == []
    assert "Read README.md: 3 lines" in final.text
    assert "Read src/app.py: 2 lines" in final.text
    assert 'Read missing.txt: error "Error [file_not_found]: missing.txt does not exist."' in (
        final.text
    )
    ids = [c.id for r in responses for c in r.tool_calls]
    assert len(set(ids)) == len(ids) == 3


def test_reminder_with_a_single_mention_and_trailing_dot(workspace: Path) -> None:
    responses = drive(OfflineProvider(), workspace, "What is in @README.md.", [])
    assert [c.input for c in responses[0].tool_calls] == [{"file_path": "README.md"}]
    assert len(responses) == 2


@pytest.mark.parametrize(
    ("user_input", "name", "tool_input"),
    [
        ("ls src", "LS", {"path": "src"}),
        ("ls", "LS", {"path": "."}),
        ("glob **/*.py", "Glob", {"pattern": "**/*.py"}),
        ("glob *.md in docs", "Glob", {"pattern": "*.md", "path": "docs"}),
        ("grep TODO", "Grep", {"pattern": "TODO"}),
        ("grep 'foo bar' in src", "Grep", {"pattern": "foo bar", "path": "src"}),
        ("read README.md", "Read", {"file_path": "README.md"}),
        ("Read src/app.py.", "Read", {"file_path": "src/app.py"}),
        ("run `echo hi`", "Bash", {"command": "echo hi"}),
        ("run: ls -la | wc -l", "Bash", {"command": "ls -la | wc -l"}),
        (
            "todo: a; b; c",
            "TodoWrite",
            {
                "todos": [
                    {"content": "a", "status": "pending"},
                    {"content": "b", "status": "pending"},
                    {"content": "c", "status": "pending"},
                ]
            },
        ),
    ],
)
def test_commands_map_to_tool_calls(user_input: str, name: str, tool_input: dict[str, Any]) -> None:
    response, events = step(OfflineProvider(), [{"role": "user", "content": user_input}])
    assert [(c.name, c.input) for c in response.tool_calls] == [(name, tool_input)]
    assert response.stop_reason == "tool_use"
    assert response.text.startswith("Thought: the user asked for")
    assert [e.call for e in events if isinstance(e, StreamToolUse)] == response.tool_calls


def test_several_requests_give_parallel_tool_calls_in_one_answer(workspace: Path) -> None:
    history: list[dict[str, Any]] = []
    user_input = "ls src then grep TODO\nrun `if true; then echo y; fi`"
    responses = drive(OfflineProvider(), workspace, user_input, history)

    first = responses[0]
    assert [(c.name, c.input) for c in first.tool_calls] == [
        ("LS", {"path": "src"}),
        ("Grep", {"pattern": "TODO"}),
        ("Bash", {"command": "if true; then echo y; fi"}),
    ]
    assert "3 things" in first.text
    assert len(responses) == 2  # all at once, then the report
    report = responses[1].text
    assert "LS src: src/ — 1 entries" in report
    assert "Grep TODO: 2 matches in 2 files" in report
    assert "Bash `if true; then echo y; fi`: ok" in report


def test_mentions_first_then_commands_then_report(workspace: Path) -> None:
    responses = drive(OfflineProvider(), workspace, "read @README.md then ls src", [])
    assert [[c.name for c in r.tool_calls] for r in responses] == [["Read"], ["LS"], []]


def test_a_request_that_only_mentions_a_file_is_not_reported_as_unknown(
    workspace: Path,
) -> None:
    responses = drive(OfflineProvider(), workspace, "look at @README.md then ls src", [])
    assert [[c.name for c in r.tool_calls] for r in responses] == [["Read"], ["LS"], []]
    assert "could not act" not in responses[-1].text


def test_unknown_text_gets_the_capability_answer() -> None:
    response, events = step(OfflineProvider(), [{"role": "user", "content": "refactor it all"}])
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    assert response.text == CAPABILITIES
    assert "grep PATTERN" in response.text
    assert not [e for e in events if isinstance(e, StreamToolUse)]


def test_unknown_requests_next_to_commands_are_named_in_the_report(workspace: Path) -> None:
    responses = drive(OfflineProvider(), workspace, "ls src then make it faster", [])
    assert [c.name for c in responses[0].tool_calls] == ["LS"]
    assert 'I could not act on "make it faster"' in responses[-1].text


def test_todo_recap_in_a_results_message_does_not_start_a_new_round(workspace: Path) -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "ls src then grep TODO"}]
    first, _ = step(OfflineProvider(), history)
    history.append({"role": "assistant", "content": first.content})
    recap = {"type": "text", "text": "<system-reminder>\nTodos: 1 pending\n</system-reminder>"}
    results = [
        {"type": "tool_result", "tool_use_id": c.id, "content": "done"} for c in first.tool_calls
    ]
    history.append({"role": "user", "content": [*results, recap]})

    second, _ = step(OfflineProvider(), history)
    assert second.tool_calls == []
    assert second.text.startswith("Done.")


def test_usage_is_the_local_count_without_cache_figures() -> None:
    messages = [{"role": "user", "content": "ls src"}]
    response, _ = step(OfflineProvider(), messages)
    assert response.usage.input_tokens == count_request(SYSTEM, messages, TOOLS)
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens == count_blocks(response.content) > 0
    assert response.usage.cache_read_input_tokens == 0
    assert response.usage.cache_creation_input_tokens == 0


def test_text_is_streamed_in_pieces_and_ids_are_deterministic() -> None:
    messages = [{"role": "user", "content": "ls src then glob *.py"}]
    first, events = step(OfflineProvider(), messages)
    again, _ = step(OfflineProvider(), messages)
    pieces = [e.text for e in events if isinstance(e, StreamText)]
    assert len(pieces) > 1
    assert "".join(pieces) == first.text
    assert [c.id for c in first.tool_calls] == [c.id for c in again.tool_calls]
    assert all(c.id.startswith("toolu_off_") for c in first.tool_calls)


def test_the_same_input_in_a_later_round_gets_new_ids(workspace: Path) -> None:
    history: list[dict[str, Any]] = []
    one = drive(OfflineProvider(), workspace, "ls src", history)
    two = drive(OfflineProvider(), workspace, "ls src", history)
    assert one[0].tool_calls[0].id != two[0].tool_calls[0].id


def test_cancel_is_honoured() -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        OfflineProvider().complete(
            ProviderRequest(system=[], messages=[{"role": "user", "content": "ls"}]),
            lambda e: None,
            cancel,
        )


def test_identity() -> None:
    assert OfflineProvider.name == OFFLINE_NAME
    assert OfflineProvider.model == "offline"


def test_split_requests_keeps_backticks_whole() -> None:
    assert split_requests("ls then run `a then b`\n\n grep x, then read y") == [
        "ls",
        "run `a then b`",
        "grep x",
        "read y",
    ]


def test_describe_result_counts_grep_hits_without_a_summary_line() -> None:
    call = ToolCall(id="t", name="Grep", input={"pattern": "TODO"})
    text = "a.py:1: TODO\na.py:9: TODO\nb.py:2: TODO"
    assert describe_result(call, text, False) == "Grep TODO: 3 matches in 2 files"


@pytest.mark.parametrize(
    ("text", "is_error", "expected"),
    [
        ("hi\n[exit code 0, 0.01 s]", False, "Bash `x`: exit code 0, hi"),
        ("a\nb\nc\n[exit code 0, 0.01 s]", False, "Bash `x`: exit code 0, a (+2 lines)"),
        ("(no output)\n[exit code 0, 0.00 s]", False, "Bash `x`: exit code 0, no output"),
        (
            "oops\n[stderr]\nboom\n[nonzero_exit: The command exited with code 2. "
            "(exit code 2, 0.01 s)]",
            True,
            'Bash `x`: error "nonzero_exit: The command exited with code 2. (exit code 2, 0.01 s)"',
        ),
    ],
)
def test_describe_bash_results(text: str, is_error: bool, expected: str) -> None:
    call = ToolCall(id="t", name="Bash", input={"command": "x"})
    assert describe_result(call, text, is_error) == expected


def _offline_summary(messages: list[Message], focus: str | None) -> str:
    """The summary a session on the offline provider writes (A5, seed 000)."""
    summariser = ProviderSummariser(OfflineProvider(), Settings())
    outcome = SummaryCompressor(summariser, 1.0).summarize(messages, focus)
    assert outcome is not None and not outcome.fallback and outcome.attempts == 0
    return outcome.content


def test_offline_summary_is_the_extractive_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake(messages: list[Message], focus: str | None = None) -> str:
        seen.update(messages=messages, focus=focus)
        return "## summary"

    monkeypatch.setattr("engine.compaction.summary.extractive_summary", fake)
    messages = [Message(role="user", content="fix the login bug")]
    assert _offline_summary(messages, "auth") == "## summary"
    assert seen == {"messages": messages, "focus": "auth"}


def test_offline_summary_fills_the_template_for_real() -> None:
    messages = [
        Message(role="user", content="fix the login bug"),
        Message(role="assistant", content="Fixed.", meta={"final": True}),
    ]
    summary = _offline_summary(messages, None)
    assert summary.startswith("## 📌 Archived Session Summary")
    assert "fix the login bug" in summary


def test_the_offline_provider_has_no_model_to_ask() -> None:
    with pytest.raises(ProviderError, match="no model"):
        OfflineProvider().ask_text("PROMPT", "text", 1.0)
