"""The parse ``watch`` runs at each look (:class:`TailParser`: only the records from the last
round's input on) against the whole-file parser, record for record.

Each Claude Code file of the corpus, and the built shapes of ``test_claude_code_chain.py``
(a resumed session, a dangling ``logicalParentUuid``), is grown through both in chunks of
varying sizes; after every chunk both results go through the writer's ``check`` and must be
equal: every item (kind, line, time, text, calls with their inputs, results, usage, model,
thinking, compactions), the title, the working directory, the version, what was not read.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from engine.recordings import claude_code
from engine.recordings.base import ImportError_, JsonLines, Parsed
from engine.recordings.claude_code_follow import TailParser
from engine.recordings.writer import check
from tests.engine.recordings.corpus import MAROT, MOREDIP, MOREDIP_AGENT, YOAVF
from tests.engine.recordings.test_claude_code_chain import (
    AFTER_RESUME,
    BEFORE_RESUME,
    COMPACTED,
    REPLAY,
)
from tests.engine.recordings.test_claude_code_parse import marot_with_queued_attachments

CHUNKS = [1, 3, 17, 2, 40, 1, 9, 120]
"""Records per look, in turn (a look finds one record, or a burst)."""


def grown(lines: list[str]) -> list[tuple[int, list[tuple[int, dict]], JsonLines]]:
    """The records after each look, as ``watch`` reads them."""
    reader = JsonLines()
    records: list[tuple[int, dict]] = []
    out = []
    sizes = itertools.cycle(CHUNKS)
    at = 0
    while at < len(lines):
        size = next(sizes)
        for number in range(at + 1, min(at + size, len(lines)) + 1):
            obj = reader.feed(number, lines[number - 1])
            if obj is not None and isinstance(obj.get("type"), str):
                records.append((number, obj))
        at += size
        out.append((at, list(records), reader))
    return out


def whole(records: list, reader: JsonLines) -> Parsed | None:
    try:
        parsed = claude_code.parse_read(
            list(records), reader.lines, "f.jsonl", Counter(reader.skipped),
            list(reader.warnings), reader.not_read.copy(),
        )  # fmt: skip
    except ImportError_:
        return None
    return parsed if not check(parsed) else None


def same(tail: Parsed, ref: Parsed) -> None:
    assert tail.items == ref.items
    assert (tail.title, tail.cwd, tail.source_session, tail.agent_version) == (
        ref.title, ref.cwd, ref.source_session, ref.agent_version,
    )  # fmt: skip
    assert tail.recorded == ref.recorded
    assert tail.not_read.as_json() == ref.not_read.as_json()
    assert tail.not_read_sentences() == ref.not_read_sentences()


def follow_both(lines: list[str]) -> TailParser:
    parser = TailParser("f.jsonl")
    for _, records, reader in grown(lines):
        ref = whole(records, reader)
        try:
            tail = parser.parse(
                records, reader.lines, Counter(reader.skipped), list(reader.warnings),
                reader.not_read.copy(),
            )  # fmt: skip
        except ImportError_:
            assert ref is None
            continue
        if parser.check(tail):
            assert ref is None
            continue
        assert ref is not None
        same(tail, ref)
    return parser


@functools.cache
def followed_as_it_is(path: Path) -> TailParser:
    """:func:`follow_both` of a corpus file as it is, run once in a worker (its assertions
    with it): marot's is both a test below and the baseline of the repeated-uuid tests (2.3 s
    of CPU each time at load 8-14)."""
    return follow_both(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("path", [MAROT, MOREDIP, MOREDIP_AGENT, YOAVF], ids=lambda p: p.name[:30])
def test_a_corpus_file_grown_look_by_look_parses_as_the_whole_file(path: Path) -> None:
    parser = followed_as_it_is(path)
    if path == MAROT:
        # 1,863 lines in 77 looks: the whole file is parsed again only when the tail cannot
        # be used (the first conversation, a record hanging elsewhere); most looks parse the
        # tail.
        assert parser.tail_parses > 3 * parser.whole_parses


def test_the_built_shapes_parse_as_the_whole_file() -> None:
    follow_both(BEFORE_RESUME + REPLAY + AFTER_RESUME)
    follow_both(COMPACTED)


def test_a_rewind_to_an_earlier_round_parses_the_whole_file_again() -> None:
    """marot's first 300 lines, then a user input that hangs under line 5 (the first input:
    a rewind): the tail cannot hold it, the whole file is parsed, and the result is the
    whole-file parser's."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()[:300]
    rewind = (
        '{"type":"user","uuid":"rewound-0001","parentUuid":"1a2252ee-fde8-4a8f-a103-4028c39c47ce",'
        '"isSidechain":false,"sessionId":"258c7280-ae70-4798-800f-63464d01a85d",'
        '"timestamp":"2026-02-11T22:00:00.000Z","message":{"role":"user","content":"start over"}}'
    )
    parser = follow_both([*lines, rewind])
    assert parser.whole_parses >= 2


def look_by_look(lines: list[str], first: int) -> list[tuple[list, JsonLines]]:
    """The records after a look at the first ``first`` lines, then after each further line."""
    reader = JsonLines()
    records: list[tuple[int, dict]] = []
    out = []
    for number, line in enumerate(lines, start=1):
        obj = reader.feed(number, line)
        if obj is not None and isinstance(obj.get("type"), str):
            records.append((number, obj))
        if number >= first:
            out.append((list(records), reader))
    return out


def follow_each(lines: list[str], first: int) -> tuple[TailParser, list[Parsed]]:
    parser, parses = TailParser("f.jsonl"), []
    for records, reader in look_by_look(lines, first):
        ref = whole(records, reader)
        tail = parser.parse(
            records, reader.lines, Counter(reader.skipped), list(reader.warnings),
            reader.not_read.copy(),
        )  # fmt: skip
        assert not parser.check(tail) and ref is not None
        same(tail, ref)
        parses.append(tail)
    return parser, parses


def test_an_input_typed_while_the_agent_worked_appears_when_it_leaves_the_queue() -> None:
    """marot looked at after every line from 490 to 640: "check again" is enqueued at line
    497 and taken off the queue at line 505 (``remove``), "new beads…" at 603 and 604 (see
    ``test_claude_code_parse``). A look before the remove has no such input, a look after it
    has it, marked queued, as the whole-file parse does; the tail is parsed on most looks."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()[:640]
    parser, parses = follow_each(lines, 490)

    def queued(parsed: Parsed) -> list[str]:
        return [i.text for i in parsed.items if (i.origin or {}).get("input") == "queued"]

    at = {n: parsed for n, parsed in enumerate(parses, start=490)}
    assert queued(at[504]) == []
    assert queued(at[505]) == ["check again"]
    assert queued(at[603]) == ["check again"]
    assert queued(at[604]) == ["check again", "new beads for the epic were added. tackle them"]
    assert parser.tail_parses > 3 * parser.whole_parses


def test_a_round_that_starts_while_an_input_waits_in_the_queue_is_no_anchor() -> None:
    """Built from marot: "new beads…" enqueued (line 603), then a new user input under the
    result of line 607 opens a round, and only then is the queued input taken off the queue
    (its ``remove``) and the next response written under the new input. A parse starting
    at the new input would not see the ``enqueue``: looked at line by line, every look must
    still equal the whole-file parse, which delivers it before that response."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()
    new_input = {
        "type": "user",
        "uuid": "a11ce000-0000-4000-8000-000000000001",
        "parentUuid": "13ce25e5-f600-4fdb-a302-8f53cb3e533a",  # line 607's result
        "isSidechain": False,
        "sessionId": "258c7280-ae70-4798-800f-63464d01a85d",
        "timestamp": "2026-02-11T20:56:15.300Z",
        "message": {"role": "user", "content": "and push it"},
    }
    response = json.loads(lines[607])  # line 608
    response["parentUuid"] = new_input["uuid"]
    built = [*lines[:603], *lines[604:607], json.dumps(new_input), lines[603], json.dumps(response)]
    parser, parses = follow_each(built, 600)
    users = [(i.text, (i.origin or {}).get("input")) for i in parses[-1].items if i.kind == "user"]
    assert users[-2:] == [
        ("and push it", None),
        ("new beads for the epic were added. tackle them", "queued"),
    ]


def test_queued_command_attachments_parse_as_the_whole_file() -> None:
    """The built file of ``test_claude_code_parse`` (attachments where queued inputs reached
    the model), looked at after every line from 490 to 640."""
    follow_each(marot_with_queued_attachments()[:640], 490)


def _retimed(line: str) -> str:
    """The record of ``line`` written again with another time: the same uuid, another line
    (an exact copy of a line the reader already leaves out as a repeated line)."""
    record = json.loads(line)
    record["timestamp"] = record["timestamp"][:-5] + "999Z"
    return json.dumps(record)


@pytest.mark.parametrize("where", [300, 900, 1500])
@pytest.mark.parametrize("copied", ["its own round's", "the first round's"])
def test_a_repeated_uuid_keeps_the_tail(where: int, copied: str) -> None:
    """Issue 44: a record repeating an earlier record's uuid (a resumed or copied record:
    the whole-file parser keeps the first and names the repeat "not read") made every look
    parse the whole file until the next round started; in marot's long rounds that was most
    of the file. Now the tail leaves the repeat out and names it as the whole-file parser
    does: every look still equals the whole-file parse (follow_both), and the whole file is
    parsed no more often than for marot as it is."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()
    kind = {n: json.loads(line).get("type") for n, line in enumerate(lines)}
    if copied == "its own round's":
        k = next(n for n in range(where, where + 50) if kind[n] == "assistant")
        grown_lines = [*lines[: k + 1], _retimed(lines[k]), *lines[k + 1 :]]
    else:
        k = next(n for n in range(10, 60) if kind[n] == "assistant")
        grown_lines = [*lines[:where], _retimed(lines[k]), *lines[where:]]
    plain_whole, plain_tail = _marot_parses()
    parser = follow_both(grown_lines)
    assert parser.whole_parses == plain_whole
    assert parser.tail_parses >= plain_tail


def _marot_parses() -> tuple[int, int]:
    """Whole and tail parses of marot as it is, grown the same way."""
    plain = followed_as_it_is(MAROT)
    return plain.whole_parses, plain.tail_parses
