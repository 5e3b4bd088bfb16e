"""The engine's last resort: no request larger than the context window is ever sent.

A strategy decides when and what to compact; some check only between rounds (seeds 000, 001,
003), and no strategy's cut can make room when one step's results alone exceed the window. So
after the strategy had its say, and before every request, the engine measures the request and,
while it is over ``context_window``:

1. sets aside the round's *older* steps' observations, oldest first: each tool result is sent
   as a one-line pointer naming the call and its observation id (the full text stays in the
   session's observations, ``ctxscope show --observations``, and the Recall tool finds it;
   history keeps its compressed copy for later rounds) — the tool calls themselves stay, so
   the round's plan survives;
2. archives earlier history by the strategy's emergency cut (a recorded compaction), when
   that cut leaves the round's newest step in place;
3. sets aside the newest step's observations too, oldest first;
4. and only then lets the emergency cut take what it takes.

A notice names what was shrunk. If the request still does not fit, the round fails instead of
sending it. A window smaller than the system prompt, tools and input together is left to the
provider (nothing the engine holds can make room; the API refuses such a request).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from engine.compaction.records import CompactionDraft, CompactionResult
from engine.context.builder import BuiltContext, ScratchResult, ScratchStep
from engine.events import Notice
from engine.messages.tokens import BLOCK_OVERHEAD, count_text
from engine.models import Message, ToolCall, Trigger
from engine.session.core import AgentCore
from engine.session.steering import Steering
from engine.session.writer import WriterLease
from tools.base import RecallHit

SET_ASIDE = "[observation set aside to fit the context window: "
"""How a pointer in place of an observation begins."""
MAX_ARGS_CHARS = 120
NAMED_IN_NOTICE = 6
SNIPPET_CHARS = 160
"""Characters of a set-aside observation around its first match in a Recall hit."""
UNSHRINKABLE = ("L1 system", "L1 tools", "L2 CODE_LAW", "current input", "todo recap")
"""The layers of a request the engine cannot shrink."""


def pointer_text(call: ToolCall | None, result: ScratchResult, tokens: int) -> str:
    """The line an observation set aside is sent as."""
    args = json.dumps(call.input, ensure_ascii=False, separators=(",", ":")) if call else "{}"
    if len(args) > MAX_ARGS_CHARS:
        args = args[: MAX_ARGS_CHARS - 1] + "…"
    return (
        f"{SET_ASIDE}{result.tool_name}{args}, {tokens:,} tokens; observation id "
        f"{result.tool_use_id}. The full text is kept in the session: Recall finds it, or call "
        "the tool again, narrower.]"
    )


def label(call: ToolCall | None, result: ScratchResult) -> str:
    if call is None:
        return result.tool_name
    first = next((v for v in call.input.values() if isinstance(v, str)), "")
    return f"{call.name} {first}".strip()


class Fitting:
    """Every request within the window, whatever the strategy."""

    def __init__(self, core: AgentCore, steering: Steering, lease: WriterLease) -> None:
        self.core = core
        self.steering = steering
        self.lease = lease

    def recall(self, query: str, limit: int) -> list[RecallHit]:
        """The round's set-aside observations that match ``query`` (every word, else any word;
        most words first), then the archive's hits: what a pointer names stays findable."""
        words = [w.casefold() for w in re.findall(r"\w+", query)]
        hits: list[tuple[int, RecallHit]] = []
        if words and self.core.current_round is not None:
            ids = {m.meta.tool_use_id: m.id for m in self.core.round_messages() if m.role == "tool"}
            found_aside = (
                self.core.store.observation_for(self.core.session_id, r.tool_use_id)
                for step in self.core.scratchpad
                for r in step.results
                if r.text.startswith(SET_ASIDE)
            )
            aside = [obs for obs in found_aside if obs is not None]
            for any_word in (False, True):
                for obs in aside:
                    found = matches(obs.text, words, any_word)
                    if not found:
                        continue
                    hit = RecallHit(
                        message_id=ids.get(obs.tool_use_id) or 0,
                        segment_id=None,
                        round=self.core.current_round,
                        role="tool",
                        tool_name=obs.tool_name,
                        snippet=snippet(obs.text, words),
                        score=float(found),
                    )
                    hits.append((found, hit))
                if hits:
                    break
        ranked = [h for _, h in sorted(hits, key=lambda fh: -fh[0])][:limit]
        return (
            ranked + self.core.recall_archive(query, limit - len(ranked))
            if len(ranked) < limit
            else ranked
        )

    def fit(self, built: BuiltContext) -> BuiltContext | None:
        """``built``, or the request rebuilt small enough (see the module docstring); None
        when nothing more can be set aside or archived."""
        window = self._room()
        if built.total <= window:
            return built
        if sum(built.layers[k] for k in UNSHRINKABLE) > window:
            # The system prompt, tools and input alone are over the window: nothing the engine
            # sets aside or archives can help; the provider answers (the API refuses).
            return built
        before = built.total
        shrunk: list[str] = []
        newest = self.core.scratchpad[-1:] if self.core.scratchpad else []
        built = self._set_aside(built, self.core.scratchpad[:-1], window, shrunk)
        archived = 0
        if built.total > window and self._emergency_spares(newest):
            built, archived = self._archive_earlier(built)
        if built.total > window:
            built = self._set_aside(built, newest, window, shrunk)
        if built.total > window:
            built, more = self._archive_earlier(built)
            archived += more
        parts = []
        if shrunk:
            named = ", ".join(shrunk[:NAMED_IN_NOTICE])
            more = len(shrunk) - NAMED_IN_NOTICE
            named += f" and {more} more" if more > 0 else ""
            parts.append(f"set aside {len(shrunk)} observations of this round ({named})")
        if archived:
            parts.append(
                f"archived {archived} earlier messages ({self.core.strategy.name}'s emergency cut)"
            )
        fits = built.total <= window
        prefix = self.core.extra_prefix_tokens  # said with the figures, which count it (issue 39)
        with_prefix = f" (the recorded agent's {prefix:,}-token prefix included)" if prefix else ""
        self.core.events(
            Notice(
                message=f"The next request needed {before + prefix:,} tokens{with_prefix}, "
                f"over the {window + prefix:,}-token window: "
                f"{'; '.join(parts) or 'nothing could be shrunk'}; "
                + (f"it now needs {built.total + prefix:,}." if fits else "it still does not fit.")
            )
        )
        return built if fits else None

    def _room(self) -> int:
        """The window less what every request is taken to carry beyond what ctxscope builds
        (:attr:`~engine.session.core.AgentCore.extra_prefix_tokens`, a replay's hidden prefix):
        what ctxscope's own request may hold."""
        return self.core.settings.context_window - self.core.extra_prefix_tokens

    def _emergency_spares(self, newest: list[ScratchStep]) -> bool:
        """Whether the strategy's emergency cut archives something and leaves the round's
        newest step (archiving it would hide the calls the round is answering)."""
        cut = self._emergency_cut(1)
        keep = {s.assistant.id for s in newest}
        return bool(cut) and not any(m.id in keep for m in cut)

    def _archive_earlier(self, built: BuiltContext) -> tuple[BuiltContext, int]:
        """The strategy's emergency compaction (again while it frees something and the
        request is still over), and the request rebuilt after it."""
        archived = 0
        window = self._room()
        while built.total > window:
            with self.lease.writing("compaction"):
                draft = self._shrinking_draft(built.total - window)
                if isinstance(draft, CompactionResult):
                    result = draft
                else:
                    result = self.steering.commit_compaction(draft, trigger=Trigger.EMERGENCY)
            if result.segment is None:
                break
            archived += len(result.segment.messages)
            built = self.core.build(self.core.current_question)
        return built, archived

    def _shrinking_draft(self, excess: int) -> CompactionDraft | CompactionResult:
        """The emergency cut for ``excess`` tokens, asked to free more while what it drafts
        would leave history no smaller (an earlier summary written again with a few small
        rounds can outgrow them): a compaction that frees nothing is not stored as one that
        did, unless the cut can take no more."""
        while True:
            draft = self._emergency_draft(excess)
            if isinstance(draft, CompactionResult):
                return draft
            record = draft.record
            if record.tokens_after < record.tokens_before:
                return draft
            size = len(draft.messages)
            while len(self._emergency_cut(excess)) <= size:
                if excess > record.tokens_before:
                    return draft
                excess = 2 * excess + record.tokens_after - record.tokens_before

    def _emergency_draft(self, excess: int) -> CompactionDraft | CompactionResult:
        with self.steering.over_by(excess):
            return self.steering.prepare_compaction(trigger=Trigger.EMERGENCY)

    def _emergency_cut(self, excess: int) -> list[Message]:
        """What the strategy's emergency cut takes for ``excess`` tokens (a plan, no summary)."""
        with self.steering.over_by(excess):
            return self.core.strategy.plan(self.steering.view("", None), emergency=True).cut

    def _set_aside(
        self, built: BuiltContext, steps: list[ScratchStep], window: int, shrunk: list[str]
    ) -> BuiltContext:
        """Replace observations of ``steps`` by pointers, oldest first, until the request
        fits (the estimate is checked by rebuilding, and the walk goes on if it was short)."""
        while built.total > window:
            excess = built.total - window
            changed = False
            for step in steps:
                calls = {c.id: c for c in step.assistant.tool_calls}
                for i, result in enumerate(step.results):
                    if excess <= 0:
                        break
                    if result.text.startswith(SET_ASIDE):
                        continue
                    call = calls.get(result.tool_use_id)
                    tokens = result.tokens or BLOCK_OVERHEAD + count_text(result.text)
                    text = pointer_text(call, result, tokens)
                    saved = tokens - BLOCK_OVERHEAD - count_text(text)
                    if saved <= 0:
                        continue
                    step.results[i] = replace(result, text=text, tokens=None)
                    shrunk.append(label(call, result))
                    excess -= saved
                    changed = True
            if not changed:
                break
            built = self.core.build(self.core.current_question)
        return built


def matches(text: str, words: list[str], any_word: bool) -> int:
    """How many of ``words`` (case-folded) ``text`` holds: all of them or 0, or any of them."""
    folded = text.casefold()
    found = sum(1 for w in words if w in folded)
    return found if any_word or found == len(words) else 0


def snippet(text: str, words: list[str]) -> str:
    """``SNIPPET_CHARS`` of ``text`` around the first matched word, matches in ``[brackets]``
    (the archive's FTS snippets look the same)."""
    folded = text.casefold()
    first = min((i for w in words if (i := folded.find(w)) >= 0), default=0)
    start = max(0, first - SNIPPET_CHARS // 3)
    piece = " ".join(text[start : start + SNIPPET_CHARS].split())
    for w in words:
        piece = re.sub(f"({re.escape(w)})", r"[\1]", piece, flags=re.IGNORECASE)
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(text) else "")
