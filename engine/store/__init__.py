"""Persistence: SQLite through peewee behind a repository that speaks engine.models."""

from engine.store.lease import Holder, SessionBusy
from engine.store.repository import Lease, SessionNotFound, Store
from engine.store.schema import StoreError

__all__ = ["Holder", "Lease", "SessionBusy", "SessionNotFound", "Store", "StoreError"]
