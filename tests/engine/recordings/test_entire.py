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
import os
import shutil
import subprocess
from pathlib import Path

from engine.recordings.entire import BRANCH
from engine.recordings.importing import import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import ENTIRE_CODEX
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


def git(repo: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": os.environ["PATH"],
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def repo_with_branch(tmp_path: Path) -> Path:
    """A repository whose ``main`` holds a README, and whose orphan
    ``entire/checkpoints/v1`` holds two checkpoints as Entire commits them: the fixture's
    (v1 layout, ``full.jsonl``) and ``1c/f96d1dbe7e/`` in the newer layout: its session folder
    ``3/`` with ``raw_transcript`` (the corpus's real Codex 0.130 rollout, which entireio/cli
    keeps at that path), Entire's condensed ``transcript.jsonl`` beside it, and the session's
    ``metadata.json`` with the ``token_usage`` Entire recorded for it (input 30,854, cache
    read 30,464, output 2,205, 2 API calls). Nothing of the branch is checked out."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("a project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "checkout", "-q", "--orphan", BRANCH)
    git(repo, "rm", "-rq", "--cached", ".")
    (repo / "README.md").unlink()
    shutil.copytree(TREE, repo, dirs_exist_ok=True)
    session = repo / "1c" / "f96d1dbe7e" / "3"
    session.mkdir(parents=True)
    shutil.copyfile(ENTIRE_CODEX, session / "raw_transcript")
    (session / "transcript.jsonl").write_text('{"v":1,"agent":"codex","type":"user"}\n')
    usage = {"input_tokens": 30854, "cache_creation_tokens": 0, "cache_read_tokens": 30464}
    usage |= {"output_tokens": 2205, "api_call_count": 2}
    (session / "metadata.json").write_text(
        json.dumps({"checkpoint_id": "1cf96d1dbe7e", "agent": "Codex", "token_usage": usage})
    )
    (session.parent / "metadata.json").write_text(
        json.dumps(
            {
                "checkpoint_id": "1cf96d1dbe7e",
                "sessions": [{"metadata": "/1c/f96d1dbe7e/3/metadata.json"}],
            }
        )
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Checkpoint: 1cf96d1dbe7e")
    git(repo, "checkout", "-q", "main")
    assert sorted(p.name for p in repo.iterdir()) == [".git", "README.md"]
    return repo


def test_a_repository_imports_the_checkpoints_of_its_branch(tmp_path: Path, store: Store) -> None:
    """Importing the repository folder reads the branch with git, not the working tree (which
    holds only the README): the fixture's Claude Code session as from the checked-out tree,
    and the real Codex rollout read from ``raw_transcript`` (not Entire's condensed
    ``transcript.jsonl``), Entire's figures agreeing with its two calls (no warning)."""
    repo = repo_with_branch(tmp_path)
    files = parse_path(repo)
    assert [p.fmt for _, p in files.files] == ["codex", "claude-code"]
    codex, claude = (p for _, p in files.files)
    assert [Path(*t.parts[-4:]) for t, _ in files.files] == [
        Path("1c/f96d1dbe7e/3/raw_transcript"),
        Path("3f/a9c2e71b04d5/0/full.jsonl"),
    ]
    assert codex.recorded["entire"]["token_usage"]["output_tokens"] == 2205
    assert not any("Entire" in w for w in codex.warnings + claude.warnings)
    assert claude.recorded["entire"]["checkpoint_id"] == "3fa9c2e71b04d5"
    assert files.notes == [
        f"{repo}: the checkpoints of its refs/heads/{BRANCH} branch, read with git (not the files)"
    ]
    reports = import_parsed(store, files, "/tmp/ws", Settings())
    assert [(r.fmt, r.rounds) for r in reports] == [("codex", 1), ("claude-code", 3)]


def test_a_repository_without_the_branch_is_walked_as_a_folder(tmp_path: Path) -> None:
    """No ``entire/checkpoints/v1``: the folder's own files are what ``import`` reads."""
    repo = tmp_path / "plain"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copyfile(ENTIRE_CODEX, repo / "rollout.jsonl")
    ((path, parsed),) = parse_path(repo).files
    assert (path.name, parsed.fmt) == ("rollout.jsonl", "codex")
