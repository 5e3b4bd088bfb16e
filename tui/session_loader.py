"""Opening a session and measuring it: the work the main screen does in its thread workers.

Everything here runs off the UI thread and returns plain data (no widgets): the agent over
the session, the conversation for the chat, the history layout with its compaction marks, the
gauge's figures, the todo list and the last round's scratchpad, all read back from the store
so that a resumed session looks exactly as it was left.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from engine.compaction.policy import Plan
from engine.context.builder import BuiltContext, ScratchResult, ScratchStep
from engine.events import EventSink
from engine.llm.base import OFFLINE_NAME, Provider
from engine.messages.tokens import count_thinking
from engine.models import History, Message, Observation, RoundStatus, Session, TodoItem
from engine.recordings.own_agent import own_agent_view, planning_settings
from engine.session import Agent
from engine.session.workspace import session_workspace
from engine.settings.config import Settings, session_origin, workspace_folder
from engine.settings.params import strategy_params
from engine.store import Store, StoreError
from engine.store.forking import Fork
from tools.base import Asker
from tui.formatting import compaction_result
from tui.gauge_state import Decision, GaugeState, heaviest_items, own_layers, steps_and_marks
from tui.widgets.block_view import Block
from tui.widgets.chat_view import ChatEntry
from tui.widgets.history_view import BlockMemo, HistoryLayout, history_blocks
from tui.widgets.scratchpad_view import blocks_from_steps

Resume = int | Literal["latest"] | None
"""Which session to open: a new one (None), the most recent, or one by id."""


@dataclass
class SessionView:
    """What the panes need after a change (a round, a compaction, a resume)."""

    layout: HistoryLayout
    blocks: list[Block]
    """The history pane's blocks for ``layout``, built off the UI thread."""
    gauge: GaugeState
    todos: list[TodoItem] = field(default_factory=list)
    built: BuiltContext | None = None
    """The idle request the figures were measured on (reused by :func:`decide` while the
    history stays the same), or None during a round."""
    undoable: int | None = None
    """The compaction an undo would reverse (the latest one not undone), or None."""


@dataclass
class OpenedSession:
    """A session ready to be shown."""

    session: Session
    agent: Agent
    workspace: Path | None
    """Where its tools work; None: the session has no workspace it may use yet (recorded by
    another agent): the screen asks for one, naming the recorded folder."""
    chat: list[ChatEntry]
    view: SessionView
    last_scratch: list[Block]
    """The last round's scratchpad, with each observation's cost (F6)."""
    memo: BlockMemo
    """The session's message blocks, reused by every later :func:`measure`."""
    notices: list[str] = field(default_factory=list)
    fork: Fork | None = None
    """The fork this session was just made as (a change asked of a recording), or None."""


def choose_session(
    store: Store,
    resume: Resume,
    workspace: Path,
    settings: Settings,
    workspace_explicit: bool = False,
) -> Session:
    """The session to open: by id, the latest (of ``workspace`` when it was given explicitly;
    a new one when there is none), or a new one."""
    if isinstance(resume, int):
        return store.get_session(resume)
    if resume == "latest":
        if workspace_explicit:
            for info in store.list_sessions():
                if Path(info.session.workspace or "") == workspace:
                    return info.session
        else:
            latest = store.latest_session()
            if latest is not None:
                return latest
    # A session is worth storing from its first input: reuse an empty one of this workspace
    # (left by a crash; a clean exit deletes it) rather than adding another "(untitled)".
    for info in store.list_sessions():
        if info.rounds == 0 and not info.session.title and info.session.workspace == str(workspace):
            return info.session
    return store.create_session(
        workspace=str(workspace),
        strategy=settings.strategy,
        params=strategy_params(settings, settings.strategy),
        origin=session_origin(settings),
    )


def forget_if_empty(store: Store, session_id: int) -> bool:
    """Delete the session if nothing was ever sent in it (UI thread, on leaving it)."""
    try:
        session = store.get_session(session_id)
    except StoreError:
        return False
    if session.recorded or session.title or store.rounds(session_id):
        return False
    store.delete_session(session_id)
    return True


def open_session(
    store: Store,
    settings: Settings,
    workspace: Path,
    resume: Resume,
    events: EventSink,
    ask: Asker,
    provider_factory: Callable[[Settings], Provider],
    workspace_explicit: bool = False,
) -> OpenedSession:
    """Open (or create) a session and build its agent and everything the panes show."""
    session = choose_session(store, resume, workspace, settings, workspace_explicit)
    assert session.id is not None
    session_id = session.id
    notices: list[str] = []
    # A recording never chooses where tools run: None until the user gives a folder.
    # (The screen asks for one, naming the recorded folder: WorkspaceModal.)
    where = session_workspace(session)
    if where is None:
        notices = []
    elif workspace_explicit and where != workspace and where.is_dir():
        notices.append(
            f"Session {session_id} works in {where}; it stays there (--workspace {workspace} "
            "applies to new sessions and to --resume without an id)."
        )
    elif not where.is_dir():
        # Never run tools in a folder the session was not recorded in: the agent keeps the
        # recorded folder, and its tools refuse to run until the session is pointed elsewhere.
        notices.append(
            f"The session's workspace {where} does not exist on this machine: its tools will "
            f"refuse to run. Point it at a folder with `ctxscope ask INPUT --session "
            f"{session_id} --workspace FOLDER --move-workspace`."
        )
    settings = planning_settings(store, session, settings)  # the numbers it plans with
    provider = provider_factory(settings)
    # A recording keeps the provider and model it was recorded with: looking changes nothing.
    if not session.recorded and (session.provider, session.model) != (
        provider.name,
        provider.model,
    ):
        session = store.update_session(session.id, provider=provider.name, model=provider.model)
    agent = Agent(store, session, settings, provider, where, events=events, ask=ask)
    memo = BlockMemo()
    messages = session_messages(store, session_id, agent.history.history)
    return OpenedSession(
        session=session,
        agent=agent,
        workspace=where,
        chat=chat_entries(store, session_id, agent.history.history, messages),
        view=measure(agent, memo, messages),
        last_scratch=last_scratchpad_blocks(store, agent),
        memo=memo,
        notices=notices,
    )


GRANTS_FILE = "always_allowed.json"
"""Beside the session's other files (``<data dir>/<database>/<session id>/``): the kinds of
tool call answered "always for this session", so that resuming the session later keeps them."""


def grants_path(agent: Agent) -> Path:
    return agent.session_file(GRANTS_FILE)


def load_grants(agent: Agent) -> set[str]:
    """The session's stored "always" answers (none when the file is absent or unreadable)."""
    try:
        data = json.loads(grants_path(agent).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {kind for kind in data if isinstance(kind, str)} if isinstance(data, list) else set()


def save_grants(agent: Agent) -> None:
    """Store the session's "always" answers (worker thread, after a round)."""
    kinds = sorted(agent.tool_ctx.always_allowed)
    path = grants_path(agent)
    if not kinds and not path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kinds), encoding="utf-8")
    except OSError:
        pass  # remembered for this run anyway; the file is a convenience


def is_offline(provider_name: str) -> bool:
    return provider_name == OFFLINE_NAME or provider_name.startswith("offline")


def session_messages(store: Store, session_id: int, history: History) -> list[Message]:
    """Every message of the session, archived or in ``history`` (L3 as the agent loaded it:
    read once, a long session takes a while), in the order written."""
    messages: list[Message] = list(history.messages)
    for segment in store.segments(session_id):
        messages.extend(segment.messages)
    messages.sort(key=lambda m: m.id or 0)
    return messages


def chat_entries(
    store: Store, session_id: int, history: History, messages: list[Message] | None = None
) -> list[ChatEntry]:
    """The whole conversation, archived rounds included, with compactions where they fell.

    ``history`` is L3 as the agent loaded it; ``messages``: :func:`session_messages`, when the
    caller has them.
    """
    if messages is None:
        messages = session_messages(store, session_id, history)
    statuses = {r.index: r.status for r in store.rounds(session_id)}
    # Messages in stored order (recorded timestamps of an import need not increase: a local
    # command's rounds were shown 5, 4, 6); a compaction goes after the last message stored
    # before it.
    notices: dict[int, list[ChatEntry]] = {}
    for comp in store.compactions(session_id):
        if comp.outcome not in ("success", "fallback") or comp.undone_at is not None:
            continue
        summary = store.summary(comp.summary_id) if comp.summary_id is not None else None
        text = compaction_result(comp, summary)
        after = sum(1 for m in messages if m.created_at <= comp.created_at)
        notices.setdefault(after, []).append(ChatEntry("notice", text))
    entries: list[ChatEntry] = list(notices.get(0, []))
    for order, msg in enumerate(messages, 1):
        entry = _chat_entry(msg, statuses)
        if entry is not None:
            entries.append(entry)
        entries.extend(notices.get(order, []))
    return entries


def _chat_entry(msg: Message, statuses: dict[int, RoundStatus]) -> ChatEntry | None:
    if msg.role == "user":
        return ChatEntry("user", msg.content, msg.meta.round)
    if msg.role == "assistant" and msg.meta.final:
        status = statuses.get(msg.meta.round or -1)
        return ChatEntry(
            "answer",
            msg.content,
            msg.meta.round,
            interrupted=msg.meta.interrupted or status == RoundStatus.INTERRUPTED,
            error=status == RoundStatus.ERROR,
        )
    return None


def last_scratchpad(
    store: Store, agent: Agent, observations: list[Observation] | None = None
) -> list[ScratchStep]:
    """The last round's scratchpad: the agent's own, or rebuilt from the stored observations
    (``observations``: that round's, when the caller has them already)."""
    if agent.last_scratchpad:
        return list(agent.last_scratchpad)
    history = agent.history.history
    if not history.messages:
        return []
    last = history.messages[-1].meta.round
    if last is None:
        return []
    if observations is None:
        observations = store.observations(agent.session_id, round_index=last)
    results = {
        o.tool_use_id: ScratchResult(
            tool_use_id=o.tool_use_id,
            tool_name=o.tool_name,
            text=o.text,
            is_error=o.result.get("status") == "error",
        )
        for o in observations
    }
    steps: list[ScratchStep] = []
    for msg in history.messages:
        if msg.meta.round == last and msg.role == "assistant" and msg.tool_calls:
            found = [results[c.id] for c in msg.tool_calls if c.id in results]
            steps.append(ScratchStep(assistant=msg, results=found))
    return steps


def last_scratchpad_blocks(store: Store, agent: Agent) -> list[Block]:
    """The last round's scratchpad as blocks, each observation with ``N tok seen → M kept``."""
    # The last round's observations, read once for both its steps and their costs.
    messages = agent.history.history.messages
    last = messages[-1].meta.round if messages and not agent.last_scratchpad else None
    observations = None if last is None else store.observations(agent.session_id, round_index=last)
    steps = last_scratchpad(store, agent, observations)
    if not steps:
        return []
    round_index = steps[0].assistant.meta.round
    if observations is None or round_index != last:
        observations = store.observations(agent.session_id, round_index=round_index)
    costs = {o.tool_use_id: (o.tokens_full, o.tokens_compressed) for o in observations}
    return blocks_from_steps(steps, costs)


def history_copy(agent: Agent) -> History:
    """A snapshot of the history as the strategy sends it (projected, masked), that the UI can
    keep while the agent goes on."""
    return agent.sent_history()


def layout_for(
    agent: Agent, store: Store, history: History | None = None, plan: Plan | None = None
) -> HistoryLayout:
    history = history or history_copy(agent)
    plan = plan or agent.plan()
    return HistoryLayout(
        history=history,
        keep_rounds=agent.settings.keep_rounds,
        cut_rounds=plan.cut_rounds,
        statuses={r.index: r.status for r in store.rounds(agent.session_id)},
    )


def decide(agent: Agent, text: str, built: BuiltContext | None = None) -> Decision:
    """The active strategy's decision for ``text`` typed now (worker thread): the one call the
    gauge, its warning and the agent all go by (``Agent.plan``)."""
    question = agent.preprocessor.process(text).text if text.strip() else ""
    return Decision.of(agent.plan(question, built), len(text))


def measure(agent: Agent, memo: BlockMemo, messages: list[Message] | None = None) -> SessionView:
    """History layout and blocks, gauge figures and todos as they stand now (worker thread);
    ``messages``: the session's, archived or not, when the caller has them
    (:func:`session_messages`)."""
    store = agent.store
    settings = agent.settings
    built, budget = agent.preview_and_budget()
    idle = built if agent.current_round is None else None
    plan = agent.plan("", idle)
    decision = Decision.of(plan)
    usages = store.usages(agent.session_id)
    compactions = store.compactions(agent.session_id)
    steps, marks = steps_and_marks(usages, compactions)
    last = usages[-1] if usages else None
    layout = layout_for(agent, store, plan=plan)
    own = own_agent_view(store, agent.session, settings, messages)
    gauge = GaugeState(
        context_window=settings.context_window,
        threshold=settings.threshold_tokens,
        chars_per_token=settings.input_chars_per_token,
        min_messages=settings.min_messages,
        layers=dict(built.layers),
        layers_source="next request (preview)",
        last_usage=None if last is None else last.usage,
        usage_source="api" if last is None else last.source,
        local_estimate=None if last is None else last.local_estimate,
        budget=budget,
        steps=steps,
        compactions_at=marks,
        warning=decision.warning,
        decision=decision,
        offline=is_offline(agent.provider.name),
        heaviest=heaviest_items(layout.history),
        thinking=sum(
            count_thinking((m.meta.origin or {}).get("thinking", []))
            for m in agent.history.history.messages
        ),
    )
    if own is not None:
        gauge = replace(
            gauge,
            own=own,
            context_window=own.context_window,
            threshold=own.compact_at or own.context_window,
            what_if_threshold=settings.threshold_tokens,
            layers=own_layers(own, built.layers["L3 summaries"]),
            layers_source="recorded",
            warning=None,  # ctxscope's strategy does not run here: its warning is not one
        )
    blocks = history_blocks(layout, memo)
    done = [c for c in compactions if c.outcome in ("success", "fallback") and not c.undone_at]
    return SessionView(
        layout=layout,
        blocks=blocks,
        gauge=gauge,
        todos=list(agent.todos),
        built=idle,
        undoable=done[-1].id if done else None,
    )


def default_workspace() -> Path:
    return workspace_folder()
