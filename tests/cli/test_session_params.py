"""Parameters belong to the session (issue 20): a session started with ``--config`` keeps its
strategy's numbers in later commands without it; ``ctxscope strategy ID NAME --set KEY=VALUE``
changes them, and the change is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_main as run


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ANTHROPIC_API_KEY", "CTXSCOPE_CONTEXT_WINDOW", "CTXSCOPE_STRATEGY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cli.db"


def config(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def start(capsys: pytest.CaptureFixture[str], db: Path, *options: str) -> str:
    """A session of one offline round (``ask --json``); its id."""
    code, out, err = run(capsys, "ask", "hello", "--db", str(db), "--json", *options)
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["type"] == "result"
    return str(result["session_id"])


def mock_user_threshold(capsys: pytest.CaptureFixture[str], db: Path, sid: str) -> int:
    """The threshold ``context --json`` says the session's mock-user strategy compares with."""
    code, out, err = run(capsys, "context", sid, "--db", str(db), "--json")
    assert code == 0, err
    strategy = json.loads(out)["strategy"]
    assert strategy["name"] == "mock-user"
    threshold: int = strategy["plan"]["threshold"]
    return threshold


def test_a_sessions_numbers_survive_a_command_without_its_config(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 002: ``if total_tokens > COMPACT_TRIGGER_THRESHOLD: trigger_compact()`` (compacts
    once the total passes the trigger); the Init profile's trigger is ``150_000``. The session
    was started with the trigger set to 12345 and keeps it, whatever a later process says."""
    cfg = config(tmp_path, "mu.toml", "[strategies.mock-user]\ntrigger_tokens = 12345\n")
    sid = start(capsys, db, "--config", cfg, "--strategy", "mock-user")

    assert mock_user_threshold(capsys, db, sid) == 12345  # no --config: still 12345
    other = config(tmp_path, "other.toml", "[strategies.mock-user]\ntrigger_tokens = 99999\n")
    code, out, _ = run(capsys, "context", sid, "--db", str(db), "--json", "--config", other)
    assert json.loads(out)["strategy"]["plan"]["threshold"] == 12345  # nor another config

    code, out, err = run(capsys, "show", sid, "--db", str(db), "--json")
    assert code == 0, err
    params = json.loads(out)["session"]["params"]
    assert params["context_window"] == 200_000
    assert params["numbers"]["trigger_tokens"] == 12345
    assert params["numbers"]["profile"] == "init"
    code, out, _ = run(capsys, "show", sid, "--db", str(db))
    assert "plans with window 200,000 · profile init · trigger_tokens 12,345" in out

    # a later round without the config plans with the session's numbers, and so does a new
    # session without it: the Init profile's 150 000
    code, _, err = run(capsys, "ask", "again", "--session", sid, "--db", str(db), "--json")
    assert code == 0, err
    assert mock_user_threshold(capsys, db, sid) == 12345
    fresh = start(capsys, db, "--strategy", "mock-user")
    assert mock_user_threshold(capsys, db, fresh) == 150_000


def test_the_window_a_session_was_started_in_is_its_own(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 000 (A6): ``threshold = 0.8 * config.context_window`` — 0.8 of a 50 000 window
    is 40 000, the threshold the session keeps after its config is gone."""
    cfg = config(tmp_path, "small.toml", "context_window = 50000\n")
    sid = start(capsys, db, "--config", cfg)
    code, out, err = run(capsys, "context", sid, "--db", str(db), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["context_window"], data["threshold"]) == (50_000, 40_000)

    # replay plays the session in its own window unless --window says otherwise
    code, out, err = run(capsys, "replay", sid, "--db", str(db), "--json", "--strategy", "layered")
    assert code == 0, err
    assert json.loads(out)["window"] == 50_000
    code, out, err = run(
        capsys, "replay", sid, "--db", str(db), "--json", "--strategy", "layered",
        "--window", "80000",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["window"] == 80_000


def test_setting_a_number_is_recorded_in_the_switch_history(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path, "mu.toml", "[strategies.mock-user]\ntrigger_tokens = 12345\n")
    sid = start(capsys, db, "--config", cfg, "--strategy", "mock-user")

    code, out, err = run(
        capsys, "strategy", sid, "mock-user", "--set", "trigger_tokens=20000",
        "--db", str(db), "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["strategy"] == "mock-user"
    assert data["params"]["numbers"]["trigger_tokens"] == 20000
    [switch] = data["switches"]
    assert (switch["previous"], switch["strategy"]) == ("mock-user", "mock-user")
    assert switch["previous_params"]["numbers"]["trigger_tokens"] == 12345
    assert switch["params"]["numbers"]["trigger_tokens"] == 20000
    assert mock_user_threshold(capsys, db, sid) == 20000

    code, out, _ = run(capsys, "show", sid, "--db", str(db), "--json")
    shown = json.loads(out)
    assert shown["strategy_switches"] == data["switches"]
    assert shown["session"]["params"] == data["params"]

    # the same numbers again: nothing to record
    code, out, _ = run(
        capsys, "strategy", sid, "--set", "trigger_tokens=20000", "--db", str(db), "--json"
    )
    assert code == 0 and len(json.loads(out)["switches"]) == 1

    code, out, _ = run(capsys, "strategy", sid, "--db", str(db))
    assert out.startswith(f"session {sid} uses mock-user: window 200,000")
    assert "trigger_tokens 20,000" in out
    assert "\n(numbers changed at " in out


def test_a_switch_takes_the_new_strategys_numbers_from_the_config_in_the_sessions_window(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 003: ``chatHistory.inMemoryMaxMessages`` (60 by default) set to 7 by the config
    file given to the switch; the session's 50 000-token window stays."""
    sid = start(capsys, db, "--config", config(tmp_path, "w.toml", "context_window = 50000\n"))
    cfg = config(tmp_path, "mw.toml", "[strategies.message-window]\nmax_messages = 7\n")
    code, out, err = run(
        capsys, "strategy", sid, "message-window", "--config", cfg, "--db", str(db), "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["params"]["context_window"] == 50_000
    assert data["params"]["numbers"]["max_messages"] == 7
    assert data["params"]["numbers"]["keep_last"] == 30  # 003: compactKeepLastMessages 30
    [switch] = data["switches"]
    assert (switch["previous"], switch["strategy"]) == ("layered", "message-window")
    assert switch["previous_params"]["numbers"]["keep_rounds"] == 10

    code, out, _ = run(capsys, "strategy", sid, "--db", str(db))
    assert out.startswith(f"session {sid} uses message-window: window 50,000 · max_messages 7")
    assert "\n(switched from layered at " in out
    code, out, err = run(capsys, "strategy", sid, "--window", "64000", "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out)["params"]["context_window"] == 64_000
    code, out, _ = run(capsys, "context", sid, "--db", str(db), "--json")
    assert json.loads(out)["context_window"] == 64_000


@pytest.mark.parametrize(
    ("assignment", "said"),
    [
        ("no_such=3", "mock-user has no number 'no_such'"),
        ("trigger_tokens=-5", "mock-user.trigger_tokens=-5"),
        ("trigger_tokens=many", "mock-user.trigger_tokens='many'"),
        ("profile=bogus", "mock-user.profile='bogus'"),
        ("trigger_tokens", "expected KEY=VALUE"),
        ("masking.keep_last_observations=3", "the session's strategy would be mock-user"),
    ],
)
def test_a_bad_number_is_one_line_and_exit_2(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], assignment: str, said: str
) -> None:
    sid = start(capsys, db, "--strategy", "mock-user")
    code, out, err = run(capsys, "strategy", sid, "mock-user", "--set", assignment, "--db", str(db))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("ctxscope: ") and said in err
    code, out, _ = run(capsys, "strategy", sid, "--db", str(db), "--json")
    assert json.loads(out)["switches"] == []  # nothing was changed
