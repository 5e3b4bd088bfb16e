"""Entire checkpoints: ``fixtures/entire-checkpoint/`` is a branch tree holding one
checkpoint, ``3f/a9c2e71b04d5/``, laid out as entireio/cli writes it (``CheckpointPath``:
``<id[:2]>/<id[2:]>/``; ``metadata.json`` with ``checkpoint_id`` and ``sessions``; ``0/`` with
the session's ``metadata.json`` and its native transcript ``full.jsonl``, here the Claude Code
2.1.217 fixture of ``test_claude_code_2x_compaction.py``).

Entire's ``token_usage`` for the session, worked out by hand from that transcript's seven
responses: input 3+1+1+2+1+3+1 = 12, cache write 9000+600+300+400+200+5000+100 = 15,600,
cache read 12000+21000+21600+21900+22300+12000+17000 = 127,800, output
40+35+60+80+12+30+9 = 266, 7 API calls.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engine.recordings.importing import parse_path
from engine.store import Store
from tests.engine.recordings.helpers import FIXTURES, import_all

TREE = FIXTURES / "entire-checkpoint"
CHECKPOINT = TREE / "3f" / "a9c2e71b04d5"


def test_the_branch_tree_imports_each_session_with_its_own_reader(store: Store) -> None:
    """The tree and the checkpoint folder alike: one session, read as Claude Code (its
    compaction found, as in the 2.1.217 test: 3 rounds, 1 compaction), Entire's figures kept
    and agreeing with the transcript's (no warning about them)."""
    for path in (TREE, CHECKPOINT):
        ((transcript, parsed),) = parse_path(path).files
        assert transcript == CHECKPOINT / "0" / "full.jsonl"
        assert parsed.fmt == "claude-code"
        assert parsed.recorded["entire"] == {
            "checkpoint_id": "3fa9c2e71b04d5",
            "cli_version": "0.4.9",
            "branch": "main",
            "agent": "Claude Code",
            "session_id": "7c1e0f4a-2b9d-4e61-a0c3-5f8e2d917b40",
            "token_usage": {
                "input_tokens": 12,
                "cache_creation_tokens": 15600,
                "cache_read_tokens": 127800,
                "output_tokens": 266,
                "api_call_count": 7,
            },
        }
        assert not any("Entire" in w for w in parsed.warnings)
    (one,) = import_all(store, TREE)
    assert (one.report.rounds, one.report.compactions) == (3, 1)
    assert sum(u.usage.output_tokens for u in one.usages) == 266


def test_a_difference_with_entires_figures_is_named(tmp_path: Path) -> None:
    """Entire's metadata saying 300 output tokens over 8 calls, where the transcript's
    records hold 266 over 7: both figures named in one warning."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    meta_path = tree / "3f" / "a9c2e71b04d5" / "0" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["token_usage"] |= {"output_tokens": 300, "api_call_count": 8}
    meta_path.write_text(json.dumps(meta))
    ((_, parsed),) = parse_path(tree).files
    assert (
        "Entire's metadata.json counts 8 API calls, 12 input, 15,600 cache write, 127,800 "
        "cache read, 300 output; the transcript's usage records count 7 API calls, 12 input, "
        "15,600 cache write, 127,800 cache read, 266 output"
    ) in parsed.warnings
