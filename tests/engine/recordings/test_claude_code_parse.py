"""The Claude Code parser on the real recordings of ``tests/data/corpus``.

Every expected figure was worked out from the files without ctxscope (jq or a few lines of
plain Python, quoted in each docstring; ``tests/data/corpus_facts/README.md`` holds the whole
analysis).
Shorthands: ``M`` = the marot session, ``P`` = the moredip session, ``S`` = its subagent,
``Y`` = the yoavf pomodoro session. The "message-complete" view is the active chain plus the
records sharing its responses' ``message.id`` and the tool_results answering its calls.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.recordings import claude_code
from engine.recordings.base import Item, Parsed
from engine.recordings.envelopes import envelope
from tests.engine.recordings.corpus import MAROT, MOREDIP, MOREDIP_AGENT, YOAVF


def parse(path: Path, raw: str | None = None) -> Parsed:
    text = raw if raw is not None else path.read_text(encoding="utf-8")
    return claude_code.parse(text, "test.jsonl")


def kinds(items: list[Item]) -> Counter[str]:
    return Counter(i.kind for i in items)


@pytest.fixture(scope="module")
def marot() -> Parsed:
    return parse(MAROT)


def test_marot_every_tool_call_of_the_active_chain_is_kept(marot: Parsed) -> None:
    """Message-complete view: 186 tool_use, 186 results, every call answered, 7 errors.

    ``jq -s '[.[]|select(.type=="assistant").message.content[]|select(.type=="tool_use").id]
    |(length,(unique|length))' $M`` → 186, 186; tool_result blocks (``jq -s '[.[]|select(.type
    =="user" and (.message.content|type)=="array").message.content[]|select(.type==
    "tool_result")]|length' $M``) → 186; names from ``cc_extended.py``: Bash 79, Read 42,
    Edit 35, Write 13, Glob 8, Grep 5, TaskOutput 3, Task 1; is_error 7. (The strict parent
    chain alone has 183 calls and 168 results.)
    """
    calls = [c for i in marot.items for c in i.calls]
    results = [i for i in marot.items if i.kind == "result"]
    assert len(calls) == 186
    assert Counter(c.name for c in calls) == {
        "Bash": 79, "Read": 42, "Edit": 35, "Write": 13, "Glob": 8, "Grep": 5,
        "TaskOutput": 3, "Task": 1,
    }  # fmt: skip
    assert len(results) == 186
    assert {r.tool_use_id for r in results} == {c.id for c in calls}
    assert sum(r.is_error for r in results) == 7


def test_marot_responses_merge_across_interleaved_results(marot: Parsed) -> None:
    """One step per API response: 152 distinct ``message.id`` (``jq -s '[.[]|select(.type==
    "assistant").message.id]|unique|length' $M`` → 152), although 19 times a tool_result
    record sits between two records of one response (facts, "Interleaving")."""
    steps = [i for i in marot.items if i.kind == "assistant"]
    assert len(steps) == 152
    # usage is the response's last record's: output tokens summed over the last record of each
    # message.id is 38899 (the first record's would give 10458)
    assert sum(s.usage.output_tokens for s in steps if s.usage) == 38899
    assert sum(s.usage.cache_read_input_tokens for s in steps if s.usage) == 14771617


def test_marot_user_inputs_and_queued_ones(marot: Parsed) -> None:
    """User records on the chain that are not results: the two genuine requests "Implement
    spotter-gqc" (line 5, 20:36:45.618Z) and "did you push?" (line 1858), two
    ``<task-notification>`` (lines 496, 1847) and "[Request interrupted by user for tool use]"
    (line 495). Two more inputs exist only as ``queue-operation`` records: ``jq -r
    'select(.type=="queue-operation")|[input_line_number,.operation,(.content//""|.[0:50])]
    |@tsv' $M`` → 280 enqueue <task-notification> b0be39e, 497 enqueue "check again", 505
    remove, 520 enqueue <task-notification> bd0afab, 603 enqueue "new beads for the epic were
    added. tackle them", 604 remove. Each ``remove`` takes the user's input off the queue at a
    tool boundary (the notices wait for the agent to be idle: they are the user records of
    lines 496 and 1847). Read by hand around them: the remove of line 505 (20:51:19.419Z) comes
    after the Bash call of line 500 and before its result (line 508, 20:51:18.738Z); the next
    response (line 509, 20:51:23Z) is the first request that can hold "check again". Likewise
    "new beads…" (remove 604 at 20:56:15.446Z) reaches the response of line 608 after the
    result of line 607; that response's successor (line 625) says "Now let me check the new
    beads you mentioned"."""
    users = [i for i in marot.items if i.kind == "user"]
    assert [(u.line, u.text[:30], (u.origin or {}).get("input")) for u in users] == [
        (5, "Implement spotter-gqc", None),
        (495, "[Request interrupted by user f", "interrupt"),
        (496, "<task-notification>\n<task-id>b", "task-notification"),
        (505, "check again", "queued"),
        (604, "new beads for the epic were ad", "queued"),
        (1847, "<task-notification>\n<task-id>b", "task-notification"),
        (1858, "did you push?", None),
    ]
    first = users[0]
    assert first.created_at == datetime(2026, 2, 11, 20, 36, 45, 618000, tzinfo=UTC)
    for text, result_line, step_line, enqueued in (
        ("check again", 508, 509, 497),
        ("new beads for the epic were added. tackle them", 607, 608, 603),
    ):
        (at,) = [n for n, i in enumerate(marot.items) if i.text == text]
        before, queued, after = marot.items[at - 1 : at + 2]
        assert (before.kind, before.line) == ("result", result_line)
        assert (after.kind, after.line) == ("assistant", step_line)
        assert queued.origin == {"input": "queued", "queued_line": enqueued}
    remove_505 = datetime(2026, 2, 11, 20, 51, 19, 419000, tzinfo=UTC)
    assert users[3].created_at == remove_505
    # Nothing was left in the queue but the notice of line 520, written at line 1847.
    assert "queued_input" not in marot.skipped
    assert not [w for w in marot.warnings if "queue" in w]
    assert marot.title == "Implement spotter-gqc"


NOTICE = "<task-notification>\n<task-id>zzz0001</task-id>\n</task-notification>"


def marot_with_queued_attachments() -> list[str]:
    """marot as newer Claude Code versions would write its queue: after ``enqueue`` and
    ``remove``, an ``attachment`` record ``{"type": "queued_command", "prompt",
    "commandMode", "origin": {"kind"}}`` where the input reached the model, in the uuid tree
    (the shape viewers of those files read; no such file is in the corpus). After line 508's
    result an attachment for "check again" (enqueued line 497, removed line 505) that line
    509's response hangs under; after line 522's result the enqueue, remove (naming its
    content, as those versions do) and attachment of a background task's notice that no user
    record holds. Every line after 508 moves down 1, after 522 by 4 (the remove of "new
    beads…", line 604, is 608)."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()

    def attachment(uuid: str, parent: str, prompt: str, kind: str) -> str:
        return json.dumps(
            {
                "type": "attachment",
                "uuid": uuid,
                "parentUuid": parent,
                "isSidechain": False,
                "sessionId": "258c7280-ae70-4798-800f-63464d01a85d",
                "timestamp": "2026-02-11T20:51:19.500Z",
                "attachment": {
                    "type": "queued_command",
                    "prompt": prompt,
                    "commandMode": "prompt" if kind == "human" else kind,
                    "origin": {"kind": kind},
                },
            }
        )

    def uuid(line: str) -> str:
        return str(json.loads(line)["uuid"])

    after_508 = json.loads(lines[508])  # line 509
    after_508["parentUuid"] = "a7ac0000-0000-4000-8000-000000000001"
    after_522 = json.loads(lines[522])  # line 523
    after_522["parentUuid"] = "a7ac0000-0000-4000-8000-000000000002"
    queue = '{"type":"queue-operation","operation":"%s","timestamp":"2026-02-11T20:52:11.000Z",'
    queue += '"sessionId":"258c7280-ae70-4798-800f-63464d01a85d"%s}'
    return [
        *lines[:508],
        attachment(after_508["parentUuid"], uuid(lines[507]), "check again", "human"),
        json.dumps(after_508),
        *lines[509:522],
        queue % ("enqueue", ', "content": ' + json.dumps(NOTICE)),
        queue % ("remove", ', "content": ' + json.dumps(NOTICE)),
        attachment(after_522["parentUuid"], uuid(lines[521]), NOTICE, "task-notification"),
        json.dumps(after_522),
        *lines[523:],
    ]


def test_a_queued_command_attachment_is_where_the_input_was_delivered() -> None:
    """:func:`marot_with_queued_attachments`: "check again" is delivered once, at its
    attachment (line 509 of the built file), not at its remove; the notice is delivered at
    its attachment too and marked as the harness's; the attachments are read (nothing is
    "not read")."""
    built = marot_with_queued_attachments()
    parsed = claude_code.parse("\n".join(built) + "\n", "built.jsonl")
    users = [i for i in parsed.items if (i.origin or {}).get("queued_line")]
    assert [(u.text, u.line, u.origin) for u in users] == [
        ("check again", 509, {"input": "queued", "queued_line": 497}),
        (NOTICE, 526, {"input": "task-notification", "queued_line": 524}),
        (
            "new beads for the epic were added. tackle them",
            608,
            {"input": "queued", "queued_line": 607},
        ),
    ]
    (at,) = [n for n, i in enumerate(parsed.items) if i.text == "check again"]
    assert (parsed.items[at - 1].kind, parsed.items[at - 1].line) == ("result", 508)
    assert (parsed.items[at + 1].kind, parsed.items[at + 1].line) == ("assistant", 510)
    assert not parsed.not_read
    assert parsed.skipped["attachment:queued_command"] == 2


def test_marot_recorded_compaction(marot: Parsed) -> None:
    """``jq -c 'select(.subtype=="compact_boundary")|{timestamp,compactMetadata}' $M`` →
    2026-02-11T21:18:41.543Z, trigger auto, preTokens 167094; the summary's length ``jq -r
    'select(.isCompactSummary==true).message.content|length' $M`` → 14518. Before the boundary
    the chain holds 102 distinct message.ids and 124 tool calls (message-complete), after it
    50 and 62."""
    (at,) = [n for n, i in enumerate(marot.items) if i.kind == "summary"]
    summary = marot.items[at]
    assert (summary.trigger, summary.pre_tokens) == ("auto", 167094)
    assert summary.created_at == datetime(2026, 2, 11, 21, 18, 41, 543000, tzinfo=UTC)
    assert len(summary.text) == 14518
    assert summary.text.startswith("This session is being continued from a previous conversation")
    before, after = marot.items[:at], marot.items[at + 1 :]
    assert kinds(before)["assistant"] == 102 and kinds(after)["assistant"] == 50
    assert sum(len(i.calls) for i in before) == 124
    assert sum(len(i.calls) for i in after) == 62


def test_marot_skipped_records_are_counted_by_kind(marot: Parsed) -> None:
    """``jq -r .type $M | sort | uniq -c``: progress 1333, file-history-snapshot 28,
    queue-operation 6, system 5 (compact_boundary 1 — stored —, stop_hook_summary 3,
    turn_duration 1). Every user / assistant record is in the message-complete view (299 + 192
    records: nothing off the chain), and the working directory is the recorded cwd."""
    assert dict(marot.skipped) == {
        "progress": 1333,
        "file-history-snapshot": 28,
        "queue-operation": 6,
        "system:stop_hook_summary": 3,
        "system:turn_duration": 1,
    }
    assert marot.records == 1863
    assert marot.cwd == "/home/USER/projects/spotter-worktrees/spotter-gqc"
    assert marot.source_session == "258c7280-ae70-4798-800f-63464d01a85d"


def test_moredip_session_and_its_subagent_file() -> None:
    """P: 1 genuine input (``jq -r 'select(.type=="user").message.content|strings' $P``), 2
    message.ids, one Task call toolu_01KscA8iE8tUT2aCNEUXREzo whose result records agentId
    a2018e5 (``jq -r 'select(.toolUseResult.agentId)|[.toolUseResult.agentId,
    .message.content[0].tool_use_id]|@tsv' $P``). S: every record isSidechain with agentId
    a2018e5 (``jq -r '[.type,.isSidechain,.agentId]|@tsv' $S | sort | uniq -c``), one
    WebSearch call, 2 message.ids."""
    parent = parse(MOREDIP)
    assert [i.kind for i in parent.items] == ["user", "assistant", "result", "assistant"]
    assert parent.items[0].text == (
        "spawn a subagent to perform a websearch to determine what is the most popular color "
        "of thai curry"
    )
    (call,) = parent.items[1].calls
    assert (call.id, call.name) == ("toolu_01KscA8iE8tUT2aCNEUXREzo", "Task")
    assert parent.items[2].recorded is not None
    assert parent.items[2].recorded["agentId"] == "a2018e5"
    assert parent.agent_id is None and parent.children == []

    child = parse(MOREDIP_AGENT)
    assert child.agent_id == "a2018e5"
    assert [i.kind for i in child.items] == ["user", "assistant", "result", "assistant"]
    assert child.items[0].text.startswith("Perform a web search to determine what is the most")
    assert [c.name for c in child.items[1].calls] == ["WebSearch"]
    assert child.source_session == "4b2030ed-5563-49ea-b703-6a002f2d3cc8"


def test_yoavf_older_schema() -> None:
    """Y (CLI 2.0.24): a linear chain of all 118 uuid records; 40 message.ids, 37 tool_use
    (Edit 20, TodoWrite 11, Write 3, Read 3), 37 results, 3 genuine string inputs plus the
    isMeta caveat and the ``!open index.html`` shell pair: ``jq -r .type $Y | sort | uniq -c``
    and facts §4."""
    parsed = parse(YOAVF)
    calls = [c for i in parsed.items for c in i.calls]
    assert kinds(parsed.items) == {"assistant": 40, "result": 37, "user": 6}
    assert Counter(c.name for c in calls) == {"Edit": 20, "TodoWrite": 11, "Write": 3, "Read": 3}
    texts = [i.text for i in parsed.items if i.kind == "user"]
    assert texts[1:] == [
        "add smooth transitions between states",
        "add a Pause/Resume feature",
        texts[3],
        "<bash-input>open index.html</bash-input>",
        "<bash-stdout></bash-stdout><bash-stderr></bash-stderr>",
    ]
    assert texts[3].startswith("Caveat: The messages below were generated by the user")
    assert dict(parsed.skipped) == {"file-history-snapshot": 6}


def test_a_last_line_cut_mid_way_imports_with_a_warning() -> None:
    """Y cut in the middle of its last line (124, a user record): lines 1-123 whole, the
    line's first 100 characters, no line end. The cut record is left out, the rest kept."""
    lines = YOAVF.read_text(encoding="utf-8").splitlines()
    raw = "\n".join(lines[:123]) + "\n" + lines[123][:100]
    parsed = parse(YOAVF, raw)
    assert parsed.warnings == ["line 124: cut mid-way (the file is still being written?); left out"]
    assert parsed.skipped["partial_line"] == 1
    assert parsed.not_read.lines == {"cut last line": [124]}
    assert kinds(parsed.items) == {"assistant": 40, "result": 37, "user": 5}


def test_a_damaged_line_in_the_middle_is_left_out_and_named() -> None:
    """A bad line that is not the file's unfinished end: left out, named by its line, the
    rest read. P's line 6 is a ``progress`` record (``jq -c 'input_line_number, .type' P``),
    so the conversation is the untouched file's: 2 user items... as the test below counts."""
    lines = MOREDIP.read_text(encoding="utf-8").splitlines()
    raw = "\n".join([*lines[:5], lines[5][:40], *lines[6:]]) + "\n"
    whole = parse(MOREDIP)
    damaged = parse(MOREDIP, raw)
    assert damaged.not_read.lines == {"not JSON": [6]}
    assert [i.kind for i in damaged.items] == [i.kind for i in whole.items]
    assert damaged.not_read_sentences() == ["1 line not read: not JSON (line 6)"]


def test_a_replayed_result_is_not_pulled_in_ahead_of_the_chain() -> None:
    """A resumed session wrote an earlier copy of P's tool_result (line 9, answering
    toolu_01KscA8iE8tUT2aCNEUXREzo) under another uuid before the conversation: the copy is
    counted, not stored, and the conversation still starts with the user's input."""
    lines = MOREDIP.read_text(encoding="utf-8").splitlines()
    copy = lines[8].replace('"uuid":"184a728a-', '"uuid":"0ld0c0py-')
    assert copy != lines[8]
    raw = "\n".join([copy, *lines]) + "\n"
    parsed = parse(MOREDIP, raw)
    assert [i.kind for i in parsed.items] == ["user", "assistant", "result", "assistant"]
    assert parsed.skipped["replayed_copy"] == 1


def test_grep_in_count_mode_on_one_file_records_a_bare_number() -> None:
    """Claude Code's Grep in count mode on one file records ``20`` with no ``file:`` prefix;
    over a folder ``path:N`` lines; nothing found: ``No files found``."""
    one = envelope(
        "Grep", {"pattern": "def", "path": "a.py", "output_mode": "count"}, "20", False, None
    )
    assert one.data is not None
    assert one.data["counts"] == [{"file": "a.py", "count": 20}]
    many = envelope(
        "Grep", {"pattern": "x", "output_mode": "count"}, "a.py:3\nsrc/b.py:12", False, None
    )
    assert many.data is not None
    assert many.data["counts"] == [{"file": "a.py", "count": 3}, {"file": "src/b.py", "count": 12}]
    none = envelope("Grep", {"pattern": "zzz"}, "No files found", False, None)
    assert none.data is not None
    assert (none.data["files"], none.data["files_matched"]) == ([], 0)
