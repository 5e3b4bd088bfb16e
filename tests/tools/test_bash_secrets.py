"""Secrets withheld from Bash by default (issue 29): names like ``*_PAT`` and ``*KEY*``, URLs with
a password in them whatever the name, and the policy's allow list and switches.

The variables are set in this process' environment (as a user's shell would) and the agent's
command prints its own environment with ``env -0``, so what Bash got is read back exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.settings.config import Settings
from tools.base import ToolContext, ToolResult
from tools.registry import default_registry
from tools.secrets import EnvironmentPolicy, Redactor

WITHHELD = {
    "GITHUB_PAT": "github_pat_11ABCDEFG0123456789",
    "STRIPE_KEY": "sk_live_51Habcdefghijk",
    "DATABASE_URL": "postgres://app:s3cr3t-pw-99@db.internal/prod",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG",
    "SENTRY_AUTH_TOKEN": "sntrys-0123456789abcdef",
    "MYSQL_PASSWD": "hunter2-but-longer",
    "PGPASSWORD": "pg-password-value",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/.config/gcloud/sa.json",
    "SSH_PRIVATE_KEY": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "api_key": "lowercase-names-count-too",
    "REDIS_CACHE": "redis://:only-a-password@cache:6379/0",
}
"""Each withheld by one of the default rules: ``*_PAT``, ``*KEY*``, a URL with a password
(``DATABASE_URL`` and ``REDIS_CACHE`` match no name pattern), ``*SECRET*``, ``*TOKEN*``,
``*PASSWD*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ``*PRIVATE*``, and case-insensitively."""

KEPT = {
    "PATH": "/usr/bin:/bin",
    "CTXSCOPE_PLAIN": "visible-value",
    "HTTP_PROXY": "http://proxy.internal:3128",
    "GIT_REMOTE": "https://user@github.com/org/repo.git",
    "COMPASS_DIR": "/opt/compass",
}
"""Not secret: ``PATH`` (``*_PAT`` needs the underscore), a URL without a password, a user
name alone, a name that merely contains ``PASS`` (not ``PASSWD`` nor ``PASSWORD``)."""


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**WITHHELD, **KEPT}.items():
        monkeypatch.setenv(name, value)


def _bash_environment(workspace: Path, **settings: Any) -> tuple[dict[str, str], ToolResult]:
    ctx = ToolContext(
        workspace=workspace,
        settings=Settings(bash_policy="allow", bash_sandbox="none", **settings),
    )
    result = default_registry().run("Bash", {"command": "env -0 > env.bin"}, ctx)
    assert result.ok
    pairs = (workspace / "env.bin").read_bytes().decode().split("\0")
    return dict(pair.split("=", 1) for pair in pairs if pair), result


@pytest.mark.usefixtures("environment")
def test_secrets_are_withheld_by_default(workspace: Path) -> None:
    env, _ = _bash_environment(workspace)
    assert sorted(set(WITHHELD) & set(env)) == []
    assert {name: env.get(name) for name in KEPT} == KEPT


@pytest.mark.usefixtures("environment")
def test_an_allowed_name_is_kept_and_the_url_rule_can_be_turned_off(workspace: Path) -> None:
    env, _ = _bash_environment(
        workspace, secret_env_allow=["STRIPE_*"], secret_env_url_passwords=False
    )
    assert env["STRIPE_KEY"] == WITHHELD["STRIPE_KEY"]
    assert env["DATABASE_URL"] == WITHHELD["DATABASE_URL"]
    assert env["REDIS_CACHE"] == WITHHELD["REDIS_CACHE"]
    assert "GITHUB_PAT" not in env and "AWS_SECRET_ACCESS_KEY" not in env


@pytest.mark.usefixtures("environment")
def test_patterns_replace_the_defaults(workspace: Path) -> None:
    """Setting ``secret_env_patterns`` replaces the list (the URL rule stays on)."""
    env, _ = _bash_environment(workspace, secret_env_patterns=["STRIPE_KEY"])
    assert "STRIPE_KEY" not in env and "DATABASE_URL" not in env
    assert env["GITHUB_PAT"] == WITHHELD["GITHUB_PAT"]


@pytest.mark.usefixtures("environment")
def test_withheld_values_are_redacted_from_what_a_command_prints(workspace: Path) -> None:
    """A command that finds the values elsewhere (here: a file) gets them redacted; of a URL,
    the ``user:password`` part."""
    (workspace / "leak.txt").write_text(
        f"{WITHHELD['GITHUB_PAT']}\n{WITHHELD['DATABASE_URL']}\n{WITHHELD['STRIPE_KEY']}\n"
    )
    ctx = ToolContext(
        workspace=workspace, settings=Settings(bash_policy="allow", bash_sandbox="none")
    )
    result = default_registry().run("Bash", {"command": "cat leak.txt"}, ctx)
    assert result.data["stdout"] == (
        "[redacted GITHUB_PAT]\n"
        "postgres://[redacted DATABASE_URL]@db.internal/prod\n"
        "[redacted STRIPE_KEY]\n"
    )


def test_the_policy_on_its_own() -> None:
    policy = EnvironmentPolicy()
    assert policy.withheld("GH_PAT", "x") and not policy.withheld("PATH", "/bin")
    assert policy.withheld("ANY_NAME", "mysql://root:pw@localhost/db")
    assert not policy.withheld("ANY_NAME", "mysql://root@localhost/db")
    assert not EnvironmentPolicy(allow_patterns=("GH_*",)).withheld("GH_PAT", "x")
    redactor = Redactor.from_environment(policy, {"X_URL": "https://me:abcdef123@h/p"})
    assert redactor.text("https://me:abcdef123@h/p") == "https://[redacted X_URL]@h/p"
