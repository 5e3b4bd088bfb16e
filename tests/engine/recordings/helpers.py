"""Shared by the importer tests: import a path through the real path, read it back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from engine.models import Message, UsageRecord
from engine.recordings.importing import ImportReport, import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import CORPUS as CORPUS  # the tests import it from here

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class Imported:
    report: ImportReport
    messages: list[Message]
    usages: list[UsageRecord]

    def calls(self) -> Counter[str]:
        return Counter(c.name for m in self.messages for c in m.tool_calls)

    def role(self, role: str) -> list[Message]:
        return [m for m in self.messages if m.role == role]


def import_all(store: Store, path: Path) -> list[Imported]:
    """Every session of ``path`` imported into ``store``, read back through the Store."""
    reports = import_parsed(store, parse_path(path), "/tmp/ws", Settings())
    out = []
    for report in reports:
        sid = report.session.id
        assert sid is not None
        out.append(Imported(report, store.all_messages(sid), store.usages(sid)))
    return out
