"""Whose words a user message holds, and the ledger's requests counting only the user's own.

The harness texts are Claude Code's, as its files write them (the corpus: marot lines 495,
496; yoavf lines 122-124), and the wrappers its slash commands write (the ``_MARKUP`` list of
:mod:`engine.recordings.claude_code`, from the corpus's and the viewers' files).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from engine.compaction.ledger import extract_ledger
from engine.messages.harness import input_kind, is_users_own, kind_of
from engine.models import Message, MessageMeta
from engine.store import Store
from tests.engine.recordings.corpus import MAROT


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[Request interrupted by user for tool use]", "interrupt"),
        ("[Request interrupted by user]", "interrupt"),
        (
            "<task-notification>\n<task-id>b0be39e</task-id>\n</task-notification>",
            "task-notification",
        ),
        ("<system-reminder>The TodoWrite tool hasn't been used</system-reminder>", "reminder"),
        ("<system-reminder>a</system-reminder>\n<system-reminder>b</system-reminder>", "reminder"),
        ("<command-name>/clear</command-name>\n<command-args></command-args>", "command"),
        (
            "<command-message>review</command-message>\n<command-name>/review</command-name>",
            "command",
        ),
        ("<local-command-stdout>Compacted</local-command-stdout>", "command"),
        ("<bash-input>open index.html</bash-input>", "command"),
        # the user's own words, even quoting the markup or the mark
        ("check again", None),
        ("why did you write [Request interrupted by user]?", None),
        ("<system-reminder>x</system-reminder> and now fix the test", None),
        ("fix the <task-notification> parsing", None),
    ],
)
def test_input_kind(text: str, kind: str | None) -> None:
    assert input_kind(text) == kind


def test_a_mark_wins_over_the_text() -> None:
    """What the importer marked is what the message is (a queued input quoting a notice is
    still the user's); without a mark, the text decides (a session stored before marks)."""
    quoting = Message(
        role="user",
        content="<task-notification> showed up twice",
        meta=MessageMeta(origin={"input": "queued"}),
    )
    assert kind_of(quoting) == "queued" and is_users_own(quoting)
    old = Message(role="user", content="[Request interrupted by user for tool use]")
    assert kind_of(old) == "interrupt" and not is_users_own(old)
    caveat = Message(
        role="user", content="Caveat: …", meta=MessageMeta(origin={"input": "harness"})
    )
    assert not is_users_own(caveat)
    opened = Message(
        role="user", content="(continued)", meta=MessageMeta(origin={"synthetic": True})
    )
    assert not is_users_own(opened)


def test_the_marot_ledger_counts_the_users_own_requests(tmp_path: Path) -> None:
    """The marot session's user inputs (read by hand: ``jq`` over its user records and its
    ``queue-operation`` records, see ``test_claude_code_parse``): typed "Implement spotter-gqc"
    (line 5) and "did you push?" (line 1858); typed while the agent worked "check again"
    (line 497) and "new beads for the epic were added. tackle them" (line 603); the harness's
    "[Request interrupted by user for tool use]" (line 495) and two ``<task-notification>``
    (lines 496, 1847). So 4 requests, in that order of delivery; before this change the ledger
    had 6: the two typed, the interrupt, the two notices (their tags unwrapped) and the round
    the importer opens after the compaction ("(The conversation continues…)")."""
    db = tmp_path / "m.db"
    assert main(["import", str(MAROT), "--db", str(db)]) == 0
    store = Store.open(db)
    try:
        messages = store.all_messages(1)
    finally:
        store.close()
    requests = [item.key for item in extract_ledger(messages).of("request")]
    assert requests == [
        "Implement spotter-gqc",
        "check again",
        "new beads for the epic were added. tackle them",
        "did you push?",
    ]
