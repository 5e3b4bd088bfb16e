"""Usage: what each model call used and cost, as the provider reported it."""

from __future__ import annotations

from engine.models import (
    UsageRecord,
)
from engine.store.access import reads, writes
from engine.store.models import (
    UsageRow,
)
from engine.store.part import StorePart
from engine.store.rows import (
    Select,
    table_columns,
    usage_model,
    usage_row,
)


class UsageStore(StorePart):
    """Usage records, one per model call."""

    @writes
    def add_usage(self, record: UsageRecord) -> UsageRecord:
        new_id = self._insert_row(UsageRow, usage_row(record))
        return record.model_copy(update={"id": new_id})

    @writes
    def add_usages(self, records: list[UsageRecord]) -> None:
        """Write several usage records at once (an import's batch)."""
        self._insert_rows(UsageRow, [usage_row(r) for r in records])

    @reads
    def usages(self, session_id: int) -> list[UsageRecord]:
        q = (
            UsageRow.select(*table_columns(UsageRow))
            .where(UsageRow.session == session_id)
            .order_by(UsageRow.id)
        )
        return [usage_model(r) for r in q.namedtuples()]

    @reads
    def last_usage(self, session_id: int) -> UsageRecord | None:
        """The last real measurement: a record of all zeros (a provider fault, an import) is
        not one and is passed over."""
        row = _LAST_USAGE.first(self.db, (session_id,))
        return None if row is None else usage_model(row)


_LAST_USAGE = Select(
    UsageRow,
    "{session} = ? AND {input_tokens} + {output_tokens} + {cache_read_input_tokens}"
    " + {cache_creation_input_tokens} > 0",
    order="{id} DESC",
    limit=1,
)
"""The last usage record that measured something (asked before every request)."""
