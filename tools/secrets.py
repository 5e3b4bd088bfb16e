"""Credentials never reach a tool's output: Bash runs without them, and their values are redacted.

Which variables are withheld is an :class:`EnvironmentPolicy` (the settings
``secret_env_patterns``, ``secret_env_allow`` and ``secret_env_url_passwords``, in the manner
of Codex's ``shell_environment_policy``: default excludes, extra excludes, names let through):

- a name matching one of ``secret_env_patterns`` (shell-style, case-insensitive: ``*KEY*``,
  ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*_PAT``,
  ``*PRIVATE*``…) is withheld;
- so is any variable whose value is a URL with a password in it (``postgres://u:pw@h/db``),
  whatever its name, unless ``secret_env_url_passwords`` is off;
- a name matching one of ``secret_env_allow`` is kept whatever the two rules above say.

Bash gets an environment without the withheld variables; whatever still prints one of their
values (a file holding the key, a command that reads it elsewhere) has it replaced by
``[redacted NAME]`` in every tool result before the result is stored or sent. Of a URL, the
``user:password`` part is what is redacted.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Protocol
from urllib.parse import urlsplit

MIN_SECRET_CHARS = 6
"""Shorter values are not redacted: replacing "1" or "true" everywhere would wreck output."""

DEFAULT_SECRET_PATTERNS = (
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_PAT",
    "*PRIVATE*",
    "ANTHROPIC_BASE_URL",
)
"""The names withheld by default (``secret_env_patterns``). ``*_PAT`` and not ``*PAT*``, which
would take ``PATH``; ``ANTHROPIC_BASE_URL`` because a proxy's address may carry a key in its
path, not only in ``user:password@``."""


class SecretSettings(Protocol):
    """The settings this module reads (:class:`tools.base.ToolSettings` has them too; defined
    here so that ``tools.base``, which imports this module, is not imported back)."""

    @property
    def secret_env_patterns(self) -> list[str]: ...
    @property
    def secret_env_allow(self) -> list[str]: ...
    @property
    def secret_env_url_passwords(self) -> bool: ...


def is_secret_name(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatchcase(upper, pattern.upper()) for pattern in patterns)


@dataclass(frozen=True)
class EnvironmentPolicy:
    """Which variables of ctxscope's environment the agent's commands do not get."""

    secret_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    allow_patterns: tuple[str, ...] = ()
    url_passwords: bool = True

    @classmethod
    def from_settings(cls, settings: SecretSettings) -> EnvironmentPolicy:
        return cls(
            tuple(settings.secret_env_patterns),
            tuple(settings.secret_env_allow),
            bool(settings.secret_env_url_passwords),
        )

    def withheld(self, name: str, value: str) -> bool:
        if is_secret_name(name, self.allow_patterns):
            return False
        if is_secret_name(name, self.secret_patterns):
            return True
        return self.url_passwords and bool(url_credentials(value))

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` without the withheld variables."""
        return {k: v for k, v in env.items() if not self.withheld(k, v)}


QUERY_PASSWORD = re.compile(r"(?i)([?&](?:ssl)?password=)([^&#]*)")
"""A password given in a URL's query, as libpq's URIs allow (``postgresql://u@h/db?password=
pw``)."""


def url_credentials(url: str) -> list[str]:
    """The ``user:password`` (and the password alone) embedded in a URL, if any, and a
    password given in its query (``?password=``)."""
    if "://" not in url:
        return []
    found = [m[2] for m in QUERY_PASSWORD.finditer(url) if m[2]]
    if "@" not in url:
        return found
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return found
    if parts.password:
        found.append(parts.password)
    if parts.username and parts.password:
        found.append(f"{parts.username}:{parts.password}")
    return found


def without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` removed (for messages and logs)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not (parts.username or parts.password):
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return parts._replace(netloc=host).geturl()


class Redactor:
    """Replaces known secret values with ``[redacted NAME]`` in strings and nested data."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        """``secrets``: value → the name shown in its place."""
        usable = {v: n for v, n in secrets.items() if len(v) >= MIN_SECRET_CHARS}
        # Longest first, so a value containing another is replaced whole.
        self._pairs = sorted(usable.items(), key=lambda item: -len(item[0]))

    @classmethod
    def from_environment(
        cls,
        policy: EnvironmentPolicy | Iterable[str],
        env: Mapping[str, str] | None = None,
    ) -> Redactor:
        """The values of ``env`` (default: this process', credentials handed over at start
        included) that ``policy`` withholds; a list of name patterns is a policy with them."""
        if not isinstance(policy, EnvironmentPolicy):
            policy = EnvironmentPolicy(tuple(policy))
        env = {**os.environ, **_handed_over} if env is None else env
        secrets: dict[str, str] = {}
        for name, value in env.items():
            if not value or not policy.withheld(name, value):
                continue
            credentials = url_credentials(value)
            if credentials:
                for found in credentials:
                    secrets[found] = name
            elif "://" not in value:  # a URL without credentials is not secret
                secrets[value] = name
        return cls(secrets)

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def text(self, text: str) -> str:
        for value, name in self._pairs:
            if value in text:
                text = text.replace(value, f"[redacted {name}]")
        return text

    def value(self, data: Any) -> Any:
        """``data`` (JSON-like: dicts, lists, strings) with every string redacted."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, dict):
            return {self.value(k): self.value(v) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.value(item) for item in data]
        return data


# ------------------------------------------------------- credentials handed over at start
HANDOVER_FD_VARIABLE = "CTXSCOPE_CREDENTIALS_FD"
"""Names the inherited pipe that carries the credentials ctxscope removed from its own
environment before re-executing itself (``cli.workbench``): ``/proc/<pid>/environ`` of the
running ctxscope then holds no key."""

_handed_over: dict[str, str] = {}


def receive_handed_over() -> dict[str, str]:
    """Read the credentials from the pipe named by :data:`HANDOVER_FD_VARIABLE`, once: the
    pipe is closed and the variable removed after. Unset (no key at start, or not started by
    the console script): nothing."""
    number = os.environ.pop(HANDOVER_FD_VARIABLE, None)
    if number is None or not number.isdigit():
        return dict(_handed_over)
    fd = int(number)
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return dict(_handed_over)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        name, _, value = line.partition("=")
        if name and value:
            _handed_over[name] = value
    return dict(_handed_over)


def credential(name: str) -> str | None:
    """A credential by its environment name: handed over at start, else the environment."""
    return _handed_over.get(name) or os.environ.get(name) or None
