"""One settings model with every number of seed 000 and its default.

Values come, in increasing priority, from the defaults below, the user's own settings file
(``~/.config/ctxscope/ctxscope.toml``), an optional ``ctxscope.toml`` where ctxscope starts
(which may only tighten safety settings: :mod:`engine.settings.safety`) and ``CTXSCOPE_*``
environment variables (``CTXSCOPE_CONTEXT_WINDOW=30000``). Bad values are refused at start-up
with a :class:`SettingsError` that names the setting.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from engine.settings.safety import SAFETY_RULES, user_settings_file, weakening
from engine.settings.sources import SourceError, merged_values, toml_values
from engine.settings.strategies import Section, StrategyName, StrategySettings, no_bool_as_number
from tools.secrets import DEFAULT_SECRET_PATTERNS

ENV_PREFIX = "CTXSCOPE_"
TOML_NAME = "ctxscope.toml"

Policy = Literal["ask", "allow", "deny"]


class ModelPrice(Section):
    """A model's price set in the settings, dollars per million tokens, and its minimum
    cacheable prefix: for a model genai-prices does not know, or a price other than its list
    price (``engine/figures/prices.py``). The ratios default to Anthropic's: a 5-minute cache write
    1.25x the input price, a 1-hour one 2x, a cache read 0.1x.
    """

    input: float = Field(ge=0)
    """Dollars per million uncached input tokens."""
    output: float = Field(ge=0)
    """Dollars per million output tokens."""
    cache_write_ratio: float = Field(1.25, ge=0)
    """A cache write (5-minute TTL) costs this times the input price."""
    cache_write_1h_ratio: float = Field(2.0, ge=0)
    """A cache write with the 1-hour TTL costs this times the input price (Claude Code 2.1
    writes its whole cache so)."""
    cache_read_ratio: float = Field(0.1, ge=0)
    """A cache read costs this times the input price."""
    min_cacheable: int = Field(1024, ge=0)
    """A prefix shorter than this many tokens is not cached (Anthropic: 1 024 for most models,
    4 096 for Opus 4.5 and 4.6 and Haiku 4.5)."""

    def write_ratio(self, lifetime: str) -> float:
        """What a cache write of ``lifetime`` (``5m`` / ``1h``) costs, times the input price."""
        return self.cache_write_1h_ratio if lifetime == "1h" else self.cache_write_ratio

    def usage_cost(self, usage: Any) -> float:
        """Dollars for one recorded :class:`~engine.models.Usage`, each cache write priced by
        its recorded lifetime (the 1-hour part at 2x input, the rest at 1.25x)."""
        hour = min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens)
        five = usage.cache_creation_input_tokens - hour
        return (
            float(
                usage.input_tokens * self.input
                + five * self.input * self.cache_write_ratio
                + hour * self.input * self.cache_write_1h_ratio
                + usage.cache_read_input_tokens * self.input * self.cache_read_ratio
                + usage.output_tokens * self.output
            )
            / 1_000_000
        )


class SettingsError(ValueError):
    """A setting has a value ctxscope cannot use; the message names it."""


class Settings(BaseModel):
    """Every limit, threshold and timeout of the engine (seed 000 defaults).

    Built like any model, ``Settings(keep_rounds=2)``, it also reads the environment and
    ``./ctxscope.toml`` (or ``_toml_file``) through :mod:`engine.settings.sources`: keywords
    win over ``CTXSCOPE_*`` variables, which win over the file.
    """

    model_config = ConfigDict(extra="ignore", validate_default=True)

    def __init__(self, _toml_file: Path | str = TOML_NAME, **values: Any) -> None:
        model, user = type(self), user_settings_file()
        try:
            merged = merged_values(model, values, ENV_PREFIX, _toml_file, under=user)
            # The workspace file's safety settings that nothing above it sets: each must be
            # at least as tight as what the user's own sources give (engine.settings.safety).
            checked = set(SAFETY_RULES) & set(toml_values(model, Path(_toml_file)))
            checked -= set(merged_values(model, values, ENV_PREFIX, None))
            trusted = merged_values(model, values, ENV_PREFIX, None, under=user) if checked else {}
        except SourceError as exc:
            raise SettingsError(f"invalid settings: {exc}") from None
        super().__init__(**merged)
        if checked:
            base = model.__new__(model)  # validated as any model, without reading files
            BaseModel.__init__(base, **trusted)
            for name in sorted(checked):
                refusal = weakening(
                    name, getattr(self, name), getattr(base, name), Path(_toml_file)
                )
                if refusal is not None:
                    raise SettingsError(refusal)

    # --- token budget (A6, C7, E5) ---
    context_window: int = Field(200_000, gt=0)
    """Model context window in tokens (seed A6/E5: 200 000)."""
    threshold_ratio: float = Field(0.8, gt=0, le=1)
    """Compaction fires when the estimated input reaches this share of the window (A6: 0.8)."""
    min_messages: int = Field(3, ge=0)
    """Compaction is only considered with at least this many history messages (A6: 3)."""
    input_chars_per_token: int = Field(3, gt=0)
    """The pre-estimate of the new user input is ``len(text) // this`` (A6: 3)."""

    # --- history compaction (A4, C6, E2) ---
    keep_rounds: int = Field(10, ge=1)
    """Compaction keeps at least this many of the most recent whole rounds (A4/C6: 10)."""
    summary_timeout: float = Field(120.0, gt=0)
    """Seconds the summary call may take before the fallback is used (E2: 120 s)."""
    summary_model: str | None = None
    """The model a separate summary call asks (C2: "可配置模型，默认使用当前模型", a configurable
    model, by default the current one; 004 F-004's ``model``); unset: the session's model.
    Seed 002's summary is asked of the live conversation, so it stays the session's model."""
    strategy: StrategyName = "layered"
    """The compaction strategy of new sessions; ``layered`` is the seed-000 engine."""
    strategies: StrategySettings = Field(default_factory=StrategySettings)
    """Each strategy's own numbers (``[strategies.<name>]``, or e.g.
    ``CTXSCOPE_STRATEGIES__RESET_HINT__CONTEXT_LIMIT``)."""

    # --- tool-result compression for history (A3) ---
    read_max_lines: int = Field(500, gt=0)
    """Read returns, and history keeps, at most this many lines (A3: 500)."""
    read_max_line_chars: int = Field(2000, gt=0)
    """Longer lines are cut with a marker."""
    grep_max_lines: int = Field(5, gt=0)
    """History keeps this many Grep matches, with file and line number (A3: 5)."""
    glob_max_entries: int = Field(10, gt=0)
    """History keeps this many Glob matches (A3: 5-10)."""
    ls_max_entries: int = Field(20, gt=0)
    """History keeps this many LS entries (A3: first N)."""
    snippet_min_lines: int = Field(20, gt=0)
    """Edit/Write snippets in history keep at least this many lines when available (A3: 20)."""
    snippet_max_lines: int = Field(50, gt=0)
    """Edit/Write snippets in history keep at most this many lines (A3: 50)."""
    bash_stderr_tail_lines: int = Field(20, gt=0)
    """History keeps this many trailing stderr lines of Bash (A3: 20)."""
    generic_max_chars: int = Field(2000, gt=0)
    """Unknown tools: history keeps this many characters of data, marked truncated."""

    # --- @file (A7) ---
    atfile_max: int = Field(5, gt=0)
    """At most this many @file reminders per input (A7: 5)."""

    # --- tools ---
    bash_timeout: float = Field(120.0, gt=0)
    """Default Bash timeout in seconds."""
    bash_max_timeout: float = Field(600.0, gt=0)
    """Largest Bash timeout a call may ask for."""
    bash_output_cap: int = Field(30_000, gt=0)
    """Characters of stdout and of stderr captured per Bash call (head and tail kept)."""
    tool_max_results: int = Field(500, gt=0)
    """Grep lines, Glob paths and LS entries one call shows the model; the rest are counted."""
    bash_policy: Policy = "ask"
    """Whether Bash runs: ask the user, allow, or deny. Headless runs deny unless --allow-bash."""
    bash_sandbox: Literal["auto", "bwrap", "unshare", "none"] = "auto"
    """Where Bash runs (``tools.sandbox``): ``auto`` takes bubblewrap when installed, else
    ``unshare`` where the kernel allows unprivileged namespaces, else ``none`` (the guard
    alone, said in every result); ``none`` turns the sandbox off."""
    bash_network: bool = False
    """Whether a sandboxed Bash command may use the network (false: an empty network
    namespace, only a loopback that is down). Without a sandbox the network is always there."""
    bash_unix_sockets: bool = False
    """Whether a sandboxed Bash command may create Unix sockets. Off: ``socket(AF_UNIX)`` is
    refused, since a socket on a read-only mount can still be connected to (the user's D-Bus
    session, Docker, an SSH agent: ways out of the sandbox); ``socketpair`` still works."""
    bash_max_processes: int = Field(256, ge=0)
    """Processes (and threads) one sandboxed Bash call may run at once (``RLIMIT_NPROC``,
    counted in the sandbox's own user namespace; 0: no limit). The kernel does not apply it
    to root, nor is it set without a sandbox, where it would count all the user's processes."""
    bash_max_memory_mb: int = Field(2048, ge=0)
    """MiB of heap and private writable memory per process of a Bash call (``RLIMIT_DATA``;
    0: no limit)."""
    bash_max_address_space_mb: int = Field(0, ge=0)
    """MiB of address space per process of a Bash call (``RLIMIT_AS``; 0: no limit). Off by
    default: the JVM and others reserve several GiB they never use."""
    bash_max_file_mb: int = Field(1024, ge=0)
    """Largest file, in MiB, a process of a Bash call may write (``RLIMIT_FSIZE``; 0: no
    limit)."""
    bash_max_cpu_seconds: int = Field(600, ge=0)
    """CPU seconds per process of a Bash call (``RLIMIT_CPU``; 0: no limit)."""
    bash_tmp_mb: int = Field(256, ge=0)
    """Size in MiB of a sandboxed Bash call's private ``/tmp`` (a tmpfs, so memory; 0: no
    limit but the machine's)."""
    edit_policy: Policy = "ask"
    """Whether Edit/MultiEdit/Write run: ask the user or allow."""

    # --- agent loop and provider ---
    max_steps: int = Field(50, gt=0)
    """Steps (model calls) per round before the round is ended as runaway."""
    model: str = "claude-sonnet-4-6"
    """Anthropic model name, or ``offline`` for the rule-based provider."""
    max_tokens: int = Field(8192, gt=0)
    """Largest answer per model call."""
    max_retries: int = Field(4, ge=0)
    """Retries of 429/5xx/connection errors before a round fails."""
    retry_base_delay: float = Field(1.0, ge=0)
    """First backoff wait in seconds; doubled on each retry."""
    retry_max_delay: float = Field(30.0, ge=0)
    """Upper bound of one backoff wait."""

    cache_lifetime: Literal["5m", "1h"] = "5m"
    """The lifetime replay's cache model gives its writes, and prices them at: ``5m`` (1.25x
    input) or ``1h`` (2x input, what Claude Code 2.1 uses)."""

    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Prices set here (``[prices.<model>]``), used over the list prices of the installed
    genai-prices package: a dated name (``claude-haiku-4-5-20251001``) takes its longest listed
    prefix's. A model neither knows gets no cost, never another model's price."""

    validate_requests: bool = False
    """Debug mode: check every outgoing request as the Messages API would, and stop the round
    with the problems instead of sending an invalid one (the test suite turns it on)."""

    # --- storage ---
    record_origin: bool = False
    """Store with each new session the login name and machine it was made on, so that a
    team's shared database can tell whose it is (``sessions --user/--machine``). Off: nothing
    about who or where is stored (storage.md)."""
    db: Path | str | None = None
    """Database file, or a PostgreSQL database's URL (``postgresql://user@host:port/dbname``,
    the password from ``PGPASSWORD`` or ``~/.pgpass``: storage.md); default one per
    installation, never the current directory's: a source checkout's ``sessions/ctxscope.db``,
    else ``$XDG_DATA_HOME/ctxscope/ctxscope.db`` (``~/.local/share/ctxscope/ctxscope.db``)."""
    data_dir: Path | None = None
    """Files written beside the database (seed 004's raw middles, seed 003's execution log),
    one folder per database and session inside; default ``<database folder>/data``."""

    # --- safety: shared databases, secrets, timeouts (issue 10) ---
    db_busy_timeout: float = Field(30.0, gt=0)
    """Seconds a database write waits for another process' write before giving up."""
    connect_timeout: float = Field(10.0, gt=0)
    """Seconds to establish a connection to the model API (each attempt)."""
    read_timeout: float = Field(120.0, gt=0)
    """Seconds the model API may stay silent (no byte received) before the attempt fails."""
    stream_idle_timeout: float = Field(120.0, gt=0)
    """Seconds a streamed answer may go without a content event (text, tool input, message
    start or stop; ``ping`` events do not count) before the attempt fails and is retried: a
    server that only pings would otherwise hold the round forever, since every ping resets
    ``read_timeout``."""
    secret_env_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_SECRET_PATTERNS))
    """Environment variables (shell-style name patterns, case-insensitive) withheld from
    Bash; their values are also redacted from every tool output (``tools.secrets``)."""
    secret_env_allow: list[str] = Field(default_factory=list)
    """Name patterns Bash gets even when ``secret_env_patterns`` or
    ``secret_env_url_passwords`` would withhold them (e.g. ``["KEYBOARD_*"]``)."""
    secret_env_url_passwords: bool = True
    """Withhold from Bash, and redact, any variable whose value is a URL with a password in it
    (``postgres://user:pw@host/db``), whatever its name."""

    # --- watching another agent (issue 19, ``ctxscope watch``) ---
    watch_poll_interval: float = Field(0.2, gt=0, le=10)
    """Seconds between two looks at a watched file's size (a look that finds nothing new
    reads nothing)."""
    watch_claude_dir: Path | None = None
    """Where Claude Code keeps its sessions (``watch`` without a path follows the newest);
    unset: ``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``."""
    watch_codex_dir: Path | None = None
    """Where Codex keeps its rollouts (``watch`` without a path follows the newest of these and
    Claude Code's); unset: ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``. The
    ``config.toml`` one folder up gives ``model_auto_compact_token_limit``."""
    watch_codex_compact_ratio: float = Field(0.9, gt=0, le=1)
    """Codex's documented default auto-compact point, as a share of its *raw* window (its
    ``auto_compact_token_limit``: 90 %, 272 000 → 244 800), used when its ``config.toml`` sets
    no ``model_auto_compact_token_limit`` (:mod:`engine.recordings.agents.codex`)."""
    watch_context_window: int = Field(200_000, gt=0)
    """The documented default window of a recorded agent whose window nothing else gives:
    not the recording, the user's agent settings nor the model's entry in genai-prices
    (Claude Code's default window: 200 000; :mod:`engine.recordings.agents`)."""
    watch_compact_reserve: int = Field(33_000, ge=0)
    """Claude Code's documented reserve: it compacts when its context reaches its window (or
    its ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` / ``autoCompactWindow``) less this, 20 000 kept
    for the summary plus a 13 000 buffer (200 000 → 167 000, 1 000 000 → 967 000; the corpus'
    recorded automatic compaction fired at 167 094, see docs/watch.md)."""
    watch_warn_ratio: float = Field(0.85, gt=0, le=1)
    """``watch`` warns once the context reaches this share of the auto-compact trigger."""
    degenerate_spiral_requests: int = Field(3, ge=0)
    """A compaction that comes within this many API calls of the one before it is flagged as a
    spiral (``import``, ``watch``, ``report``: docs/importing.md#degenerate-compactions)."""
    degenerate_min_freed: float = Field(0.2, ge=0, le=1)
    """A compaction that freed less than this share of the context it started from (the next
    call's input against the recorded ``preTokens``; for ctxscope's own, tokens after against
    before) is flagged."""

    @field_validator("*", mode="before")
    @classmethod
    def _strict_bools(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_as_number(value, info, cls.model_fields)

    @model_validator(mode="after")
    def _check_ranges(self) -> Settings:
        if self.snippet_min_lines > self.snippet_max_lines:
            raise ValueError("snippet_min_lines must not exceed snippet_max_lines")
        if self.bash_timeout > self.bash_max_timeout:
            raise ValueError("bash_timeout must not exceed bash_max_timeout")
        return self

    @property
    def threshold_tokens(self) -> int:
        """The smallest token count at which seed 000's compaction fires:
        ``ceil(threshold_ratio × context_window)`` (the rule compares with the float product,
        so this is the one integer threshold every figure and check uses)."""
        return math.ceil(self.threshold_ratio * self.context_window)


# ---------------------------------------------------------------------- paths, in one place
SOURCE_ROOT = Path(__file__).resolve().parent.parent
"""The folder ctxscope's packages are in: a source checkout's root (its ``pyproject.toml`` and
``sessions/`` beside them), or an installation's ``site-packages``."""


def default_database() -> Path:
    """The database when neither ``--db`` nor the ``db`` setting (``CTXSCOPE_DB``) names one:
    one per installation, never the current directory's. Run from a source checkout (an
    editable install too): its ``sessions/ctxscope.db``, the design's place. Installed as a
    package: the user's data folder, ``$XDG_DATA_HOME/ctxscope/ctxscope.db`` (an unset or
    relative ``XDG_DATA_HOME`` is ``~/.local/share``, as the XDG base directory spec says)."""
    if (SOURCE_ROOT / "pyproject.toml").is_file() and (SOURCE_ROOT / "sessions").is_dir():
        return SOURCE_ROOT / "sessions" / "ctxscope.db"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    data = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return data / "ctxscope" / "ctxscope.db"


def database_file(settings: Settings, given: Path | str | None = None) -> Path | str:
    """The database: ``given`` (``--db``), else the ``db`` setting, else
    :func:`default_database`; a ``postgresql://`` URL as it is (a str), a file as a Path."""
    target = given or settings.db or default_database()
    return str(target) if is_database_url(target) else Path(target)


def session_origin(settings: Settings) -> tuple[str, str] | None:
    """Who and where a new session comes from — login name, host name — when the
    ``record_origin`` setting asks to store it; None when it does not."""
    if not settings.record_origin:
        return None
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name for this uid (a container)
        user = str(os.getuid())
    return user, socket.gethostname()


def is_database_url(target: object) -> bool:
    """Does ``target`` name a PostgreSQL database rather than a file?"""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def data_folder(settings: Settings, database: Path) -> Path:
    """Files written beside the database (one folder per session inside): the ``data_dir``
    setting, else ``data/`` next to the database file."""
    return settings.data_dir or database.parent / "data"


def workspace_folder(given: Path | str | None = None, recorded: str | None = None) -> Path:
    """The folder an agent works in: ``given`` (``--workspace``), else the session's recorded
    workspace, else the current directory; absolute."""
    return Path(given or recorded or os.getcwd()).resolve()


def load_settings(toml_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings, turning validation failures into one readable :class:`SettingsError`.

    ``toml_file`` replaces ``./ctxscope.toml``; ``overrides`` (from command-line options) win
    over the environment and the file.
    """
    if toml_file is not None and not toml_file.is_file():
        raise SettingsError(f"settings file {toml_file} does not exist")
    path = toml_file or Path(TOML_NAME)
    file_values = _read_toml(path) if path.is_file() else {}
    user = user_settings_file()
    if user.is_file():
        _read_toml(user)  # its unknown keys refused as the workspace file's are
    try:
        return Settings(path, **{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise SettingsError(_describe(exc, path, file_values)) from None


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's values, after refusing any key the settings do not know."""
    import tomllib  # only with a file: most starts have none (issue 44)

    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"settings file {path} cannot be read: {exc}") from None
    unknown = _unknown_keys(values, Settings, "")
    if unknown:
        raise SettingsError(f"{path}: unknown setting {unknown[0]}")
    return values


def _unknown_keys(values: dict[str, Any], model: type[BaseModel], prefix: str) -> list[str]:
    """Dotted names of the keys of ``values`` that ``model`` has no field (or alias) for."""
    fields = {(f.alias or name): f for name, f in model.model_fields.items()}
    fields.update(model.model_fields)
    found = []
    for key, value in values.items():
        name = f"{prefix}{key}"
        field = fields.get(key)
        if field is None:
            known = ", ".join(sorted(f.alias or n for n, f in model.model_fields.items()))
            found.append(f"{name!r} (known here: {known})")
            continue
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            found += _unknown_keys(value, sub, f"{name}.")
    return found


def _describe(exc: ValidationError, toml: Path, file_values: dict[str, Any]) -> str:
    """One line per problem, naming where the bad value came from."""
    problems = []
    for err in exc.errors():
        parts = [str(p) for p in err["loc"]]
        loc = ".".join(parts)
        if not loc:
            problems.append(err["msg"].removeprefix("Value error, "))
            continue
        got = err.get("input")
        env = ENV_PREFIX + "__".join(p.replace("-", "_") for p in parts).upper()
        if env in os.environ:
            source = f"{env}={got!r}"
        elif _has_key(file_values, parts):
            source = f"{toml}: {loc} = {got!r}"
        else:
            source = f"{loc}={got!r}"
        problems.append(f"setting {loc} ({source}): {err['msg'].removeprefix('Value error, ')}")
    return "invalid settings: " + "; ".join(problems)


def _has_key(values: dict[str, Any], parts: list[str]) -> bool:
    for part in parts:
        if not isinstance(values, dict) or part not in values:
            return False
        values = values[part]
    return True
