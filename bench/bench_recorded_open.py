"""Opening a recorded session in the workbench (issue 30): ``ctxscope --resume ID`` on the
corpus' Claude Code session (Opus 4.6, 152 calls, 344 messages, one compaction), in a fresh
interpreter with compiled bytecode (as an installed package has it), to the frame that shows
the whole session (the session open, nothing busy), against a five-line Textual app started
and drawn in a fresh interpreter the same way. Each
figure is the median of several runs; the ratio is the target (≤ 3×).

Run from the repository root:

    python bench/bench_recorded_open.py            # prints the figures
    python bench/bench_recorded_open.py --runs 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"

BASELINE = """
from textual.app import App
from textual.widgets import Static
class Hello(App):
    def compose(self): yield Static("hello")
    def on_mount(self): self.call_after_refresh(self.exit)
Hello().run(headless=True, size=(120, 40))
"""
"""Five lines of Textual: an app drawn once, then closed."""

WORKBENCH = """
import sys
from pathlib import Path
import tui.app
from engine.settings.config import load_settings
from tui.app import CtxscopeApp

class Timed(CtxscopeApp):
    CSS_PATH = str(Path(tui.app.__file__).parent / CtxscopeApp.CSS_PATH)
    def on_mount(self):
        self.set_interval(0.01, self.check)
    def check(self):
        screen = self.main_screen
        if screen is not None and screen.agent is not None and screen.busy is None:
            self.call_after_refresh(self.exit)

app = Timed(db_path=Path(sys.argv[1]), workspace=Path(sys.argv[2]), settings=load_settings(),
            resume=int(sys.argv[3]))
app.run(headless=True, size=(120, 40))
"""
"""``ctxscope --resume ID`` as cli/workbench.py builds it, closed once the session shows."""


def timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, cwd=cwd, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSCOPE_")}
    env.pop("ANTHROPIC_API_KEY", None)
    env["PYTHONPATH"] = str(ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Compiled bytecode, as an installed package has it (bench_startup.py does the same):
        # the untimed first runs fill this cache for both.
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        db = folder / "ctxscope.db"
        subprocess.run(
            [sys.executable, "-m", "cli.main", "import", str(MAROT), "--db", str(db)],
            env=env, cwd=folder, check=True, capture_output=True,
        )  # fmt: skip
        base = [sys.executable, "-c", BASELINE]
        bench = [sys.executable, "-c", WORKBENCH, str(db), str(folder), "1"]
        timed(base, env, folder)  # warm the file cache of both, untimed
        timed(bench, env, folder)
        baseline, opening = [], []
        for _ in range(runs):  # interleaved: a load spike hits both
            baseline.append(timed(base, env, folder))
            opening.append(timed(bench, env, folder))
    b, o = statistics.median(baseline), statistics.median(opening)
    print(f"five-line Textual app: {b:.2f} s (median of {runs})")
    print(f"recorded session opened: {o:.2f} s (median of {runs})")
    print(f"ratio: {o / b:.1f}x (target ≤ 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
