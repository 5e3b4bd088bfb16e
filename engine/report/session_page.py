"""``ctxscope export ID --format html``: one session as a page to open in a browser.

The page holds, in order: the session's figures (calls, peak context, compactions, what they
lost, what the calls cost at list price); the context over time, one point per recorded API
call (what it sent and got back, :func:`engine.figures.context_of`), with the
agent's own trigger line (a recording's agent's auto-compact point; ctxscope's threshold for
its own sessions) and a mark at each compaction; every compaction with what it lost, by name,
each item linked to the message it was in; then the whole conversation, the archived parts
included, each compaction marked where it happened with its summary.

What a recording says is untrusted: see :mod:`engine.report.html` for how it is made inert.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Sequence

from engine.compaction.losses import NAMES, CompactionLosses, session_losses, where
from engine.context.sources import Breakdown, session_breakdown
from engine.figures import SessionFigures, context_of, session_times
from engine.messages.harness import HARNESS_KINDS, HARNESS_LABELS, QUEUED, kind_of
from engine.models import (
    Compaction,
    Message,
    Observation,
    Outcome,
    Round,
    Session,
    Summary,
    UsageRecord,
)
from engine.recordings.degenerate import Flag, session_flags
from engine.recordings.export import transcript_parts
from engine.recordings.figures import session_figures
from engine.recordings.own_agent import OwnAgentView, own_agent_view
from engine.report.html import (
    Chart,
    Line,
    Mark,
    dollars,
    esc,
    esc_line,
    figures,
    page,
    table,
    tokens,
)
from engine.settings.config import Settings
from engine.settings.params import session_settings
from engine.store import Store
from engine.terminal_text import plural

FOLD_CHARS = 2_000
"""A tool result or thinking block longer than this is folded (``<details>``), whole."""
FILES_SHOWN = 15
"""Files listed under the context by source (``context --json`` has them all)."""
LOST_SHOWN = 200
"""Lost items listed per compaction and kind (the JSON has them all)."""


def session_html(store: Store, session_id: int, settings: Settings) -> str:
    """The session's page (see the module docstring)."""
    session = store.get_session(session_id)
    usages = store.usages(session_id)
    compactions = [  # those that took effect: not skipped, failed or undone
        c
        for c in store.compactions(session_id)
        if c.undone_at is None and c.outcome in (Outcome.SUCCESS, Outcome.FALLBACK)
    ]
    losses = {loss.compaction_id: loss for loss in session_losses(store, session_id)}
    flags: dict[int, list[Flag]] = {}
    for flag in session_flags(store, session_id, settings):
        flags.setdefault(flag.compaction_id, []).append(flag)
    # The calls and their cost as every other surface prints them: each call at its own
    # model's price of its day (a session that switched models is not priced at one)
    own = own_agent_view(store, session, settings)  # a recording's: its figures, made once
    fig = own.figures if own is not None else session_figures(store, session, settings)
    contexts = [context_of(u.usage) for u in usages]
    lost_total = sum(len(loss.lost) for loss in losses.values())
    title = f"Session {session.id}: {session.title or '(untitled)'}"
    body = [
        f"<h1>{esc_line(title)}</h1>",
        f'<p class="meta">{_meta(session, fig, store.rounds(session_id))}</p>',
        figures(
            [
                ("API calls", f"{fig.requests:,}"),
                ("peak context", tokens(max(contexts) if contexts else None)),
                ("compactions", f"{len(compactions):,}"),
                ("items lost at compactions", f"{lost_total:,}"),
                ("cost at list price", fig.cost_text),
            ]
        ),
        f'<p class="muted">{esc(fig.cost_note)}</p>' if fig.cost_note else "",
        f'<p class="muted">{esc(own.totals_line)}</p>' if own is not None and own.totals else "",
        "<h2>Context over time</h2>",
        _chart(settings, session, own, usages, compactions).svg(),
        "<h2>What the context is made of</h2>",
        _sources(session_breakdown(store, session, own)),
        "<h2>Compactions and what each lost</h2>",
        *(_losses_block(c, losses.get(c.id or 0), flags.get(c.id or 0, [])) for c in compactions),
        *([] if compactions else ['<p class="muted">No compaction.</p>']),
        "<h2>Conversation</h2>",
        *_conversation(store, session_id, usages, losses, fig.times_recorded),
    ]
    return page(title, body)


def _meta(session: Session, fig: SessionFigures, rounds: Sequence[Round]) -> str:
    if not session.recorded:
        who = "run by ctxscope"
    elif fig.agent:
        who = f"recorded by {fig.agent}" + (
            f" {session.agent_version}" if session.agent_version else ""
        )
    else:
        who = "recorded by another agent"
    # A recording's own times (its rounds'), not when it was imported; none for a recording
    # that says no time.
    start, end = session_times(
        fig,
        session,
        rounds[0].started_at if rounds else None,
        max((r.finished_at or r.started_at for r in rounds), default=None),
    )
    when = (
        "its times not recorded"
        if start is None or end is None
        else f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
    )
    return esc_line(
        f"{who} · workspace {session.workspace} · provider {session.provider or '-'} · "
        f"model {session.model or '-'} · strategy {session.strategy} · {when}"
    )


def _chart(
    settings: Settings,
    session: Session,
    own: OwnAgentView | None,
    usages: Sequence[UsageRecord],
    compactions: Sequence[Compaction],
) -> Chart:
    """Context per call, the agent's trigger and window (``own``: a recording's own agent's
    view), a mark per compaction."""
    lines: list[Line] = []
    if own is not None:
        if own.compact_at is not None:
            lines.append(Line(own.compact_at, f"{own.who} auto-compacts at"))
        lines.append(Line(own.context_window, "window", "#5b6473"))
    else:
        planned = session_settings(settings, session)
        if session.strategy == "layered":
            lines.append(Line(planned.threshold_tokens, "ctxscope's trigger (layered)"))
        lines.append(Line(planned.context_window, "window", "#5b6473"))
    times = [u.created_at for u in usages]
    marks = [
        Mark(max(0.0, bisect_left(times, c.created_at) - 0.5), f"compaction {c.id}")
        for c in compactions
    ]
    return Chart(
        values=[float(context_of(u.usage)) for u in usages],
        title="context after each API call (tokens sent + answer)",
        x_label="API call",
        lines=lines,
        marks=marks,
    )


def _sources(b: Breakdown) -> str:
    """The context by source (its last request), largest first, and the files that take most."""
    rows = [
        [s.name, s.kind.replace("_", " "), f"{s.tokens:,}", ", ".join(s.items)]
        for s in sorted(b.sources, key=lambda s: -s.tokens)
    ]
    files = [[p, f"{n:,}"] for p, n in list(b.files.items())[:FILES_SHOWN]]
    return "\n".join(
        [
            f'<p class="muted">{esc_line(b.method)}; {b.total:,} tokens in all.</p>',
            table(["source", "kind", "tokens", "what it holds"], rows, numeric={2}),
            *(
                ["<h3>Files the tools' calls and results take</h3>"]
                + [table(["file", "tokens"], files, numeric={1})]
                if files
                else []
            ),
        ]
    )


def _losses_block(c: Compaction, loss: CompactionLosses | None, flags: list[Flag]) -> str:
    pre = c.stats.get("recorded_pre_tokens")
    at = (
        f"made by the original agent at {pre:,} tokens as it recorded them; "
        if isinstance(pre, int)
        else "made by the original agent; "
        if c.stats.get("recorded")
        else f"{c.strategy}; "
    )
    head = (
        f"Compaction {c.id}: {c.trigger}, {at}{plural(c.messages_compacted, 'message')} of "
        f"{plural(c.rounds_compacted, 'round')} archived ({c.tokens_before:,} → {c.tokens_after:,} "
        "tokens of conversation as ctxscope counts it)"
    )
    out = [f'<div class="compaction" id="c{c.id}">', f"<h3>{esc_line(head)}</h3>"]
    out += [
        f'<p class="flag">degenerate: {esc_line(f.kind)} — {esc_line(f.detail)} '
        f"({esc_line(dollars(f.cost))}: {esc_line(f.cost_of)})</p>"
        for f in flags
    ]
    if loss is None:
        out.append('<p class="muted">Nothing archived: no ledger.</p></div>')
        return "\n".join(out)
    counts = [
        f"{NAMES[k]} kept {loss.kept[k]}, carried {loss.carried[k]}, lost "
        f"{len(loss.lost_of(k))} of {loss.covered[k]}"
        for k in NAMES
        if loss.covered.get(k)
    ]
    out.append(f"<p>{esc_line(' · '.join(counts) or 'nothing to keep')}</p>")
    if loss.lost:
        out.append(
            '<div class="lost"><b>Lost</b> (in the compacted part, absent from the '
            "summary and from what the compaction kept):<ul>"
        )
        for kind in NAMES:
            items = loss.lost_of(kind)
            for item in items[:LOST_SHOWN]:
                anchor = f' <a href="#m{item.message_id}">{esc_line(where(item))}</a>'
                out.append(
                    f"<li>{esc_line(NAMES[kind])}: <code>{esc_line(item.key)}</code>"
                    f"{anchor if item.message_id is not None else esc_line(where(item))}</li>"
                )
            if len(items) > LOST_SHOWN:
                out.append(f"<li>… and {len(items) - LOST_SHOWN} more {esc_line(NAMES[kind])}</li>")
        out.append("</ul></div>")
    else:
        out.append('<p class="muted">Nothing lost.</p>')
    out.append("</div>")
    return "\n".join(out)


def _conversation(
    store: Store,
    session_id: int,
    usages: Sequence[UsageRecord],
    losses: dict[int, CompactionLosses],
    dated: bool = True,
) -> list[str]:
    by_step = {(u.round_index, u.step): u for u in usages}
    observations = {o.tool_use_id: o for o in store.observations(session_id)}
    out: list[str] = []
    current: int | None = None
    for part in transcript_parts(store, session_id, include_archived=True):
        if part.summary is not None:
            out.append(_summary_block(part.summary, part.compaction, losses))
            current = None
            continue
        msg = part.message
        if msg is None:
            continue
        if msg.meta.round != current:
            current = msg.meta.round
            out.append(f'<div class="round">Round {esc_line(current)}</div>')
        out.append(_message(msg, by_step, observations, dated))
    return out


def _summary_block(
    summary: Summary, c: Compaction | None, losses: dict[int, CompactionLosses]
) -> str:
    loss = losses.get(c.id or 0) if c is not None else None
    head = f"Compaction {c.id}" if c is not None else "Compaction"
    lost = f", lost {len(loss.lost)} items" if loss is not None else ""
    link = f' <a href="#c{c.id}">what it lost</a>' if c is not None else ""
    return (
        f'<div class="compaction"><h3>{esc_line(head)}: rounds {summary.first_round}–'
        f"{summary.last_round} compacted{esc_line(lost)}{link}</h3>"
        f"<details><summary>the summary ({len(summary.content):,} characters)</summary>"
        f'<div class="text">{esc(summary.content)}</div></details></div>'
    )


def _message(
    msg: Message,
    by_step: dict[tuple[int | None, int | None], UsageRecord],
    observations: dict[str, Observation],
    dated: bool = True,
) -> str:
    # a recording that says no time: the stored one is the import's, not shown as the message's
    stamp = f"{msg.created_at:%Y-%m-%d %H:%M:%S} · " if dated else ""
    anchor = f' id="m{msg.id}"' if msg.id is not None else ""
    if msg.role == "user":
        kind = kind_of(msg)
        who = (
            f"{HARNESS_LABELS[kind]} (not the user)"
            if kind in HARNESS_KINDS
            else "User (typed while the agent worked)"
            if kind == QUEUED
            else "User"
        )
        return (
            f'<div class="msg user"{anchor}><span class="who">{esc_line(who)}</span> '
            f'<span class="muted">{stamp}message {msg.id}</span>'
            f'<div class="text">{esc(msg.content)}</div></div>'
        )
    if msg.role == "assistant":
        record = by_step.get((msg.meta.round, msg.meta.step))
        used = (
            f" · {record.usage.input_side:,} in / {record.usage.output_tokens:,} out"
            if record is not None
            else ""
        )
        parts = [
            f'<div class="msg assistant"{anchor}><span class="who">Assistant</span> '
            f'<span class="muted">step {esc_line(msg.meta.step)} · {stamp}message '
            f"{msg.id}{used}</span>"
        ]
        for block in (msg.meta.origin or {}).get("thinking", []):
            text = str(block.get("thinking", "[redacted]")) if isinstance(block, dict) else ""
            parts.append(
                f'<details><summary>thinking</summary><div class="text">{esc(text)}</div></details>'
            )
        if msg.content:
            parts.append(f'<div class="text">{esc(msg.content)}</div>')
        for call in msg.tool_calls:
            parts.append(
                f'<div class="call">→ {esc_line(call.name)} {esc_line(call.id)}</div>'
                f"<pre>{esc(json.dumps(call.input, ensure_ascii=False, indent=1))}</pre>"
            )
        parts.append("</div>")
        return "".join(parts)
    if msg.role == "tool":
        obs = observations.get(msg.meta.tool_use_id or "")
        text = obs.text if obs is not None else msg.content
        error = " error" if msg.meta.is_error else ""
        flag = " (error)" if msg.meta.is_error else ""
        flag += " (no result recorded)" if msg.meta.interrupted else ""
        head = (
            f'<div class="msg tool{error}"{anchor}><span class="who">Result</span> of '
            f"{esc_line(msg.meta.tool_name or '')}{esc_line(flag)} "
            f'<span class="muted">{stamp}message {msg.id}</span>'
        )
        if len(text) > FOLD_CHARS:
            shown = (
                f"<details><summary>{len(text):,} characters</summary>"
                f"<pre>{esc(text)}</pre></details>"
            )
        else:
            shown = f"<pre>{esc(text)}</pre>"
        return head + shown + "</div>"
    return f'<div class="msg"{anchor}><div class="text">{esc(msg.content)}</div></div>'
