"""One settings model with every number of seed 000 and its default.

Values come, in increasing priority, from the defaults below, an optional ``ctxscope.toml``
and ``CTXSCOPE_*`` environment variables (``CTXSCOPE_CONTEXT_WINDOW=30000``). Bad values are
refused at start-up with a :class:`SettingsError` that names the setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

ENV_PREFIX = "CTXSCOPE_"
TOML_NAME = "ctxscope.toml"

Policy = Literal["ask", "allow", "deny"]


class SettingsError(ValueError):
    """A setting has a value ctxscope cannot use; the message names it."""


class Settings(BaseSettings):
    """Every limit, threshold and timeout of the engine (seed 000 defaults)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        validate_default=True,
        toml_file=TOML_NAME,
    )

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
    strategy: str = "layered"
    """The compaction strategy; ``layered`` is the seed-000 engine."""

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

    # --- storage ---
    db: Path | None = None
    """Database file; default ``sessions/ctxscope.db`` under the current directory."""

    @model_validator(mode="after")
    def _check_ranges(self) -> Settings:
        if self.snippet_min_lines > self.snippet_max_lines:
            raise ValueError("snippet_min_lines must not exceed snippet_max_lines")
        if self.bash_timeout > self.bash_max_timeout:
            raise ValueError("bash_timeout must not exceed bash_max_timeout")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    @property
    def threshold_tokens(self) -> int:
        """The token count at which compaction fires: ``threshold_ratio × context_window``."""
        return int(self.threshold_ratio * self.context_window)


def load_settings(toml_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings, turning validation failures into one readable :class:`SettingsError`.

    ``toml_file`` replaces ``./ctxscope.toml``; ``overrides`` (from command-line options) win
    over the environment and the file.
    """
    cls: type[Settings] = Settings
    if toml_file is not None:
        if not toml_file.is_file():
            raise SettingsError(f"settings file {toml_file} does not exist")

        class FromFile(Settings):
            model_config = SettingsConfigDict(**{**Settings.model_config, "toml_file": toml_file})

        cls = FromFile
    try:
        return cls(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"])
        if loc:
            env = ENV_PREFIX + loc.upper()
            got = err.get("input")
            problems.append(f"setting {loc} ({env}={got!r}): {err['msg']}")
        else:
            problems.append(err["msg"].removeprefix("Value error, "))
    return "invalid settings: " + "; ".join(problems)
