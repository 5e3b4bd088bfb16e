"""Issue 30: a recorded session is read-only. Compacting, undoing, pinning, asking or switching
strategy on it makes a fork ("fork of #1 at round 8"), reported on stderr and in ``--json``,
and the recording's ``show --json`` stays byte for byte as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import run_redirected as run

CORPUS = Path(__file__).parent.parent / "data" / "corpus"
MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
"""Claude Code, Opus 4.6, 8 rounds (two of them inputs typed while the agent worked), one
auto compaction recorded."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The corpus session imported once; the recording's ``show --json`` as it was then."""
    saved = os.environ.pop("ANTHROPIC_API_KEY", None)
    db = tmp_path_factory.mktemp("fork") / "ctxscope.db"
    code, out, _ = run("import", str(MAROT), "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["session_id"] == 1
    code, shown, _ = run("show", "1", "--db", str(db), "--json")
    assert code == 0
    yield db, shown
    if saved is not None:
        os.environ["ANTHROPIC_API_KEY"] = saved


def unchanged(db: Path, before: str) -> None:
    code, after, _ = run("show", "1", "--db", str(db), "--json")
    assert code == 0 and after == before


def forked(err: str, data: dict[str, object] | None = None) -> int:
    """The fork's id, as stderr says it (and ``--json`` when given)."""
    line = next(ln for ln in err.splitlines() if "fork of #1 at round 8: session" in ln)
    fork_id = int(line.split("session ")[1].split()[0])
    assert fork_id > 1
    if data is not None:
        assert data["fork"] == {
            "session_id": fork_id,
            "of": 1,
            "source": "fork of #1 at round 8",
        }
    return fork_id


def test_uncompact_forks(recorded: tuple[Path, str]) -> None:
    db, before = recorded
    code, out, err = run("uncompact", "1", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    fork = forked(err, data)
    unchanged(db, before)
    # the recorded compaction archived 231 messages (229 records before it and the two inputs
    # typed while the agent worked, delivered before it): 115 + 231
    assert data["history_messages"] == len(json.loads(before)["history"]) + 231
    code, out, _ = run("show", str(fork), "--db", str(db), "--json")
    shown = json.loads(out)
    assert shown["session"]["source"] == "fork of #1 at round 8"
    assert shown["session"]["title"].startswith("fork of #1 at round 8: ")
    assert shown["compactions"][0]["undone_at"] is not None


def test_compact_forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Imported keeping 2 rounds (the session stores its numbers then): with the default 10
    marot's 8 rounds hold nothing to compact, and that makes no fork (issue 39)."""
    db = tmp_path / "ctxscope.db"
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "2")
    assert run("import", str(MAROT), "--db", str(db))[0] == 0
    monkeypatch.delenv("CTXSCOPE_KEEP_ROUNDS")
    before = run("show", "1", "--db", str(db), "--json")[1]
    code, out, err = run("compact", "1", "--db", str(db), "--json")
    assert code == 0
    fork = forked(err, json.loads(out))
    assert json.loads(out)["compaction"]["session_id"] == fork
    assert json.loads(out)["compaction"]["outcome"] in ("success", "fallback")
    unchanged(db, before)


def test_compact_dry_run_does_not_fork(recorded: tuple[Path, str]) -> None:
    db, before = recorded
    sessions = len(json.loads(run("sessions", "--db", str(db), "--json")[1]))
    code, _, err = run("compact", "1", "--dry-run", "--db", str(db))
    assert code == 0 and "fork" not in err
    assert len(json.loads(run("sessions", "--db", str(db), "--json")[1])) == sessions
    unchanged(db, before)


def test_pin_forks_and_pins_the_forks_copy(recorded: tuple[Path, str]) -> None:
    db, before = recorded
    last = json.loads(before)["history"][-1]["id"]
    code, out, err = run("pin", "1", str(last), "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    fork = forked(err, data)
    unchanged(db, before)
    assert data["session_id"] == fork and data["changed"] == 1
    shown = json.loads(run("show", str(fork), "--db", str(db), "--json")[1])
    assert shown["history"][-1]["pinned"] is True
    assert shown["history"][-1]["content"] == json.loads(before)["history"][-1]["content"]


def test_ask_forks(recorded: tuple[Path, str], tmp_path: Path) -> None:
    db, before = recorded
    # without a workspace a recording's fork would have none (issue 29): refused, no fork made
    code, _, err = run("ask", "ls", "--session", "1", "--db", str(db))
    assert code == 2 and "fork" not in err
    unchanged(db, before)
    code, out, err = run(
        "ask", "ls", "--session", "1", "--workspace", str(tmp_path), "--db", str(db), "--json"
    )
    assert code == 0
    result = json.loads(out.splitlines()[-1])
    fork = forked(err, result)
    assert result["session_id"] == fork and result["round_index"] == 9
    unchanged(db, before)


def test_strategy_forks(recorded: tuple[Path, str]) -> None:
    db, before = recorded
    code, out, err = run("strategy", "1", "masking", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    fork = forked(err, data)
    assert data["session_id"] == fork and data["strategy"] == "masking"
    unchanged(db, before)
    # only looking at the numbers changes nothing and forks nothing
    code, _, err = run("strategy", "1", "--db", str(db))
    assert code == 0 and "fork" not in err
    unchanged(db, before)


RESUMED = Path(__file__).parent.parent / "data" / "claude_code" / "resumed_session.jsonl"
"""Claude Code, 4 rounds: fewer than the 10 rounds layered keeps, so nothing to compact."""


def test_a_change_that_does_nothing_makes_no_fork(tmp_path: Path) -> None:
    """Issue 39: `compact` on a recording ending in "nothing to compact", and a `strategy
    --set` the numbers refuse, each left a fork behind."""
    db = str(tmp_path / "ctxscope.db")
    assert run("import", str(RESUMED), "--db", db)[0] == 0
    sessions = json.loads(run("sessions", "--db", db, "--json")[1])
    code, out, err = run("compact", "1", "--db", db)
    assert code == 0 and "fork" not in err
    assert out.strip() == (
        "nothing compacted: nothing to compact: history holds no rounds beyond the last 10"
    )
    code, _, err = run("strategy", "1", "--set", "layered.keep_rounds=0", "--db", db)
    assert code == 2 and "fork" not in err
    assert "keep_rounds=0: Input should be greater than or equal to 1" in err
    assert json.loads(run("sessions", "--db", db, "--json")[1]) == sessions
