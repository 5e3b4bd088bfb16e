"""Seed 004 F-006: the raw middle of a compaction, written to a file beside the database.

The file is ``<folder>/compact-<ISO 8601>-<sequence>.json`` (``folder`` is the session's own
under the data directory), the middle's messages as indented JSON: an earlier summary being
re-compacted in its own role (a user message, F-005), then the archived messages, each tool
result as the model saw it — the full observation, not the compressed form history keeps
(4.2: the faithful serialisation of the original messages).
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.models import Message, utcnow
from engine.store import Store


def with_full_results(store: Store, messages: list[Message]) -> list[Message]:
    """``messages`` with each tool result's content its full observation, when one is stored
    (imported sessions may have none: the stored content stands)."""
    ids = [m.id for m in messages if m.role == "tool" and m.id is not None]
    full = {o.message_id: o.text for o in store.observations_for_messages(ids)}
    return [m.model_copy(update={"content": full[m.id]}) if m.id in full else m for m in messages]


def write_raw_middle(store: Store, folder: Path, middle: list[Message]) -> Path:
    """Write ``middle`` to the next ``compact-*.json`` of ``folder`` (created if missing);
    ``OSError`` when it cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    seq = len(list(folder.glob("compact-*.json"))) + 1
    stamp = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    path = folder / f"compact-{stamp}-{seq}.json"
    rows = [m.model_dump(mode="json") for m in with_full_results(store, middle)]
    path.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")
    return path
