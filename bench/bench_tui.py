"""Benchmark of the workbench on a long session (a script, not a timed test).

Generates a session of 10 000 history messages (2 000 rounds: user input, assistant step with
a tool call, compressed tool JSON, a second thought, the final answer; one usage record per
model call) in a temporary database, opens it in the app headless (``App.run_test``) at
120×40 and measures:

- time to first full render: from starting the app to the first frame that shows the whole
  session (chat, history with all 10 000 messages laid out, gauge), split into the worker
  (reading the store, building the agent, measuring the context) and the UI thread (laying
  out the panes);
- scrolling the history pane from top to bottom one page at a time, each page rendered
  (``pilot.pause()`` lets the compositor draw the frame), as total and per page;
- the cost of rendering every row of the history once (the Line API's ``render_line``).

Run from the repository root:

    python bench/bench_tui.py               # prints and updates the figures in docs/workbench.md
    python bench/bench_tui.py --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual import __version__ as TEXTUAL_VERSION  # noqa: E402

from engine.context.history import HistoryManager  # noqa: E402
from engine.llm.base import OFFLINE_NAME  # noqa: E402
from engine.llm.offline import OfflineProvider  # noqa: E402
from engine.models import Message, MessageMeta, RoundStatus, ToolCall, Usage, UsageRecord  # noqa: E402
from engine.settings.config import Settings  # noqa: E402
from engine.store import Store  # noqa: E402
from tui.app import CtxscopeApp  # noqa: E402
from tui.widgets.chat_view import ChatView  # noqa: E402
from tui.widgets.history_view import HistoryView  # noqa: E402

ROUNDS = 2_000
MESSAGES_PER_ROUND = 5
SIZE = (120, 40)
DOCS = ROOT / "docs" / "workbench.md"
START = "<!-- bench:start -->"
END = "<!-- bench:end -->"


def tool_json(n: int) -> str:
    lines = "\n".join(f"{i:>6}\tdef handler_{n}_{i}(request):  # line {i}" for i in range(1, 9))
    return json.dumps(
        {
            "status": "success",
            "data": {
                "file": f"src/module_{n % 97}.py",
                "lines": "1-8",
                "total_lines": 240,
                "content": lines,
            },
        },
        separators=(",", ":"),
    )


def generate(db_path: Path, workspace: Path) -> int:
    """Write the session in one transaction (the bench measures the UI, not the writes)."""
    store = Store.open(db_path)
    try:
        session = store.create_session(
            str(workspace), "bench: 10 000 messages", OFFLINE_NAME, "offline", "layered"
        )
        assert session.id is not None
        settings = Settings(model="offline", context_window=2_000_000, keep_rounds=10)
        manager = HistoryManager(store, session.id, settings)
        with store.db.atomic():
            for n in range(1, ROUNDS + 1):
                rnd, _ = manager.open_round(
                    f"Round {n}: look at src/module_{n % 97}.py and explain handler_{n}."
                )
                call = ToolCall(
                    id=f"toolu_{n}", name="Read", input={"file_path": f"src/module_{n % 97}.py"}
                )
                steps = [
                    Message(
                        role="assistant",
                        content=f"Thought: I need to read src/module_{n % 97}.py first.",
                        tool_calls=[call],
                        meta=MessageMeta(step=1),
                    ),
                    Message(
                        role="tool",
                        content=tool_json(n),
                        meta=MessageMeta(step=1, tool_name="Read", tool_use_id=call.id),
                    ),
                    Message(
                        role="assistant",
                        content="Thought: the handler validates the request and returns early.",
                        meta=MessageMeta(step=2),
                    ),
                    Message(
                        role="assistant",
                        content=(
                            f"handler_{n} checks the request, looks the user up and returns a "
                            "response; errors are logged and re-raised.\n\n- validation first\n"
                            "- one database query\n- no retries"
                        ),
                        meta=MessageMeta(step=3, final=True),
                    ),
                ]
                for msg in steps:
                    manager.append(rnd.index, msg)
                for step in (1, 2):
                    store.add_usage(
                        UsageRecord(
                            session_id=session.id,
                            round_index=rnd.index,
                            step=step,
                            usage=Usage(input_tokens=3_000 + 180 * n, output_tokens=60),
                            local_estimate=3_000 + 180 * n,
                        )
                    )
                manager.finish_round(rnd.index, RoundStatus.FINISHED)
        return session.id
    finally:
        store.close()


async def measure(db_path: Path, workspace: Path, session_id: int) -> dict[str, Any]:
    settings = Settings(model="offline", context_window=2_000_000, keep_rounds=10)
    timings: dict[str, float] = {}
    original_opened = _wrap_timing(timings)
    app = CtxscopeApp(
        db_path=db_path,
        workspace=workspace,
        settings=settings,
        resume=session_id,
        provider=OfflineProvider(settings),
    )
    started = time.perf_counter()
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main_screen
            assert screen is not None
            history = screen.query_one(HistoryView)
            while history.messages_shown() < ROUNDS * MESSAGES_PER_ROUND:
                await pilot.pause(0.005)
            await pilot.pause()  # the frame that shows it
            first_render = time.perf_counter() - started
            chat_blocks = len(screen.query_one(ChatView).blocks)
            widgets = len(list(app.query("*")))

            history.focus()
            history.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            pages = 0
            limit = history.row_count  # a page moves at least one row
            scroll_started = time.perf_counter()
            cpu_started = time.process_time()
            while history.scroll_y < history.max_scroll_y and pages < limit:
                # What PageDown does; pause() lets the screen draw the new frame.
                history.scroll_page_down(animate=False)
                await pilot.pause()
                pages += 1
            scroll_total = time.perf_counter() - scroll_started
            scroll_cpu = time.process_time() - cpu_started
            reached_end = history.scroll_y == history.max_scroll_y

            width = history.scrollable_content_region.width
            render_started = time.perf_counter()
            for row in range(history.row_count):
                index = history.block_at_row(row)
                assert index is not None
                history._render_row(index, row - history._starts[index], width, False)  # noqa: SLF001
            render_all = time.perf_counter() - render_started
            rows = history.row_count
    finally:
        _unwrap_timing(original_opened)
    return {
        "first_render_s": first_render,
        "worker_s": timings.get("worker", 0.0),
        "ui_apply_s": timings.get("apply", 0.0),
        "pages": pages,
        "scroll_total_s": scroll_total,
        "scroll_per_page_ms": 1000 * scroll_total / max(1, pages),
        "scroll_cpu_per_page_ms": 1000 * scroll_cpu / max(1, pages),
        "reached_end": reached_end,
        "rows": rows,
        "render_all_s": render_all,
        "render_row_us": 1e6 * render_all / max(1, rows),
        "chat_blocks": chat_blocks,
        "widgets": widgets,
    }


def _wrap_timing(timings: dict[str, float]) -> tuple[Any, Any]:
    """Time the open worker and the UI-thread apply step by wrapping them (bench only)."""
    from tui.screens.main_workers import SessionWorkers

    original = (SessionWorkers._opened, CtxscopeApp.open_session)  # noqa: SLF001

    def opened(self: Any, result: Any) -> None:
        t = time.perf_counter()
        original[0](self, result)
        timings["apply"] = time.perf_counter() - t

    def open_session(self: Any, *args: Any) -> Any:
        t = time.perf_counter()
        result = original[1](self, *args)
        timings["worker"] = time.perf_counter() - t
        return result

    SessionWorkers._opened = opened  # type: ignore[method-assign]  # noqa: SLF001
    CtxscopeApp.open_session = open_session  # type: ignore[method-assign]
    return original


def _unwrap_timing(original: tuple[Any, Any]) -> None:
    from tui.screens.main_workers import SessionWorkers

    SessionWorkers._opened = original[0]  # type: ignore[method-assign]  # noqa: SLF001
    CtxscopeApp.open_session = original[1]  # type: ignore[method-assign]


def report(r: dict[str, Any], generate_s: float) -> str:
    messages = ROUNDS * MESSAGES_PER_ROUND
    return "\n".join(
        [
            f"Session: {messages:,} history messages ({ROUNDS:,} rounds), "
            f"{r['rows']:,} history rows at 120×40; generated in {generate_s:.1f} s.",
            f"Machine: {platform.python_implementation()} {platform.python_version()}, "
            f"Textual {TEXTUAL_VERSION}, {platform.system()} {platform.machine()}.",
            "",
            "| measure | result |",
            "|---|---|",
            f"| time to first full render (app start → frame showing the session) "
            f"| {r['first_render_s']:.2f} s |",
            f"| · of which the open worker (store, agent, context preview) "
            f"| {r['worker_s']:.2f} s |",
            f"| · of which the UI thread laying out chat + history + gauge "
            f"| {1000 * r['ui_apply_s']:.0f} ms |",
            f"| scroll history top → bottom, {r['pages']:,} pages, each frame drawn "
            f"(wall time, with Pilot's idle waits) "
            f"| {r['scroll_total_s']:.1f} s ({r['scroll_per_page_ms']:.1f} ms/page) |",
            f"| · CPU time per page (scroll, compose and render a 120×40 frame) "
            f"| {r['scroll_cpu_per_page_ms']:.1f} ms |",
            f"| render every history row once ({r['rows']:,} rows) "
            f"| {1000 * r['render_all_s']:.0f} ms ({r['render_row_us']:.1f} µs/row) |",
            f"| widgets mounted on the main screen | {r['widgets']} "
            f"(chat holds {r['chat_blocks']:,} blocks, history {messages:,} messages) |",
        ]
    )


def write_docs(text: str) -> None:
    doc = DOCS.read_text(encoding="utf-8")
    if START not in doc or END not in doc:
        raise SystemExit(f"{DOCS} has no {START} … {END} section to update")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="do not update docs/workbench.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        db_path = root / "bench.db"
        t = time.perf_counter()
        session_id = generate(db_path, workspace)
        generate_s = time.perf_counter() - t
        result = asyncio.run(measure(db_path, workspace, session_id))
    if not result["reached_end"]:
        raise SystemExit("the history did not scroll to its end")
    text = report(result, generate_s)
    print(text)
    if not args.no_write:
        write_docs(text)
        print(f"\n(written to {DOCS.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
