"""Reading untrusted values into ctxscope's models, with errors a user can act on.

Each function turns one kind of bad input into a one-line ``ValueError`` that names the field
and what was wrong — never a traceback, never a multi-line pydantic report.
"""

from __future__ import annotations

import json
from typing import Any

from engine.models import Usage


def loads_line(text: str) -> Any:
    """Parse one line of JSON; nesting too deep for Python is an error, not a traceback."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def usage_from(value: Any) -> Usage:
    """An API usage object (``{"input_tokens": 1200, ...}``); unknown keys are ignored."""
    if not isinstance(value, dict):
        raise ValueError(
            f'usage must be an object like {{"input_tokens": 1200}}, got {_short(value)}'
        )
    counts: dict[str, int] = {}
    for name in Usage.model_fields:
        raw = value.get(name)
        if raw is None:
            continue
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise ValueError(f"usage.{name} must be a whole number ≥ 0, got {_short(raw)}")
        counts[name] = raw
    # The API nests the split of cache writes by lifetime; the 1-hour part is priced apart.
    split = value.get("cache_creation")
    hour = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
    if hour is not None:
        if isinstance(hour, bool) or not isinstance(hour, int) or hour < 0:
            raise ValueError(
                "usage.cache_creation.ephemeral_1h_input_tokens must be a whole number ≥ 0, "
                f"got {_short(hour)}"
            )
        counts["cache_creation_1h_input_tokens"] = hour
    return Usage(**counts)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
