"""Seed 002 (``mock-user``, the Init / Execute agents): projected history, mock-user summary.

- **projection**, before every request: the rounds before the last ``keep_recent_steps`` steps
  keep only their last user and last assistant message; their tool calls and tool results are
  dropped together (so no call is left without its result); the last N steps go whole, but a
  tool result longer than ``long_result_chars`` is sent as its first and last 1 000 characters
  (step 5) — in the running round and in history's last N steps alike, so what a compaction
  keeps is cut as the seed's ``compress_long_tool_results(messages)`` cuts it;
- **trigger**, before every request: the projected request's local count is *over*
  ``trigger_tokens`` (``total_tokens > COMPACT_TRIGGER_THRESHOLD``);
- **compaction**: the live conversation plus the seed's mock user message asks the model for a
  JSON summary, with the seed's ``max_tokens=4000`` and no tools (its ``temperature=0.0`` the
  API no longer takes);
  history becomes ``[mock user, summary (assistant), last N steps]``; a later compaction's
  conversation contains the earlier pair, so it is re-compacted. An automatic compaction
  whose mock pair would send no fewer tokens than what it replaces is skipped, nothing stored
  (the seed compacts to shrink: 155K → 70K, 720K → 200K);
- profiles ``init`` (200 000 / 150 000 / 3) and ``execute`` (1 000 000 / 700 000 / 5). The
  profile's window is the window of the model the seed gives it (Opus 200K, Sonnet 1M); the
  session's ``context_window`` is the window of the model actually asked, and no request goes
  over it. So the profile's window is not applied (1 000 000 to a 200 000-token model would
  send requests it refuses, "prompt is too long"); when the session's window is at or below
  the profile's trigger, the trigger can never fire and the user is told so once.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from engine.compaction.placement import MOCK_USER_PROMPT, summary_tokens
from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    Plan,
    PolicyView,
    Prefix,
    ResultForm,
    cut_before,
    last_units_start,
)
from engine.compaction.strategies.formats import MOCK_USER_SPEC
from engine.messages.request import ProviderRequest
from engine.messages.scratchpad import ScratchResult, ScratchStep
from engine.messages.tokens import ensure_counted
from engine.models import Message, Placement, Summary

KEEP_HEAD_CHARS = 1000
KEEP_TAIL_CHARS = 1000


def cut_long_result(text: str, max_length: int) -> str:
    """Seed 002 ``compress_long_tool_results``: the first and last 1 000 characters."""
    if not max_length or len(text) <= max_length:
        return text
    omitted = len(text) - KEEP_HEAD_CHARS - KEEP_TAIL_CHARS
    return (
        f"{text[:KEEP_HEAD_CHARS]}\n\n[... {omitted} chars omitted ...]\n\n"
        f"{text[-KEEP_TAIL_CHARS:]}"
    )


class MockUserStrategy(CompactionPolicy):
    name = "mock-user"
    seed = "002_e88ac4ba3ea66dc9.txt"
    checks = frozenset({CheckPoint.BEFORE_REQUEST})
    placement = Placement.MOCK_PAIR
    lifecycle = Lifecycle.RECOMPACT
    summary = MOCK_USER_SPEC
    live_summary_prompt = MOCK_USER_PROMPT
    tool_results = ResultForm.AS_RETURNED

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._projected: dict[int, Message] = {}
        self._cut_results: dict[str, ScratchResult] = {}
        self._cut_messages: dict[int, Message] = {}
        self._older: tuple[Prefix, list[Message]] = (Prefix(None, 0, None), [])
        """The complete rounds projected last time, reused while history only grows."""
        self._refused: Summary | None = None
        """The last summary skipped for not shrinking the request: no new summary call until
        what a compaction would replace is sent as more tokens than it."""

    @property
    def numbers(self) -> tuple[int, int, int]:
        """(context window, trigger tokens, keep recent steps) of the configured profile."""
        return self.settings.strategies.mock_user.resolved()

    def measure(self, view: PolicyView) -> Measure:
        return Measure(
            what="request tokens (local count, projected)",
            value=view.request_tokens,
            threshold=self.numbers[1],
            comparison=">",
        )

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        keep = self.numbers[2]
        messages = view.history.messages
        cut = cut_before(messages, max(0, len(messages) - 2 * keep), view.protected())
        if emergency and not cut:
            return self.emergency_cut(view)
        return cut

    def plan(self, view: PolicyView, *, emergency: bool = False) -> Plan:
        if emergency:
            return super().plan(view, emergency=True)
        return Plan(
            self.name,
            self.measure(view),
            lambda: self.select(view),
            lambda cut: self._cannot_shrink(view, cut),
        )

    def window_notice(self, window: int) -> str:
        profile = self.settings.strategies.mock_user.profile
        own_window, trigger, _ = self.numbers
        if trigger < window:
            return ""
        return (
            f"mock-user's profile {profile!r} (a {own_window:,}-token model) compacts over "
            f"{trigger:,} tokens, but this session's context window is {window:,}: its trigger "
            "never fires and only the engine's last resort keeps requests inside the window. Set "
            f"context_window = {own_window} if the model has that window, or "
            f"strategies.mock-user.trigger_tokens below {window}, or another profile."
        )

    # -- does a compaction shrink what is sent? ------------------------------------------------
    def _sent_tokens(self, view: PolicyView, messages: list[Message]) -> int:
        """L3 messages as they are sent: the rounds before the last N steps projected, long
        results in the last N steps cut, the round in progress as the view counts it."""
        rnd = view.in_progress
        earlier = [m for m in messages if rnd is None or m.meta.round != rnd]
        current = [m for m in messages if rnd is not None and m.meta.round == rnd]
        left = 2 * self.numbers[2] - max(0, len(current) - 1)
        recent_from = last_units_start(earlier, left) if left > 0 else len(earlier)
        limit = self.settings.strategies.mock_user.long_result_chars
        sent = self._project_rounds(earlier[:recent_from]) + self._cut_history(
            earlier[recent_from:], limit
        )
        return sum(ensure_counted(m) for m in sent) + sum(view.tokens_of(m) for m in current)

    def _replaced(self, view: PolicyView, cut: list[Message], retired: list[int]) -> int:
        """Tokens of what is sent now that a compaction of ``cut`` takes away (the summaries
        it retires included)."""
        gone = {m.id for m in cut}
        kept = [m for m in view.history.messages if m.id not in gone]
        summaries = view.history.summaries
        before = sum(s.tokens or 0 for s in summaries) + self._sent_tokens(
            view, view.history.messages
        )
        carried = sum(s.tokens or 0 for s in summaries if s.id not in retired)
        return before - carried - self._sent_tokens(view, kept)

    def _cannot_shrink(self, view: PolicyView, cut: list[Message]) -> str:
        """Before the summary call: a pair at least as large as the last refused summary (or
        the bare mock user turn) would not be smaller than what it replaces."""
        if not cut:
            return "nothing outside what this strategy always keeps"
        floor = self._refused or Summary(
            session_id=0, content="", first_round=0, last_round=0, placement=Placement.MOCK_PAIR
        )
        pair = summary_tokens(floor)
        replaced = self._replaced(view, cut, self.supersedes(view.history))
        if replaced <= pair:
            last = " (the size of the last summary, skipped for this reason)"
            return (
                f"what it would replace is sent as {replaced:,} tokens and the mock user turn "
                f"with a summary takes at least {pair:,}{last if self._refused else ''}: the "
                "request would not shrink"
            )
        return self._under_gain_floor(view, replaced - pair)

    def _under_gain_floor(self, view: PolicyView, gain: int) -> str:
        """Why a compaction that would free only ``gain`` tokens is not worth its summary call
        (``min_gain_ratio`` of the trigger); '' when it is."""
        own = self.settings.strategies.mock_user
        floor = own.min_gain_ratio * self.numbers[1]
        if gain >= floor:
            return ""
        share = f" ({gain / view.request_tokens:.1%} of the {view.request_tokens:,} sent)"
        return (
            f"it would free at most {gain:,} tokens{share if view.request_tokens else ''}, "
            f"under the floor of {floor:,.0f} (min_gain_ratio {own.min_gain_ratio:g} × trigger "
            f"{self.numbers[1]:,}), so no summary call is made; lower "
            "strategies.mock-user.min_gain_ratio to compact anyway"
        )

    def refuses_summary(
        self, view: PolicyView, cut: list[Message], summary: Summary, retired: list[int]
    ) -> str:
        pair = summary.tokens if summary.tokens is not None else summary_tokens(summary)
        replaced = self._replaced(view, cut, retired)
        if pair < replaced:
            # the floor holds for what is stored, the summary's own size counted (before the
            # call it was checked with an empty one: issue 39, one stored compaction freed 9)
            under = self._under_gain_floor(view, replaced - pair)
            if not under:
                self._refused = None
                return ""
            self._refused = summary
            return f"with its summary of {pair:,} tokens in the mock user turn, {under}"
        self._refused = summary
        return (
            f"the mock user turn and the summary would be sent as {pair:,} tokens, in place of "
            f"{replaced:,} tokens of history as sent: the request would not shrink, so nothing "
            "was archived or stored"
        )

    # -- the summary call --------------------------------------------------------------------
    def live_summary_request(self, request: ProviderRequest) -> ProviderRequest:
        """The seed's ``messages.create(system=…, messages=current_messages + [compact_prompt],
        max_tokens=4000, temperature=0.0)``: no tools, so the live conversation's tool calls
        and results go as text (the Messages API refuses ``tool_use`` / ``tool_result``
        blocks in a request that defines no tools).

        ``temperature=0.0`` is not sent: the Messages API version the anthropic SDK sends
        (``anthropic-version: 2026-10-21``, SDK 2.x) refuses ``temperature``, ``top_p`` and
        ``top_k`` with a 400 ("Extra inputs are not permitted"), and the SDK no longer has the
        parameter; Opus 4.7 and later refuse it on any version."""
        own = self.settings.strategies.mock_user
        messages = [_without_tool_blocks(m) for m in request.messages]
        turn = {"type": "text", "text": MOCK_USER_PROMPT}
        if messages and messages[-1]["role"] == "user":
            # The request ends with the round's input or results: one user turn, as the API
            # wants roles to alternate.
            messages[-1] = {"role": "user", "content": [*messages[-1]["content"], turn]}
        else:
            messages.append({"role": "user", "content": [turn]})
        return request.model_copy(
            update={
                "messages": messages,
                "tools": [],
                "max_tokens": own.summary_max_tokens,
            }
        )

    # -- what is sent --------------------------------------------------------------------------
    def project(
        self, messages: list[Message], scratchpad: list[ScratchStep], in_progress: int | None
    ) -> tuple[list[Message], list[ScratchStep]]:
        keep_steps = self.numbers[2]
        # The last N steps are the newest 2N messages: the scratchpad's first, then history's.
        left = 2 * keep_steps - sum(1 + len(s.results) for s in scratchpad)
        recent_from = last_units_start(messages, left) if left > 0 else len(messages)
        limit = self.settings.strategies.mock_user.long_result_chars
        projected = self._project_older(messages[:recent_from]) + self._cut_history(
            messages[recent_from:], limit
        )
        return projected, [self._cut_step(step, limit) for step in scratchpad]

    def _project_older(self, older: list[Message]) -> list[Message]:
        """:meth:`_project_rounds` of ``older``, reusing the rounds projected last time."""
        done, base = self._older
        start = done.length if done.holds_for(older) else 0
        if not start:
            base = []
        # The newest round may still grow: project it apart, keep the complete ones.
        end = len(older)
        if end > start:
            newest = older[-1].meta.round
            while end > start and older[end - 1].meta.round == newest:
                end -= 1
        if end > start:
            base = base + self._project_rounds(older[start:end])
            self._older = (Prefix.of(older, end), base)
        return base + self._project_rounds(older[end:])

    def _project_rounds(self, messages: list[Message]) -> list[Message]:
        """Each round: its last user message and last assistant message, without tool calls."""
        out: list[Message] = []
        by_round: dict[int | None, list[Message]] = {}
        for msg in messages:
            by_round.setdefault(msg.meta.round, []).append(msg)
        for group in by_round.values():
            user = next((m for m in reversed(group) if m.role == "user"), None)
            answer = next((m for m in reversed(group) if m.role == "assistant"), None)
            if user is not None:
                out.append(user)
            if answer is not None:
                answer = self._without_calls(answer)
                if answer.content.strip():
                    out.append(answer)
        return out

    def _without_calls(self, msg: Message) -> Message:
        if not msg.tool_calls or msg.id is None:
            return msg
        found = self._projected.get(msg.id)
        if found is None:
            found = self._projected[msg.id] = msg.model_copy(
                update={"tool_calls": [], "tokens": None}
            )
        return found

    def _cut_history(self, messages: list[Message], limit: int) -> list[Message]:
        """History's last N steps, each tool result over ``limit`` characters cut (step 5)."""
        if not limit:
            return messages
        out = []
        for msg in messages:
            if msg.role != "tool" or len(msg.content) <= limit or msg.id is None:
                out.append(msg)
                continue
            cut = self._cut_messages.get(msg.id)
            if cut is None:
                cut = self._cut_messages[msg.id] = msg.model_copy(
                    update={"content": cut_long_result(msg.content, limit), "tokens": None}
                )
            out.append(cut)
        return out

    def _cut_step(self, step: ScratchStep, limit: int) -> ScratchStep:
        if not limit or all(len(r.text) <= limit for r in step.results):
            return step
        results = []
        for r in step.results:
            if len(r.text) <= limit:
                results.append(r)
                continue
            cut = self._cut_results.get(r.tool_use_id)
            if cut is None:
                cut = self._cut_results[r.tool_use_id] = replace(
                    r, text=cut_long_result(r.text, limit), tokens=None
                )
            results.append(cut)
        return ScratchStep(assistant=step.assistant, results=results)


def _without_tool_blocks(message: dict[str, Any]) -> dict[str, Any]:
    """A wire message with its ``tool_use`` / ``tool_result`` blocks as text blocks, in the
    ReAct form of the history pane (``Action: Read[{...}]``, ``Observation: ...``)."""
    content = message["content"]
    if isinstance(content, str):
        return {"role": message["role"], "content": [{"type": "text", "text": content}]}
    blocks = []
    for block in content:
        kind = block.get("type")
        if kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False)
            blocks.append({"type": "text", "text": f"Action: {block.get('name')}[{args}]"})
        elif kind == "tool_result":
            blocks.append({"type": "text", "text": f"Observation: {_result_text(block)}"})
        else:
            blocks.append(block)
    return {"role": message["role"], "content": blocks}


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content or "(empty)"
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict)) or "(empty)"
