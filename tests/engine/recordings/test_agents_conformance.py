"""One conformance suite over every entry of :data:`engine.recordings.agents.AGENTS` (the way
harlequin runs one suite over every adapter): each agent's sample files are told apart by
content, parsed into sessions of its format, given context rules whose figures name their
source; its home folders are its own; and where it can be followed, the file grown in chunks
through ``watch``'s follower gives the items and the figures its import gives.

An agent added to the registry without samples here fails
:func:`test_every_agent_has_samples`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.recordings import agents
from engine.recordings.agents.protocol import AgentFormat
from engine.recordings.follow import Follower, figures
from engine.recordings.importing import parse_sessions
from engine.settings.config import Settings
from tests.engine.recordings.helpers import CORPUS, FIXTURES

DATA = CORPUS.parent


def _managed_stream(folder: Path) -> Path:
    """A Claude Managed Agents event stream (the documented event shapes, as in
    test_managed_agents.py) that the Anthropic JSON-lines reader hands over: one message
    line among more events."""
    lines = [
        {"role": "user", "content": "context"},
        {"id": "sevt_1", "type": "user.message", "processed_at": "2026-04-02T10:00:01Z",
         "content": [{"type": "text", "text": "List the files"}]},
        {"id": "sevt_2", "type": "agent.message", "processed_at": "2026-04-02T10:00:02Z",
         "content": [{"type": "text", "text": "a.py"}]},
        {"id": "sevt_3", "type": "session.status_idle", "processed_at": "2026-04-02T10:00:03Z"},
    ]  # fmt: skip
    path = folder / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


SAMPLES: dict[str, list[Path | str]] = {
    "swe-agent": [
        CORPUS / "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj",
        DATA / "swe_agent.traj",
    ],
    "mini-swe-agent": [DATA / "mini_swe_agent.traj.json"],
    "gemini-cli": [CORPUS / "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json"],
    "openhands": [CORPUS / "All-Hands-AI__OpenHands__basic_gui_mode.json"],
    "aider": [FIXTURES / "aider.chat.history.md"],
    "codex": [
        CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl",
        FIXTURES / "codex-0.104-compacted.jsonl",
    ],
    "copilot-cli": [FIXTURES / "copilot-cli-1.0.61-events.jsonl"],
    "claude-code": [
        CORPUS / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        CORPUS / "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl",
        CORPUS / "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl",
        DATA / "claude_code" / "resumed_session.jsonl",
    ],
    "anthropic-jsonl": [DATA / "recorded_session.jsonl", DATA / "ide_session.jsonl"],
    "claude-managed-agents": ["managed"],
}
"""Real (corpus) and fixture files of each agent; ``managed`` is written by the test."""
CLAIMED_BY = {"claude-managed-agents": "anthropic-jsonl"}
"""Agents whose files another entry claims and hands over (its reader reads them): a stream
whose first line is a message goes through the Anthropic JSON-lines reader (one that begins
with an event is claimed by its own entry)."""


def cases() -> list[tuple[str, Path | str]]:
    return [(name, sample) for name, samples in SAMPLES.items() for sample in samples]


def _path(sample: Path | str, tmp_path: Path) -> Path:
    return _managed_stream(tmp_path) if sample == "managed" else Path(sample)


def _agent(name: str) -> AgentFormat:
    agent = agents.by_name(name)
    assert agent is not None, name
    return agent


def test_every_agent_has_samples() -> None:
    assert [agent.name for agent in agents.AGENTS] == list(SAMPLES)


@pytest.mark.parametrize(("name", "sample"), cases(), ids=lambda v: getattr(v, "name", v))
def test_detect_parse_and_rules(name: str, sample: Path | str, tmp_path: Path) -> None:
    path = _path(sample, tmp_path)
    text = path.read_text(encoding="utf-8")
    agent = _agent(name)
    detected = agents.detect(path, text)
    assert detected is not None and detected.name == CLAIMED_BY.get(name, name)
    sessions = detected.parse(path, text)
    assert sessions and all(parsed.fmt == name for parsed in sessions)
    assert [p.fmt for p in parse_sessions(path)] == [p.fmt for p in sessions]
    env = {"HOME": str(tmp_path)}
    for parsed in sessions:
        rules = agents.context_rules_for_parsed(parsed, Settings(), env)
        assert rules == agent.context_rules(agents.recorded_of_parsed(parsed), Settings(), env)
        assert rules.window > 0 and rules.window_source and rules.trigger_source
        assert rules.auto_compact_at is None or 0 < rules.auto_compact_at < rules.window


@pytest.mark.parametrize("agent", agents.AGENTS, ids=lambda a: a.name)
def test_home_folders_are_the_agents_own(agent: AgentFormat, tmp_path: Path) -> None:
    """Under the HOME given (Gemini CLI's only where its folder exists), each named as its."""
    (tmp_path / ".gemini" / "tmp" / "9f2c" / "chats").mkdir(parents=True)
    folders = agent.home_folders({"HOME": str(tmp_path)}, Settings())
    assert all(f.agent == agent.name and f.path.is_relative_to(tmp_path) for f in folders)
    assert bool(folders) == (agent.name in ("claude-code", "codex", "gemini-cli", "copilot-cli"))


FOLLOWED = [
    (name, sample)
    for name, sample in cases()
    if _agent(name).tail_parser(Path("x.jsonl")) is not None
]


@pytest.mark.parametrize(("name", "sample"), FOLLOWED, ids=lambda v: getattr(v, "name", v))
def test_followed_in_chunks_gives_the_import(name: str, sample: Path | str, tmp_path: Path) -> None:
    """The file written in five pieces cut mid-line, the follower looking after each: at the
    end its items and its figures (context, window, auto-compact point, compactions) are the
    import's."""
    source = _path(sample, tmp_path)
    data = source.read_bytes()
    grown = tmp_path / source.name
    grown.write_bytes(b"")
    env = {"HOME": str(tmp_path)}
    follower = Follower(grown, Settings(), env=env)
    cuts = [len(data) * k // 5 + 7 for k in range(1, 5)] + [len(data)]
    start = 0
    for cut in cuts:
        with open(grown, "ab") as out:
            out.write(data[start:cut])
        start = cut
        follower.look()
    assert follower.agent is not None and follower.agent.name == name
    (imported,) = parse_sessions(source)
    followed = follower.parsed
    assert followed is not None
    key = [(i.kind, i.line, i.text, i.pre_tokens) for i in imported.items]
    assert [(i.kind, i.line, i.text, i.pre_tokens) for i in followed.items] == key
    assert follower.figures == figures(imported, Settings(), env)
