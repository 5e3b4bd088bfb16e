"""Issue 32: what history sends of an earlier step's tool result, strategy by strategy.

Seed 000 (A3) keeps a compressed form in history (``/work/shared/seeds/000_be2100c33498e983.txt``:
"| **Grep** | 摘要 + 前 N 条匹配行 | N = 5（含文件名+行号） |", "| **Bash** | 摘要 + stderr 尾部 |
stderr 末尾 20 行，stdout 仅摘要 |"). Seeds 001, 002 and 003 keep no such copy: their history
holds the messages as the run produced them, tool results as the tools returned them, and
only their own named cut applies. Each test quotes the seed line it checks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.llm.base import ProviderRequest
from engine.models import Trigger
from engine.session import Agent
from engine.settings.config import Settings
from engine.store import Store
from tests.engine.compaction.scripted import Scripted, answer, tool_use

MATCHING_FILES = 12
"""Files holding the word ``needle`` once each: twelve matching lines, over Grep's five."""
SEQ_LINES = 40
"""``seq 1 40`` prints forty lines: more than a short listing, so A3 keeps only a summary."""


def results_sent(request: ProviderRequest) -> dict[str, str]:
    """Each ``tool_result`` block of the request's messages, by tool_use id, as text."""
    out: dict[str, str] = {}
    for message in request.messages:
        if isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") != "tool_result":
                continue
            content = block.get("content", "")
            if not isinstance(content, str):
                content = "".join(b.get("text", "") for b in content)
            out[block["tool_use_id"]] = content
    return out


def two_rounds(tmp_path: Path, strategy: str) -> tuple[Agent, Scripted, Store]:
    """Round 1 greps twelve lines and runs ``seq 1 40``; round 2 is one answer."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(MATCHING_FILES):
        (ws / f"f{n:02d}.txt").write_text(f"line one\nneedle number {n}\n")
    provider = Scripted(
        [
            answer(
                "Looking.",
                tool_use("toolu_grep", "Grep", pattern="needle"),
                tool_use("toolu_bash", "Bash", command=f"seq 1 {SEQ_LINES}"),
            ),
            answer("Found twelve needles."),
            answer("Yes."),
        ]
    )
    store = Store.open(tmp_path / "s.db")
    settings = Settings(
        strategy=strategy, validate_requests=True, data_dir=None, bash_policy="allow"
    )
    session = store.create_session(str(ws), "t", strategy=strategy)
    agent = Agent(store, session, settings, provider, ws)
    agent.run("where are the needles?")
    agent.run("all of them?")
    return agent, provider, store


def observations(store: Store, agent: Agent) -> dict[str, str]:
    return {o.tool_use_id: o.text for o in store.observations(agent.session_id)}


@pytest.mark.parametrize(
    ("strategy", "seed_line"),
    [
        (
            "reset-hint",
            # 001: the history is what the run returned; the tools' own truncation is the
            # first defence, history compression the second.
            "history.push(...responseMessages) / 工具输出截断（`utils/truncate.ts`）是第一道防线",
        ),
        (
            "mock-user",
            # 002: the last N steps are kept whole, tool results included.
            "**完整保留** user + assistant + tool_result",
        ),
        (
            "message-window",
            # 003: the in-memory history is the run's response messages as they are.
            "history.push(...result.response.messages)",
        ),
    ],
)
def test_history_sends_results_as_the_tools_returned_them(
    tmp_path: Path, strategy: str, seed_line: str
) -> None:
    """Under seeds 001-003 the second round's request carries round 1's results whole: all
    twelve matching lines of the Grep and all forty lines of ``seq`` (quoted line: see the
    parameter), exactly the text the model saw in round 1's scratchpad."""
    agent, provider, store = two_rounds(tmp_path, strategy)
    seen = observations(store, agent)
    sent = results_sent(provider.requests[-1])
    assert sent["toolu_grep"] == seen["toolu_grep"]
    assert sent["toolu_bash"] == seen["toolu_bash"]
    assert sum(f"needle number {n}" in sent["toolu_grep"] for n in range(MATCHING_FILES)) == 12
    assert all(str(n) in sent["toolu_bash"].split() for n in range(1, SEQ_LINES + 1))
    # The store keeps seed 000's compressed copy (the workbench shows both); it is not sent.
    stored = {m.meta.tool_use_id: m.content for m in agent.history.history.messages}
    assert '"truncated":true' in stored["toolu_grep"]
    assert agent.sent_history().messages != agent.history.history.messages


def test_layered_sends_the_a3_form(tmp_path: Path) -> None:
    """Seed 000 A3: "| **Grep** | 摘要 + 前 N 条匹配行 | N = 5（含文件名+行号） |" and
    "| **Bash** | 摘要 + stderr 尾部 | stderr 末尾 20 行，stdout 仅摘要 |": five of the twelve
    lines, and the forty lines of stdout only summarised (counts, first and last line)."""
    agent, provider, _ = two_rounds(tmp_path, "layered")
    sent = results_sent(provider.requests[-1])
    grep = json.loads(sent["toolu_grep"])
    assert len(grep["data"]["matches"]) == 5
    assert grep["data"]["omitted"] == MATCHING_FILES - 5
    bash = json.loads(sent["toolu_bash"])
    assert bash["data"]["stdout"]["lines"] == SEQ_LINES
    assert bash["data"]["stdout"]["first_line"] == "1"
    assert bash["data"]["stdout"]["last_line"] == str(SEQ_LINES)


def test_the_reset_hint_summary_reads_the_results_as_returned(tmp_path: Path) -> None:
    """Seed 001 ``compressHistory``: "const content = typeof m.content === 'string' ?
    m.content : JSON.stringify(m.content)" over the history, whose tool results are as the
    tools returned them: the summary call's input holds all twelve matching lines."""
    agent, _, store = two_rounds(tmp_path, "reset-hint")
    draft = agent.prepare_compaction(trigger=Trigger.MANUAL, dry_run=True)
    seen = observations(store, agent)
    tool_texts = {m.meta.tool_use_id: m.content for m in draft.summarised if m.role == "tool"}
    assert tool_texts == {"toolu_grep": seen["toolu_grep"], "toolu_bash": seen["toolu_bash"]}


def test_mock_user_cuts_a_long_result_as_returned_not_its_a3_form(tmp_path: Path) -> None:
    """Seed 002 step 5: "最近N步中存在超长tool result（如读取了大型trace文件，>5K tokens）" may be
    cut to "前1K + ... + 后1K": the cut applies to the result as the tool returned it, not to
    seed 000's summary of it (which is far under 5 000 characters and would go uncut)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    provider = Scripted(
        [
            answer("Running.", tool_use("toolu_long", "Bash", command="seq 1 1500")),
            answer("Done."),
            answer("Yes."),
        ]
    )
    store = Store.open(tmp_path / "s.db")
    settings = Settings(
        strategy="mock-user", validate_requests=True, data_dir=None, bash_policy="allow"
    )
    session = store.create_session(str(ws), "t", strategy="mock-user")
    agent = Agent(store, session, settings, provider, ws)
    agent.run("count")
    agent.run("again?")
    seen = observations(store, agent)["toolu_long"]
    sent = results_sent(provider.requests[-1])["toolu_long"]
    # seq 1 1500 prints 6 393 characters (9 + 90*2 + 900*3 + 501*4 digits, 1 500 newlines),
    # over 5 000, so it goes as its first and last 1 000 characters of the observation.
    assert len(seen) > 5000
    assert sent.startswith(seen[:1000]) and sent.endswith(seen[-1000:])
    assert f"[... {len(seen) - 2000} chars omitted ...]" in sent


@pytest.mark.parametrize("strategy", ["reset-hint", "message-window"])
def test_an_extractive_summary_still_names_the_error_line(tmp_path: Path, strategy: str) -> None:
    """The summary call reads the results as returned; the extractive summary (offline, or the
    fallback) writes its facts from the stored A3 form, which names a failed command's error
    line (seed 000 A3 keeps "error.code 和 error.message 完整保留"): sending results as returned
    loses none of them. Without the A3 facts the line was missed (message-window's error
    recall on the comparison fell from 100 % to 7 %)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fail = "python3 -c \"raise ValueError('bad value 3')\""
    provider = Scripted([answer("Trying.", tool_use("toolu_fail", "Bash", command=fail)),
                         answer("It failed.")])  # fmt: skip
    store = Store.open(tmp_path / "s.db")
    settings = Settings(strategy=strategy, data_dir=None, bash_policy="allow")
    session = store.create_session(str(ws), "t", strategy=strategy)
    agent = Agent(store, session, settings, provider, ws)
    provider.is_model = False  # offline: the strategy's extractive summary
    agent.run("run the check")
    result = agent.compact(trigger=Trigger.MANUAL, keep_rounds=0)  # the round, by hand
    assert result.summary is not None
    assert "ValueError: bad value 3" in result.summary.content
