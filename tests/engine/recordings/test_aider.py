"""aider chat histories: a fixture written the way aider/io.py writes (``user_input``: ``#### ``
lines joined by two spaces and a newline; ``ai_output``: the answer between blank lines;
``tool_output`` / ``confirm_ask``: ``> `` lines ending in two spaces; a ``# aider chat
started at`` heading each start)."""

from __future__ import annotations

from collections import Counter

from engine.models import RoundStatus
from engine.store import Store
from tests.engine.recordings.helpers import FIXTURES, import_all

AIDER = FIXTURES / "aider.chat.history.md"


def test_each_block_with_input_is_a_session_and_inputs_open_rounds(store: Store) -> None:
    """By hand from the fixture: three headings; the second holds only ``#### <blank>`` and
    the third no input, so one session. Its inputs: ``/add greet.py``, the two-line request,
    the question; one line of notes sits before the first heading."""
    (one,) = import_all(store, AIDER)
    assert one.report.fmt == "aider"
    assert [m.content for m in one.role("user")] == [
        "/add greet.py",
        "make greet() say hello\nto the name it is given",
        'what does greet return for ""?',
    ]
    assert one.report.skipped == {
        "text_before_first_session": 1,
        "empty_session": 2,
        "startup_line": 4,
        "usage_line": 2,
    }
    assert one.report.warnings == [
        "1 lines before the first '# aider chat started at' heading left out"
    ]
    sid = one.report.session.id
    assert sid is not None
    assert store.get_session(sid).model == "claude-3-7-sonnet-20250219"
    recorded = (one.role("user")[0].meta.origin or {})["recorded"]
    assert recorded == {"started_at": "2025-03-01 09:15:02", "git_repo": ".git with 12 files"}


def test_tool_output_blocks_are_results_and_token_lines_usage(store: Store) -> None:
    """``> Added greet.py to the chat`` answers the /add (an empty step); ``> Applied edit`` and
    ``> Commit`` follow the edit's answer. ``Tokens: 2.3k sent, 1.1k cache write, 56 received``
    → input 2300 - 1100 = 1200, cache write 1100, output 56; ``2.5k sent, 2.2k cache hit, 18
    received`` → input 300, cache read 2200, output 18. Every round ends normally."""
    (one,) = import_all(store, AIDER)
    assert one.calls() == Counter({"aider": 2})
    assert [m.content for m in one.role("assistant")][0] == ""
    tools = one.role("tool")
    assert len(tools) == 2
    sid = one.report.session.id
    assert sid is not None
    texts = [o.text for o in store.observations(sid)]
    assert texts == [
        "Added greet.py to the chat",
        "Applied edit to greet.py\nCommit 1a2b3c4 feat: greet by name",
    ]
    assert [
        (
            u.usage.input_tokens,
            u.usage.cache_creation_input_tokens,
            u.usage.cache_read_input_tokens,
            u.usage.output_tokens,
        )
        for u in one.usages
    ] == [(1200, 1100, 0, 56), (300, 0, 2200, 18)]
    answer = one.role("assistant")[1].content
    assert answer.startswith("I'll change `greet` to use the name.")
    assert answer.endswith(">>>>>>> REPLACE\n```")
    assert [r.status for r in store.rounds(sid)] == [RoundStatus.FINISHED] * 3
