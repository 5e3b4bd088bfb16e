"""What tools add to the requests of one run: seed 003's run-scoped context injection.

Seed 003 (section 3) gives tools a way to put more context in front of the model *for the
current run only*, without touching stored history or the user's own words: a system message
(rules, engineering summaries: ``injectSystemMessageOnce``) or an assistant message (a
conversational transcript, placed before the current user message:
``injectAssistantMessageOnce``). Each injection has a fingerprint: the same one twice in a run
is refused (``duplicate``), and a run may hold at most ``max_messages`` (the seed's
``maxInjectedMessages``, 120) before further ones are refused (``limit_reached``).

:class:`Injections` only records what was injected; the engine places it in each request of the
run (``engine.context.builder``: system texts as ``system`` blocks after the summaries,
assistant texts as one assistant turn before the current input) and clears it when a round
starts and ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Refusal = Literal["empty_content", "duplicate", "limit_reached"]
"""Why an injection was not made (the seed's ``reason``)."""


@dataclass
class Injections:
    """The texts tools injected into the run in progress, in the order they came."""

    max_messages: int
    """At most this many injections per run (seed 003 ``maxInjectedMessages``: 120)."""
    max_chars: int
    """An injected text longer than this is cut, with a marker (ctxscope's guard)."""
    system: list[str] = field(default_factory=list)
    """Texts for the ``system`` parameter, after L1, L2 and the summaries."""
    assistant: list[str] = field(default_factory=list)
    """Texts for one assistant turn just before the current user input."""
    fingerprints: set[str] = field(default_factory=set)

    def inject_system_once(self, fingerprint: str, text: str) -> Refusal | None:
        """Add ``text`` as a system message; None when added, else why not."""
        return self._inject(self.system, fingerprint, text)

    def inject_assistant_once(self, fingerprint: str, text: str) -> Refusal | None:
        """Add ``text`` as an assistant message before the current input; None when added."""
        return self._inject(self.assistant, fingerprint, text)

    def _inject(self, into: list[str], fingerprint: str, text: str) -> Refusal | None:
        if not text.strip():
            return "empty_content"
        if fingerprint in self.fingerprints:
            return "duplicate"
        if len(self.fingerprints) >= self.max_messages:
            return "limit_reached"
        if len(text) > self.max_chars:
            text = text[: self.max_chars] + "\n…(truncated)"
        into.append(text)
        self.fingerprints.add(fingerprint)
        return None

    def clear(self) -> None:
        """Forget every injection (a new run starts with none)."""
        self.system.clear()
        self.assistant.clear()
        self.fingerprints.clear()

    @property
    def empty(self) -> bool:
        return not (self.system or self.assistant)
