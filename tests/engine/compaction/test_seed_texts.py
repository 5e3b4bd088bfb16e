"""Each seed's prompts and messages, compared with the seed's own text, read out of the seed
file here (never copied into the test): a change to one of them breaks a test (issue 39: the
ISO 8601 time of 004's files, 000's E2 timeout message or 002's mock prompt could change and no
test failed).

The seeds are ``/work/shared/seeds/`` (000 the default engine, 001 reset-hint, 002 mock-user,
003 message-window, 004 head-middle-tail); each test names the seed line it reads.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from engine.compaction.placement import (
    MOCK_USER_PROMPT,
    RESET_HINT_FOOTER,
    RESET_HINT_HEADER,
    reset_hint_text,
)
from engine.compaction.strategies.formats import HEAD_MIDDLE_TAIL_PROMPT, RESET_HINT_PROMPT
from engine.compaction.summary import TIMEOUT_NOTICE
from engine.models import Message
from engine.store import Store
from prompts.agents_prompts.summary_prompt import SUMMARY_TEMPLATE

SEEDS = Path("/work/shared/seeds")


def seed(number: str) -> str:
    found = sorted(SEEDS.glob(f"{number}_*.txt"))
    if not found:
        pytest.skip(f"seed {number} is not on this machine ({SEEDS})")
    return found[0].read_text(encoding="utf-8")


def between(text: str, start: str, end: str) -> str:
    """The text after the first ``start`` up to the next ``end``."""
    head, found, rest = text.partition(start)
    assert found, f"{start!r} not in the seed"
    inner, found, _ = rest.partition(end)
    assert found, f"{end!r} not after {start!r} in the seed"
    return inner


def test_000_e2_timeout_message() -> None:
    """000 E2: "**用户提示**：超时时显示 "Summary generation timed out, keeping recent history
    only."" — the notice shown when the summary call times out."""
    [said] = re.findall(r"超时时显示 \"([^\"]+)\"", seed("000"))
    assert TIMEOUT_NOTICE == said


def test_000_a5_summary_template() -> None:
    """000 A5 "**Summary 模板（固定）**": every heading and label line of the fixed template
    is in ctxscope's, in order; the seed's ``[…]`` placeholders are ctxscope's ``{…}``
    fields (the example file lines of its last section are the seed's example, not form)."""
    template = between(seed("000"), "**Summary 模板（固定）**：\n```\n", "```")

    def form(line: str) -> str:
        line = re.sub(r"\[[^\]]*\]", "…", line)
        return re.sub(r"\{[^}]*\}", "…", line).strip()

    fixed = [form(line) for line in template.splitlines() if line.startswith(("#", "*(", "* **"))]
    ours = [form(line) for line in SUMMARY_TEMPLATE.splitlines()]
    at = 0
    for line in fixed:
        assert line in ours[at:], f"the seed's {line!r} is not in the template (in order)"
        at = ours.index(line, at) + 1


def test_001_compress_system_and_the_compression_hint() -> None:
    """001 ``const COMPRESS_SYSTEM = `…`.trim()`` and ``buildCompressionHint(summary)``'s
    ``[ '[执行历史摘要 - 之前会话已压缩]', '', summary, '', '注意：…', '请基于…' ].join('\\n')``."""
    text = seed("001")
    assert RESET_HINT_PROMPT == between(text, "const COMPRESS_SYSTEM = `", "`.trim()").strip()
    function = between(text, "export function buildCompressionHint(summary: string): string {",
                       "].join('\\n')")  # fmt: skip
    body = between(function, "return [", "\n  ]") if "\n  ]" in function else function
    quoted = re.findall(r"^\s*(?:'([^']*)'|(summary)),?\s*$", body, flags=re.MULTILINE)
    lines = ["SUMMARY" if name else value for value, name in quoted]
    assert len(lines) == 6 and lines[0] == RESET_HINT_HEADER
    assert "\n".join(lines[lines.index("SUMMARY") + 2 :]) == RESET_HINT_FOOTER
    assert reset_hint_text("SUMMARY") == "\n".join(lines)


def test_002_mock_user_prompt() -> None:
    """002 "**Mock消息内容**": ``compact_prompt = {"role": "user", "content": \"\"\"…\"\"\"}``,
    the mock user turn, word for word."""
    prompt = between(seed("002"), '"content": """', '"""')
    assert MOCK_USER_PROMPT == prompt


def test_004_summary_prompt_keeps_the_five_dimensions() -> None:
    """004 F-004 rule 2 "Prompt 要求 LLM 保留以下维度的信息：" and its list (对话目标和关键决策,
    文件操作记录, 工具调用摘要, 当前任务状态, 错误和解决方案): one section of the prompt per
    dimension, in order (the prompt is English; each section is the dimension's words)."""
    listed = between(seed("004"), "Prompt 要求 LLM 保留以下维度的信息：\n", "\n3.")
    dimensions = re.findall(r"^\s+- (.+)$", listed, flags=re.MULTILINE)
    sections = [ln for ln in HEAD_MIDDLE_TAIL_PROMPT.splitlines() if ln.endswith(":")][1:]
    assert len(dimensions) == len(sections) == 5
    english = ("GOAL AND KEY DECISIONS", "FILE OPERATIONS", "TOOL CALLS", "TASK STATUS",
               "ERRORS AND RESOLUTIONS")  # fmt: skip
    # each seed dimension's own words, as the sections say them
    assert [d.split("（")[0] for d in dimensions] == [
        "对话目标和关键决策", "文件操作记录", "工具调用摘要", "当前任务状态", "错误和解决方案"
    ]  # fmt: skip
    assert [s.split(" (")[0].rstrip(":") for s in sections] == list(english)


def test_004_raw_middle_file_name(tmp_path: Path) -> None:
    """004 F-006 rules 1-3: "文件路径格式：``<outputDir>/<sessionId>/compact-<timestamp>-
    <sequence>.json``", "``timestamp`` 为 ISO 8601 格式（精确到秒）" and "``sequence`` 为自增序号
    （从 1 开始）": the file is named by the seed's pattern, its time ISO 8601 to the second."""
    from engine.compaction.raw_middle import write_raw_middle

    text = seed("004")
    [pattern] = re.findall(r"`<outputDir>/<sessionId>/([^`]+)`", text)
    assert "ISO 8601 格式（精确到秒）" in text
    store = Store.open(tmp_path / "c.db")
    session = store.create_session(str(tmp_path), "t")
    _, message = store.open_round(session.id or 0, Message(role="user", content="hi"))
    written = write_raw_middle(store, tmp_path / "out", [message])
    name_form = re.escape(pattern).replace(re.escape("<timestamp>"), "(?P<stamp>.+)")
    name_form = name_form.replace(re.escape("<sequence>"), "(?P<seq>[0-9]+)")
    found = re.fullmatch(name_form, written.name)
    assert found is not None, (pattern, written.name)
    stamp = found["stamp"]
    parsed = datetime.fromisoformat(stamp)  # ISO 8601
    assert parsed.microsecond == 0 and re.fullmatch(r"[\d-]+T\d\d:\d\d:\d\d(Z|[+-][\d:]+)", stamp)
    assert found["seq"] == "1"
    store.close()
