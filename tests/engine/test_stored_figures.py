"""A session's figures are stored when written and read back by a listing (issue 44): the
stored copy equals the figures made from the calls for every corpus file, a change to the
session or to what the figures were priced with makes them be made again, and a listing reads
the stored copy rather than the usage rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.figures import SessionFigures
from engine.models import Usage, UsageRecord
from engine.recordings import figures as stored_figures
from engine.recordings.figures import (
    RULE_SETTINGS,
    RULE_VARIABLES,
    figures_key,
    made_figures,
    project_part,
    rules_for,
    sessions_figures,
)
from engine.settings.config import Settings
from engine.store import Store
from tests.cli_run import run_redirected as run

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus"
MAIN_FILES = sorted(
    p.name
    for p in CORPUS.iterdir()
    if p.suffix in (".jsonl", ".json", ".traj") and "__subagents__" not in p.name
)
MAROT = "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def imported(name: str, tmp: Path) -> Path:
    db = tmp / "figures.db"
    code, _, err = run("import", str(CORPUS / name), "--db", str(db))
    assert code == 0, err
    return db


@pytest.mark.parametrize("name", MAIN_FILES)
def test_the_stored_figures_are_the_made_ones(name: str, tmp_path: Path) -> None:
    store = Store.open(imported(name, tmp_path))
    settings = Settings()
    sessions = [i.session for i in store.list_sessions()]
    listed = sessions_figures(store, sessions, settings, every=True)
    kept = store.stored_figures()
    for session in sessions:
        assert session.id is not None
        made = made_figures(store, session, settings)
        read = kept[session.id]
        rules = rules_for(store, session, settings)
        project = project_part(rules.project_files, rules.project_fields)
        assert read.figures is not None and read.priced_with == figures_key(settings) + project
        again = SessionFigures.from_stored(
            read.figures, history_tokens=made.history_tokens, compactions=made.compactions
        )
        assert again == made == listed[session.id]


def _tamper(db: Path, cost: float) -> None:
    """Write ``cost`` into the stored figures by hand, to see which copy a listing prints."""
    store = Store.open(db)
    read = store.stored_figures()
    (sid,) = read
    assert read[sid].figures is not None
    store.bind()
    from engine.store.models import FiguresRow

    figures = dict(read[sid].figures or {}) | {"cost": cost}
    FiguresRow.update(figures=figures).where(FiguresRow.session == sid).execute()


def _listed_cost(db: Path) -> float:
    code, out, err = run("sessions", "--db", str(db), "--json")
    assert code == 0, err
    (session,) = json.loads(out)
    return float(session["figures"]["cost"])


def test_a_listing_prints_the_stored_figures_while_the_price_data_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marot session costs $11.853923 at list price (tests/test_one_truth.py); a stored
    cost written by hand is what ``sessions`` prints while the key holds, and the made figure
    again (and stored again) once genai-prices' version is another."""
    db = imported(MAROT, tmp_path)
    assert round(_listed_cost(db), 2) == 11.85
    _tamper(db, 1234.5)
    assert _listed_cost(db) == 1234.5
    monkeypatch.setattr(stored_figures, "_price_data_version", lambda: "99.0.0")
    assert round(_listed_cost(db), 2) == 11.85
    read = Store.open(db).stored_figures()
    (row,) = read.values()
    assert row.priced_with.startswith("genai-prices 99.0.0;")
    assert row.figures is not None and round(row.figures["cost"], 2) == 11.85


def test_the_key_names_the_installed_price_datas_version() -> None:
    """The version in the key is the one the package's own metadata gives (read from the
    folder name, not through importlib.metadata's e-mail parser)."""
    from importlib.metadata import version

    stored_figures._price_data_version.cache_clear()
    assert stored_figures._price_data_version() == version("genai-prices")
    assert figures_key(Settings(), {}).startswith(f"genai-prices {version('genai-prices')};")


def test_a_prices_section_or_a_rule_variable_changes_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings()
    key = figures_key(settings, {})
    assert figures_key(settings, {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}) != key
    assert figures_key(settings, {"SOME_OTHER_VARIABLE": "1"}) == key
    priced = Settings(prices={"claude-opus-4-6": {"input": 1.0, "output": 2.0}})
    assert figures_key(priced, {}) != key
    assert figures_key(Settings(watch_context_window=123_456), {}) != key


def test_a_usage_row_clears_the_stored_figures_in_its_transaction(tmp_path: Path) -> None:
    db = imported(MAROT, tmp_path)
    store = Store.open(db)
    settings = Settings()
    (session,) = [i.session for i in store.list_sessions()]
    assert session.id is not None
    sessions_figures(store, [session], settings)
    before = store.stored_figures()[session.id]
    assert before.figures is not None
    usage = Usage(input_tokens=10, output_tokens=5)
    record = UsageRecord(
        session_id=session.id, round_index=None, step=None, usage=usage, model="claude-opus-4-6"
    )
    store.add_usage(record)
    after = store.stored_figures()[session.id]
    assert after.figures is None and after.generation == before.generation + 1
    # figures made from what was read before the write are not kept
    assert store.keep_figures([(before, before.priced_with, before.figures)]) == 0
    fresh = sessions_figures(store, [session], settings)[session.id]
    assert fresh.requests == made_figures(store, session, settings).requests
    assert store.stored_figures()[session.id].figures == fresh.stored()


def test_the_key_names_every_variable_and_setting_the_rules_read() -> None:
    """Every ``variable("X")`` / ``env.get("X")`` / ``env["X"]`` in the agents' modules and
    every ``settings.x`` there is in the key, so a change to one makes the figures again."""
    agents = ROOT / "engine" / "recordings" / "agents"
    text = "\n".join(p.read_text() for p in agents.glob("*.py"))
    variables = set(re.findall(r'(?:variable\(|env\.get\(|env\[)"([A-Z_0-9]+)"', text))
    assert variables and variables <= set(RULE_VARIABLES)
    named = set(re.findall(r"\bsettings\.([a-z_]+)\b(?!\.json)", text))
    named -= {"json", "local", "config", "prices"}  # file names in prose; prices: its own digest
    assert named and named <= set(RULE_SETTINGS)


def test_a_listing_does_not_wait_for_a_writer_to_keep_figures(tmp_path: Path) -> None:
    """While another connection holds the write lock (a long import), a listing makes the
    figures, prints them and keeps none, at once: its busy timeout (30 s here) is not waited
    out for a cache."""
    import time

    db = imported(MAROT, tmp_path)
    Store.open(db).stored_figures()  # the row exists; its figures are kept by import
    writer = Store.open(db)
    looking = Store.open(db, read_only=True, busy_timeout=30)
    settings = Settings()
    (session,) = [i.session for i in looking.list_sessions()]
    assert session.id is not None
    other_key = figures_key(settings) + " (another)"
    with writer.begin_write():  # BEGIN IMMEDIATE: the write lock, held
        start = time.monotonic()
        read = looking.stored_figures([session.id])[session.id]
        kept = looking.keep_figures([(read, other_key, {"cost": 1.0})])
        waited = time.monotonic() - start
    assert kept == 0 and waited < 10
    assert looking.stored_figures([session.id])[session.id].priced_with != other_key


def _context(db: Path) -> dict[str, object]:
    code, out, err = run("sessions", "--db", str(db), "--json")
    assert code == 0, err
    (session,) = json.loads(out)
    code, out, err = run("context", str(session["id"]), "--db", str(db), "--json")
    assert code == 0, err
    figures: dict[str, object] = json.loads(out)["figures"]
    assert figures["auto_compact_at"] == session["figures"]["auto_compact_at"]
    return figures


def _priced_with(db: Path) -> str:
    store = Store.open(db, read_only=True)
    try:
        (row,) = store.stored_figures().values()
        return row.priced_with
    finally:
        store.close()


def test_the_projects_own_claude_settings_are_in_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marot session (claude-opus-4-6, Claude Code's 200,000 window) recorded in a folder
    of ours: it compacts at 200,000 − 33,000 = 167,000 and those figures are stored. Then the
    project's ``.claude/settings.json`` says ``autoCompactWindow: 150000`` (Claude Code's
    setting; docs/watch.md): ``sessions`` and ``context`` print 150,000 − 33,000 = 117,000 at
    once, not the stored 167,000; then ``.claude/settings.local.json`` (read first) says
    ``DISABLE_AUTO_COMPACT=1`` in its ``env``: no trigger. A change to a field the rules do not
    read (``permissions``) leaves the key as it was."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in RULE_VARIABLES[1:]:
        monkeypatch.delenv(name, raising=False)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    text = (CORPUS / MAROT).read_text()
    recorded = "/home/USER/projects/spotter-worktrees/spotter-gqc"
    copy = tmp_path / MAROT
    copy.write_text(text.replace(f'"cwd":"{recorded}"', f'"cwd":{json.dumps(str(project))}'))
    db = tmp_path / "figures.db"
    code, _, err = run("import", str(copy), "--db", str(db))
    assert code == 0, err
    assert _context(db)["auto_compact_at"] == 167_000
    key = _priced_with(db)
    assert str(project / ".claude" / "settings.json") in key
    shared = project / ".claude" / "settings.json"
    shared.write_text(json.dumps({"autoCompactWindow": 150_000}))
    figures = _context(db)
    assert figures["auto_compact_at"] == 117_000
    assert "autoCompactWindow 150,000" in str(figures["trigger_source"])
    key = _priced_with(db)
    shared.write_text(json.dumps({"autoCompactWindow": 150_000, "permissions": {"allow": []}}))
    assert _context(db)["auto_compact_at"] == 117_000
    assert _priced_with(db) == key
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"env": {"DISABLE_AUTO_COMPACT": "1"}}))
    assert _context(db)["auto_compact_at"] is None


def test_the_project_fields_name_every_setting_claude_codes_rules_read() -> None:
    """Every ``variable("X")``, ``value("X")`` and ``model_value(…, "X")`` of Claude Code's
    rules is among the fields a project's files are keyed by."""
    from engine.recordings.agents.claude_code_settings import WINDOW_FIELDS

    text = (ROOT / "engine" / "recordings" / "agents" / "claude_code.py").read_text()
    variables = set(re.findall(r'variable\("([A-Z_0-9]+)"', text))
    values = set(re.findall(r'value\("([A-Za-z]+)"', text))
    per_model = set(re.findall(r'model_value\(.*?"([A-Za-z]+)"\)', text))
    assert variables and values and per_model
    wanted = {f"env.{v}" for v in variables} | values | {f"modelSettings.*.{k}" for k in per_model}
    assert wanted <= set(WINDOW_FIELDS)
