"""OpenHands event lists: the real corpus file through the real import path."""

from __future__ import annotations

from collections import Counter

from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, import_all

OPENHANDS = CORPUS / "All-Hands-AI__OpenHands__basic_gui_mode.json"


def test_corpus_events_calls_results_and_messages(store: Store) -> None:
    """``jq -r '.[]|select(.tool_call_metadata)|[.id,(.cause//"-"),(.action//("obs:"
    +.observation)),.tool_call_metadata.tool_call_id]|@tsv' $O``: actions 7, 9, 11, 13 with
    observations 8, 10, 12, 14 (execute_bash, str_replace_editor ×2, execute_bash); one user
    message (id 4) and one agent message (id 15); the second command's exit code is -1 (the
    server still running), the first's 0."""
    (one,) = import_all(store, OPENHANDS)
    assert one.report.fmt == "openhands"
    assert one.calls() == Counter({"execute_bash": 2, "str_replace_editor": 2})
    assert [m.meta.tool_use_id for m in one.role("tool")] == [
        "toolu_01W9Z8jBctr8X2frZV9p1RYs",
        "toolu_01YYLXwwdBLwtMmjr5Sfsieg",
        "toolu_01GpJj2ShdFjb9ZTY4CVxi9C",
        "toolu_01DwihWr4ooPZS1CGTLAWrFP",
    ]
    assert not any(m.meta.is_error for m in one.role("tool"))
    (user,) = one.role("user")
    assert user.content.startswith("I want to create a VueJS app that allows me to:")
    assert len(user.content) == 324
    final = one.role("assistant")[-1]
    assert final.content.startswith("I've created a complete Vue.js todo application")
    assert len(final.content) == 1221
    first = one.role("assistant")[0]
    assert first.tool_calls[0].input == {"command": "mkdir -p /workspace/todo-app"}
    sid = one.report.session.id
    assert sid is not None
    serve = store.observation_for(sid, "toolu_01DwihWr4ooPZS1CGTLAWrFP")
    assert serve is not None
    assert serve.text.startswith("Serving HTTP on 0.0.0.0 port 8000")


def test_corpus_usage_model_and_skipped_events(store: Store) -> None:
    """``jq '[.[]|select(.action and .tool_call_metadata)|.tool_call_metadata.model_response
    .usage|{c:(.cache_read_input_tokens//0), w:(.cache_creation_input_tokens//0),
    p:.prompt_tokens, o:.completion_tokens}]|{read:(map(.c)|add), write:(map(.w)|add),
    input:(map(.p-.c-.w)|add), out:(map(.o)|add)}' $O`` → read 11793, write 5482, input 22,
    out 2024. Events not stored: ``jq -r '.[]|[.source,(.action//("obs:"+.observation))]|@tsv'
    $O | sort | uniq -c`` → agent_state_changed ×4, change_agent_state ×1, null
    observations ×3."""
    (one,) = import_all(store, OPENHANDS)
    assert len(one.usages) == 4
    assert sum(u.usage.cache_read_input_tokens for u in one.usages) == 11793
    assert sum(u.usage.cache_creation_input_tokens for u in one.usages) == 5482
    assert sum(u.usage.input_tokens for u in one.usages) == 22
    assert sum(u.usage.output_tokens for u in one.usages) == 2024
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == "claude-3-5-sonnet-20241022"
    assert one.report.skipped == {
        "observation:agent_state_changed": 4,
        "action:change_agent_state": 1,
        "observation:null": 3,
    }
    assert (one.role("user")[0].meta.origin or {})["recorded"]["cwd"] == "/workspace"
