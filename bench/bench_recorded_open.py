"""Opening a recorded session in the workbench (issues 30, 44): ``ctxscope --resume ID`` on the
corpus' Claude Code session (Opus 4.6, 152 calls, 344 messages, one compaction), in a fresh
interpreter with compiled bytecode (as an installed package has it), to the frame that shows
the whole session, against a five-line Textual app started and drawn in a fresh interpreter
the same way. Each figure is the median of several interleaved runs, wall time and CPU time
(the child's ``time.process_time()``: the machine is shared, and CPU is what a load inflates
least), from the process' start to its frame drawn (not its exit); the ratio is the target
(≤ 3×), printed for the medians and for each run against the five-line app's in the same round.

"The frame that shows the whole session": the header names the session, the chat shows its
last messages, the history pane its messages with their tokens, the gauge the recorded
figures — and that frame has been drawn (``call_after_refresh`` once they are on screen).

``--against DIR`` times another checkout (e.g. ``git archive main | tar -x -C DIR``, with this
checkout's venv) in the same interleaved runs: before and after, side by side.

Run from the repository root:

    python bench/bench_recorded_open.py            # prints the figures
    python bench/bench_recorded_open.py --runs 7 --against /tmp/main
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

MAROT = ROOT / "tests/data/corpus/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"

FRAME = """
import os, time
def drawn(app):
    # the clock and the CPU when the frame is drawn; the interpreter's exit is not timed
    os.write(1, f"frame {time.monotonic()} {time.process_time()}\\n".encode())
    app.exit()
"""
"""Printed by both scripts once their frame is drawn: ``time.monotonic()`` is the same clock in
the bench and the child (Linux ``CLOCK_MONOTONIC``), so wall time runs from the spawn."""

BASELINE = """
from textual.app import App
from textual.widgets import Static
class Hello(App):
    def compose(self): yield Static("hello")
    def on_mount(self): self.call_after_refresh(lambda: drawn(self))
Hello().run(headless=True, size=(120, 40))
"""
"""Five lines of Textual: an app drawn once, then closed."""

WORKBENCH = """
import sys
from pathlib import Path
try:  # the collector paused from before the import, as cli/workbench.py does
    from tui.gc_pause import GcPause
    pause = {"gc_pause": GcPause()}
    pause["gc_pause"].start()
except ImportError:  # a checkout from before issue 44's second pass
    pause = {}
import tui.app
from engine.settings.config import load_settings
from tui.app import CtxscopeApp
from tui.screens.main_screen import MainScreen

class Timed(CtxscopeApp):
    CSS_PATH = str(Path(tui.app.__file__).parent / CtxscopeApp.CSS_PATH)
    def on_mount(self):
        if not hasattr(MainScreen, "OpeningEnded"):  # an older checkout: look every 10 ms
            self.set_interval(0.01, self.check)
    def on_main_screen_opening_ended(self, message):
        super().on_main_screen_opening_ended(message)
        if self.main_screen.session_shown:
            self.call_after_refresh(lambda: drawn(self))
    def check(self):
        screen = self.main_screen
        if screen is not None and screen.agent is not None and screen.busy is None:
            self.call_after_refresh(lambda: drawn(self))

app = Timed(db_path=Path(sys.argv[1]), workspace=Path(sys.argv[2]), settings=load_settings(),
            resume=int(sys.argv[3]), **pause)
app.run(headless=True, size=(120, 40))
"""
"""``ctxscope --resume ID`` as cli/workbench.py builds it (the garbage collector paused from
before the workbench's import and handed to the app, where the checkout has that), closed once
the session shows: told by the screen (``MainScreen.OpeningEnded`` with ``session_shown``, the
frame drawn), or in a checkout from before issue 44, seen every 10 ms (its agent built, nothing
busy: what the frame waited for then)."""


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``args``, from its start to its frame drawn."""
    start = time.monotonic()
    done = subprocess.run(args, env=env, cwd=cwd, check=True, capture_output=True, timeout=120)
    line = next(x for x in done.stdout.decode().splitlines() if x.startswith("frame "))
    _, at, cpu = line.split()
    return float(at) - start, float(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout, timed in the same runs")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSCOPE_")}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    checkouts = {"this checkout": ROOT}
    if args.against is not None:
        checkouts[f"{args.against}"] = args.against.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Compiled bytecode, as an installed package has it (bench_startup.py does the same):
        # the untimed first runs fill this cache for all.
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            "five-line Textual app": ([sys.executable, "-c", FRAME + BASELINE], env)
        }
        for name, root in checkouts.items():
            db = folder / f"ctxscope-{len(runs)}.db"
            own = {**env, "PYTHONPATH": str(root)}
            subprocess.run(
                [sys.executable, "-m", "cli.main", "import", str(MAROT), "--db", str(db)],
                env=own, cwd=folder, check=True, capture_output=True,
            )  # fmt: skip
            script = FRAME + WORKBENCH
            runs[name] = ([sys.executable, "-c", script, str(db), str(folder), "1"], own)
        for command, run_env in runs.values():
            timed(command, run_env, folder)  # warm the file and bytecode caches, untimed
        walls: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.runs):  # interleaved: a load spike hits all
            for name, (command, run_env) in runs.items():
                wall, cpu = timed(command, run_env, folder)
                walls[name].append(wall)
                cpus[name].append(cpu)
    load = os.getloadavg()[0]
    base_wall = statistics.median(walls["five-line Textual app"])
    base_cpu = statistics.median(cpus["five-line Textual app"])
    print(f"median of {args.runs} interleaved runs; load {load:.1f} on {os.cpu_count()} cores")
    for name in runs:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        ratio = "" if wall == base_wall else f"  ratio {wall / base_wall:.1f}x wall"
        ratio += "" if cpu == base_cpu else f", {cpu / base_cpu:.1f}x CPU"
        print(f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU{ratio}")
        print(f"    runs, wall: {' '.join(f'{w:.2f}' for w in walls[name])}")
        print(f"    runs, CPU:  {' '.join(f'{c:.2f}' for c in cpus[name])}")
        if cpu != base_cpu:
            # each run against the five-line app's in the same round (the same load)
            each = [c / b for c, b in zip(cpus[name], cpus["five-line Textual app"], strict=True)]
            ratios = " ".join(f"{r:.1f}" for r in each)
            print(f"    runs, CPU ratio: {ratios} (max {max(each):.2f}x)")
    print("target: recorded session ≤ 3x the five-line app")
    return 0


if __name__ == "__main__":
    sys.exit(main())
