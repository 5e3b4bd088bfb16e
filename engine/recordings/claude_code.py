"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is a record ``{type, uuid, parentUuid, isSidechain, sessionId, cwd, timestamp,
message?, toolUseResult?, isCompactSummary?, subtype?, compactMetadata?, agentId?}``.
Decisions (checked against the real files in ``tests/data/corpus``):

- The file is a tree of records linked by ``uuid`` / ``parentUuid``, and that tree runs
  through *every* record type (``progress`` hooks, ``system`` turn durations, api_error
  retries), so every record with a uuid is indexed. The active conversation is the chain from
  the last user / assistant record back to its root; a ``compact_boundary`` (``parentUuid:
  null``) goes on through ``logicalParentUuid``.
- Claude Code ≥ 2.1 writes one record per content block and hangs parallel tool calls off
  each other: a sibling record of a response on the chain (same ``message.id``) and the
  tool_result records answering the chain's tool calls belong to the conversation too.
  A resumed session replays earlier records under new uuids: a block already seen in a
  response is not added twice, and a result is only taken after the call it answers.
- Records of one API response are merged into one assistant step, even when a tool_result
  was written between them (2.1.39 does that); its usage is the response's last record's
  (the streamed partial records under-count the output). ``<synthetic>`` messages get none.
- ``isSidechain`` records are subagent transcripts: in a main file they become their own
  :class:`Parsed` (``children``), grouped by ``agentId``; a file made only of them (the
  ``<session>/subagents/agent-*.jsonl`` layout) is parsed as the subagent itself.
- ``thinking`` blocks are kept in ``meta.origin["thinking"]``, never sent back.
- ``compact_boundary`` + the ``isCompactSummary`` user record become a compaction made by the
  original agent: its trigger, ``preTokens`` and the boundary's time, the summary its text.
- User inputs typed while the agent worked are written only as ``queue-operation`` records
  when the model got them at a tool boundary (in a reminder the file does not hold): each
  becomes a user input where it was delivered, marked ``queued`` in ``meta.origin`` (see
  :func:`_queued`); one still queued when the file ends is counted as ``queued_input`` and
  named in a warning.
- What the harness writes in the user's turn (``<task-notification>``, ``[Request interrupted
  by user…]``, slash-command wrappers, ``<system-reminder>``, ``isMeta`` records) is marked in
  ``meta.origin["input"]`` (:mod:`engine.messages.harness`), not shown as the user's words.
- ``progress``, ``file-history-snapshot``, ``summary`` (title) and other ``system`` records are
  counted by kind; conversation records on other branches as ``off_chain:<type>``, replayed
  copies as ``replayed_copy``. A last line cut mid-way (a file still being written) is left
  out with a warning naming it.
- Read tolerantly (:mod:`engine.recordings.base`): a record of a kind this version does not
  know is left out and named (with its line) in ``Parsed.not_read``, but it stays in the
  uuid tree, so a chain that runs through it is not cut; a line that is not JSON, a repeated
  record, a user / assistant record in a shape the parser does not expect, a content block
  of an unknown type: left out, named. Newer kinds read for what they mean: ``ai-title`` /
  ``custom-title`` (the title; a custom one wins), ``pr-link`` (kept in ``recorded``),
  ``last-prompt``, ``agent-name``, ``mode`` (counted). Only a file with no conversation at all
  is refused, in one line saying what it held.
- The chain walk, and how it survives resumed sessions and a ``logicalParentUuid`` that names
  a record not in the file: :mod:`engine.recordings.claude_code_chain`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.messages.harness import HARNESS_KINDS, INPUT_KEY, QUEUED, input_kind
from engine.models import utcnow
from engine.recordings.anthropic_jsonl import BLOCK_TYPES, check_blocks, items_of
from engine.recordings.base import (
    MAX_RESULT_CHARS,
    ImportError_,
    Item,
    JsonLines,
    Known,
    NotRead,
    Parsed,
    cut_result,
    usage_of,
)
from engine.recordings.base import parse_time as _parse_time
from engine.recordings.claude_code_chain import (
    Index,
    Record,
    chain,
    conversation,
    is_boundary,
    is_message,
    relinks,
    result_ids,
)

FORMAT = "claude-code"
RECORD_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
    "ai-title",
    "custom-title",
    "agent-name",
    "last-prompt",
    "pr-link",
    "mode",
    "permission-mode",
}
"""The record kinds this version reads (or counts for what they are); any other kind is
named in the report as not read."""
_MARKUP = re.compile(
    r"<(ide_opened_file|ide_selection|command-message|command-name|command-args|"
    r"local-command-stdout|system-reminder)>.*?</\1>",
    re.S,
)


def looks_like(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in RECORD_TYPES
        and ("sessionId" in obj or "uuid" in obj or "leafUuid" in obj or "messageId" in obj)
    )


def strip_markup(text: str) -> str:
    """``text`` without IDE / slash-command / reminder markup (for titles)."""
    return " ".join(_MARKUP.sub(" ", text).split())


def _kind(rec: dict[str, Any]) -> str:
    sub = rec.get("subtype")
    return f"{rec['type']}:{sub}" if isinstance(sub, str) and sub else str(rec["type"])


def read_records(raw: str, known: Known | None = None) -> tuple[list[Record], JsonLines]:
    """Every record of ``raw`` with its line number, and the reader that says what it left
    out (lines that are not JSON objects with a string ``type``, repeated records).
    ``known``: what reading the file made of ``raw`` already (:meth:`JsonLines.read`)."""
    reader = JsonLines()
    return reader.read(raw, known, typed=True), reader


def parse(
    raw: str, name: str, copied_from: set[str] | None = None, known: Known | None = None
) -> Parsed:
    """A session file. ``copied_from``: the :attr:`Parsed.record_keys` of the session a
    companion file belongs to (``<session>/subagents/agent-*.jsonl``): the records it repeats
    from there (a compaction's call, a side question, a fork: they start from a copy of the
    parent's context, same uuids, same API responses) are not its own work and are left out,
    counted (``copied_from_parent``) and named in one warning."""
    records, reader = read_records(raw, known)
    if copied_from:
        records = own_records(records, copied_from, reader.skipped, reader.warnings)
    parsed = parse_read(
        records, reader.lines, name, reader.skipped, reader.warnings, reader.not_read
    )
    return parsed


def record_keys(records: list[Record]) -> set[str]:
    """The uuids of ``records`` and ``message:<id>`` of their API responses."""
    keys = set()
    for _, rec in records:
        if isinstance(rec.get("uuid"), str):
            keys.add(rec["uuid"])
        if rec["type"] == "assistant" and is_message(rec):
            mid = rec["message"].get("id")
            if isinstance(mid, str) and mid:
                keys.add(f"message:{mid}")
    return keys


def own_records(
    records: list[Record], copied: set[str], skipped: Counter[str], warnings: list[str]
) -> list[Record]:
    """``records`` without those the parent session holds (by uuid, or by API response for
    an assistant record); an own record whose parent is a copied one starts the chain."""
    shared = {id(r) for _, r in records if record_keys([(0, r)]) & copied}
    if not shared:
        return records
    left_out = {r["uuid"] for _, r in records if id(r) in shared and isinstance(r.get("uuid"), str)}
    own: list[Record] = []
    for number, rec in records:
        if id(rec) in shared:
            continue
        if rec.get("parentUuid") in left_out:
            rec = {**rec, "parentUuid": None}
        own.append((number, rec))
    total = sum(1 for _, r in records if "uuid" in r)
    skipped["copied_from_parent"] += len(shared)
    warnings.append(
        f"{len(shared)} of {total} records repeat the parent session's (the context this file "
        f"starts from); only the {total - len(shared)} of its own are counted"
    )
    return own


def parse_read(
    records: list[Record],
    n_lines: int,
    name: str,
    skipped: Counter[str],
    warnings: list[str],
    not_read: NotRead | None = None,
) -> Parsed:
    """A session (and its sidechains) from the records :func:`read_records` read: the one
    parser of a whole file and of a file being followed (:mod:`engine.recordings.follow`)."""
    not_read = not_read if not_read is not None else NotRead()
    # One pass: each uuid once (the first; a repeated record named, not read twice), the
    # file's keys (:func:`record_keys`), the main conversation's records and its sidechains'.
    seen: set[str] = set()
    unique: list[Record] = []
    main: list[Record] = []
    side: list[Record] = []
    responses: set[str] = set()
    for record in records:
        rec = record[1]
        uuid = rec.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                not_read.line(REPEATED_UUID, record[0])
                continue
            seen.add(uuid)
        unique.append(record)
        (side if rec.get("isSidechain") is True else main).append(record)
        if rec["type"] == "assistant" and is_message(rec):
            mid = rec["message"].get("id")
            if isinstance(mid, str) and mid:
                responses.add(f"message:{mid}")
    records = unique
    if side and len(side) == sum(1 for _, r in records if "uuid" in r):
        # A subagent's own file: every record is on its sidechain.
        parsed = parse_records(records, name, skipped, warnings, not_read, n_lines)
    else:
        parsed = parse_records(main, name, skipped, warnings, not_read, n_lines)
        groups: dict[str, list[Record]] = {}
        for n, r in side:
            groups.setdefault(str(r.get("agentId") or "sidechain"), []).append((n, r))
        for agent, group in groups.items():
            try:
                child = parse_records(group, f"{name} ({agent})", Counter(), [], NotRead())
            except ImportError_ as exc:
                parsed.warnings.append(f"subagent {agent}: not imported: {exc}")
                parsed.skipped["sidechain"] += len(group)
                continue
            child.agent_id = None if agent == "sidechain" else agent
            parsed.children.append(child)
    parsed.records = n_lines
    parsed.record_keys = seen | responses
    return parsed


REPEATED_UUID = "repeats an earlier record (uuid)"
"""Why a record whose uuid an earlier one holds is not read (the follower names it so too)."""


def parse_records(
    records: list[Record],
    name: str,
    skipped: Counter[str],
    warnings: list[str],
    not_read: NotRead | None = None,
    n_lines: int = 0,
    root: str | None = None,
) -> Parsed:
    """One conversation (a session, or one subagent) from its records; with ``root``, the
    conversation from that record on (the records before it are not given: ``watch`` parses
    only what came after a round it already has, :mod:`engine.recordings.claude_code_follow`)."""
    not_read = not_read if not_read is not None else NotRead()
    # One pass: what is not read, the conversation's records by uuid, the queue's records,
    # what the file says of the session (:class:`Metadata`).
    found = Index()  # the records by uuid, which are messages
    by_uuid, messages, spoken = found.by_uuid, found.messages, found.spoken
    queue: list[Record] = []  # the queue's records (:func:`_queued`)
    meta_ = Metadata()
    for record in records:
        number, rec = record
        kind = rec["type"]
        if "uuid" in rec:
            by_uuid[rec["uuid"]] = record
        if kind == "user" or kind == "assistant":
            if is_message(rec):
                messages.add(id(rec))
                spoken.append(record)
            else:
                not_read.line(f"unexpected shape: {kind}", number)
        elif kind == "queue-operation":
            queue.append(record)
        elif kind == "system" and rec.get("subtype") == "compact_boundary":
            found.boundaries.append(record)
            spoken.append(record)
        elif kind not in RECORD_TYPES:
            if is_queued_command(rec):
                queue.append(record)
            elif not is_prompt_snapshot(rec):  # read: Metadata keeps it
                not_read.kind(kind, number)
        meta_.add(rec, number)
    if not messages:
        raise ImportError_([_no_conversation(name, records, not_read, n_lines)], FORMAT)

    links = relinks(records, warnings if root is None else [], found)
    chain_ = chain(records, warnings, root, links, found)
    ordered, replayed = conversation(records, chain_, links, found)
    if replayed:
        skipped["replayed_copy"] += len(replayed)
    kept = {id(r) for _, r in ordered}
    for _number, rec in records:
        key = id(rec)
        if key in kept or key in replayed:
            continue
        kind = rec["type"]
        if key in messages:
            skipped[f"off_chain:{kind}"] += 1
        elif kind in RECORD_TYPES:
            if kind != "user" and kind != "assistant":
                sub = rec.get("subtype")  # as _kind names it
                skipped[f"{kind}:{sub}" if isinstance(sub, str) and sub else kind] += 1
        elif is_queued_command(rec):
            skipped["attachment:queued_command"] += 1
    queued = _queued(queue, ordered, skipped, warnings) if queue else []

    items = _deliver(_items(ordered, not_read, warnings), queued)
    items = _from_first_input(items, not_read)
    meta = meta_.result()
    dropped = meta.get("compacted_before_file")
    if dropped:
        warnings.append(f"{dropped:,} tokens compacted before this file begins")
    version = str(meta.pop("_version", ""))
    first = next((r for _, r in ordered if isinstance(r.get("cwd"), str)), {})
    agent = next((r.get("agentId") for _, r in ordered if r.get("agentId")), None)
    title = next((strip_markup(i.text) for i in items if i.kind == "user" and i.text), "")
    return Parsed(
        fmt=FORMAT,
        items=items,
        title=str(meta.get("custom_title") or meta.get("ai_title") or title or name),
        records=len(records),
        skipped=skipped,
        warnings=warnings,
        cwd=first.get("cwd", ""),
        agent_id=str(agent) if agent else None,
        source_session=str(first.get("sessionId", "")),
        conversation_records=len(messages),
        recorded=meta,
        hidden=meta_.hidden(),
        not_read=not_read,
        agent_version=version,
    )


def _no_conversation(name: str, records: list[Record], not_read: NotRead, n_lines: int) -> str:
    """The one line that refuses a file with no conversation: what it held instead."""
    held = Counter(_kind(r) for _, r in records)
    for why, numbers in not_read.lines.items():
        held[why] += len(numbers)
    listed = ", ".join(f"{n} {k}" for k, n in held.most_common())
    total = n_lines or len(records)
    return f"{name} holds no conversation (no user or assistant record)" + (
        f": {total} line{'s' if total != 1 else ''}, {listed}" if listed else ""
    )


class Metadata:
    """What the file says about the session beyond its conversation, read record by record:
    the agent's version (``2.1.11 → 2.1.14`` when a resumed session changed it), titles,
    the last prompt, linked pull requests (each once)."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.versions: list[str] = []
        self.links: dict[str, dict[str, Any]] = {}
        self.boundaries = 0
        self.prompt: tuple[int, dict[str, Any]] | None = None
        """The line and body of the prompt snapshot the session's requests were sent with
        (:func:`is_prompt_snapshot`): the last that lists the tools, else the last."""

    def add(self, rec: dict[str, Any], line: int = 0) -> None:
        version = rec.get("version")
        if isinstance(version, str) and version and version not in self.versions:
            self.versions.append(version)
        kind = rec["type"]
        if kind == "progress":
            return  # the most common kind, and none of those below
        if is_boundary(rec) and not self.boundaries:
            self.boundaries += 1
            dropped = dropped_before(rec.get("compactMetadata"))
            if dropped:
                self.meta["compacted_before_file"] = dropped
        elif kind == "ai-title" and isinstance(rec.get("aiTitle"), str):
            self.meta["ai_title"] = rec["aiTitle"]
        elif kind == "custom-title" and isinstance(rec.get("customTitle"), str):
            self.meta["custom_title"] = rec["customTitle"]
        elif kind == "agent-name" and isinstance(rec.get("agentName"), str):
            self.meta["agent_name"] = rec["agentName"]
        elif kind == "last-prompt" and isinstance(rec.get("lastPrompt"), str):
            self.meta["last_prompt"] = rec["lastPrompt"]
        elif is_prompt_snapshot(rec):
            snapshot = rec["attachment"]
            if self.prompt is None or "tools" in snapshot or "tools" not in self.prompt[1]:
                self.prompt = (line, snapshot)
        elif kind == "pr-link":
            url = rec.get("prUrl")
            key = str(url if isinstance(url, str) else rec.get("prNumber"))
            fields = (("number", "prNumber"), ("url", "prUrl"), ("repository", "prRepository"))
            link = {k: rec[f] for k, f in fields if isinstance(rec.get(f), (str, int))}
            if link:
                self.links.setdefault(key, link)

    def result(self) -> dict[str, Any]:
        meta = dict(self.meta)
        versions = self.versions
        if versions:
            # Not kept with the conversation (``Parsed.agent_version``): the report names it.
            meta["_version"] = (
                versions[0] if len(versions) == 1 else f"{versions[0]} → {versions[-1]}"
            )
        if self.links:
            meta["pr_links"] = list(self.links.values())
        return meta

    def hidden(self) -> list[dict[str, Any]]:
        """What the agent sent around the conversation as its prompt snapshot records it
        (``Parsed.hidden``): its system prompt, a block each (``cliPrefix`` first), and each
        tool's definition as the API gets it (``schema``), one entry each with its name."""
        if self.prompt is None:
            return []
        line, snapshot = self.prompt
        prefix = snapshot.get("cliPrefix")
        parts = [prefix] if isinstance(prefix, str) and prefix else []
        system = snapshot.get("systemPrompt")
        parts += [p for p in (system if isinstance(system, list) else []) if isinstance(p, str)]
        out: list[dict[str, Any]] = [{"line": line, "role": "system", "text": p} for p in parts]
        tools = snapshot.get("tools")
        for tool in tools if isinstance(tools, list) else []:
            if not isinstance(tool, dict):
                continue
            schema = tool.get("schema")
            wire: dict[str, Any] = schema if isinstance(schema, dict) else tool
            name = wire.get("name") if isinstance(wire.get("name"), str) else ""
            text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
            out.append({"line": line, "role": "tool", "name": name, "text": text})
        return out


def is_prompt_snapshot(rec: dict[str, Any]) -> bool:
    """Whether ``rec`` is the ``attachment`` record Claude Code 2.1.28x writes with the system
    prompt (``systemPrompt``: its blocks) and the tools (``tools``: each one's ``schema``) its
    requests carry (``{"type": "attachment", "attachment": {"type": "prompt_snapshot", …}}``)."""
    attachment = _attachment(rec, "prompt_snapshot")
    return attachment is not None and isinstance(attachment.get("systemPrompt"), list)


def _attachment(rec: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The body of ``rec`` when it is an ``attachment`` record of type ``kind``, else None."""
    attachment = rec.get("attachment")
    if rec["type"] == "attachment" and isinstance(attachment, dict):
        return attachment if attachment.get("type") == kind else None
    return None


@dataclass
class Queued:
    """An input the user typed while the agent worked, and where the model got it."""

    text: str
    line: int
    """The line of its ``enqueue`` (of its attachment when no enqueue names it)."""
    delivered_line: int
    """The line of its ``queued_command`` attachment, else of the ``remove`` / ``dequeue``
    that took it off the queue."""
    delivered_at: datetime | None


def is_queued_command(rec: dict[str, Any]) -> bool:
    """Whether ``rec`` is the ``attachment`` record newer Claude Code versions write where a
    queued input reached the model (``{"type": "attachment", "attachment": {"type":
    "queued_command", "prompt", "commandMode", "origin": {"kind"}}}``)."""
    attachment = _attachment(rec, "queued_command")
    return attachment is not None and isinstance(attachment.get("prompt"), str)


def _queued(
    queue: list[Record], ordered: list[Record], skipped: Counter[str], warnings: list[str]
) -> list[Queued]:
    """The inputs typed while the agent worked that reached the model but that no stored
    user record holds: from the ``queue`` (its ``queue-operation`` and ``queued_command``
    records, in file order), and the conversation's records (``ordered``).

    Claude Code writes ``enqueue`` (with the text) when the user types while the agent works,
    then takes the input off the queue: ``remove`` when it hands it to the model at the next
    tool boundary (the request after the tool results, as a reminder the file does not
    hold), ``dequeue`` when it becomes the next prompt (normally written as a user record
    too), ``popAll`` when the user pulls the queue back into the input box (not delivered).
    A background task's ``<task-notification>`` waits in the same queue until the agent is
    idle, and is written as a user record then; so a ``remove`` takes the input it names
    (newer versions write its ``content``), else the oldest of the user's own inputs. An
    input still queued when the file ends is named in a warning.
    Newer versions also write where the input reached the model, a ``queued_command``
    attachment (:func:`is_queued_command`): that record is the place, and the queue's own
    ``remove`` of the same text adds nothing.
    """
    texts = _user_texts(ordered)
    pending: list[tuple[int, str]] = []
    delivered: list[Queued] = []
    attached: dict[str, list[Queued]] = {}
    for number, rec in queue:
        if is_queued_command(rec):
            text = rec["attachment"]["prompt"].strip()
            if text and text not in texts:
                at = _parse_time(rec.get("timestamp"), number, [])
                delivered.append(Queued(text, number, number, at))
                attached.setdefault(text, []).append(delivered[-1])
    for number, rec in queue:
        if rec["type"] != "queue-operation":
            continue
        operation = rec.get("operation")
        content = rec.get("content")
        if operation == "enqueue":
            if isinstance(content, str) and content.strip():
                pending.append((number, content.strip()))
        elif operation in ("remove", "dequeue") and pending:
            named = [p for p in pending if isinstance(content, str) and p[1] == content.strip()]
            own = [p for p in pending if input_kind(p[1]) != "task-notification"]
            taken = (named or own or pending)[0]
            pending.remove(taken)
            if taken[1] in texts:
                continue  # written as a user record too: already in the conversation
            if attached.get(taken[1]):
                # Its attachment says where it was delivered; the enqueue, when it was typed.
                attached[taken[1]].pop(0).line = taken[0]
                continue
            at = _parse_time(rec.get("timestamp"), number, [])
            delivered.append(Queued(taken[1], taken[0], number, at))
        elif operation == "popAll":
            skipped["queued_input:withdrawn"] += len(pending)
            pending.clear()
    lost = [
        f"line {number}: {text[:60]!r}"
        for number, text in pending
        if text not in texts and input_kind(text) != "task-notification"
    ]
    if lost:
        skipped["queued_input"] += len(lost)
        warnings.append(
            f"{len(lost)} input(s) typed while the agent worked are still queued when the file "
            "ends (never delivered), not stored: " + "; ".join(lost)
        )
    return delivered


def _user_texts(records: list[Record]) -> set[str]:
    """The texts of the conversation's user records (each text block, stripped); a slash
    command's record also as the user typed it, ``/name args`` (an input queued as
    ``/compact keep the plan`` is written as ``<command-name>/compact</command-name>`` …
    ``<command-args>keep the plan</command-args>``)."""
    texts = set()
    for _, rec in records:
        if rec["type"] == "user":
            content = rec["message"].get("content")
            if isinstance(content, str):
                texts.add(content.strip())
                typed = slash_command(content)
                if typed:
                    texts.add(typed)
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "text":
                    texts.add(str(block.get("text", "")).strip())
    return texts


COMMAND = re.compile(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>")
ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


def slash_command(text: str) -> str:
    """A slash command's record as the user typed it (``/compact keep the plan``), or ""."""
    name = COMMAND.search(text)
    if name is None:
        return ""
    args = ARGS.search(text)
    typed = f"{name.group(1)} {args.group(1).strip()}" if args else name.group(1)
    return typed.strip()


def _deliver(items: list[Item], queued: list[Queued]) -> list[Item]:
    """``items`` with each queued input where the model got it: a user input (marked
    ``queued``) before the first assistant step recorded after it left the queue, so after
    the tool results that step answers; at the end when no step came yet."""
    out = list(items)
    for q in sorted(queued, key=lambda q: q.delivered_line):
        at = next(
            (n for n, i in enumerate(out) if i.kind == "assistant" and i.line > q.delivered_line),
            len(out),
        )
        created = q.delivered_at or (out[at - 1].created_at if at else utcnow())
        # A background task's notice can be delivered from the queue too: the harness's.
        kind = input_kind(q.text)
        origin = {INPUT_KEY: kind if kind in HARNESS_KINDS else QUEUED, "queued_line": q.line}
        out.insert(at, Item("user", q.delivered_line, created, text=q.text, origin=origin))
    return out


def _items(records: list[Record], not_read: NotRead, warnings: list[str]) -> list[Item]:
    """The conversation's items; a record this parser cannot read (content of another shape,
    a bad usage) is left out and named, never the file."""
    items: list[Item] = []
    boundary: dict[str, Any] | None = None
    boundary_at = None
    step: Item | None = None  # the assistant step being merged (until the next user input)
    step_id: str | None = None  # its message.id
    last_time: datetime | None = None
    for number, rec in records:
        created = _time(rec, number, last_time, warnings)
        last_time = created
        if rec["type"] == "system":
            meta = rec.get("compactMetadata")
            boundary = meta if isinstance(meta, dict) else {}
            boundary_at = created
            step, step_id = None, None
            continue
        msg = rec["message"]
        role = rec["type"]
        blocks = _known_blocks(msg.get("content"), number, role, not_read)
        if blocks is None:
            continue
        if role == "user" and rec.get("isCompactSummary"):
            meta = boundary or {}
            pre = meta.get("preTokens")
            items.append(
                Item(
                    "summary",
                    number,
                    boundary_at or created,
                    text="\n".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
                    trigger=str(meta.get("trigger", "auto")),
                    pre_tokens=pre if isinstance(pre, int) else None,
                    compaction=compaction_figures(meta) or None,
                )
            )
            boundary, boundary_at, step, step_id = None, None, None, None
            continue
        if role == "user":
            recorded = rec.get("toolUseResult")
            by_id = {i: recorded for i in result_ids(rec)} if isinstance(recorded, dict) else None
            new = items_of(role, blocks, number, created, None, by_id)
            for item in new:
                if item.kind == "result":
                    _cut_huge(item, warnings)
                else:
                    _mark_harness(item, rec)
            items.extend(new)
            if any(i.kind == "user" for i in new):
                step, step_id = None, None
            continue
        try:
            usage = None if msg.get("model") == "<synthetic>" else usage_of(msg.get("usage"))
        except ValueError:
            usage = None
            not_read.line("unexpected shape: usage", number)
        one = items_of(role, blocks, number, created, usage)[0]
        # An API error Claude Code wrote itself (``<synthetic>``, ``isApiErrorMessage``) names
        # no model that answered: it never becomes the session's or a request's model.
        synthetic = msg.get("model") == "<synthetic>" or rec.get("isApiErrorMessage") is True
        one.model = "" if synthetic else str(msg.get("model") or "")
        mid = msg.get("id")
        if step is not None and step_id is not None and mid == step_id:
            step.text = "\n".join(t for t in (step.text, one.text) if t)
            step.calls.extend(one.calls)
            step.thinking.extend(one.thinking)
            step.usage = one.usage or step.usage
            continue
        step, step_id = one, mid if isinstance(mid, str) else None
        items.append(one)
    return items


COMPACTION_FIGURES = {
    "postTokens": "post_tokens",
    "durationMs": "duration_ms",
    "cumulativeDroppedTokens": "cumulative_dropped_tokens",
}
"""``compactMetadata`` numbers kept beside ``trigger`` and ``preTokens``
(:attr:`Item.compaction`)."""


def compaction_figures(meta: dict[str, Any]) -> dict[str, int]:
    """The figures of a ``compactMetadata`` beyond its trigger and ``preTokens``: the context
    after it, its duration, the tokens dropped so far, how many records it kept."""
    out = {
        name: value
        for key, name in COMPACTION_FIGURES.items()
        if isinstance(value := meta.get(key), int) and not isinstance(value, bool)
    }
    listed = meta.get("preservedMessages")
    uuids = listed.get("uuids") if isinstance(listed, dict) else None
    if isinstance(uuids, list):
        out["kept_messages"] = len(uuids)
    return out


def dropped_before(meta: Any) -> int:
    """Tokens compacted away before the file begins, from its first compaction's
    ``compactMetadata``: ``cumulativeDroppedTokens`` (every compaction of the session so far)
    less what this one dropped (``preTokens - postTokens``); 0 when it does not say."""
    if not isinstance(meta, dict):
        return 0
    figures = compaction_figures(meta)
    total, post, pre = (
        figures.get("cumulative_dropped_tokens"),
        figures.get("post_tokens"),
        meta.get("preTokens"),
    )
    if total is None or post is None or not isinstance(pre, int):
        return 0
    return max(total - (pre - post), 0)


def _mark_harness(item: Item, rec: dict[str, Any]) -> None:
    """A user input the harness wrote (a task's notice, the interruption mark, a command's
    wrappers, a reminder, an ``isMeta`` record) marked as such in its origin."""
    kind = input_kind(item.text) or ("harness" if rec.get("isMeta") is True else None)
    if kind is not None:
        item.origin = {INPUT_KEY: kind}


def _cut_huge(item: Item, warnings: list[str]) -> None:
    """A result over :data:`MAX_RESULT_CHARS` kept as its head and tail (and the structured
    result beside it, which repeats it, left out), with a warning naming the line."""
    item.text, omitted = cut_result(item.text)
    if omitted:
        item.recorded = None
        warnings.append(
            f"line {item.line}: the tool result for {item.tool_use_id} is "
            f"{omitted + MAX_RESULT_CHARS} characters; its head and tail are kept"
        )


def _time(rec: dict[str, Any], number: int, last: datetime | None, warnings: list[str]) -> datetime:
    """The record's time; a bad or missing one takes the previous record's (with a warning
    for a bad one)."""
    problems: list[str] = []
    created = _parse_time(rec.get("timestamp"), number, problems)
    if problems:
        warnings.extend(f"{p}; the previous record's time is used" for p in problems)
    return created or last or utcnow()


def _known_blocks(
    content: Any, number: int, role: str, not_read: NotRead
) -> list[dict[str, Any]] | None:
    """The message's blocks the wire form can hold (blocks of unknown types left out and
    named); None when the record itself is of a shape this parser does not read."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        not_read.line(f"unexpected shape: {role}", number)
        return None
    blocks = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict) or kind not in BLOCK_TYPES:
            not_read.line(f"content block of unknown type {kind!r}", number)
            continue
        blocks.append(block)
    try:
        check_blocks(blocks, role)
    except ValueError:
        not_read.line(f"unexpected shape: {role}", number)
        return None
    return blocks


def _from_first_input(items: list[Item], not_read: NotRead) -> list[Item]:
    """The items from the first user input or recorded compaction on: what a chain that
    starts mid-way (a record missing from the file) holds before it cannot open a round."""
    first = next((n for n, i in enumerate(items) if i.kind in ("user", "summary")), len(items))
    for item in items[:first]:
        not_read.line("before the conversation's first input", item.line)
    return items[first:]
