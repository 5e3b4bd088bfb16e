"""The strategy comparison published in the README, made by ctxscope itself.

Records a long offline session on this checkout (40 asks: large Reads, LS, Glob, Grep under a
30 000-token window, the layered strategy keeping 3 rounds; every strategy's numbers scaled to
that window by its seed's ratios), imports the sample transcripts under
``tests/data/``, and replays each under every strategy (``engine.replay``): steps, compactions,
peak and total input tokens, prompt-cache reads and writes, estimated cost at Claude Sonnet
prices, and how much of the artifact ledger the last request still holds.

    python bench/compare_strategies.py      # prints the Markdown tables
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.agent import Agent  # noqa: E402
from engine.config import Settings  # noqa: E402
from engine.importer import import_session  # noqa: E402
from engine.llm.offline import OfflineProvider  # noqa: E402
from engine.replay import replay  # noqa: E402
from engine.store import Store  # noqa: E402
from engine.strategies import STRATEGIES  # noqa: E402

FILES = [
    "engine/agent.py",
    "engine/store/repository.py",
    "engine/context.py",
    "engine/history.py",
    "engine/cli.py",
    "engine/summary.py",
    "engine/tokens.py",
    "engine/replay.py",
]
OTHER = ["ls engine", "glob **/*.py", "grep def ", "read README.md"]
KINDS = ("file_read", "file_changed", "command", "error", "request")


def long_session(store: Store, settings: Settings) -> int:
    session = store.create_session(str(ROOT), "long offline session", strategy="layered")
    agent = Agent(store, session, settings, OfflineProvider(), ROOT)
    for i in range(40):
        agent.run(f"read {FILES[i % len(FILES)]}" if i % 3 else OTHER[(i // 3) % len(OTHER)])
    assert session.id is not None
    return session.id


def table(title: str, store: Store, sid: int, settings: Settings) -> list[str]:
    lines = [
        f"**{title}**",
        "",
        "| strategy | steps | compactions | peak | total input | cache read | cache write "
        "| cost | recall: files read / changed / commands / errors / requests |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in STRATEGIES:
        row = replay(store, sid, name, settings, ROOT).row()
        recall = " / ".join(
            "–" if row["recall_last"].get(k) is None else f"{row['recall_last'][k]:.0%}"
            for k in KINDS
        )
        lines.append(
            f"| {name} | {row['steps']} | {row['compactions']} | {row['peak']:,} "
            f"| {row['total_input']:,} | {row['cache_read']:,} | {row['cache_write']:,} "
            f"| ${row['cost']:.2f} | {recall} |"
        )
    return [*lines, ""]


def main() -> int:
    window = 30_000
    # each strategy's numbers scaled to the 30 000-token window (their seed ratios)
    settings = Settings(
        context_window=window,
        keep_rounds=3,
        model="offline",
        strategies={
            "reset-hint": {"context_limit": window},
            "mock-user": {"context_window": window, "trigger_tokens": int(0.75 * window)},
        },
    )
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "compare.db")
        sid = long_session(store, settings)
        out += table("Long offline session (40 asks, 30 000-token window)", store, sid, settings)
        for sample in sorted((ROOT / "tests" / "data").glob("*.jsonl")):
            report = import_session(store, sample, str(ROOT), settings.generic_max_chars)
            assert report.session.id is not None
            out += table(f"Imported `{sample.name}`", store, report.session.id, settings)
        store.close()
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
