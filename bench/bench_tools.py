"""Benchmark of the file tools against the shell commands they replace (a script, not a test).

Generates a tree of 10 000 source-like files (~100 MB) plus one 5 MB file in a temporary
directory, then times, in one run, each tool call through the registry (what the agent pays)
next to the matching shell command run through ``subprocess`` (output captured, as the agent
would capture it):

- Grep, content mode, a rare and a common pattern: the ripgrep engine, the pure-Python
  fallback, ``rg -n`` and ``grep -rn``;
- Read of 500 lines in the middle of the 5 MB file vs ``sed -n 'a,bp'``;
- Glob ``**/*.py`` over the 10 000 files vs ``find -name '*.py'``.

Each figure is the median of several runs after one warm-up (the page cache is warm for
everyone). Run from the repository root:

    python bench/bench_tools.py              # prints the table
    python bench/bench_tools.py --write      # and puts it into docs/tools.md
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.settings.config import Settings  # noqa: E402
from tools.base import ToolContext, ToolResult  # noqa: E402
from tools.grep import GrepInput, GrepTool, find_rg  # noqa: E402
from tools.registry import default_registry  # noqa: E402

DIRS = 100
FILES_PER_DIR = 100
FILE_BYTES = 10_000
BIG_FILE_BYTES = 5_000_000
REPEATS = 5
DOC = ROOT / "docs" / "tools.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"

WORDS = (
    "session token context budget history summary round step tool result path line error "
    "value config parser request response handler cache layer model message index buffer"
).split()
TEMPLATES = [
    "def {a}_{b}(self, {c}: int) -> str:",
    "    return self._{a}[{c}] + {n}",
    "    if {c} is None:",
    '        raise ValueError("{a} {b} missing")',
    "    # {a} {b} {c}: keep the {a} in sync with the {b}",
    "    {a} = {b}.{c}({n})",
    "class {A}{B}:",
    '    """The {a} of a {b}."""',
]


def make_tree(root: Path) -> tuple[int, int]:
    """Write the tree; return (files, bytes)."""
    rng = random.Random(2024)
    lines = []
    for _ in range(4000):
        a, b, c = rng.sample(WORDS, 3)
        line = rng.choice(TEMPLATES).format(
            a=a, b=b, c=c, A=a.title(), B=b.title(), n=rng.randint(0, 999)
        )
        lines.append(line + "\n")
    total = 0
    count = 0
    for d in range(DIRS):
        folder = root / f"pkg_{d:03}" / ("sub" if d % 2 else "core")
        folder.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            start = (d * FILES_PER_DIR + f) * 7 % 3000
            body: list[str] = []
            size = 0
            i = start
            while size < FILE_BYTES:
                body.append(lines[i % len(lines)])
                size += len(lines[i % len(lines)])
                i += 1
            if (d * FILES_PER_DIR + f) % 500 == 0:
                body.insert(len(body) // 2, "    needle_marker = 'rare needle'\n")
            text = "".join(body)
            suffix = ".py" if f % 4 else ".txt"
            (folder / f"mod_{f:03}{suffix}").write_text(text)
            total += len(text)
            count += 1
    big = root / "data" / "big.log"
    big.parent.mkdir()
    with big.open("w") as handle:
        size, n = 0, 0
        while size < BIG_FILE_BYTES:
            line = f"{n:08d} {lines[n % len(lines)]}"
            handle.write(line)
            size += len(line)
            n += 1
    return count + 1, total + size


def timed(fn: Callable[[], object]) -> float:
    """Median milliseconds of ``REPEATS`` runs after one warm-up."""
    fn()
    runs = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)


def shell(cmd: list[str], cwd: Path) -> Callable[[], object]:
    def run() -> object:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="update docs/tools.md")
    args = parser.parse_args()

    rg = find_rg()
    grep = shutil.which("grep")
    find = shutil.which("find")
    sed = shutil.which("sed")
    assert rg and grep and find and sed, "rg, grep, find and sed are needed"

    with tempfile.TemporaryDirectory(prefix="ctxscope-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        files, size = make_tree(root)
        generated = time.perf_counter() - started
        ctx = ToolContext(workspace=root, settings=Settings())
        registry = default_registry()

        def tool(name: str, **arguments: object) -> Callable[[], ToolResult]:
            def run() -> ToolResult:
                result = registry.run(name, dict(arguments), ctx)
                assert result.ok, result.text
                return result

            return run

        def grep_engine(engine: str, pattern: str) -> Callable[[], ToolResult]:
            tool_ = GrepTool(engine=engine)  # type: ignore[arg-type]

            def run() -> ToolResult:
                return tool_.run(GrepInput(pattern=pattern), ctx)

            return run

        rows: list[tuple[str, str, float, str, float]] = []
        checks: list[str] = []
        for label, pattern in (("rare", "rare needle"), ("common", r"raise ValueError")):
            ours = grep_engine("rg", pattern)()
            fallback = grep_engine("python", pattern)()
            assert ours.data == fallback.data
            checks.append(
                f"Grep {label}: {ours.data['total_matches']} matching lines in "
                f"{ours.data['files_matched']} files (both engines agree)"
            )
            rg_ms = timed(shell([rg, "-n", pattern, "."], root))
            rows.append(
                (
                    f"Grep `{pattern}` (rg engine)",
                    "",
                    timed(grep_engine("rg", pattern)),
                    "`rg -n`",
                    rg_ms,
                )
            )
            rows.append(
                (
                    f"Grep `{pattern}` (Python fallback)",
                    "",
                    timed(grep_engine("python", pattern)),
                    "`grep -rn`",
                    timed(shell([grep, "-rn", pattern, "."], root)),
                )
            )
        middle = 30_000
        read = tool("Read", file_path="data/big.log", offset=middle, limit=500)
        assert read().data["end_line"] == middle + 499
        rows.append(
            (
                "Read 500 lines at line 30 000 of 5 MB",
                "",
                timed(read),
                "`sed -n 'a,bp'`",
                timed(shell([sed, "-n", f"{middle},{middle + 499}p", "data/big.log"], root)),
            )
        )
        glob = tool("Glob", pattern="**/*.py")
        found = glob().data["total"]
        listed = subprocess.run(
            [find, ".", "-name", "*.py"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.count("\n")
        assert found == listed, (found, listed)
        checks.append(f"Glob **/*.py: {found} files (find agrees)")
        rows.append(
            (
                "Glob `**/*.py` over 10 000 files",
                "",
                timed(glob),
                "`find -name '*.py'`",
                timed(shell([find, ".", "-name", "*.py"], root)),
            )
        )

    table = render(rows, files, size, generated, checks)
    print(table)
    if args.write:
        write_doc(table)
        print(f"\nwritten to {DOC.relative_to(ROOT)}")


def render(
    rows: list[tuple[str, str, float, str, float]],
    files: int,
    size: int,
    generated: float,
    checks: list[str],
) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    head = [
        f"Tree: {files:,} files, {size / 1e6:.0f} MB, generated in {generated:.1f} s. "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {load:.2f}. Median of {REPEATS} runs, warm cache.",
        "",
        "| operation | ctxscope tool | shell command | shell | ratio (tool / shell) |",
        "|---|---:|---|---:|---:|",
    ]
    body = [
        f"| {op} | {ours:.1f} ms | {cmd} | {theirs:.1f} ms | {ours / theirs:.2f}× |"
        for op, _, ours, cmd, theirs in rows
    ]
    return "\n".join(head + body + [""] + [f"- {c}" for c in checks])


def write_doc(table: str) -> None:
    text = DOC.read_text()
    block = f"{START}\n{table}\n{END}"
    if START in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)


if __name__ == "__main__":
    main()
