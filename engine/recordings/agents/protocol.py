"""What every recorded agent's module gives ctxscope: one small interface (:class:`AgentFormat`).

An agent's module (``engine/recordings/agents/<agent>.py``) says how to tell its files
(:meth:`AgentFormat.looks_like`), read them (:meth:`~AgentFormat.parse`), follow them as they
grow (:meth:`~AgentFormat.tail_parser`), where the agent keeps them
(:meth:`~AgentFormat.home_folders`), which files belong to a session besides its own
(:meth:`~AgentFormat.companions`: Claude Code's subagents) and the agent's **context rules**
(:meth:`~AgentFormat.context_rules`: its window and where it compacts on its own, each with
the words that say where the figure comes from). The registry
(:mod:`engine.recordings.agents`) holds one of each, in sniffing order; nothing outside the
package names an agent.

The readers themselves (``engine/recordings/claude_code.py``, ``codex.py``…) stay where they
are: an agent's module wraps its reader and delegates to it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from engine.recordings.base import (
    ImportError_,
    Known,
    NotRead,
    Parsed,
    numbered,
    numbered_lines,
    without_surrogates,
)
from engine.recordings.files import SessionText
from engine.settings.config import Settings

HEAD_RECORDS = 50
"""Lines of a JSON-lines file the sniffer reads for a record it knows (the importer's rule)."""


@dataclass(frozen=True)
class ContextRules:
    """A recorded agent's window and the point where it compacts on its own, with their
    sources in words a user reads."""

    window: int
    """The context window the agent worked with, in tokens."""
    auto_compact_at: int | None
    """Where the agent compacts on its own (None: it does not, or ctxscope does not know)."""
    window_source: str
    """Where ``window`` comes from, e.g. ``claude-opus-5's window in genai-prices``."""
    trigger_source: str
    """Where ``auto_compact_at`` comes from, e.g. ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=400000,
    less 33,000 …``; or why there is none."""
    project_files: tuple[str, ...] = ()
    """The project's own settings files the rules read (Claude Code's
    ``<cwd>/.claude/settings.local.json`` and ``settings.json``, there or not); ``()``: none."""
    project_fields: tuple[str, ...] = ()
    """What the rules read of those files, as dotted paths (``env.DISABLE_AUTO_COMPACT``,
    ``modelSettings.*.autoCompactWindow``): the stored figures are keyed by these fields'
    values (:func:`engine.recordings.figures.project_part`), not by the rest of a file."""
    times_recorded: bool = True
    """Whether the agent's files say when each step happened. False (SWE-agent's and
    mini-swe-agent's trajectories): the times stored are the import's, and no surface shows
    them as the session's (:func:`engine.figures.session_times`)."""

    def until(self, context_tokens: int) -> int | None:
        """Tokens left before the agent compacts, for a context of ``context_tokens``."""
        if self.auto_compact_at is None:
            return None
        return max(0, self.auto_compact_at - context_tokens)


@dataclass(frozen=True)
class Folder:
    """A folder to read and the agent whose sessions it holds (``""``: any format)."""

    path: Path
    agent: str


@dataclass(frozen=True)
class Recorded:
    """What the context rules read of a recorded session, the same whether it was just parsed
    (:func:`recorded_of_parsed`) or is read back from the store."""

    model: str = ""
    """The model the recording names (for Claude Code with its ``[1m]`` suffix, if any)."""
    largest_call: int = 0
    """The most a recorded call held in the window: its input side (input, cache read, cache
    write) and its output (the API refuses a call whose input and output do not fit)."""
    largest_pre_compaction: int = 0
    """The largest context the agent recorded before one of its compactions (``preTokens``)."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    """:attr:`~engine.recordings.base.Parsed.recorded`: the recorded window (Codex's
    ``model_context_window``), betas, the agent's version…"""
    agent_version: str = ""
    cwd: str = ""
    """The working directory the session ran in (its project's agent settings are there)."""
    request_betas: tuple[str, ...] = ()
    """For a proxied session: the betas its latest request named in ``anthropic-beta`` (the
    API gives a model its 1M window for ``context-1m-2025-08-07``); ``()`` for a recording."""


def recorded_of_parsed(parsed: Parsed) -> Recorded:
    """The facts the context rules read, from a parsed recording."""
    steps = [i for i in parsed.items if i.kind == "assistant"]
    model = parsed.model or next((s.model for s in reversed(steps) if s.model), "")
    return Recorded(
        model=model,
        largest_call=max(
            (s.usage.input_side + s.usage.output_tokens for s in steps if s.usage), default=0
        ),
        largest_pre_compaction=max(
            (i.pre_tokens or 0 for i in parsed.items if i.kind == "summary"), default=0
        ),
        facts=parsed.recorded,
        agent_version=parsed.agent_version,
        cwd=parsed.cwd,
    )


class Head:
    """The start of a file as the sniffer sees it: its text, the whole text as JSON (for
    the formats that are one JSON document), and its first records (JSON lines)."""

    def __init__(
        self, raw: str, records: list[Any] | None = None, lines: list[str] | None = None
    ) -> None:
        self.raw = raw.removeprefix("\ufeff")
        self._records = records
        self._lines = lines
        self._decoded: dict[int, dict[str, Any]] = {}

    @classmethod
    def of_records(cls, records: list[Any]) -> Head:
        """A head made of records already read (``watch`` reads lines, not a file)."""
        return cls("", records)

    @classmethod
    def of_read(cls, read: SessionText) -> Head:
        """The head of a file as :func:`~engine.recordings.files.read_session` read it: a
        JSON-lines file's records decoded from the lines it was read as."""
        return cls(read.text, lines=read.lines)

    @cached_property
    def whole(self) -> Any:
        """The whole text as one JSON value (None: it is not one)."""
        stripped = self.raw.lstrip()
        if not stripped.startswith(("{", "[")):
            return None
        try:
            return json.loads(self.raw)
        except (json.JSONDecodeError, RecursionError):
            return None

    @property
    def starts_as_json(self) -> bool:
        return self.raw.lstrip().startswith(("{", "["))

    @cached_property
    def records(self) -> list[Any]:
        """The first :data:`HEAD_RECORDS` lines, each as JSON (None for a line that is not)."""
        if self._records is not None:
            return self._records
        if self._lines is None:
            lines = numbered_lines(self.raw, HEAD_RECORDS)  # never the whole file split
        else:
            lines = numbered(self._lines, HEAD_RECORDS)
        out: list[Any] = []
        for number, line, _ in lines:
            try:
                record = json.loads(line.removeprefix("\ufeff") if number == 1 else line)
            except (json.JSONDecodeError, RecursionError):
                record = None
            out.append(record)
            if isinstance(record, dict):
                self._decoded[number] = record
        return out

    def known(self) -> Known | None:
        """What the file's reader need not do again (:class:`~engine.recordings.base.Known`):
        the lines it was read as, and the objects :attr:`records` decoded of them (as far as
        the sniffers asked); None for a file read whole."""
        if self._lines is None:
            return None
        return Known(self._lines, self._decoded)


def load_document(text: str) -> tuple[Any, int]:
    """A whole-document format's text as JSON, with every lone UTF-16 surrogate escape read as
    U+FFFD, and how many were (:func:`engine.recordings.base.without_surrogates`); raises
    ``json.JSONDecodeError`` as ``json.loads`` does."""
    text = text.removeprefix("\ufeff")
    return without_surrogates(text, json.loads(text))


def checked(*sessions: Parsed) -> list[Parsed]:
    """``sessions`` as an agent's ``parse`` returns them: each checked as the importer stores
    it (:func:`engine.recordings.writer.check`); raises :class:`ImportError_` with the first
    session's problems."""
    from engine.recordings.writer import check

    for parsed in sessions:
        problems = check(parsed)
        if problems:
            raise ImportError_(problems, parsed.fmt)
    return list(sessions)


class Standalone:
    """What an agent without the rest has: not followed, no home folder ctxscope reads, no
    companion files. An agent module takes these from here and defines what it has."""

    follow_glob: str | None = None
    records_times = True

    def tail_parser(self, path: Path) -> TailParser | None:
        return None

    def home_folders(self, env: Mapping[str, str], settings: Settings) -> list[Folder]:
        return []

    def companions(self, path: Path) -> list[Path]:
        return []

    def is_companion(self, relative: Path) -> bool:
        return False

    def orphaned(self, path: Path) -> bool:
        return False


def count_surrogates(parsed: Parsed, found: int) -> Parsed:
    """Say in ``parsed`` that ``found`` lone surrogates were replaced (none: unchanged)."""
    if found:
        parsed.skipped["lone_surrogate"] += found
        parsed.warnings.append(
            f"{found} lone UTF-16 surrogate escape(s) (what JavaScript writes for half a "
            "character) read as U+FFFD"
        )
    return parsed


class TailParser(Protocol):
    """How ``watch`` parses a followed file's records so far (the reader's own parse, so a
    file followed and the same file imported give the same items)."""

    def parse(
        self,
        records: list[tuple[int, dict[str, Any]]],
        lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed: ...

    def check(self, parsed: Parsed) -> list[str]:
        """Problems that keep the parse from being stored (yet)."""
        ...


class AgentFormat(Protocol):
    """One recorded agent (or one file format of it): everything ctxscope knows of it."""

    @property
    def name(self) -> str:
        """The format's name, as stored and printed (``claude-code``, ``codex``…)."""
        ...

    @property
    def label(self) -> str:
        """The agent in words (``Claude Code``)."""
        ...

    @property
    def records_times(self) -> bool:
        """Whether the agent's files say when each step happened (False: SWE-agent's and
        mini-swe-agent's trajectories, whose stored times are the import's); its rules carry
        it (``ContextRules.times_recorded``)."""
        ...

    @property
    def follow_glob(self) -> str | None:
        """The agent's session files under one of its home folders, for ``watch`` to find
        the newest (``*/*.jsonl``); None: not followed."""
        ...

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        """Where the head first shows this agent's format: 0 for a whole-file format, the
        index of the first record it claims for a JSON-lines one; None: not this format. The
        registry takes the earliest, then the first in sniffing order."""
        ...

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        """Every session of the file (an aider history may hold several), with its companion
        files read in; raises :class:`~engine.recordings.base.ImportError_`. ``known``: what
        reading a JSON-lines file made of ``text`` already (:meth:`Head.known`), which its
        reader takes instead of doing it again; a whole-document format has none."""
        ...

    def tail_parser(self, path: Path) -> TailParser | None:
        """The parser ``watch`` follows ``path`` with (None: this format is not followed)."""
        ...

    def home_folders(self, env: Mapping[str, str], settings: Settings) -> list[Folder]:
        """Where the agent keeps its sessions on this machine (existing or not)."""
        ...

    def companions(self, path: Path) -> list[Path]:
        """Files read with the session ``path`` (Claude Code's subagents and compaction
        calls); ``[]`` for agents without any."""
        ...

    def is_companion(self, relative: Path) -> bool:
        """Whether a file found in a folder (``relative`` to it) is read with its session,
        never on its own."""
        ...

    def orphaned(self, path: Path) -> bool:
        """Whether ``path``, a companion file, is without the session it belongs to (a
        folder walk counts it as such instead of reading it)."""
        ...

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        """The agent's window and auto-compact point for a session that recorded
        ``recorded``, from the recording, the user's agent settings (found through ``env``:
        ``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``) and the agent's documented
        defaults last."""
        ...


def home_of(env: Mapping[str, str]) -> Path:
    """The user's home as the agents themselves find it (``HOME``)."""
    return Path(env.get("HOME") or Path.home())


def model_window(model: str, settings: Settings) -> tuple[int, str]:
    """A model's window from the price data (genai-prices knows each model's), else
    ``watch_context_window`` named as the documented default."""
    from engine.figures.prices import listed_context_window

    window = listed_context_window(model)
    if window:
        return window, f"{model}'s window in genai-prices"
    what = f"{model} is not in genai-prices" if model else "no model recorded"
    return (
        settings.watch_context_window,
        f"{what}: the default window (watch_context_window {settings.watch_context_window:,})",
    )


def no_trigger(label: str) -> str:
    return f"{label} has no auto compaction ctxscope knows of"


def window_without_trigger(label: str, recorded: Recorded, settings: Settings) -> ContextRules:
    """The rules of an agent that does not compact on its own (``label``): its model's window
    (:func:`model_window`), and no trigger."""
    window, source = model_window(recorded.model, settings)
    return ContextRules(window, None, source, no_trigger(label))
