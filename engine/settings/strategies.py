"""The strategies' own settings (``[strategies.<name>]`` of ``ctxscope.toml``), one section per
seed, and the strict section model every settings section shares.

Apart from ``engine.settings.config`` so that the one settings model stays readable: this
module holds the numbers each alternative strategy's seed gives (001-004, and masking),
``engine.settings.config`` the engine's own (seed 000) and where they come from.
``engine.settings.config`` re-exports them.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.fields import FieldInfo

StrategyName = Literal[
    "layered", "reset-hint", "mock-user", "message-window", "head-middle-tail", "masking"
]
"""Every strategy users can select (``engine.compaction.strategies`` maps each to its policy)."""


def no_bool_as_number(value: Any, info: ValidationInfo, fields: dict[str, FieldInfo]) -> Any:
    """Refuse ``true``/``false`` where a number (or text) is expected.

    pydantic's lax mode reads ``max_steps = true`` as 1; a strict type per field would also
    refuse the environment's ``CTXSCOPE_MAX_STEPS=5``, which arrives as text. Only fields
    that admit a bool take one."""
    name = info.field_name
    if isinstance(value, bool) and name in fields and not admits_bool(fields[name].annotation):
        raise ValueError(f"expected a number or text, not the boolean {str(value).lower()}")
    return value


def admits_bool(annotation: Any) -> bool:
    return annotation is bool or annotation is Any or bool in get_args(annotation)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_bools(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_as_number(value, info, cls.model_fields)


class StrategySection(Section):
    """A strategy's own section: its numbers, and how they follow the session's window."""

    def in_window(self, window: int) -> Self:
        """The section for a session in a ``window``-token context window (a replay's
        ``--window``); this one keeps its numbers (its strategy reads the session's window
        itself, or none). Numbers set explicitly in the section are kept."""
        return self


class ResetHintSettings(StrategySection):
    """Seed 001 (mini-claude-code): ``MODEL_CONTEXT_LIMIT`` and ``COMPRESS_THRESHOLD``."""

    context_limit: int = Field(128_000, gt=0)
    """The model's context limit the threshold is a share of (001: 128 000)."""
    threshold_ratio: float = Field(0.8, gt=0, le=1)
    """Compaction fires when the last API prompt tokens are *over* this share (001: 0.8)."""

    def in_window(self, window: int) -> Self:
        """Seed 001's ``context_limit`` is the session's window."""
        return self.model_copy(update={"context_limit": window})


MOCK_USER_PROFILES: dict[str, tuple[int, int, int]] = {
    "init": (200_000, 150_000, 3),
    "execute": (1_000_000, 700_000, 5),
}
"""Seed 002's two agents: (context window, compact trigger, keep recent steps)."""


class MockUserSettings(StrategySection):
    """Seed 002 (Init / Execute agents): a profile, each of its numbers overridable."""

    profile: Literal["init", "execute"] = "init"
    """``init``: 200 000 / 150 000 / 3; ``execute``: 1 000 000 / 700 000 / 5."""
    context_window: int | None = Field(None, gt=0)
    """Overrides the profile's context window (002: ``API_HARD_LIMIT``), the window of the model
    the profile is for. Requests stay inside the session's ``context_window`` (the model asked);
    when that is at or below the trigger, a notice names this window as the fix."""
    trigger_tokens: int | None = Field(None, gt=0)
    """Overrides the profile's ``COMPACT_TRIGGER_THRESHOLD``: compacts when total > this."""
    keep_recent_steps: int | None = Field(None, ge=1)
    """Overrides the profile's ``KEEP_RECENT_STEPS`` (the last N steps sent whole)."""
    long_result_chars: int = Field(5000, ge=0)
    """002 step 5 (optional): a tool result longer than this is sent as its first and last
    1 000 characters, in the running round and in history's last N steps; 0 turns it off."""
    summary_max_tokens: int = Field(4000, gt=0)
    """``max_tokens`` of the summary call (002: ``max_tokens=4000``)."""
    min_gain_ratio: float = Field(0.05, ge=0, lt=1)
    """An automatic compaction expected to free less than this share of the trigger (the
    tokens it replaces as sent, less the mock user turn) is skipped before its summary call,
    and said; once the summary is written, the floor is checked again with its own size, and
    a compaction under it is not stored. The seed compacts to shrink the request (155K →
    70K, 720K → 200K); 5 % of the init trigger is 7 500 tokens, nearly twice the 4 000-token
    summary its call may write, so a compaction under the floor could free less than the
    summary costs. 0: no floor."""

    def resolved(self) -> tuple[int, int, int]:
        """(context window, trigger tokens, keep recent steps) after the overrides."""
        window, trigger, keep = MOCK_USER_PROFILES[self.profile]
        return (
            self.context_window or window,
            self.trigger_tokens or trigger,
            self.keep_recent_steps or keep,
        )

    def in_window(self, window: int) -> Self:
        """Seed 002's profile window is the session's, its trigger at the same share of it
        (init: 150 000 of 200 000, 75 %), unless set."""
        profile_window, trigger, _ = MOCK_USER_PROFILES[self.profile]
        update: dict[str, Any] = {"context_window": self.context_window or window}
        if self.trigger_tokens is None:
            update["trigger_tokens"] = math.floor(window * trigger / profile_window)
        return self.model_copy(update=update)


class MessageWindowSettings(StrategySection):
    """Seed 003 (ship.json ``context``)."""

    max_messages: int = Field(60, ge=1)
    """``chatHistory.inMemoryMaxMessages``: compaction when history holds more (003: 60)."""
    keep_last: int = Field(30, ge=1)
    """``chatHistory.compactKeepLastMessages``: messages kept after compaction (003: 30)."""
    log_window: int = Field(200, ge=2)
    """``agentContext.windowEntries``: execution-log entries kept (003: 200)."""
    max_injected_messages: int = Field(120, ge=1)
    """``maxInjectedMessages``: messages the loading tools may inject in one run (003: 120)."""
    injected_max_chars: int = Field(12_000, ge=100)
    """An injected transcript or log longer than this is cut, with a marker (ctxscope's guard;
    the seed sets none)."""


class HeadMiddleTailSettings(StrategySection):
    """Seed 004 (the Context Compact PRD)."""

    context_limit: int | None = Field(None, gt=0)
    """``CONTEXT_TOKEN_LIMIT``; default: the session's context window."""
    threshold_ratio: float = Field(0.92, gt=0, le=1)
    """``COMPACT_THRESHOLD_RATIO``: compacts when the request is at or over this share."""
    tail_retention_ratio: float = Field(0.25, gt=0, lt=1)
    """``TAIL_RETENTION_RATIO`` (the PRD leaves it open): the tail kept whole is this share of
    the limit. 0.25 leaves, after a compaction at 92 %, about two thirds of the window for new
    work before the next one, while a 200k window still keeps ~50k tokens of recent steps."""
    max_retries: int = Field(2, ge=0)
    """``COMPACT_MAX_RETRIES``: further summary attempts before the compaction is skipped."""


class MaskingSettings(StrategySection):
    """Observation masking (JetBrains, "The Complexity Trap"; OpenHands' masking condenser)."""

    keep_last_observations: int = Field(10, ge=1)
    """Observations sent whole; older ones become a one-line placeholder. 10 is the window the
    JetBrains study found best for masking (M = 10 turns) on SWE-bench Verified."""


class StrategySettings(Section):
    """``[strategies.<name>]`` sections of ``ctxscope.toml``."""

    reset_hint: ResetHintSettings = Field(default_factory=ResetHintSettings, alias="reset-hint")
    mock_user: MockUserSettings = Field(default_factory=MockUserSettings, alias="mock-user")
    message_window: MessageWindowSettings = Field(
        default_factory=MessageWindowSettings, alias="message-window"
    )
    head_middle_tail: HeadMiddleTailSettings = Field(
        default_factory=HeadMiddleTailSettings, alias="head-middle-tail"
    )
    masking: MaskingSettings = Field(default_factory=MaskingSettings)

    def in_window(self, window: int) -> StrategySettings:
        """Every section for a session in a ``window``-token context window, each scaled as its
        own :meth:`StrategySection.in_window` says (seed 004's limit follows the session's
        window unless set, by itself)."""
        sections = {name: getattr(self, name).in_window(window) for name in type(self).model_fields}
        return self.model_copy(update=sections)
