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
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class CallFacts:
    """What one call did, as the ledger counts it."""

    command: str = ""
    """The shell text it ran ('' when it ran none)."""
    changed: tuple[tuple[str, str], ...] = ()
    """``(path, how)`` of each file it changed."""
    read: tuple[str, ...] = ()
    workdir: str = ""
    """The folder the command ran in, when the call names one ('' for the session's)."""


NOTHING = CallFacts()


def call_facts(name: str, args: Mapping[str, Any]) -> CallFacts:
    """What a call of tool ``name`` with input ``args`` runs, reads and changes."""
    if name in _READ_TOOLS:
        return CallFacts(read=_paths(args.get(_READ_TOOLS[name])))
    if name in _CHANGE_TOOLS:
        key, how = _CHANGE_TOOLS[name]
        return CallFacts(changed=tuple((p, how) for p in _paths(args.get(key))))
    if name in ("Bash", "shell_command", "execute_bash", "run_shell_command", "exec_command"):
        command = args.get("cmd") if name == "exec_command" else args.get("command")
        workdir = args.get("workdir") or args.get("directory") or ""
        return _shell(_script(command), str(workdir) if isinstance(workdir, str) else "")
    if name in ("shell", "local_shell", "container.exec"):
        workdir = args.get("workdir") or args.get("working_directory") or ""
        return _shell(
            _script(args.get("command")), str(workdir) if isinstance(workdir, str) else ""
        )
    if name == "apply_patch":
        patch = args.get("input", args.get("patch", ""))
        return CallFacts(changed=_patch_files(str(patch)) if isinstance(patch, str) else ())
    if name == "read_file":  # Gemini CLI: absolute_path before 0.3, file_path since
        return CallFacts(read=_paths(args.get("file_path") or args.get("absolute_path")))
    if name == "read_many_files":
        return CallFacts(read=_paths(args.get("paths")))
    if name == "str_replace_editor":  # OpenHands
        path, how = args.get("path"), _EDITOR_HOW.get(str(args.get("command")), "")
        if not how:
            return CallFacts(read=_paths(path)) if args.get("command") == "view" else NOTHING
        return CallFacts(changed=tuple((p, how) for p in _paths(path)))
    return NOTHING


def _paths(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str) and v)
    return ()


def _script(command: Any) -> str | list[str]:
    """A command as recorded: a string, or an argv (a list of strings)."""
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        return command
    return command if isinstance(command, str) else ""


def _shell(command: str | list[str], workdir: str) -> CallFacts:
    if isinstance(command, list):
        if command and command[0] == "apply_patch" and len(command) > 1:
            return CallFacts(command="apply_patch", changed=_patch_files(command[1]))
        command = argv_script(command)
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


@functools.lru_cache(maxsize=_MEMO)
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
