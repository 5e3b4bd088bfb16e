"""Benchmark of ``ctxscope proxy`` (a script, not a timed test).

A local upstream (aiohttp, in this process) answers every ``POST /v1/messages`` after 20 ms:
a JSON message, or a server-sent event stream whose first event leaves after the 20 ms and
the rest at once. The same requests go to it directly and through ``ctxscope proxy`` (a
subprocess with its default settings, recording into a temporary database), alternately, on
one kept-alive connection each (http.client):

- **round trip**: a non-streamed request of a small body (a one-line question), then of a
  large one (a ~150k-token conversation, 600 KB), median over ``--requests`` each;
  the target: through the proxy ≤ 1.1× direct.
- **8 concurrent clients**: eight kept-alive connections each sending the small body at
  once, ``--rounds`` rounds each way: direct, through this proxy and through the proxy of
  each ``--compare-root`` checkout (a before, in the same run) and through the bare
  forwarders of ``bench/proxy_floors.py`` (``--floor``: aiohttp's, and one on asyncio
  Protocols, the floors), in a new random order every
  round, each round started once the recorders are idle; the median of every request's time
  each way, the ratio's spread over 5 runs of rounds, and the CPU per request of each
  process (clients, upstream, proxy, recorder: ``/proc/PID/task/*/schedstat``); the
  target: through the proxy ≤ 1.1× direct.
- **one huge body**: a 450 MB request (Content-Length, then chunked), each to a fresh
  proxy, which refuses a body over 32 MiB (413) without forwarding or holding it; the peak
  resident memory (``VmHWM``) of the proxy, before and after, and of its recorder, against
  the 500 MB bound.
- **first event**: a streamed request, from sending to reading the first event's bytes;
  the target: ≤ 5 ms added at the median.
- **steering on**: the same round trips through a second proxy started with ``--steer all``,
  in the same run, with a third body: a conversation of tool calls whose last result repeats
  an earlier one, so that ``dups`` rewrites it (and the request is written again) every time;
  the target: ≤ 1.1× direct.
- **memory and storage**: a conversation growing by one exchange a request (about 620 bytes
  of new messages each) over ``--growing`` requests (1,000: the last is about 620 KB, some
  150k tokens); the proxy's resident memory (``/proc/PID/status``) after the first tenth and
  at the end, and the database's growth per request from the first tenth to the half and
  from the half to the end: flat if a request stores what is new in it, not its size.

    python bench/bench_proxy.py              # prints, and rewrites docs/benchmarks.md (#proxy)
    python bench/bench_proxy.py --requests 50 --growing 300 --no-write
    python bench/bench_proxy.py --clients-only --compare-root /tmp/before   # 8 clients
    python bench/bench_proxy.py --huge-only                                  # 450 MB bodies

A before for ``--compare-root``: ``mkdir /tmp/before && git archive main | tar -x -C
/tmp/before`` (its proxy runs with this checkout's Python and packages).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import platform
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
START = "<!-- proxy-bench:start -->"
END = "<!-- proxy-bench:end -->"
UPSTREAM_DELAY = 0.020
DELAY = UPSTREAM_DELAY
WARM_UP = 10
"""Requests each way not timed: the first connections, the proxy's first imports."""
GROWING_TEXT = 300
"""Bytes of text in each message of the growing conversation."""

MESSAGE = {
    "id": "msg_bench",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Done."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 3},
}


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


STREAM_REST = [
    sse(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    sse(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ),
    sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2},
        },
    ),
    sse("message_stop", {"type": "message_stop"}),
]


async def answer(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    await asyncio.sleep(DELAY)
    if not body.get("stream"):
        return web.json_response(MESSAGE)
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    start = {**MESSAGE, "content": [], "stop_reason": None}
    await response.write(sse("message_start", {"type": "message_start", "message": start}))
    for piece in STREAM_REST:
        await response.write(piece)
    await response.write_eof()
    return response


def serve_upstream() -> None:
    """``--upstream``: serve the fake upstream in this process; print its port, then run
    until stdin ends (the benchmark's process is gone)."""

    async def main() -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(int(runner.addresses[0][1]), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)

    asyncio.run(main())


def start_upstream() -> tuple[subprocess.Popen[str], int]:
    """The upstream in a process of its own (its CPU apart from the clients', and no
    interpreter lock shared with them); the process and its port."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--upstream", "--delay", str(DELAY)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


FLOORS = {
    "aiohttp": "a bare aiohttp forwarder: the floor before",
    "lean": "a lean aiohttp forwarder",
    "lean-stream": "a lean aiohttp forwarder, answers streamed",
    "protocol": "a bare forwarder on asyncio Protocols: the floor now",
}
"""The forwarders of ``bench/proxy_floors.py`` measured beside the proxy (``--floor``): the
least an aiohttp server and client can do (the proxy's floor until issue 44's third pass),
and the least a forwarder on asyncio Protocols can (the proxy's floor since)."""
DEFAULT_FLOORS = ["aiohttp", "protocol"]


def start_floor(kind: str, upstream: int) -> Side:
    """A forwarder of ``bench/proxy_floors.py`` as a side of the 8-client rounds."""
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("proxy_floors.py")), kind, str(upstream)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    found = re.search(r"127\.0\.0\.1:(\d+)", process.stderr.readline())
    if not found:
        raise SystemExit(f"the {kind} forwarder did not start")
    return Side(f" ({FLOORS[kind]})", int(found.group(1)), process.pid, False)


PROXY_ROOT = ROOT
"""The checkout whose ``ctxscope proxy`` is measured (``--proxy-root``)."""


def start_proxy(upstream: int, db: Path, *options: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(PROXY_ROOT)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "proxy",
            "--db",
            str(db),
            "--port",
            "0",
            "--upstream",
            f"http://127.0.0.1:{upstream}",
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=PROXY_ROOT,
    )
    assert process.stderr is not None
    banner = process.stderr.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)", banner)
    if not found:
        raise SystemExit(f"the proxy did not start: {banner}")
    return process, int(found.group(1))


TOOLS = [
    {
        "name": "Read",
        "description": "Reads a file from the local filesystem.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
    }
]
"""Every body has tools, as an agent's do (steering passes calls without tools as they came)."""


def body_of(messages: list[dict[str, Any]], stream: bool = False) -> bytes:
    return json.dumps(
        {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "tools": TOOLS,
            "messages": messages,
            "stream": stream,
        }
    ).encode()


def tool_conversation(calls: int, text_bytes: int = 2000) -> list[dict[str, Any]]:
    """A task, then ``calls`` file reads with their results (each about ``text_bytes``), the
    last repeating the first's result: what the ``dups`` rule rewrites."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the parser"}]
    for i in range(calls):
        text = (
            ("line of file 0 " * (text_bytes // 15))
            if i in (0, calls - 1)
            else (f"line of file {i} " * (text_bytes // 15))
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Read",
                     "input": {"file_path": f"f{i}.py"}}
                ],
            }
        )  # fmt: skip
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:04d}",
                             "content": text}],
            }
        )  # fmt: skip
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return messages


def conversation(turns: int, tag: str, text_bytes: int = 1000) -> list[dict[str, Any]]:
    """``turns`` user/assistant pairs of about ``2 * text_bytes`` bytes, then a question;
    conversations of different ``tag`` share no message."""
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"{tag} step {i}: " + "x" * text_bytes})
        messages.append({"role": "assistant", "content": f"{tag} done {i}: " + "y" * text_bytes})
    messages.append({"role": "user", "content": "and now?"})
    return messages


class Client:
    """One kept-alive connection."""

    def __init__(self, port: int) -> None:
        self.con = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.port = port

    def round_trip(self, body: bytes) -> float:
        started = time.perf_counter()
        self.con.request("POST", "/v1/messages", body=body, headers=self._headers())
        response = self.con.getresponse()
        response.read()
        return time.perf_counter() - started

    def first_event(self, body: bytes) -> float:
        started = time.perf_counter()
        self.con.request("POST", "/v1/messages", body=body, headers=self._headers())
        response = self.con.getresponse()
        first = response.read1(65536)
        elapsed = time.perf_counter() - started
        assert first.startswith(b"event: message_start"), first[:40]
        response.read()
        return elapsed

    def _headers(self) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "x-api-key": "sk-bench",
            "anthropic-version": "2023-06-01",
        }


CONCURRENT = 8
"""Clients sending at once in the concurrent measurement."""
BLOCKS = 5
"""The concurrent rounds are cut into this many runs of rounds, in order, to give the
ratio's spread: each block's ratio of medians, lowest to highest."""


def cpu_seconds(pid: int) -> float:
    """CPU time process ``pid`` has used so far, its threads' summed: the scheduler's count
    in nanoseconds (``/proc/PID/task/*/schedstat``), not ``/proc/PID/stat``'s 10 ms ticks,
    which a round of 8 small requests (a few ms of CPU) falls between."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def children_of(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def asleep(pid: int) -> bool:
    """Whether process ``pid`` is waiting (state S): the recorder between captures."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S"


def settle(pids: list[int], limit: float = 5.0) -> None:
    """Wait until each of ``pids`` is seen asleep twice 2 ms apart (the recorders have
    stored what they were handed), at most ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if all(asleep(p) for p in pids):
            time.sleep(0.002)
            if all(asleep(p) for p in pids):
                return
        time.sleep(0.002)


@dataclass
class Side:
    """One way of sending in the concurrent measurement: direct, or through one proxy."""

    label: str
    port: int
    pid: int | None = None
    """The proxy's process (None: direct)."""
    recorded: bool = True
    """Whether it has a recorder's process (the bare forwarder has none)."""
    times: list[list[float]] = field(default_factory=list)
    """Each round's request times, in order."""
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds by process over this side's requests: ``clients`` (this process),
    ``upstream``, and for a proxy ``proxy`` and ``recorder`` (over the whole run: they
    work for no one else)."""

    @property
    def requests(self) -> int:
        return sum(len(r) for r in self.times)

    def median(self, rounds: slice = slice(None)) -> float:
        return statistics.median(t for r in self.times[rounds] for t in r)

    def cpu_ms(self, name: str) -> float:
        """Milliseconds of CPU per request by process ``name``."""
        return self.cpu.get(name, 0.0) * 1000 / self.requests


def clients_at_once(upstream_pid: int, sides: list[Side], body: bytes, rounds: int) -> None:
    """:data:`CONCURRENT` clients sending ``body`` at once, ``rounds`` rounds each side, the
    sides in a new random order every round, each round started once the proxies' recorders
    are idle (a proxy's background work does not fall on the next side's round). Fills each
    side's times and CPU."""
    import aiohttp

    recorders = [c for s in sides if s.pid is not None for c in children_of(s.pid)]
    shuffle = random.Random(44).shuffle

    async def main() -> None:
        headers = Client(sides[0].port)._headers()
        connector = aiohttp.TCPConnector(limit_per_host=CONCURRENT)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(port: int) -> float:
                started = time.perf_counter()
                async with session.post(
                    f"http://127.0.0.1:{port}/v1/messages", data=body, headers=headers
                ) as response:
                    await response.read()
                return time.perf_counter() - started

            proxies_at: dict[int, tuple[float, float]] = {}
            for i in range(rounds + WARM_UP):
                if i == WARM_UP:
                    for side in sides:
                        if side.pid is not None:
                            recorder = children_of(side.pid)
                            proxies_at[side.pid] = (
                                cpu_seconds(side.pid),
                                sum(cpu_seconds(r) for r in recorder),
                            )
                order = list(sides)
                shuffle(order)
                for side in order:
                    settle(recorders)
                    clients, upstream = time.process_time(), cpu_seconds(upstream_pid)
                    took = await asyncio.gather(*(one(side.port) for _ in range(CONCURRENT)))
                    if i >= WARM_UP:
                        side.times.append(took)
                        side.cpu["clients"] = (
                            side.cpu.get("clients", 0.0) + time.process_time() - clients
                        )
                        side.cpu["upstream"] = (
                            side.cpu.get("upstream", 0.0) + cpu_seconds(upstream_pid) - upstream
                        )
            settle(recorders)
            for side in sides:
                if side.pid is not None:
                    proxy_at, recorder_at = proxies_at[side.pid]
                    side.cpu["proxy"] = cpu_seconds(side.pid) - proxy_at
                    side.cpu["recorder"] = (
                        sum(cpu_seconds(r) for r in children_of(side.pid)) - recorder_at
                    )

    asyncio.run(main())


def block_ratios(direct: Side, proxied: Side) -> list[float]:
    """The ratio of medians in each of :data:`BLOCKS` runs of rounds, in order."""
    n = len(direct.times)
    cuts = [round(n * k / BLOCKS) for k in range(BLOCKS + 1)]
    return [
        proxied.median(slice(a, b)) / direct.median(slice(a, b))
        for a, b in zip(cuts, cuts[1:], strict=False)
        if b > a
    ]


def clients_lines(direct: Side, proxies: list[Side]) -> list[str]:
    """The concurrent measurement as table rows: by wall time, then by CPU."""
    lines = []
    for side in proxies:
        ratios = block_ratios(direct, side)
        lines.append(
            f"| round trip, small body, {CONCURRENT} clients at once{side.label} "
            f"(ratio in {len(ratios)} runs of rounds: {min(ratios):.2f}–{max(ratios):.2f}×) | "
            f"{direct.median() * 1000:.1f} ms | {side.median() * 1000:.1f} ms | "
            f"{side.median() / direct.median():.3f}× | ≤ 1.1× |"
        )
    for side in proxies:
        direct_cpu = direct.cpu_ms("clients") + direct.cpu_ms("upstream")
        path_cpu = side.cpu_ms("clients") + side.cpu_ms("upstream") + side.cpu_ms("proxy")
        lines.append(
            f"| CPU per request on the path, {CONCURRENT} clients at once{side.label}: "
            f"clients {direct.cpu_ms('clients'):.2f} / {side.cpu_ms('clients'):.2f} ms, "
            f"upstream {direct.cpu_ms('upstream'):.2f} / {side.cpu_ms('upstream'):.2f} ms, "
            f"the proxy's process {side.cpu_ms('proxy'):.2f} ms | {direct_cpu:.2f} ms | "
            f"{path_cpu:.2f} ms | {path_cpu / direct_cpu:.2f}× | — |"
        )
        if not side.recorded:
            continue
        lines.append(
            f"| CPU per request off the path, {CONCURRENT} clients at once{side.label}: "
            f"the recorder's process | — | {side.cpu_ms('recorder'):.2f} ms | — | — |"
        )
    return lines


HUGE_MB = 450
"""The size of the one huge request body sent (the proxy refuses one over 32 MiB)."""
HUGE_BOUND_MB = 500
"""The documented bound on memory for one huge line or body (docs/benchmarks.md)."""


def peak_kib(pid: int) -> int:
    """The peak resident memory (``VmHWM``) of process ``pid``."""
    found = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(found.group(1)) if found else 0


@dataclass
class HugeRow:
    """One huge body sent to a fresh proxy: what it answered, and the peak resident memory
    of the proxy and of its recorder before and after."""

    chunked: bool
    status: int
    proxy_before: int
    proxy_after: int
    recorder_after: int

    def line(self) -> str:
        sent = "chunked" if self.chunked else "Content-Length"
        return (
            f"| one {HUGE_MB} MB request body ({sent}) to a fresh proxy: answered "
            f"{self.status or 'by closing'} | — | peak {self.proxy_after / 1024:.0f} MiB (the "
            f"proxy; {self.proxy_before / 1024:.0f} MiB before the body), recorder "
            f"{self.recorder_after / 1024:.0f} MiB | — | ≤ {HUGE_BOUND_MB} MB |"
        )

    @property
    def ok(self) -> bool:
        return (self.proxy_after + self.recorder_after) / 1024 <= HUGE_BOUND_MB


def huge_rows(upstream: int, tmp: Path) -> list[HugeRow]:
    """A :data:`HUGE_MB` body with a Content-Length, then chunked, each to a fresh proxy
    that has answered one small request (its imports done)."""
    rows = []
    for chunked in (False, True):
        process, port = start_proxy(upstream, tmp / f"huge{int(chunked)}.db")
        try:
            Client(port).round_trip(body_of([{"role": "user", "content": "Say hi"}]))
            settle(children_of(process.pid))
            before = peak_kib(process.pid)
            status = huge_body(port, HUGE_MB << 20, chunked)
            (recorder,) = children_of(process.pid)
            rows.append(HugeRow(chunked, status, before, peak_kib(process.pid), peak_kib(recorder)))
        finally:
            stop_all([process.pid])
    return rows


def huge_body(port: int, size: int, chunked: bool) -> int:
    """Send one request body of ``size`` bytes (a JSON message whose text is that long), with
    a Content-Length or chunked, in 1 MiB pieces; the status the proxy answered."""
    head = b'{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[{"role":"user","content":"'
    tail = b'"}]}'

    def pieces() -> Iterator[bytes]:
        yield head
        left = size - len(head) - len(tail)
        piece = b"x" * (1 << 20)
        while left > 0:
            yield piece[: min(left, len(piece))]
            left -= len(piece)
        yield tail

    headers = Client(port)._headers()
    if not chunked:
        headers["content-length"] = str(size)
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        con.request("POST", "/v1/messages", body=pieces(), headers=headers, encode_chunked=chunked)
        response = con.getresponse()
        response.read()
        return response.status
    except (ConnectionError, http.client.HTTPException):
        return 0  # the proxy closed the connection on the rest of the body
    finally:
        con.close()


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid`` and of its children (the recorder's)."""
    total = 0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for one in [pid, *map(int, children)]:
        status = Path(f"/proc/{one}/status").read_text()
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(found.group(1)) if found else 0
    return total


def db_bytes(db: Path) -> int:
    """The database file's size with its write-ahead log checkpointed into it (the log is
    reused after a checkpoint: its size is not what is stored)."""
    con = sqlite3.connect(db, timeout=30)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return db.stat().st_size


def paired(
    direct: Client, proxied: Client, measure: str, body: bytes, n: int
) -> tuple[list[float], list[float]]:
    """Times of ``n`` requests each, direct and proxied taking turns (after warm-ups)."""
    d, p = alternated([direct, proxied], measure, body, n)
    return d, p


def alternated(clients: list[Client], measure: str, body: bytes, n: int) -> list[list[float]]:
    """Times of ``n`` requests through each client, taking turns, the order reversed every
    other turn (A B, B A: neither goes first always), after warm-ups."""
    times: list[list[float]] = [[] for _ in clients]
    for i in range(n + WARM_UP):
        turn = list(enumerate(clients))
        for k, c in turn if i % 2 == 0 else turn[::-1]:
            took = getattr(c, measure)(body)
            if i >= WARM_UP:
                times[k].append(took)
    return times


def spread(direct: list[float], other: list[float]) -> str:
    """The ratio of medians in each of :data:`BLOCKS` runs of consecutive requests, lowest to
    highest: how much the ratio moves within the run."""
    cuts = [round(len(direct) * k / BLOCKS) for k in range(BLOCKS + 1)]
    ratios = [
        statistics.median(other[a:b]) / statistics.median(direct[a:b])
        for a, b in zip(cuts, cuts[1:], strict=False)
        if b > a
    ]
    return f"{min(ratios):.2f}–{max(ratios):.2f}×"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument(
        "--rounds",
        type=int,
        default=150,
        help=f"rounds of {CONCURRENT} clients at once, each way",
    )
    parser.add_argument("--growing", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--clients-only",
        action="store_true",
        help=f"only the {CONCURRENT}-client measurement (printed, not written)",
    )
    parser.add_argument(
        "--compare-root",
        type=Path,
        action="append",
        default=[],
        help=f"also measure the proxy of this checkout in the {CONCURRENT}-client rounds, "
        "in the same run (a before: `git archive COMMIT | tar -x -C DIR`); repeatable",
    )
    parser.add_argument(
        "--huge-only",
        action="store_true",
        help=f"only the {HUGE_MB} MB bodies (printed, not written)",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=UPSTREAM_DELAY,
        help=f"seconds the upstream waits before it answers (default {UPSTREAM_DELAY}); the "
        "figures "
        "written to docs/benchmarks.md are at the default",
    )
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--floor",
        choices=sorted(FLOORS),
        action="append",
        default=[],
        help=f"forwarders of bench/proxy_floors.py measured in the {CONCURRENT}-client rounds "
        f"(repeatable; default: {' and '.join(DEFAULT_FLOORS)})",
    )
    parser.add_argument(
        "--proxy-root",
        type=Path,
        default=ROOT,
        help="measure the proxy of another checkout (a before), e.g. one made with "
        "`git worktree add /tmp/before COMMIT`; the figures are printed, not written",
    )
    args = parser.parse_args()
    global DELAY
    DELAY = args.delay
    if args.upstream:
        serve_upstream()
        return
    args.floor = args.floor or DEFAULT_FLOORS
    global PROXY_ROOT
    PROXY_ROOT = args.proxy_root.resolve()
    if PROXY_ROOT != ROOT or args.clients_only or args.huge_only or DELAY != UPSTREAM_DELAY:
        args.no_write = True
    load_start = os.getloadavg()[0]
    upstream_process, upstream = start_upstream()
    try:
        run(args, upstream_process.pid, upstream, load_start)
    finally:
        upstream_process.terminate()
        upstream_process.wait(timeout=30)


def start_compared(upstream: int, tmp: Path, roots: list[Path]) -> list[Side]:
    """A proxy of each checkout in ``roots`` (``--compare-root``), recording into ``tmp``."""
    global PROXY_ROOT
    sides = []
    own = PROXY_ROOT
    try:
        for k, root in enumerate(roots):
            PROXY_ROOT = root.resolve()
            process, port = start_proxy(upstream, tmp / f"compared{k}.db")
            sides.append(Side(f" ({root})", port, process.pid))
    finally:
        PROXY_ROOT = own
    return sides


def stop_all(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
        for _ in range(3000):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)


def clients_only(args: argparse.Namespace, upstream_pid: int, upstream: int, load: float) -> None:
    """``--clients-only``: direct, this proxy and each ``--compare-root``, interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        process, port = start_proxy(upstream, Path(tmp) / "bench.db")
        compared = [
            *start_compared(upstream, Path(tmp), args.compare_root),
            *(start_floor(kind, upstream) for kind in args.floor),
        ]
        try:
            direct, proxied = Side("", upstream), Side(f" ({PROXY_ROOT})", port, process.pid)
            sides = [direct, proxied, *compared]
            small = body_of([{"role": "user", "content": "Say hi"}])
            clients_at_once(upstream_pid, sides, small, args.rounds)
        finally:
            stop_all([process.pid, *(s.pid for s in compared if s.pid is not None)])
    print(
        f"`python bench/bench_proxy.py --clients-only --rounds {args.rounds}` on "
        f"{os.cpu_count()} CPU(s); upstream answers after {DELAY * 1000:.0f} ms; "
        f"{CONCURRENT} clients x {args.rounds} rounds each way, the "
        f"sides in random order each round; load average {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end.\n"
    )
    print("| measure | direct | through the proxy | ratio | target |\n|---|---:|---:|---:|---:|")
    print("\n".join(clients_lines(direct, sides[1:])))


def run(args: argparse.Namespace, upstream_pid: int, upstream: int, load_start: float) -> None:
    if args.clients_only:
        clients_only(args, upstream_pid, upstream, load_start)
        return
    if args.huge_only:
        with tempfile.TemporaryDirectory() as tmp:
            huge = huge_rows(upstream, Path(tmp))
        print(f"`python bench/bench_proxy.py --huge-only` ({PROXY_ROOT})\n")
        print(
            "| measure | direct | through the proxy | ratio | target |\n|---|---:|---:|---:|---:|"
        )
        print("\n".join(row.line() for row in huge))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        process, port = start_proxy(upstream, db)
        try:
            direct, proxied = Client(upstream), Client(port)
            small = body_of([{"role": "user", "content": "Say hi"}])
            large = body_of(conversation(300, "large"))  # 600 KB: ~150k tokens of text
            rows = []
            for label, body in (("small body", small), ("150k-token body (600 KB)", large)):
                dt, pt = paired(direct, proxied, "round_trip", body, args.requests)
                rows.append((label, dt, pt))
            compared = [
                *start_compared(upstream, Path(tmp), args.compare_root),
                *(start_floor(kind, upstream) for kind in args.floor),
            ]
            direct_side, proxied_side = Side("", upstream), Side("", port, process.pid)
            try:
                clients_at_once(upstream_pid, [direct_side, proxied_side, *compared], small,
                                args.rounds)  # fmt: skip
            finally:
                stop_all([s.pid for s in compared if s.pid is not None])
            steered_rows = []
            steered_process, steered_port = start_proxy(
                upstream, Path(tmp) / "steered.db", "--steer", "all"
            )
            try:
                steered = Client(steered_port)
                dup = body_of(tool_conversation(150))  # ~600 KB, its last result a repeat
                for label, body in (
                    ("small body", small),
                    ("150k-token body (600 KB)", large),
                    ("600 KB of tool calls, the last result rewritten by dups", dup),
                ):
                    dt, pt, stt = alternated([direct, proxied, steered], "round_trip", body,
                                             args.requests)  # fmt: skip
                    steered_rows.append((label, dt, pt, stt))
            finally:
                steered_process.terminate()
                steered_process.wait(timeout=30)
            huge = huge_rows(upstream, Path(tmp))
            stream = body_of([{"role": "user", "content": "Say hi"}], stream=True)
            first_dt, first_pt = paired(direct, proxied, "first_event", stream, args.requests)
            # A conversation growing by one exchange (about 620 bytes new) a request.
            tenth, half = max(1, args.growing // 10), max(2, args.growing // 2)
            rss_early = size_early = size_half = 0
            for i in range(args.growing):
                proxied.round_trip(body_of(conversation(i + 1, "growing", GROWING_TEXT)))
                if i + 1 == tenth:
                    time.sleep(0.5)
                    rss_early, size_early = rss_kib(process.pid), db_bytes(db)
                if i + 1 == half:
                    time.sleep(0.5)
                    size_half = db_bytes(db)
            time.sleep(1.0)  # the recorder's last writes
            rss_end = rss_kib(process.pid)
            last_body = len(body_of(conversation(args.growing, "growing", GROWING_TEXT)))
            new_bytes = len(body_of(conversation(2, "growing", GROWING_TEXT))) - len(
                body_of(conversation(1, "growing", GROWING_TEXT))
            )
        finally:
            process.terminate()
            process.wait(timeout=30)
        size_end = db_bytes(db)
        con = sqlite3.connect(db)
        stored = con.execute("SELECT count(*) FROM exchange_row").fetchone()[0]
        blob_bytes = con.execute("SELECT sum(length(content)) FROM exchange_blob_row").fetchone()[0]
        con.close()
    first_half = (size_half - size_early) / (half - tenth)
    second_half = (size_end - size_half) / (args.growing - half)
    lines = [
        f"`python bench/bench_proxy.py --requests {args.requests} --growing {args.growing}"
        + ("" if PROXY_ROOT == ROOT else f" --proxy-root {PROXY_ROOT}")
        + "` on "
        f"CPython {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPU(s); "
        f"upstream answers after {DELAY * 1000:.0f} ms; medians over {args.requests} requests "
        f"each way, taking turns (A B, B A); load average {load_start:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end.",
        "",
        "| measure | direct | through the proxy | ratio / added | target |",
        "|---|---:|---:|---:|---:|",
    ]
    ok = True
    for label, dt, pt in rows:
        d, p = statistics.median(dt), statistics.median(pt)
        ok &= p / d <= 1.1
        lines.append(
            f"| round trip, {label} (ratio in {BLOCKS} runs of requests: {spread(dt, pt)}) | "
            f"{d * 1000:.1f} ms | {p * 1000:.1f} ms | {p / d:.3f}× | ≤ 1.1× |"
        )
    ok &= proxied_side.median() / direct_side.median() <= 1.1
    lines += clients_lines(direct_side, [proxied_side, *compared])
    for label, dt, pt, stt in steered_rows:
        d, p, st = statistics.median(dt), statistics.median(pt), statistics.median(stt)
        ok &= st / d <= 1.1
        lines.append(
            f"| round trip with `--steer all`, {label} (same run: direct {d * 1000:.1f} ms, "
            f"proxy without steering {p * 1000:.1f} ms; ratio in {BLOCKS} runs of requests: "
            f"{spread(dt, stt)}) | {d * 1000:.1f} ms | {st * 1000:.1f} ms | {st / d:.3f}× "
            "| ≤ 1.1× |"
        )
    first_d, first_p = statistics.median(first_dt), statistics.median(first_pt)
    added = (first_p - first_d) * 1000
    ok &= added <= 5
    lines.append(
        f"| first streamed event | {first_d * 1000:.1f} ms | {first_p * 1000:.1f} ms | "
        f"+{added:.1f} ms | ≤ +5 ms |"
    )
    lines.append(
        f"| proxy memory (RSS), growing conversation | — | {rss_early / 1024:.0f} MiB after "
        f"{tenth}, {rss_end / 1024:.0f} MiB after {args.growing} requests | "
        f"{(rss_end - rss_early) / 1024:+.0f} MiB | flat |"
    )
    lines.append(
        f"| database growth per request ({new_bytes} bytes new; last body "
        f"{last_body / 1024:.0f} KB) | — | {first_half:,.0f} B (requests {tenth}–{half}), "
        f"{second_half:,.0f} B ({half}–{args.growing}) | "
        f"{second_half / first_half:.2f}× | flat (∝ what is new) |"
    )
    for row in huge:
        ok &= row.ok
        lines.append(row.line())
    lines += [
        "",
        f"The database holds {stored} requests and {blob_bytes / 1024:.0f} KB of distinct "
        "pieces (system, tools, messages) for them.",
        "",
        f"Round-trip and first-event targets met: {'yes' if ok else 'no'}.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        doc = DOC.read_text(encoding="utf-8")
        if START in doc:
            head, rest = doc.split(START, 1)
            doc = head + START + "\n" + text + "\n" + END + rest.split(END, 1)[1]
            DOC.write_text(doc, encoding="utf-8")


if __name__ == "__main__":
    main()
