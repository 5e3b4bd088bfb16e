"""The artifact ledger: what a stretch of a session did, extracted deterministically.

From stored messages and their observations (the full tool results, where an exception line
past the compressed form's 2 000-character window still is) the ledger lists, in order:

| kind | key | from |
|---|---|---|
| ``file_read`` | the path | Read / NotebookRead calls; ``cat``/``head``/``tail``/… in Bash |
| ``file_changed`` | the path | Edit / MultiEdit / Write / NotebookEdit; Bash (below) |
| ``command`` | the command's first line (at most 80 characters) | Bash calls |
| ``error`` | the exception / error line (at most 120 characters) | tool results that failed |
| ``request`` | the user's words, IDE markup out (first 60 characters) | the user's own inputs |
| ``decision`` | the sentence (at most 100 characters) | final answers that state a choice |

Bash changes: ``sed -i``, ``perl -i``, ``>``/``>>`` redirects, ``tee``, ``mv``/``git mv``
(both paths), ``cp`` (the target), ``rm``/``git rm``, ``touch``.

Other agents' calls count the same way (:mod:`engine.compaction.call_files`): Codex's
``shell`` / ``shell_command`` / ``exec_command`` / ``local_shell`` are commands and
``apply_patch`` changes the files its headers name; Gemini CLI's and OpenHands' shell, read
and edit tools too. A path is kept in one form (:func:`~engine.compaction.call_files.path_key`):
Windows separators as ``/``, ``./`` folded, relative to the session's working directory when
under it, so ``C:\\Users\\x\\proj\\!\\X.md`` and ``!/X.md`` are the same file; a summary that
writes a path with backslashes still names it.

A request is a user message in the user's own words (typed, typed while the agent worked, a
slash command's arguments): what the harness writes in the user's turn, a background task's
notice, ``[Request interrupted by user…]``, a reminder, is not one
(:func:`engine.messages.harness.is_users_own`).

Every key is whitespace-normalised. :func:`ledger_recall` tells, per kind, how many items a
text (a summary, a request) still names: an item is present when its key occurs in the text,
compared case-insensitively with whitespace normalised and tags unwrapped (:func:`fold`).
Cheap enough to call per step: the text is folded once, then one substring test per item.

:func:`fidelity` is the per-compaction figure: of the ledger items of an archived segment,
how many its summary keeps, by kind.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.compaction.call_files import Subject, call_subject, facts_of, path_key
from engine.messages.harness import is_users_own
from engine.models import Message, Observation

_MEMO = 16_384
"""Texts whose ledger facts are kept (per kind: commands, answers, tool results, errors)."""

KINDS = ("file_read", "file_changed", "command", "error", "request", "decision")
"""Every ledger kind, in the order reports show them."""
KIND_NAMES = {
    "file_read": "files read",
    "file_changed": "changed",
    "command": "commands",
    "error": "errors",
    "request": "requests",
    "decision": "decisions",
}
"""Each kind as notices, panes and the report screen name it (:func:`fidelity_line`)."""
FILE_KINDS = ("file_read", "file_changed")
"""The kinds the issue's "files" target counts together."""

REQUEST_KEY_CHARS = 60
"""A request is identified by its first 60 characters (markup stripped, spaces normalised)."""
COMMAND_KEY_CHARS = 80
ERROR_KEY_CHARS = 120
DECISION_KEY_CHARS = 100

_MARKUP_DROPPED = re.compile(
    r"<(system-reminder|ide_opened_file|ide_selection|ide_diagnostics|command-message|"
    r"command-name|local-command-stdout|local-command-stderr)>.*?</\1>",
    re.S,
)
_ANY_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?>")
_DECISION = re.compile(
    r"\b(decid\w*|chose|choose|chosen|will use|switch\w* to|instead of|abandon\w*|prefer\w*)\b",
    re.I,
)
# ``KeyError: 'x'``, ``requests.exceptions.HTTPError: 404``, ``SystemExit``, ``E   ValueError``
_EXCEPTION = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|"
    r"Failure|Fault)\b(?::.*)?)$"
)
_ERROR_LINE = re.compile(r"^(?:E\s+)?((?:error|fatal|panic|FAILED|ERROR|Error)\b[:\[ ].*)$")
_LOCATED = re.compile(r"^[\w./-]+:\d+(?::\d+)?:\s+\S")


@dataclass(frozen=True)
class LedgerItem:
    """One thing the session did or said."""

    kind: str
    key: str
    """What identifies it in any text: the path, the command, the error line, the words."""
    round: int | None = None
    step: int | None = None
    message_id: int | None = None
    detail: str = ""
    """How (``edited``, ``written``, ``Bash: sed -i``, ``Bash: rm``…), or the tool that failed."""


@dataclass
class Ledger:
    """The items of a stretch of a session, in order of first appearance, one per (kind, key)."""

    items: list[LedgerItem] = field(default_factory=list)

    def of(self, kind: str) -> list[LedgerItem]:
        return [item for item in self.items if item.kind == kind]

    def counts(self) -> dict[str, int]:
        return {kind: len(self.of(kind)) for kind in KINDS}


# ---------------------------------------------------------------------- normalising
def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces, stripped."""
    return " ".join(text.split())


def strip_markup(text: str) -> str:
    """The user's own words: IDE and harness blocks removed, other tags unwrapped."""
    text = _MARKUP_DROPPED.sub(" ", text)
    return normalise(_ANY_TAG.sub(" ", text))


def _clip(text: str, limit: int) -> str:
    return text[:limit].rstrip()


def request_key(text: str) -> str:
    """The ledger key of a user message's text ('' when only markup)."""
    return _clip(strip_markup(text), REQUEST_KEY_CHARS)


def command_key(command: str) -> str:
    first = next((ln for ln in command.splitlines() if ln.strip()), "")
    return _clip(normalise(first), COMMAND_KEY_CHARS)


# ---------------------------------------------------------------------- errors
def error_line(text: str) -> str:
    """The line that says what went wrong in a tool's output.

    The last exception line (``ValueError: …``, pytest's ``E   AssertionError: …``), else the
    first ``error:``/``fatal:`` line, else the first ``path:line[:col]: message`` line (a
    compiler or linter), else the last non-empty line; markup wrappers such as
    ``<returncode>1</returncode> <output>`` are removed first.
    """
    lines = [normalise(_ANY_TAG.sub(" ", ln)) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    exceptions = [m.group(1) for ln in lines if (m := _EXCEPTION.match(ln))]
    if exceptions:
        return exceptions[-1]
    for ln in lines:
        if m := _ERROR_LINE.match(ln):
            return m.group(1)
    # a compiler's or linter's ``path:line[:col]: message``
    for ln in lines:
        if _LOCATED.match(ln):
            return ln
    # Status lines the Bash tool adds ("[nonzero_exit: …]", "[stderr]") say nothing new.
    meaningful = [ln for ln in lines if not (ln.startswith("[") and ln.endswith("]"))]
    return (meaningful or lines or [""])[-1]


def _tool_form(msg: Message) -> dict[str, Any]:
    return _parsed_form(msg.content) if isinstance(msg.content, str) else {}


@functools.lru_cache(maxsize=_MEMO)
def _parsed_form(content: str) -> dict[str, Any]:
    """A tool message's JSON form (shared between calls: read it, never change it)."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _failed_output(msg: Message, obs: Observation | None) -> str | None:
    """The whole text of a failed tool result, or None when it did not fail."""
    form = _tool_form(msg)
    failed = msg.meta.is_error or form.get("status") == "error"
    if obs is not None:
        failed = failed or obs.result.get("status") == "error"
    if not failed or msg.meta.interrupted:
        return None
    # The error message first: the output's own error line, further down, wins over it.
    error = form.get("error")
    parts: list[str] = [str(error.get("message") or "")] if isinstance(error, dict) else []
    if obs is not None:
        data = obs.result.get("data") or {}
        if isinstance(data, dict) and (data.get("stdout") or data.get("stderr")):
            parts += [str(data.get("stdout") or ""), str(data.get("stderr") or "")]
        elif not parts:
            parts.append(obs.text)
    else:
        data = form.get("data") or {}
        if isinstance(data, dict):
            parts += [str(data.get(k) or "") for k in ("output", "stderr_tail", "error_line")]
    return "\n".join(p for p in parts if p)


# ---------------------------------------------------------------------- extraction
def _observations_by_message(
    observations: Iterable[Observation],
) -> tuple[dict[int, Observation], dict[str, Observation]]:
    by_id: dict[int, Observation] = {}
    by_use: dict[str, Observation] = {}
    for obs in observations:
        if obs.message_id is not None:
            by_id[obs.message_id] = obs
        by_use.setdefault(obs.tool_use_id, obs)
    return by_id, by_use


class LedgerFold:
    """:func:`extract_ledger` one message at a time: what has been seen so far (items, keys,
    the tools called), so a longer stretch that begins with the same messages is extracted by
    adding only the rest (:mod:`engine.compaction.folding`)."""

    def __init__(self, observations: Iterable[Observation] = (), cwd: str = "") -> None:
        self._by_id, self._by_use = _observations_by_message(observations)
        self._cwd = cwd
        self._seen: set[tuple[str, str]] = set()
        self._tool_names: dict[str, str] = {}
        self.items: list[LedgerItem] = []
        """The items so far, in order of first appearance (only ever appended to)."""

    def ledger(self) -> Ledger:
        """The ledger of the messages added so far (its own list: adding more leaves it)."""
        return Ledger(list(self.items))

    def _add(self, kind: str, key: str, msg: Message, detail: str = "") -> None:
        key = normalise(key)
        if not key or (kind, key) in self._seen:
            return
        self._seen.add((kind, key))
        self.items.append(LedgerItem(kind, key, msg.meta.round, msg.meta.step, msg.id, detail))

    def add(self, msg: Message) -> None:
        """Add the items of the next message."""
        if msg.role == "user":
            if is_users_own(msg):  # not a task's notice, an interruption, a reminder
                self._add("request", request_key(msg.content), msg)
        elif msg.role == "assistant":
            self._add_calls(msg)
            if msg.meta.final and not msg.meta.interrupted:
                for key in _decision_keys(msg.content):
                    self._add("decision", key, msg)
        elif msg.role == "tool":
            obs = self._by_id.get(msg.id) if msg.id is not None else None
            if obs is None and msg.meta.tool_use_id:
                obs = self._by_use.get(msg.meta.tool_use_id)
            output = _failed_output(msg, obs)
            if output is not None:
                use_id = msg.meta.tool_use_id or ""
                tool = msg.meta.tool_name or self._tool_names.get(use_id, "tool")
                self._add("error", _error_key(output), msg, tool)

    def _add_calls(self, msg: Message) -> None:
        for call in msg.tool_calls:
            self._tool_names[call.id] = call.name
            subject = call_subject(call.name, call.input)
            if subject is None:
                continue
            command, changed, read = _call_keys(call.name, subject, self._cwd)
            if command:
                self._add("command", command, msg)
            for path, how in changed:
                self._add("file_changed", path, msg, how)
            for path in read:
                self._add("file_read", path, msg)


def extract_ledger(
    messages: Sequence[Message], observations: Iterable[Observation] = (), cwd: str = ""
) -> Ledger:
    """The ledger of ``messages`` (in order); ``observations`` supply full tool results;
    paths under ``cwd`` (the session's working directory) are kept relative to it."""
    fold = LedgerFold(observations, cwd)
    for msg in messages:
        fold.add(msg)
    return Ledger(fold.items)


# A ledger is extracted again and again from the same messages (a strategy that re-compacts
# summarises everything archived so far at each compaction, three times: the facts, the
# inventory, the fidelity): what each text gives is worked out once. Pure functions of text.
@functools.lru_cache(maxsize=_MEMO)
def _call_keys(
    name: str, subject: Subject, cwd: str
) -> tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """A call's ledger keys: its command's, and the paths it changes (with how) and reads."""
    facts = facts_of(name, subject)
    return (
        command_key(facts.command) if facts.command else "",
        tuple((path_key(p, cwd, facts.workdir), how) for p, how in facts.changed),
        tuple(path_key(p, cwd, facts.workdir) for p in facts.read),
    )


@functools.lru_cache(maxsize=_MEMO)
def _decision_keys(content: str) -> tuple[str, ...]:
    """The ledger keys of the decisions a final answer states, in order."""
    return tuple(
        _clip(normalise(sentence), DECISION_KEY_CHARS)
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", content)
        if _DECISION.search(sentence)
    )


@functools.lru_cache(maxsize=_MEMO)
def _error_key(output: str) -> str:
    return _clip(error_line(output), ERROR_KEY_CHARS)


# ---------------------------------------------------------------------- presence
def fold(text: str) -> str:
    """``text`` as keys and texts are compared: tags unwrapped (a request's key has none, the
    message as sent may wrap it, ``<pr_description>…</pr_description>``), whitespace
    normalised, case-folded."""
    return normalise(_ANY_TAG.sub(" ", text)).casefold()


def present(items: Sequence[LedgerItem], text: str) -> list[bool]:
    """For each item, whether ``text`` names it (its key; case, spacing and tags aside; a
    file also when the text writes its path with backslashes)."""
    haystack = fold(text)
    slashed = haystack.replace("\\", "/") if "\\" in haystack else haystack
    return [fold(item.key) in (slashed if item.kind in FILE_KINDS else haystack) for item in items]


def ledger_counts(items: Sequence[LedgerItem], text: str) -> dict[str, tuple[int, int]]:
    """``{kind: (kept, total)}`` for every kind in :data:`KINDS` (``(0, 0)`` when none)."""
    out = {kind: [0, 0] for kind in KINDS}
    for item, here in zip(items, present(items, text), strict=True):
        pair = out.setdefault(item.kind, [0, 0])
        pair[1] += 1
        pair[0] += int(here)
    return {kind: (kept, total) for kind, (kept, total) in out.items()}


def ledger_recall(items: Sequence[LedgerItem], text: str) -> dict[str, float | None]:
    """Per kind, the fraction of ``items`` that ``text`` still names (None: no such item)."""
    return {
        kind: (kept / total if total else None)
        for kind, (kept, total) in ledger_counts(items, text).items()
    }


def fidelity(
    segment_messages: Sequence[Message],
    observations: Iterable[Observation],
    summary_text: str,
    cwd: str = "",
) -> dict[str, tuple[int, int]]:
    """Of the archived segment's ledger items, how many the summary keeps: ``{kind: (kept,
    total)}``, every kind present (``(0, 0)`` when the segment has none of it). Paths under
    ``cwd`` (the session's working directory) are compared relative to it."""
    ledger = extract_ledger(segment_messages, observations, cwd)
    return ledger_counts(ledger.items, summary_text)


def fidelity_json(figures: dict[str, tuple[int, int]]) -> dict[str, dict[str, int]]:
    """The stored / ``--json`` form: ``{kind: {kept, total}}``."""
    return {kind: {"kept": kept, "total": total} for kind, (kept, total) in figures.items()}


def fidelity_line(figures: dict[str, Any]) -> str:
    """``files read 3/4 · changed 2/2 · errors 1/1 …`` for notices and panes (kinds with items).

    Takes either form (:func:`fidelity` or :func:`fidelity_json`).
    """
    parts = []
    for kind in KINDS:
        value = figures.get(kind)
        if value is None:
            continue
        kept, total = (value["kept"], value["total"]) if isinstance(value, dict) else value
        if total:
            parts.append(f"{KIND_NAMES[kind]} {kept}/{total}")
    return " · ".join(parts) if parts else "nothing to keep"


class ObservationSource(Protocol):
    """What :func:`measure_fidelity` needs from the store."""

    def observations_for_messages(self, message_ids: list[int]) -> list[Observation]: ...


def measure_fidelity(
    store: ObservationSource, segment: Sequence[Message], summary_text: str | None
) -> dict[str, dict[str, int]] | None:
    """The stored form of :func:`fidelity` for a compaction (None without a summary); the
    observations of the segment's tool messages are read from ``store``."""
    if summary_text is None:
        return None
    ids = [m.id for m in segment if m.role == "tool" and m.id is not None]
    observations = store.observations_for_messages(ids) if ids else []
    return fidelity_json(fidelity(segment, observations, summary_text))
