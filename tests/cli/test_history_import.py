"""``ctxscope import`` without a path: every agent's folders under HOME, once, then only
what changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.recordings.export import export_jsonl
from engine.recordings.history import Folder, import_history
from engine.recordings.importing import import_session
from engine.settings.config import Settings
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
    # 4 files: 3 Claude Code sessions (one with its subagent) and 1 Codex rollout; the
    # sessions stored counted as `sessions` and `report` count them (it said "imported 4
    # sessions (1 subagents)" beside the 5 they list, and "1 subagents")
    assert "imported 5 sessions (1 subagent) from 4 files: 4 new" in out
    listed = sessions(capsys)
    assert len(listed) == 5
    assert sum(1 for s in listed if s.get("parent_session_id")) == 1
    code, out, _ = run(capsys, "report")
    assert code == 0 and out.startswith("5 sessions (1 subagent) · ")

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
    """``import FILE`` keys a file by its bytes' SHA-256 and remembers its path, size and time
    as the history import does. Each sees what the other stored: neither stores the same bytes
    twice, and a file that grew still goes into the same session."""
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

    # the history import knows the file as `import FILE` left it: unchanged, nothing stored
    first = import_history(store, [Folder(folder, "claude-code")], "/ws", settings, jobs=1)
    assert first.states["unchanged"] == 1 and first.reports == []
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


STORED_COUNTS = """
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
out = {}
for sid, source, parent in con.execute(
        "SELECT id, source, parent_session_id FROM session_row ORDER BY id"):
    key = source or f"child of {parent}"
    out.setdefault(key, []).append({
        "messages": con.execute(
            "SELECT role, tokens FROM message_row WHERE session_id = ? ORDER BY id", (sid,)
        ).fetchall(),
        "observations": con.execute(
            "SELECT tokens_full, tokens_compressed FROM observation_row WHERE session_id = ? "
            "ORDER BY id", (sid,)).fetchall(),
        "summaries": con.execute(
            "SELECT tokens FROM summary_row WHERE session_id = ? ORDER BY id", (sid,)
        ).fetchall(),
    })
print(json.dumps(out, sort_keys=True))
"""
"""Every stored count of a database, per session by its source (the file's digest; a
subagent by its parent's place), in a form two imports can be compared by."""


def test_counts_made_in_the_workers_are_the_writers_own(tmp_path: Path) -> None:
    """Issue 44: with a pool, the workers count every text the writer stores and the writer
    takes their counts; it does not load the tokenizer at all. The stored counts (every
    message, observation and summary of the four files and the subagent) are the ones an
    import in one process, which counts them itself, stores; and each session's source is
    the SHA-256 of its file's bytes, worked out here with hashlib over the whole file."""
    import hashlib
    import subprocess
    import sys

    home = tmp_path / "home"
    make_home(home)
    folders = [
        Folder(home / ".claude" / "projects", "claude-code"),
        Folder(home / ".codex" / "sessions", "codex"),
    ]
    alone = tmp_path / "alone.sqlite"
    store = Store.open(alone)
    import_history(store, folders, "/ws", Settings(), jobs=1)
    store.close()
    pooled = tmp_path / "pooled.sqlite"
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from engine.settings.config import Settings\n"
        "from engine.messages import tokens\n"
        "from engine.recordings.history import Folder, import_history\n"
        "from engine.store import Store\n"
        "def main():\n"
        "    store = Store.open(Path(sys.argv[1]))\n"
        "    folders = [Folder(Path(p), a) for p, a in json.loads(sys.argv[2])]\n"
        "    done = import_history(store, folders, '/ws', Settings(), jobs=2)\n"
        "    store.close()\n"
        "    print(json.dumps({'files': sum(done.states.values()),\n"
        "                      'tokenizer': tokens._encoding is not None}))\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    root = Path(__file__).resolve().parents[2]
    given = json.dumps([[str(f.path), f.agent] for f in folders])
    done = subprocess.run(
        [sys.executable, "-c", script, str(pooled), given],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"files": 4, "tokenizer": False}

    def counts(db: Path) -> dict[str, object]:
        read = subprocess.run(
            [sys.executable, "-c", STORED_COUNTS, str(db)],
            capture_output=True,
            text=True,
            check=True,
        )
        found: dict[str, object] = json.loads(read.stdout)
        return found

    by_alone, by_pool = counts(alone), counts(pooled)
    files = [p for f in folders for p in f.path.rglob("*.jsonl") if "subagents" not in p.parts]
    digests = {hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    assert {k.split("#")[0] for k in by_pool if k.startswith("import:")} == {
        f"import:sha256:{d}" for d in digests
    }
    assert {k: v for k, v in by_pool.items() if k.startswith("import:")} == {
        k: v for k, v in by_alone.items() if k.startswith("import:")
    }

    def children(found: dict[str, object]) -> list[str]:  # their parents' ids differ
        return sorted(json.dumps(v) for k, v in found.items() if not k.startswith("import:"))

    assert children(by_pool) == children(by_alone) and len(children(by_pool)) == 1
    messages = sum(len(s["messages"]) for v in by_pool.values() for s in v)  # type: ignore[index]
    assert messages > 300  # marot alone stores 344


def test_one_of_a_kind_is_counted_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus' moredip session (12 lines: one user prompt, so one round; one ``tool_use``
    block, the Task that spawned its subagent; two assistant message ids, each over two
    records: two usage records, and 4 messages with the prompt and the Task's result; no
    compaction) and its subagent: ``import`` and ``show`` say "1 round", "1 observation",
    not "1 rounds" (and "0 compactions", "2 usage records")."""
    folder = tmp_path / "project"
    (folder / SHARE_ID / "subagents").mkdir(parents=True)
    shutil.copy(MOREDIP, folder / f"{SHARE_ID}.jsonl")
    shutil.copy(MOREDIP_AGENT, folder / SHARE_ID / "subagents" / "agent-a2018e5.jsonl")
    db = str(tmp_path / "s.db")
    code, out, err = run(capsys, "import", str(folder / f"{SHARE_ID}.jsonl"), "--db", db)
    assert code == 0, err
    assert (
        "as session 1: 1 round, 4 messages, 1 observation, 2 usage records, 0 compactions;" in out
    )
    assert "  subagent a2018e5 as session 2: 1 round, " in out
    code, out, err = run(capsys, "show", "1", "--db", db)
    assert code == 0, err
    assert "1 round (0 archived), 4 messages in history, 0 compactions" in out.splitlines()


def test_what_was_not_read_reads_as_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus' Claude Code 2.1.284 session: its last call (line 57) has no result (the
    commit that saved the file cut it), and lines 25, 35 and 54 are byte for byte line 15 (an
    ``atis-latch`` record, a kind ctxscope does not read), found with a set of the lines seen.
    The import says "1 tool call had no recorded result" (it said "1 tool calls") and
    "repeats an earlier line (lines 25, 35, 54)" (it said "repeats an earlier line 3 (…)",
    the count read as part of the reason)."""
    name = "KuzniAI__opencode-entire-plugin__entire__K0_01M3Q4WPN518QH04367X86D6K0_0_full.jsonl"
    code, out, err = run(capsys, "import", str(CORPUS / name), "--db", str(tmp_path / "s.db"))
    assert code == 0, err
    assert "; 1 tool call had no recorded result, each paired with an error result" in out
    assert "  not read: 3 lines not read: repeats an earlier line (lines 25, 35, 54)\n" in out
