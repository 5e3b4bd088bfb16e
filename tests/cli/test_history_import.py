"""``ctxscope import`` without a path: every agent's folders under HOME, once, then only
what changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.config import Settings
from engine.recordings.export import export_jsonl
from engine.recordings.history import Folder, import_history
from engine.recordings.importing import import_session
from engine.store import Store
from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import CORPUS, MAROT, MOREDIP, MOREDIP_AGENT, YOAVF

CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
GEMINI = CORPUS / "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json"
SHARE_ID = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
AIDER = Path(__file__).parents[1] / "engine" / "recordings" / "fixtures" / "aider.chat.history.md"


def make_home(home: Path) -> None:
    """Claude Code's and Codex's folders as the agents lay them out, of corpus files: three
    Claude Code sessions (one with a subagent) in two projects, one Codex rollout."""
    spotter = home / ".claude" / "projects" / "-home-u-spotter"
    share = home / ".claude" / "projects" / "-home-u-share"
    (share / SHARE_ID / "subagents").mkdir(parents=True)
    spotter.mkdir(parents=True)
    shutil.copy(MAROT, spotter / "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    shutil.copy(YOAVF, spotter / "0b0c2b7c-pomodoro.jsonl")
    shutil.copy(MOREDIP, share / f"{SHARE_ID}.jsonl")
    shutil.copy(MOREDIP_AGENT, share / SHARE_ID / "subagents" / "agent-a2018e5.jsonl")
    rollouts = home / ".codex" / "sessions" / "2025" / "10" / "20"
    rollouts.mkdir(parents=True)
    shutil.copy(CODEX, rollouts / "rollout-2025-10-20T10-00-00-pomodoro.jsonl")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    make_home(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "db.sqlite"))
    monkeypatch.chdir(tmp_path)
    return home


def sessions(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    code, out, _ = run(capsys, "sessions", "--json")
    assert code == 0
    listed: list[dict[str, object]] = json.loads(out)
    return listed


def test_import_without_a_path_reads_every_agent_once_then_skips_the_unchanged(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "import", "--progress")
    assert code == 0
    # progress on stderr: files and MB done, rate, time left (the last redraw: all done)
    assert "4/4 files" in err and " MB/s" in err and " s left" in err
    assert "4 new" in out and "0 unchanged" in out
    # 4 files: 3 Claude Code sessions (one with its subagent) and 1 Codex rollout
    listed = sessions(capsys)
    assert len(listed) == 5
    assert sum(1 for s in listed if s.get("parent_session_id")) == 1

    code, out, err = run(capsys, "import", "--json")
    assert code == 0 and err == ""  # nothing but the JSON with --json
    again = json.loads(out)
    assert again["files"] == {"new": 0, "grown": 0, "rewritten": 0, "unchanged": 4}
    assert again["sessions"] == [] and again["bytes_read"] == 0
    assert len(sessions(capsys)) == 5


def test_folders_given_are_read_with_the_defaults_and_gemini_chats_are_found(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chats = home / ".gemini" / "tmp" / "9f2c" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI, chats / "session-2025-10-20T10-00.json")
    extra = tmp_path / "project"
    extra.mkdir()
    shutil.copy(YOAVF, extra / "copy.jsonl")
    (extra / "notes.md").write_text("# not an aider history\n")
    # aider keeps its history in the project: three blocks, of which only the first holds a
    # question (the second only `#### <blank>`, the third none): one session
    shutil.copy(AIDER, extra / ".aider.chat.history.md")
    code, out, _ = run(capsys, "import", "--folder", str(extra), "--json", "--jobs", "1")
    assert code == 0
    data = json.loads(out)
    agents = sorted(f["agent"] for f in data["folders"])
    assert agents == ["", "claude-code", "codex", "gemini-cli"]  # each agent by its format
    # the 4 of HOME's agents, the Gemini chat, the copy and the aider history in the folder
    assert data["files"]["new"] == 7
    formats = [s["format"] for s in data["sessions"]]
    assert formats.count("gemini-cli") == 1 and formats.count("aider") == 1
    assert data["files_skipped"] == {"not a session file": 1}


def test_a_missing_folder_or_none_at_all_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    code, _, err = run(capsys, "import", "--db", str(tmp_path / "db.sqlite"))
    assert code != 0 and "no session folders here" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "import", "--folder", str(tmp_path / "nowhere"))
    assert code != 0 and "no such folder" in err


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _content(store: Store, sid: int) -> tuple[str, list[tuple[object, ...]], list[object]]:
    """What an import stored, without row ids: the export, the usage, the compactions."""
    usages = [
        (u.round_index, u.step, u.usage.model_dump(), u.created_at) for u in store.usages(sid)
    ]
    compactions = [(c.trigger, c.stats, c.fidelity) for c in store.compactions(sid)]
    return export_jsonl(store, sid, include_archived=True), usages, compactions


@pytest.mark.parametrize(
    ("source", "cut"),
    [
        # the older Claude Code file (124 lines) cut after line 60, mid-conversation
        (YOAVF, 60),
        # the long one cut after line 900 of 1,863: before its compaction
        # (line 1,256: `grep -n compact_boundary`), so the appended part holds the
        # compaction that archives what was stored first
        (MAROT, 900),
    ],
)
def test_an_appended_file_gains_only_its_new_records(
    tmp_path: Path, source: Path, cut: int
) -> None:
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    file = folder / "s.jsonl"
    lines = _lines(source)
    file.write_bytes(b"".join(lines[:cut]))
    settings = Settings()
    store = Store.open(tmp_path / "db.sqlite")
    first = import_history(store, [Folder(folder, "claude-code")], "/ws", settings, jobs=1)
    assert first.states["new"] == 1
    sid = first.reports[0].session.id
    assert sid is not None
    before = len(store.all_messages(sid))

    with open(file, "ab") as f:
        f.write(b"".join(lines[cut:]))
    second = import_history(store, [Folder(folder, "claude-code")], "/ws", settings, jobs=1)
    assert second.states["grown"] == 1 and second.states["new"] == 0
    assert [r.session.id for r in second.reports] == [sid]  # the same session, not another
    assert len(store.list_sessions()) == 1

    # the same as a first import of the whole grown file
    fresh = Store.open(tmp_path / "fresh.sqlite")
    whole = import_session(fresh, file, "/ws", settings=settings)
    assert whole.session.id is not None
    assert _content(store, sid) == _content(fresh, whole.session.id)
    assert len(store.all_messages(sid)) > before


def test_a_rewritten_file_is_read_again_into_the_same_session(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    file = folder / "s.jsonl"
    shutil.copy(YOAVF, file)
    store = Store.open(tmp_path / "db.sqlite")
    first = import_history(store, [Folder(folder, "")], "/ws", Settings(), jobs=1)
    sid = first.reports[0].session.id
    shutil.copy(MOREDIP, file)  # another session in its place
    second = import_history(store, [Folder(folder, "")], "/ws", Settings(), jobs=1)
    assert second.states["rewritten"] == 1
    assert [r.session.id for r in second.reports] == [sid]
    fresh = Store.open(tmp_path / "fresh.sqlite")
    whole = import_session(fresh, file, "/ws")
    assert whole.session.id is not None and sid is not None
    assert _content(store, sid) == _content(fresh, whole.session.id)


def test_ctrl_c_leaves_each_finished_file_whole_and_the_next_run_goes_on(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    for n, source in enumerate((YOAVF, MOREDIP, CODEX)):
        shutil.copy(source, folder / f"{n}.jsonl")
    store = Store.open(tmp_path / "db.sqlite")
    seen = []

    def interrupt(progress: object) -> None:
        seen.append(progress)
        raise KeyboardInterrupt  # after the first file is stored

    first = import_history(store, [Folder(folder, "")], "/ws", Settings(), 1, interrupt)
    assert first.interrupted and len(seen) == 1 and len(first.reports) == 1
    assert len(store.list_sessions()) == 1
    second = import_history(store, [Folder(folder, "")], "/ws", Settings(), jobs=1)
    assert second.states == {"unchanged": 1, "new": 2}
    assert len(store.list_sessions()) == 3


def test_folder_with_a_path_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "import", str(YOAVF), "--folder", str(tmp_path), "--db", str(tmp_path / "x.db")
    )
    assert code == 2 and "without a path" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x.db").exists()


def test_a_file_is_stored_once_by_import_file_and_by_the_history_import(tmp_path: Path) -> None:
    """``import FILE`` keys a file by its bytes' SHA-256; the history import keys it by path,
    size and time. Each sees what the other stored: neither stores the same bytes twice, and a
    file that grew still goes into the same session."""
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    file = folder / "s.jsonl"
    lines = _lines(YOAVF)
    file.write_bytes(b"".join(lines[:60]))  # the older Claude Code file (124 lines) cut
    store = Store.open(tmp_path / "db.sqlite")
    settings = Settings()
    by_path = import_session(store, file, "/ws", settings=settings)
    sid = by_path.session.id
    assert sid is not None and by_path.warnings == []

    # the history import finds those bytes stored: the same session, nothing stored again
    first = import_history(store, [Folder(folder, "claude-code")], "/ws", settings, jobs=1)
    assert [r.session.id for r in first.reports] == [sid]
    assert f"already stored as session {sid}" in " ".join(first.reports[0].warnings)
    assert len(store.list_sessions()) == 1

    with open(file, "ab") as f:  # the agent goes on: the file grows
        f.write(b"".join(lines[60:]))
    grown = import_history(store, [Folder(folder, "claude-code")], "/ws", settings, jobs=1)
    assert grown.states["grown"] == 1 and [r.session.id for r in grown.reports] == [sid]
    assert len(store.list_sessions()) == 1

    # and `import FILE` of the grown file finds what the history import stored
    again = import_session(store, file, "/ws", settings=settings)
    assert again.session.id == sid
    assert f"already stored as session {sid}" in " ".join(again.warnings)
    assert len(store.list_sessions()) == 1


def test_two_copies_of_one_file_in_the_history_stay_two_sessions(tmp_path: Path) -> None:
    """Sessions the history import keeps for one path are not taken for another path's same
    bytes: each path's later growth goes into its own session."""
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(YOAVF, folder / "a.jsonl")
    shutil.copy(YOAVF, folder / "b.jsonl")
    store = Store.open(tmp_path / "db.sqlite")
    result = import_history(store, [Folder(folder, "claude-code")], "/ws", Settings(), jobs=1)
    ids = {r.session.id for r in result.reports}
    assert len(ids) == 2 and len(store.list_sessions()) == 2
