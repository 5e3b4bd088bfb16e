"""make_provider: the offline rules without a key or with model ``offline``, Anthropic otherwise
(built, and the SDK imported, at its first call)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import OFFLINE_NAME, ProviderRequest
from engine.llm.factory import DeferredAnthropic, make_provider, ready
from engine.llm.offline import OfflineProvider
from engine.settings.config import Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply


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
    assert isinstance(provider, DeferredAnthropic)
    assert provider.name == "anthropic"
    assert provider.model == "claude-x"
    assert provider.is_model
    built = ready(provider).built()  # type: ignore[attr-defined]
    assert isinstance(built, AnthropicProvider)
    assert (built.name, built.model, built.is_model) == ("anthropic", "claude-x", True)


def test_explicit_key_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = make_provider(Settings(model="claude-x"), model="claude-y", api_key="sk-given")
    assert isinstance(provider, DeferredAnthropic)
    assert provider.model == "claude-y"
    assert provider.built().model == "claude-y"


def test_the_deferred_provider_sends_through_the_sdk_at_its_first_call(
    monkeypatch: pytest.MonkeyPatch, fake_anthropic: FakeAnthropicServer
) -> None:
    """Its calls are the Anthropic provider's: the request reaches the (strict) fake Messages
    API with the given key, and the answer comes back."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
    fake_anthropic.script([text_reply("hello back")])
    provider = make_provider(Settings(model="claude-x"), api_key="sk-given")
    request = ProviderRequest(
        system=[{"type": "text", "text": "You are a coding agent."}],
        tools=[],
        messages=[{"role": "user", "content": "hello"}],
        max_tokens=64,
    )
    response = provider.complete(request, lambda _event: None)
    assert response.text == "hello back"
    assert len(fake_anthropic.requests) == 1
    assert fake_anthropic.requests[0].headers["authorization"] == "Bearer sk-given"


def test_offline_commands_never_import_the_sdk(tmp_path: Path) -> None:
    """The SDK costs about a second to import: offline runs, ``ask``, ``context``, ``show`` and
    the workbench module must not load it (it is imported when an Anthropic provider is
    built)."""
    script = (
        "import sys\n"
        "from cli.main import main\n"
        "import tui.app\n"
        "args = ['--db', sys.argv[1]]\n"
        "assert main(['ask', 'ls .', '--workspace', sys.argv[2], *args]) == 0\n"
        "assert main(['context', '1', '--json', *args]) == 0\n"
        "assert main(['show', '1', '--json', *args]) == 0\n"
    )
    assert not sdk_loaded_after(script, tmp_path)


def test_looking_at_a_request_with_a_key_does_not_import_the_sdk(tmp_path: Path) -> None:
    """With ``ANTHROPIC_API_KEY`` set, ``context`` and ``compact --dry-run`` build an agent
    only to look at its request: nothing is sent, so the SDK (a second of start-up) is not
    loaded. The session is made offline first; the key then selects Anthropic."""
    script = (
        "import os, sys\n"
        "from cli.main import main\n"
        "args = ['--db', sys.argv[1]]\n"
        "ask = ['ask', 'ls .', '--workspace', sys.argv[2], '--model', 'offline']\n"
        "assert main([*ask, *args]) == 0\n"
        "os.environ['ANTHROPIC_API_KEY'] = 'sk-test'\n"
        "from engine.settings.config import Settings\n"
        "from engine.llm.factory import make_provider\n"
        "assert make_provider(Settings()).name == 'anthropic'  # the key is taken\n"
        "assert main(['context', '1', '--json', *args]) == 0\n"
        "assert main(['compact', '1', '--dry-run', *args]) == 0\n"
    )
    assert not sdk_loaded_after(script, tmp_path)


def sdk_loaded_after(script: str, tmp_path: Path) -> bool:
    """Whether a fresh interpreter, without ``ANTHROPIC_API_KEY``, has the SDK loaded after
    running ``script`` (given a database path and a workspace as ``sys.argv[1:]``)."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-c", script + "print('anthropic' in sys.modules)\n",
         str(tmp_path / "s.db"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1] == "True"
