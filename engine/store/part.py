"""What every part of :class:`~engine.store.repository.Store` stands on: the store's one
connection (:class:`~engine.store.access.StoreAccess`), held, not inherited.

A part's methods are wrapped by :func:`~engine.store.access.reads` and
:func:`~engine.store.access.writes` as the store's were; what those wrappers and the parts ask of
``self`` (the database, binding, the write in progress, the row helpers) is read from the one
connection, so every part of a store shares its transaction and its read-only state.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from peewee import Database

from engine.store.access import StoreAccess
from engine.store.models import BaseRow


class StorePart:
    """A part of the store, over its connection."""

    def __init__(self, access: StoreAccess) -> None:
        self.access = access

    @property
    def db(self) -> Database:
        return self.access.db

    @property
    def path(self) -> Path:
        return self.access.path

    @property
    def url(self) -> str | None:
        return self.access.url

    @property
    def where(self) -> str:
        return self.access.where

    @property
    def read_only(self) -> bool:
        return self.access.read_only

    @property
    def busy_timeout(self) -> float:
        return self.access.busy_timeout

    @property
    def _writing(self) -> Any:
        """The store's note of the write in progress on this thread (``writes`` keeps it)."""
        return self.access._writing

    def bind(self) -> None:
        self.access.bind()

    def begin_write(self) -> AbstractContextManager[None]:
        return self.access.begin_write()

    def together(self) -> AbstractContextManager[object]:
        return self.access.together()

    def disk_error(self, exc: Exception) -> Exception:
        return self.access.disk_error(exc)

    def locked_message(self, waited: float) -> str:
        return self.access.locked_message(waited)

    def _touch(self, session_id: int) -> None:
        self.access._touch(session_id)

    def _insert_rows(self, table: type[BaseRow], rows: Sequence[dict[str, Any]]) -> None:
        self.access._insert_rows(table, rows)

    def _insert_row(self, table: type[BaseRow], row: dict[str, Any]) -> int:
        return self.access._insert_row(table, row)

    def _round_id(self, session_id: int, round_index: int) -> int:
        return self.access._round_id(session_id, round_index)

    def _round_row(self, session_id: int, round_index: int) -> Any:
        return self.access._round_row(session_id, round_index)
