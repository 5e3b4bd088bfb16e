"""A recorded session stores the agent it comes from and its version (schema 16), at import
and at watch; sessions stored before get them once, by the old guess; a session stored by
``watch`` has the model an assistant record names, so it is priced as its import is."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.figures.prices import price_for
from engine.recordings.agents import context_rules_for_session
from engine.recordings.follow import Follower
from engine.recordings.importing import ParsedFiles, import_parsed, parse_sessions
from engine.settings.config import Settings
from engine.store import Store
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION
from tests.engine.recordings.helpers import CORPUS

MAROT = CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CODEX = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"


def imported(store: Store, path: Path, recorded_cwd: bool = False) -> int:
    (parsed,) = parse_sessions(path)
    files = ParsedFiles([(path, parsed)])
    (report,) = import_parsed(store, files, "/ws", Settings(), recorded_cwd=recorded_cwd)
    assert report.session.id is not None
    return report.session.id


def test_import_stores_the_agent_and_its_version(tmp_path: Path) -> None:
    """The corpus README: marot is Claude Code 2.1.39; the rollout codex_cli_rs 0.47.0."""
    store = Store.open(tmp_path / "s.db")
    claude = store.get_session(imported(store, MAROT))
    codex = store.get_session(imported(store, CODEX))
    assert (claude.agent, claude.agent_version) == ("claude-code", "2.1.39")
    assert (codex.agent, codex.agent_version) == ("codex", "0.47.0")
    assert store.create_session("/w").agent == ""  # ctxscope's own
    store.close()


def test_watch_stores_the_recorded_model_and_costs_what_the_import_costs(
    tmp_path: Path,
) -> None:
    """The watched file's first item is the user's input, which names no model: the session
    still gets claude-opus-4-6 (the model marot's assistant records name, the corpus README)
    and not the default model, and the same cost as its import."""
    store = Store.open(tmp_path / "s.db")
    copy = tmp_path / "258c7280.jsonl"
    shutil.copy(MAROT, copy)
    follower = Follower(copy, Settings(), store)
    assert follower.poll() is not None
    watched = follower.session
    assert watched is not None and watched.id is not None
    watched = store.get_session(watched.id)
    import_id = imported(store, MAROT)
    once = store.get_session(import_id)
    assert watched.model == once.model == "claude-opus-4-6"
    assert (watched.agent, watched.agent_version) == ("claude-code", "2.1.39")
    settings = Settings()
    cost = price_for(settings, watched.model).total_cost(store.usages(watched.id))
    assert cost == price_for(settings, once.model).total_cost(store.usages(import_id))
    assert cost is not None and cost > 0
    store.close()


def test_a_watch_that_starts_before_the_answer_gets_the_model_when_it_comes(
    tmp_path: Path,
) -> None:
    """marot's first 8 lines hold the user's input and no assistant record (``grep -n
    '"type":"assistant"'`` finds the first on a later line); the model arrives with the
    rest of the file."""
    lines = MAROT.read_bytes().split(b"\n")
    first_answer = next(n for n, line in enumerate(lines) if b'"type":"assistant"' in line)
    copy = tmp_path / "258c7280.jsonl"
    copy.write_bytes(b"\n".join(lines[:first_answer]) + b"\n")
    store = Store.open(tmp_path / "s.db")
    follower = Follower(copy, Settings(), store)
    follower.poll()
    assert follower.session is not None and follower.session.id is not None
    assert store.get_session(follower.session.id).model == ""
    with open(copy, "ab") as out:
        out.write(b"\n".join(lines[first_answer:]))
    follower.poll()
    assert store.get_session(follower.session.id).model == "claude-opus-4-6"
    store.close()


def test_sessions_stored_before_get_their_agent_once_by_the_old_guess(tmp_path: Path) -> None:
    """A database at schema 15: the recorded sessions are given the agent the gauge guessed
    until now (the watched file's path, else the model); ctxscope's own get none."""
    path = tmp_path / "old.db"
    store = Store.open(path)
    rows = [
        ("/h/.codex/sessions/2026/11/01/rollout-x.jsonl#1", ""),
        ("/h/.claude/projects/p/s.jsonl#s", "gpt-5"),
        (None, "claude-opus-5"),
        (None, "o3"),
        (None, "gemini-2.5-pro"),
    ]
    for source, model in rows:
        store.create_session("/w", provider="import", model=model, source=source)
    store.create_session("/w", provider="anthropic", model="claude-opus-5")
    store.close()
    before = next(v for v, step in MIGRATIONS.items() if step.__name__ == "_recorded_agents")
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE session_row DROP COLUMN recorded_agent")
    con.execute("ALTER TABLE session_row DROP COLUMN recorded_agent_version")
    con.execute(f"PRAGMA user_version = {before}")
    con.commit()
    con.close()
    store = Store.open(path)
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 25
    assert [store.get_session(n).agent for n in range(1, 7)] == [
        "codex",
        "claude-code",
        "claude-code",
        "codex",
        "",
        "",
    ]
    store.close()


@pytest.mark.parametrize("path", [MAROT, CODEX], ids=["marot", "codex"])
def test_a_watched_session_has_the_rules_of_its_import(path: Path, tmp_path: Path) -> None:
    """Watched from its first 12 lines on (the Codex rollout records its window only with
    its first token count, later), the stored session gives the window and the trigger the
    import gives (272,000 / 244,800 and 200,000 / 167,000) and the watch bar shows, the
    recorded folder's project settings read by both (the import in its recorded folder, as
    ``import FILE`` stores it)."""
    lines = path.read_bytes().split(b"\n")
    copy = tmp_path / path.name
    copy.write_bytes(b"\n".join(lines[:12]) + b"\n")
    env = {"HOME": str(tmp_path)}
    store = Store.open(tmp_path / "s.db")
    follower = Follower(copy, Settings(), store, env=env)
    follower.poll()
    with open(copy, "ab") as out:
        out.write(b"\n".join(lines[12:]))
    follower.poll()
    assert follower.session is not None and follower.figures is not None
    watched = store.get_session(follower.session.id or 0)
    once = store.get_session(imported(store, path, recorded_cwd=True))  # as `import FILE`
    rules = context_rules_for_session(store, watched, Settings(), env)
    assert rules == context_rules_for_session(store, once, Settings(), env)
    assert (follower.figures.context_window, follower.figures.compact_at) == (
        rules.window,
        rules.auto_compact_at,
    )
    expected = {MAROT: (200_000, 167_000), CODEX: (272_000, 244_800)}[path]
    assert (rules.window, rules.auto_compact_at) == expected
    store.close()
