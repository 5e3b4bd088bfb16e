"""``watch`` is never silent: what it cannot read (yet) is said, in the import report's words,
by the follower (:attr:`Follower.notices`) and as a ``--jsonl`` ``notice`` event; a file
replaced by another recording gives the session that recording's title and workspace.

Files are cut from the corpus (``tests/data/corpus_facts/README.md``): marot's lines 1-4 are a
file-history-snapshot and three hook ``progress`` records, its first user record is line 5
("Implement spotter-gqc"), its cwd ``/home/USER/projects/spotter-worktrees/spotter-gqc``; the
yoavf session's first input starts "Build a simple Pomodoro timer web app", its cwd is
``/Users/yoavfarhi/dev/pomodoro/claude``; moredip (P) is 12 lines written by 2.1.14.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli.watch import notice_json, update_json
from engine.recordings import file_tail
from engine.recordings.base import ImportError_
from engine.recordings.follow import Follower
from engine.recordings.importing import parse_sessions
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import MAROT, MOREDIP, YOAVF
from tests.engine.recordings.test_watch import _lines, _watch


def marot_lines() -> list[bytes]:
    return MAROT.read_bytes().split(b"\n")[:-1]


def test_a_file_with_no_conversation_yet_is_said_once_in_the_refusals_words(
    tmp_path: Path,
) -> None:
    lines = marot_lines()
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:4]) + b"\n")
    with pytest.raises(ImportError_) as refused:
        parse_sessions(f)
    (problem,) = refused.value.problems
    assert problem == (
        "s.jsonl holds no conversation (no user or assistant record): 4 lines, 3 progress, "
        "1 file-history-snapshot"
    )
    follower = Follower(f, Settings(), Store.open(tmp_path / "w.db"))
    assert follower.poll() is None
    said = problem.replace("holds no conversation", "holds no conversation yet")
    assert follower.take_notices() == [f"{f}: {said}"]
    assert follower.poll() is None and follower.take_notices() == []  # said once
    with open(f, "ab") as out:
        out.write(lines[4] + b"\n")
    assert follower.poll() is not None and follower.session is not None


def test_records_of_unknown_kinds_are_named_as_the_import_report_names_them(
    tmp_path: Path,
) -> None:
    """P with two records of a kind this version does not know after its input (line 3)."""
    lines = MOREDIP.read_text(encoding="utf-8").splitlines()
    unknown = [json.dumps({"type": "fancy-new-kind", "sessionId": "s", "n": n}) for n in (1, 2)]
    f = tmp_path / "p.jsonl"
    f.write_text("\n".join([*lines[:3], *unknown, *lines[3:]]) + "\n")
    (parsed,) = parse_sessions(f)
    report = parsed.not_read_sentences()
    assert report == [
        "2 records of kinds this version of ctxscope does not read: fancy-new-kind 2 "
        "(Claude Code 2.1.14)"
    ]
    follower = Follower(f, Settings(), Store.open(tmp_path / "w.db"))
    assert follower.poll() is not None
    assert follower.take_notices() == [f"{f}: {report[0]}"]
    with open(f, "a") as out:  # one more of the same kind: said once is enough (issue 38:
        # a real session repeated the same "attachment" notice 35 times)
        out.write(json.dumps({"type": "fancy-new-kind", "sessionId": "s", "n": 3}) + "\n")
    follower.poll()
    assert follower.take_notices() == []
    with open(f, "a") as out:  # a kind not said yet: the report's sentence again, whole
        out.write(json.dumps({"type": "other-new-kind", "sessionId": "s"}) + "\n")
    follower.poll()
    assert follower.take_notices() == [
        f"{f}: 4 records of kinds this version of ctxscope does not read: fancy-new-kind 3, "
        "other-new-kind 1 (Claude Code 2.1.14)"
    ]


def test_a_line_over_the_cap_is_dropped_as_it_comes_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap lowered to 10,000 bytes (P's longest line is 9,644): a 50,000-byte line written
    over two looks is never held whole, and is named by its line; the lines after it are
    read."""
    monkeypatch.setattr(file_tail, "MAX_LINE_CHARS", 10_000)
    lines = MOREDIP.read_bytes().split(b"\n")[:-1]
    f = tmp_path / "p.jsonl"
    f.write_bytes(b"\n".join(lines[:3]) + b"\n" + b"x" * 25_000)
    follower = Follower(f, Settings())
    follower.poll()
    assert follower.tail.partial == b"" and follower.tail.skipping
    with open(f, "ab") as out:
        out.write(b"y" * 25_000 + b"\n" + b"\n".join(lines[3:]) + b"\n")
    follower.poll()
    assert follower.reader.not_read.lines == {"line over 32 MB": [4]}
    assert follower.parsed is not None
    assert [i.kind for i in follower.parsed.items] == ["user", "assistant", "result", "assistant"]


def test_a_replaced_file_that_is_no_longer_readable_is_said(tmp_path: Path) -> None:
    lines = marot_lines()
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:10]) + b"\n")
    follower = Follower(f, Settings())
    assert follower.poll() is not None
    f.unlink()
    os.mkfifo(f)
    assert follower.poll() is None
    assert follower.take_notices() == [f"{f}: not a regular file; not opened"]


def test_a_file_rewritten_with_another_recording_takes_its_title_and_workspace(
    tmp_path: Path,
) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(marot_lines()[:400]) + b"\n")
    store = Store.open(tmp_path / "w.db")
    follower = Follower(f, Settings(), store)
    first = follower.poll()
    assert first is not None and first.session_id is not None
    before = store.get_session(first.session_id)
    assert before.title == "watch: Implement spotter-gqc"
    assert before.workspace == "/home/USER/projects/spotter-worktrees/spotter-gqc"
    other = tmp_path / "new"
    other.write_bytes(YOAVF.read_bytes())
    os.replace(other, f)
    update = follower.poll()
    assert update is not None and update.reset and update.session_id == first.session_id
    after = store.get_session(first.session_id)
    assert after.title.startswith("watch: Build a simple Pomodoro timer web app")
    assert after.workspace == "/Users/yoavfarhi/dev/pomodoro/claude"


def test_jsonl_says_what_it_cannot_read_yet_then_updates(tmp_path: Path) -> None:
    lines = marot_lines()
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:4]) + b"\n")
    proc = _watch(f, tmp_path / "w.db")
    out = _lines(proc)
    try:
        notice = json.loads(out.get(timeout=60))
        assert notice == {
            "event": "notice",
            "session": None,
            "path": str(f),
            "message": f"{f}: s.jsonl holds no conversation yet (no user or assistant "
            "record): 4 lines, 3 progress, 1 file-history-snapshot",
        }
        with open(f, "ab") as w:
            w.write(b"\n".join(lines[4:10]) + b"\n")
        update = json.loads(out.get(timeout=60))
        assert update["event"] == "update" and update["records"] == 10
    finally:
        proc.kill()
        proc.wait()


def test_watch_on_screen_says_what_the_file_held_or_what_the_path_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--jsonl`` (the workbench) a file with no conversation yet stops with the
    notice's words; a FIFO is named as such."""
    from cli.main import main

    f = tmp_path / "hooks.jsonl"
    f.write_bytes(b"\n".join(marot_lines()[:4]) + b"\n")
    assert main(["watch", str(f), "--db", str(tmp_path / "w.db")]) == 1
    err = capsys.readouterr().err
    assert (
        f"{f}: hooks.jsonl holds no conversation yet (no user or assistant record): 4 lines, "
        "3 progress, 1 file-history-snapshot; try again when the agent started"
    ) in err
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert main(["watch", str(fifo), "--jsonl", "--db", str(tmp_path / "w.db")]) == 1
    assert f"cannot watch {fifo}: a FIFO (named pipe)" in capsys.readouterr().err


def test_a_notice_line_carries_the_state_of_the_last_update(tmp_path: Path) -> None:
    """marot's first 40 lines, then a record of a kind this version does not read: the
    ``notice`` line says the same context, countdown and warning as the update before it
    (nothing of the conversation changed); before any update a notice carries no state."""
    lines = marot_lines()
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:4]) + b"\n")
    follower = Follower(f, Settings(), Store.open(tmp_path / "w.db"))
    assert follower.poll() is None
    (early,) = follower.take_notices()
    assert "warning" not in notice_json(early, f, follower)
    with open(f, "ab") as out:
        out.write(b"\n".join(lines[4:40]) + b"\n")
    update = follower.poll()
    assert update is not None
    state = update_json(update, f, "update")
    with open(f, "ab") as out:
        out.write(b'{"type": "fancy-new-kind", "uuid": "x1", "sessionId": "s"}\n')
    follower.poll()
    (said,) = follower.take_notices()
    line = notice_json(said, f, follower)
    assert line["event"] == "notice" and "fancy-new-kind 1" in line["message"]
    keys = ("context_tokens", "until_compact", "compact_at", "warning", "compactions")
    assert {k: line[k] for k in keys} == {k: state[k] for k in keys}
    assert line["warning"] is False


def test_a_format_watch_does_not_follow_is_said_and_an_unclaimed_head_waits(
    tmp_path: Path,
) -> None:
    """JSON lines of Anthropic messages (tests/data/recorded_session.jsonl) are read by
    ``import``, not followed: said once. A file whose first records no agent claims (two
    records of an unknown kind) waits: said, then followed once marot's records come."""
    messages = tmp_path / "messages.jsonl"
    messages.write_bytes((MAROT.parents[1] / "recorded_session.jsonl").read_bytes())
    follower = Follower(messages, Settings())
    assert follower.poll() is None
    assert follower.take_notices() == [
        f"{messages}: is a recording of Anthropic messages, which watch does not follow (it "
        "follows Codex, Copilot CLI, Claude Code); import it instead"
    ]
    unknown = [json.dumps({"type": "mystery", "n": n}).encode() for n in range(2)]
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(unknown) + b"\n")
    follower = Follower(f, Settings())
    assert follower.poll() is None
    assert follower.take_notices() == [
        f"{f}: holds no record of a format watch follows yet (2 records read; watch follows "
        "Codex, Copilot CLI, Claude Code)"
    ]
    with open(f, "ab") as out:
        out.write(b"\n".join(marot_lines()[:60]) + b"\n")
    update = follower.poll()
    assert update is not None and follower.agent is not None
    assert follower.agent.name == "claude-code"
