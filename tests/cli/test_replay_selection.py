"""``ctxscope replay --since … [--project …]`` (issue 33, what-ifs at scale): each strategy's
totals are the sums of the same sessions replayed one by one with ``replay ID``, the
as-recorded totals the sums of their as-recorded rows; ``--project`` narrows the selection;
a session ctxscope ran itself (no as-recorded row to compare with) is skipped and counted."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from cli.replay_selection import add_rows, cell
from engine.compaction.strategies import STRATEGIES
from tests.cli.test_interrupt import MAROT, NOTHING_STORED, ROOT, _group_ends
from tests.engine.recordings.corpus import MOREDIP, YOAVF

SUMMED = ("steps", "compactions", "total_input", "cache_read", "cache_write")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, dict[str, int]]:
    """Two imported recordings and one offline session; their ids by name."""
    for name in ("ANTHROPIC_API_KEY", "CTXSCOPE_CONTEXT_WINDOW", "CTXSCOPE_STRATEGY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "history.db"
    ids = {
        name: run_json(capsys, "import", str(path), "--db", str(db))["session_id"]
        for name, path in (("yoavf", YOAVF), ("moredip", MOREDIP))
    }
    code, out, err = run(capsys, "ask", "hello", "--db", str(db), "--json")
    assert code == 0, err
    ids["native"] = json.loads(out.strip().splitlines()[-1])["session_id"]
    return db, ids


def test_totals_are_the_sums_of_the_single_session_replays(
    history: tuple[Path, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, ids = history
    many = run_json(
        capsys, "replay", "--since", "2000-01-01", "--window", "8000", "--jobs", "2",
        "--db", str(db),
    )  # fmt: skip
    # the native session has no as-recorded row: skipped, counted, not in any total
    assert many["selection"]["sessions"] == 2
    assert many["selection"]["skipped"] == {"not recorded": 1}
    assert [s["session_id"] for s in many["sessions"]] == [ids["yoavf"], ids["moredip"]]
    singles = [
        run_json(capsys, "replay", str(ids[name]), "--window", "8000", "--jobs", "1",
                 "--db", str(db))
        for name in ("yoavf", "moredip")
    ]  # fmt: skip
    totals = {t["strategy"]: t for t in many["totals"]}
    assert list(totals) == ["as-recorded", *STRATEGIES]
    for name, total in totals.items():
        rows = [next(r for r in one["strategies"] if r["strategy"] == name) for one in singles]
        assert total["sessions"] == 2
        for key in SUMMED:
            assert total[key] == sum(r[key] for r in rows), (name, key)
        assert total["cost"] == pytest.approx(sum(r["cost"] for r in rows), abs=1e-4)
    # each session's rows are the single replay's rows
    for one, listed in zip(singles, many["sessions"], strict=True):
        assert listed["strategies"] == one["strategies"]
    # the as-recorded row is what the agents sent, not the replay window's
    assert totals["as-recorded"]["total_input"] > totals["layered"]["total_input"]


def test_project_narrows_the_selection(
    history: tuple[Path, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, ids = history
    # the recordings' folders: /Users/yoavfarhi/dev/pomodoro/claude and
    # /Users/pete/git/moredip/session-share (their "cwd" fields)
    share = "/Users/pete/git/moredip/session-share"
    for project, name in (("claude", "yoavf"), (share, "moredip")):
        data = run_json(
            capsys, "replay", "--since", "2000-01-01", "--project", project,
            "--strategy", "layered", "--window", "8000", "--jobs", "1", "--db", str(db),
        )  # fmt: skip
        assert [s["session_id"] for s in data["sessions"]] == [ids[name]]
        assert data["selection"] == {
            "since": "2000-01-01 00:00:00+00:00",
            "project": project,
            "sessions": 1,
            "skipped": {},
        }
        assert [t["strategy"] for t in data["totals"]] == ["as-recorded", "layered"]
    nothing = run_json(capsys, "replay", "--project", "elsewhere", "--db", str(db))
    assert nothing["sessions"] == [] and nothing["totals"] == []


def test_the_table_and_the_selection_errors(
    history: tuple[Path, dict[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, ids = history
    code, out, err = run(
        capsys, "replay", "--since", "2000-01-01", "--strategy", "masking", "--window", "8000",
        "--jobs", "1", "--db", str(db),
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "2 sessions replayed in a window of 8,000 tokens (skipped: 1 not recorded)"
    assert lines[1].split() == ["strategy", "sessions", *SUMMED, "cost"]
    assert [line.split()[0] for line in lines[2:4]] == ["as-recorded", "masking"]
    assert err == ""  # progress only on a terminal
    code, out, err = run(capsys, "replay", "--db", str(db))
    assert code == 2 and "--since/--project" in err
    code, out, err = run(capsys, "replay", str(ids["yoavf"]), "--since", "7d", "--db", str(db))
    assert code == 2 and "without an ID" in err
    code, out, err = run(capsys, "replay", "--since", "yesterday", "--db", str(db))
    assert code == 2 and "--since must be" in err
    code, out, err = run(
        capsys, "replay", "--since", "7d", "--csv", str(db.with_suffix(".csv")), "--db", str(db)
    )
    assert code == 2 and "give a session ID" in err


def test_a_total_without_a_price_is_none() -> None:
    """The spec: one session whose model has no price makes its strategy's cost unknown."""
    rows = [
        {"steps": 3, "compactions": 1, "total_input": 10, "cache_read": 4, "cache_write": 2,
         "cost": 0.25},
        {"steps": 2, "compactions": 0, "total_input": 7, "cache_read": 0, "cache_write": 7,
         "cost": None},
    ]  # fmt: skip
    assert add_rows(rows) == {"sessions": 2, "steps": 5, "compactions": 1, "total_input": 17,
                              "cache_read": 4, "cache_write": 9, "cost": None}  # fmt: skip
    assert add_rows(rows[:1])["cost"] == 0.25
    assert cell({"cost": None}, "cost") == "–"


def test_ctrl_c_stops_the_selection_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal (stderr a pty here) each strategy says when it is done with a session;
    Ctrl+C after the first such line ends with the one line, no table, no process left."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    db = tmp_path / "r.db"
    for path in (MAROT, YOAVF):
        assert main(["import", str(path), "--db", str(db), "--workspace", str(tmp_path)]) == 0
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    primary, secondary = pty.openpty()
    job = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "replay", "--since", "2000-01-01", "--window",
         "32000", "--jobs", "2", "--db", str(db)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=secondary, text=True,
        start_new_session=True,
    )  # fmt: skip
    os.close(secondary)
    err = b""
    deadline = time.monotonic() + 120
    while b" done" not in err:  # the first strategy of the first session is done
        assert job.poll() is None and time.monotonic() < deadline, err
        err += os.read(primary, 4096)
    os.killpg(job.pid, signal.SIGINT)
    out, _ = job.communicate(timeout=60)
    while True:
        try:
            more = os.read(primary, 4096)
        except OSError:  # the terminal's other end closed: the command has ended
            break
        if not more:
            break
        err += more
    os.close(primary)
    lines = err.decode().replace("\r\n", "\n").splitlines()
    assert job.returncode == 130, lines
    assert lines[0].startswith("… session 1 of 2 (id 1): "), lines
    assert lines[-1] == NOTHING_STORED, lines
    assert [line for line in lines[:-1] if not line.startswith("… ")] == [], lines
    assert out == ""  # no table of half the sessions
    assert _group_ends(job.pid) == []
