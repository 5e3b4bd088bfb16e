"""``ctxscope export``: a stored session as Anthropic-messages JSON lines or a Markdown transcript
(the HTML page is :mod:`engine.report.session_page`).

The JSON lines are what ``ctxscope import`` reads (format ``anthropic-jsonl``): one message a
line with its ``timestamp``; an assistant step carries its ``thinking`` blocks and its ``usage``;
tool results carry their *full* text (the observation, not the A3 form history keeps), so an
import of the export stores the same conversation. Results the importer or the agent
synthesised for a call that never got one (``meta.interrupted``) are left out: the importer
pairs them again. A summary is a ``{"role": "user", "compact_summary": true}`` line. Two keys the
API does not know carry what the text cannot: ``recorded`` (a Bash result's streams and exit
code, by tool_use id), ``recorded_session`` on the first user line (what the recording said of
itself: its id, version, the agent's own cost...) and ``finished`` on the last line (the last
round ended normally).

Without ``include_archived`` only what history holds now is written (the summaries first);
with it, each compaction's archived messages come before its summary.

Both are read in terminals (``export`` writes to stdout by default) and a recording is untrusted:
the Markdown shows every control character escaped (:mod:`engine.terminal_text`), its title and
names on one line each; the JSON lines write DEL, C1 and the bidi controls as ``\\uXXXX`` (the
same document).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.messages.harness import HARNESS_KINDS, HARNESS_LABELS, INPUT_KEY, QUEUED, kind_of
from engine.models import Compaction, Message, Round, RoundStatus, Summary, UsageRecord
from engine.store import Store
from engine.terminal_text import json_printable, plural, printable

FORMATS = ("anthropic-jsonl", "markdown", "html")
"""``html`` is written by :mod:`engine.report.session_page` (a page to open in a browser)."""


@dataclass
class TranscriptPart:
    """One piece of the transcript in order: a message, or a compaction with its summary."""

    message: Message | None = None
    summary: Summary | None = None
    compaction: Compaction | None = None


def transcript_parts(store: Store, session_id: int, include_archived: bool) -> list[TranscriptPart]:
    history = store.history(session_id)
    parts: list[TranscriptPart] = []
    compactions = {c.summary_id: c for c in store.compactions(session_id) if c.summary_id}
    if include_archived:
        for seg in store.segments(session_id):
            parts.extend(TranscriptPart(message=m) for m in seg.messages)
            if seg.summary_id is not None:
                summary = store.summary(seg.summary_id)
                parts.append(
                    TranscriptPart(summary=summary, compaction=compactions.get(seg.summary_id))
                )
    else:
        parts.extend(
            TranscriptPart(summary=s, compaction=compactions.get(s.id or 0))
            for s in history.summaries
        )
    parts.extend(TranscriptPart(message=m) for m in history.messages)
    return parts


def export_jsonl(
    store: Store, session_id: int, include_archived: bool = False, dated: bool = True
) -> str:
    """The session as JSON lines of Anthropic messages (see the module docstring); without
    ``dated`` (a recording that says no time: the times stored are the import's), no line has
    a ``timestamp``."""
    usage = {(u.round_index, u.step): u for u in store.usages(session_id)}
    lines: list[dict[str, Any]] = []
    line: dict[str, Any]
    for part in transcript_parts(store, session_id, include_archived):
        if part.summary is not None:
            lines.append(
                {
                    "role": "user",
                    "content": part.summary.content,
                    "compact_summary": True,
                    "timestamp": part.summary.created_at.isoformat(),
                }
            )
            continue
        msg = part.message
        assert msg is not None
        if msg.role == "tool":
            if msg.meta.interrupted:
                continue
            # One line per result: each keeps its own timestamp.
            block, recorded = _result_block(store, session_id, msg)
            line = {"role": "user", "content": [block]}
            if recorded:
                line["recorded"] = {block["tool_use_id"]: recorded}
            line["timestamp"] = msg.created_at.isoformat()
            lines.append(line)
            continue
        if msg.role == "user":
            line = {"role": "user", "content": msg.content}
            if msg.meta.origin and msg.meta.origin.get("compact_summary"):
                line["compact_summary"] = True
            if msg.meta.origin and msg.meta.origin.get("demonstration"):
                line["demonstration"] = True
                line["content"] = msg.content.removeprefix("[demonstration]\n")
            for key in (INPUT_KEY, "queued_line"):
                if msg.meta.origin and key in msg.meta.origin:
                    line[key] = msg.meta.origin[key]
            if msg.meta.origin and isinstance(msg.meta.origin.get("recorded"), dict):
                line["recorded_session"] = msg.meta.origin["recorded"]
        elif msg.role == "assistant":
            line = {"role": "assistant", "content": _assistant_blocks(msg)}
            record = usage.get((msg.meta.round, msg.meta.step))
            if record is not None:
                line["usage"] = record.usage.model_dump()
        else:
            continue
        line["timestamp"] = msg.created_at.isoformat()
        lines.append(line)
    rounds = store.rounds(session_id)
    if lines and rounds and rounds[-1].status == RoundStatus.FINISHED:
        lines[-1]["finished"] = True
    if not dated:
        for line in lines:
            line.pop("timestamp", None)
    return "".join(json_printable(json.dumps(line, ensure_ascii=False)) + "\n" for line in lines)


def _assistant_blocks(msg: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = list((msg.meta.origin or {}).get("thinking", []))
    if msg.content:
        blocks.append({"type": "text", "text": msg.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in msg.tool_calls
    )
    return blocks


def _full_text(store: Store, session_id: int, msg: Message) -> str:
    obs = store.observation_for(session_id, msg.meta.tool_use_id or "")
    return obs.text if obs is not None else msg.content


def _result_block(
    store: Store, session_id: int, msg: Message
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The ``tool_result`` block (full text) and, for Bash, the streams and exit code that the
    text alone does not tell apart (the importer reads them back from ``recorded``)."""
    obs = store.observation_for(session_id, msg.meta.tool_use_id or "")
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": msg.meta.tool_use_id,
        "content": obs.text if obs is not None else msg.content,
    }
    if msg.meta.is_error:
        block["is_error"] = True
    recorded = None
    data = (obs.result.get("data") or {}) if obs is not None else {}
    if msg.meta.tool_name == "Bash" and "stdout" in data:
        recorded = {
            "stdout": data["stdout"],
            "stderr": data.get("stderr", ""),
            "returncode": data.get("exit_code"),
        }
    return block, recorded


def export_markdown(
    store: Store, session_id: int, include_archived: bool = False, dated: bool = True
) -> str:
    """A readable transcript: rounds, steps, full results; compactions and summaries marked;
    each message's time unless not ``dated`` (a recording that says none)."""
    session = store.get_session(session_id)
    rounds: dict[int, Round] = {r.index: r for r in store.rounds(session_id)}
    usage: dict[tuple[int | None, int | None], UsageRecord] = {
        (u.round_index, u.step): u for u in store.usages(session_id)
    }
    out = [
        f"# Session {session.id}: {_one_line(session.title) or '(untitled)'}",
        "",
        f"Workspace `{_one_line(session.workspace)}`, provider "
        f"{_one_line(session.provider) or '-'}, strategy {_one_line(session.strategy)}, "
        f"created {session.created_at.isoformat()}.",
    ]
    current: int | None = None
    for part in transcript_parts(store, session_id, include_archived):
        if part.summary is not None:
            comp = part.compaction
            head = f"Compaction {comp.id} ({comp.trigger}" if comp else "Compaction ("
            if comp:
                head += (
                    f", {plural(comp.messages_compacted, 'message')} of "
                    f"{plural(comp.rounds_compacted, 'round')} archived, {comp.tokens_before} → "
                    f"{comp.tokens_after} tokens"
                )
            head += f"): rounds {part.summary.first_round}-{part.summary.last_round}"
            out += ["", "---", "", f"> **{head}**", ">", "> **Summary**", ">"]
            out += [f"> {line}" if line else ">" for line in part.summary.content.splitlines()]
            out += ["", "---"]
            current = None
            continue
        msg = part.message
        assert msg is not None
        if msg.meta.round != current:
            current = msg.meta.round
            rnd = rounds.get(current or 0)
            status = f" ({rnd.status}{', archived' if rnd.archived else ''})" if rnd else ""
            out += ["", f"## Round {current}{status}"]
        out += ["", *_markdown_message(store, session_id, msg, usage, dated)]
    return printable("\n".join(out)) + "\n"


def _one_line(text: str) -> str:
    return printable(text, one_line=True)


def _fence(text: str, lang: str = "") -> list[str]:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return [ticks + lang, text, ticks]


def _markdown_message(
    store: Store,
    session_id: int,
    msg: Message,
    usage: dict[tuple[int | None, int | None], UsageRecord],
    dated: bool = True,
) -> list[str]:
    stamp = f" · {msg.created_at.isoformat(timespec='seconds')}" if dated else ""
    if msg.role == "user":
        origin = msg.meta.origin or {}
        if origin.get("demonstration"):
            return [f"**User** (demonstration){stamp}", "", msg.content]
        kind = kind_of(msg)
        if kind in HARNESS_KINDS:
            return [f"**{HARNESS_LABELS[kind]}** (not the user){stamp}", "", msg.content]
        how = " (typed while the agent worked)" if kind == QUEUED else ""
        return [f"**User**{how}{stamp}", "", msg.content]
    if msg.role == "assistant":
        lines = [f"**Assistant**, step {msg.meta.step}{stamp}"]
        record = usage.get((msg.meta.round, msg.meta.step))
        if record is not None:
            lines[0] += f" · {record.usage.input_side} in / {record.usage.output_tokens} out"
        for block in (msg.meta.origin or {}).get("thinking", []):
            lines += ["", "<details><summary>thinking</summary>", ""]
            lines += [str(block.get("thinking", "[redacted]")), "", "</details>"]
        if msg.content:
            lines += ["", msg.content]
        for call in msg.tool_calls:
            lines += ["", f"→ **{_one_line(call.name)}** `{_one_line(call.id)}`"]
            lines += _fence(json.dumps(call.input, ensure_ascii=False, indent=1), "json")
        return lines
    if msg.role == "tool":
        flag = " (error)" if msg.meta.is_error else ""
        flag += " (no result recorded)" if msg.meta.interrupted else ""
        name, call_id = _one_line(msg.meta.tool_name or ""), _one_line(msg.meta.tool_use_id or "")
        head = f"**Result** of {name} `{call_id}`{flag}"
        return [head, "", *_fence(_full_text(store, session_id, msg))]
    return [f"**{msg.role}**", "", msg.content]
