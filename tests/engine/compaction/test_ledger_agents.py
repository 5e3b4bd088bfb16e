"""The ledger over other agents' calls (Codex's shell / exec_command / apply_patch, Gemini
CLI's and OpenHands' tools) and over paths written the Windows way, relative or absolute."""

from __future__ import annotations

import pytest

from engine.compaction.call_files import argv_script, call_facts, path_key
from engine.compaction.ledger import extract_ledger, fidelity
from engine.models import Message, MessageMeta, ToolCall
from engine.store import Store
from tests.engine.recordings.helpers import FIXTURES, import_all


def calls(*pairs: tuple[str, dict[str, object]]) -> list[Message]:
    """A request, then one step per call."""
    out = [Message(role="user", content="go", meta=MessageMeta(round=1))]
    for n, (name, args) in enumerate(pairs, start=1):
        out.append(
            Message(
                role="assistant",
                tool_calls=[ToolCall(id=f"c{n}", name=name, input=args)],
                meta=MessageMeta(round=1, step=n),
            )
        )
    return out


@pytest.mark.parametrize(
    ("path", "cwd", "workdir", "key"),
    [
        # the case: a Windows Read and the summary's relative form
        (r"C:\Users\x\proj\!\X.md", r"C:\Users\x\proj", "", "!/X.md"),
        ("!/X.md", r"C:\Users\x\proj", "", "!/X.md"),
        (r"!\X.md", r"C:\Users\x\proj", "", "!/X.md"),
        # drive letter and case: Windows paths compare without case
        (r"c:\users\X\PROJ\src\a.py", r"C:\Users\x\proj", "", "src/a.py"),
        ("C:/Users/x/proj/b.md", r"c:\Users\x\proj\\", "", "b.md"),
        (r"D:\other\c.md", r"C:\Users\x\proj", "", "d:/other/c.md"),
        # POSIX: ./ and doubled separators folded; case matters
        ("./a", "", "", "a"),
        ("a", "", "", "a"),
        ("src//b/./c.py", "", "", "src/b/c.py"),
        ("/home/u/proj/src/a.py", "/home/u/proj", "", "src/a.py"),
        ("/home/u/proj/./src//a.py", "/home/u/proj/", "", "src/a.py"),
        ("/home/u/project2/a.py", "/home/u/proj", "", "/home/u/project2/a.py"),
        ("/Home/u/proj/a.py", "/home/u/proj", "", "/Home/u/proj/a.py"),
        # a command's relative path is taken from the folder it ran in
        ("a.py", "/w", "/w/sub", "sub/a.py"),
        ("../a.py", "/w", "/w/sub", "a.py"),
        ("https://example.com/a//b", "/w", "", "https://example.com/a//b"),
    ],
)
def test_path_key(path: str, cwd: str, workdir: str, key: str) -> None:
    assert path_key(path, cwd, workdir) == key


def test_windows_paths_and_the_summarys_relative_names_match() -> None:
    """Three files read in four Reads written four ways (X.md twice); the summary names each
    relative to the project. With the session's cwd: 3 files, all kept. Without it the
    absolute X.md and Y.md are items of their own that the summary's relative names do not
    match: 2 of 4 (the relative X.md and Z.md)."""
    msgs = calls(
        ("Read", {"file_path": r"C:\Users\x\proj\!\X.md"}),
        ("Read", {"file_path": "C:/Users/x/proj/!/Y.md"}),
        ("Read", {"file_path": r"!\Z.md"}),
        ("Read", {"file_path": "!/X.md"}),
    )
    summary = r"Read !/X.md and !\Y.md, then ./!/Z.md."
    cwd = r"C:\Users\x\proj"
    assert [i.key for i in extract_ledger(msgs, cwd=cwd).of("file_read")] == [
        "!/X.md",
        "!/Y.md",
        "!/Z.md",
    ]
    assert fidelity(msgs, [], summary, cwd)["file_read"] == (3, 3)
    assert fidelity(msgs, [], summary)["file_read"] == (2, 4)


PATCH = """*** Begin Patch
*** Update File: cart.py
@@
-    return sum(prices) - 1
+    return sum(prices)
*** Add File: docs/notes.md
+cart fixed
*** Delete File: old.py
*** Update File: src/m.py
*** Move to: src/n.py
@@
-x = 1
+x = 2
*** End Patch
"""


def test_codex_calls_are_commands_and_files() -> None:
    """Each of Codex's command tools in the shape its rollout records (codex-rs: ``shell``'s
    argv, ``shell_command``'s and ``exec_command``'s strings, ``local_shell``'s exec action,
    ``apply_patch``'s raw patch), the session run in ``/w``."""
    msgs = calls(
        (
            "shell",
            {"command": ["zsh", "-lc", "cat README.md && sed -i 's/a/b/' app.js"], "workdir": "/w"},
        ),
        (
            "exec_command",
            {"cmd": "pytest -q tests/test_cart.py", "workdir": "/w", "yield_time_ms": 1000},
        ),
        ("shell_command", {"command": "rm old.txt", "workdir": "/w/sub"}),
        (
            "local_shell",
            {
                "type": "exec",
                "command": ["bash", "-lc", "touch new.txt"],
                "working_directory": "/w",
            },
        ),
        ("apply_patch", {"input": PATCH}),
        (
            "shell",
            {"command": ["apply_patch", "*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch"]},
        ),
    )
    ledger = extract_ledger(msgs, cwd="/w")
    assert [i.key for i in ledger.of("command")] == [
        "cat README.md && sed -i 's/a/b/' app.js",
        "pytest -q tests/test_cart.py",
        "rm old.txt",
        "touch new.txt",
        "apply_patch",
    ]
    assert [(i.key, i.detail) for i in ledger.of("file_changed")] == [
        ("app.js", "Bash: sed -i"),
        ("sub/old.txt", "Bash: rm"),
        ("new.txt", "Bash: touch"),
        ("cart.py", "patch: updated"),
        ("docs/notes.md", "patch: added"),
        ("old.py", "patch: deleted"),
        ("src/m.py", "patch: updated"),
        ("src/n.py", "patch: moved to"),
        ("b.txt", "patch: added"),
    ]
    assert [i.key for i in ledger.of("file_read")] == ["README.md"]


def test_a_patch_in_a_shell_heredoc_changes_its_files() -> None:
    facts = call_facts("shell_command", {"command": "apply_patch <<'EOF'\n" + PATCH + "EOF"})
    assert [p for p, _ in facts.changed] == [
        "cart.py",
        "docs/notes.md",
        "old.py",
        "src/m.py",
        "src/n.py",
    ]


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (["bash", "-lc", "ls -la"], "ls -la"),
        (["/bin/zsh", "-c", "echo hi"], "echo hi"),
        (["powershell.exe", "-Command", "Get-ChildItem"], "Get-ChildItem"),
        (["git", "status", "--short"], "git status --short"),
        (["grep", "-n", "a b", "f.py"], "grep -n 'a b' f.py"),
    ],
)
def test_an_argv_as_shell_text(argv: list[str], script: str) -> None:
    assert argv_script(argv) == script


def test_gemini_and_openhands_tools() -> None:
    """Gemini CLI's tools (its chat files' ``toolCalls`` names and args) and OpenHands'
    ``str_replace_editor`` commands."""
    msgs = calls(
        ("read_file", {"absolute_path": "/w/a.py"}),
        ("read_many_files", {"paths": ["b.py", "c.py"]}),
        ("write_file", {"file_path": "/w/d.py", "content": ""}),
        ("replace", {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}),
        ("run_shell_command", {"command": "cat e.txt", "directory": "sub"}),
        ("str_replace_editor", {"command": "view", "path": "/w/f.py"}),
        ("str_replace_editor", {"command": "create", "path": "/w/g.py", "file_text": ""}),
        ("str_replace_editor", {"command": "str_replace", "path": "/w/f.py"}),
        ("execute_bash", {"command": "ls"}),
    )
    ledger = extract_ledger(msgs, cwd="/w")
    assert [i.key for i in ledger.of("file_read")] == ["a.py", "b.py", "c.py", "sub/e.txt", "f.py"]
    assert [(i.key, i.detail) for i in ledger.of("file_changed")] == [
        ("d.py", "written"),
        ("a.py", "edited"),
        ("g.py", "written"),
        ("f.py", "edited"),
    ]
    assert [i.key for i in ledger.of("command")] == ["cat e.txt", "ls"]


def test_an_imported_codex_compaction_is_scored_on_its_commands_and_patches(
    store: Store,
) -> None:
    """``fixtures/codex-0.104-compacted.jsonl``: before its compaction the session ran
    ``pytest -q tests/test_cart.py`` (exec_command, failed: ``FAILED tests/test_cart.py::
    test_total - assert 9 == 10``) and patched ``cart.py`` (apply_patch). The summary (the
    replacement history) names the request and cart.py, not the command or the failure."""
    (one,) = import_all(store, FIXTURES / "codex-0.104-compacted.jsonl")
    sid = one.report.session.id
    assert sid is not None
    (compaction,) = store.compactions(sid)
    assert compaction.fidelity is not None
    got = {k: (v["kept"], v["total"]) for k, v in compaction.fidelity.items() if v["total"]}
    assert got == {
        "request": (1, 1),
        "command": (0, 1),
        "file_changed": (1, 1),
        "error": (0, 1),
    }
