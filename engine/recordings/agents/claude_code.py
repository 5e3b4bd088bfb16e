"""Claude Code: its session files, their subagents, and its window and auto-compact rule.

Files: ``~/.claude/projects/<project>/<session>.jsonl`` (``$CLAUDE_CONFIG_DIR/projects`` too),
read by :mod:`engine.recordings.claude_code` and followed by its
:class:`~engine.recordings.claude_code_follow.TailParser`; beside a session,
``<session>/subagents/agent-*.jsonl`` are its subagents (each a child session) and
``agent-acompact-*`` the calls that wrote its compactions' summaries.

Settings are Claude Code's own, highest first: the environment, the project's
``.claude/settings.local.json`` and ``.claude/settings.json`` (in the recorded working
directory), the user's ``settings.json`` (a file's ``env`` block counts as the environment:
:mod:`~engine.recordings.agents.claude_code_settings`).

**Window** (first that applies):

0. for a session recorded through ``ctxscope proxy``: the ``context-1m`` beta
   (``context-1m-2025-08-07``) in its latest request's ``anthropic-beta`` header, stored with
   the request: 1 000 000 (the header is what the API gave the window for; without it, the
   rules below, so ``claude-sonnet-4-6`` has 200 000);
1. ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` set: the standard window, 200 000;
2. a ``[1m]`` suffix on the model id (``claude-opus-4-7[1m]``): 1 000 000;
3. the ``context-1m`` beta, where the recording names it (``betas``) or ``ANTHROPIC_BETAS``
   asks for it: 1 000 000;
4. proof in the recording: a call over 200 000 tokens (input and output), or a compaction whose
   ``preTokens`` exceed 200 000 — only the 1M window holds either;
5. the model's window in genai-prices, when that window is the model's standard one
   (``claude-opus-5``: 1 000 000; ``claude-haiku-4-5``: 200 000); a model whose price data
   charges more above 200 000 input tokens (``claude-sonnet-4-6``, ``claude-opus-4-6``) has its
   1M window as an opt-in long context, and Claude Code gives it 200 000 unless 1–4 say so;
6. ``watch_context_window`` (200 000), Claude Code's documented default.

**Auto-compact point**: the window, capped by ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``, else by
``modelSettings.<model>.autoCompactWindow``, else by ``autoCompactWindow`` (never under
100 000 nor over the window), less ``watch_compact_reserve`` (33 000: 20 000 kept for the
summary's output and a 13 000 buffer, Claude Code's ``window − min(max output, 20 000) −
13 000``): 200 000 → 167 000 (the corpus' auto compaction fired at 167 094), 1 000 000 →
967 000. ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` (1–100) only lowers it, to that share of the
window less the 20 000. ``DISABLE_AUTO_COMPACT`` or ``autoCompactEnabled: false``: none.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.figures.prices import listed_context_window, long_context_priced
from engine.recordings import claude_code
from engine.recordings.agents.claude_code_settings import (
    WINDOW_FIELDS,
    ClaudeSettings,
    flag,
    project_files,
    tokens,
)
from engine.recordings.agents.protocol import (
    ContextRules,
    Folder,
    Head,
    Recorded,
    TailParser,
    home_of,
)
from engine.recordings.base import ImportError_, Known, NotRead, Parsed
from engine.recordings.claude_code_follow import TailParser as ClaudeTail
from engine.recordings.files import read_session
from engine.recordings.writer import check
from engine.settings.config import Settings

STANDARD_WINDOW = 200_000
"""Claude Code's standard window (its docs: "200K tokens"; the 2.1.2xx binary's default
window constant); a request larger than this proves the 1M window."""
LONG_WINDOW = 1_000_000
"""The 1M window Claude Code selects with a ``[1m]`` model suffix or the ``context-1m`` beta."""
SUMMARY_RESERVE = 20_000
"""What Claude Code keeps free for the summary's output (``min(max output, 20,000)``) before
its 13,000 buffer; ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` is a share of the window less this."""
BETA_1M = "context-1m"
"""The beta header that gives Claude models the 1M window (``context-1m-2025-08-07``)."""
MIN_COMPACT_WINDOW = 100_000
"""``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` below this is raised to it (Claude Code's minimum: a
value of ``200k`` is read as 200 and raised to 100,000, as the Esonhugh/claude-code wiki's
"Compaction" page documents)."""
_ONE_M = re.compile(r"\[1m\]", re.IGNORECASE)


class ClaudeCode:
    """Claude Code session files."""

    name = claude_code.FORMAT
    label = "Claude Code"
    records_times = True
    follow_glob = "*/*.jsonl"
    """``projects/<project>/<session>.jsonl``."""

    def looks_like(self, path: Path | None, head: Head) -> int | None:
        return next((n for n, r in enumerate(head.records) if claude_code.looks_like(r)), None)

    def parse(self, path: Path, text: str, known: Known | None = None) -> list[Parsed]:
        parsed = claude_code.parse(text, path.name, known=known)
        problems = check(parsed)
        if problems:
            raise ImportError_(problems, parsed.fmt)
        self._add_companions(path, parsed)
        return [parsed]

    def tail_parser(self, path: Path) -> TailParser | None:
        return _FollowedSession(path)

    def home_folders(self, env: Mapping[str, str], settings: Settings) -> list[Folder]:
        wanted = []
        if settings.watch_claude_dir is not None:
            wanted.append(Folder(settings.watch_claude_dir, self.name))
        wanted.append(Folder(home_of(env) / ".claude" / "projects", self.name))
        if env.get("CLAUDE_CONFIG_DIR"):
            wanted.append(Folder(Path(env["CLAUDE_CONFIG_DIR"]) / "projects", self.name))
        return wanted

    def companions(self, path: Path) -> list[Path]:
        folder = path.with_suffix("") / "subagents"
        if path.suffix != ".jsonl" or not folder.is_dir():
            return []
        return sorted(folder.glob("agent-*.jsonl"))

    def is_companion(self, relative: Path) -> bool:
        return "subagents" in relative.parts or relative.name.startswith("agent-")

    def orphaned(self, path: Path) -> bool:
        """Read with ``<session>.jsonl`` when it is ``<session>/subagents/agent-*.jsonl``."""
        return not (
            path.parent.name == "subagents" and path.parent.parent.with_suffix(".jsonl").is_file()
        )

    def retention_warning(self, env: Mapping[str, str]) -> str | None:
        """Claude Code deletes its transcripts after ``cleanupPeriodDays`` (30 by default):
        said while the setting is at its default (:mod:`engine.recordings.retention`)."""
        from engine.recordings.retention import cleanup_warning

        return cleanup_warning(env)

    def context_rules(
        self, recorded: Recorded, settings: Settings, env: Mapping[str, str]
    ) -> ContextRules:
        config = ClaudeSettings(env, recorded.cwd)
        window, window_source = self._window(recorded, settings, config)
        at, trigger_source = self._trigger(recorded.model, window, settings, config)
        read = tuple(str(p) for p in project_files(recorded.cwd)) if recorded.cwd else ()
        return ContextRules(window, at, window_source, trigger_source, read, WINDOW_FIELDS)

    def _window(
        self, recorded: Recorded, settings: Settings, config: ClaudeSettings
    ) -> tuple[int, str]:
        model = recorded.model
        asked_for = next((b for b in recorded.request_betas if BETA_1M in b), None)
        if asked_for is not None:  # what the request sent is what the API gave it
            return LONG_WINDOW, f"the {asked_for} beta in its latest request's anthropic-beta"
        disabled = config.variable("CLAUDE_CODE_DISABLE_1M_CONTEXT")
        if disabled and flag(disabled[0]):
            return STANDARD_WINDOW, f"{disabled[1]}: the 200,000 window"
        if _ONE_M.search(model):
            return LONG_WINDOW, f"the [1m] suffix of {model}"
        betas = recorded.facts.get("betas")
        if isinstance(betas, list | str) and any(BETA_1M in str(b) for b in betas):
            return LONG_WINDOW, f"the {BETA_1M} beta the recording names"
        asked = config.variable("ANTHROPIC_BETAS")
        if asked and BETA_1M in asked[0]:
            return LONG_WINDOW, f"the {BETA_1M} beta ({asked[1]})"
        if recorded.largest_call > STANDARD_WINDOW:
            return LONG_WINDOW, (
                f"a recorded call of {recorded.largest_call:,} tokens, input and output "
                f"(over 200,000: the 1M window)"
            )
        if recorded.largest_pre_compaction > STANDARD_WINDOW:
            return LONG_WINDOW, (
                f"a compaction at {recorded.largest_pre_compaction:,} tokens "
                f"(over 200,000: the 1M window)"
            )
        listed = listed_context_window(model)
        if listed and listed > STANDARD_WINDOW and long_context_priced(model):
            return STANDARD_WINDOW, (
                f"Claude Code's 200,000 window ({model}'s {listed:,} in genai-prices is a "
                f"long context, priced higher over 200,000, opt-in with [1m])"
            )
        if listed:
            return listed, f"{model}'s window in genai-prices"
        what = f"{model} is not in genai-prices" if model else "no model recorded"
        return settings.watch_context_window, (
            f"{what}: Claude Code's default window (watch_context_window)"
        )

    def _trigger(
        self, model: str, window: int, settings: Settings, config: ClaudeSettings
    ) -> tuple[int | None, str]:
        off = config.variable("DISABLE_AUTO_COMPACT")
        if off and flag(off[0]):
            return None, f"{off[1]}: Claude Code does not compact on its own"
        enabled = config.value("autoCompactEnabled")
        if enabled is not None and enabled[0] is False:
            return None, f"autoCompactEnabled is false in {enabled[1]}"
        reserve = settings.watch_compact_reserve
        less = f"less {reserve:,} (Claude Code's 20,000 for the summary and 13,000 buffer)"
        cap, named = _compact_window(model, config)
        used = window if cap is None else min(window, max(MIN_COMPACT_WINDOW, cap))
        at = used - reserve
        source = f"the window {window:,} {less}" if cap is None else f"{named} (so {used:,}) {less}"
        percent = config.variable("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
        share = _percent(percent[0]) if percent else None
        if percent and share is not None:
            # It lowers the point only: a share of the window less the summary's reserve.
            lowered = int((used - SUMMARY_RESERVE) * share / 100)
            if lowered < at:
                return lowered, (
                    f"{percent[1]}: {share:g} % of {used - SUMMARY_RESERVE:,} (the window "
                    f"{used:,} less Claude Code's 20,000 for the summary)"
                )
        return at, source

    def _add_companions(self, path: Path, parsed: Parsed) -> None:
        """Each subagent a child session; an ``agent-acompact-*`` file is the call that
        wrote a compaction's summary and goes to that compaction. A subagent file that cannot
        be read is a warning, not a refusal of its parent."""
        for file in self.companions(path):
            try:
                read = read_session(file)
                child = claude_code.parse(read.text, file.name, parsed.record_keys, read.known())
                if file.name.startswith("agent-acompact"):
                    _attach_compaction_call(parsed, child, file.name)
                    continue
                problems = check(child)
                if problems:
                    raise ImportError_(problems, child.fmt)
            except (ImportError_, OSError, UnicodeDecodeError) as exc:
                parsed.warnings.append(f"subagent {file.name}: not imported: {exc}")
                parsed.skipped["subagent"] += 1
                continue
            child.agent_id = child.agent_id or file.stem.removeprefix("agent-")
            parsed.children.append(child)


class _FollowedSession:
    """``watch``'s parse of a session file: Claude Code's tail parser, and the calls that
    wrote its compactions' summaries (``agent-acompact-*`` beside it) attached as ``import``
    attaches them, each file parsed again only when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tail = ClaudeTail(path.name)
        self._calls: dict[Path, tuple[tuple[int, int], Parsed | None]] = {}

    def parse(
        self,
        records: list[tuple[int, dict[str, Any]]],
        lines: int,
        skipped: Counter[str],
        warnings: list[str],
        not_read: NotRead,
    ) -> Parsed:
        parsed = self.tail.parse(records, lines, skipped, warnings, not_read)
        summaries = [i for i in parsed.items if i.kind == "summary"]
        if summaries:
            for summary in summaries:  # the parser may keep items between looks: anew each time
                summary.recorded_call = None
            for file in AGENT.companions(self.path):
                if file.name.startswith("agent-acompact"):
                    call = self._call(file, parsed)
                    if call is not None:
                        _attach_compaction_call(parsed, call, file.name)
        return parsed

    def check(self, parsed: Parsed) -> list[str]:
        return self.tail.check(parsed)

    def _call(self, file: Path, parsed: Parsed) -> Parsed | None:
        try:
            st = file.stat()
            stamp = (st.st_size, st.st_mtime_ns)
            cached = self._calls.get(file)
            if cached is None or cached[0] != stamp:
                read = read_session(file)
                call = claude_code.parse(read.text, file.name, parsed.record_keys, read.known())
                self._calls[file] = (stamp, call)
        except (ImportError_, OSError, UnicodeDecodeError):
            self._calls[file] = ((-1, -1), None)  # read again once it changes
        return self._calls[file][1]


def _attach_compaction_call(parsed: Parsed, call: Parsed, name: str) -> None:
    """The compaction whose summary ``call`` wrote: the first one at or after its last record
    (the summary is written when the call ends), else the last one. Its cost is its usage."""
    summaries = [i for i in parsed.items if i.kind == "summary"]
    if not summaries:
        parsed.warnings.append(f"subagent {name}: a compaction call, but no compaction recorded")
        parsed.skipped["subagent"] += 1
        return
    ended = max((i.created_at for i in call.items), default=None)
    target = next((s for s in summaries if ended is None or s.created_at >= ended), summaries[-1])
    steps = [i for i in call.items if i.kind == "assistant"]
    usage: dict[str, int] = {}
    for step in steps:
        for key, value in (step.usage.model_dump() if step.usage else {}).items():
            usage[key] = usage.get(key, 0) + int(value)
    earlier = target.recorded_call
    target.recorded_call = {
        "agent_id": call.agent_id or name.removeprefix("agent-").removesuffix(".jsonl"),
        "model": next((s.model for s in steps if s.model), ""),
        "usage": usage,
    }
    if earlier is not None:  # another compaction agent for the same boundary (issue 41)
        extra = earlier.pop("duplicate_calls", [])
        target.recorded_call["duplicate_calls"] = [*extra, earlier]


def _percent(value: str) -> float | None:
    """``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` as a percentage: Claude Code 2.1.4x read it as a
    percentage up to 100 (``80``), later versions as a fraction (``0.8``;
    anthropics/claude-code#27037, jundot/omlx#2400), so a value up to 1 is a fraction; over
    100, ignored as Claude Code ignores it."""
    try:
        share = float(value)
    except ValueError:
        return None
    if 0 < share <= 1:
        return share * 100
    return share if 1 < share <= 100 else None


def _compact_window(model: str, config: ClaudeSettings) -> tuple[int | None, str]:
    """The auto-compact window the user set, and where: the variable first (the environment,
    then a settings file's ``env``), then ``modelSettings.<model>.autoCompactWindow``, then
    ``autoCompactWindow``."""
    variable = config.variable("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    if variable and tokens(variable[0]):
        return tokens(variable[0]), variable[1]
    per_model = config.model_value([model, _ONE_M.sub("", model)], "autoCompactWindow")
    if per_model and tokens(per_model[0]):
        value = tokens(per_model[0])
        return value, f"modelSettings.{per_model[1]}.autoCompactWindow {value:,} in {per_model[2]}"
    top = config.value("autoCompactWindow")
    if top and tokens(top[0]):
        value = tokens(top[0])
        return value, f"autoCompactWindow {value:,} in {top[1]}"
    return None, ""


AGENT = ClaudeCode()
