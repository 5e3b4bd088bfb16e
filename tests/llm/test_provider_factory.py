"""make_provider: the offline rules without a key or with model ``offline``, Anthropic otherwise."""

from __future__ import annotations

import pytest

from engine.config import Settings
from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import OFFLINE_NAME
from engine.llm.factory import make_provider
from engine.llm.offline import OfflineProvider


def test_no_key_means_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = make_provider(Settings(model="claude-x"))
    assert isinstance(provider, OfflineProvider)
    assert provider.name == OFFLINE_NAME


def test_offline_model_wins_over_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert isinstance(make_provider(Settings(model="offline")), OfflineProvider)
    assert isinstance(make_provider(Settings(model="claude-x"), model="Offline"), OfflineProvider)


def test_key_from_environment_gives_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    provider = make_provider(Settings(model="claude-x"))
    assert isinstance(provider, AnthropicProvider)
    assert provider.name == "anthropic"
    assert provider.model == "claude-x"


def test_explicit_key_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = make_provider(Settings(model="claude-x"), model="claude-y", api_key="sk-given")
    assert isinstance(provider, AnthropicProvider)
    assert provider.model == "claude-y"
