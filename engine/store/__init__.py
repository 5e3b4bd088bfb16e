"""Persistence: SQLite through peewee behind a repository that speaks engine.models.

peewee imports every database driver it finds installed when it is imported (psycopg,
psycopg2, pymysql, MySQLdb: ``try: import psycopg`` at its top, 0.1–0.2 s for psycopg 3) and
its maintainer keeps it that way (coleifer/peewee#1044). ctxscope needs a server driver only for
a ``postgresql://`` database, so peewee is imported here, before any module of the store,
with those drivers reported absent for the length of that one import (a ``None`` entry in
``sys.modules`` is how Python marks a module that cannot be imported). Nothing else changes:
a driver imported before (the tests, a caller) is left as it is, and the drivers import
normally afterwards. :mod:`engine.store.postgres` imports psycopg itself when it opens a
database, through an adapter of its own (:class:`engine.store.postgres.Psycopg3`), so it
does not depend on what peewee saw at its import.
"""

import sys

SERVER_DRIVERS = ("psycopg2cffi", "psycopg2", "psycopg", "pymysql", "MySQLdb")
"""The modules peewee tries at its import, none of which SQLite needs."""


def _import_peewee_without_server_drivers() -> None:
    if "peewee" in sys.modules:
        return
    absent = [name for name in SERVER_DRIVERS if name not in sys.modules]
    for name in absent:
        sys.modules[name] = None  # type: ignore[assignment]  # "cannot be imported"
    try:
        import peewee  # noqa: F401
    finally:
        for name in absent:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


_import_peewee_without_server_drivers()

from engine.store.errors import StoreError  # noqa: E402 - after peewee, on purpose
from engine.store.lease import Holder, SessionBusy  # noqa: E402
from engine.store.repository import Lease, SessionNotFound, Store  # noqa: E402

__all__ = ["Holder", "Lease", "SessionBusy", "SessionNotFound", "Store", "StoreError"]
