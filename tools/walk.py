"""A directory walk with ripgrep's defaults: ``.gitignore`` honoured, ``.git`` skipped, no
symlinks followed.

The rules follow git: blank lines and ``#`` comments skipped, ``!`` re-includes, a trailing
``/`` matches directories only, a pattern with a ``/`` (other than a trailing one) is anchored
to the directory of its ``.gitignore``, otherwise it matches a name at any depth; the last
matching rule wins and an ignored directory is not entered (so nothing inside it can be
re-included). ``.gitignore`` files from the workspace root down to the start of the walk all
apply, never those above the workspace (Grep hands the same set to ripgrep, see
:func:`parent_ignore_lines`). Hidden files are
walked (like ``rg --hidden``). Symlinks are never yielded nor followed: a walk cannot leave
the workspace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.patterns import glob_to_regex

SKIP_DIRS = frozenset({".git"})
"""Directory names never entered (ripgrep is run with ``--glob '!.git'`` to match)."""

IGNORE_FILE = ".gitignore"

Override = Callable[[str, str, bool], bool | None]
"""``(rel, name, is_dir) -> True (take) | False (drop) | None (ask the ignore rules)``."""


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One line of a ``.gitignore``, compiled."""

    base: str
    """Directory of the ``.gitignore``, relative to the workspace (``""`` at the root)."""
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anchored: bool


def parse_gitignore(text: str, base: str) -> list[IgnoreRule]:
    """The rules of one ``.gitignore`` whose directory is ``base`` (workspace-relative)."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        regex = re.compile(glob_to_regex(line, braces=False), re.DOTALL)
        rules.append(IgnoreRule(base, regex, negated, dir_only, anchored))
    return rules


def is_ignored(rules: list[IgnoreRule], rel: str, name: str, is_dir: bool) -> bool:
    """Whether the entry at ``rel`` (workspace-relative, named ``name``) is ignored."""
    ignored = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.anchored:
            sub = rel[len(rule.base) + 1 :] if rule.base else rel
            hit = rule.regex.fullmatch(sub) is not None
        else:
            hit = rule.regex.fullmatch(name) is not None
        if hit:
            ignored = not rule.negated
    return ignored


def _load_rules(directory: Path, rel: str) -> list[IgnoreRule]:
    try:
        text = (directory / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return parse_gitignore(text, rel)


def _parent_dirs(root: Path, start: Path) -> list[tuple[Path, str]]:
    """``(directory, workspace-relative path)`` from ``root`` down to ``start``'s parent."""
    if start == root:
        return []
    dirs = [(root, "")]
    directory, rel = root, ""
    for part in start.relative_to(root).parts[:-1]:
        directory = directory / part
        rel = f"{rel}/{part}" if rel else part
        dirs.append((directory, rel))
    return dirs


def parent_ignore_lines(root: Path, start: Path) -> list[str]:
    """The rules of :func:`parent_rules` rewritten relative to ``root``, for ripgrep's
    ``--ignore-file`` (whose patterns are matched relative to its working directory, the
    workspace): ``/top.txt`` in ``src/.gitignore`` becomes ``/src/top.txt``, ``*.log``
    becomes ``/src/**/*.log``."""
    out: list[str] = []
    for directory, rel in _parent_dirs(root, start):
        try:
            text = (directory / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for raw in text.splitlines():
            line = raw.rstrip("\r")
            if not line or line.startswith("#"):
                continue
            if not rel:
                out.append(line)
                continue
            negated = line.startswith("!")
            body = line[1:] if negated else line
            anchored = "/" in body.rstrip("/")
            body = f"/{rel}/{body.lstrip('/')}" if anchored else f"/{rel}/**/{body}"
            out.append(("!" if negated else "") + body)
    return out


def parent_rules(root: Path, start: Path) -> list[IgnoreRule]:
    """Rules of the ``.gitignore`` files in ``root`` and every directory down to, but not
    including, ``start``."""
    rules: list[IgnoreRule] = []
    for directory, rel in _parent_dirs(root, start):
        rules.extend(_load_rules(directory, rel))
    return rules


def walk_files(
    root: Path,
    start: Path,
    *,
    gitignore: bool = True,
    override: Override | None = None,
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Regular files under ``start`` as ``(workspace-relative POSIX path, entry)``.

    ``root`` is the resolved workspace and ``start`` a resolved directory inside it. The order
    is ripgrep's ``--sort path``: depth first, siblings by name, files and directories mixed.
    ``override(rel, name, is_dir)`` is consulted before the ignore rules, as ripgrep's
    ``--glob`` is: True takes the entry whatever ``.gitignore`` says, False drops it, None
    leaves the decision to the ignore rules.
    """
    base_rules = parent_rules(root, start) if gitignore else []
    start_rel = "" if start == root else start.relative_to(root).as_posix()
    yield from _walk(str(start), start_rel, base_rules, gitignore, override)


def _walk(
    path: str,
    rel: str,
    rules: list[IgnoreRule],
    gitignore: bool,
    override: Override | None,
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    if gitignore:
        own = _load_rules(Path(path), rel)
        if own:
            rules = rules + own
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        child = f"{rel}/{entry.name}" if rel else entry.name
        try:
            if entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        if is_dir and entry.name in SKIP_DIRS:
            continue
        decision = override(child, entry.name, is_dir) if override is not None else None
        if decision is False:
            continue
        if decision is None and rules and is_ignored(rules, child, entry.name, is_dir):
            continue
        if is_dir:
            yield from _walk(entry.path, child, rules, gitignore, override)
        else:
            yield child, entry


def hidden_by_rules(root: Path, base: Path, start: Path) -> bool:
    """Whether a walk from ``base`` would never reach ``start`` (a directory below it)
    because ``start`` or a directory between them is skipped or ignored."""
    directory = start
    while directory != base:
        if directory.name in SKIP_DIRS:
            return True
        rel = directory.relative_to(root).as_posix()
        if is_ignored(parent_rules(root, directory), rel, directory.name, True):
            return True
        directory = directory.parent
    return False
