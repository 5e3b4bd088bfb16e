"""A real PostgreSQL server for the tests and the benchmarks: Debian's binaries, a data folder
in a fresh temporary folder, listening on 127.0.0.1 at a free port, stopped after.

The server refuses to run as root, so as root (CI) it runs as the ``postgres`` user, in a
folder that user owns. Without the binaries, :func:`binaries` says so and the PostgreSQL
tests are skipped in one line (``tests/conftest.py``).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PG_BIN_DIRS = tuple(
    Path(p)
    for p in (
        [os.environ["CTXSCOPE_PG_BIN"]]
        if "CTXSCOPE_PG_BIN" in os.environ
        else sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    )
)
"""Where the server binaries are looked for: ``CTXSCOPE_PG_BIN`` alone when it is set (to a
folder that does not exist: no PostgreSQL), else Debian's folders, the newest first."""


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None when PostgreSQL is absent."""
    for folder in PG_BIN_DIRS:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One throw-away cluster: :meth:`start`, :meth:`create_database`, :meth:`stop`."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="ctxscope-pg-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.user = "ctxscope"
        self._as_postgres = os.geteuid() == 0
        self._databases = 0
        self._store_template: str | None = None

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        if self._as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "t", template: str | None = None) -> str:
        """A new database, empty or a copy of the database ``template`` (a name); its URL."""
        import psycopg

        self._databases += 1
        name = f"{prefix}_{os.getpid()}_{self._databases}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"{copy}')
        return self.url(name)

    def create_store_database(self) -> str:
        """A new database holding what ``Store.open`` makes in an empty one (the schema at its
        version): a copy of a template made once per server. Making the schema takes ~0.7 s
        on the loaded build machine, copying the template none of it; a test of how a store
        is made uses :meth:`create_database`."""
        if self._store_template is None:
            from engine.store import Store

            url = self.create_database("store_template")
            Store.open(url).close()
            self._store_template = url.rsplit("/", 1)[1]
        return self.create_database(template=self._store_template)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
