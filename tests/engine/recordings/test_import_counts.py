"""An import stores every count an imported session's request needs, so ``context`` of it
never loads the tokenizer (issue 28: each ``context`` / ``show`` of an imported session loaded
it and counted again)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.common import make_agent
from cli.main import main
from engine.messages.tokens import text_digest
from engine.recordings.repeated import repeated_digest, repeated_texts
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import MAROT

ROOT = Path(__file__).resolve().parents[3]

RUNNER = """
import atexit, sys
atexit.register(lambda: print("tiktoken imported:", "tiktoken" in sys.modules, file=sys.stderr))
from cli.main import main
sys.exit(main(sys.argv[1:]))
"""
"""``ctxscope`` as a subprocess that says at exit whether tiktoken was ever imported."""


def ctxscope(cwd: Path, *argv: str) -> tuple[dict[str, Any], bool]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSCOPE_")}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *argv],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    line = next(x for x in done.stderr.splitlines() if x.startswith("tiktoken imported:"))
    return json.loads(done.stdout), line.endswith("True")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Marot session (a recorded compaction, so a summary too) imported."""
    db = tmp_path_factory.mktemp("counts") / "m.db"
    assert main(["import", str(MAROT), "--db", str(db), "--json"]) == 0
    return db


def test_context_of_an_imported_session_needs_no_tokenizer(imported: Path) -> None:
    data, loaded = ctxscope(imported.parent, "context", "1", "--db", str(imported), "--json")
    assert not loaded
    # ctxscope's own request over the recording (its what-if: its system prompt, its tools)
    layers = {layer["name"]: layer["tokens"] for layer in data["what_if"]["layers"]}
    assert layers["L1 system"] > 0 and layers["L1 tools"] > 0 and layers["L3 summaries"] > 0


def test_the_stored_counts_are_what_counting_again_gives(imported: Path, tmp_path: Path) -> None:
    """The same request counted from the stored counts and with them gone (the tokenizer
    counting every repeated text again): the same figures, layer by layer."""
    stored, _ = ctxscope(imported.parent, "context", "1", "--db", str(imported), "--json")
    bare = tmp_path / "bare.db"
    with sqlite3.connect(imported) as source, sqlite3.connect(bare) as target:
        source.backup(target)
    with sqlite3.connect(bare) as con:
        assert con.execute("SELECT count(*) FROM token_count_row").fetchone()[0] > 0
        con.execute("DELETE FROM token_count_row")
    counted, loaded = ctxscope(tmp_path, "context", "1", "--db", str(bare), "--json")
    assert loaded  # without them the tokenizer counts
    assert counted["layers"] == stored["layers"]
    assert counted["total"] == stored["total"]


def test_import_stores_what_the_builder_repeats(imported: Path) -> None:
    """The list stored at import holds every text an agent over the session repeats (but the
    workspace's CODE_LAW, which is the workspace's)."""
    store = Store.open(imported, read_only=True)
    try:
        session = store.get_session(1)
        settings = Settings(_toml_file="none.toml", model="offline")
        agent = make_agent(store, session, settings)
        agent.preview("")
        wanted = {t for t in agent.builder.repeated_texts() if t}
        summaries = [s for s in store.summaries(1) if s.active]
        assert summaries
        assert wanted <= set(repeated_texts(session.strategy, settings, summaries))
    finally:
        store.close()


def test_the_repeated_texts_are_digested_once_a_process() -> None:
    """The system prompt and tool definitions every imported session stores counts of are
    digested once a process (issue 44), each to what ``text_digest`` gives."""
    texts = repeated_texts("layered", Settings(), [])
    assert len(texts) >= 2 and len(set(texts)) == len(texts)  # the prompt, each tool once
    repeated_digest.cache_clear()
    assert [repeated_digest(t) for t in texts] == [text_digest(t) for t in texts]
    again = repeated_texts("layered", Settings(), [])
    assert [repeated_digest(t) for t in again] == [text_digest(t) for t in texts]
    assert repeated_digest.cache_info().hits == len(texts)  # the second time, every one
