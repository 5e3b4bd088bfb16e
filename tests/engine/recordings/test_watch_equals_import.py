"""``watch`` = ``import`` on this issue's fixtures and every corpus file ``watch`` follows (the
Claude Code sessions and subagent file, the Codex rollouts, the Copilot CLI events) grown in
chunks of 1, 7 and 50 records: the stored messages (role, text, round, whether history still
holds them; queued inputs among them), the usage records (output tokens, model) and the
compactions (their recorded figures) are the same as importing the finished file whole.

The corpus files of more than 600 records are grown 7 and 50 records a look here; one record a
look was run once by hand for each (it re-reads the part after the last round each look):
oh-my-posh 2.1.219 (699 records; 226 s), oh-my-posh 2.1.217 (945; 98 s), StarCar Copilot CLI (627;
57 s), all equal; marot (1,863) is grown record by record in ``test_watch.py`` and 7 records a
look (its queued inputs as newer versions write them) below, so here 50 a look only. The Gemini CLI
chat, the OpenHands event list and the SWE-agent trajectory are whole files ``watch`` does not
follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings.follow import Follower
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, FIXTURES, import_all

FILES = [
    FIXTURES / "claude-code-2.1.217-preserved-segment.jsonl",
    FIXTURES / "claude-code-2.1.219-starts-at-boundary.jsonl",
    FIXTURES / "codex-0.142-usage-after-outputs.jsonl",
    FIXTURES / "codex-0.125-usage-before-outputs.jsonl",
    FIXTURES / "copilot-cli-1.0.61-events.jsonl",
    *sorted(p for p in CORPUS.iterdir() if p.suffix == ".jsonl"),
]
BIG = 600
"""Records over which a file is grown 7 and 50 records a look only (module docstring)."""
MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CASES = [
    (path, chunk)
    for path in FILES
    for chunk in (1, 7, 50)
    if (chunk > 1 or len(path.read_text().splitlines()) <= BIG) and (path, chunk) != (MAROT, 7)
]


def stored(store: Store, sid: int) -> tuple[list[tuple[object, ...]], ...]:
    live = {m.id for m in store.history(sid).messages}
    messages = [(m.role, m.content, m.meta.round, m.id in live) for m in store.all_messages(sid)]
    usages = [(u.usage.output_tokens, u.model) for u in store.usages(sid)]
    keys = ("recorded_pre_tokens", "recorded_post_tokens", "recorded_duration_ms")
    compactions = [tuple(c.stats.get(k) for k in keys) for c in store.compactions(sid)]
    return messages, usages, compactions


def test_every_followed_corpus_file_is_grown() -> None:
    """The 14 ``.jsonl`` files of the corpus (its README), each at least at 50 records a look;
    the three Codex 0.14x files (92, 17 and 64 lines) a record at a time too."""
    grown = {p.name for p, c in CASES if p.parent == CORPUS and c == 50}
    assert len(grown) == 14
    assert {p.name for p, c in CASES if c == 7 and p.parent == CORPUS} == grown - {MAROT.name}
    assert {p.name for p, c in CASES if c == 1 and p.parent == CORPUS} == grown - {
        MAROT.name,
        "JanDeDobbeleer__oh-my-posh__entire__10_906611becd_0_full.jsonl",
        "JanDeDobbeleer__oh-my-posh__entire__28_0a344253d3_0_full.jsonl",
        "polecatspeaks__StarCar__entire__70_f01dc53f44_0_full.jsonl",
    }


@pytest.mark.parametrize(("path", "chunk"), CASES, ids=lambda v: str(v)[-40:])
def test_watch_stores_what_import_stores(tmp_path: Path, path: Path, chunk: int) -> None:
    lines = path.read_text().splitlines()
    f = tmp_path / path.name
    f.write_text("")
    store = Store.open(tmp_path / "w.db")
    follower = Follower(f, Settings(), store)
    with open(f, "a") as out:
        for at in range(0, len(lines), chunk):
            out.write("".join(line + "\n" for line in lines[at : at + chunk]))
            out.flush()
            follower.poll()
    assert follower.session is not None and follower.session.id is not None
    ref = Store.open(tmp_path / "r.db")
    (one,) = import_all(ref, path)
    assert one.report.session.id is not None
    assert stored(store, follower.session.id) == stored(ref, one.report.session.id)


def test_queued_inputs_grown_in_chunks_store_what_import_stores(tmp_path: Path) -> None:
    """marot with its queued inputs written as newer versions write them
    (``marot_with_queued_attachments``), grown 7 records a look: an input delivered from the
    queue moves after results its step gets at a later look, so the round the last save began
    with no longer begins there; watch stored a result against a call of an earlier round
    (a KeyError) before it stored the file again in that case. (Grown 1 record a look it
    gives the same: run once by hand, 4 minutes on the shared build machine.)"""
    from tests.engine.recordings.test_claude_code_parse import marot_with_queued_attachments

    lines = marot_with_queued_attachments()
    f = tmp_path / "m.jsonl"
    f.write_text("")
    store = Store.open(tmp_path / "w.db")
    follower = Follower(f, Settings(), store)
    with open(f, "a") as out:
        for at in range(0, len(lines), 7):
            out.write("".join(line + "\n" for line in lines[at : at + 7]))
            out.flush()
            follower.poll()
    assert follower.session is not None and follower.session.id is not None
    whole = tmp_path / "whole.jsonl"
    whole.write_text("\n".join(lines) + "\n")
    ref = Store.open(tmp_path / "r.db")
    (one,) = import_all(ref, whole)
    assert one.report.session.id is not None
    mine, theirs = stored(store, follower.session.id), stored(ref, one.report.session.id)
    assert mine == theirs
