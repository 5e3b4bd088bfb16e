"""Metamorphic tests over every corpus file: what a newer agent version or a damaged copy
adds to a file changes nothing of what is read, and every insertion is named.

For the JSON-lines formats (Claude Code, Codex) hypothesis draws: records of kinds nobody
knows inserted anywhere, an unknown field added to records, garbage lines in the middle, a
record written twice, a half-written line at the end, CRLF line ends, a BOM. For the
whole-JSON formats (Gemini CLI, OpenHands, SWE-agent): unknown fields added anywhere in the
tree. The mutated file must give the untouched file's counts, which are literals worked out
without ctxscope (``tests/data/corpus_facts/README.md``, the commands quoted there), and
``Parsed.not_read`` must name each insertion at its line.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.recordings.base import NORMAL_REPEATS, Parsed
from engine.recordings.importing import parse_sessions
from tests.engine.recordings.corpus import CORPUS, MAROT, MOREDIP, MOREDIP_AGENT, YOAVF

CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
GEMINI = CORPUS / "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json"
OPENHANDS = CORPUS / "All-Hands-AI__OpenHands__basic_gui_mode.json"
SWE = CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj"


@dataclass(frozen=True)
class Facts:
    """What a faithful reader finds in a file; None: not worked out independently (the
    mutated file is then compared with the untouched one only)."""

    user: int | None
    assistant: int | None
    results: int
    calls: int
    compactions: int


FACTS = {
    # corpus_facts §1 and test_claude_code_parse.py: 5 inputs on the chain (2 typed, 2
    # task notifications, 1 interrupt) and 2 typed while the agent worked (queue-operation
    # enqueue + remove), 152 distinct message.ids, 186 calls and results, one compact_boundary.
    MAROT: Facts(user=5 + 2, assistant=152, results=186, calls=186, compactions=1),
    # §2: 1 genuine user input, 2 distinct message.ids, 1 Task call and its result.
    MOREDIP: Facts(user=1, assistant=2, results=1, calls=1, compactions=0),
    # §3: the subagent's root input, 2 message.ids, 1 WebSearch call and its result.
    MOREDIP_AGENT: Facts(user=1, assistant=2, results=1, calls=1, compactions=0),
    # §4: 3 genuine inputs + the 3 records of a `!` shell command, 40 message.ids, 37 calls.
    YOAVF: Facts(user=6, assistant=40, results=37, calls=37, compactions=0),
    # §5: 3 genuine inputs, 21 model calls (21 distinct total_token_usage), 7 function_call +
    # 11 custom_tool_call, each with its output; no `compacted` record.
    CODEX: Facts(user=3, assistant=21, results=18, calls=18, compactions=0),
    # §6 / test_gemini.py: gemini 14, user 5; replace 8 + write_file 3 tool calls.
    GEMINI: Facts(user=5, assistant=14, results=11, calls=11, compactions=0),
    # §7 / test_openhands.py: one user message, actions 7, 9, 11, 13 and agent message 15,
    # each action's observation.
    OPENHANDS: Facts(user=1, assistant=5, results=4, calls=4, compactions=0),
    # §8: 5 trajectory steps, each an action with its observation.
    SWE: Facts(user=None, assistant=5, results=5, calls=5, compactions=0),
}
JSON_LINES = [MAROT, MOREDIP, MOREDIP_AGENT, YOAVF, CODEX]
WHOLE_JSON = [GEMINI, OPENHANDS, SWE]
EXAMPLES = {MAROT: 4}
"""The long session is parsed in ~0.3 s: few examples; the others are small."""


def counts(parsed: Parsed) -> Facts:
    kinds = Counter(i.kind for i in parsed.items)
    return Facts(
        user=kinds["user"],
        assistant=kinds["assistant"],
        results=kinds["result"],
        calls=sum(len(i.calls) for i in parsed.items),
        compactions=kinds["summary"],
    )


def agrees(found: Facts, facts: Facts) -> bool:
    return all(
        expected is None or getattr(found, name) == expected
        for name, expected in facts.__dict__.items()
    )


def _kind_of(line: str) -> Any:
    """The ``type`` of a JSON line (None when it is not an object)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return obj.get("type") if isinstance(obj, dict) else None


def parse_text(data: bytes, name: str) -> Parsed:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        (parsed,) = parse_sessions(path)
    return parsed


@pytest.mark.parametrize("path", list(FACTS), ids=lambda p: p.name[:40])
def test_the_untouched_corpus_file_gives_the_worked_out_counts(path: Path) -> None:
    parsed = parse_text(path.read_bytes(), path.name)
    assert agrees(counts(parsed), FACTS[path]), counts(parsed)
    assert not parsed.not_read


# Kinds nobody writes yet, and garbage a copy can pick up (none of them JSON objects).
KIND = st.sampled_from(["ai-summary", "zz-new-kind", "worktree-state", "teleported-from"])
GARBAGE = st.sampled_from(["// a note", "not json at all", "{broken", "<<<<<<< HEAD", "]"])


@dataclass
class Line:
    text: str
    named: str = ""
    """How the reader must name this line ("" for the file's own lines)."""
    kind: str = ""


def unknown_record(path: Path, kind: str, n: int) -> str:
    if path == CODEX:
        payload = {"n": n}
        return json.dumps(
            {"timestamp": "2025-10-21T20:03:00.000Z", "type": kind, "payload": payload}
        )
    return json.dumps({"type": kind, "sessionId": "s", "extra": {"n": n}})


@dataclass
class Mutated:
    """A mutated copy of a file, and the kinds and lines ``not_read`` must name."""

    data: bytes
    kinds: dict[str, list[int]]
    named: dict[str, list[int]]
    ops: list[str]

    def __repr__(self) -> str:  # the file itself is megabytes: say what was done to it
        return f"Mutated(ops={self.ops}, kinds={self.kinds}, named={self.named})"


@st.composite
def mutations(draw: st.DrawFn, path: Path) -> Mutated:
    original = path.read_text(encoding="utf-8").splitlines()
    lines = [Line(t) for t in original]
    ops: list[str] = []
    for _ in range(draw(st.integers(0, 3))):  # unknown fields on existing records
        at = draw(st.integers(0, len(original) - 1))
        obj = json.loads(original[at])
        field = draw(st.sampled_from(["zzField", "futureFlag", "x-extra"]))
        obj[field] = {"v": 1}
        lines[at] = Line(json.dumps(obj))
        ops.append(f"field {field} on line {at + 1}")
    for n in range(draw(st.integers(0, 3))):  # records of unknown kinds, anywhere
        kind = draw(KIND)
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, Line(unknown_record(path, kind, n), kind=kind))
        ops.append(f"kind {kind} before line {at + 1}")
    for _ in range(draw(st.integers(0, 2))):  # garbage lines in the middle
        at = draw(st.integers(1, len(lines) - 1))
        text = draw(GARBAGE)
        why = "comment" if text.startswith("//") else "not JSON"
        lines.insert(at, Line(text, named=why))
        ops.append(f"{text!r} before line {at + 1}")
    if draw(st.booleans()):  # a record written twice, somewhere after itself
        source = draw(st.integers(0, len(lines) - 1))
        if not lines[source].named:
            # A title or mode line written again is normal (counted, not named as damage).
            normal = _kind_of(lines[source].text) in NORMAL_REPEATS
            named = "" if normal else "repeats an earlier line"
            copy = Line(lines[source].text, named=named, kind="")
            at = draw(st.integers(source + 1, len(lines)))
            lines.insert(at, copy)
            ops.append(f"line {source + 1} again before line {at + 1}")
    cut = draw(st.booleans())  # a half-written line at the end
    if cut:
        lines.append(Line(original[-1][: len(original[-1]) // 2], named="cut last line"))
        ops.append("a cut line at the end")
    end = "\r\n" if draw(st.booleans()) else "\n"
    bom = "\ufeff" if draw(st.booleans()) else ""
    ops += ["CRLF"] * (end == "\r\n") + ["BOM"] * bool(bom)
    text = bom + end.join(line.text for line in lines) + ("" if cut else end)
    kinds: dict[str, list[int]] = {}
    named: dict[str, list[int]] = {}
    for number, line in enumerate(lines, start=1):
        if line.kind:
            kinds.setdefault(line.kind, []).append(number)
        if line.named:
            named.setdefault(line.named, []).append(number)
    return Mutated(text.encode("utf-8"), kinds, named, ops)


@pytest.mark.parametrize("path", JSON_LINES, ids=lambda p: p.name[:40])
def test_json_lines_files_read_the_same_whatever_is_added(path: Path) -> None:
    @settings(
        max_examples=EXAMPLES.get(path, 15),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutations(path))
    def check(mutated: Mutated) -> None:
        parsed = parse_text(mutated.data, path.name)
        assert agrees(counts(parsed), FACTS[path]), counts(parsed)
        assert parsed.not_read.kinds == mutated.kinds
        assert parsed.not_read.lines == mutated.named

    check()


def with_unknown_fields(value: Any, draw: st.DrawFn, depth: int = 0) -> Any:
    """``value`` with unknown keys added to some of its objects."""
    if isinstance(value, dict):
        out = {k: with_unknown_fields(v, draw, depth + 1) for k, v in value.items()}
        if draw(st.integers(0, 3)) == 0:
            out[draw(st.sampled_from(["zzField", "futureFlag", "x-extra"]))] = {"v": depth}
        return out
    if isinstance(value, list):
        return [with_unknown_fields(v, draw, depth + 1) for v in value]
    return value


@pytest.mark.parametrize("path", WHOLE_JSON, ids=lambda p: p.name[:40])
def test_whole_json_files_read_the_same_with_unknown_fields(path: Path) -> None:
    original = json.loads(path.read_text(encoding="utf-8"))

    @settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def check(data: st.DataObject) -> None:
        mutated = with_unknown_fields(original, data.draw)
        parsed = parse_text(json.dumps(mutated).encode(), path.name)
        assert agrees(counts(parsed), FACTS[path]), counts(parsed)

    check()
