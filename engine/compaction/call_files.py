"""What a recorded tool call runs, reads and changes, for the artifact ledger (``ledger.py``),
whichever agent made it, and the one form of a path the ledger compares.

- Claude Code, ctxscope, SWE-agent, mini: ``Bash`` runs a command; ``Read``,
  ``NotebookRead`` read; ``Edit``, ``MultiEdit``, ``Write``, ``NotebookEdit`` change.
- Codex CLI: ``shell`` (an argv), ``shell_command``, ``exec_command`` (``cmd``),
  ``local_shell`` and ``container.exec`` run commands; ``apply_patch`` changes the files its
  ``*** Update File:`` / ``*** Add File:`` / ``*** Delete File:`` / ``*** Move to:`` headers
  name.
- Gemini CLI: ``run_shell_command``; ``read_file``, ``read_many_files``; ``write_file``,
  ``replace``, ``edit``.
- OpenHands: ``execute_bash``; ``str_replace_editor`` ``view`` reads, ``create`` /
  ``str_replace`` / ``insert`` / ``undo_edit`` change.

A command's files are read from its words (:mod:`engine.compaction.bash_files`); a command
that carries a patch (``apply_patch <<'EOF'`` in a shell, or Codex's argv ``["apply_patch",
patch]``) changes the patch's files too. A shell's argv (``["bash", "-lc", script]``) is its
script. Codex and Gemini name the folder a command ran in (``workdir``, ``directory``); its
relative paths are taken from there.

:func:`path_key` is how a path is kept and compared: Windows separators as ``/``, the drive
letter in lower case, ``.`` and doubled separators folded, and relative to the session's
working directory when under it: ``C:\\Users\\x\\proj\\!\\X.md`` in a session run in
``C:\\Users\\x\\proj`` is ``!/X.md``, as ``./!/X.md`` and ``!\\X.md`` are.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Mapping
from typing import Any, NamedTuple

from engine.compaction.bash_files import bash_files

_MEMO = 16_384

_READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path"}
_CHANGE_TOOLS = {
    "Edit": ("file_path", "edited"),
    "MultiEdit": ("file_path", "edited"),
    "Write": ("file_path", "written"),
    "NotebookEdit": ("notebook_path", "edited"),
    "write_file": ("file_path", "written"),  # Gemini CLI
    "replace": ("file_path", "edited"),
    "edit": ("file_path", "edited"),
}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "cmd"}
_SCRIPT_FLAGS = {"-c", "-lc", "-ic", "-lic", "-Command", "-command", "/c", "/C"}
_PATCH_HEADER = re.compile(
    r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
)
_PATCH_HOW = {"Update": "patch: updated", "Add": "patch: added", "Delete": "patch: deleted"}
_EDITOR_HOW = {
    "create": "written",
    "str_replace": "edited",
    "insert": "edited",
    "undo_edit": "edited",
}
_WINDOWS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


class CallFacts(NamedTuple):
    """What one call did, as the ledger counts it."""

    command: str = ""
    """The shell text it ran ('' when it ran none)."""
    changed: tuple[tuple[str, str], ...] = ()
    """``(path, how)`` of each file it changed."""
    read: tuple[str, ...] = ()
    workdir: str = ""
    """The folder the command ran in, when the call names one ('' for the session's)."""


NOTHING = CallFacts()

_SUBJECT: dict[str, tuple[str, ...]] = {
    "Read": ("file_path",),
    "NotebookRead": ("notebook_path",),
    **{name: (key,) for name, (key, _) in _CHANGE_TOOLS.items()},
    "Bash": ("command",),
    "execute_bash": ("command",),  # OpenHands
    "run_shell_command": ("command", "directory"),  # Gemini CLI
    "shell_command": ("command", "workdir"),  # Codex
    "exec_command": ("cmd", "workdir"),
    "shell": ("command", "workdir"),
    "container.exec": ("command", "workdir"),
    "local_shell": ("command", "working_directory"),
    "apply_patch": ("input", "patch"),
    "read_file": ("file_path", "absolute_path"),  # Gemini CLI: absolute_path before 0.3
    "read_many_files": ("paths",),
    "str_replace_editor": ("command", "path"),  # OpenHands
}
"""Per tool, the input fields that say what a call does."""
_SHELL_TOOLS = {
    "run_shell_command",
    "shell_command",
    "exec_command",
    "shell",
    "local_shell",
    "container.exec",
}
"""The tools whose subject is a command and the folder it ran in."""
Subject = tuple[str | tuple[str, ...] | None, ...]


def call_subject(name: str, args: Mapping[str, Any]) -> Subject | None:
    """The fields of a call's input that say what it does (hashable), or None for a tool
    that runs, reads and changes nothing the ledger counts."""
    fields = _SUBJECT.get(name)
    if fields is None:
        return None
    return tuple(_hashable(args.get(f)) for f in fields)


def _hashable(value: Any) -> str | tuple[str, ...] | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def call_facts(name: str, args: Mapping[str, Any]) -> CallFacts:
    """What a call of tool ``name`` with input ``args`` runs, reads and changes."""
    subject = call_subject(name, args)
    return NOTHING if subject is None else facts_of(name, subject)


@functools.lru_cache(maxsize=_MEMO)
def facts_of(name: str, subject: Subject) -> CallFacts:
    """:func:`call_facts` from the call's :func:`call_subject` (worked out once per text)."""
    first = subject[0]
    if name in ("Read", "NotebookRead"):
        return CallFacts(read=_paths(first))
    if name in _CHANGE_TOOLS:
        how = _CHANGE_TOOLS[name][1]
        return CallFacts(changed=tuple((p, how) for p in _paths(first)))
    if name in ("Bash", "execute_bash"):
        return _shell(first or "", "")
    if name in _SHELL_TOOLS:
        return _shell(first or "", subject[1] if isinstance(subject[1], str) else "")
    if name == "apply_patch":
        patch = first if isinstance(first, str) else subject[1]
        return CallFacts(changed=_patch_files(patch) if isinstance(patch, str) else ())
    if name == "read_file":
        return CallFacts(read=_paths(first or subject[1]))
    if name == "read_many_files":
        return CallFacts(read=_paths(first))
    if name == "str_replace_editor":
        how = _EDITOR_HOW.get(first, "") if isinstance(first, str) else ""
        if not how:
            return CallFacts(read=_paths(subject[1])) if first == "view" else NOTHING
        return CallFacts(changed=tuple((p, how) for p in _paths(subject[1])))
    return NOTHING


def _paths(value: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(v for v in value if v) if value else ()


def _shell(command: str | tuple[str, ...], workdir: str) -> CallFacts:
    if isinstance(command, tuple):
        if command and command[0] == "apply_patch" and len(command) > 1:
            return CallFacts(command="apply_patch", changed=_patch_files(command[1]))
        command = argv_script(list(command))
    if not command.strip():
        return NOTHING
    changed, read = _shell_files(command)
    return CallFacts(command=command, changed=changed, read=read, workdir=workdir)


def argv_script(argv: list[str]) -> str:
    """The shell text of an argv: a shell's script (``["bash", "-lc", "ls"]`` → ``ls``), else
    the words quoted as a shell would take them."""
    if (
        len(argv) >= 3
        and posixpath.basename(argv[0].replace("\\", "/")).removesuffix(".exe").lower() in _SHELLS
        and argv[-2] in _SCRIPT_FLAGS
    ):
        return argv[-1]
    return shlex.join(argv)


def _shell_files(command: str) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    changed, read = bash_files(command)
    if "*** Begin Patch" in command:
        changed += list(_patch_files(command))
    return tuple(changed), tuple(read)


@functools.lru_cache(maxsize=_MEMO)
def _patch_files(patch: str) -> tuple[tuple[str, str], ...]:
    """The files an ``apply_patch`` patch touches, with how, in order."""
    out: list[tuple[str, str]] = []
    for line in patch.splitlines():
        if m := _PATCH_HEADER.match(line):
            out.append((m[2], _PATCH_HOW[m[1]]) if m[1] else (m[3], "patch: moved to"))
    return tuple(out)


# ---------------------------------------------------------------------- paths
@functools.lru_cache(maxsize=_MEMO)
def path_key(path: str, cwd: str = "", workdir: str = "") -> str:
    """``path`` as the ledger keeps it: ``/`` separators, the drive letter lower-cased, ``.``
    and doubled separators folded; a relative path taken from ``workdir`` (when given); then
    relative to ``cwd`` when under it. A URL is left as it is."""
    path = path.strip()
    if not path or "://" in path:
        return path
    windows = bool(_WINDOWS.match(path) or _WINDOWS.match(cwd) or _WINDOWS.match(workdir))
    p = _slashed(path, windows)
    if workdir and not _absolute(p):
        p = _slashed(workdir, windows).rstrip("/") + "/" + p
    p = _folded(p)
    if cwd and _absolute(p):
        base = _folded(_slashed(cwd, windows)).rstrip("/")
        if base and _same(p[: len(base)], base, windows) and p[len(base) : len(base) + 1] == "/":
            p = p[len(base) + 1 :] or "."
    return p


def _slashed(path: str, windows: bool) -> str:
    """Backslashes as ``/`` in a Windows path (or a relative one written with them only)."""
    if windows or ("\\" in path and "/" not in path):
        path = path.replace("\\", "/")
    if len(path) >= 2 and path[1] == ":" and path[0].isalpha():
        path = path[0].lower() + path[1:]
    return path


def _absolute(path: str) -> bool:
    return path.startswith("/") or bool(re.match(r"^[a-z]:/", path))


def _folded(path: str) -> str:
    """``./a`` → ``a``, ``a//b/./c`` → ``a/b/c``, ``a/../b`` → ``b`` (the drive kept)."""
    drive = path[:2] if re.match(r"^[a-z]:/", path) else ""
    return drive + posixpath.normpath(path[len(drive) :])


def _same(a: str, b: str, windows: bool) -> bool:
    return a.casefold() == b.casefold() if windows else a == b
