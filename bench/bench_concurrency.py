"""Several processes asking on shared sessions of one database, at once (a script, not a test).

Each worker is its own Python process that runs ``ctxscope ask --wait`` (in-process, through
``cli.main.main``) several times on one session; every session has several workers, so they
contend for its writer lease, and all of them for the database's write lock. Afterwards every
session is checked: each worker's every input is stored exactly once as a round's user message,
every round finished, and the stored conversation is a valid Messages API request.

    python bench/bench_concurrency.py                 # the issue's target: 8 workers x 20 asks
    python bench/bench_concurrency.py --workers 4 --asks 3 --sessions 2

The test suite runs a small version of the same check (tests/engine/session/test_concurrency.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORKER = """
import sys
from cli.main import main
db, session, worker, asks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(asks):
    text = f"w{worker}-{i}: read README.md"
    code = main(["ask", text, "--session", session, "--db", db, "--wait", "--model", "offline"])
    print(f"exit {code} {text}", file=sys.stderr, flush=True)
"""


@dataclass
class Report:
    workers: int
    asks: int
    sessions: int
    seconds: float
    tracebacks: int = 0
    failed_asks: int = 0
    lost_inputs: list[str] = field(default_factory=list)
    duplicated_inputs: list[str] = field(default_factory=list)
    unfinished_rounds: int = 0
    invalid_sessions: list[str] = field(default_factory=list)
    stderr_samples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.tracebacks
            or self.failed_asks
            or self.lost_inputs
            or self.duplicated_inputs
            or self.unfinished_rounds
            or self.invalid_sessions
        )


def contend(workdir: Path, workers: int, asks: int, sessions: int) -> Report:
    """Run ``workers`` processes of ``asks`` asks each over ``sessions`` shared sessions."""
    from engine.context.builder import validate_request
    from engine.llm.offline import OfflineProvider
    from engine.session import Agent
    from engine.settings.config import Settings
    from engine.store import Store

    workspace = workdir / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# shared\n\nA workspace several writers share.\n")
    db = workdir / "shared.db"
    store = Store.open(db)
    ids = [store.create_session(str(workspace), f"s{n}").id for n in range(sessions)]
    store.close()

    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    started = time.monotonic()
    procs = []
    for w in range(workers):
        sid = ids[w % sessions]
        args = [sys.executable, "-c", WORKER, str(db), str(sid), str(w), str(asks)]
        procs.append(
            subprocess.Popen(
                args, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        )
    errs = [p.communicate()[1].decode(errors="replace") for p in procs]
    report = Report(workers, asks, sessions, time.monotonic() - started)
    for p, err in zip(procs, errs, strict=True):
        report.tracebacks += err.count("Traceback")
        exits = [line.split()[1] for line in err.splitlines() if line.startswith("exit ")]
        report.failed_asks += sum(code != "0" for code in exits) + asks - len(exits)
        if p.returncode != 0 or "Traceback" in err:
            report.stderr_samples.append(err[-2000:])

    store = Store.open(db, read_only=True)
    settings = Settings(model="offline")
    for w in range(workers):
        sid = ids[w % sessions]
        users = [m.content for m in store.history(sid).messages if m.role == "user"]
        for i in range(asks):
            text = f"w{w}-{i}: read README.md"
            n = sum(1 for u in users if u.startswith(text))
            if n == 0:
                report.lost_inputs.append(text)
            elif n > 1:
                report.duplicated_inputs.append(text)
    for sid in ids:
        report.unfinished_rounds += sum(r.status.value != "finished" for r in store.rounds(sid))
        session = store.get_session(sid)
        agent = Agent(store, session, settings, OfflineProvider(settings), workspace)
        problems = validate_request(agent.preview("next").request)
        if problems:
            report.invalid_sessions.append(f"session {sid}: {problems[:3]}")
    store.close()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=4)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = contend(Path(tmp), opts.workers, opts.asks, opts.sessions)
    print(
        f"{r.workers} processes x {r.asks} asks on {r.sessions} sessions "
        f"({r.workers // r.sessions} writers per session, --wait): {r.seconds:.1f} s"
    )
    print(f"  tracebacks: {r.tracebacks}")
    print(f"  failed asks: {r.failed_asks}")
    print(f"  lost inputs: {len(r.lost_inputs)}   duplicated inputs: {len(r.duplicated_inputs)}")
    print(f"  rounds not finished: {r.unfinished_rounds}")
    print(f"  sessions whose stored conversation is invalid: {len(r.invalid_sessions)}")
    for sample in r.stderr_samples[:2]:
        print("---\n" + sample)
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
