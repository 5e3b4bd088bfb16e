"""``ctxscope proxy [--port 8787] [--upstream URL] [--jsonl]`` and ``ctxscope run -- CMD …``:
the Messages API proxy in front of an agent, recording every request into the database
(docs/proxy.md).

``proxy`` listens until Ctrl+C or SIGTERM, then lets the requests in flight end and stores
every captured one before it exits. ``run`` starts it on a free port, runs CMD with
``ANTHROPIC_BASE_URL`` pointing at it (and ``_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1``
when the upstream is Anthropic's own, so Claude Code keeps its 1M window behind the proxy),
and exits with CMD's exit code.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from cli.arguments import (
    SESSION_ID,
    CliError,
    Parents,
    Subcommands,
    UsageError,
    checked,
    count,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.exchanges import Exchange
    from engine.proxy.recorder import Recorder
    from engine.proxy.recorder_process import RecorderProcess
    from engine.proxy.request_row import RequestRow
    from engine.proxy.steer_live import LiveSteering
    from engine.settings.config import Settings

FIRST_PARTY_HOSTS = ("api.anthropic.com",)
"""Upstreams that are Anthropic's own API (Claude Code keeps its 1M window behind a proxy to
them only when told so)."""


def upstream_url(text: str) -> str:
    """The ``--upstream`` URL, checked: http or https, with a host."""
    from engine.proxy.server import DEFAULT_UPSTREAM

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--upstream {text!r} is not an http(s) URL such as {DEFAULT_UPSTREAM}")
    if parts.query or parts.fragment:
        raise UsageError(f"--upstream {text!r}: a base URL has no query or fragment")
    return text.rstrip("/")


def _printer(args: argparse.Namespace, settings: Settings) -> Callable[[Exchange], None]:
    """What prints each stored request's line: a module-level function with its options
    bound, so that the recorder's process can be handed it."""
    return functools.partial(printed_line, jsonl=bool(args.jsonl), settings=settings)


def printed_line(exchange: Exchange, jsonl: bool, settings: Settings) -> None:
    """Print the line of one stored request (``--jsonl``: its JSON), from its one row."""
    import json

    from engine.proxy.request_row import RequestRow
    from engine.terminal_text import json_printable

    row = RequestRow.of(exchange, settings)
    # The model name and path are the request's: DEL, C1 and bidi controls escaped.
    text = json_printable(json.dumps(row.line(), ensure_ascii=False)) if jsonl else row_text(row)
    try:
        print(text, flush=True)
    except BrokenPipeError:
        pass


def row_text(row: RequestRow) -> str:
    """``proxy``'s short line for one stored request."""
    from engine.terminal_text import cut

    usage = row.usage_json or {}
    cost = row.cost_json
    return (
        f"#{row.id} session {row.session_id} {row.kind} "
        f"{cut(row.model, 40)} {row.status} {row.outcome}: "
        f"{row.messages} messages, in {usage.get('input_tokens', 0):,} "
        f"cache read {usage.get('cache_read_input_tokens', 0):,} write "
        f"{usage.get('cache_creation_input_tokens', 0):,} out "
        f"{usage.get('output_tokens', 0):,}, "
        + ("no price" if cost is None else f"${cost:.4f}")
        + steered_text(row.steering)
    )


def steered_text(summary: dict[str, Any] | None) -> str:
    """The short line's steering part: ``; steered: dups 1 (-612 tok)``."""
    from engine.terminal_text import cut

    if summary is None:
        return ""
    if summary["failed"]:
        return f"; sent as it came: a rule failed ({cut(summary['failed'], 80)})"
    made = [
        f"{rule} {n['rewrites']} (-{n['tokens_removed']:,} tok)"
        for rule, n in summary["rules"].items()
        if n["rewrites"]
    ]
    return f"; steered: {', '.join(made)}" if made else ""


GIL_SWITCH_INTERVAL = 0.0005
"""Seconds a thread holds the GIL before another may take it (Python's default is 0.005).
The thread that hands captures to the recorder's process pickles a long request; with the
default, the event loop forwarding the next request could wait up to 5 ms for it."""


def _recorder(args: argparse.Namespace, settings: Settings, quiet: bool) -> RecorderProcess:
    """The recorder, in a process of its own (engine/proxy/recorder_process.py): storing a
    request never holds the forwarding process's interpreter."""
    from cli.common import db_path, open_store
    from engine.proxy.recorder_process import RecorderProcess

    open_store(args, settings).close()  # refuse a foreign or damaged file before listening
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    on_stored = None if quiet else _printer(args, settings)
    return RecorderProcess(db_path(args, settings), on_stored=on_stored, settings=settings)


def add_proxy_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "proxy",
        parents=parents.plain,
        help="record every Messages API request an agent sends (docs/proxy.md)",
    )
    _add_proxy_options(p, 8787)


def _add_proxy_options(p: argparse.ArgumentParser, port: int) -> None:
    """What ``proxy`` and ``run`` both take: the port, the upstream, ``--jsonl``, ``--steer``."""
    p.add_argument(
        "--port",
        type=checked(port_number),
        default=port,
        help=f"port on 127.0.0.1 (default {port or 'a free one'})",
    )
    p.add_argument(
        "--upstream",
        default="https://api.anthropic.com",
        help="the API to forward to (default https://api.anthropic.com)",
    )
    p.add_argument("--jsonl", action="store_true", help="print one JSON line per request")
    p.add_argument(
        "--steer",
        type=checked(steer_rules),
        default=(),
        metavar="RULES",
        help="rewrite requests in flight, cache-aware: dups, stale, pins or all "
        "(default: none, every request passes as sent; docs/proxy.md)",
    )


def steer_rules(text: str) -> tuple[str, ...]:
    """``--steer`` / ``--rules``: steering rules by name (the engine's list, imported now)."""
    rules: tuple[str, ...] = importlib.import_module("engine.proxy.steering").parse_rules(text)
    return rules


def share(text: str) -> float:
    """A number from 0 up (``--horizon``)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not 0 <= value < 1e6:
        raise ValueError(f"{text} must be 0 or more")
    return value


def port_number(text: str) -> int:
    """A TCP port: 0 (a free one) to 65535."""
    value = int(text) if text.isdigit() else -1
    if not 0 <= value <= 65535:
        raise ValueError(f"{text} is not a port (0 to 65535)")
    return value


def cmd_proxy(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from cli.common import db_path, shown_database
    from engine.proxy.server import Proxy, ProxyConfig, serve

    upstream = upstream_url(args.upstream)
    recorder = _recorder(args, settings, quiet=False)
    proxy = Proxy(
        ProxyConfig(upstream=upstream, port=args.port), recorder, steering(args, recorder)
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        started = asyncio.Event()
        running = asyncio.create_task(serve(proxy, stop, started))
        await asyncio.wait(
            [running, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED
        )
        if running.done():
            await running  # it could not listen: its error
        print(
            f"ctxscope proxy on {proxy.url} → {upstream}, recording into "
            f"{shown_database(db_path(args, settings))}; point an agent at it with "
            f"ANTHROPIC_BASE_URL={proxy.url} (Ctrl+C stops)",
            file=sys.stderr,
            flush=True,
        )
        await running

    try:
        asyncio.run(main())
    except OSError as exc:
        raise CliError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    finally:
        recorder.close()
    return 0


def steering(args: argparse.Namespace, recorder: RecorderProcess) -> LiveSteering | None:
    """``--steer RULES``: the proxy's steering, its pins read by the recorder."""
    from engine.proxy.steer_live import LiveSteering

    rules: tuple[str, ...] = tuple(getattr(args, "steer", ()) or ())
    if not rules:
        return None
    return LiveSteering(rules, pins_of=recorder.pins_of)


def child_env(proxy_url: str, upstream: str) -> dict[str, str]:
    """CMD's environment: this one, with the API's base URL pointing at the proxy."""
    env = dict(os.environ)
    env["ANTHROPIC_BASE_URL"] = proxy_url
    if urlsplit(upstream).hostname in FIRST_PARTY_HOSTS:
        env["_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"] = "1"
    return env


def add_run_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "run",
        parents=parents.plain,
        help="run a command with its Messages API requests recorded through the proxy",
    )
    _add_proxy_options(p, 0)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD …")


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    import subprocess

    from engine.proxy.server import Proxy, ProxyConfig, ProxyThread
    from engine.terminal_text import cut

    command = list(args.cmd)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("run needs a command: ctxscope run -- claude …")
    upstream = upstream_url(args.upstream)
    recorder = _recorder(args, settings, quiet=not args.jsonl)
    proxy = Proxy(
        ProxyConfig(upstream=upstream, port=args.port), recorder, steering(args, recorder)
    )
    try:
        thread = ProxyThread(proxy).start()
    except OSError as exc:
        recorder.close()
        raise CliError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    # Ctrl+C goes to the whole process group: CMD decides what it means; we wait for CMD.
    # A SIGTERM to ctxscope is passed on to CMD, and the proxy stops once CMD has ended.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.getsignal(signal.SIGTERM)
    try:
        child = subprocess.Popen(command, env=child_env(proxy.url, upstream))
        signal.signal(signal.SIGTERM, lambda _sig, _frame: child.terminate())
        code = child.wait()
    except OSError as exc:
        raise CliError(f"cannot run {cut(command[0], 80)!r}: {exc.strerror or exc}") from None
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
        thread.stop()
    for line in recorded_lines(recorder):
        print(line, file=sys.stderr, flush=True)
    return code if code >= 0 else 128 - code


def recorded_lines(recorder: Recorder | RecorderProcess) -> list[str]:
    """What ``run`` says when the command has ended: each conversation it recorded, by
    ctxscope's id and the agent's own, and how to open it."""
    from engine.terminal_text import cut

    lines = []
    for sid, source in recorder.conversations.items():
        agent = source.removeprefix("proxy:")
        named = "" if agent.startswith("thread:") else f" (the agent's session {cut(agent, 80)})"
        lines.append(
            f"ctxscope: recorded session {sid}{named}: `ctxscope show {sid}`, "
            f"`ctxscope --resume {sid}`"
        )
    lines += [f"ctxscope: {cut(why, 200)}" for why in recorder.failures]
    return lines


def add_steer_check_parser(sub: Subcommands, parents: Parents) -> None:
    p = sub.add_parser(
        "steer-check",
        parents=parents.with_json,
        help="a session's requests under steering rules against a model of the prompt cache, "
        "beside them passed through (docs/proxy.md)",
    )
    p.add_argument("session", type=SESSION_ID, metavar="ID")
    p.add_argument(
        "--rules",
        type=checked(steer_rules),
        default=("dups", "stale", "pins"),
        metavar="RULES",
        help="dups, stale, pins (comma-separated) or all (default: all)",
    )
    p.add_argument(
        "--stale-turns",
        type=checked(count),
        default=10,
        metavar="N",
        help="a tool result older than N assistant turns is stale (default 10)",
    )
    p.add_argument(
        "--horizon",
        type=checked(share),
        default=0.25,
        metavar="H",
        help="the stale rule expects H times as many more requests as the session has had "
        "(default 0.25; 0: it clears only when the cache is written again anyway)",
    )


def cmd_steer_check(args: argparse.Namespace, settings: Settings) -> int:
    from cli.common import emit, get_session, open_store
    from engine.proxy.steer_check import NoRequests, check_lines, steer_check

    store = open_store(args, settings, read_only=True)
    get_session(store, args.session)
    try:
        result = steer_check(
            store, args.session, settings, args.rules, args.stale_turns, args.horizon
        )
    except NoRequests as exc:
        raise CliError(str(exc)) from None
    emit(args, result, "\n".join(check_lines(result)))
    return 0
