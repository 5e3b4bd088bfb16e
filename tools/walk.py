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
the workspace. Directories are listed and entered by descriptor (``tools.confined``:
``O_NOFOLLOW`` from the workspace down), and a file is opened relative to its directory's
descriptor, so a directory swapped for a symlink mid-walk ends that branch instead of
leading outside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.confined import DIR_FLAGS, FILE_FLAGS, open_dir, read_small
from tools.patterns import glob_to_regex

SKIP_DIRS = frozenset({".git"})
"""Directory names never entered (ripgrep is run with ``--glob '!.git'`` to match)."""

IGNORE_FILE = ".gitignore"

Override = Callable[[str, str, bool], bool | None]
"""``(rel, name, is_dir) -> True (take) | False (drop) | None (ask the ignore rules)``."""


@dataclass(frozen=True, slots=True)
class WalkedFile:
    """A regular file met by :func:`walk_files`, reachable only while the walk stands on it
    (its directory's descriptor closes when the walk moves on)."""

    name: str
    dir_fd: int

    def stat(self) -> os.stat_result:
        """The file's own stat (not following a link)."""
        return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)

    def open(self) -> int:
        """A read descriptor of the file, opened in its directory without following a link
        (``OSError`` if it was swapped for one); the caller closes it."""
        return os.open(self.name, FILE_FLAGS, dir_fd=self.dir_fd)


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


def _ignore_text(dir_fd: int) -> str | None:
    data = read_small(dir_fd, IGNORE_FILE)
    return None if data is None else data.decode("utf-8", errors="replace")


def _parent_texts(root: Path, start: Path) -> list[tuple[str, str]]:
    """``(workspace-relative directory, .gitignore text)`` from ``root`` down to
    ``start``'s parent, each read through the confined walk."""
    if start == root:
        return []
    found: list[tuple[str, str]] = []
    rel = ""
    try:
        fd = open_dir(root, ())
    except OSError:
        return []
    try:
        parts = start.relative_to(root).parts[:-1]
        for i in range(len(parts) + 1):
            text = _ignore_text(fd)
            if text is not None:
                found.append((rel, text))
            if i == len(parts):
                break
            child = os.open(parts[i], DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            rel = f"{rel}/{parts[i]}" if rel else parts[i]
    except OSError:
        pass  # a directory on the way vanished or became a link: no rules below it
    finally:
        os.close(fd)
    return found


def parent_ignore_lines(root: Path, start: Path) -> list[str]:
    """The rules of :func:`parent_rules` rewritten relative to ``root``, for ripgrep's
    ``--ignore-file`` (whose patterns are matched relative to its working directory, the
    workspace): ``/top.txt`` in ``src/.gitignore`` becomes ``/src/top.txt``, ``*.log``
    becomes ``/src/**/*.log``."""
    out: list[str] = []
    for rel, text in _parent_texts(root, start):
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
    for rel, text in _parent_texts(root, start):
        rules.extend(parse_gitignore(text, rel))
    return rules


def walk_files(
    root: Path,
    start: Path,
    *,
    gitignore: bool = True,
    override: Override | None = None,
) -> Iterator[tuple[str, WalkedFile]]:
    """Regular files under ``start`` as ``(workspace-relative POSIX path, file)``.

    ``root`` is the resolved workspace and ``start`` a resolved directory inside it. The order
    is ripgrep's ``--sort path``: depth first, siblings by name, files and directories mixed.
    ``override(rel, name, is_dir)`` is consulted before the ignore rules, as ripgrep's
    ``--glob`` is: True takes the entry whatever ``.gitignore`` says, False drops it, None
    leaves the decision to the ignore rules.
    """
    base_rules = parent_rules(root, start) if gitignore else []
    start_rel = "" if start == root else start.relative_to(root).as_posix()
    try:
        fd = open_dir(root, start.relative_to(root).parts)
    except OSError:
        return
    yield from _walk(fd, start_rel, base_rules, gitignore, override)


def _walk(
    fd: int,
    rel: str,
    rules: list[IgnoreRule],
    gitignore: bool,
    override: Override | None,
) -> Iterator[tuple[str, WalkedFile]]:
    """Walk the directory open as ``fd`` (closed when done)."""
    try:
        if gitignore:
            text = _ignore_text(fd)
            if text is not None:
                rules = rules + parse_gitignore(text, rel)
        try:
            with os.scandir(fd) as it:  # lists through a duplicate; fd stays ours
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        yield from _entries(fd, rel, entries, rules, gitignore, override)
    finally:
        os.close(fd)


def _entries(
    fd: int,
    rel: str,
    entries: list[os.DirEntry[str]],
    rules: list[IgnoreRule],
    gitignore: bool,
    override: Override | None,
) -> Iterator[tuple[str, WalkedFile]]:
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
            try:
                child_fd = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # gone, or swapped for a link since it was listed
            yield from _walk(child_fd, child, rules, gitignore, override)
        else:
            yield child, WalkedFile(entry.name, fd)


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
