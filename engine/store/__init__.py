"""Persistence: SQLite through peewee behind a repository that speaks engine.models."""

from engine.store.errors import StoreError
from engine.store.lease import Holder, SessionBusy
from engine.store.repository import Lease, SessionNotFound, Store

__all__ = ["Holder", "Lease", "SessionBusy", "SessionNotFound", "Store", "StoreError"]
