"""The engine's data model: what a session holds, as pydantic models.

peewee rows stay inside ``engine/store``; everything else sees these models.

Conventions of seed 000 (D1, E1):
- a ``tool`` message's ``content`` is the *compressed* result as a JSON string; its full
  result lives in an :class:`Observation` (what the scratchpad showed the model);
- an ``assistant`` step message's ``content`` is the model's own text (the thought) and its
  ``tool_calls`` are the actions;
- a round opens at a ``user`` message and closes with the assistant's final answer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The todo list and Recall hits belong to the tools (below the engine); re-exported here.
from tools.base import RecallHit as RecallHit
from tools.base import TodoItem as TodoItem
from tools.base import TodoStatus as TodoStatus

Role = Literal["user", "assistant", "tool", "summary"]

MISSING_RESULT = "No result was recorded for this tool call."
"""The error result that pairs a ``tool_use`` whose result never came (an import, a request
built while a round is open): the one text for every such pairing."""

BUILT_WHEN_USED = ConfigDict(defer_build=True)
"""The config of a model no other model holds (its schema would be built again inside the
other's) and that ``context`` does not read: pydantic builds its validator when it first
validates one, not when ``engine.models`` is imported (issue 44: the five of them were ~0.5 %
of every looking command's start)."""


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


class ToolCall(BaseModel):
    """One action of an assistant step: a ``tool_use`` block."""

    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class MessageMeta(BaseModel):
    """Auxiliary facts about a message (seed D1: step, tool_name, ...)."""

    round: int | None = None
    """Ordinal of the round (1-based) the message belongs to."""
    step: int | None = None
    """Step number within the round (1-based); None for the user input."""
    tool_name: str | None = None
    tool_use_id: str | None = None
    is_error: bool = False
    """For tool messages: the tool reported an error."""
    interrupted: bool = False
    """A synthetic message written when a round was interrupted or a result was missing."""
    final: bool = False
    """For assistant messages: the final answer of the round."""
    origin: dict[str, Any] | None = None
    """For imported messages: what the recorded session held beyond the wire form (its
    ``thinking`` blocks, which are kept but never sent back; ``demonstration``; the record's
    ``uuid``). None for live messages."""


class Message(BaseModel):
    """One message of history (L3)."""

    id: int | None = None
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    meta: MessageMeta = Field(default_factory=MessageMeta)
    tokens: int | None = None
    """Cached token count of this message as sent (see engine.messages.tokens)."""
    pinned: bool = False
    """Pinned by the user: no strategy ever archives it (nor the rest of its step)."""
    created_at: datetime = Field(default_factory=utcnow)


class RoundStatus(StrEnum):
    OPEN = "open"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    ERROR = "error"


class Round(BaseModel):
    """One user input through the assistant's final answer, with any number of tool calls."""

    model_config = BUILT_WHEN_USED

    id: int | None = None
    session_id: int
    index: int
    """1-based ordinal within the session."""
    status: RoundStatus = RoundStatus.OPEN
    archived: bool = False
    """True once a compaction moved this round's messages to an archived segment."""
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    error: str | None = None


class Placement(StrEnum):
    """Where a strategy puts its summary in the request (see ``engine.compaction.placement``)."""

    SYSTEM_BLOCK = "system_block"
    """Seed 000: one ``system`` block per summary, after L1 and L2."""
    SYSTEM_HINT = "system_hint"
    """Seed 001: the summary in the seed's wrapper text, as a runtime hint in the system prompt."""
    MOCK_PAIR = "mock_pair"
    """Seed 002: the mock user message, then the summary as the assistant's answer."""
    ASSISTANT_MESSAGE = "assistant_message"
    """Seed 003: one assistant message at the start of the conversation."""
    USER_MESSAGE = "user_message"
    """Seed 004: one user message between the head (system) and the tail."""


class Summary(BaseModel):
    """A summary of archived messages, placed in the request as its strategy says."""

    id: int | None = None
    session_id: int
    content: str
    start_time: datetime | None = None
    cutoff_time: datetime | None = None
    first_round: int
    last_round: int
    fallback: bool = False
    """True when the extractive fallback replaced a timed-out or failed summary call."""
    tokens: int | None = None
    """Tokens of the summary as the request carries it (placement included)."""
    placement: Placement = Placement.SYSTEM_BLOCK
    strategy: str = "layered"
    active: bool = True
    """False once a later compaction replaced or re-compacted it (it stays in the archive)."""
    created_at: datetime = Field(default_factory=utcnow)


class Trigger(StrEnum):
    AUTO = "auto"
    MANUAL = "manual"
    EMERGENCY = "emergency"
    """The API answered "prompt is too long"."""


class Outcome(StrEnum):
    SUCCESS = "success"
    FALLBACK = "fallback"
    """Archived with the extractive summary after the summary call timed out or failed."""
    FAILED = "failed"
    """Nothing changed; see ``error``."""
    SKIPPED = "skipped"
    """Nothing to compact (not enough rounds outside the keep zone)."""


class Compaction(BaseModel):
    """The record of one compaction, successful or not."""

    model_config = BUILT_WHEN_USED

    id: int | None = None
    session_id: int
    trigger: Trigger
    strategy: str
    focus: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    messages_compacted: int = 0
    messages_retained: int = 0
    rounds_compacted: int = 0
    duration_ms: float = 0.0
    outcome: Outcome = Outcome.SUCCESS
    error: str | None = None
    summary_id: int | None = None
    placement: Placement | None = None
    """Where the summary went (None when there is none: skipped, failed)."""
    undone_at: datetime | None = None
    """When ``ctxscope uncompact`` reversed it (its messages are back in history)."""
    stats: dict[str, Any] = Field(default_factory=dict)
    """The strategy's own figures: what was measured and against what, the seed-004 F-008
    statistics, retries, superseded summaries, the raw-middle file."""
    fidelity: dict[str, dict[str, int]] | None = None
    """Of the archived messages' ledger items (``engine.compaction.ledger``), how many the summary
    names:
    ``{kind: {kept, total}}``; None without a summary."""
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def ratio(self) -> float:
        """tokens_after / tokens_before (1.0 when nothing was measured)."""
        return self.tokens_after / self.tokens_before if self.tokens_before else 1.0


class ArchivedSegment(BaseModel):
    """The raw messages a compaction removed from history, kept whole."""

    model_config = BUILT_WHEN_USED

    id: int | None = None
    compaction_id: int
    summary_id: int | None
    first_round: int
    last_round: int
    messages: list[Message]
    tokens: int = 0


class Usage(BaseModel):
    """Token usage reported by one API call."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    """The part of ``cache_creation_input_tokens`` written with the 1-hour lifetime (the
    API's ``cache_creation.ephemeral_1h_input_tokens``; priced 2x input, the rest 1.25x)."""

    @property
    def input_side(self) -> int:
        """What the request cost on the input side: input + cache read + cache creation (A6)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class UsageRecord(BaseModel):
    """A stored :class:`Usage` with where it came from."""

    id: int | None = None
    session_id: int
    round_index: int | None
    step: int | None
    usage: Usage
    local_estimate: int | None = None
    """Our own count of the same request, for calibration."""
    source: str = "api"
    """Who counted it: ``api`` for the API's answer, ``local`` for ctxscope's own count (the
    offline provider, a replay), ``import`` for a recorded session (the original agent's API
    figures)."""
    created_at: datetime = Field(default_factory=utcnow)
    model: str = ""
    """The model that answered this request, when the recording or the API says; empty:
    the session's model (what the request is priced at then)."""
    copied: bool = False
    """A fork's copy of its original's record: billed with the original, never again."""


class Observation(BaseModel):
    """The full result of one tool call as the model saw it in the scratchpad."""

    id: int | None = None
    session_id: int
    round_index: int
    step: int
    tool_use_id: str
    tool_name: str
    result: dict[str, Any]
    """The whole result envelope (status, data, error, text, stats, context)."""
    text: str
    """What the model saw."""
    tokens_full: int = 0
    tokens_compressed: int = 0
    message_id: int | None = None
    """The tool message that holds the compressed form."""


# The todo list belongs to the TodoWrite tool (tools sit below the engine); re-exported here.


class StrategyParams(BaseModel):
    """The numbers a session's strategy plans with, stored with the session and with every
    recorded switch (``engine.settings.params`` says which numbers they are)."""

    context_window: int
    """The context window the session plans in (``Settings.context_window``)."""
    numbers: dict[str, Any] = Field(default_factory=dict)
    """The strategy's own numbers: layered's ``threshold_ratio``, ``keep_rounds``,
    ``min_messages``; any other strategy's ``[strategies.<name>]`` section."""


RECORDED_PROVIDER = "import"
"""The provider of a recorded session: another agent's calls, imported or watched."""
PROXY_PROVIDER = "proxy"
"""The provider of a session ``ctxscope proxy`` recorded: another agent's calls, as sent."""


class Session(BaseModel):
    id: int | None = None
    title: str = ""
    workspace: str = ""
    provider: str = ""
    model: str = ""
    strategy: str = "layered"
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    parent_session_id: int | None = None
    """For a subagent's session: the session whose agent started it."""
    agent_id: str | None = None
    """For a subagent's session: the recorded agent id (Claude Code ``agentId``)."""
    source: str | None = None
    user: str | None = None
    """The login name it was made under, when ``record_origin`` was on."""
    machine: str | None = None
    """The machine (host name) it was made on, when ``record_origin`` was on."""
    """For a watched recording: the file and the recording's own session id it follows
    (``ctxscope watch`` finds the session again by it, so re-watching never duplicates); for a
    fork, what it is a fork of (``fork of #2 at round 6``)."""
    params: StrategyParams | None = None
    """The numbers its strategy plans with; None: none stored, it plans with the settings of
    the process that opens it."""
    workspace_given: bool = True
    """False for a session recorded by another agent (imported, watched) until the user gives
    it a workspace: ``workspace`` is then only the folder the recording names, shown and never
    used (no tool runs, no file is read there; :mod:`engine.session.workspace`)."""
    source_gone_at: datetime | None = None
    """When ``ctxscope import`` found the file this session was imported from gone (its agent
    deleted it: Claude Code after ``cleanupPeriodDays``); the session stays stored. None while
    the file is there."""

    agent: str = ""
    """For a recorded session: the agent it comes from, by its format's name (``claude-code``,
    ``codex``: :func:`engine.recordings.agents.by_name`), stored at import and watch; ``""``
    for ctxscope's own sessions and a recording whose agent is not known."""
    agent_version: str = ""
    """That agent's version as the recording says it (``2.1.39``, ``0.47.0``); ``""``: not
    recorded."""

    @property
    def recorded(self) -> bool:
        """A recorded session (imported, watched or proxied): another agent's, read-only; a
        change goes to a fork (``Store.fork_session``)."""
        return self.provider in (RECORDED_PROVIDER, PROXY_PROVIDER)


class StrategySwitch(BaseModel):
    """A recorded change of a session's compaction strategy."""

    model_config = BUILT_WHEN_USED

    previous: str
    strategy: str
    created_at: datetime = Field(default_factory=utcnow)
    previous_params: StrategyParams | None = None
    """The numbers planned with before (None: not stored, e.g. recorded before schema 11)."""
    params: StrategyParams | None = None
    """The numbers planned with from this switch on."""


class SessionInfo(BaseModel):
    """A session with the figures the sessions list shows."""

    model_config = BUILT_WHEN_USED

    session: Session
    rounds: int
    messages: int
    current_tokens: int
    """Tokens of history as stored now (summaries + kept messages)."""
    compactions: int
    started_at: datetime | None = None
    """The session's own start: its first round's (a recording's as it recorded it, not the
    time it was imported); None before its first round."""
    last_at: datetime | None = None
    """The session's own last moment: its last round's end (or start, while it runs)."""


class History(BaseModel):
    """L3 as stored: summaries in order, then the messages of the rounds not archived."""

    summaries: list[Summary] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)

    def rounds(self) -> list[list[Message]]:
        """The messages grouped by the round they belong to (``meta.round``), in order.

        One definition of a round everywhere: a compaction may leave a round without its user
        message (a cut inside it, a pin), so a round is not "from one user message to the next".
        """
        groups: list[list[Message]] = []
        current: int | None = None
        for msg in self.messages:
            if not groups or (msg.meta.round != current and msg.meta.round is not None):
                groups.append([])
                current = msg.meta.round
            groups[-1].append(msg)
        return groups
