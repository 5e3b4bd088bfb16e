"""``engine.settings.params``: which numbers a session plans with, read from and put into
settings, and the agent over a session planning with them rather than with the process' settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.llm.offline import OfflineProvider
from engine.models import StrategyParams
from engine.session import Agent
from engine.settings.config import Settings
from engine.settings.params import (
    ParamsError,
    changed_params,
    describe_params,
    strategy_params,
    with_params,
)
from engine.store import Store


def test_the_numbers_of_each_strategy_come_from_its_settings() -> None:
    """Seed 001: ``MODEL_CONTEXT_LIMIT`` 128 000 and ``COMPRESS_THRESHOLD`` 0.8; seed 004:
    ``COMPACT_THRESHOLD_RATIO`` 0.92."""
    settings = Settings(context_window=64_000, keep_rounds=4)
    layered = strategy_params(settings, "layered")
    assert layered == StrategyParams(
        context_window=64_000,
        numbers={"threshold_ratio": 0.8, "keep_rounds": 4, "min_messages": 3},
    )
    reset = strategy_params(settings, "reset-hint")
    assert reset.numbers == {"context_limit": 128_000, "threshold_ratio": 0.8}
    assert strategy_params(settings, "head-middle-tail").numbers["threshold_ratio"] == 0.92
    with pytest.raises(ParamsError, match="unknown strategy"):
        strategy_params(settings, "no-such")


def test_numbers_put_into_settings_replace_the_window_and_the_strategys_own() -> None:
    settings = Settings(context_window=200_000)
    params = StrategyParams(
        context_window=30_000, numbers={"max_messages": 8, "from_an_older_ctxscope": 1}
    )
    planned = with_params(settings, "message-window", params)
    assert planned.context_window == 30_000
    assert planned.strategies.message_window.max_messages == 8
    assert planned.strategies.message_window.keep_last == 30  # not stored: the settings'
    assert planned.keep_rounds == settings.keep_rounds  # another strategy's: untouched
    layered = with_params(
        settings, "layered", StrategyParams(context_window=9_000, numbers={"keep_rounds": 2})
    )
    assert (layered.context_window, layered.keep_rounds, layered.threshold_tokens) == (
        9_000,
        2,
        7_200,
    )


def test_changed_numbers_are_checked_as_a_settings_file_would_be() -> None:
    base = strategy_params(Settings(), "layered")
    changed = changed_params(base, "layered", {"context_window": 50_000, "keep_rounds": 3})
    assert changed.context_window == 50_000 and changed.numbers["keep_rounds"] == 3
    assert changed_params(base, "layered", {}, window=70_000).context_window == 70_000
    for numbers, said in [
        ({"keep_rounds": 0}, "keep_rounds=0"),
        ({"threshold_ratio": 1.5}, "threshold_ratio=1.5"),
        ({"keep_rounds": True}, "not a boolean"),
        ({"max_messages": 5}, "layered has no number 'max_messages'"),
    ]:
        with pytest.raises(ParamsError, match=said):
            changed_params(base, "layered", numbers)
    with pytest.raises(ParamsError, match="context_window=-1"):
        changed_params(base, "layered", {}, window=-1)
    masking = strategy_params(Settings(), "masking")
    with pytest.raises(ParamsError, match=r"masking has no number 'context_window'.*--window"):
        changed_params(masking, "masking", {"context_window": 5})


def test_the_description_leaves_out_numbers_that_follow_a_profile() -> None:
    params = strategy_params(Settings(), "mock-user")
    described = describe_params(params)
    assert described.startswith("window 200,000 · profile init · long_result_chars 5,000")
    assert "trigger_tokens" not in described and "keep_recent_steps" not in described
    assert describe_params(None) == "the process' settings (none stored)"


def test_an_agent_plans_with_the_sessions_numbers(tmp_path: Path) -> None:
    """Seed 002: ``if total_tokens > COMPACT_TRIGGER_THRESHOLD`` — the threshold the agent's
    plan compares with is the session's stored trigger, not the process' profile default."""
    store = Store.open(tmp_path / "a.db")
    stored = strategy_params(Settings(), "mock-user")
    stored = changed_params(stored, "mock-user", {"trigger_tokens": 12_345}, window=40_000)
    session = store.create_session(str(tmp_path), strategy="mock-user", params=stored)
    settings = Settings(model="offline", context_window=200_000)
    agent = Agent(store, session, settings, OfflineProvider(settings), tmp_path)
    assert agent.settings.context_window == 40_000
    assert agent.settings.strategies.mock_user.trigger_tokens == 12_345
    assert agent.plan("hello").measure.threshold == 12_345

    unstored = store.create_session(str(tmp_path), strategy="mock-user")
    other = Agent(store, unstored, settings, OfflineProvider(settings), tmp_path)
    assert other.settings.context_window == 200_000  # none stored: the process' settings
    assert other.plan("hello").measure.threshold == 150_000  # 002 Init: 150_000
    store.close()
