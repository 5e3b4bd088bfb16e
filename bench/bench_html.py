"""Benchmark: a 4 MB session's HTML page, made and opened in headless Chromium (a script).

The session is a Claude Code recording of just over 4 MB (4,000,000 bytes): the corpus's
marot (2.76 MB, one recorded compaction) followed by the start of a second copy of it hung
under the first (bench_follow_parse.longer: its ids made its own), so one conversation of 13
rounds; the second copy's compaction lies past the 4 MB cut.

It is imported, then written with ``ctxscope export ID --format html`` (timed: the page's
making), then opened in Debian's ``chromium`` over the DevTools protocol (aiohttp's
websocket): ``Page.navigate`` to the file until ``Page.loadEventFired`` (wall time), the
page's own navigation timing (``loadEventEnd``), and until a screenshot of its first screen is
captured (the page drawn); median of five opens in one browser, each after ``about:blank``.
Target (issue 41): under 2 s.

    python bench/bench_html.py            # prints, and rewrites docs/benchmarks.md (#html-pages)
    python bench/bench_html.py --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from bench_follow_parse import longer  # noqa: E402
from doc_section import write_section  # noqa: E402

from cli.main import main  # noqa: E402

DOC = ROOT / "docs/benchmarks.md"
BEGIN, END = "<!-- html-page:begin -->", "<!-- html-page:end -->"
SIZE = 4_000_000
OPENS = 5
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def recording(path: Path) -> int:
    """Just over :data:`SIZE` bytes of two marot copies as one conversation; its size."""
    out, size = [], 0
    for line in longer(2):
        out.append(line)
        size += len(line.encode()) + 1
        if size >= SIZE:
            break
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path.stat().st_size


class Browser:
    """One headless chromium, driven over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        binary = os.environ.get("CTXSCOPE_CHROMIUM") or shutil.which("chromium")
        if not binary:
            raise SystemExit("no chromium: apt-get install chromium")
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline:
                raise SystemExit("chromium did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        self.next_id = 0

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)

    async def opens(self, url: str, times: int) -> list[dict[str, float]]:
        async with aiohttp.ClientSession() as http:
            async with http.put(f"http://127.0.0.1:{self.port}/json/new?about:blank") as r:
                target = await r.json()
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                await self._call(ws, "Page.enable")
                out = []
                for _ in range(times):
                    await self._navigate(ws, "about:blank")
                    start = time.perf_counter()
                    await self._navigate(ws, url)
                    wall = time.perf_counter() - start
                    timing = await self._value(
                        ws,
                        "JSON.stringify({nav: performance.getEntriesByType('navigation')[0]})",
                    )
                    data = json.loads(timing)
                    await self._call(ws, "Page.captureScreenshot", format="png")
                    drawn = time.perf_counter() - start
                    out.append(
                        {"wall": wall, "load": data["nav"]["loadEventEnd"] / 1000, "drawn": drawn}
                    )
                return out

    async def _call(self, ws: Any, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        me = self.next_id
        await ws.send_json({"id": me, "method": method, "params": params})
        while True:
            msg = json.loads((await ws.receive()).data)
            if msg.get("id") == me:
                return dict(msg.get("result") or {})

    async def _navigate(self, ws: Any, url: str) -> None:
        self.next_id += 1
        me = self.next_id
        await ws.send_json({"id": me, "method": "Page.navigate", "params": {"url": url}})
        while True:
            msg = json.loads((await ws.receive()).data)
            if msg.get("method") == "Page.loadEventFired":
                return

    async def _value(self, ws: Any, expression: str) -> str:
        # The DevTools protocol evaluates in the page as the browser's owner; the page's own
        # policy (no script) does not apply to it.
        result = await self._call(ws, "Runtime.evaluate", expression=expression)
        return str(result["result"]["value"])


def run() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        src, db, page = folder / "big.jsonl", folder / "big.db", folder / "big.html"
        size = recording(src)
        assert main(["import", str(src), "--db", str(db)]) == 0
        start = time.perf_counter()
        assert main(["export", "1", "--db", str(db), "--format", "html", "-o", str(page)]) == 0
        made = time.perf_counter() - start
        browser = Browser(folder / "profile")
        try:
            opens = asyncio.run(browser.opens(page.as_uri(), OPENS))
        finally:
            browser.close()
        page_size = page.stat().st_size
    wall = statistics.median(o["wall"] for o in opens)
    load = statistics.median(o["load"] for o in opens)
    drawn = statistics.median(o["drawn"] for o in opens)
    version = subprocess.run(
        [shutil.which("chromium") or "chromium", "--version"], capture_output=True, text=True
    ).stdout.strip()
    return "\n".join(
        [
            f"A {size / 1e6:.2f} MB Claude Code recording (marot and the start of a second "
            f"copy) → a {page_size / 1e6:.2f} MB page, made by `export "
            f"--format html` in {made:.2f} s; opened in {version}, headless, {OPENS} times "
            f"(median; {platform.machine()}, {os.cpu_count()} cores, load "
            f"{os.getloadavg()[0]:.1f}):",
            "",
            "| measure | median |",
            "|---|---:|",
            f"| navigate → `load` event (wall) | {wall:.2f} s |",
            f"| the page's `loadEventEnd` | {load:.2f} s |",
            f"| navigate → its first screen captured (drawn) | {drawn:.2f} s |",
        ]
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    text = run()
    print(text)
    if not args.no_write:
        write_section(DOC, BEGIN, END, text)


if __name__ == "__main__":
    cli()
