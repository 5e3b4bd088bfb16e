"""The registry is the one place that knows the agents: no code outside
``engine/recordings/agents/`` (and the readers themselves) compares a value with an agent's
name; the agent modules import none of one another and importing / follow / history / the
gauge import the registry, never one agent's module (import-linter contracts in
pyproject.toml, checked here too)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from engine.recordings import agents

ROOT = Path(__file__).resolve().parents[3]
AGENTS_DIR = ROOT / "engine" / "recordings" / "agents"
READERS = {
    "aider.py",
    "anthropic_jsonl.py",
    "claude_code.py",
    "claude_code_chain.py",
    "claude_code_follow.py",
    "codex.py",
    "gemini.py",
    "managed_agents.py",
    "openhands.py",
    "trajectories.py",
    "copilot.py",
}
"""The readers (``engine/recordings/<reader>.py``): each knows its own format's name."""
ALLOWED = {
    ("engine/recordings/writer.py", "claude-code"): "a Claude Code chain rule in the writer's "
    "check (an answer to no call on the active chain is dropped); the readers' engineer's",
}
NAMES = {agent.name for agent in agents.AGENTS} | {"gemini-contents"}
FORMAT_ATTRIBUTES = {"FORMAT", "MINI", "SWE", "CONTENTS"}


def _compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """Each comparison with an agent's name: a string literal that is one, or a reader's
    ``FORMAT`` constant."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            if isinstance(side, ast.Constant) and side.value in NAMES:
                found.append((node.lineno, str(side.value)))
            elif isinstance(side, ast.Attribute) and side.attr in FORMAT_ATTRIBUTES:
                found.append((node.lineno, side.attr))
            elif isinstance(side, ast.Tuple | ast.Set | ast.List):
                found += [
                    (node.lineno, str(e.value))
                    for e in side.elts
                    if isinstance(e, ast.Constant) and e.value in NAMES
                ]
    return found


def test_no_code_outside_the_registry_compares_agent_names() -> None:
    offenders = []
    for folder in ("cli", "tui", "engine", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if path.is_relative_to(AGENTS_DIR):
                continue
            if path.parent == ROOT / "engine" / "recordings" and path.name in READERS:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for line, name in _compared_names(tree):
                if (relative, name) not in ALLOWED:
                    offenders.append(f"{relative}:{line} compares with {name}")
    assert offenders == []


def test_the_check_finds_an_if_chain() -> None:
    """The check itself sees what it forbids (a chain over two agents' names)."""
    chain = "if fmt == 'codex':\n    pass\nelif fmt in ('claude-code', 'aider'):\n    pass\n"
    assert _compared_names(ast.parse(chain)) == [
        (1, "codex"),
        (3, "claude-code"),
        (3, "aider"),
    ]


def test_the_import_contracts_hold() -> None:
    """``lint-imports`` over pyproject.toml's contracts, among them "no agent module imports
    another" and "importing, follow, history and the gauge import only the registry"."""
    contracts = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "Each recorded agent's module imports no other agent's module" in contracts
    assert "import the agents' registry, never one agent's module" in contracts
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]


def test_every_agent_is_found_by_its_name_and_once() -> None:
    names = [agent.name for agent in agents.AGENTS]
    assert len(names) == len(set(names))
    assert all(
        agents.by_name(name) is agent for name, agent in zip(names, agents.AGENTS, strict=True)
    )
    assert agents.by_name("no-such-agent") is None
