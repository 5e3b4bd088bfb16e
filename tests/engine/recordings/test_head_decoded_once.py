"""Issue 44: a JSON-lines file's first lines are decoded once. The sniffer decodes the first
50 lines to tell the format (``Head.records``); the reader takes those objects as they are
(``base.Known.records``) and the lines as they were read (``Known.lines``), instead of
finding and decoding them again. What it reads is the same either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.recordings import agents, base
from engine.recordings.files import read_session
from engine.recordings.importing import parse_sessions

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"


def counting_decoder(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The line reader's decodes, counted (one entry each)."""
    calls: list[int] = []
    decode = base._raw_decode

    def counted(text: str) -> Any:
        calls.append(1)
        return decode(text)

    monkeypatch.setattr(base, "_raw_decode", counted)
    return calls


def test_the_reader_decodes_only_what_the_sniffer_did_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Codex rollout has 153 lines that are not blank, each one JSON object (counted with
    ``sum(1 for l in open(f) if l.strip())`` and ``json.loads`` of each, once): the sniffer
    decodes the first 50, and the reader the other 103 alone."""
    calls = counting_decoder(monkeypatch)
    parse_sessions(CODEX)
    assert len(calls) == 103


def test_without_what_was_read_the_reader_decodes_every_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same file handed to its agent's parse as bare text (``watch``, the tests): all 153
    lines decoded by the reader."""
    read = read_session(CODEX)
    agent = agents.detect(CODEX, read.text)
    assert agent is not None
    calls = counting_decoder(monkeypatch)
    agent.parse(CODEX, read.text)
    assert len(calls) == 153


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.jsonl")), ids=lambda p: p.name[:40])
def test_what_was_read_changes_nothing_read(path: Path) -> None:
    """Every JSON-lines recording of the corpus: the sessions parsed with the sniffer's
    records and the lines handed on are the sessions parsed from the text alone, field for
    field."""
    read = read_session(path)
    head = agents.Head.of_read(read)
    agent = agents.detect_head(path, head)
    assert agent is not None
    handed = agent.parse(path, read.text, head.known())
    assert head.known() is not None and len(head.known().records) > 0  # type: ignore[union-attr]
    alone = agent.parse(path, read_session(path).text)
    assert repr(handed) == repr(alone)
    assert repr(parse_sessions(path)) == repr(alone)
