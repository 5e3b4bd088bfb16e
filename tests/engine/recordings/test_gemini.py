"""Gemini CLI saved chats: the real corpus file through the real import path."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from engine.recordings.importing import ImportError_, parse_path
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, import_all

GEMINI = CORPUS / "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json"


def test_corpus_chat_messages_calls_and_the_failed_call(store: Store) -> None:
    """``jq -r '.messages[].type' $G | sort | uniq -c`` → gemini 14, user 5;
    ``jq -r '.messages[].toolCalls[]?|[.name,.status]|@tsv' $G | sort | uniq -c`` →
    replace/success 7, replace/error 1, write_file/success 3; the error's
    ``functionResponse.response.error`` starts "A secondary check by an LLM"; thoughts:
    ``jq '[.messages[]|select(.type=="gemini")|.thoughts|length]|add' $G`` → 22."""
    (one,) = import_all(store, GEMINI)
    assert one.report.fmt == "gemini-cli"
    assert len(one.role("user")) == 5
    assert len(one.role("assistant")) == 14
    assert one.calls() == Counter({"replace": 8, "write_file": 3})
    errors = [m for m in one.role("tool") if m.meta.is_error]
    assert [m.meta.tool_use_id for m in errors] == ["replace-1761077322005-e180d6d44397f"]
    sid = one.report.session.id
    assert sid is not None
    (obs,) = [o for o in store.observations(sid) if o.tool_use_id == errors[0].meta.tool_use_id]
    assert obs.text.startswith("A secondary check by an LLM determined that no changes")
    thinking = [b for m in one.role("assistant") for b in (m.meta.origin or {}).get("thinking", [])]
    assert len(thinking) == 22
    assert one.role("user")[3].content == "Anything else we should add?"
    assert one.report.missing_results == 0


def test_corpus_chat_usage_and_model(store: Store) -> None:
    """``jq '[.messages[]|select(.type=="gemini" and (.tokens.total>0))]|length' $G`` → 13
    (the first answer's tokens are all 0); ``jq '[.messages[].tokens|select(.)|.input-.cached
    +.tool]|add' $G`` → 34028, ``…|.cached]|add`` → 86702, ``…|.output+.thoughts]|add`` → 6223
    (thinking is billed as output); model gemini-2.5-pro ×14."""
    (one,) = import_all(store, GEMINI)
    assert len(one.usages) == 13
    assert sum(u.usage.input_tokens for u in one.usages) == 34028
    assert sum(u.usage.cache_read_input_tokens for u in one.usages) == 86702
    assert sum(u.usage.output_tokens for u in one.usages) == 6223
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == "gemini-2.5-pro"
    recorded = (one.role("user")[0].meta.origin or {})["recorded"]
    assert recorded["sessionId"] == "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"
    assert recorded["projectHash"].startswith("2d33ff9193c39ffa")


def test_gemini_api_messages_are_named_and_refused(tmp_path: Path) -> None:
    """``{"role": "model", "parts": [...]}`` lines used to be read as Anthropic messages and
    refused with that format's problems; now the refusal names what they are."""
    path = tmp_path / "chat.jsonl"
    path.write_text(
        json.dumps({"role": "user", "parts": [{"text": "hi"}]})
        + "\n"
        + json.dumps({"role": "model", "parts": [{"text": "hello"}]})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ImportError_) as caught:
        parse_path(path)
    assert caught.value.fmt == "gemini-contents"
    assert "Gemini CLI chat recording" in str(caught.value)
