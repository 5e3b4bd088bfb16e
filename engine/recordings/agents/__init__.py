"""Every recorded agent ctxscope reads, each in its own module, and the one registry that
``import``, ``watch``, ``import`` without a path, the gauge and ``report`` ask.

:data:`AGENTS` lists one :class:`~engine.recordings.agents.protocol.AgentFormat` per format,
in sniffing order (an earlier entry wins a tie). :func:`detect` tells a file's format from
its content, :func:`by_name` finds an entry by its stored name, :func:`home_folders` lists
where the agents keep their sessions, and :func:`context_rules_for_parsed` /
:func:`context_rules_for_session` give a recorded session's window and auto-compact point by
its own agent's rule, with the words that say where each figure comes from.

Adding an agent: one module here (its class and ``AGENT``), one entry in :data:`AGENTS`, its
tests and its doc section (docs/development.md, "How to add an agent").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.models import PROXY_PROVIDER, Compaction, Session, UsageRecord
from engine.recordings.agents import (
    aider,
    anthropic_jsonl,
    claude_code,
    codex,
    copilot_cli,
    gemini,
    managed_agents,
    openhands,
    trajectories,
)
from engine.recordings.agents.protocol import (
    AgentFormat,
    ContextRules,
    Folder,
    Head,
    Recorded,
    model_window,
    recorded_of_parsed,
)
from engine.recordings.base import Parsed
from engine.settings.config import Settings
from engine.store import Store

__all__ = [
    "AGENTS",
    "AgentFormat",
    "ContextRules",
    "Folder",
    "Head",
    "Recorded",
    "by_name",
    "context_rules_for_parsed",
    "context_rules_for_session",
    "detect",
    "detect_head",
    "home_folders",
    "label_of",
    "recorded_of_parsed",
    "recorded_of_session",
]

AGENTS: tuple[AgentFormat, ...] = (
    trajectories.SWE,
    trajectories.MINI,
    gemini.AGENT,
    openhands.AGENT,
    aider.AGENT,
    codex.AGENT,
    copilot_cli.AGENT,
    claude_code.AGENT,
    anthropic_jsonl.AGENT,
    managed_agents.AGENT,
)
"""In sniffing order: the whole-document formats first, then the JSON-lines ones (Gemini API
messages before Anthropic ones: both carry a ``role``)."""

_BY_NAME = {agent.name: agent for agent in AGENTS}


def detect(path: Path | None, raw: str) -> AgentFormat | None:
    """The agent whose format ``raw`` (a file's text, or its start) is in; None: none."""
    return _earliest(path, Head(raw))


def detect_head(path: Path | None, head: Head) -> AgentFormat | None:
    """:func:`detect` of a head made by the caller, who hands on to the reader what the
    sniffers decoded of it (:meth:`Head.known`)."""
    return _earliest(path, head)


def _earliest(path: Path | None, head: Head) -> AgentFormat | None:
    """The agent whose evidence comes first in ``head``, the first in :data:`AGENTS` on a
    tie."""
    best: tuple[int, int] | None = None
    for order, agent in enumerate(AGENTS):
        at = agent.looks_like(path, head)
        if at is not None and (best is None or (at, order) < best):
            best = (at, order)
    return None if best is None else AGENTS[best[1]]


def detect_records(records: list[Any]) -> AgentFormat | None:
    """The agent whose JSON-lines records these are (``watch`` reads lines, not a file)."""
    return _earliest(None, Head.of_records(records))


def by_name(name: str) -> AgentFormat | None:
    """The entry stored as ``name`` (``claude-code``, ``codex``…); None: not one ctxscope knows."""
    return _BY_NAME.get(name)


def records_times(name: str) -> bool:
    """Whether the agent stored as ``name`` writes when each step happened (True for a name
    ctxscope does not know, and for its own sessions: their times are theirs)."""
    agent = by_name(name)
    return agent is None or agent.records_times


def label_of(name: str) -> str:
    """The agent in words (``Claude Code``), ``""`` for a name ctxscope does not know."""
    agent = by_name(name)
    return agent.label if agent is not None else ""


def home_folders(env: Mapping[str, str] | None, settings: Settings) -> list[Folder]:
    """Every agent's folders, in :data:`AGENTS` order (existing or not)."""
    env = os.environ if env is None else env
    return [folder for agent in AGENTS for folder in agent.home_folders(env, settings)]


def retention_warnings(names: set[str], env: Mapping[str, str] | None = None) -> list[str]:
    """What the agents named (by format) say of how long they keep their sessions, where that
    loses history (Claude Code's ``cleanupPeriodDays``): an agent module may define
    ``retention_warning(env) -> str | None``; most keep their files and define none."""
    environ = os.environ if env is None else env
    out = []
    for agent in AGENTS:
        said = getattr(agent, "retention_warning", None)
        if agent.name in names and said is not None:
            text = said(environ)
            if text:
                out.append(text)
    return out


def companions(path: Path) -> list[Path]:
    """Files read with the session ``path`` (any agent's)."""
    return [file for agent in AGENTS for file in agent.companions(path)]


def is_companion(relative: Path) -> bool:
    """Whether a file found in a folder is read with its session, never on its own."""
    return any(agent.is_companion(relative) for agent in AGENTS)


def orphaned(relative: Path, path: Path) -> bool:
    """Whether ``path`` (``relative`` to the folder walked), a companion file, is without
    the session it belongs to: counted, not read."""
    return any(agent.is_companion(relative) and agent.orphaned(path) for agent in AGENTS)


def _rules(
    name: str, recorded: Recorded, settings: Settings, env: Mapping[str, str] | None
) -> ContextRules:
    agent = by_name(name)
    environ: Mapping[str, str] = os.environ if env is None else env
    if agent is None:
        window, source = model_window(recorded.model, settings)
        return ContextRules(window, None, source, "the recorded agent is not known: no trigger")
    return agent.context_rules(recorded, settings, environ)


def context_rules_for_parsed(
    parsed: Parsed, settings: Settings, env: Mapping[str, str] | None = None
) -> ContextRules:
    """The window and auto-compact point of a parsed recording, by its agent's rule (``env``
    None: this process's environment, where the agent's settings are found)."""
    return _rules(parsed.fmt, recorded_of_parsed(parsed), settings, env)


def context_rules_for_recorded(
    name: str, recorded: Recorded, settings: Settings, env: Mapping[str, str] | None = None
) -> ContextRules:
    """The window and auto-compact point of a recording of agent ``name`` whose facts a caller
    kept as it parsed (``watch``: :mod:`engine.recordings.follow_tally`)."""
    return _rules(name, recorded, settings, env)


def context_rules_for_session(
    store: Store,
    session: Session,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    usages: Sequence[UsageRecord] | None = None,
    compactions: Sequence[Compaction] | None = None,
) -> ContextRules:
    """The window and auto-compact point of a stored recorded session, by its agent's rule,
    from what the store kept of its recording (``usages``, ``compactions``: its usage records
    and compactions, when the caller has read them)."""
    recorded = recorded_of_session(store, session, usages, compactions)
    return _rules(agent_of(session), recorded, settings, env)


def agent_of(session: Session) -> str:
    """The agent a stored session was recorded from, as stored at import or watch (sessions
    stored before were given theirs once, by the schema step that added it); ``""``."""
    return session.agent


def recorded_of_session(
    store: Store,
    session: Session,
    usages: Sequence[UsageRecord] | None = None,
    compactions: Sequence[Compaction] | None = None,
) -> Recorded:
    """The facts the context rules read, from a stored session: its model, its largest
    recorded request, its recorded compactions' context before them, and what its first user
    message kept of the recording (``meta.origin["recorded"]``)."""
    if session.id is None:
        return Recorded(model=session.model)
    sid = session.id
    records = store.usages(sid) if usages is None else usages
    largest = max((u.usage.input_side + u.usage.output_tokens for u in records), default=0)
    done = store.compactions(sid) if compactions is None else compactions
    pre = [c.stats.get("recorded_pre_tokens") for c in done]
    first = store.first_message(sid)
    origin = (first.meta.origin if first is not None else None) or {}
    facts: dict[str, Any] = origin["recorded"] if isinstance(origin.get("recorded"), dict) else {}
    version = session.agent_version or facts.get("cli_version") or ""
    return Recorded(
        model=session.model,
        largest_call=largest,
        largest_pre_compaction=max((p for p in pre if isinstance(p, int)), default=0),
        facts=facts,
        agent_version=version if isinstance(version, str) else "",
        cwd=_cwd(facts, session),
        request_betas=_request_betas(store, session),
    )


def _request_betas(store: Store, session: Session) -> tuple[str, ...]:
    """The betas a proxied session's latest request named (its ``anthropic-beta`` header,
    stored with the request); ``()`` for a session that is not proxied."""
    if session.provider != PROXY_PROVIDER or session.id is None:
        return ()
    header = store.latest_headers(session.id).get("anthropic-beta", "")
    return tuple(b.strip() for b in header.split(",") if b.strip())


def _cwd(facts: Mapping[str, Any], session: Session) -> str:
    """The folder the recording ran in: as it recorded it, else the session's workspace while
    that is the recording's folder (not one the user gave)."""
    recorded = facts.get("cwd")
    if isinstance(recorded, str) and recorded:
        return recorded
    return "" if session.workspace_given else session.workspace


def followable() -> list[str]:
    """The agents ``watch`` can follow, in words."""
    return [agent.label for agent in AGENTS if agent.follow_glob]
