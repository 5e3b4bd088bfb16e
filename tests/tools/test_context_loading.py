"""Seed 003's two loading tools (``chat_load_history``, ``agent_load_context``) on their own:
which part they load, what they inject where, the run's limits, and the registry that offers
them beside the agent's own tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.settings.config import Settings
from tools.base import ToolContext, ToolResult
from tools.context_loading import AgentLoadContextTool, ChatLoadHistoryTool
from tools.injection import Injections
from tools.registry import ToolRegistry, default_registry

LOADERS = [ChatLoadHistoryTool(), AgentLoadContextTool()]


def chat(pairs: int) -> list[tuple[str, str]]:
    return [m for n in range(1, pairs + 1) for m in (("user", f"q{n}"), ("assistant", f"a{n}"))]


def context(
    tmp_path: Path,
    transcript: list[tuple[str, str]] | None = None,
    log: list[dict[str, Any]] | None = None,
    *,
    max_messages: int = 120,
    max_chars: int = 12_000,
) -> ToolContext:
    return ToolContext(
        workspace=tmp_path,
        settings=Settings(),
        chat_transcript=(lambda: transcript) if transcript is not None else None,
        execution_log=(lambda: log) if log is not None else None,
        injections=Injections(max_messages=max_messages, max_chars=max_chars),
    )


def run(name: str, ctx: ToolContext, **args: Any) -> ToolResult:
    return default_registry().extended(LOADERS).run(name, args, ctx)


def test_the_seed_limits_are_the_defaults() -> None:
    """Seed 003 section 3: "``maxInjectedMessages``: 单次 run 的注入上限（默认 120）" — at most
    120 injected messages in one run (default); seed 2.3 ``windowEntries`` 200 for the log."""
    section = Settings().strategies.message_window
    assert section.max_injected_messages == 120
    assert section.log_window == 200


def test_chat_load_history_takes_count_messages_before_the_newest_offset(tmp_path: Path) -> None:
    """Seed 5.1: the transcript "合并为 **一条 assistant message**" — merged into ONE assistant
    message. Of 10 messages, count 3 after skipping the newest 2 are messages 6 to 8."""
    ctx = context(tmp_path, chat(5))
    result = run("chat_load_history", ctx, count=3, offset=2)
    assert result.status == "success"
    assert result.data == {
        "inserted": 1, "reason": None, "loaded": 3, "total": 10, "first": 6, "last": 8,
    }  # fmt: skip
    assert ctx.injections is not None
    assert ctx.injections.system == []
    [text] = ctx.injections.assistant
    assert text.splitlines()[2:] == ["assistant: a3", "user: q4", "assistant: a4"]
    assert "6-8 of 10" in result.text and "assistant message" in result.text


def test_agent_load_context_injects_one_system_message(tmp_path: Path) -> None:
    """Seed 5.2: ``agent_load_context`` "注入形态：**system message**". The entries keep the
    seed's fields ({requestId, userPreview, outputPreview, toolCalls}); a merged entry shows
    the runs it stands for."""
    log = [
        {"requestId": "summary:1-1..1-4", "summary": True, "merged": 4, "userPreview": "old",
         "outputPreview": "fine", "toolCalls": [{"tool": "Read", "count": 6, "failed": 1}],
         "hadToolFailure": True},
        {"requestId": "1-5", "userPreview": "fix it", "outputPreview": "fixed",
         "toolCalls": [{"tool": "Edit", "input": "file_path=a.py", "ok": True}],
         "hadToolFailure": False},
    ]  # fmt: skip
    ctx = context(tmp_path, log=log)
    result = run("agent_load_context", ctx)
    assert result.data["inserted"] == 1 and result.data["loaded"] == 2
    assert ctx.injections is not None and ctx.injections.assistant == []
    [text] = ctx.injections.system
    assert text.splitlines()[1:] == [
        "--- 4 earlier runs, merged",
        "user: old",
        "tools: Read ×6 (1 failed)",
        "hadToolFailure: true",
        "output: fine",
        "--- run 1-5",
        "user: fix it",
        "tools: Edit(file_path=a.py)",
        "output: fixed",
    ]


def test_nothing_to_load_injects_nothing(tmp_path: Path) -> None:
    ctx = context(tmp_path, [], [])
    for name in ("chat_load_history", "agent_load_context"):
        result = run(name, ctx)
        assert result.status == "success"
        assert (result.data["inserted"], result.data["reason"]) == (0, "empty")
    assert ctx.injections is not None and ctx.injections.empty


def test_without_a_session_the_tools_say_so(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, settings=Settings())
    for name in ("chat_load_history", "agent_load_context"):
        result = run(name, ctx)
        assert result.error is not None and result.error.code == "unavailable"


def test_the_run_limit_is_shared_by_both_tools(tmp_path: Path) -> None:
    """Seed 3: "防止单次 run 无边界膨胀：去重 + 上限 ``maxInjectedMessages``" — one limit per
    run, whatever injects; here 1, so the second injection is refused."""
    entry = {"requestId": "1-1", "userPreview": "u", "outputPreview": "o", "toolCalls": []}
    ctx = context(tmp_path, chat(1), [entry], max_messages=1)
    assert run("chat_load_history", ctx).data["inserted"] == 1
    refused = run("agent_load_context", ctx)
    assert (refused.data["inserted"], refused.data["reason"]) == (0, "limit_reached")
    assert ctx.injections is not None and ctx.injections.system == []


def test_a_long_transcript_is_cut_with_a_marker(tmp_path: Path) -> None:
    ctx = context(tmp_path, [("user", "x" * 500)], max_chars=200)
    run("chat_load_history", ctx)
    assert ctx.injections is not None
    [text] = ctx.injections.assistant
    assert len(text) == 200 + len("\n…(truncated)") and text.endswith("…(truncated)")


def test_the_default_registry_does_not_offer_them() -> None:
    assert not {"chat_load_history", "agent_load_context"} & set(default_registry().names)


class Answering(ToolRegistry):
    """A registry that answers its own tools' calls itself (as a replay's recorded tools do)."""

    def run(self, name: str, raw_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(status="success", text=f"recorded {name}")


def test_an_extended_registry_keeps_how_its_base_runs(tmp_path: Path) -> None:
    base = default_registry()
    answering = Answering([t for t in (base.get(n) for n in base.names) if t is not None])
    extended = answering.extended(LOADERS)
    assert extended.names == [*base.names, "chat_load_history", "agent_load_context"]
    assert [s["name"] for s in extended.schemas()][-2:] == extended.names[-2:]
    ctx = context(tmp_path, chat(1))
    assert extended.run("Read", {"file_path": "a"}, ctx).text == "recorded Read"
    assert extended.run("chat_load_history", {}, ctx).data["inserted"] == 1
    assert extended.extended(LOADERS) is extended  # nothing new to add
