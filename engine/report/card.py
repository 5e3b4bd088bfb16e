"""``ctxscope report``: a report card of every stored session — what it used and cost, how
often it compacted, what each compaction's summary kept and what the compaction call cost,
which tools' results fill the context, how much subagents did.

Usage is read summed per session, day and side of the long-context line (the store groups it),
priced at the session's model's list price of that day (:mod:`engine.figures.prices`): a model
without a price costs ``None`` and gets a note. Every total is the sum of the per-session
figures the report also lists (``sessions``), so the two always agree.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from engine.compaction.ledger import KINDS
from engine.compaction.losses import CompactionLosses, HistoryLosses, item_json, session_losses
from engine.context.sources import request_breakdown
from engine.models import Usage
from engine.recordings.agents import records_times
from engine.recordings.degenerate import KINDS as FLAG_KINDS
from engine.recordings.degenerate import Flag, session_flags
from engine.report.figures import Figures, Prices, priced
from engine.report.figures import prices as process_prices
from engine.settings.config import Settings
from engine.store import Store
from engine.store.history import CompactionFacts, SessionFacts

GROUPINGS = ("project", "day", "agent", "model", "session")
Grouping = Literal["project", "day", "agent", "model", "session"]
LOST_MOST = 10
"""How many compactions the "lost the most" list names."""


@dataclass
class SessionLine:
    facts: SessionFacts
    agent: str
    figures: Figures = field(default_factory=Figures)
    days: dict[str, Figures] = field(default_factory=dict)
    compactions: int = 0
    models: dict[str, Figures] = field(default_factory=dict)
    """The figures by the model that answered (a request that names none: the session's)."""

    def as_json(self) -> dict[str, Any]:
        f = self.facts
        return {
            "id": f.id,
            "title": f.title,
            "project": f.workspace,
            "agent": self.agent,
            "model": f.model,
            "models": sorted(self.models),
            "parent_session_id": f.parent_session_id,
            # a run whose agent writes no time: its stored one is the import's, not shown
            "started_at": f.started_at if records_times(self.agent) else None,
            "compactions": self.compactions,
        } | self.figures.as_json()


@dataclass
class CompactionLine:
    facts: CompactionFacts
    session: SessionFacts | None
    pre_tokens: int
    after_start_minutes: float | None
    kept: dict[str, dict[str, int]]
    lost: int
    """Items of the archived part neither its summary nor the messages it kept name (files,
    commands, errors...; :mod:`engine.compaction.losses`)."""
    losses: CompactionLosses | None = None
    """Those items by name, with where they were (None: nothing archived)."""
    post_tokens: int | None = None
    """The context after it, as the original agent recorded it (Claude Code ``postTokens``)."""
    duration_ms: int | None = None
    """How long it took, as the original agent recorded it (``durationMs``)."""
    call_model: str = ""
    call_tokens: dict[str, int] = field(default_factory=dict)
    call_cost: float | None = None

    def as_json(self) -> dict[str, Any]:
        f = self.facts
        return {
            "id": f.id,
            "session_id": f.session_id,
            "title": self.session.title if self.session else "",
            "trigger": f.trigger,
            "pre_tokens": self.pre_tokens,
            "post_tokens": self.post_tokens,
            "duration_ms": self.duration_ms,
            "tokens_before": f.tokens_before,
            "tokens_after": f.tokens_after,
            "at": f.created_at,
            "minutes_after_start": None
            if self.after_start_minutes is None
            else round(self.after_start_minutes, 1),
            "fidelity": self.kept,
            "lost": self.lost,
            "lost_items": [item_json(i) for i in self.losses.lost] if self.losses else [],
            "call": {"model": self.call_model, "tokens": self.call_tokens, "cost": self.call_cost}
            if self.call_model or self.call_tokens
            else None,
        }


@dataclass
class Report:
    since: datetime | None
    by: Grouping | None
    totals: Figures
    sessions: list[SessionLine]
    groups: dict[str, Figures]
    group_sessions: dict[str, int]
    compactions: list[CompactionLine]
    tools: list[dict[str, Any]]
    notes: list[str]
    losses: HistoryLosses = field(default_factory=HistoryLosses)
    """What the compactions lost, across every session (:mod:`engine.compaction.losses`)."""
    degenerate: list[Flag] = field(default_factory=list)
    """Degenerate compactions (:mod:`engine.recordings.degenerate`), oldest session first."""
    sources: dict[str, Any] = field(default_factory=dict)
    """What the proxied sessions' last requests were made of, summed by kind and MCP server
    (exact: :mod:`engine.context.sources`)."""

    def degenerate_json(self) -> dict[str, Any]:
        costs = [f.cost for f in self.degenerate if f.cost is not None]
        return {
            "count": len(self.degenerate),
            "by_kind": {k: sum(f.kind == k for f in self.degenerate) for k in FLAG_KINDS},
            "cost": round(sum(costs), 6) if costs else None,
            "list": [f.as_json() for f in self.degenerate],
        }

    @property
    def subagents(self) -> list[SessionLine]:
        return [s for s in self.sessions if s.facts.parent_session_id is not None]

    def kept_overall(self) -> dict[str, dict[str, Any]]:
        """The fidelity ledger over every compaction: of each kind, how much the summaries
        kept of what they replaced."""
        sums: dict[str, list[int]] = {kind: [0, 0] for kind in KINDS}
        for c in self.compactions:
            for kind, value in c.kept.items():
                if kind in sums:
                    sums[kind][0] += int(value.get("kept", 0))
                    sums[kind][1] += int(value.get("total", 0))
        return {
            kind: {"kept": k, "total": t, "percent": round(100 * k / t, 1) if t else None}
            for kind, (k, t) in sums.items()
        }

    def lost_most(self) -> list[CompactionLine]:
        ranked = sorted(self.compactions, key=lambda c: (-c.lost, -c.pre_tokens, c.facts.id))
        return [c for c in ranked if c.lost > 0][:LOST_MOST]

    def as_json(self) -> dict[str, Any]:
        comps = self.compactions
        calls = [c for c in comps if c.call_model or c.call_tokens]
        call_costs = [c.call_cost for c in calls if c.call_cost is not None]
        sub = Figures()
        for s in self.subagents:
            sub.add(s.figures)
        return {
            "since": self.since,
            "by": self.by,
            "totals": {"sessions": len(self.sessions)} | self.totals.as_json(),
            "groups": [
                {"key": key, "sessions": self.group_sessions.get(key, 0)} | fig.as_json()
                for key, fig in self.groups.items()
            ],
            "sessions": [s.as_json() for s in self.sessions],
            "compactions": {
                "count": len(comps),
                "auto": sum(1 for c in comps if c.facts.trigger == "auto"),
                "manual": sum(1 for c in comps if c.facts.trigger == "manual"),
                "kept": self.kept_overall(),
                "calls": {
                    "count": len(calls),
                    "cost": round(sum(call_costs), 6) if call_costs else None,
                },
                "list": [c.as_json() for c in comps],
                "lost_most": [c.facts.id for c in self.lost_most()],
                "losses": self.losses.as_json(),
                "degenerate": self.degenerate_json(),
            },
            "tools": self.tools,
            "context_by_source": self.sources,
            "subagents": {
                "sessions": len(self.subagents),
                "parents": len({s.facts.parent_session_id for s in self.subagents}),
            }
            | sub.as_json(),
            "notes": self.notes,
        }


def _agents(store: Store, facts: dict[int, SessionFacts]) -> dict[int, str]:
    """Each session's agent: the format of the file it was imported from (a subagent its
    parent's), else ``ctxscope`` for a session ctxscope ran itself."""
    fmt: dict[int, str] = {}
    for file in store.imported_files().values():
        for sid in file.sessions:
            fmt[sid] = file.fmt
    out: dict[int, str] = {}

    def agent(sid: int, depth: int = 0) -> str:
        if sid in out:
            return out[sid]
        f = facts.get(sid)
        if sid in fmt:
            found = fmt[sid]
        elif f is not None and f.parent_session_id is not None and depth < 20:
            found = agent(f.parent_session_id, depth + 1)
        elif f is not None and f.provider in ("import", "proxy"):
            found = f.provider
        else:
            found = "ctxscope"
        out[sid] = found
        return found

    for sid in facts:
        agent(sid)
    return out


def _compaction_line(
    c: CompactionFacts, session: SessionFacts | None, prices: Prices
) -> CompactionLine:
    stats = c.stats
    pre = stats.get("recorded_pre_tokens")
    pre_tokens = int(pre) if isinstance(pre, int) else c.tokens_before
    after = None
    if session is not None and session.started_at is not None:
        after = (c.created_at - session.started_at).total_seconds() / 60
    kept = {
        kind: {"kept": int(v.get("kept", 0)), "total": int(v.get("total", 0))}
        for kind, v in (c.fidelity or {}).items()
        if isinstance(v, dict)
    }
    lost = sum(v["total"] - v["kept"] for v in kept.values())
    line = CompactionLine(c, session, pre_tokens, after, kept, lost)
    post, duration = stats.get("recorded_post_tokens"), stats.get("recorded_duration_ms")
    line.post_tokens = post if isinstance(post, int) else None
    line.duration_ms = duration if isinstance(duration, int) else None
    usage = stats.get("usage")
    if isinstance(usage, dict) and usage:
        line.call_model = str(stats.get("model") or "")
        line.call_tokens = {k: int(v) for k, v in usage.items() if isinstance(v, int)}
        try:
            recorded = Usage.model_validate(line.call_tokens)
        except ValueError:
            recorded = None
        if recorded is not None and line.call_model:
            line.call_cost = prices.of(line.call_model).usage_cost(recorded, c.created_at)
    return line


def project_key(workspace: str) -> str:
    """The project a session's folder is, as the report groups it: a Windows drive letter in
    one case (``c:\\src\\app`` and ``C:\\src\\app`` are one folder; issue 39 split them)."""
    if len(workspace) >= 3 and workspace[1] == ":" and workspace[0].isalpha():
        if workspace[2] in "\\/":
            return workspace[0].upper() + workspace[1:]
    return workspace


def build_report(
    store: Store, settings: Settings, since: datetime | None = None, by: Grouping | None = None
) -> Report:
    """The report card of every session (with ``since``: the usage and compactions from then
    on, and the sessions that have any), grouped ``by`` project, day, agent, model or session."""
    prices = process_prices(settings)
    facts = store.session_facts()
    agents = _agents(store, facts)
    lines: dict[int, SessionLine] = {}

    def line(sid: int) -> SessionLine:
        if sid not in lines:
            lines[sid] = SessionLine(facts[sid], agents.get(sid, "ctxscope"))
        return lines[sid]

    # Every session (with ``since``: every one with a call from then on, billed or counted
    # locally), even without a billed call: its line says so rather than leave it out.
    for sid in sorted(facts) if since is None else store.sessions_with_usage(since):
        if sid in facts:
            line(sid)
    for group in store.usage_groups(since):
        if group.session_id not in facts:
            continue
        s = line(group.session_id)
        # Each request at its own model's price; one that names none at the session's.
        model = group.model or s.facts.model
        fig = priced(group, prices.rates_for(model, group.day, group.long))
        s.figures.add(fig)
        s.days.setdefault(group.day, Figures()).add(fig)
        s.models.setdefault(model or "(none)", Figures()).add(fig)
    compactions = []
    losses: dict[int, CompactionLosses] = {}
    history = HistoryLosses()
    flags: list[Flag] = []
    in_force = store.all_compactions(since)
    # Every compaction of the sessions that have one, in one query: their ledgers and flags
    # are read from these, not from a query per session.
    every = store.compactions_of({c.session_id for c in in_force if c.session_id in facts})
    for c in in_force:
        if c.session_id in facts:
            if line(c.session_id).compactions == 0:
                of_session = every[c.session_id]
                for loss in session_losses(store, c.session_id, of_session):
                    losses[loss.compaction_id] = loss
                flags += session_flags(store, c.session_id, settings, of_session)
            line(c.session_id).compactions += 1
            compaction = _compaction_line(c, facts[c.session_id], prices)
            found = losses.get(c.id)
            if found is not None:
                compaction.losses = found
                compaction.lost = len(found.lost)
                history.add(found)
            compactions.append(compaction)
    sessions = [lines[sid] for sid in sorted(lines)]
    totals = Figures()
    for s in sessions:
        totals.add(s.figures)
    groups: dict[str, Figures] = defaultdict(Figures)
    members: dict[str, set[int]] = defaultdict(set)
    for s in sessions:
        if by == "day":
            for day, fig in s.days.items():
                groups[day].add(fig)
                members[day].add(s.facts.id)
            continue
        if by == "model":
            for model, fig in s.models.items():
                groups[model].add(fig)
                members[model].add(s.facts.id)
            if not s.models:
                groups[s.facts.model or "(none)"].add(s.figures)
                members[s.facts.model or "(none)"].add(s.facts.id)
            continue
        if by is None:
            continue
        key = {
            "project": project_key(s.facts.workspace),
            "agent": s.agent,
            "model": s.facts.model or "(none)",
            "session": str(s.facts.id),
        }[by]
        groups[key].add(s.figures)
        members[key].add(s.facts.id)
    order = (
        sorted(groups)
        if by == "day"
        else sorted(groups, key=lambda k: -(groups[k].total_cost or 0))
    )
    tools = _tools(store, set(lines))
    sources = _sources(store, set(lines))
    used = {s.facts.model for s in sessions} | {c.call_model for c in compactions if c.call_model}
    notes = [n for n in prices.notes() if any(prices.of(m).note == n for m in used)]
    return Report(
        since,
        by,
        totals,
        sessions,
        {k: groups[k] for k in order},
        {k: len(v) for k, v in members.items()},
        compactions,
        tools,
        notes,
        history,
        [f for f in flags if f.compaction_id in {c.facts.id for c in compactions}],
        sources,
    )


def _sources(store: Store, sessions: set[int]) -> dict[str, Any]:
    """The last request of each proxied session by source, summed: by kind, by MCP server."""
    by_kind: Counter[str] = Counter()
    mcp: Counter[str] = Counter()
    counted = 0
    for sid in store.proxied_sessions():
        mains = [e for e in store.exchanges(sid) if e.kind == "main"] if sid in sessions else []
        if not mains:
            continue
        last = mains[-1]
        b = request_breakdown(last.request, last.usage.input_side if last.usage else None)
        counted += 1
        for source in b.sources:
            by_kind[source.kind] += source.tokens
            if source.kind == "mcp":
                mcp[source.name.removeprefix("MCP ")] += source.tokens
    return {
        "sessions": counted,
        "by_kind": dict(by_kind.most_common()),
        "mcp_servers": dict(mcp.most_common()),
    }


def _tools(store: Store, sessions: set[int]) -> list[dict[str, Any]]:
    """Tools by the tokens their results took as recorded, and as history keeps them after
    the compactions (:class:`~engine.store.history.ToolFacts`): the second never over the
    first."""
    sums: dict[str, Counter[str]] = defaultdict(Counter)
    for t in store.tool_result_sizes():
        if t.session_id in sessions:
            sums[t.tool].update(
                results=t.results, tokens_recorded=t.tokens_recorded, tokens_kept=t.tokens_kept
            )
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1]["tokens_recorded"], kv[0]))
    return [
        {"tool": name, **{k: c[k] for k in ("results", "tokens_recorded", "tokens_kept")}}
        for name, c in ranked
    ]
