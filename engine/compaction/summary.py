"""Summaries of archived history (seed 000 A5, C2, E2): how a strategy's summary is asked for,
checked, and replaced when the call fails.

Two ways to write a summary:

- the model, called with the strategy's prompt through a provider, bounded by
  ``summary_timeout`` (:class:`SummaryCompressor`, by a :class:`SummarySpec`);
- the extractive summary, deterministic, built from the messages alone
  (:mod:`engine.compaction.extractive`). It is the offline provider's summariser and the
  fallback when the model call times out or fails, so archived rounds are always represented.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from engine.messages.render import render_messages
from engine.models import Message
from prompts.agents_prompts.summary_prompt import (
    RECALL_NOTE,
    SEGMENT_PENDING,
    SUMMARY_HEADING,
    SUMMARY_PROMPT,
)

TIMEOUT_NOTICE = "Summary generation timed out, keeping recent history only."
FAILURE_NOTICE = "Summary generation failed ({error}), keeping recent history only."
FALLBACK_MARK = "*(Fallback: extractive summary written by ctxscope; {reason}.)*"


# engine.compaction.extractive (and its ledger) is imported when a summary is made: the
# strategies' specs are read by every command that plans, `ctxscope context` among them,
# which makes none (issue 44). These three stand for its functions, by these names.


def extractive_summary(messages: list[Message], focus: str | None = None, **more: Any) -> str:
    """:func:`engine.compaction.extractive.extractive_summary`."""
    from engine.compaction.extractive import extractive_summary as summary

    return summary(messages, focus, **more)


def shorten(text: str, limit: int) -> str:
    """:func:`engine.compaction.extractive.shorten`."""
    from engine.compaction.extractive import shorten as cut

    return cut(text, limit)


def time_label(value: datetime | None) -> str:
    """:func:`engine.compaction.extractive.time_label`."""
    from engine.compaction.extractive import time_label as label

    return label(value)


def render_messages_for_summary(messages: list[Message]) -> str:
    """The archived messages as text for the summary call (the seed's E1 ReAct form)."""
    return render_messages(messages)


class TextCall(Protocol):
    """One plain request: a system prompt, a user text, a timeout; the answer's text
    (:meth:`engine.llm.base.Provider.ask_text`). ``retries``: the provider's own retries
    (None: its setting)."""

    def __call__(
        self, system: str, text: str, timeout: float, *, retries: int | None = None
    ) -> str: ...


class Summariser(Protocol):
    """What SummaryCompressor needs from a provider (see engine.llm.base.Provider)."""

    is_model: bool

    def summarize(
        self,
        messages: list[Message],
        prompt: str,
        focus: str | None,
        timeout: float,
        render: Callable[[Sequence[Message]], str] | None = None,
        provider_retries: int | None = None,
    ) -> str:
        """``provider_retries`` is given (as 0) only by a spec that retries the call itself."""
        ...


def _not_empty(content: str) -> str | None:
    return None if content.strip() else "the summary is empty"


@dataclass(frozen=True)
class SummarySpec:
    """How one strategy's summary is written, checked, and replaced when the call fails."""

    form: str
    """What the summary is: ``A5 template``, ``XML tags``, ``JSON``, ``structured text``."""
    prompt: str
    """The summary call's instructions (the system prompt of a separate call)."""
    extractive: Callable[[list[Message], str | None], str]
    """The deterministic summary in this form: the offline provider's, and the fallback."""
    finish: Callable[[str, list[Message]], str] = lambda content, _messages: content.strip()
    """Applied to a model's answer before it is checked (A5: restore a lost heading)."""
    check: Callable[[str], str | None] = _not_empty
    """A problem with a model's answer, or None when it is acceptable."""
    render: Callable[[Sequence[Message]], str] | None = None
    """How the archived messages are written for the call; None: the seed-000 E1 text form."""
    framed: bool = True
    """Whether the call's user text is ctxscope's frame (a time-range header, the messages in
    ``<archive>`` tags, split into parts when too long). False: the rendered messages are the
    whole user text, as a seed sends them (001's ``prompt: historyText``); only a request the
    API refuses as too long is then split, in the frame."""
    warn: Callable[[str], str | None] | None = None
    """A mismatch with the form that keeps the answer, with a warning (seed 001 uses the
    model's text as it comes); ``check`` problems instead fail the call."""
    on_failure: str = "extractive"
    """``extractive``: the extractive summary stands in (seed 000); ``skip``: no compaction,
    history untouched (seed 004 F-007)."""
    max_retries: int = 0
    """Further attempts after a failed call (seed 004: ``COMPACT_MAX_RETRIES`` = 2)."""
    retries_itself: bool = False
    """The spec's own attempts are the only ones (seed 004 F-007): each is sent once, without
    the provider's retries, ``max_retries = 0`` included ("不重试，失败即跳过")."""
    retry_delay: float = 1.0
    """First wait between attempts; doubled each time (seed 004 F-007's simple backoff)."""


A5_SPEC = SummarySpec(
    form="A5 template",
    prompt=SUMMARY_PROMPT,
    extractive=lambda messages, focus: extractive_summary(messages, focus),
    finish=lambda content, messages: ensure_template(content, messages),
)
"""Seed 000's summary: the A5 template from SUMMARY_PROMPT, extractive fallback."""


@dataclass
class SummaryOutcome:
    content: str
    fallback: bool
    error: str | None = None
    """Why the fallback was used (the notice shown to the user)."""
    duration_s: float = 0.0
    attempts: int = 1
    """Calls made (retries included); 0 when no model was asked (offline)."""
    warning: str | None = None
    """The spec's ``warn``: how the kept answer departs from the form."""
    skipped: bool = False
    """No summary: the calls failed and the spec skips the compaction (``error`` says so)."""


class SummaryCompressor:
    """Produce the summary of an archive segment by a strategy's :class:`SummarySpec`.

    Each model call runs in a separate thread bounded by ``timeout``. On a timeout, an error or
    an answer the spec's check refuses, the call is retried ``spec.max_retries`` times with a
    doubling wait; then the spec decides: the extractive summary stands in, marked as a
    fallback (seed 000, C2/E2), or the compaction is skipped (seed 004, F-007: the outcome is
    ``skipped``, and its ``error`` says so). Without a model (the offline provider) the
    extractive summary is the summary.
    """

    def __init__(
        self,
        summariser: Summariser,
        timeout: float,
        sleep: Callable[[float], None] = time.sleep,
        send: TextCall | None = None,
    ) -> None:
        self.summariser = summariser
        self.timeout = timeout
        self.sleep = sleep
        self.send = send
        """One plain request (system prompt, user text, timeout; the provider's ``ask_text``),
        for the specs that send the rendered messages unframed; None: always framed."""

    def summarize(
        self,
        messages: list[Message],
        focus: str | None = None,
        on_notice: Callable[[str], None] | None = None,
        spec: SummarySpec = A5_SPEC,
        call: Callable[[float], str] | None = None,
        raw: list[Message] | None = None,
    ) -> SummaryOutcome:
        """The summary of ``messages``, or (``skipped``) none when the spec says to skip
        after failed calls.

        ``call`` replaces the default separate summary call (seed 002 asks the live
        conversation instead); it gets the timeout and returns the model's text. ``raw``: the
        raw messages ``messages`` stand for, when some of them are earlier summaries being
        re-compacted — the extractive form is written from these (a deterministic summary
        extracts from what happened, not from another summary's wording); a model gets
        ``messages``, as the seeds say.
        """
        began = time.monotonic()
        source = messages if raw is None else raw
        if not self.summariser.is_model:
            content = spec.extractive(source, focus)
            return SummaryOutcome(content, False, duration_s=time.monotonic() - began, attempts=0)
        ask = call or self._separate_call(messages, spec, focus)
        problem: _Problem | None = None
        attempts = 0
        for attempt in range(spec.max_retries + 1):
            if attempt:
                self.sleep(spec.retry_delay * 2 ** (attempt - 1))
            attempts += 1
            content, problem = self._attempt(ask, spec, messages)
            if problem is None:
                warning = self._warning(spec, content)
                if warning and on_notice is not None:
                    on_notice(warning)
                return SummaryOutcome(
                    content,
                    False,
                    duration_s=time.monotonic() - began,
                    attempts=attempts,
                    warning=warning,
                )
            if attempt < spec.max_retries and on_notice is not None:
                wait = spec.retry_delay * 2**attempt
                on_notice(
                    f"Summary call {attempt + 1} of {spec.max_retries + 1} failed "
                    f"({problem.text}); retrying in {wait:g} s."
                )
        assert problem is not None
        if spec.on_failure == "skip":
            return SummaryOutcome(
                content="",
                fallback=False,
                error=skip_notice(attempts, problem.text),
                duration_s=time.monotonic() - began,
                attempts=attempts,
                skipped=True,
            )
        notice = TIMEOUT_NOTICE if problem.timed_out else FAILURE_NOTICE.format(error=problem.text)
        if on_notice is not None:
            on_notice(notice)
        reason = "the summary call timed out" if problem.timed_out else "the summary call failed"
        return SummaryOutcome(
            content=mark_fallback(spec.extractive(source, focus), reason),
            fallback=True,
            error=notice,
            duration_s=time.monotonic() - began,
            attempts=attempts,
        )

    @staticmethod
    def _warning(spec: SummarySpec, content: str) -> str | None:
        problem = spec.warn(content) if spec.warn is not None else None
        if problem is None:
            return None
        return f"The summary does not follow the {spec.form} form ({problem}); kept as written."

    def _separate_call(
        self, messages: list[Message], spec: SummarySpec, focus: str | None
    ) -> Callable[[float], str]:
        summarize = self.summariser.summarize
        render = spec.render

        # A spec that retries the call itself (seed 004 F-007: "最多重试 COMPACT_MAX_RETRIES
        # 次") sends each attempt once: the provider's own retries would multiply its count.
        # With 0 it is sent once in all (issue 39: the provider's 4 retries made it 5).
        options: dict[str, Any] = {"provider_retries": 0} if spec.retries_itself else {}
        if render is not None:
            options["render"] = render

        def framed(timeout: float) -> str:
            return summarize(messages, spec.prompt, focus, timeout, **options)

        send = self.send
        if spec.framed or send is None or render is None:
            return framed

        def unframed(timeout: float) -> str:
            from engine.llm.base import ProviderError  # asked only when a summary is made

            text = render(messages)
            if focus:
                text += f"\n\nFocus instructions from the user: {focus}"
            try:
                if spec.retries_itself:
                    return send(spec.prompt, text, timeout, retries=0)
                return send(spec.prompt, text, timeout)
            except ProviderError as exc:
                if exc.kind != "prompt_too_long":
                    raise
                return framed(timeout)  # the seed has no answer to this; ctxscope splits

        return unframed

    def _attempt(
        self, ask: Callable[[float], str], spec: SummarySpec, messages: list[Message]
    ) -> tuple[str, _Problem | None]:
        """One bounded call: (content, None) on success, ("", what went wrong) on failure."""
        import concurrent.futures  # made only when a summary is asked for

        # Not a `with` block: on timeout we must return without waiting for the stuck call.
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="summary")
        future = pool.submit(ask, self.timeout)
        pool.shutdown(wait=False)
        try:
            content = spec.finish(future.result(timeout=self.timeout), messages)
        except (TimeoutError, concurrent.futures.TimeoutError):
            return "", _Problem(f"timed out after {self.timeout:g} s", timed_out=True)
        except Exception as exc:  # noqa: BLE001 - any provider failure is a failed attempt
            return "", _Problem(shorten(str(exc) or type(exc).__name__, 200))
        problem = spec.check(content)
        if problem is not None:
            return "", _Problem(problem)
        return content, None


@dataclass(frozen=True)
class _Problem:
    """What went wrong with one summary call."""

    text: str
    timed_out: bool = False


def skip_notice(attempts: int, problem: str) -> str:
    """What a skipping spec (seed 004, F-007) says after its last failed call: the compaction
    did not happen and no message was archived or replaced."""
    retries = attempts - 1
    tried = {0: "once, no retries", 1: "twice (1 retry)"}.get(
        retries, f"{attempts} times ({retries} retries)"
    )
    return (
        f"The summary call failed {tried}; last: {problem}. Compaction skipped: nothing was "
        "archived or summarised, history is left as it was and sent as it is "
        "(compacted = false)."
    )


def mark_fallback(summary: str, reason: str) -> str:
    """Insert the fallback marker after the heading and time range, keeping the A5 layout."""
    head, _, rest = summary.partition("\n\n")
    return f"{head}\n{FALLBACK_MARK.format(reason=reason)}\n\n{rest}"


def ensure_template(content: str, messages: list[Message]) -> str:
    """A model summary that lost the A5 heading gets it back, with the time range; every A5
    summary ends with the note that its raw messages can be recalled."""
    content = content.strip()
    if not content.startswith(SUMMARY_HEADING):
        start = time_label(messages[0].created_at) if messages else "unknown"
        cutoff = time_label(messages[-1].created_at) if messages else "unknown"
        content = f"{SUMMARY_HEADING}\n*(Contains context from {start} to {cutoff})*\n\n{content}"
    return with_recall_note(content)


def with_recall_note(content: str) -> str:
    """``content`` ending with :data:`RECALL_NOTE` (the segment still to be numbered)."""
    note = RECALL_NOTE.format(segment=SEGMENT_PENDING)
    return content if content.rstrip().endswith(note) else f"{content.rstrip()}\n\n{note}"
