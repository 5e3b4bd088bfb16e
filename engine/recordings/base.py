"""What every format's parser produces: a flat list of :class:`Item` plus what it skipped.

A parser reads the whole file and either returns a :class:`Parsed` or raises
:class:`ImportError_` with the problems it found (by line number where the format has lines);
nothing is stored before the whole file has parsed (see :mod:`engine.recordings.writer`).

Readers are tolerant, the way a browser reads HTML: what they do not understand (a record of
an unknown kind, a line that is not JSON, a known kind in a shape they do not expect) is left
out, counted by kind with its line numbers in :class:`NotRead`, and the rest is read. The
import report and ``watch`` name it in the same words (:meth:`NotRead.sentences`).
:class:`JsonLines` is the one line reader of the JSON-lines formats: a BOM, CRLF line ends,
blank and ``//`` lines, a line that is not JSON, a repeated line, a cut last line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from engine.models import Session, ToolCall, Usage
from engine.validation import usage_from

MAX_PROBLEMS_SHOWN = 5
MAX_LINES_NAMED = 5
"""Line numbers named per kind in a report line (the JSON report names them all)."""
MAX_KIND_CHARS = 60
"""Characters of an unknown record kind kept to name it."""
AGENTS = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "gemini-cli": "Gemini CLI",
    "copilot-cli": "Copilot CLI",
}
"""The agent that writes each format, as the report names it beside its version."""


class ImportError_(ValueError):
    """The input cannot be imported; ``problems`` lists each one, ``fmt`` what it looked like."""

    def __init__(self, problems: list[str], fmt: str | None = None, source: str = "") -> None:
        self.problems = problems
        self.fmt = fmt
        self.source = source
        shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
        more = len(problems) - MAX_PROBLEMS_SHOWN
        if more > 0:
            shown += f"; and {more} more"
        head = f"{source}: " if source else ""
        head += f"looks like {fmt} but cannot be imported: " if fmt else ""
        super().__init__(head + shown)


MAX_LINES_KEPT = 100
"""Line numbers kept per kind or reason of what was not read; past them only the count grows
(1 GB of junk lines must not keep 50 million numbers)."""


@dataclass
class NotRead:
    """What a reader left out because it did not understand it, by kind, with line numbers
    (the first :data:`MAX_LINES_KEPT` of each) and how many in all."""

    kinds: dict[str, list[int]] = field(default_factory=dict)
    """Records of kinds this version does not read (drift: what a newer agent writes)."""
    lines: dict[str, list[int]] = field(default_factory=dict)
    """Lines or records it could not read, by why (``not JSON``, ``cut last line``,
    ``unexpected shape: user``...)."""
    counts: Counter[str] = field(default_factory=Counter)
    """How many of each kind (``kind:NAME``) and reason (``line:WHY``), kept or not."""

    def kind(self, name: str, line: int, count: int = 1) -> None:
        # A kind is the file's own text: a long one is cut (the line number finds it).
        name = name if len(name) <= MAX_KIND_CHARS else name[:MAX_KIND_CHARS] + "…"
        self._add(self.kinds, f"kind:{name}", name, [line], count)

    def line(self, why: str, line: int, count: int = 1) -> None:
        """``count`` lines left out for ``why``, the first of them ``line``."""
        self._add(self.lines, f"line:{why}", why, [line], count)

    def _add(
        self, where: dict[str, list[int]], key: str, name: str, numbers: list[int], count: int
    ) -> None:
        kept = where.setdefault(name, [])
        kept.extend(numbers[: max(0, MAX_LINES_KEPT - len(kept))])
        self.counts[key] += count

    def count_of_kind(self, name: str) -> int:
        return self.counts[f"kind:{name}"] or len(self.kinds.get(name, []))

    def count_of_line(self, why: str) -> int:
        return self.counts[f"line:{why}"] or len(self.lines.get(why, []))

    def merge(self, other: NotRead) -> None:
        for name, lines in other.kinds.items():
            self._add(self.kinds, f"kind:{name}", name, lines, other.count_of_kind(name))
        for why, lines in other.lines.items():
            self._add(self.lines, f"line:{why}", why, lines, other.count_of_line(why))

    def __bool__(self) -> bool:
        return bool(self.kinds or self.lines)

    def copy(self) -> NotRead:
        return NotRead(
            {k: list(v) for k, v in self.kinds.items()},
            {k: list(v) for k, v in self.lines.items()},
            Counter(self.counts),
        )

    def sentences(self, fmt: str = "", version: str = "") -> list[str]:
        """The report's "not read" lines, e.g. ``12 records of kinds this version of ctxscope
        does not read: ai-title 1, last-prompt 4, pr-link 7 (Claude Code 2.1.88)``."""
        out = []
        agent = " ".join(p for p in (AGENTS.get(fmt, fmt), version) if p)
        if self.kinds:
            n = sum(self.count_of_kind(k) for k in self.kinds)
            listed = ", ".join(f"{k} {self.count_of_kind(k)}" for k in sorted(self.kinds))
            out.append(
                f"{n} record{'s' if n != 1 else ''} of kinds this version of ctxscope does not "
                f"read: {listed}" + (f" ({agent})" if agent else "")
            )
        if self.lines:
            n = sum(self.count_of_line(why) for why in self.lines)
            listed = ", ".join(  # "repeats an earlier line (lines 25, 35, 54)"
                f"{why} ({_line_numbers(sorted(v), self.count_of_line(why))})"
                for why, v in sorted(self.lines.items())
            )
            out.append(f"{n} line{'s' if n != 1 else ''} not read: {listed}")
        return out

    def as_json(self) -> dict[str, Any]:
        """Each kind and reason with its count and the line numbers kept (all of them up to
        :data:`MAX_LINES_KEPT`, the first ones past it)."""
        return {
            "kinds": {
                k: {"count": self.count_of_kind(k), "lines": sorted(v)}
                for k, v in sorted(self.kinds.items())
            },
            "lines": {
                k: {"count": self.count_of_line(k), "lines": sorted(v)}
                for k, v in sorted(self.lines.items())
            },
        }


def _line_numbers(lines: list[int], total: int) -> str:
    named = ", ".join(str(n) for n in lines[:MAX_LINES_NAMED])
    more = total - min(len(lines), MAX_LINES_NAMED)
    word = "line" if total == 1 else "lines"
    return f"{word} {named}" + (f" and {more} more" if more > 0 else "")


MAX_LINE_CHARS = 32 * 1024 * 1024
"""A line longer than this is left out (named ``line over 32 MB``), never parsed."""
MAX_RESULT_CHARS = 4 * 1024 * 1024
"""A recorded tool result longer than this is kept as its head and tail, the cut marked
(:func:`cut_result`): one 30 MB ``cat`` must not become a 30 MB observation."""
CUT_WARNING = "line {}: cut mid-way (the file is still being written?); left out"
COMMENT_PREFIXES = ("//", "#")
NORMAL_REPEATS = frozenset(
    {"ai-title", "custom-title", "agent-name", "mode", "permission-mode", "last-prompt", "pr-link"}
)
"""Record kinds an agent writes again, byte for byte, as a matter of course (Claude Code appends
the session's title, mode and last prompt again at each resume): a repeat of one is counted as
``repeated:<kind>``, not named with the damaged lines."""

_JSON_STARTS = frozenset('{["-0123456789tfn')
"""How a JSON text can begin."""


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
"""A ``\\uD800``–``\\uDFFF`` escape in JSON text: the only way a lone surrogate gets into
what ``json.loads`` returns (the text itself was decoded from UTF-8 with replacement)."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str, value: Any) -> tuple[Any, int]:
    """``value`` (what ``json.loads(text)`` gave) with every lone UTF-16 surrogate replaced by
    U+FFFD, and how many were. JavaScript writes a lone surrogate as ``"\\udc9b"``, valid
    JSON; Python keeps it, and it cannot be encoded to store or print (``surrogates not
    allowed``). A pair is already one character. Costs nothing when ``text`` has no such
    escape."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return value, 0
    count = 0

    def clean(item: Any) -> Any:
        nonlocal count
        if isinstance(item, str):
            found = len(_SURROGATES.findall(item))
            if not found:
                return item
            count += found
            return _SURROGATES.sub("\ufffd", item)
        if isinstance(item, list):
            return [clean(x) for x in item]
        if isinstance(item, dict):
            return {clean(k): clean(v) for k, v in item.items()}
        return item

    return clean(value), count


SURROGATE_WARNING = (
    "line {}: a lone UTF-16 surrogate escape (what JavaScript writes for half a character) "
    "read as U+FFFD; all are counted (lone_surrogate)"
)


NO_TYPE = "not a record (no type)"
"""Why an object that is not a record (no string ``type``) is not read."""

_NOT_JSON = object()
_UNSEEN = object()
_raw_decode = json.JSONDecoder().raw_decode


class JsonLines:
    """Lines read one by one into JSON objects, tolerantly: what is not an object is left
    out and named in :attr:`not_read`. Used over a whole file (:meth:`read`) and over the
    lines ``watch`` finds appended (:meth:`feed`)."""

    def __init__(self) -> None:
        self.not_read = NotRead()
        self.skipped: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.lines = 0
        """Non-blank lines seen."""
        self._seen: set[int] = set()

    @classmethod
    def holding(
        cls, lines: int, skipped: Counter[str], warnings: list[str], not_read: NotRead
    ) -> JsonLines:
        """A reader holding what a follower's reader counted so far (a tail parser hands it
        to the importer's parse, which adds to it)."""
        reader = cls()
        reader.lines, reader.skipped = lines, skipped
        reader.warnings, reader.not_read = warnings, not_read
        return reader

    def feed(
        self,
        number: int,
        text: str,
        last: bool = False,
        decoded: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """The object on line ``number``, or None (blank, or left out and named). ``last``:
        the file's last line, with no line end yet (a file still being written).
        ``decoded``: the object this very line was decoded to already (the format's sniffer
        decoded the file's first lines: :attr:`Known.records`), not decoded again."""
        if number == 1:
            text = text.removeprefix("\ufeff")
        stripped = text.strip()
        if not stripped:
            return None
        self.lines += 1
        if len(text) > MAX_LINE_CHARS:
            self.not_read.line("line over 32 MB", number)
            return None
        if stripped.startswith(COMMENT_PREFIXES):
            self.not_read.line("comment", number)
            return None
        # A text no JSON can begin with is known at once (1 GB of junk lines is 50 million).
        obj: Any = _NOT_JSON
        if decoded is not None:
            obj = decoded
        elif stripped[0] in _JSON_STARTS:
            try:
                # json.loads(stripped) without its wrappers: the text has no white space
                # around it, so it is one JSON value exactly when the value ends the text.
                value, end = _raw_decode(stripped)
                if end == len(stripped):
                    obj = value
            except (json.JSONDecodeError, RecursionError):
                pass
        if obj is _NOT_JSON:
            if last:
                self.warnings.append(CUT_WARNING.format(number))
                self.skipped["partial_line"] += 1
                self.not_read.line("cut last line", number)
            else:
                self.not_read.line("not JSON", number)
            return None
        if not isinstance(obj, dict):
            self.not_read.line(f"not a record ({type(obj).__name__})", number)
            return None
        record: dict[str, Any] = obj
        if _SURROGATE_ESCAPE.search(stripped) is not None:  # else without_surrogates changes none
            cleaned, replaced = without_surrogates(stripped, record)
            if replaced:
                record = cleaned
                if not self.skipped["lone_surrogate"]:
                    self.warnings.append(SURROGATE_WARNING.format(number))
                self.skipped["lone_surrogate"] += replaced
        key = hash(stripped)
        if key in self._seen:
            kind = obj.get("type")
            if isinstance(kind, str) and kind in NORMAL_REPEATS:
                self.skipped[f"repeated:{kind}"] += 1
            else:
                self.not_read.line("repeats an earlier line", number)
            return None
        self._seen.add(key)
        return record

    def read(
        self, raw: str, known: Known | None = None, typed: bool = False
    ) -> list[tuple[int, dict[str, Any]]]:
        """Every object of a whole file's text, with its line number (the lines taken one at a
        time: no list of them all). With ``known``, what reading the file made of ``raw``
        already: its lines taken as they are, and the records decoded of its first lines
        taken as they were decoded. ``typed``: only records (objects with a string
        ``type``); the other objects named ``not a record (no type)``, after what reading
        the lines named (in the same pass: issue 44)."""
        out = []
        untyped: list[int] = []
        if known is None:
            lines, decoded = numbered_lines(raw, skip_blank=True), {}
        else:
            lines, decoded = numbered(known.lines, skip_blank=True), known.records
        seen, decode, surrogate = self._seen, _raw_decode, _SURROGATE_ESCAPE.search
        # A line repeats an earlier one only if that one has its uuid: a line whose uuid no
        # line had is new without hashing it whole (issue 44: 2 % of a worker's instructions).
        # Given the lines (they are kept anyway), the first of each uuid is kept by it; at a
        # second line of that uuid the first is hashed, and from then on that uuid's lines go
        # by their hash, as every line did (None: by hash).
        by_uuid: dict[str, str | None] | None = {} if known is not None else None
        for number, text, last in lines:
            # The common line, an object alone on its line past the first: taken here as
            # feed takes it, without its steps for what it is not (issue 44); any other line
            # (blank, a comment, not JSON, a lone surrogate, a repeat, one the head decoded)
            # goes through feed from the start.
            if (
                text[:1] == "{"
                and text[-1:] == "}"
                and number > 1
                and len(text) <= MAX_LINE_CHARS
                and number not in decoded
            ):
                try:
                    value, end = decode(text)
                except (json.JSONDecodeError, RecursionError):
                    value, end = None, 0
                if end == len(text) and type(value) is dict and surrogate(text) is None:
                    uuid = value.get("uuid")
                    new = False
                    if by_uuid is not None and type(uuid) is str:
                        earlier = by_uuid.get(uuid, _UNSEEN)
                        if earlier is _UNSEEN:
                            by_uuid[uuid] = text
                            new = True
                        elif earlier is not None:
                            seen.add(hash(earlier))
                            by_uuid[uuid] = None
                    if not new:
                        key = hash(text)
                        new = key not in seen
                        if new:
                            seen.add(key)
                    if new:
                        self.lines += 1
                        if typed and not isinstance(value.get("type"), str):
                            untyped.append(number)
                        else:
                            out.append((number, value))
                        continue
            obj = self.feed(number, text, last and number > 1, decoded.get(number))
            if obj is not None:
                if by_uuid is not None:
                    # read by feed, by its hash: a later line of its uuid is too
                    uuid = obj.get("uuid")
                    if type(uuid) is str:
                        earlier = by_uuid.get(uuid)
                        if earlier is not None:
                            seen.add(hash(earlier))
                        by_uuid[uuid] = None
                if typed and not isinstance(obj.get("type"), str):
                    untyped.append(number)
                else:
                    out.append((number, obj))
        for number in untyped:
            self.not_read.line(NO_TYPE, number)
        return out


@dataclass(frozen=True)
class Known:
    """What reading a JSON-lines file made of its text already, handed to its reader so that
    nothing is found or decoded twice (issue 44)."""

    lines: list[str]
    """The text's lines as :func:`engine.recordings.files.read_session` read them, each
    without its ``\\n`` (``"\\n".join(lines)`` is the text): the reader takes them as they
    are (:func:`numbered`) instead of finding each line end again (a session with one emoji
    is held 4 bytes a character whole, and every line cut out of it is scanned again to
    narrow it: 2.5 ms of marot's 2.7 MB, a sixth of ``json.loads`` of its lines)."""
    records: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The objects the format's sniffer decoded of the first lines, by line number
    (:attr:`engine.recordings.agents.protocol.Head.records`: 26 % of a Codex rollout's
    bytes)."""


_BLANK_RUN = re.compile("\n+")


def numbered_lines(
    raw: str, limit: int | None = None, *, skip_blank: bool = False
) -> Iterator[tuple[int, str, bool]]:
    """``raw``'s lines, numbered from 1, each without its end (``\\n``, ``\\r\\n`` or a
    lone ``\\r``), and whether it is a last line with no end (cut); the first ``limit`` only;
    with ``skip_blank``, empty lines are passed over (a run of them at once, not one by one).
    Only those line ends split: a U+2028 inside a JSON string stays in its line."""
    start, number, size = 0, 0, len(raw)
    while start < size and (limit is None or number < limit):
        if skip_blank and raw[start] == "\n":
            run = _BLANK_RUN.match(raw, start)
            assert run is not None
            number += run.end() - start
            start = run.end()
            continue
        end = raw.find("\n", start)
        number += 1
        if end < 0:
            text = raw[start:]
            if "\r" in text:  # old Mac line ends
                number, text = yield from _before_last_cr(number, text)
                if text:
                    yield number, text, True
                return
            yield number, text, True
            return
        text = raw[start:end]
        start = end + 1
        if text.endswith("\r"):
            text = text[:-1]
        if "\r" in text:
            number, text = yield from _before_last_cr(number, text)
        yield number, text, False


def _before_last_cr(
    number: int, text: str
) -> Generator[tuple[int, str, bool], None, tuple[int, str]]:
    """The pieces of ``text`` before its last lone ``\\r`` (an old Mac line end), each a line
    of its own numbered from ``number``; returns the next number and the last piece."""
    pieces = text.split("\r")
    for piece in pieces[:-1]:
        yield number, piece, False
        number += 1
    return number, pieces[-1]


def numbered(
    lines: list[str], limit: int | None = None, *, skip_blank: bool = False
) -> Iterator[tuple[int, str, bool]]:
    """:func:`numbered_lines` of a text split at its ``\\n`` already (:attr:`Known.lines`):
    the same numbers, lines and cut last line."""
    number = 0
    last = len(lines) - 1
    for index, text in enumerate(lines):
        if limit is not None and number >= limit:
            return
        if index == last and not text:
            return  # the text ends with a line end (or is empty)
        number += 1
        if not text:
            if not skip_blank:
                yield number, text, False
            continue
        cut = index == last
        if "\r" in text:
            if not cut and text.endswith("\r"):
                text = text[:-1]
            if "\r" in text:
                number, text = yield from _before_last_cr(number, text)
                if cut and not text:
                    return
        yield number, text, cut


def cut_result(text: str) -> tuple[str, int]:
    """``text`` whole up to :data:`MAX_RESULT_CHARS`, else its head and tail with a note
    saying how much was left out; and how many characters were."""
    if len(text) <= MAX_RESULT_CHARS:
        return text, 0
    head = MAX_RESULT_CHARS // 2
    tail = MAX_RESULT_CHARS - head
    omitted = len(text) - head - tail
    note = f"\n[… {omitted} characters left out by ctxscope's reader (a result over 4 MB) …]\n"
    return text[:head] + note + text[-tail:], omitted


ItemKind = Literal["user", "assistant", "result", "summary"]


@dataclass
class Item:
    """One conversation event of a recorded session, in order."""

    kind: ItemKind
    line: int
    created_at: datetime
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    thinking: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    tool_use_id: str = ""
    is_error: bool = False
    recorded: dict[str, Any] | None = None
    """Structured result the recording kept beside the text (Claude Code's ``toolUseResult``,
    a trajectory's return code)."""
    demonstration: bool = False
    model: str = ""
    """For assistant steps: the model that answered, when the recording says."""
    trigger: str = "auto"
    """For summaries: what started the recorded compaction (``auto`` / ``manual``)."""
    pre_tokens: int | None = None
    """For summaries: the recorded context size before the compaction."""
    input_estimate: int | None = None
    """For assistant steps of a recording that does not say what a request sent (Copilot CLI):
    ctxscope's own count of it, stored as the usage record's ``local_estimate``."""
    compaction: dict[str, Any] | None = None
    """For summaries: the recorded compaction's other figures, as the agent wrote them
    (Claude Code's ``compactMetadata``): ``post_tokens`` (the context after it),
    ``duration_ms`` (how long it took), ``cumulative_dropped_tokens`` (dropped by every
    compaction of the session so far, this one included), ``kept_messages`` (records it kept
    verbatim); kept in the compaction's stats as ``recorded_<name>``."""
    recorded_call: dict[str, Any] | None = None
    """For summaries: the call that wrote it (Claude Code's ``agent-acompact-*`` file):
    ``agent_id``, ``model``, ``usage``; kept in the compaction's stats."""
    closes_round: bool = False
    """For results: the round ended normally after this result though its step called a
    tool (aider applies an answer's edits itself; the model is not asked again)."""
    origin: dict[str, Any] | None = None
    """For user inputs: what the importer knows of where they came from, kept in the
    message's ``meta.origin`` (``{"input": "queued"}``, a harness kind:
    :mod:`engine.messages.harness`)."""


PROMPT_ROLES = frozenset({"system", "tool"})
"""The roles of the ``Parsed.hidden`` entries that are the prompt the agent sent (Claude
Code's prompt snapshot: each system block, each tool's definition): counted at import and
shown apart (:func:`engine.recordings.own_agent.recorded_prompt`); the others (Codex's
developer messages) are kept as they are."""


@dataclass
class Parsed:
    """A whole file parsed: its items and the bookkeeping the report shows."""

    fmt: str
    items: list[Item]
    title: str
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    finished: bool | None = None
    """A trajectory's exit status said the run ended normally (None: decide from the last
    assistant message)."""
    cwd: str = ""
    """The working directory the recording names (the imported session's workspace)."""
    agent_id: str | None = None
    """A subagent's id (Claude Code ``agentId``)."""
    source_session: str = ""
    """The recording's own session id."""
    children: list[Parsed] = field(default_factory=list)
    """Subagents, each stored as its own session linked to this one."""
    conversation_records: int = 0
    """User / assistant records read (the import warns when far fewer messages are stored)."""
    model: str = ""
    """The model the recording names (the session's ``model``); empty when it names none."""
    recorded: dict[str, Any] = field(default_factory=dict)
    """Facts about the recorded session beyond its conversation (its own id, ``cwd``, the
    agent's version, the context window), kept in the first user message's
    ``meta.origin["recorded"]`` and shown in the import report."""
    hidden: list[dict[str, Any]] = field(default_factory=list)
    """What the original agent sent before the first user input that is not conversation
    (Codex's developer messages and environment context; Claude Code's prompt snapshot, its
    system blocks and tools: :data:`PROMPT_ROLES`): ``{line, role, text}`` each, kept in the
    first user message's ``meta.origin["hidden_prefix"]``."""
    not_read: NotRead = field(default_factory=NotRead)
    """What this version did not understand, by kind and line (the report's "not read")."""
    agent_version: str = ""
    """The version of the agent that wrote the file, as it says (``version``,
    ``cli_version``): named beside what was not read."""
    record_keys: set[str] = field(default_factory=set)
    """What identifies this file's records (Claude Code: each ``uuid``, and ``message:<id>``
    of each API response): a companion file that repeats them copied this session's context
    (:func:`engine.recordings.claude_code.parse` with ``copied_from``)."""

    def not_read_sentences(self) -> list[str]:
        return self.not_read.sentences(self.fmt, self.agent_version)


@dataclass
class ImportReport:
    session: Session
    fmt: str = ""
    path: str = ""
    rounds: int = 0
    messages: int = 0
    missing_results: int = 0
    usage_records: int = 0
    observations: int = 0
    compactions: int = 0
    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    tokens_raw: int = 0
    """Tokens of everything recorded: texts, tool inputs, full results, thinking."""
    tokens_stored: int = 0
    """Tokens of history as stored (tool results in their A3 form; thinking not counted)."""
    thinking_tokens: int = 0
    warnings: list[str] = field(default_factory=list)
    stored_before: bool = False
    """The same bytes were stored before (``session`` holds them); nothing was written."""
    problems: list[str] = field(default_factory=list)
    children: list[ImportReport] = field(default_factory=list)
    """The subagents stored as sessions linked to this one."""
    recorded: dict[str, Any] = field(default_factory=dict)
    """:attr:`Parsed.recorded`: the recorded session's own id, cwd, agent version..."""
    round_starts: list[int] = field(default_factory=list)
    """For each round written, the position in ``Parsed.items`` of the item that opened it."""
    not_read: NotRead = field(default_factory=NotRead)
    """:attr:`Parsed.not_read`."""
    agent_version: str = ""
    not_read_sentences: list[str] = field(default_factory=list)
    """The report's "not read" lines (:meth:`NotRead.sentences`)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "parent_session_id": self.session.parent_session_id,
            "agent_id": self.session.agent_id,
            "path": self.path,
            "format": self.fmt,
            "rounds": self.rounds,
            "messages": self.messages,
            "missing_results": self.missing_results,
            "usage_records": self.usage_records,
            "observations": self.observations,
            "compactions": self.compactions,
            "records_read": self.records,
            "records_skipped": self.skipped,
            "tokens_raw": self.tokens_raw,
            "tokens_stored": self.tokens_stored,
            "thinking_tokens": self.thinking_tokens,
            "warnings": self.warnings,
            "subagents": [c.as_json() for c in self.children],
            "model": self.session.model,
            "recorded": self.recorded,
            "agent_version": self.agent_version,
            "not_read": {**self.not_read.as_json(), "summary": self.not_read_sentences},
        }


def recorded_compaction(stats: dict[str, Any]) -> str:
    """What the original agent recorded of a compaction it made, in words, from the stored
    compaction's stats: ``its context 297,190 → 16,970 tokens, 41.2 s`` ("" when nothing)."""
    pre, post = stats.get("recorded_pre_tokens"), stats.get("recorded_post_tokens")
    duration = stats.get("recorded_duration_ms")
    parts = []
    if isinstance(pre, int) and isinstance(post, int):
        parts.append(f"its context {pre:,} → {post:,} tokens")
    elif isinstance(pre, int):
        parts.append(f"its context {pre:,} tokens before")
    if isinstance(duration, int):
        parts.append(f"{duration / 1000:,.1f} s")
    return ", ".join(parts)


def title_of(items: list[Item], name: str) -> str:
    """A session's title: the first line of its first user input, else ``name`` (the file's)."""
    text = next((i.text for i in items if i.kind == "user"), name).strip()
    return text.splitlines()[0] if text else name


def numbers_named(noun: str, numbers: list[int]) -> str:
    """``line 3, 7, 9, 12, 20 and 4 more``: where a warning's cases are, the first five named."""
    shown = ", ".join(map(str, numbers[:5]))
    return f"{noun} {shown}" + (f" and {len(numbers) - 5} more" if len(numbers) > 5 else "")


def parse_time(value: Any, line: int, problems: list[str]) -> datetime | None:
    """A recorded ISO timestamp as an aware datetime (naive ones are taken as UTC)."""
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"line {line}: timestamp must be a string, got {value!r}")
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        problems.append(f"line {line}: bad timestamp {value!r}")
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def usage_of(raw: Any) -> Usage | None:
    """A recorded ``usage`` object, or None when absent or all zero (``<synthetic>`` turns)."""
    if raw is None:
        return None
    counts = _counts(raw)
    # A usage that is not plain counts: the one line naming the bad field ("usage.input_tokens
    # must be…").
    usage = Usage(**counts) if counts is not None else usage_from(raw)
    if not (usage.input_side or usage.output_tokens):
        return None
    return usage


_USAGE_FIELDS = tuple(Usage.model_fields)


def _counts(raw: Any) -> dict[str, int] | None:
    """:func:`~engine.validation.usage_from`'s counts when every one it reads is a whole
    number ≥ 0 (what every recording holds), else None (it then says which is not): the
    same reading without its per-call look-up of the model's fields (issue 44)."""
    if not isinstance(raw, dict):
        return None
    counts: dict[str, int] = {}
    for name in _USAGE_FIELDS:
        value = raw.get(name)
        if value is None:
            continue
        if type(value) is not int or value < 0:
            return None
        counts[name] = value
    split = raw.get("cache_creation")
    hour = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
    if hour is not None:
        if type(hour) is not int or hour < 0:
            return None
        counts["cache_creation_1h_input_tokens"] = hour
    return counts


def result_text(content: Any) -> str:
    """The text of a ``tool_result`` block's content (a string or text blocks)."""
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    parts.append("[image]")
        return "\n".join(parts)
    return "" if content is None else str(content)
