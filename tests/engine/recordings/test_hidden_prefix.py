"""The hidden prefix of an imported session (``engine.recordings.hidden``): the first call's
prompt minus what the transcript shows before it, read from the first rounds only (issue 44:
the workbench worked it out by reading the whole session a second time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.models import Message, MessageMeta, Observation, ToolCall, Usage, UsageRecord
from engine.recordings.hidden import hidden_prefix
from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store

ROOT = Path(__file__).resolve().parents[3]
MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def test_marot_first_call_and_its_archived_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """marot's first call (line 5's usage: 3 input + 8 037 cache creation + 17 842 cache read =
    25 882, read off the file with ``json.loads``) comes after the first user message alone.
    Its round 1 is archived by the recorded compaction (the history starts at round 6), so the
    prefix is read from the archive as well as the history."""
    store = Store.open(tmp_path / "m.db")
    try:
        sid = import_session(store, MAROT, str(tmp_path), settings=Settings()).session.id
        assert sid is not None
        history_rounds = {m.meta.round for m in store.history(sid).messages}
        assert 1 not in history_rounds  # the first round is archived
        first_user = store.round_messages(sid, 1)[0]
        assert first_user.role == "user" and first_user.content == "Implement spotter-gqc"
        whole: list[str] = []
        monkeypatch.setattr(store, "segments", lambda *_a: whole.append("segments"))
        monkeypatch.setattr(store, "history", lambda *_a: whole.append("history"))
        hidden = hidden_prefix(store, sid)
        assert whole == []  # neither the whole archive nor the whole history is read
        assert hidden is not None
        assert hidden.first_prompt_tokens == 25_882
        assert hidden.transcript_tokens == first_user.tokens
        assert hidden.tokens == 25_882 - (first_user.tokens or 0)
        # the same from the session's messages when the caller has them (the workbench)
        assert hidden_prefix(store, sid, messages=store.all_messages(sid)) == hidden
    finally:
        store.close()


def test_a_tool_result_before_the_first_call_counts_in_full(tmp_path: Path) -> None:
    """The first recorded call is the round's second step: before it, the user message (7
    tokens), the step-1 call (11) and its tool result, which counts as the model saw it (its
    observation's 500 tokens, not the 20 stored for the compressed message). Later rounds are
    not read: a message there with a huge count changes nothing."""
    store = Store.open(tmp_path / "s.db")
    try:
        session = store.create_session(str(tmp_path), "recorded", "import", "m", "layered")
        sid = session.id
        assert sid is not None
        call = ToolCall(id="toolu_1", name="Read", input={"file_path": "a.py"})
        rnd, _ = store.open_round(sid, Message(role="user", content="look", tokens=7))
        store.append_message(
            sid,
            rnd.index,
            Message(
                role="assistant",
                content="reading",
                tool_calls=[call],
                tokens=11,
                meta=MessageMeta(step=1),
            ),
        )
        tool = store.append_message(
            sid,
            rnd.index,
            Message(
                role="tool",
                content="{}",
                tokens=20,
                meta=MessageMeta(step=1, tool_name="Read", tool_use_id="toolu_1"),
            ),
        )
        store.add_observation(
            Observation(
                session_id=sid,
                round_index=rnd.index,
                step=1,
                tool_use_id="toolu_1",
                tool_name="Read",
                result={"status": "success"},
                text="x",
                tokens_full=500,
                tokens_compressed=20,
                message_id=tool.id,
            )
        )
        store.append_message(
            sid,
            rnd.index,
            Message(role="assistant", content="done", tokens=3, meta=MessageMeta(step=2)),
        )
        later, _ = store.open_round(sid, Message(role="user", content="more", tokens=90_000))
        for round_index, step, tokens in ((rnd.index, 2, 10_000), (later.index, 1, 99_000)):
            store.add_usage(
                UsageRecord(
                    session_id=sid,
                    round_index=round_index,
                    step=step,
                    usage=Usage(input_tokens=tokens, output_tokens=5),
                )
            )
        hidden = hidden_prefix(store, sid)
        assert hidden is not None
        assert hidden.first_prompt_tokens == 10_000
        assert hidden.transcript_tokens == 7 + 11 + 500
        assert hidden.tokens == 10_000 - 518
        assert hidden_prefix(store, sid, messages=store.all_messages(sid)) == hidden
    finally:
        store.close()


def test_no_prefix_without_an_import_or_a_call(tmp_path: Path) -> None:
    """A session ctxscope ran itself has no hidden prefix; nor has an import without usage."""
    store = Store.open(tmp_path / "n.db")
    try:
        own = store.create_session(str(tmp_path), "own", "offline", "offline", "layered")
        bare = store.create_session(str(tmp_path), "recorded", "import", "m", "layered")
        assert own.id is not None and bare.id is not None
        store.open_round(bare.id, Message(role="user", content="hi", tokens=2))
        assert hidden_prefix(store, own.id) is None
        assert hidden_prefix(store, bare.id) is None
    finally:
        store.close()
