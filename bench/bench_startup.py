"""Start-up benchmark: what a command and the workbench cost before they do anything.

Each figure is the median of several runs, as a ratio against a baseline measured in the same
run on the same (possibly loaded) machine:

- ``ctxscope context ID --json`` on a one-round session, in a fresh interpreter each time,
  against a fresh interpreter that only imports textual + peewee + pydantic + tiktoken (the
  libraries any ctxscope command needs); target ≤ 1.5×;
- ``ctxscope show ID --json`` on the same session, against the same baseline;
- ``context`` once more with ``ANTHROPIC_API_KEY`` set (compiled): it builds an agent whose
  provider would be Anthropic, and sends nothing, so it must not import the SDK;
- both commands twice: with ctxscope's bytecode compiled, as an installed package has it
  (``PYTHONPYCACHEPREFIX`` in a temporary folder, filled by one untimed run of each command
  and of the baseline, which then reads its libraries' bytecode from there too), and
  "from source", with ``PYTHONDONTWRITEBYTECODE=1``: a checkout without ``__pycache__``
  compiles every ctxscope module (some 100, 600 KB) at each start while the libraries' bytecode
  comes from the venv — how the earlier figures were taken, in a sandbox that sets it;
- ``ctxscope --help``, ``ctxscope replay --help`` and an argument error (``ctxscope show
  abc``), run as the console script runs them, against a fresh interpreter that does nothing
  (``python -c pass``): they need no engine, no pydantic and no Textual; target ≤ 5×;
- **the per-command budget** (issue 44): ``ctxscope sessions``, ``show 1``, ``context 1`` and
  ``statusline`` (skipped while the command does not exist) on a small database (the corpus'
  pomodoro Claude Code session, imported), each against ``python -c "import peewee, sqlite3"``,
  compiled, interleaved; target ≤ 1.5×. ``--code DIR`` runs the commands from another checkout
  of ctxscope (``git archive COMMIT | tar -x -C DIR``) with this venv; given twice
  (``--code BEFORE --code AFTER``), each run times the baseline and then both checkouts' command,
  a before / after side by side against one baseline; ``--budget-only`` runs only these rows.
  The load average is printed with them. ``--instructions`` also counts each command's and the
  baseline's instructions once under callgrind (valgrind), which the machine's load does not
  change: a figure to compare two checkouts by on a shared machine (it counts no waiting for
  memory, so a change that saves memory traffic, as the collector's passes are, saves more
  CPU time than instructions);
- the workbench, in process (``App.run_test`` at 120×40): time to the first *usable* frame
  (the screen drawn and the input box enabled and focused, so typing works) and to the frame
  that shows the whole session, on a 10 000-message session against an empty one; target for
  the first usable frame ≤ 1.5×.

Run from the repository root:

    python bench/bench_startup.py            # prints a Markdown table
    python bench/bench_startup.py --runs 7
    python bench/bench_startup.py --help-only   # only the --help / argument-error rows
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BASELINE = "import textual.app, peewee, pydantic, tiktoken"

CONSOLE_SCRIPT = "import sys; from cli.workbench import main; sys.exit(main())"
"""What the ``ctxscope`` script pip writes runs (its arguments follow ``-c``)."""

BUDGET_BASELINE = "import peewee, sqlite3"
BUDGET_TARGET = 1.5
"""``sessions``, ``show``, ``context``, ``statusline``: at most this many times the baseline."""
BUDGET_SESSION = ROOT / "tests/data/corpus/yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl"

HELP_TARGET = 5.0
"""``--help`` and an argument error: at most this many times ``python -c pass``."""


def timed_subprocess(args: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def checkout_bytecode() -> list[Path]:
    """The ``__pycache__`` folders of ctxscope's own packages (a run without
    ``PYTHONDONTWRITEBYTECODE`` leaves them): "from source" is measured only without them."""
    packages = ("cli", "engine", "tools", "tui", "prompts")
    return sorted(p for name in packages for p in (ROOT / name).rglob("__pycache__"))


def median_of(runs: int, measure: object) -> float:
    assert callable(measure)
    return statistics.median(measure() for _ in range(runs))


def cli_figures(runs: int, tmp: Path) -> list[tuple[str, float, float]]:
    from cli.main import main

    db = tmp / "cli.db"
    workspace = tmp / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# bench\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["CTXSCOPE_DB"] = str(db)
    env["PYTHONPATH"] = str(ROOT)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    with open(os.devnull, "w") as null:
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = null
        try:
            main(["ask", "read README.md", "--workspace", str(workspace), "--db", str(db)])
        finally:
            sys.stdout, sys.stderr = saved
    py = sys.executable
    compiled = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    compiled["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    from_source = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    from_source.pop("PYTHONPYCACHEPREFIX", None)
    commands = (
        ("`ctxscope context 1 --json`", [py, "-m", "cli.main", "context", "1", "--json"]),
        ("`ctxscope show 1 --json`", [py, "-m", "cli.main", "show", "1", "--json"]),
    )
    for args in ([py, "-c", BASELINE], *(a for _, a in commands)):
        timed_subprocess(args, compiled, tmp)  # untimed: fills the bytecode cache
    out: list[tuple[str, float, float]] = []
    cached = checkout_bytecode()
    if cached:
        print(
            f"the checkout holds {len(cached)} __pycache__ folders (e.g. {cached[0]}): "
            "'from source' would read them; remove them to measure it "
            "(find cli engine tools tui prompts -name __pycache__ -exec rm -rf {} +)\n"
        )
    with_key = {**compiled, "ANTHROPIC_API_KEY": "sk-bench-not-sent"}  # context sends nothing
    for how, run_env, which in (
        ("compiled", compiled, commands),
        ("from source", from_source, () if cached else commands),
        ("compiled, ANTHROPIC_API_KEY set", with_key, commands[:1]),
    ):
        for label, args in which:
            base: list[float] = []
            cmd: list[float] = []
            for _ in range(runs):  # interleaved, so load changes hit both alike
                base.append(timed_subprocess([py, "-c", BASELINE], run_env, tmp))
                cmd.append(timed_subprocess(args, run_env, tmp))
            out.append((f"{label}, {how}", statistics.median(cmd), statistics.median(base)))
    return out


def help_figures(runs: int, tmp: Path) -> list[tuple[str, float, float]]:
    """``--help`` and an argument error against ``python -c pass``, both with their bytecode
    (``PYTHONPYCACHEPREFIX`` in ``tmp``, filled by an untimed run), interleaved."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache-help")
    py = sys.executable
    baseline = [py, "-c", "pass"]
    commands = (
        ("`ctxscope --help`", ["--help"], 0),
        ("`ctxscope replay --help`", ["replay", "--help"], 0),
        ("`ctxscope show abc` (an argument error)", ["show", "abc"], 2),
    )
    out: list[tuple[str, float, float]] = []
    for label, args, code in commands:
        command = [py, "-c", CONSOLE_SCRIPT, *args]
        done = subprocess.run(command, env=env, cwd=tmp, capture_output=True, check=False)
        assert done.returncode == code, done.stderr  # untimed: fills the bytecode cache
        base: list[float] = []
        cmd: list[float] = []
        for _ in range(runs):
            base.append(timed_subprocess(baseline, env, tmp))
            start = time.perf_counter()
            subprocess.run(command, env=env, cwd=tmp, capture_output=True, check=False)
            cmd.append(time.perf_counter() - start)
        out.append((label, statistics.median(cmd), statistics.median(base)))
    return out


BudgetRow = tuple[str, Path, float, float, float, float]
"""(command, checkout, wall median, baseline wall median, CPU median, baseline CPU median)."""


def _budget_env(tmp: Path, code: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(code)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache-budget")  # by source path: one per checkout
    env["CTXSCOPE_DB"] = str(db)
    env["HOME"] = str(tmp)  # no user settings file
    return env


def _budget_setup(py: str, tmp: Path, code: Path, db: Path) -> tuple[dict[str, str], bool]:
    """The environment running ``code``'s commands on ``db`` (the pomodoro session imported by
    that checkout), and whether that checkout has ``statusline``."""
    env = _budget_env(tmp, code, db)
    imported = subprocess.run(
        [py, "-m", "cli.main", "import", str(BUDGET_SESSION), "--json"],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    where = subprocess.run(
        [py, "-c", "import cli; print(cli.__file__)"],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(code)), f"{where} is not under {code}"
    has_statusline = (
        "statusline"
        in subprocess.run(
            [py, "-c", "from cli.main import COMMANDS; print(' '.join(COMMANDS))"],
            env=env,
            cwd=code,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )
    return env, has_statusline


def budget_figures(runs: int, tmp: Path, codes: list[Path]) -> list[BudgetRow]:
    """Each budgeted command on a one-session database against ``BUDGET_BASELINE``, every
    command and the baseline from its bytecode (an untimed run first), interleaved: each run
    times the baseline, every command from each checkout in ``codes`` (a before / after side
    by side), and the baseline again; every row is against the median of those 2 × ``runs``
    baseline samples. Wall-clock medians, then CPU-time (user + system) medians, which a
    loaded machine's waiting for a core does not lengthen."""
    py = sys.executable
    setups = [_budget_setup(py, tmp, code, tmp / f"budget-{i}.db") for i, code in enumerate(codes)]
    status_input = json.dumps(
        {"session_id": "bench", "transcript_path": str(BUDGET_SESSION), "cwd": str(tmp)}
    )
    commands: list[tuple[str, list[str], str | None]] = [
        ("`ctxscope sessions`", ["sessions"], None),
        ("`ctxscope show 1`", ["show", "1"], None),
        ("`ctxscope context 1`", ["context", "1"], None),
        ("`ctxscope statusline`", ["statusline"], status_input),  # the lead's (issue 44 too)
    ]
    baseline = [py, "-c", BUDGET_BASELINE]

    def timed(
        args: list[str], env: dict[str, str], cwd: Path, given: str | None
    ) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            args, env=env, cwd=cwd, input=given, text=True, capture_output=True, check=False
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return wall, cpu

    which: list[tuple[str, list[str], str | None, Path, dict[str, str]]] = []
    for label, args, given in commands:
        command = [py, "-m", "cli.main", *args]
        for code, (env, has_statusline) in zip(codes, setups, strict=True):
            if args[0] == "statusline" and not has_statusline:
                print(f"({label} does not exist in {code}: skipped there)\n")
                continue
            done = subprocess.run(
                command, env=env, cwd=code, input=given, text=True, capture_output=True, check=False
            )
            if done.returncode != 0 and args[0] == "statusline":  # its input may differ: say so
                print(
                    f"({label} exited {done.returncode} in {code}: {done.stderr.strip()[:200]})\n"
                )
                continue
            assert done.returncode == 0, f"{label}: {done.stderr}"  # untimed: fills the bytecode
            which.append((label, command, given, code, env))
    env0, code0 = setups[0][0], codes[0]
    timed(baseline, env0, code0, None)
    base: list[tuple[float, float]] = []
    cmd: list[list[tuple[float, float]]] = [[] for _ in which]
    for _ in range(runs):
        # Interleaved: the baseline before and after every command of every checkout, so a
        # change of load hits them all alike and every row has the same baseline samples.
        base.append(timed(baseline, env0, code0, None))
        for times, (_, command, given, code, env) in zip(cmd, which, strict=True):
            times.append(timed(command, env, code, given))
        base.append(timed(baseline, env0, code0, None))
    base_wall = statistics.median(b[0] for b in base)
    base_cpu = statistics.median(b[1] for b in base)
    return [
        (
            label,
            code,
            statistics.median(c[0] for c in times),
            base_wall,
            statistics.median(c[1] for c in times),
            base_cpu,
        )
        for times, (label, _, _, code, _) in zip(cmd, which, strict=True)
    ]


def instructions(args: list[str], env: dict[str, str], cwd: Path, given: str | None) -> int:
    """The instructions ``args`` runs, counted by callgrind (hash seed fixed: the same count
    every run)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *args],
        env={**env, "PYTHONHASHSEED": "0"},
        cwd=cwd,
        input=given,
        text=True,
        capture_output=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-500:]
    return int(found.group(1))


def instruction_figures(tmp: Path, codes: list[Path]) -> list[tuple[str, Path, int, int]]:
    """(command, checkout, its instructions, the baseline's) for each budgeted command, each
    checkout's on its own database; one run each (callgrind's count does not vary)."""
    py = sys.executable
    status_input = json.dumps(
        {"session_id": "bench", "transcript_path": str(BUDGET_SESSION), "cwd": str(tmp)}
    )
    out: list[tuple[str, Path, int, int]] = []
    for i, code in enumerate(codes):
        env, has_statusline = _budget_setup(py, tmp, code, tmp / f"count-{i}.db")
        base = instructions([py, "-c", BUDGET_BASELINE], env, code, None)
        for label, words, given in (
            ("`ctxscope sessions`", ["sessions"], None),
            ("`ctxscope show 1`", ["show", "1"], None),
            ("`ctxscope context 1`", ["context", "1"], None),
            ("`ctxscope statusline`", ["statusline"], status_input),
        ):
            if words[0] == "statusline" and not has_statusline:
                continue
            command = [py, "-m", "cli.main", *words]
            subprocess.run(  # untimed: fills the bytecode cache
                command, env=env, cwd=code, input=given, text=True, capture_output=True
            )
            out.append((label, code, instructions(command, env, code, given), base))
    return out


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


async def workbench_times(db: Path, workspace: Path, resume: int | None) -> tuple[float, float]:
    """(first usable frame, session shown) in seconds from the app's start."""
    from textual.widgets import Input

    from engine.llm.offline import OfflineProvider
    from engine.settings.config import Settings
    from tui.app import CtxscopeApp
    from tui.screens.main_screen import MainScreen

    settings = Settings(model="offline")
    app = CtxscopeApp(
        db_path=db,
        workspace=workspace,
        settings=settings,
        resume=resume,
        provider=OfflineProvider(settings),
    )
    start = time.perf_counter()
    usable = shown = 0.0
    async with app.run_test(size=(120, 40)) as pilot:
        while True:
            screen = app.screen
            if isinstance(screen, MainScreen):
                box = screen.query_one("#input", Input)
                if not usable and not box.disabled and box.has_focus:
                    usable = time.perf_counter() - start
                if screen.agent is not None and screen.busy is None:
                    await pilot.pause()
                    shown = time.perf_counter() - start
                    break
            await pilot.pause(0.005)
    app.store.close()
    return usable, shown


def workbench_figures(
    runs: int, tmp: Path
) -> tuple[list[float], list[float], list[float], list[float]]:
    from bench.bench_tui import generate
    from engine.store import Store

    workspace = tmp / "ws"
    big = tmp / "big.db"
    generate(big, workspace)
    empty_db = tmp / "empty.db"
    Store.open(empty_db).close()
    big_usable: list[float] = []
    big_shown: list[float] = []
    empty_usable: list[float] = []
    empty_shown: list[float] = []
    for _ in range(runs):
        u, s = asyncio.run(workbench_times(empty_db, workspace, None))
        empty_usable.append(u)
        empty_shown.append(s)
        u, s = asyncio.run(workbench_times(big, workspace, 1))
        big_usable.append(u)
        big_shown.append(s)
    return empty_usable, empty_shown, big_usable, big_shown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-workbench", action="store_true")
    parser.add_argument(
        "--help-only", action="store_true", help="only --help and an argument error"
    )
    parser.add_argument(
        "--budget-only", action="store_true", help="only the per-command budget rows"
    )
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        help="run the budget rows' commands from this checkout; twice (before, after): both "
        "side by side, interleaved against one baseline (default: this checkout)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count the budget rows' instructions under callgrind (needs valgrind)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as name:
        tmp = Path(name)
        codes = [c.resolve() for c in args.code or [ROOT]]
        print(
            f'median of {args.runs} runs; baseline `python -c "{BUDGET_BASELINE}"`, '
            f"compiled, interleaved; code: {', '.join(map(str, codes))}; {load()} at the start\n"
        )
        print(
            "| measure | code | time | baseline | ratio | CPU | baseline CPU | CPU ratio | target |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for label, code, cmd, base, cmd_cpu, base_cpu in budget_figures(args.runs, tmp, codes):
            print(
                f"| {label} | {code.name} | {cmd * 1000:.0f} ms | {base * 1000:.0f} ms "
                f"| {cmd / base:.2f}× | {cmd_cpu * 1000:.0f} ms | {base_cpu * 1000:.0f} ms "
                f"| {cmd_cpu / base_cpu:.2f}× | ≤ {BUDGET_TARGET:g}× |"
            )
        print(f"\n{load()} at the end\n")
        if args.instructions and shutil.which("valgrind"):
            print("instructions (callgrind, one run each, PYTHONHASHSEED=0)\n")
            print("| measure | code | instructions | baseline | ratio | target |")
            print("|---|---|---:|---:|---:|---:|")
            for label, code, count, base_count in instruction_figures(tmp, codes):
                print(
                    f"| {label} | {code.name} | {count / 1e6:,.0f} M | {base_count / 1e6:,.0f} M "
                    f"| {count / base_count:.2f}× | ≤ {BUDGET_TARGET:g}× |"
                )
            print()
        elif args.instructions:
            print("(--instructions: valgrind is not installed)\n")
        if args.budget_only:
            return 0
        print(f"median of {args.runs} runs; baseline `python -c pass` in a fresh interpreter\n")
        print("| measure | time | baseline | ratio | target |")
        print("|---|---:|---:|---:|---:|")
        for label, cmd, base in help_figures(args.runs, tmp):
            print(
                f"| {label} | {cmd * 1000:.0f} ms | {base * 1000:.0f} ms"
                f" | {cmd / base:.2f}× | ≤ {HELP_TARGET:g}× |"
            )
        print()
        if args.help_only:
            return 0
        print(f"median of {args.runs} runs; baseline `{BASELINE}` in a fresh interpreter\n")
        print("| measure | time | baseline | ratio | target |")
        print("|---|---:|---:|---:|---:|")
        for label, cmd, base in cli_figures(args.runs, tmp):
            print(
                f"| {label} | {cmd * 1000:.0f} ms | {base * 1000:.0f} ms"
                f" | {cmd / base:.2f}× | ≤ 1.5× |"
            )
        if args.no_workbench:
            return 0
        eu, es, bu, bs = workbench_figures(args.runs, tmp / "tui")
        for label, big, empty, target in (
            ("workbench: first usable frame, 10 000 messages vs empty", bu, eu, "≤ 1.5×"),
            ("workbench: session shown, 10 000 messages vs empty", bs, es, "—"),
        ):
            b, e = statistics.median(big), statistics.median(empty)
            print(f"| {label} | {b * 1000:.0f} ms | {e * 1000:.0f} ms | {b / e:.2f}× | {target} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
