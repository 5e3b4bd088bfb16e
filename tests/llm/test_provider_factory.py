"""make_provider: the offline rules without a key or with model ``offline``, Anthropic otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_offline_commands_never_import_the_sdk(tmp_path: Path) -> None:
    """The SDK costs about a second to import: offline runs, ``ask``, ``context``, ``show`` and
    the workbench module must not load it (it is imported when an Anthropic provider is built)."""
    script = (
        "import sys\n"
        "from cli.main import main\n"
        "import tui.app\n"
        "args = ['--db', sys.argv[1]]\n"
        "assert main(['ask', 'ls .', '--workspace', sys.argv[2], *args]) == 0\n"
        "assert main(['context', '1', '--json', *args]) == 0\n"
        "assert main(['show', '1', '--json', *args]) == 0\n"
        "print('anthropic' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "s.db"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "False"
