"""Observation masking (``masking``): the simple baseline every strategy is compared against.

JetBrains' "The Complexity Trap" (Lindenbauer et al., 2025) found that replacing old tool
observations by a placeholder, while keeping every reasoning and action turn, matches LLM
summaries at about half the cost of raw history; OpenHands ships the same idea as its
observation-masking condenser. Here, before every request:

- the last ``keep_last_observations`` tool results go whole (history's and the round's own);
- each older one becomes one line naming the tool, its arguments and the observation id
  (``ctxscope show --json`` / the observation view still have it whole);
- no summary call, no archive: nothing leaves history. Only the emergency path ("prompt is too
  long") archives, without a summary, everything but the last step.
"""

from __future__ import annotations

import json
from dataclasses import replace

from engine.compaction.policy import (
    CheckPoint,
    CompactionPolicy,
    Lifecycle,
    Measure,
    Plan,
    PolicyView,
    Prefix,
)
from engine.messages.scratchpad import ScratchResult, ScratchStep
from engine.messages.sequences import common_prefix
from engine.models import Message, ToolCall

MAX_ARGS_CHARS = 120


def placeholder(call: ToolCall | None, tool_name: str, tool_use_id: str) -> str:
    """The one line an older observation is sent as."""
    args = json.dumps(call.input, ensure_ascii=False, separators=(",", ":")) if call else "{}"
    if len(args) > MAX_ARGS_CHARS:
        args = args[: MAX_ARGS_CHARS - 1] + "…"
    return (
        f"[observation masked: {tool_name}{args}; observation id {tool_use_id}. "
        "Older tool results are hidden to save context; run the tool again if needed.]"
    )


class MaskingStrategy(CompactionPolicy):
    name = "masking"
    seed = "JetBrains 'The Complexity Trap' (2025); OpenHands observation masking"
    checks = frozenset({CheckPoint.BEFORE_REQUEST})
    placement = None
    lifecycle = Lifecycle.APPEND
    summary = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._masked_messages: dict[int, Message] = {}
        self._masked_results: dict[str, ScratchResult] = {}
        self._counted: tuple[list[Message], list[int]] = ([], [0])
        """The messages counted last time, and how many tool messages each prefix of them
        holds (``[i]``: the first ``i``)."""
        self._prefix: tuple[Prefix, list[Message], int] = (Prefix(None, 0, None), [], 0)
        """The history prefix masked last time: where it ends, its messages, how many masked."""
        self._calls: dict[str, ToolCall] = {}

    @property
    def keep(self) -> int:
        return self.settings.strategies.masking.keep_last_observations

    def measure(self, view: PolicyView) -> Measure:
        return Measure(
            what="observations in context",
            value=self._count_tools(view.history.messages),
            threshold=self.keep,
            comparison=">",
            source="count",
        )

    def _count_tools(self, messages: list[Message]) -> int:
        """Tool messages in ``messages``, counting only those not counted last time.

        The agent asks for the whole history (the measure) and for history without the round
        in progress (the projection) in turn: a list that is a prefix of the one counted last
        time is answered from the counts of its prefixes."""
        counted, sums = self._counted
        same = common_prefix(counted, messages)
        if same == len(messages):
            return sums[same]
        sums = sums[: same + 1]
        for msg in messages[same:]:
            sums.append(sums[-1] + (msg.role == "tool"))
        self._counted = (list(messages), sums)
        return sums[-1]

    def select(self, view: PolicyView, *, emergency: bool = False) -> list[Message]:
        return self.emergency_cut(view) if emergency else []

    def plan(self, view: PolicyView, *, emergency: bool = False) -> Plan:
        if emergency:
            return super().plan(view, emergency=True)
        reason = "masking never archives: older observations are masked instead"
        return Plan(self.name, self.measure(view), list, lambda _cut: reason)

    def project(
        self, messages: list[Message], scratchpad: list[ScratchStep], in_progress: int | None
    ) -> tuple[list[Message], list[ScratchStep]]:
        in_pad = sum(len(s.results) for s in scratchpad)
        in_history = self._count_tools(messages)
        to_mask = max(0, in_history + in_pad - self.keep)
        if not to_mask:
            return messages, scratchpad
        out = self._mask_history(messages, min(to_mask, in_history))
        to_mask -= min(to_mask, in_history)
        steps = []
        for step in scratchpad:
            results = []
            for r in step.results:
                if to_mask > 0:
                    to_mask -= 1
                    results.append(self._masked_result(r, step.assistant))
                else:
                    results.append(r)
            steps.append(ScratchStep(assistant=step.assistant, results=results))
        return out, steps

    def _mask_history(self, messages: list[Message], count: int) -> list[Message]:
        """``messages`` with their first ``count`` tool messages masked; the masked prefix of
        the last call is reused while history only grows."""
        done, prefix, masked = self._prefix
        if not done.holds_for(messages) or masked > count:
            done, prefix, masked = Prefix(None, 0, None), [], 0
            self._calls = {}
        prefix = list(prefix)
        i = done.length
        while masked < count and i < len(messages):
            msg = messages[i]
            for call in msg.tool_calls:
                self._calls[call.id] = call
            if msg.role == "tool" and msg.id is not None:
                masked += 1
                msg = self._masked_message(msg, self._calls)
            prefix.append(msg)
            i += 1
        self._prefix = (Prefix.of(messages, i), prefix, masked)
        return prefix + messages[i:]

    def _masked_message(self, msg: Message, calls: dict[str, ToolCall]) -> Message:
        assert msg.id is not None
        found = self._masked_messages.get(msg.id)
        if found is None:
            use_id = msg.meta.tool_use_id or ""
            text = placeholder(calls.get(use_id), msg.meta.tool_name or "tool", use_id)
            found = self._masked_messages[msg.id] = msg.model_copy(
                update={"content": text, "tokens": None}
            )
        return found

    def _masked_result(self, result: ScratchResult, assistant: Message) -> ScratchResult:
        found = self._masked_results.get(result.tool_use_id)
        if found is None:
            call = next((c for c in assistant.tool_calls if c.id == result.tool_use_id), None)
            text = placeholder(call, result.tool_name, result.tool_use_id)
            found = self._masked_results[result.tool_use_id] = replace(
                result, text=text, tokens=None
            )
        return found
