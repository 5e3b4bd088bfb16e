"""The Anthropic provider: the Messages API through the official SDK, streamed, with retries.

What this module adds on top of the SDK:

- **prompt caching**: a ``cache_control`` breakpoint on the last tool definition (tools come
  first in the cache prefix); the system blocks arrive with theirs from the context builder.
  Messages never get one here (they change every step), and no request carries more than four.
- **its own retries**: the SDK's are off, so every wait is visible (a :class:`StreamRetry`
  before it) and interruptible (``cancel``). 429, 5xx, 529 and connection failures are
  retried with bounded exponential backoff, honouring ``retry-after``.
- **a stream that stalls or garbles is a fault**: no content event for
  ``stream_idle_timeout`` seconds (pings do not count: the SDK drops them before we see them),
  or an event whose data is not JSON (or not the shape the SDK expects), fails the attempt
  with one clear line, and it is retried like a dropped connection. Whatever else goes wrong
  inside an attempt becomes a :class:`ProviderError` too, so a round never stays open.
- **a stream cut mid-answer is retried whole**. Observers learn it from the
  :class:`StreamRetry` (reason ``stream interrupted: …``): any StreamRetry means "what this
  call streamed so far is void, the answer starts again".
- **cancellation at any point**: the HTTP exchange runs on a helper thread, the caller's
  thread relays its events and polls ``cancel``, so Esc works even before the first byte.
- **summaries that always fit**: :func:`summarize_in_chunks` splits a segment too large for
  one call into parts, summarises each, then merges the summaries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anthropic
import httpx2
import pydantic

from engine.llm.anthropic_errors import (
    Failure,
    StreamGarbled,
    StreamIdle,
    StreamInterrupted,
    classify,
)
from engine.llm.base import (
    MAX_CACHE_BREAKPOINTS,
    Cancelled,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    StreamRetry,
    StreamText,
    StreamToolUse,
    with_unique_tool_ids,
)
from engine.models import ToolCall, Usage
from engine.settings.config import Settings
from tools.secrets import Redactor, url_credentials

T = TypeVar("T")

_CANCEL_POLL_SECONDS = 0.05
"""How often the caller's thread looks at ``cancel`` while the stream is quiet."""


class AnthropicProvider:
    """The :class:`~engine.llm.base.Provider` for the Anthropic Messages API."""

    name = "anthropic"
    is_model = True

    def __init__(
        self,
        settings: Settings,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
    ) -> None:
        """Defaults: ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``, ``settings.model``."""
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ProviderError(
                "auth",
                "No Anthropic API key: set ANTHROPIC_API_KEY, or use the offline provider "
                "(CTXSCOPE_MODEL=offline).",
            )
        self.settings = settings
        self.model = model or settings.model
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self._secrets = Redactor(
            {key: "ANTHROPIC_API_KEY"}
            | {c: "ANTHROPIC_BASE_URL" for c in url_credentials(self.base_url or "")}
        )
        """What never appears in a message: the key, and credentials inside the base URL."""
        # max_retries=0: our own loop retries, so waits are observable and cancellable.
        # A server that never answers fails the attempt after the read timeout (a retry).
        self._client = anthropic.Anthropic(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            timeout=httpx2.Timeout(settings.read_timeout, connect=settings.connect_timeout),
        )

    # --- Provider protocol -----------------------------------------------------------------

    def complete(
        self,
        request: ProviderRequest,
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None = None,
    ) -> ProviderResponse:
        """Stream one answer; emit text, completed tool calls and retries as they happen.

        Raises :class:`ProviderError` (with its ``kind``) or :class:`Cancelled`.
        """
        cancel = cancel or threading.Event()
        params = self.request_params(request)
        try:
            response = self._retrying(
                lambda: self._stream_once(params, on_event, cancel), on_event, cancel, None
            )
        except (ProviderError, Cancelled):
            raise
        except Exception as exc:  # never leave the round open on a surprise
            message = self._secrets.text(f"{type(exc).__name__}: {exc}".splitlines()[0])
            raise ProviderError(
                "server", f"The answer from the Anthropic API could not be read ({message})."
            ) from exc
        return with_unique_tool_ids(response, request.messages)

    def ask_text(
        self,
        system: str,
        text: str,
        timeout: float,
        *,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        """One plain request (``system`` prompt, one user ``text``, no tools); the answer's text.

        Retried like :meth:`complete` (``retries`` times when given) within ``timeout``
        seconds; past it :class:`TimeoutError`. ``model``: sent instead of the provider's.
        """
        return self._text_call(system, text, time.monotonic() + timeout, model, retries)

    # --- request building ------------------------------------------------------------------

    def request_params(self, request: ProviderRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.stream``, with the cache breakpoints placed."""
        tools = [dict(t) for t in request.tools]
        system = [dict(b) for b in request.system]
        messages = list(request.messages)
        if tools and "cache_control" not in tools[-1]:
            tools[-1]["cache_control"] = {"type": "ephemeral"}
        _limit_breakpoints(tools, system, messages)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = tools
        return params

    # --- one attempt -----------------------------------------------------------------------

    def _stream_once(
        self,
        params: dict[str, Any],
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event,
    ) -> ProviderResponse:
        # The exchange runs on a helper thread so that this thread can honour `cancel` even
        # while the socket is silent; events are relayed here, so observers see them on the
        # caller's thread, in order, and never after Cancelled.
        # The helper also reports every content event it sees (``_Alive``), so this thread can
        # end an attempt that pings but says nothing (stream_idle_timeout).
        inbox: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        abandon = threading.Event()
        streams: list[Any] = []
        worker = threading.Thread(
            target=self._pump_stream,
            args=(params, inbox, abandon, streams),
            name="ctxscope-anthropic-stream",
            daemon=True,
        )
        idle_limit = self.settings.stream_idle_timeout
        last_content = time.monotonic()
        worker.start()
        try:
            while True:
                try:
                    item = inbox.get(timeout=_CANCEL_POLL_SECONDS)
                except queue.Empty:
                    item = None
                if cancel.is_set():
                    raise Cancelled("cancelled while waiting for the model")
                if item is None:
                    if time.monotonic() - last_content >= idle_limit:
                        raise StreamIdle(
                            f"no content event for {idle_limit:g} s (stream_idle_timeout)"
                        )
                    continue
                last_content = time.monotonic()
                if isinstance(item, _Alive):
                    continue
                if isinstance(item, _Finished):
                    return item.response
                if isinstance(item, BaseException):
                    raise item
                on_event(item)
        finally:
            abandon.set()
            for stream in streams:  # a helper blocked on a silent socket wakes and leaves
                with contextlib.suppress(Exception):
                    stream.close()

    def _pump_stream(
        self,
        params: dict[str, Any],
        inbox: queue.SimpleQueue[_Item],
        abandon: threading.Event,
        streams: list[Any],
    ) -> None:
        try:
            with self._client.messages.stream(**params) as stream:
                streams.append(stream)
                if abandon.is_set():
                    return
                for event in stream:
                    if abandon.is_set():
                        return  # leaving the `with` closes the connection
                    inbox.put(_ALIVE)
                    if event.type == "text":
                        inbox.put(StreamText(text=event.text))
                    elif event.type == "content_block_stop":
                        block = event.content_block
                        if block.type == "tool_use":
                            call = ToolCall(id=block.id, name=block.name, input=dict(block.input))
                            inbox.put(StreamToolUse(call=call))
                    elif event.type == "message_stop":
                        inbox.put(_Finished(to_response(event.message)))
                        return
            inbox.put(StreamInterrupted("the stream ended before message_stop"))
        except json.JSONDecodeError as exc:
            inbox.put(StreamGarbled(f"an event's data is not JSON ({exc.msg} at char {exc.pos})"))
        except (pydantic.ValidationError, KeyError, TypeError, AttributeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            inbox.put(
                StreamGarbled(
                    f"an event is not what the API sends ({type(exc).__name__}"
                    f"{': ' + first if first else ''})"
                )
            )
        except Exception as exc:  # relayed to, and classified on, the caller's thread
            if not abandon.is_set():
                inbox.put(exc)

    def _text_call(
        self,
        prompt: str,
        text: str,
        deadline: float,
        model: str | None = None,
        retries: int | None = None,
    ) -> str:
        def attempt() -> str:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the call timed out")
            try:
                message = self._client.messages.create(
                    model=model or self.model,
                    max_tokens=self.settings.max_tokens,
                    system=[{"type": "text", "text": prompt}],
                    messages=[{"role": "user", "content": text}],
                    timeout=remaining,
                )
            except anthropic.APITimeoutError:
                raise TimeoutError(f"the call timed out after {remaining:.1f} s") from None
            return "".join(b.text for b in message.content if b.type == "text").strip()

        return self._retrying(attempt, lambda _event: None, None, deadline, retries)

    # --- retries ---------------------------------------------------------------------------

    def _retrying(
        self,
        attempt: Callable[[], T],
        on_event: Callable[[StreamEvent], None],
        cancel: threading.Event | None,
        deadline: float | None,
        retries: int | None = None,
    ) -> T:
        if retries is None:
            retries = self.settings.max_retries
        for tried in range(retries + 1):
            if cancel is not None and cancel.is_set():
                raise Cancelled("cancelled before the request was sent")
            try:
                return attempt()
            except (Cancelled, TimeoutError):
                raise
            except Exception as exc:
                failure = classify(exc, self.model, self.base_url)
                if failure is None:
                    raise
                failure = self._redacted(failure)
                if not failure.retryable:
                    raise ProviderError(failure.kind, failure.message, failure.status) from exc
                if tried == retries:
                    gave_up = f" Gave up after {retries} retries." if retries else ""
                    raise ProviderError(
                        failure.kind, f"{failure.message}{gave_up}", failure.status
                    ) from exc
                wait = self.backoff(tried, failure.retry_after)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise ProviderError(failure.kind, failure.message, failure.status) from exc
                on_event(
                    StreamRetry(
                        attempt=tried + 1,
                        max_attempts=retries,
                        wait_seconds=wait,
                        reason=failure.reason,
                    )
                )
                if cancel is not None:
                    if cancel.wait(wait):
                        raise Cancelled("cancelled while waiting to retry") from None
                else:
                    time.sleep(wait)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _redacted(self, failure: Failure) -> Failure:
        """``failure`` with the key and URL credentials removed (a server may echo them)."""
        return dataclasses.replace(
            failure,
            reason=self._secrets.text(failure.reason),
            message=self._secrets.text(failure.message),
        )

    def backoff(self, tried: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``tried + 1``: ``retry-after`` or base × 2^tried, capped."""
        cap = self.settings.retry_max_delay
        if retry_after is not None:
            return min(max(retry_after, 0.0), cap)
        return min(self.settings.retry_base_delay * 2.0**tried, cap)


# --- helpers (module level so tests and other providers can use them) ---------------------


@dataclass(frozen=True)
class _Finished:
    response: ProviderResponse


class _Alive:
    """The helper saw a content event (pings never get this far: the SDK drops them)."""


_ALIVE = _Alive()

_Item = StreamEvent | _Finished | _Alive | BaseException
"""What the stream helper hands the caller's thread."""


def _limit_breakpoints(
    tools: list[dict[str, Any]], system: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> None:
    """Drop the earliest breakpoints (tools first) until at most four remain.

    The later a breakpoint, the longer the prefix it caches, so the earliest are the cheapest
    to lose; a later system breakpoint still caches the tools before it.
    """
    holders = [b for b in (*tools, *system) if "cache_control" in b]
    in_messages = sum(
        1
        for m in messages
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and "cache_control" in b
    )
    excess = len(holders) + in_messages - MAX_CACHE_BREAKPOINTS
    for block in holders[: max(excess, 0)]:
        del block["cache_control"]  # these dicts are our own copies, never the caller's


def to_response(message: anthropic.types.Message) -> ProviderResponse:
    """An SDK ``Message`` as a :class:`ProviderResponse` of plain dicts (text and tool_use)."""
    content: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            content.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
            )
    u = message.usage
    usage = Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_read_input_tokens=u.cache_read_input_tokens or 0,
        cache_creation_input_tokens=u.cache_creation_input_tokens or 0,
    )
    return ProviderResponse(content=content, stop_reason=message.stop_reason, usage=usage)
