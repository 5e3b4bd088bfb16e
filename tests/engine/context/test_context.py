"""ContextBuilder: layer order, CODE_LAW, cache breakpoints, wire validity and the breakdown."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from engine.context import builder as context_module
from engine.context.builder import (
    LAYERS,
    ContextBuilder,
    ScratchResult,
    ScratchStep,
    count_cache_breakpoints,
    find_code_law,
    render_react,
    validate_conversation,
    validate_request,
)
from engine.messages.tokens import count_message, count_request
from engine.models import MISSING_RESULT, History, Message, MessageMeta, Summary, ToolCall
from engine.settings.config import Settings

TOOLS: list[dict[str, Any]] = [
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    },
    {
        "name": "Grep",
        "description": "Search files.",
        "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    },
]
SYSTEM = "You are a test agent."
EPH = {"type": "ephemeral"}


@pytest.fixture
def settings() -> Settings:
    return Settings(max_tokens=1234)


@pytest.fixture
def builder(tmp_path: Path, settings: Settings) -> ContextBuilder:
    return ContextBuilder(tmp_path, settings, TOOLS, SYSTEM, cache_conversation=True)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def step(text: str, *calls: tuple[str, str, dict[str, Any]]) -> Message:
    tool_calls = [ToolCall(id=i, name=name, input=inp) for i, name, inp in calls]
    return Message(role="assistant", content=text, tool_calls=tool_calls)


def tool(tool_use_id: str | None, data: dict[str, Any], error: bool = False) -> Message:
    body = {"status": "error" if error else "success", "data": data}
    meta = MessageMeta(tool_use_id=tool_use_id, tool_name="Read", is_error=error)
    return Message(role="tool", content=json.dumps(body), meta=meta)


def final(text: str) -> Message:
    return Message(role="assistant", content=text, meta=MessageMeta(final=True))


def summary(text: str, first: int = 1, last: int = 2) -> Summary:
    return Summary(session_id=1, content=text, first_round=first, last_round=last)


def one_round(n: int) -> list[Message]:
    return [
        user(f"question {n}"),
        step(f"I read mod{n}.", (f"t{n}a", "Read", {"file_path": f"mod{n}.py"})),
        tool(f"t{n}a", {"lines": f"1: x = {n}"}),
        step("And grep.", (f"t{n}b", "Grep", {"pattern": "x"}), (f"t{n}c", "Read", {})),
        tool(f"t{n}b", {"matches": 1}),
        tool(f"t{n}c", {}, error=True),
        final(f"answer {n}"),
    ]


def assert_consistent(builder: ContextBuilder, built: Any) -> None:
    """Valid wire, every layer present in order, and the breakdown is the request's count."""
    assert validate_request(built.request) == []
    assert tuple(built.layers) == LAYERS
    assert sum(built.layers.values()) == built.total
    req = built.request
    assert count_request(req.system, req.messages, req.tools) == built.total


# --- CODE_LAW lookup (seed C5) ---


@pytest.mark.parametrize("name", ["CODE_LAW.md", "code_law.md", "Code_Law.md", "code_law.MD"])
def test_find_code_law_any_case(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("rules", encoding="utf-8")
    found = find_code_law(tmp_path)
    assert found is not None
    assert found.name == name


def test_find_code_law_absent_or_not_a_file(tmp_path: Path) -> None:
    assert find_code_law(tmp_path) is None
    (tmp_path / "code_law.md").mkdir()
    (tmp_path / "CODE_LAW.txt").write_text("no", encoding="utf-8")
    assert find_code_law(tmp_path) is None
    assert find_code_law(tmp_path / "missing") is None


def test_find_code_law_prefers_upper_case(tmp_path: Path) -> None:
    (tmp_path / "code_law.md").write_text("lower", encoding="utf-8")
    if (tmp_path / "CODE_LAW.md").exists():
        pytest.skip("case-insensitive file system: one file only")
    (tmp_path / "CODE_LAW.md").write_text("upper", encoding="utf-8")
    found = find_code_law(tmp_path)
    assert found is not None and found.name == "CODE_LAW.md"


def test_code_law_is_reread_every_build_and_never_in_messages(
    tmp_path: Path, builder: ContextBuilder
) -> None:
    history = History(messages=one_round(1))
    law = tmp_path / "Code_Law.md"
    law.write_text("Use tabs.", encoding="utf-8")
    first = builder.build(history, [], "next")
    assert "Use tabs." in first.request.system[1]["text"]
    assert first.code_law == law
    assert first.layers["L2 CODE_LAW"] > 0

    law.write_text("Use four spaces. Never use tabs. Write tests for every change.", "utf-8")
    second = builder.build(history, [], "next")
    assert "Use four spaces." in second.request.system[1]["text"]
    assert second.layers["L2 CODE_LAW"] > first.layers["L2 CODE_LAW"]
    assert "Use four spaces" not in json.dumps(second.request.messages)
    assert all("Use" not in m.content for m in history.messages)

    law.unlink()
    third = builder.build(history, [], "next")
    assert third.layers["L2 CODE_LAW"] == 0
    assert third.code_law is None
    assert [b["text"] for b in third.request.system] == [SYSTEM]
    assert_consistent(builder, third)


def test_blank_code_law_is_an_empty_layer(tmp_path: Path, builder: ContextBuilder) -> None:
    (tmp_path / "CODE_LAW.md").write_text("  \n\n", encoding="utf-8")
    built = builder.build(History(), [], "hi")
    assert built.layers["L2 CODE_LAW"] == 0
    assert len(built.request.system) == 1


# --- order and cache breakpoints ---


def test_system_blocks_order_and_breakpoints(tmp_path: Path, builder: ContextBuilder) -> None:
    (tmp_path / "CODE_LAW.md").write_text("Law.", encoding="utf-8")
    history = History(summaries=[summary("S1"), summary("S2", 3, 4)], messages=one_round(5))
    built = builder.build(history, [], "now")
    system = built.request.system
    assert [b["text"] for b in system][0] == SYSTEM
    assert system[1]["text"].endswith("Law.")
    assert [b["text"] for b in system[2:]] == ["S1", "S2"]
    assert [b.get("cache_control") for b in system] == [EPH, EPH, None, EPH]
    # the fourth breakpoint: the end of the conversation
    assert built.request.messages[-1]["content"][-1]["cache_control"] == EPH
    assert count_cache_breakpoints(built.request) == 4
    assert_consistent(builder, built)


def test_without_code_law_and_summaries_two_breakpoints(builder: ContextBuilder) -> None:
    built = builder.build(History(messages=one_round(1)), [], "now")
    assert [b.get("cache_control") for b in built.request.system] == [EPH]
    assert count_cache_breakpoints(built.request) == 2


def test_by_default_no_breakpoint_on_what_changes_every_step(
    tmp_path: Path, settings: Settings
) -> None:
    b = ContextBuilder(tmp_path, settings, TOOLS, SYSTEM)
    built = b.build(History(messages=one_round(1)), [], "now")
    assert count_cache_breakpoints(built.request) == 1
    assert "cache_control" not in json.dumps(built.request.messages)


def test_todo_recap_goes_after_the_conversation_breakpoint(builder: ContextBuilder) -> None:
    built = builder.build(History(messages=one_round(1)), [], "go on", todo_recap="- [ ] a")
    last = built.request.messages[-1]["content"]
    assert last[-1] == {"type": "text", "text": "<system-reminder>\n- [ ] a\n</system-reminder>"}
    assert last[-2]["text"] == "go on"
    assert last[-2]["cache_control"] == EPH


def test_history_conversion_pairs_tools(builder: ContextBuilder) -> None:
    built = builder.build(History(messages=one_round(1)), [], "next question")
    msgs = built.request.messages
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"] + [
        "assistant",
        "user",
    ]
    assert msgs[0]["content"] == [{"type": "text", "text": "question 1"}]
    assert msgs[1]["content"][0] == {"type": "text", "text": "I read mod1."}
    assert msgs[1]["content"][1] == {
        "type": "tool_use",
        "id": "t1a",
        "name": "Read",
        "input": {"file_path": "mod1.py"},
    }
    # two tool messages become ONE user message of tool_result blocks, errors flagged
    results = msgs[4]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in results] == ["t1b", "t1c"]
    assert "is_error" not in results[0] and results[1]["is_error"] is True
    assert json.loads(results[0]["content"]) == {"status": "success", "data": {"matches": 1}}
    assert msgs[5]["content"] == [{"type": "text", "text": "answer 1"}]
    assert msgs[6]["content"][0]["text"] == "next question"
    assert_consistent(builder, built)
    assert validate_conversation(msgs, require_user_last=True) == []


def test_scratchpad_follows_question_with_full_results(builder: ContextBuilder) -> None:
    full = "1\tline one\n2\tline two\n" * 50
    scratch = [
        ScratchStep(
            assistant=step("Read it.", ("s1", "Read", {"file_path": "big.py"})),
            results=[ScratchResult("s1", "Read", full)],
        ),
        ScratchStep(
            assistant=step("Bad grep.", ("s2", "Grep", {"pattern": "("})),
            results=[ScratchResult("s2", "Grep", "Error [bad_regex]: (", is_error=True)],
        ),
    ]
    history = History(messages=one_round(1))
    built = builder.build(history, scratch, "fix big.py", todo_recap="1. [in_progress] fix")
    msgs = built.request.messages
    assert msgs[6]["content"][0]["text"] == "fix big.py"
    assert msgs[7]["content"][1]["id"] == "s1"
    assert msgs[8]["content"][0] == {"type": "tool_result", "tool_use_id": "s1", "content": full}
    assert msgs[10]["content"][0]["is_error"] is True
    assert msgs[10]["content"][-1]["text"].startswith("<system-reminder>\n1. [in_progress]")
    assert built.layers["scratchpad"] > built.layers["current input"] > 0
    assert built.layers["todo recap"] > 0
    assert len(history.messages) == 7  # the recap is never stored
    assert_consistent(builder, built)
    assert validate_conversation(msgs, require_user_last=True) == []


def test_question_only_and_empty_history(builder: ContextBuilder) -> None:
    built = builder.build(History(), [], "hello")
    assert built.request.messages == [
        {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": EPH}]}
    ]
    assert built.layers["L3 history"] == 0
    assert built.request.max_tokens == 1234
    assert built.request.tools == TOOLS
    assert_consistent(builder, built)


def test_blank_texts_are_never_sent(builder: ContextBuilder) -> None:
    history = History(
        messages=[
            user("q"),
            step("   ", ("a", "Read", {})),
            tool("a", {}),
            Message(role="assistant", content="\n"),
            final("done"),
        ]
    )
    built = builder.build(history, [], "  ")
    blocks = [b for m in built.request.messages for b in m["content"]]
    assert all(b["text"].strip() for b in blocks if b["type"] == "text")
    assert validate_conversation(built.request.messages) == []
    assert built.layers["current input"] == 0


def test_consecutive_user_messages_merge(builder: ContextBuilder) -> None:
    history = History(messages=[user("first"), user("second"), final("ok")])
    built = builder.build(history, [], "third")
    msgs = built.request.messages
    assert [b["text"] for b in msgs[0]["content"]] == ["first", "second"]
    assert_consistent(builder, built)


def test_consecutive_assistant_messages_merge(builder: ContextBuilder) -> None:
    history = History(
        messages=[
            user("q"),
            Message(role="assistant", content="Let me think."),
            step("Now read.", ("r", "Read", {})),
            tool("r", {}),
            final("done"),
        ]
    )
    built = builder.build(history, [], "next")
    assistant = built.request.messages[1]["content"]
    assert [b["type"] for b in assistant] == ["text", "text", "tool_use"]
    assert built.request.messages[2]["content"][0]["tool_use_id"] == "r"
    assert_consistent(builder, built)


# --- repairs ---


def test_interrupted_call_gets_a_synthetic_result_before_the_next_input(
    builder: ContextBuilder,
) -> None:
    history = History(messages=[user("q1"), step("reading", ("lost", "Read", {})), user("q2")])
    built = builder.build(history, [], "")
    content = built.request.messages[2]["content"]
    assert content[0] == {
        "type": "tool_result",
        "tool_use_id": "lost",
        "content": MISSING_RESULT,
        "is_error": True,
    }
    assert content[1]["text"] == "q2"
    assert any("lost" in w for w in built.warnings)
    assert_consistent(builder, built)


def test_trailing_open_call_is_closed(builder: ContextBuilder) -> None:
    history = History(messages=[user("q1"), step("reading", ("x", "Read", {}))])
    built = builder.build(history, [], "")
    assert built.request.messages[-1]["content"][0]["tool_use_id"] == "x"
    assert_consistent(builder, built)


def test_orphan_tool_result_becomes_text(builder: ContextBuilder) -> None:
    history = History(messages=[user("q1"), tool("ghost", {"a": 1}), final("ok")])
    built = builder.build(history, [], "q2")
    first = built.request.messages[0]["content"]
    assert [b["type"] for b in first] == ["text", "text"]
    assert "ghost" in first[1]["text"] and '"a": 1' in first[1]["text"]
    assert_consistent(builder, built)


def test_result_without_id_answers_the_open_call(builder: ContextBuilder) -> None:
    history = History(messages=[user("q"), step("r", ("only", "Read", {})), tool(None, {})])
    built = builder.build(history, [], "next")
    assert built.request.messages[2]["content"][0]["tool_use_id"] == "only"
    assert built.warnings == []
    assert_consistent(builder, built)


def test_duplicate_call_ids_do_not_break_the_build(builder: ContextBuilder) -> None:
    history = History(
        messages=[user("q"), step("twice", ("d", "Read", {}), ("d", "Read", {})), tool("d", {})]
    )
    built = builder.build(history, [], "next")
    # The API would refuse duplicate ids; the builder must not crash, the validator says why.
    assert any("duplicate tool_use id d" in p for p in validate_request(built.request))


def test_history_starting_with_assistant_gets_an_opener(builder: ContextBuilder) -> None:
    history = History(messages=[final("Summary of older messages."), user("q")])
    built = builder.build(history, [], "")
    msgs = built.request.messages
    assert msgs[0]["role"] == "user"
    assert msgs[1]["content"][0]["text"] == "Summary of older messages."
    assert_consistent(builder, built)


# --- token breakdown ---


def test_breakdown_matches_full_count_on_a_long_session(
    tmp_path: Path, builder: ContextBuilder
) -> None:
    (tmp_path / "code_law.md").write_text("# Rules\nNo globals.", encoding="utf-8")
    messages = [m for n in range(1, 30) for m in one_round(n)]
    history = History(summaries=[summary("## 📌 Archived Session Summary\n...")], messages=messages)
    scratch = [
        ScratchStep(step("s", ("z", "Read", {"f": 1})), [ScratchResult("z", "Read", "full text")])
    ]
    built = builder.build(history, scratch, "go", todo_recap="1. [pending] x")
    assert all(built.layers[name] > 0 for name in LAYERS)
    assert_consistent(builder, built)


def test_history_layer_uses_cached_counts(builder: ContextBuilder) -> None:
    messages = one_round(1)
    assert all(m.tokens is None for m in messages)
    built = builder.build(History(messages=messages), [], "q")
    assert all(m.tokens == count_message(m) for m in messages)  # filled and cached
    before = built.layers["L3 history"]
    # a stored count is trusted as is (a message as loaded again from the store)
    messages[0] = messages[0].model_copy(update={"tokens": (messages[0].tokens or 0) + 1000})
    again = builder.build(History(messages=messages), [], "q")
    assert again.layers["L3 history"] == before + 1000


def test_l1_is_counted_once(monkeypatch: pytest.MonkeyPatch, builder: ContextBuilder) -> None:
    first = builder.build(History(), [], "q")

    def boom(*args: object) -> int:
        raise AssertionError("L1 re-counted")

    monkeypatch.setattr(context_module, "count_tools", boom)
    second = builder.build(History(), [], "q")
    assert second.layers["L1 tools"] == first.layers["L1 tools"] > 0
    assert second.layers["L1 system"] == first.layers["L1 system"] > 0


def test_layer_text_shows_each_layer(tmp_path: Path, builder: ContextBuilder) -> None:
    (tmp_path / "CODE_LAW.md").write_text("Law text.", encoding="utf-8")
    history = History(summaries=[summary("S1")], messages=one_round(1))
    scratch = [ScratchStep(step("t", ("q", "Read", {})), [ScratchResult("q", "Read", "FULL")])]
    built = builder.build(history, scratch, "the question", todo_recap="recap!")
    text = built.layer_text
    assert tuple(text) == LAYERS
    assert text["L1 system"] == SYSTEM
    assert '"name": "Grep"' in text["L1 tools"]
    assert "Law text." in text["L2 CODE_LAW"]
    assert text["L3 summaries"] == "S1"
    assert text["L3 history"].startswith("[user] question 1")
    assert text["current input"] == "the question"
    assert "recap!" in text["todo recap"]
    assert "FULL" in text["scratchpad"]


# --- the validator itself ---


def test_validator_reports_each_kind_of_problem() -> None:
    use = {"type": "tool_use", "id": "u1", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "u1", "content": "x"}
    assert validate_conversation([]) != []
    assert "start with a user" in validate_conversation([{"role": "assistant", "content": "x"}])[0]
    two_users = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert any("in a row" in p for p in validate_conversation(two_users))
    blank = [{"role": "user", "content": [{"type": "text", "text": " "}]}]
    assert any("empty text" in p for p in validate_conversation(blank))
    unanswered = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": "b"},
    ]
    assert any("no tool_result" in p for p in validate_conversation(unanswered))
    late = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "text", "text": "b"}, result]},
    ]
    assert any("after other content" in p for p in validate_conversation(late))
    orphan = [{"role": "user", "content": [result]}]
    assert any("answers no tool_use" in p for p in validate_conversation(orphan))
    prefill = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert validate_conversation(prefill) == []
    assert any("prefill" in p for p in validate_conversation(prefill, require_user_last=True))
    ok = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result, {"type": "text", "text": "b"}]},
    ]
    assert validate_conversation(ok) == []


def test_validator_catches_duplicate_tool_use_ids() -> None:
    use = {"type": "tool_use", "id": "d", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "d", "content": "x"}
    conv = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    assert any("duplicate tool_use id d" in p for p in validate_conversation(conv))


# --- E1 rendering ---


def test_render_react() -> None:
    history = History(
        summaries=[summary("## 📌 Archived Session Summary")],
        messages=[
            user("fix @a.py"),
            step("Need the file.", ("r1", "Read", {"file_path": "a.py"})),
            tool("r1", {"lines": "1: x"}),
            final("Fixed it."),
        ],
    )
    assert render_react(history) == (
        "[summary] ## 📌 Archived Session Summary\n\n"
        "[user] fix @a.py\n\n"
        '[assistant] Thought: Need the file.\nAction: Read[{"file_path": "a.py"}]\n\n'
        '[tool] {"status": "success", "data": {"lines": "1: x"}}\n\n'
        "[assistant] Fixed it."
    )


def test_render_react_marks_pinned_messages_but_a_summary_call_never_sees_the_mark() -> None:
    from engine.compaction.summary import render_messages_for_summary

    messages = [
        user("keep this"),
        step("Need it.", ("r1", "Read", {"file_path": "a.py"})),
        tool("r1", {"lines": "1: x"}),
    ]
    messages[0].pinned = messages[1].pinned = True
    assert render_react(History(messages=messages)) == (
        "[user, pinned] keep this\n\n"
        '[assistant, pinned] Thought: Need it.\nAction: Read[{"file_path": "a.py"}]\n\n'
        '[tool] {"status": "success", "data": {"lines": "1: x"}}'
    )
    assert "pinned" not in render_messages_for_summary(messages)


def test_render_react_several_actions_without_thought() -> None:
    msg = step("", ("a", "LS", {}), ("b", "Glob", {"pattern": "*.py"}))
    assert render_react(History(messages=[msg])) == (
        '[assistant] Action: LS[{}]\nAction: Glob[{"pattern": "*.py"}]'
    )


def test_render_react_does_not_double_the_thought_label() -> None:
    msg = step("Thought: read first", ("a", "Read", {"file_path": "x"}))
    assert render_react(History(messages=[msg])) == (
        '[assistant] Thought: read first\nAction: Read[{"file_path": "x"}]'
    )


def test_summary_role_messages_join_the_summary_blocks(builder: ContextBuilder) -> None:
    history = History(
        summaries=[summary("S1")],
        messages=[Message(role="summary", content="S-inline"), *one_round(2)],
    )
    built = builder.build(history, [], "q")
    assert [b["text"] for b in built.request.system[1:]] == ["S1", "S-inline"]
    assert "S-inline" not in json.dumps(built.request.messages)
    assert_consistent(builder, built)


def test_build_restores_the_garbage_collector_state(builder: ContextBuilder) -> None:
    assert gc.isenabled()
    builder.build(History(messages=one_round(1)), [], "q")
    assert gc.isenabled()
    gc.disable()
    try:
        builder.build(History(messages=one_round(1)), [], "q")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_resumed_history_prefix_builds_what_a_fresh_builder_builds(
    tmp_path: Path, settings: Settings
) -> None:
    """Step after step the builder resumes the wire of the unchanged prefix; every request
    must equal the one a builder with no memory of earlier builds makes."""
    from engine.models import Placement

    incremental = ContextBuilder(tmp_path, settings, TOOLS, SYSTEM, cache_conversation=True)
    messages: list[Message] = []
    summaries: list[Summary] = []
    stages = []
    for n in range(1, 5):
        for msg in one_round(n):
            messages.append(msg)
            stages.append((list(summaries), list(messages)))
        if n == 2:  # a compaction: a summary placed as a user message, history restarts
            summaries = [
                summary("S", 1, 2).model_copy(update={"placement": Placement.USER_MESSAGE})
            ]
            messages = [user("after the summary")]  # merges into the summary's user turn
            stages.append((list(summaries), list(messages)))
    for summ, msgs in stages:
        history = History(summaries=summ, messages=msgs)
        got = incremental.build(history, [], "next question")
        fresh = ContextBuilder(tmp_path, settings, TOOLS, SYSTEM, cache_conversation=True)
        want = fresh.build(history, [], "next question")
        assert got.request == want.request
        assert got.layers == want.layers and got.warnings == want.warnings
        assert not validate_request(got.request)
