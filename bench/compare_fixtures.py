"""The README's published comparison: the project's own fixtures replayed under every strategy.

Fixtures: a long offline session this script generates (the offline agent on a workspace of
eight 250-line modules, 120 rounds of reads, greps, listings, edits with ``sed -i``, failing
Python commands and ``wc``, window 30 000 tokens,
keep 3 rounds, so every strategy has to act), and the sample transcripts under ``tests/data/``
imported with ``engine.recordings``. Each is replayed (``engine.replay.runner.replay``) under the
six
strategies with the same settings; the table is printed as Markdown. Run again, it gives
the same table up to a token or two (the summaries carry their time range).

    python bench/compare_fixtures.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.compaction.ledger import KINDS  # noqa: E402
from engine.compaction.strategies import STRATEGIES  # noqa: E402
from engine.llm.offline import OfflineProvider  # noqa: E402
from engine.recordings.importing import import_session  # noqa: E402
from engine.replay.runner import replay  # noqa: E402
from engine.session import Agent  # noqa: E402
from engine.settings.config import Settings  # noqa: E402
from engine.store import Store  # noqa: E402

ROUNDS = 120
TRANSCRIPTS = (
    "recorded_session.jsonl",
    "ide_session.jsonl",
    "claude_code/resumed_session.jsonl",
    "mini_swe_agent.traj.json",
    "swe_agent.traj",
)
"""The import issue's sample transcripts (Anthropic JSON lines, Claude Code, mini-SWE-agent,
SWE-agent)."""
ASKS = (
    "read m{a}.py",
    "grep def f{a}_1 in .",
    "read m{b}.py",
    "ls .",
    "read m{a}.py then read m{b}.py",
    "run: sed -i 's/# line 7 of/# line seven of/' m{a}.py",
    "run: python3 -c \"raise ValueError('bad value {r}')\"",
    "run: wc -l m{b}.py",
)


def settings() -> Settings:
    return Settings(
        model="claude-sonnet-4-6", context_window=30_000, keep_rounds=3, bash_policy="allow"
    )


def long_offline_session(store: Store, ws: Path, conf: Settings) -> int:
    for n in range(8):
        lines = [f"def f{n}_{i}(x):  # line {i} of module {n}" for i in range(250)]
        (ws / f"m{n}.py").write_text("\n".join(lines) + "\n")
    session = store.create_session(str(ws), "long offline fixture", model="claude-sonnet-4-6")
    agent = Agent(store, session, conf, OfflineProvider(conf), ws)
    for r in range(ROUNDS):
        ask = ASKS[r % len(ASKS)].format(a=r % 8, b=(r * 3 + 1) % 8, r=r)
        agent.run(ask)
    assert session.id is not None
    return session.id


def table(title: str, store: Store, sid: int, ws: Path, conf: Settings) -> None:
    print(f"\n**{title}**\n")
    kinds = [k for k in KINDS if k != "decision"]
    heads = " | ".join(f"{k} last / min" for k in kinds)
    print(f"| strategy | steps | compactions | peak | total input | cache read | cache write "
          f"| cost | {heads} |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(kinds))
    for name in STRATEGIES:
        row = replay(store, sid, name, conf, ws).row()
        last, low = row["recall_last"], row["recall_min"]

        def pct(v: float | None) -> str:
            return "—" if v is None else f"{v:.0%}"

        recall = " | ".join(f"{pct(last.get(k))} / {pct(low.get(k))}" for k in kinds)
        cost = "–" if row["cost"] is None else f"${row['cost']:.2f}"  # no price: no cost
        print(
            f"| {name} | {row['steps']:,} | {row['compactions']} | {row['peak']:,} "
            f"| {row['total_input']:,} | {row['cache_read']:,} | {row['cache_write']:,} "
            f"| {cost} | {recall} |",
            flush=True,
        )


def main() -> None:
    conf = settings()
    with tempfile.TemporaryDirectory(prefix="ctxscope-compare-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        store = Store.open(root / "fixtures.db")
        sid = long_offline_session(store, ws, conf)
        table(f"Long offline session ({ROUNDS} rounds)", store, sid, ws, conf)
        for name in TRANSCRIPTS:
            path = ROOT / "tests" / "data" / name
            report = import_session(store, path, str(ws), settings=conf)
            assert report.session.id is not None
            table(f"Imported `{name}`", store, report.session.id, ws, conf)
        store.close()


if __name__ == "__main__":
    main()
