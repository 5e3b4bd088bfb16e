"""Persistence: SQLite through peewee behind a repository that speaks engine.models."""

from engine.store.repository import SessionNotFound, Store
from engine.store.schema import StoreError

__all__ = ["SessionNotFound", "Store", "StoreError"]
