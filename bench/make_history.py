"""Make a history of agent sessions from the corpus (a script, not a test).

Writes, under a HOME of your choosing, the folders Claude Code and Codex keep their sessions
in, filled with copies of the corpus's real recordings (tests/data/corpus): each copy with fresh
ids (every session id, record uuid and parent link, message and request id mapped to a new one,
consistently within the copy) and its times shifted by a whole number of days, so no two copies
are the same session and the days spread out. Claude Code's subagent file goes with its
session, under ``<session>/subagents/``.

    python bench/make_history.py HOME --sessions 1000

``ctxscope import`` with ``HOME=HOME`` then reads it all (bench/bench_history.py does).
"""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
CLAUDE = (
    "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl",
    "moredip__session-share__4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl",
)
SUBAGENT = "moredip__session-share__4b2030ed__subagents__agent-a2018e5.jsonl"
CODEX = "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
ID_KEYS = {
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "sessionId",
    "leafUuid",
    "requestId",
    "id",
    "session_id",
    "call_id",
    "tool_use_id",
    "messageId",
    "agentId",
}
"""Keys whose string values are ids: mapped to fresh ones (the same old id, the same new)."""
TIME_KEYS = {"timestamp", "startTime", "lastUpdated"}


class Copy:
    """One copy's id map and time shift."""

    def __init__(self, days: int) -> None:
        self.ids: dict[str, str] = {}
        self.shift = timedelta(days=days)

    def fresh(self, old: str) -> str:
        if old not in self.ids:
            if old.startswith(("msg_", "req_", "toolu_", "call_")):
                prefix = old.split("_", 1)[0] + "_"
                self.ids[old] = prefix + uuid.uuid4().hex[:24]
            elif old.startswith("agent-") or len(old) < 16:
                self.ids[old] = old  # a short agent id names its file: kept
            else:
                self.ids[old] = str(uuid.uuid4())
        return self.ids[old]

    def moved(self, stamp: str) -> str:
        try:
            when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return stamp
        text = (when + self.shift).isoformat()
        return text.replace("+00:00", "Z") if stamp.endswith("Z") else text

    def walk(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v, key) for v in value]
        if isinstance(value, str):
            if key in ID_KEYS and value:
                return self.fresh(value)
            if key in TIME_KEYS:
                return self.moved(value)
        return value

    def lines(self, source: Path) -> str:
        out = []
        for line in source.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            out.append(json.dumps(self.walk(json.loads(line)), ensure_ascii=False))
        return "\n".join(out) + "\n"


def make_history(home: Path, sessions: int) -> int:
    """``sessions`` session files under ``home`` (Claude Code and Codex in turn); their
    bytes."""
    kinds = [*CLAUDE, CODEX]
    written = 0
    for n in range(sessions):
        name = kinds[n % len(kinds)]
        copy = Copy(days=-(n % 90))
        source = CORPUS / name
        text = copy.lines(source)
        if name == CODEX:
            day = datetime(2025, 10, 21) + copy.shift
            folder = home / ".codex" / "sessions" / f"{day:%Y/%m/%d}"
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"rollout-{day:%Y-%m-%dT%H-%M-%S}-{uuid.uuid4()}.jsonl"
        else:
            folder = home / ".claude" / "projects" / f"-bench-project-{n % 25}"
            folder.mkdir(parents=True, exist_ok=True)
            first = json.loads(text.split("\n", 1)[0])
            session = first.get("sessionId") or str(uuid.uuid4())
            path = folder / f"{session}.jsonl"
            if name == CLAUDE[2]:
                agents = folder / session / "subagents"
                agents.mkdir(parents=True, exist_ok=True)
                sub = agents / "agent-a2018e5.jsonl"
                sub.write_text(copy.lines(CORPUS / SUBAGENT), encoding="utf-8")
                written += sub.stat().st_size
        path.write_text(text, encoding="utf-8")
        written += path.stat().st_size
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path, help="the HOME to write .claude/ and .codex/ under")
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args()
    size = make_history(args.home, args.sessions)
    print(f"{args.sessions} sessions, {size / 1e6:.1f} MB under {args.home}")


if __name__ == "__main__":
    main()
