"""What an error from the Anthropic SDK or its transport means: the kind of failure, whether the
retry loop tries again (and after how long the server asked it to wait), and the one line the
user reads when the call finally fails."""

from __future__ import annotations

import contextlib
import email.utils
import time
from dataclasses import dataclass

import anthropic
import httpx2

from engine.llm.base import (
    ErrorKind,
)
from tools.secrets import without_credentials


class StreamInterrupted(Exception):
    """The stream ended without ``message_stop`` (the connection closed cleanly mid-answer)."""


class StreamIdle(Exception):
    """No content event for ``stream_idle_timeout`` seconds (pings do not count)."""


class StreamGarbled(Exception):
    """An event's data could not be read (not JSON, or not the shape the API sends)."""


@dataclass(frozen=True)
class Failure:
    """What an exception from the SDK means for the retry loop."""

    kind: ErrorKind
    retryable: bool
    reason: str
    """Short, for StreamRetry (``overloaded (HTTP 529)``)."""
    message: str
    """For the user, when the call finally fails."""
    status: int | None = None
    retry_after: float | None = None


def classify(exc: BaseException, model: str, base_url: str | None) -> Failure | None:
    """Map an SDK or transport exception to a :class:`Failure`; None if it is not an API error."""
    where = without_credentials(base_url or "https://api.anthropic.com")
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return Failure(
            "connection",
            True,
            "timed out: no answer from the server in time",
            f"The Anthropic API at {where} did not answer in time (connect and read timeouts: "
            "CTXSCOPE_CONNECT_TIMEOUT, CTXSCOPE_READ_TIMEOUT).",
        )
    if isinstance(exc, StreamIdle):
        return Failure(
            "connection",
            True,
            f"stream stalled: {exc}",
            f"The Anthropic API at {where} stopped sending the answer: {exc}.",
        )
    if isinstance(exc, StreamGarbled):
        return Failure(
            "server",
            True,
            f"malformed stream: {exc}",
            f"The Anthropic API at {where} sent a malformed stream: {exc}.",
        )
    if isinstance(exc, StreamInterrupted | httpx2.TransportError):
        return Failure(
            "connection",
            True,
            f"stream interrupted: {exc}",
            f"The connection to {where} dropped mid-answer ({exc}).",
        )
    if isinstance(exc, anthropic.APIConnectionError):  # includes APITimeoutError
        detail = str(exc.__cause__ or exc)
        return Failure(
            "connection",
            True,
            f"connection error: {detail}",
            f"Could not reach the Anthropic API at {where} ({detail}). "
            "Check the network, or ANTHROPIC_BASE_URL.",
        )
    if not isinstance(exc, anthropic.APIStatusError):
        return None
    status = exc.status_code
    api_message = exc.api_message or str(exc)
    error_type = exc.type or ""
    retry_after = requested_wait(exc.response.headers)
    # An `error` event inside a stream arrives with HTTP 200; its type says what it is.
    if status == 529 or error_type == "overloaded_error":
        return Failure(
            "overloaded",
            True,
            f"overloaded (HTTP {status})",
            f"The Anthropic API is overloaded (HTTP {status}): {api_message}",
            status,
            retry_after,
        )
    if status == 429 or error_type == "rate_limit_error":
        return Failure(
            "rate_limit",
            True,
            f"rate limited (HTTP {status})",
            f"The Anthropic API rate limit was hit (HTTP {status}): {api_message}",
            status,
            retry_after,
        )
    if status >= 500 or error_type == "api_error":
        return Failure(
            "server",
            True,
            f"server error (HTTP {status})",
            f"The Anthropic API had a server error (HTTP {status}): {api_message}",
            status,
            retry_after,
        )
    if status == 408:
        return Failure(
            "connection", True, "request timeout (HTTP 408)", api_message, status, retry_after
        )
    if status in (401, 403):
        return Failure(
            "auth",
            False,
            "authentication",
            f"The Anthropic API refused the credentials (HTTP {status}: {api_message}). "
            "Check that ANTHROPIC_API_KEY holds a valid key, or unset it to work offline.",
            status,
        )
    if status == 400 and "prompt is too long" in api_message.lower():
        return Failure(
            "prompt_too_long",
            False,
            "prompt too long",
            f"The prompt does not fit the model's context window: {api_message}",
            status,
        )
    hint = f" (is CTXSCOPE_MODEL={model!r} a valid model name?)" if status == 404 else ""
    return Failure(
        "bad_request",
        False,
        f"bad request (HTTP {status})",
        f"The Anthropic API refused the request (HTTP {status}): {api_message}{hint}",
        status,
    )


def requested_wait(headers: httpx2.Headers) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms``, seconds or an HTTP date)."""
    with contextlib.suppress(TypeError, ValueError):
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return float(millis) / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return None if when is None else max(when.timestamp() - time.time(), 0.0)
