"""New files the history import's workers wrote into scratch databases, copied into the
user's database several to a transaction (issue 44).

Each file's rows come in with its record (:class:`~engine.store.history.ImportedFile`) in
the same transaction, so a crash or Ctrl+C loses whole files only, and only files the next
run finds new and imports again. One transaction copies up to
:data:`~engine.store.staged.MOST_ATTACHED` files: a commit costs the one writer as much as
copying a small file (a third of its time per file, one at a time). A file whose copy fails
rolls back the whole batch, which is then stored file by file, each refusal on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from engine.recordings.base import ImportReport
from engine.recordings.history_workers import Staged
from engine.store import Store
from engine.store.history import ImportedFile


@dataclass
class StagedFile:
    """A new file as a worker staged it, and what it is now."""

    path: Path
    now: ImportedFile
    staged: Staged


def store_staged(
    store: Store, now: ImportedFile, staged: Staged, claimed: set[int] | frozenset[int]
) -> list[ImportReport]:
    """Store a new file whose sessions a worker wrote into a scratch database: its rows
    copied in, in one transaction with the file's record (:meth:`Store.copy_staged`); the
    reports with the ids they have here. A file whose every session ``import FILE`` stored
    already is taken as those sessions, as :func:`~engine.recordings.history.store_file`
    does."""
    try:
        return store_staged_batch(store, [StagedFile(Path(now.path), now, staged)], claimed)[0]
    finally:
        staged.scratch.unlink(missing_ok=True)


def store_staged_batch(
    store: Store, files: list[StagedFile], claimed: set[int] | frozenset[int]
) -> list[list[ImportReport]]:
    """:func:`store_staged` for several files in one transaction: all stored, or none (an
    error rolls every one back); each file's reports, in order. Their scratch files are
    deleted once copied (kept when nothing was: to be copied again one by one)."""
    taken = set(claimed)  # the claims of the files before, in this same transaction
    out: list[list[ImportReport]] = []
    with store.staged_files([f.staged.scratch for f in files]) as schemas:
        with store.transaction():
            for file, schema in zip(files, schemas, strict=True):
                reports = _copied(store, file, schema, taken)
                taken.update(r.session.id for r in reports if r.session.id is not None)
                out.append(reports)
    for file in files:
        file.staged.scratch.unlink(missing_ok=True)
    return out


def _copied(store: Store, file: StagedFile, schema: str, claimed: set[int]) -> list[ImportReport]:
    staged, now = file.staged, file.now
    kinds = [(r.fmt, r.records) for r in staged.reports]
    reports = stored_before(store, staged.sources, kinds, claimed)
    if not reports:
        shift = store.copy_staged(schema)["session_row"]
        reports = [_shifted(r, shift) for r in staged.reports]
    for report in reports:
        report.path = now.path
    store.remember_file(
        replace(
            now,
            fmt=staged.fmt,
            sessions=tuple(r.session.id for r in reports if r.session.id is not None),
            refused=None,
        )
    )
    return reports


def _shifted(report: ImportReport, shift: int) -> ImportReport:
    """A copy of ``report`` (and of its subagents') with the session ids they were copied
    under; the staged report stays as it was (a batch rolled back is copied again, file by
    file)."""
    session = report.session
    parent = session.parent_session_id
    moved = session.model_copy(
        update={
            "id": None if session.id is None else session.id + shift,
            "parent_session_id": None if parent is None else parent + shift,
        }
    )
    children = [_shifted(child, shift) for child in report.children]
    return replace(report, session=moved, children=children)


def stored_before(
    store: Store,
    keys: list[str | None],
    kinds: list[tuple[str, int]],
    claimed: set[int] | frozenset[int],
) -> list[ImportReport]:
    """The reports of a file whose every session ``import FILE`` stored already (the same
    bytes); none when any is missing or kept for another file."""
    found = [store.session_for_source(key) if key else None for key in keys]
    if not kinds or any(f is None or f.id in claimed for f in found):
        return []
    reports = []
    for session, (fmt, records) in zip(found, kinds, strict=True):
        assert session is not None
        report = ImportReport(session=session, fmt=fmt, records=records)
        report.warnings.append(
            f"already stored as session {session.id} (the same file); not stored again"
        )
        reports.append(report)
    return reports
