"""The store's errors, in a module of their own so that the schema and the row models can both
raise them without importing each other."""

from __future__ import annotations


class StoreError(Exception):
    """The database cannot be used; the message says which file and why."""


class SessionNotFound(StoreError):
    """No session with that id."""
