"""Seed 002 (``mock-user``, the Init / Execute agents): projected history, mock-user summary.

- **projection**, before every request: the rounds before the last ``keep_recent_steps`` steps
  keep only their last user and last assistant message; their tool calls and tool results are
  dropped together (so no call is left without its result); the last N steps go whole; a tool
  result longer than ``long_result_chars`` is sent as its first and last 1 000 characters
  (step 5, optional);
- **trigger**, before every request: the projected request's local count is *over*
  ``trigger_tokens`` (``total_tokens > COMPACT_TRIGGER_THRESHOLD``);
- **compaction**: the live conversation plus the seed's mock user message asks the model for a
  JSON summary; history becomes ``[mock user, summary (assistant), last N steps]``; a later
  compaction's conversation contains the earlier pair, so it is re-compacted;
- profiles ``init`` (200 000 / 150 000 / 3) and ``execute`` (1 000 000 / 700 000 / 5).
"""

from __future__ import annotations

from dataclasses import replace

from engine.compaction.placement import MOCK_USER_PROMPT
from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    PolicyView,
    Prefix,
    cut_before,
    last_units_start,
)
from engine.compaction.strategies.formats import MOCK_USER_SPEC
from engine.messages.scratchpad import ScratchResult, ScratchStep
from engine.models import Message, Placement

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

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._projected: dict[int, Message] = {}
        self._cut_results: dict[str, ScratchResult] = {}
        self._older: tuple[Prefix, list[Message]] = (Prefix(None, 0, None), [])
        """The complete rounds projected last time, reused while history only grows."""

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

    def project(
        self, messages: list[Message], scratchpad: list[ScratchStep], in_progress: int | None
    ) -> tuple[list[Message], list[ScratchStep]]:
        keep_steps = self.numbers[2]
        # The last N steps are the newest 2N messages: the scratchpad's first, then history's.
        left = 2 * keep_steps - sum(1 + len(s.results) for s in scratchpad)
        recent_from = last_units_start(messages, left) if left > 0 else len(messages)
        projected = self._project_older(messages[:recent_from]) + messages[recent_from:]
        limit = self.settings.strategies.mock_user.long_result_chars
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
