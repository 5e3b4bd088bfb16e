"""Benchmark of the engine's token accounting and context building (a script, not a test).

Builds two synthetic sessions from ``engine.models`` directly (user inputs, assistant steps
with tool calls, compressed tool JSON, final answers):

- one of ~200 000 tokens: full count from scratch vs one raw ``encode_ordinary`` of the same
  text, and the per-step accounting of one new step with cached counts;
- one of 2 000 rounds: ``ContextBuilder.build`` with cached counts vs re-tokenizing it.

Every figure is the best of several runs (``time.perf_counter``). Run from the repository root:

    python bench/bench_engine.py            # prints and updates docs/benchmarks.md
    python bench/bench_engine.py --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.context.builder import ContextBuilder, ScratchResult, ScratchStep, validate_request  # noqa: E402
from engine.messages.tokens import (  # noqa: E402
    MESSAGE_OVERHEAD,
    check_budget,
    count_text,
    encoding,
    ensure_counted,
    ensure_counted_all,
)
from engine.models import History, Message, MessageMeta, ToolCall  # noqa: E402
from engine.settings.config import Settings  # noqa: E402

TARGET_FULL_MS = 500.0
TARGET_STEP_MS = 5.0
TARGET_BUILD_MS = 50.0
SESSION_TOKENS = 200_000
BUILD_ROUNDS = 2_000
REPEATS = 7

WORDS = (
    "the user session token context budget history summary round step tool result file path "
    "line error value config parser request response handler cache layer model message"
).split()
CODE = [
    "def {w}(self, {v}: int) -> str:",
    "    return self._{w}[{v}]",
    "    if {v} is None:",
    '        raise ValueError("{w} {v} missing")',
    "from engine.{w} import {v}",
    "class {W}Manager:",
    "    {v} = {w}.get({v}, 0) + 1",
    "# {w} keeps {v} for the next round",
    "    for {v} in self.{w}s:",
    "        yield {v}.{w}()",
]
TOOLS = ["Read", "Grep", "Bash", "LS", "Edit", "Glob"]


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))).capitalize() + "."


def _code(rng: random.Random, lines: int, start: int = 1) -> str:
    out = []
    for i in range(lines):
        w, v = rng.choice(WORDS), rng.choice(WORDS)
        out.append(f"{start + i:>5}\t" + rng.choice(CODE).format(w=w, v=v, W=w.capitalize()))
    return "\n".join(out)


def _tool_io(rng: random.Random, name: str, path: str) -> tuple[dict[str, Any], str, str]:
    """A tool call's input, its compressed history JSON and its full observation text."""
    if name == "Read":
        n = rng.randint(20, 120)
        full = _code(rng, n)
        data: dict[str, Any] = {"path": path, "range": [1, n], "lines": full}
        return {"file_path": path}, json.dumps({"status": "success", "data": data}), full
    if name == "Grep":
        hits = [f"{path}:{rng.randint(1, 400)}: {_sentence(rng, 4, 9)}" for _ in range(30)]
        data = {"pattern": rng.choice(WORDS), "matches": len(hits), "lines": hits[:5]}
        return (
            {"pattern": data["pattern"]},
            json.dumps({"status": "success", "data": data}),
            "\n".join(hits),
        )
    if name == "Bash":
        stderr = [_sentence(rng, 5, 12) for _ in range(rng.randint(0, 25))]
        data = {"exit_code": 1 if stderr else 0, "stdout_lines": 80, "stderr_tail": stderr[-20:]}
        full = "\n".join([_sentence(rng, 6, 14) for _ in range(80)] + stderr)
        return {"command": "pytest -q"}, json.dumps({"status": "success", "data": data}), full
    if name == "Edit":
        snippet = _code(rng, rng.randint(5, 30), rng.randint(1, 300))
        data = {"file": path, "ranges": [[10, 24]], "snippet": snippet}
        return (
            {"file_path": path, "old_string": "x", "new_string": "y"},
            json.dumps({"status": "success", "data": data}),
            snippet,
        )
    entries = [f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py" for _ in range(60)]
    data = {"root": "src", "count": len(entries), "entries": entries[:10], "truncated": True}
    return {"path": "src"}, json.dumps({"status": "success", "data": data}), "\n".join(entries)


def make_round(rng: random.Random, n: int) -> tuple[list[Message], list[ScratchStep]]:
    """One round as history messages, and the same steps as a scratchpad (full results)."""
    path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
    question = f"{_sentence(rng, 8, 30)} See @{path}."
    msgs = [Message(role="user", content=question, meta=MessageMeta(round=n))]
    steps: list[ScratchStep] = []
    for step in range(1, rng.randint(1, 4) + 1):
        name = rng.choice(TOOLS)
        tool_input, compressed, full = _tool_io(rng, name, path)
        call = ToolCall(id=f"toolu_{n}_{step}", name=name, input=tool_input)
        assistant = Message(
            role="assistant",
            content=_sentence(rng, 10, 40),
            tool_calls=[call],
            meta=MessageMeta(round=n, step=step),
        )
        meta = MessageMeta(round=n, step=step, tool_name=name, tool_use_id=call.id)
        msgs += [assistant, Message(role="tool", content=compressed, meta=meta)]
        steps.append(ScratchStep(assistant, [ScratchResult(call.id, name, full)]))
    final = " ".join(_sentence(rng, 8, 25) for _ in range(rng.randint(1, 5)))
    msgs.append(Message(role="assistant", content=final, meta=MessageMeta(round=n, final=True)))
    return msgs, steps


def wire_texts(messages: list[Message]) -> list[str]:
    """The texts a count of ``messages`` tokenizes (what raw tiktoken would be given)."""
    out: list[str] = []
    for m in messages:
        out.append(m.content)
        for c in m.tool_calls:
            out.append(c.name)
            out.append(json.dumps(c.input, separators=(",", ":")))
    return out


def timings_ms(
    fn: Callable[[], object], repeats: int = REPEATS, setup: Callable[[], object] | None = None
) -> list[float]:
    """Wall times of ``repeats`` calls of ``fn`` in milliseconds, sorted (``setup`` untimed)."""
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)


def best_ms(
    fn: Callable[[], object], repeats: int = REPEATS, setup: Callable[[], object] | None = None
) -> float:
    return timings_ms(fn, repeats, setup)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()

    settings = Settings(context_window=200_000)
    encode = encoding().encode_ordinary
    rng = random.Random(2024)
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text)
        lines.append(text)

    # --- a ~200 000-token session ---
    session: list[Message] = []
    rounds = 0
    while ensure_counted_all(session) < SESSION_TOKENS:
        rounds += 1
        session += make_round(rng, rounds)[0]
    tokens = sum(m.tokens or 0 for m in session)

    def reset() -> None:
        for m in session:
            m.tokens = None

    full_ms = best_ms(lambda: ensure_counted_all(session), setup=reset)
    texts = wire_texts(session)
    joined = "\n".join(texts)
    raw_ms = best_ms(lambda: encode(joined))
    raw_loop_ms = best_ms(lambda: [encode(t) for t in texts])
    batch_ms = best_ms(lambda: encoding().encode_ordinary_batch(texts), repeats=3)

    # --- one new step with cached counts (what the agent pays per step) ---
    new_msgs, new_steps = make_round(rng, rounds + 1)
    step_assistant = new_steps[0].assistant
    step_tool = new_msgs[2]
    observation = new_steps[0].results[0].text

    def one_step() -> None:
        step_assistant.tokens = step_tool.tokens = None
        ensure_counted(step_assistant)
        ensure_counted(step_tool)
        count_text(observation)
        history_total = sum(m.tokens or 0 for m in session)  # cached: no tokenizing
        check_budget(history_total, history_total, "", len(session), settings)

    step_ms = best_ms(one_step, repeats=50)
    step_raw_ms = best_ms(
        lambda: [encode(t) for t in [*wire_texts([step_assistant, step_tool]), observation]],
        repeats=50,
    )

    # --- a 2 000-round session, built with cached counts ---
    big: list[Message] = []
    for n in range(1, BUILD_ROUNDS + 1):
        big += make_round(rng, n)[0]
    big_tokens = ensure_counted_all(big)
    history = History(messages=big)
    scratch = make_round(rng, BUILD_ROUNDS + 1)[1]
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "CODE_LAW.md").write_text("# Rules\n- Keep functions small.\n", "utf-8")
        tools = [
            {"name": t, "description": f"The {t} tool.", "input_schema": {"type": "object"}}
            for t in TOOLS
        ]
        builder = ContextBuilder(Path(tmp), settings, tools)
        built = builder.build(history, scratch, "What next?", "1. [in_progress] bench")
        # What a step pays: the same history as the step before, so its wire is resumed.
        step_runs = timings_ms(lambda: builder.build(history, scratch, "What next?", "1. [x] b"))
        step_build_ms = step_runs[len(step_runs) // 2]
        # A first build (a new builder, nothing to resume): opening a session, a compaction.
        fresh: list[ContextBuilder] = []
        build_runs = timings_ms(
            lambda: fresh[-1].build(history, scratch, "What next?", "1. [x] b"),
            setup=lambda: fresh.append(ContextBuilder(Path(tmp), settings, tools)),
        )
        build_ms, build_median = build_runs[0], build_runs[len(build_runs) // 2]
        problems = validate_request(built.request)
        validate_ms = best_ms(lambda: validate_request(built.request), repeats=3)
    big_joined = "\n".join(wire_texts(big))
    big_raw_ms = best_ms(lambda: encode(big_joined), repeats=3)

    say("# Engine benchmark")
    say()
    say(
        f"`python bench/bench_engine.py` on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPU(s); "
        f"best of {REPEATS} runs unless noted, `time.perf_counter`; load average at the end "
        f"{os.getloadavg()[0]:.2f} (other jobs shared the machine; minima are the stable figures)."
    )
    say()
    say("| measure | time | target | raw `encode_ordinary` of the same text | ratio |")
    say("|---|---:|---:|---:|---:|")
    say(
        f"| full count, {tokens:,}-token session ({len(session):,} messages, {rounds} rounds) "
        f"| {full_ms:.1f} ms | < {TARGET_FULL_MS:.0f} ms | {raw_ms:.1f} ms (one string) "
        f"| {full_ms / raw_ms:.2f}x |"
    )
    say(
        f"| per-step accounting (2 new messages + full observation, cached history) "
        f"| {step_ms:.3f} ms | < {TARGET_STEP_MS:.0f} ms | {step_raw_ms:.3f} ms "
        f"| {step_ms / step_raw_ms:.2f}x |"
    )
    say(
        f"| context build, {BUILD_ROUNDS:,} rounds ({len(big):,} messages, {big_tokens:,} tokens), "
        f"cached counts, nothing to resume (median) | {build_median:.1f} ms "
        f"| < {TARGET_BUILD_MS:.0f} ms | {big_raw_ms:.1f} ms (re-tokenizing it) "
        f"| {build_median / big_raw_ms:.3f}x |"
    )
    say(
        f"| a step's build on the same session: the history prefix resumed (median) "
        f"| {step_build_ms:.2f} ms | — | {build_median:.1f} ms (nothing to resume) "
        f"| {step_build_ms / build_median:.3f}x |"
    )
    say()
    say("Other figures:")
    say()
    say(
        f"- the same 200k session tokenized text by text in a plain loop: {raw_loop_ms:.1f} ms; "
        f"with `encode_ordinary_batch` (thread pool, one task per text, best of 3): "
        f"{batch_ms:.1f} ms, so `engine.messages.tokens` uses the plain loop."
    )
    say(
        f"- per-step accounting = counting the new assistant and tool messages and the full "
        f"observation, plus summing the {len(session):,} cached counts of the 200k session and "
        f"the budget check (best of 50)."
    )
    say(
        f"- 2 000-round build with nothing to resume, all {REPEATS} runs: best {build_ms:.1f} ms, "
        f"median {build_median:.1f} ms, worst "
        f"{build_runs[-1]:.1f} ms (the garbage collector is paused during a build; see "
        f"`engine.context.builder._gc_paused`)."
    )
    say(
        f"- `validate_request` of the 2 000-round request (not part of `build`): "
        f"{validate_ms:.1f} ms (best of 3); problems found: {len(problems)}."
    )
    say(
        "- the 2 000-round build's breakdown: "
        + ", ".join(f"{k} {v:,}" for k, v in built.layers.items())
        + f"; total {built.total:,} (message overhead {MESSAGE_OVERHEAD} tokens each)."
    )
    say()
    ok = full_ms < TARGET_FULL_MS and step_ms < TARGET_STEP_MS and build_median < TARGET_BUILD_MS
    say(f"All targets met: {'yes' if ok else 'NO'}.")

    if not args.no_write:
        out = ROOT / "docs" / "benchmarks.md"
        start, end = "<!-- engine-bench:start -->", "<!-- engine-bench:end -->"
        head, rest = out.read_text(encoding="utf-8").split(start, 1)
        tail = rest.split(end, 1)[1]
        body = "\n".join(lines[2:])  # the page has its own heading
        out.write_text(f"{head}{start}\n{body}\n{end}{tail}", encoding="utf-8")
        print(f"\nwritten to {out.relative_to(ROOT)} (its engine section)")
    return 0 if ok and not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
