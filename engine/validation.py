"""Reading untrusted values into ctxscope's models, with errors a user can act on.

Each function turns one kind of bad input into a one-line ``ValueError`` that names the field
and what was wrong — never a traceback, never a multi-line pydantic report.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the command line's argument checks need no pydantic
    from engine.models import Usage

from engine.terminal_text import printable


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
    from engine.models import Usage

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


SQLITE_MAX_INT = 2**63 - 1
"""The largest integer SQLite stores; a row id above it cannot exist (binding it overflows)."""


def row_id(text: str, what: str = "session id") -> int:
    """A row id typed by a user: a whole number from 1 to SQLite's largest integer."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got {_short(text)}") from None
    if not 1 <= value <= SQLITE_MAX_INT:
        raise ValueError(f"{what} must be between 1 and {SQLITE_MAX_INT}, got {value}")
    return value


def count(text: str, what: str = "the value", low: int = 1, high: int = SQLITE_MAX_INT) -> int:
    """A whole number from ``low`` to ``high`` (a limit, a message number)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got {_short(text)}") from None
    if not low <= value <= high:
        raise ValueError(f"{what} must be between {low} and {high}, got {value}")
    return value


MAX_WINDOW = 10_000_000
"""The largest context window accepted (tokens): above any model's, far below what would make
a replay plan with absurd numbers."""


def window(text: str) -> int:
    """A context window in tokens (``--window``): 1 to :data:`MAX_WINDOW`."""
    return count(text, "the window", 1, MAX_WINDOW)


_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def database_path(text: str) -> Path | str:
    """The database ``--db`` (or ``CTXSCOPE_DB``) names: a SQLite file's path, or
    ``sqlite:///PATH``, or a PostgreSQL database's URL (``postgresql://user@host:port/dbname``,
    kept as text: a Path would fold its ``//``). Any other URL is refused rather than taken as a
    file name; the message names its scheme only, never the rest (it may hold a password)."""
    url = _URL.match(text)
    if url is None:
        return Path(text)
    scheme = url.group(1).lower()
    if scheme in ("postgresql", "postgres"):
        return f"{scheme}://{text[url.end() :]}"
    if scheme != "sqlite":
        raise ValueError(
            f"{printable(scheme, one_line=True)}:// databases are not supported; give a "
            "SQLite file (a path, or sqlite:///PATH) or a postgresql:// URL"
        )
    path = text[url.end() :]
    if not path.startswith("/") or path == "/":
        raise ValueError("a sqlite:// URL names a file as sqlite:///PATH (three slashes)")
    return Path(path[1:])  # SQLAlchemy's form: sqlite:///relative.db, sqlite:////absolute.db


def seconds(text: str, what: str = "the value") -> float:
    """A duration: a finite number ≥ 0 (``nan``, ``inf`` and negatives refused)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{what} must be a number of seconds, got {_short(text)}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number of seconds ≥ 0, got {_short(text)}")
    return value


def output_file(text: str) -> Path:
    """A file to be written: its folder must exist and be writable, and it is no folder itself.

    Checked when the command line is read, so a long command never fails at its last step.
    """
    path = Path(text)
    folder = path.parent
    if path.is_dir():
        raise ValueError(f"{path} is a folder; give a file name")
    if not folder.is_dir():
        raise ValueError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"cannot write {path}: folder {folder} is not writable")
    return path


def existing_folder(text: str) -> Path:
    """A folder that must exist (a workspace), made absolute: a relative one is taken from
    the current directory (the user typed it, where they stand)."""
    path = Path(text).expanduser()
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise ValueError(f"{printable(str(path), one_line=True)} {what}")
    return path.resolve()


def workspace_refusal(path: str | Path) -> str | None:
    """Why ``path`` can never be an agent's workspace, or None when it can.

    Refused: a relative path (a recording's ``../../etc`` would be resolved against wherever
    the user stands), the root folder (the sandbox would bind the whole machine), and the home
    folder itself (it holds ``~/.ssh``, ``~/.aws`` and every project). Whether the folder exists
    is not asked here: a session may name one that is on another machine."""
    text = str(path)
    if not text:
        return "no folder named"
    if not Path(text).is_absolute():
        return "a relative path; give an absolute folder"
    real = Path(text).resolve()
    if real == Path(real.anchor):
        return "the root folder would give the agent the whole machine; give a project folder"
    try:
        home = Path.home().resolve()
    except RuntimeError:  # no home folder known
        return None
    if real == home:
        return "the home folder itself holds your keys and settings; give a project folder"
    return None


def workspace(text: str) -> Path:
    """A folder the user gives as a workspace (``--workspace``): it exists, and
    :func:`workspace_refusal` does not refuse it."""
    path = existing_folder(text)
    refused = workspace_refusal(path)
    if refused:
        raise ValueError(f"{printable(str(path), one_line=True)} cannot be a workspace: {refused}")
    return path
