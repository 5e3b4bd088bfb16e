"""Summary fidelity: of each archived segment's ledger items, how many its summary keeps.

Two corpora, both offline (the summaries are the extractive A5 ones, as with no API key):

- **long**: 42 offline ``ctxscope ask`` rounds under a 30 000-token window in a scratch copy
  of a few of this project's files: large Reads, ls / glob / grep, failing commands (a Python
  exception, a missing file, pytest-style output past 2 000 characters), edits made through
  Bash (``sed -i``, ``>>``, ``tee``, ``mv``, ``cp``, ``rm``) and requests carrying IDE markup.
  Compaction fires several times on its own;
- **recorded**: ``tests/data/recorded_session.jsonl`` (a short Claude-style recording) and
  ``tests/data/ide_session.jsonl`` (a hand-made IDE-agent recording: ``<ide_opened_file>`` and
  ``<command-message>`` markup, Reads the requests do not name, edits through ``sed -i``, ``>``,
  ``>>``, ``git mv``, ``rm``, errors in ``<returncode>``/``<output>`` wrappers, one exception
  past 2 000 characters), and any JSONL files given on the command line, imported and
  compacted by hand with ``keep_rounds`` = 1.

For every kind of :mod:`engine.compaction.ledger` the figure is kept / total over all compactions,
and
"files" is read and changed together. The size is summary tokens / archived segment tokens.
With ``--strategies`` the long session is also run under every other compaction strategy
(their summaries are XML tags, JSON or structured text; ``masking`` never summarises). Run
from the repository root:

    .venv/bin/python bench/bench_fidelity.py [--strategies] [more.jsonl ...]
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.main import main as cli  # noqa: E402
from engine.compaction.ledger import FILE_KINDS, KINDS, fidelity  # noqa: E402
from engine.compaction.strategies import STRATEGIES  # noqa: E402
from engine.store import Store  # noqa: E402

FILES = [
    "engine/session.py",
    "engine/store/archive.py",
    "engine/context/builder.py",
    "engine/context/history.py",
    "cli/main.py",
    "engine/compaction/summary.py",
    "engine/recordings/importing.py",
    "engine/messages/tokens.py",
]
IDE = (
    "<ide_opened_file>The user opened the file {path} in the IDE. This may or may not be "
    "related to the current task.</ide_opened_file>\n"
)
BIG_FAILURE = (
    "python -c \"import sys; [print('collecting test_%03d ' % n + '.' * 50) for n in range(60)]; "
    "print('E   AssertionError: expected 0.5, got 1.0', file=sys.stderr); sys.exit(1)\""
)
EXTRA = [
    "run `python -c \"import json; json.loads('{bad')\"`",
    "run `sed -i 's/TODO/DONE/' notes.txt`",
    IDE.format(path="engine/messages/tokens.py") + "grep count_text in engine",
    "run `cat missing.txt`",
    "run `echo done >> notes.txt && cp notes.txt notes.bak`",
    "run `" + BIG_FAILURE + "`",
    "run `mv notes.bak archive.txt && rm -f archive.txt`",
    "run `ls | tee listing.txt`",
]
OTHER = ["ls engine", "glob **/*.py", "grep def ", "read README.md"]
SAMPLES = [ROOT / "tests/data/recorded_session.jsonl", ROOT / "tests/data/ide_session.jsonl"]


def long_session(tmp: Path, strategy: str = "layered") -> tuple[Path, int]:
    work = tmp / f"work-{strategy}"
    for rel in [*FILES, "README.md"]:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, work / rel)
    (work / "notes.txt").write_text("TODO one\nTODO two\n")
    db = tmp / f"long-{strategy}.db"
    os.environ["CTXSCOPE_CONTEXT_WINDOW"] = "30000"
    os.environ.pop("ANTHROPIC_API_KEY", None)
    session_id = None
    for i in range(42):
        if i % 5 == 4:
            text = EXTRA[(i // 5) % len(EXTRA)]
        elif i % 3:
            text = f"read {FILES[i % len(FILES)]}"
        else:
            text = OTHER[(i // 3) % len(OTHER)]
        argv = ["ask", text, "--workspace", str(work), "--db", str(db), "--json", "--allow-bash"]
        if session_id is not None:
            argv += ["--session", str(session_id)]
        else:
            argv += ["--strategy", strategy]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert cli(argv) == 0, text
        session_id = json.loads(out.getvalue().splitlines()[-1])["session_id"]
    os.environ.pop("CTXSCOPE_CONTEXT_WINDOW")
    assert session_id is not None
    return db, session_id


def recorded_session(tmp: Path, path: Path) -> tuple[Path, int]:
    db = tmp / f"{path.stem}.db"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli(["import", str(path), "--db", str(db), "--json"]) == 0
    session_id = json.loads(out.getvalue())["session_id"]
    os.environ["CTXSCOPE_KEEP_ROUNDS"] = "1"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["compact", str(session_id), "--db", str(db), "--json"]) == 0
    os.environ.pop("CTXSCOPE_KEEP_ROUNDS")
    return db, session_id


def measure(db: Path, session_id: int) -> tuple[dict[str, list[int]], int, int, int]:
    """Per kind [kept, total] over the session's compactions, summary and segment tokens."""
    store = Store.open(db)
    totals = {kind: [0, 0] for kind in KINDS}
    summary_tokens = segment_tokens = count = 0
    observations = store.observations(session_id)
    for seg in store.segments(session_id):
        if seg.summary_id is None:
            continue
        summary = store.summary(seg.summary_id)
        for kind, (kept, total) in fidelity(seg.messages, observations, summary.content).items():
            totals[kind][0] += kept
            totals[kind][1] += total
        summary_tokens += summary.tokens or 0
        segment_tokens += seg.tokens
        count += 1
    store.close()
    return totals, summary_tokens, segment_tokens, count


def pct(kept: int, total: int) -> str:
    return f"{100 * kept / total:.0f} % ({kept}/{total})" if total else "–"


def report(name: str, figures: tuple[dict[str, list[int]], int, int, int]) -> list[str]:
    totals, summary_tokens, segment_tokens, count = figures
    files = [sum(totals[k][0] for k in FILE_KINDS), sum(totals[k][1] for k in FILE_KINDS)]
    cells = [pct(*files)] + [pct(*totals[k]) for k in KINDS]
    size = f"{100 * summary_tokens / segment_tokens:.1f} %" if segment_tokens else "–"
    row = f"| {name} ({count} compactions) | " + " | ".join(cells)
    return [f"{row} | {size} of {segment_tokens:,} tokens |"]


def main() -> int:
    every = "--strategies" in sys.argv[1:]
    extra = [Path(p) for p in sys.argv[1:] if p != "--strategies"]
    header = "| corpus | files | " + " | ".join(k.replace("_", " ") for k in KINDS) + " | size |"
    lines = [header, "|" + "---|" * (len(KINDS) + 3)]
    with tempfile.TemporaryDirectory() as tmp:
        lines += report("long offline session", measure(*long_session(Path(tmp))))
        for path in [*SAMPLES, *extra]:
            lines += report(path.name, measure(*recorded_session(Path(tmp), path)))
        for name in [s for s in STRATEGIES if s != "layered"] if every else []:
            figures = measure(*long_session(Path(tmp), name))
            lines += report(f"long offline session, {name}", figures)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
