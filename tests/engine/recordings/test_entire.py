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

import pytest

from engine.recordings.entire import BRANCH
from engine.recordings.importing import import_parsed, parse_path
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import ENTIRE_CODEX, TESLAMINT_EXEC
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


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> None:
    every = GIT_ENV | {"PATH": os.environ["PATH"]} | (env or {})
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=every)


def started_repo(tmp_path: Path) -> Path:
    """``tmp_path/repo``: a git repository with one commit (a README) on ``main``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("a project\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def repo_with_branch(tmp_path: Path) -> Path:
    """A repository whose ``main`` holds a README, and whose orphan
    ``entire/checkpoints/v1`` holds two checkpoints as Entire commits them: the fixture's
    (v1 layout, ``full.jsonl``) and ``1c/f96d1dbe7e/`` in the newer layout: its session folder
    ``3/`` with ``raw_transcript`` (the corpus's real Codex 0.130 rollout, which entireio/cli
    keeps at that path), Entire's condensed ``transcript.jsonl`` beside it, and the session's
    ``metadata.json`` with the ``token_usage`` Entire recorded for it (input 30,854, cache
    read 30,464, output 2,205, 2 API calls). Nothing of the branch is checked out."""
    repo = started_repo(tmp_path)
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


X5 = "01M05RN3X2Z7NSB62J6F0RH4X5"
"""The corpus' Codex 0.147.0 ``codex exec`` rollout was the ``0/full.jsonl`` of this checkpoint,
kept by Entire 0.10 on ``refs/entire/checkpoints/X5/<id>`` in teslamint/entirecontext."""


def repo_with_checkpoint_refs(tmp_path: Path) -> Path:
    """A repository as Entire 0.10 leaves it (teslamint/entirecontext, its snapshot read with
    ``git for-each-ref`` / ``ls-tree``): no checkpoint branch; the checkpoint on a ref of its
    own, ``refs/entire/checkpoints/X5/01M05RN3X2Z7NSB62J6F0RH4X5``, whose commit's tree *is*
    the checkpoint folder (``metadata.json``, ``0/metadata.json``, ``0/full.jsonl`` and
    Entire's condensed ``0/transcript.jsonl``), the metadata's ``token_usage`` as Entire
    recorded it there (input 24,519, cache read 15,104, output 152, 1 API call); and a
    ``refs/entire/checkpoints/v2/main`` of the other layout, which is not a checkpoint."""
    repo = started_repo(tmp_path)
    tree = tmp_path / "tree"
    (tree / "0").mkdir(parents=True)
    shutil.copyfile(TESLAMINT_EXEC, tree / "0" / "full.jsonl")
    (tree / "0" / "transcript.jsonl").write_text('{"v":1,"agent":"codex","type":"user"}\n')
    usage = {"input_tokens": 24519, "cache_creation_tokens": 0, "cache_read_tokens": 15104}
    usage |= {"output_tokens": 152, "api_call_count": 1}
    session = {"checkpoint_id": X5, "agent": "Codex", "token_usage": usage}
    (tree / "0" / "metadata.json").write_text(json.dumps(session))
    sessions = [{"metadata": "/0/metadata.json", "transcript": "/0/full.jsonl"}]
    checkpoint = {"cli_version": "0.10.0", "checkpoint_id": X5, "sessions": sessions}
    (tree / "metadata.json").write_text(json.dumps(checkpoint))
    index = {"GIT_INDEX_FILE": str(tmp_path / "index"), "GIT_WORK_TREE": str(tree)}
    git(repo, "add", "-A", env=index)
    root = (
        subprocess.run(
            ["git", "-C", str(repo), "write-tree"],
            check=True,
            capture_output=True,
            env=os.environ | index,
        )
        .stdout.decode()
        .strip()
    )
    for ref in (f"refs/entire/checkpoints/X5/{X5}", "refs/entire/checkpoints/v2/main"):
        commit = (
            subprocess.run(
                ["git", "-C", str(repo), "commit-tree", root, "-m", f"Checkpoint: {X5}"],
                check=True,
                capture_output=True,
                env=GIT_ENV | {"PATH": os.environ["PATH"]},
            )
            .stdout.decode()
            .strip()
        )
        git(repo, "update-ref", ref, commit)
    return repo


def test_a_repository_imports_the_checkpoints_on_refs_of_their_own(
    tmp_path: Path, store: Store
) -> None:
    """Entire 0.10's per-checkpoint ref is read with git (the working tree holds only the
    README): the Codex rollout from its ``0/full.jsonl`` (not Entire's condensed
    ``transcript.jsonl``), Entire's figures agreeing with its one call (no warning); the
    ``v2/main`` ref is passed over and counted, though its tree is the same."""
    repo = repo_with_checkpoint_refs(tmp_path)
    files = parse_path(repo)
    ((transcript, codex),) = files.files
    assert Path(*transcript.parts[-4:]) == Path(f"X5/{X5}/0/full.jsonl")
    assert codex.fmt == "codex"
    assert codex.recorded["entire"]["checkpoint_id"] == X5
    assert codex.recorded["entire"]["token_usage"]["input_tokens"] == 24519
    assert not any("Entire" in w for w in codex.warnings)
    assert files.notes == [
        f"{repo}: 1 checkpoint(s) on refs of their own (refs/entire/checkpoints/<shard>/<id>),"
        " read with git (not the files)",
        f"{repo}: 1 other ref(s) under refs/entire/checkpoints/ not read (not one checkpoint's"
        " ref)",
    ]
    (report,) = import_parsed(store, files, "/tmp/ws", Settings())
    assert (report.fmt, report.rounds) == ("codex", 1)


def test_a_per_checkpoint_ref_is_named_by_its_id_and_shard() -> None:
    """entireio/cli's git-refs backend: ``refs/entire/checkpoints/<id[-2:]>/<id>``, a ULID."""
    from engine.recordings.entire import per_checkpoint_id

    assert per_checkpoint_id(f"refs/entire/checkpoints/X5/{X5}") == X5
    assert per_checkpoint_id(f"refs/entire/checkpoints/AB/{X5}") is None  # shard ≠ id[-2:]
    assert per_checkpoint_id("refs/entire/checkpoints/v2/main") is None
    assert per_checkpoint_id("refs/entire/checkpoints/v2/full/0000000000001") is None
    assert per_checkpoint_id(f"refs/heads/X5/{X5}") is None
    assert per_checkpoint_id("refs/entire/checkpoints/IL/01M05RN3X2Z7NSB62J6F0RH4IL") is None


def another_copy(tree: Path, lines: slice) -> None:
    """The fixture's session in a second checkpoint under ``tree``, ``aa/00000000000001/``,
    as Entire would keep a copy of it: those ``lines`` of its transcript, its session
    metadata (without Entire's figures)."""
    early = tree / "aa" / "00000000000001"
    (early / "0").mkdir(parents=True)
    transcript = (CHECKPOINT / "0" / "full.jsonl").read_bytes().splitlines(keepends=True)
    (early / "0" / "full.jsonl").write_bytes(b"".join(transcript[lines]))
    session = json.loads((CHECKPOINT / "0" / "metadata.json").read_text())
    session |= {"checkpoint_id": "aa00000000000001", "token_usage": None}
    (early / "0" / "metadata.json").write_text(json.dumps(session))
    (early / "metadata.json").write_text(
        json.dumps({"checkpoint_id": "aa00000000000001", "sessions": []})
    )


def test_a_session_in_several_checkpoints_is_read_once(tmp_path: Path, store: Store) -> None:
    """Entire copies a session's transcript into each checkpoint it reaches (teslamint/
    entirecontext: one Claude Code session in 7 checkpoints, each copy the first bytes of the
    next, imported as 6 sessions billing $55.67 for a $12.62 session). Here the fixture's
    session in two checkpoints: ``aa/…`` holds its first 11 lines (the five responses before
    ``/compact``: 5 API calls), ``3f/…`` all 19 (7 API calls). One session, from the longer
    copy, with the fixture's 7 requests, the other copy named; Entire's 7 calls agree with it."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    another_copy(tree, slice(0, 11))
    files = parse_path(tree)
    ((transcript, parsed),) = files.files
    assert Path(*transcript.parts[-3:]) == Path("a9c2e71b04d5/0/full.jsonl")
    assert parsed.warnings == [
        "the transcripts Entire kept of this session in 1 other checkpoint(s) "
        "(aa00000000000001) are the start of this one: read once, here"
    ]
    (report,) = import_parsed(store, files, "/tmp/ws", Settings())
    assert len(store.usages(report.session.id)) == 7


def test_copies_of_a_session_that_differ_are_each_read(tmp_path: Path) -> None:
    """A copy that is not the start of the other (the session rewound and gone on) is a
    recording of its own: both are read."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    another_copy(tree, slice(1, 11))  # not its first bytes
    assert len(parse_path(tree).files) == 2


def test_entires_figures_for_a_part_of_the_session_are_not_compared() -> None:
    """teslamint/entirecontext's checkpoint 01M0DCNGKH7RR42N781FTZ9HWB: its session metadata
    says ``compact_transcript_start`` 43 and 7 API calls — the calls since line 43 of Entire's
    condensed transcript (the checkpoint before it, at 0, counted the 29 before). The fixture's
    7 calls against
    Entire's 3: with a start above 0 kept and not compared; at 0, a difference named."""
    from engine.recordings.entire import keep

    files = parse_path(CHECKPOINT / "0" / "full.jsonl")
    ((_, parsed),) = files.files
    usage = {"input_tokens": 1, "output_tokens": 2, "api_call_count": 3}
    keep(parsed, {}, {"compact_transcript_start": 43, "token_usage": usage})
    assert parsed.recorded["entire"]["token_usage_from"] == 43
    assert not parsed.warnings
    keep(parsed, {}, {"compact_transcript_start": 0, "token_usage": usage})
    assert [w.split(";")[0] for w in parsed.warnings] == [
        "Entire's metadata.json counts 3 API calls, 1 input, 0 cache write, 0 cache read, 2 output"
    ]


def test_import_says_where_it_read_the_checkpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ctxscope import REPO`` prints how the checkpoints were read as notes (they were read,
    not skipped)."""
    repo = repo_with_checkpoint_refs(tmp_path)
    code, out, _ = run(capsys, "import", str(repo), "--db", str(tmp_path / "t.db"))
    assert code == 0
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: {repo}: 1 checkpoint(s) on refs of their own (refs/entire/checkpoints/<shard>/"
        "<id>), read with git (not the files)",
        f"note: {repo}: 1 other ref(s) under refs/entire/checkpoints/ not read (not one "
        "checkpoint's ref)",
    ]
    assert not [line for line in out.splitlines() if line.startswith("skipped")]


def test_a_session_grown_into_a_later_checkpoint_is_stored_into_its_session(
    tmp_path: Path, store: Store
) -> None:
    """Imported when Entire had kept the session's first 11 lines (5 API calls), then again
    once a later checkpoint holds all 19 (7): the same session, now with the 7 requests, not a
    second session billing the first 5 again."""
    tree = tmp_path / "tree"
    another_copy(tree, slice(0, 11))
    (first,) = import_parsed(store, parse_path(tree), "/tmp/ws", Settings())
    assert len(store.usages(first.session.id)) == 5
    shutil.copytree(TREE, tree, dirs_exist_ok=True)
    (again,) = import_parsed(store, parse_path(tree), "/tmp/ws", Settings())
    assert again.session.id == first.session.id
    assert len(store.list_sessions()) == 1
    assert len(store.usages(first.session.id)) == 7
