"""A current (2.1.8x) Claude Code session imports whole and is followed by ``watch``.

No public 2.1.8x session file under a licence that allows copying was found (the search tools
turned up viewers' hand-made fixtures only: ``find_string`` of ``"type":"ai-title"``,
``"type":"last-prompt"``, ``"type":"pr-link"``, ``"version":"2.1.88","gitBranch"``), so this
file is made from the corpus's marot session (2.1.39, ``tests/data/corpus``) with what 2.1.83
to 2.1.88 write, in the shapes real viewers read (issue 28; the sources above):

- every ``"version":"2.1.39"`` becomes ``"2.1.88"``;
- an ``ai-title`` after the first input (line 5), ``last-prompt`` ×4 (after it, after the
  last input, twice at the end), ``pr-link`` ×7 at the end (the same pull request written
  again on resume and compaction, each with its own time);
- two ``attachment`` records (a kind this version does not read), leaves of the uuid tree;
- the ``compact_boundary`` (line 1256) names a ``logicalParentUuid`` that is not in the file,
  as real sessions do;
- beside it: ``<session>/subagents/agent-a2018e5.jsonl`` (the corpus's moredip subagent, a
  task) and ``agent-acompact-7f3e.jsonl`` (the call that wrote the summary, built here).

What must come out, from ``tests/data/corpus_facts/README.md`` §1 (jq, no ctxscope): 186 tool
calls on the active chain (message-complete), each answered; 152 responses; 5 inputs; one
auto compaction with preTokens 167,094; the last usage before the boundary is line 1245's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from engine.recordings.follow import Follower
from engine.recordings.importing import parse_sessions
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.recordings.corpus import MAROT, MOREDIP_AGENT

SID = "258c7280-ae70-4798-800f-63464d01a85d"
TITLE = "Transcript annotations with message references"
PR = "https://github.com/marot/spotter/pull/42"
BOUNDARY = 1256  # marot's compact_boundary line
REAL_LOGICAL_PARENT = "7c642069-996d-4ae0-a61c-554b35d36fb6"  # line 1255


def meta(kind: str, **fields: object) -> str:
    return json.dumps({"type": kind, "sessionId": SID, **fields}, separators=(",", ":"))


def pr_link(n: int) -> str:
    stamp = f"2026-02-11T21:4{n}:00.000Z"
    return meta("pr-link", prNumber=42, prUrl=PR, prRepository="marot/spotter", timestamp=stamp)


def attachment(n: int, parent: str) -> str:
    return meta(
        "attachment",
        uuid=f"0a77ac4e-0000-4000-8000-00000000000{n}",
        parentUuid=parent,
        isSidechain=False,
        timestamp="2026-02-11T20:36:46.000Z",
        attachment={"type": "hook_additional_context", "content": ["context"]},
    )


def session_2188() -> tuple[list[str], dict[str, list[int]]]:
    """The lines, and where the kinds this version does not read went."""
    lines = MAROT.read_text(encoding="utf-8").splitlines()
    assert REAL_LOGICAL_PARENT in lines[BOUNDARY - 1]
    lines[BOUNDARY - 1] = lines[BOUNDARY - 1].replace(REAL_LOGICAL_PARENT, "feedface-0000-dead")
    lines = [line.replace('"version":"2.1.39"', '"version":"2.1.88"') for line in lines]
    first_progress = json.loads(lines[1])["uuid"]  # line 2, the root: the attachments' parent
    out = [
        *lines[:5],
        meta("ai-title", aiTitle=TITLE),
        meta("last-prompt", lastPrompt="Implement spotter-gqc", leafUuid="a"),
        attachment(1, first_progress),
        *lines[5:1860],
        meta("last-prompt", lastPrompt="did you push?", leafUuid="b"),
        *lines[1860:],
        attachment(2, first_progress),
        *[pr_link(n) for n in range(7)],
        meta("last-prompt", lastPrompt="did you push?", leafUuid="c"),
        meta("last-prompt", lastPrompt="did you push?", leafUuid="d"),
    ]
    where = {"attachment": [n for n, line in enumerate(out, 1) if '"type":"attachment"' in line]}
    return out, where


def acompact() -> str:
    """The summary call: a sidechain ended just before the boundary (21:18:41.543Z)."""
    common = {"isSidechain": True, "agentId": "acompact-7f3e", "sessionId": SID}
    ask = {
        **common,
        "type": "user",
        "uuid": "ac-1",
        "parentUuid": None,
        "timestamp": "2026-02-11T21:17:50.000Z",
        "message": {"role": "user", "content": "Summarise the conversation so far."},
    }
    answer = {
        **common,
        "type": "assistant",
        "uuid": "ac-2",
        "parentUuid": "ac-1",
        "timestamp": "2026-02-11T21:18:40.000Z",
        "message": {
            "role": "assistant",
            "id": "msg_acompact",
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "This session is being continued…"}],
            "usage": {"input_tokens": 150_000, "output_tokens": 3_400},
        },
    }
    return json.dumps(ask) + "\n" + json.dumps(answer) + "\n"


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, list[int]]]:
    lines, where = session_2188()
    session = tmp_path / f"{SID}.jsonl"
    session.write_text("\n".join(lines) + "\n", encoding="utf-8")
    agents = tmp_path / SID / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-a2018e5.jsonl").write_bytes(MOREDIP_AGENT.read_bytes())
    (agents / "agent-acompact-7f3e.jsonl").write_text(acompact())
    return session, where


def test_a_2188_session_parses_whole_and_names_what_it_does_not_read(
    project: tuple[Path, dict[str, list[int]]],
) -> None:
    session, where = project
    (parsed,) = parse_sessions(session)
    calls = [c for i in parsed.items for c in i.calls]
    results = [i for i in parsed.items if i.kind == "result"]
    assert len(calls) == 186 and len(results) == 186
    assert {r.tool_use_id for r in results} == {c.id for c in calls}
    assert sum(1 for i in parsed.items if i.kind == "assistant") == 152
    # The 5 recorded inputs and the 2 typed while the agent worked (queue-operation only).
    assert sum(1 for i in parsed.items if i.kind == "user") == 5 + 2
    (summary,) = [i for i in parsed.items if i.kind == "summary"]
    assert (summary.trigger, summary.pre_tokens) == ("auto", 167_094)
    assert summary.recorded_call is not None
    assert summary.recorded_call["agent_id"] == "acompact-7f3e"
    assert summary.recorded_call["usage"]["input_tokens"] == 150_000
    assert [c.agent_id for c in parsed.children] == ["a2018e5"]
    assert parsed.title == TITLE
    assert parsed.recorded["pr_links"] == [{"number": 42, "url": PR, "repository": "marot/spotter"}]
    assert parsed.skipped["pr-link"] == 7 and parsed.skipped["last-prompt"] == 4
    assert parsed.skipped["ai-title"] == 1
    assert parsed.agent_version == "2.1.88"
    assert parsed.not_read.kinds == where and parsed.not_read.lines == {}
    assert parsed.not_read_sentences() == [
        "2 records of kinds this version of ctxscope does not read: attachment 2 "
        "(Claude Code 2.1.88)"
    ]
    assert any(
        "logicalParentUuid feedface-0000-dead is not in the file" in w for w in parsed.warnings
    )


def test_a_2188_session_imports_with_its_subagent_and_compaction_call(
    project: tuple[Path, dict[str, list[int]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    session, _ = project
    db = tmp_path / "s.db"
    assert main(["import", str(session), "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["compactions"] == 1 and data["observations"] == 186
    assert [s["agent_id"] for s in data["subagents"]] == ["a2018e5"]
    assert data["not_read"]["kinds"]["attachment"]["count"] == 2
    assert data["agent_version"] == "2.1.88"
    store = Store.open(db)
    try:
        sid = data["session_id"]
        assert store.get_session(sid).title == f"import: {TITLE}"
        (compaction,) = store.compactions(sid)
        assert compaction.stats["recorded_pre_tokens"] == 167_094
        assert compaction.stats["agent_id"] == "acompact-7f3e"
        stored = store.all_messages(sid)
        assert sum(len(m.tool_calls) for m in stored) == 186
    finally:
        store.close()


def test_watch_follows_a_2188_session_and_says_what_it_does_not_read(
    project: tuple[Path, dict[str, list[int]]], tmp_path: Path
) -> None:
    session, _ = project
    follower = Follower(session, Settings(), Store.open(tmp_path / "w.db"))
    update = follower.poll()
    assert update is not None and update.session_id is not None
    assert update.figures.tool_calls == 186 and update.figures.compactions == 1
    assert follower.take_notices() == [
        f"{session}: 2 records of kinds this version of ctxscope does not read: attachment 2 "
        "(Claude Code 2.1.88)"
    ]
    assert follower.session is not None and follower.session.title == f"watch: {TITLE}"
