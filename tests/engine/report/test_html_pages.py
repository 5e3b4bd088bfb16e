"""``export --format html`` and ``report --html`` opened in a real browser (headless Chromium):
the page renders, its chart is drawn, and what a recording says stays text (no script runs).

The hostile session is written here as ``anthropic-jsonl`` lines: its first user message (the
session's title too) holds a ``<script>`` that would set the document's title, an ``<img>``
whose ``onerror`` would, a terminal escape sequence (SGR red, an OSC title set ended by BEL),
and a tool result and a compaction summary that try to close the page's own elements.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.report.html import page
from tests.browser import dump_dom, screenshot
from tests.cli_run import run_main as run

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.title='pwned2'\">"
ESCAPES = "\x1b[31mred\x1b[0m \x1b]0;evil-title\x07"
USAGE = {"input_tokens": 10, "cache_read_input_tokens": 1_000, "output_tokens": 50}


def _hostile(path: Path) -> None:
    lines = [
        {"role": "user", "content": f"{SCRIPT} fix {ESCAPES} {IMG}"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}},
            ],
            "usage": USAGE,
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "</pre></div><script>document.title='pwned3'</script>",
                }
            ],
        },
        {"role": "assistant", "content": "done", "usage": {**USAGE, "input_tokens": 20}},
        {
            "role": "user",
            "content": "Summary </details><script>document.title='pwned4'</script>",
            "compact_summary": True,
        },
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok", "usage": {**USAGE, "input_tokens": 5}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def hostile_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    src, db, out = tmp_path / "h.jsonl", tmp_path / "h.db", tmp_path / "h.html"
    _hostile(src)
    assert run(capsys, "import", str(src), "--db", str(db))[0] == 0
    code, _, err = run(capsys, "export", "1", "--db", str(db), "--format", "html", "-o", str(out))
    assert code == 0, err
    return out


def _title(dom: str) -> str:
    found = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert found is not None
    return found.group(1)


def test_the_page_renders_its_chart_and_nothing_of_the_recording_runs(
    hostile_page: Path, tmp_path: Path
) -> None:
    """The title the page was written with is the one the browser ends with (each script
    would have changed it); the DOM has no script or img element, only their text; the
    escape sequences are shown as ``\\x1b`` text and the file holds no ESC or BEL byte; the
    chart is an svg with the context line (3 recorded calls) and the compaction's mark."""
    raw = hostile_page.read_text(encoding="utf-8")
    assert "\x1b" not in raw and "\x07" not in raw
    dom = dump_dom(hostile_page, tmp_path / "profile")
    # The importer's title is "import: " and the message's start, cut; as text, escaped.
    assert _title(dom) == (
        "Session 1: import: &lt;script&gt;document.title='pwned'&lt;/script&gt; fix "
        "\\x1b[31mred\\x1b[0m \\x1b]0"
    )
    assert re.search(r"<script\b", dom, re.I) is None
    assert re.search(r"<img\b", dom, re.I) is None
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=\"document.title='pwned2'\"&gt;" in dom
    assert "&lt;script&gt;document.title='pwned3'&lt;/script&gt;" in dom
    assert "&lt;script&gt;document.title='pwned4'&lt;/script&gt;" in dom
    assert "\\x1b[31mred\\x1b[0m" in dom and "\\x1b]0;evil-title\\x07" in dom
    svg = re.search(r"<svg\b.*?</svg>", dom, re.S)
    assert svg is not None
    (points,) = re.findall(r'<polyline class="context" points="([^"]+)"', svg.group(0))
    assert len(points.split()) == 3
    assert svg.group(0).count('class="compaction-mark"') == 1


def test_the_content_security_policy_alone_stops_a_script(tmp_path: Path) -> None:
    """The second wall: a page whose body holds a live ``<script>`` and an ``<img onerror>``
    (as if escaping had failed) keeps its title, because its policy allows no script."""
    out = tmp_path / "raw.html"
    out.write_text(page("kept", ["<script>document.title='pwned'</script>", IMG]), encoding="utf-8")
    dom = dump_dom(out, tmp_path / "profile")
    assert _title(dom) == "kept"


def test_the_page_is_drawn(hostile_page: Path, tmp_path: Path) -> None:
    """A screenshot is made: a PNG of the asked size (its header says 1200 x 900)."""
    png = tmp_path / "shot.png"
    screenshot(hostile_page, tmp_path / "profile", png, "1200,900")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (1200, 900)


def test_report_html_renders_with_its_chart(
    hostile_page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --html`` of the same store: the report's title, its per-day bar chart (the
    three calls are on one day: one bar), and the session's title as text."""
    out = tmp_path / "r.html"
    code, _, err = run(capsys, "report", "--db", str(tmp_path / "h.db"), "--html", "-o", str(out))
    assert code == 0, err
    dom = dump_dom(out, tmp_path / "profile")
    assert _title(dom) == "ctxscope report: 1 sessions"
    assert re.search(r"<script\b", dom, re.I) is None
    assert dom.count('<rect class="bar"') == 1
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom
