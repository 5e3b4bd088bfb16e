"""Entire checkpoints (entire.io: a git-hook tool that keeps each agent session's transcript
on a metadata branch, ``entire/checkpoints/v1``, formerly ``entire/sessions/v1``).

The branch's tree holds one folder per checkpoint at ``<id[:2]>/<id[2:]>/`` (entireio/cli,
``CheckpointPath``), with (the field names of entireio/cli's ``CheckpointMetadata`` and
``SessionMetadata``):

- ``metadata.json``: the checkpoint (``cli_version``, ``checkpoint_id``, ``strategy``,
  ``branch``, ``files_touched``, ``sessions``: ``[{metadata, transcript, context,
  content_hash, prompt}]`` paths in the tree, ``token_usage``);
- ``0/``, ``1/``…: one folder per session, with its ``metadata.json`` (``session_id``,
  ``agent``: "Claude Code", "Codex", "Gemini CLI"…, ``created_at``, ``token_usage``
  ``{input_tokens, cache_creation_tokens, cache_read_tokens, output_tokens,
  api_call_count}``) and the agent's native transcript (``full.jsonl``).

A checkpoint folder, or a folder holding many (the branch's tree checked out: ``git worktree
add ../checkpoints entire/checkpoints/v1``), imports each session's transcript with its own
agent's reader (sniffed from the content, as ``import`` does); the session metadata's
``token_usage`` is kept as Entire's own figure (``recorded["entire"]``) and compared with the
transcript's usage: a difference is named in a warning.

Entire 0.10 keeps each checkpoint on a ref of its own instead, ``refs/entire/checkpoints/
<shard>/<ULID>`` with the shard the id's last two characters (entireio/cli's git-refs backend),
whose tree is the checkpoint folder itself; a repository may hold both. Other refs under
``refs/entire/checkpoints/`` (``v2/main``, ``v2/full/…``: another layout) are not read, and
counted.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, TypeGuard

from engine.recordings.base import Parsed

FORMAT = "entire-checkpoint"
BRANCH = "entire/checkpoints/v1"
REFS = (f"refs/heads/{BRANCH}", f"refs/remotes/origin/{BRANCH}")
"""Where a repository keeps the branch: its own, else the one fetched from ``origin``."""
TRANSCRIPTS = ("full.jsonl", "raw_transcript")
"""A session's native transcript: ``full.jsonl`` (v1 layout), ``raw_transcript`` (the newer
layout, beside Entire's own condensed ``transcript.jsonl``, which is not the agent's file)."""
READ_FROM_BRANCH = ("metadata.json", *TRANSCRIPTS)
USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "cache_creation_tokens": "cache_creation_input_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "output_tokens": "output_tokens",
}
"""Entire's ``token_usage`` fields, and the usage field each one counts."""


def _json(path: Path) -> dict[str, Any] | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def is_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` is one checkpoint: a ``metadata.json`` with a ``checkpoint_id``
    and its ``sessions``."""
    meta = _json(folder / "metadata.json")
    return meta is not None and isinstance(meta.get("checkpoint_id"), str) and "sessions" in meta


def checkpoints(folder: Path) -> list[Path]:
    """``folder`` when it is a checkpoint, else the checkpoints under it (sorted); [] when
    there are none."""
    if is_checkpoint(folder):
        return [folder]
    return sorted(m.parent for m in folder.glob("*/*/metadata.json") if is_checkpoint(m.parent))


def _session_folders(checkpoint: Path, meta: dict[str, Any]) -> list[Path]:
    """The checkpoint's session folders: those its ``sessions`` name (paths in the tree, read
    relative to the checkpoint), else its numbered folders."""
    out = []
    refs = meta.get("sessions")
    for ref in refs if isinstance(refs, list) else []:
        where = ref.get("metadata") if isinstance(ref, dict) else None
        if isinstance(where, str) and len(Path(where).parts) >= 2:
            folder = checkpoint / Path(where).parts[-2]
            if folder.is_dir() and folder not in out:
                out.append(folder)
    if not out:
        out = sorted(
            (p for p in checkpoint.iterdir() if p.is_dir() and p.name.isdigit()),
            key=lambda p: int(p.name),
        )
    return out


def _transcript(folder: Path, meta: dict[str, Any]) -> Path | None:
    named = meta.get("transcript_path")
    for name in (*TRANSCRIPTS, Path(named).name if isinstance(named, str) and named else ""):
        if name and (folder / name).is_file():
            return folder / name
    return None


def parse_checkpoints(
    folder: Path,
    parse: Callable[[Path], list[Parsed]],
    starts: dict[Path, list[Path]] | None = None,
) -> list[tuple[Path, Parsed]]:
    """Every session of the checkpoints under ``folder``, each transcript read by ``parse``
    (the import's own, which sniffs the agent), with Entire's figures kept and compared.
    A session folder without a transcript is named in the first session's warnings.

    Entire copies a session's whole transcript into every checkpoint the session reaches, so
    one session is often in several checkpoints, each copy the start of the next: it is read
    once, from the longest copy (:func:`_read_once`), which names the others in a warning —
    each copy imported would bill the session's first requests once per checkpoint. The
    copies not read are put in ``starts`` under the copy read (an import finds the session
    that stored one of them before, and stores the longer copy into it)."""
    out: list[tuple[Path, Parsed]] = []
    missing: list[str] = []
    found: list[_Copy] = []
    for checkpoint in checkpoints(folder):
        meta = _json(checkpoint / "metadata.json") or {}
        for session in _session_folders(checkpoint, meta):
            session_meta = _json(session / "metadata.json") or {}
            transcript = _transcript(session, session_meta)
            if transcript is None:
                missing.append(str(session))
            else:
                found.append(_Copy(transcript, meta, session_meta))
    for copy, within in _read_once(found):
        if starts is not None and within:
            starts[copy.transcript] = [c.transcript for c in within]
        for parsed in parse(copy.transcript):
            keep(parsed, copy.checkpoint, copy.session)
            if within:
                ids = ", ".join(
                    str(c.checkpoint.get("checkpoint_id", c.transcript)) for c in within
                )
                parsed.warnings.append(
                    f"the transcripts Entire kept of this session in {len(within)} other "
                    f"checkpoint(s) ({ids}) are the start of this one: read once, here"
                )
            out.append((copy.transcript, parsed))
    if missing and out:
        out[0][1].warnings.append(
            f"{len(missing)} Entire session folder(s) without a transcript: " + ", ".join(missing)
        )
    return out


@dataclass(frozen=True)
class _Copy:
    """One checkpoint's copy of a session's transcript, with the checkpoint's and the
    session's ``metadata.json``."""

    transcript: Path
    checkpoint: dict[str, Any]
    session: dict[str, Any]


def _read_once(copies: list[_Copy]) -> list[tuple[_Copy, list[_Copy]]]:
    """The copies to read, in their order, each with the copies of the same session (by its
    ``session_id``) whose bytes it begins with: those are not read. Copies that differ
    otherwise (a session rewound, then gone on) are each read."""
    by_session: dict[str, list[_Copy]] = {}
    for copy in copies:
        sid = copy.session.get("session_id")
        if isinstance(sid, str) and sid:
            by_session.setdefault(sid, []).append(copy)
    within: dict[Path, list[_Copy]] = {}
    held: set[Path] = set()
    for group in by_session.values():
        kept: list[_Copy] = []
        for copy in sorted(group, key=lambda c: -c.transcript.stat().st_size):
            longer = next((k for k in kept if _begins_with(k.transcript, copy.transcript)), None)
            if longer is None:
                kept.append(copy)
            else:
                within.setdefault(longer.transcript, []).append(copy)
                held.add(copy.transcript)
    return [(c, within.get(c.transcript, [])) for c in copies if c.transcript not in held]


def _begins_with(longer: Path, start: Path, chunk: int = 1 << 20) -> bool:
    """Whether the bytes of ``longer`` begin with all the bytes of ``start``, read a piece at
    a time."""
    with open(longer, "rb") as a, open(start, "rb") as b:
        while piece := b.read(chunk):
            if a.read(len(piece)) != piece:
                return False
    return True


def keep(parsed: Parsed, checkpoint: dict[str, Any], session: dict[str, Any]) -> None:
    """Entire's facts about the session in ``recorded["entire"]``, and its ``token_usage``
    compared with the transcript's own usage (a difference named in a warning)."""
    facts: dict[str, Any] = {
        k: v
        for k, v in (
            ("checkpoint_id", checkpoint.get("checkpoint_id")),
            ("cli_version", checkpoint.get("cli_version")),
            ("branch", checkpoint.get("branch")),
            ("agent", session.get("agent")),
            ("session_id", session.get("session_id")),
        )
        if isinstance(v, str) and v
    }
    usage = session.get("token_usage")
    if isinstance(usage, dict):
        figures = {k: usage[k] for k in (*USAGE_FIELDS, "api_call_count") if _count(usage.get(k))}
        facts["token_usage"] = figures
        own = transcript_usage(parsed)
        theirs = {k: figures.get(k, 0) for k in (*USAGE_FIELDS, "api_call_count")}
        start = session.get("compact_transcript_start")
        if _count(start) and start > 0:
            # Entire counted this checkpoint's part: its condensed transcript from that line
            facts["token_usage_from"] = start
        elif own != theirs:
            parsed.warnings.append(
                "Entire's metadata.json counts "
                + _said(theirs)
                + "; the transcript's usage records count "
                + _said(own)
            )
    parsed.recorded["entire"] = facts


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def transcript_usage(parsed: Parsed) -> dict[str, int]:
    """The transcript's usage summed over its requests (subagents included), in Entire's
    names."""
    out = dict.fromkeys((*USAGE_FIELDS, "api_call_count"), 0)
    for session in (parsed, *parsed.children):
        for item in session.items:
            if item.kind == "assistant" and item.usage is not None:
                out["api_call_count"] += 1
                for name, field in USAGE_FIELDS.items():
                    out[name] += int(getattr(item.usage, field))
    return out


def _said(usage: dict[str, int]) -> str:
    return (
        f"{usage['api_call_count']:,} API calls, {usage['input_tokens']:,} input, "
        f"{usage['cache_creation_tokens']:,} cache write, {usage['cache_read_tokens']:,} "
        f"cache read, {usage['output_tokens']:,} output"
    )


def is_repository(folder: Path) -> bool:
    """Whether ``folder`` is a git work tree's top (``.git`` in it) or a bare repository."""
    return (folder / ".git").exists() or (
        (folder / "HEAD").is_file() and (folder / "objects").is_dir()
    )


def branch_ref(repo: Path) -> str | None:
    """The ref of Entire's checkpoint branch in the repository ``repo`` (:data:`REFS`), or
    None: no such branch, or no ``git`` to ask."""
    for ref in REFS:
        done = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{tree}}")
        if done is not None and done.returncode == 0:
            return ref
    return None


CHECKPOINT_REFS = "refs/entire/checkpoints/"
ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
"""A checkpoint id on a ref of its own: a ULID (Crockford's base 32, 26 characters)."""


def per_checkpoint_id(ref: str) -> str | None:
    """The checkpoint id of an Entire 0.10 per-checkpoint ref
    (``refs/entire/checkpoints/<id[-2:]>/<id>``), or None for any other ref."""
    if not ref.startswith(CHECKPOINT_REFS):
        return None
    parts = ref[len(CHECKPOINT_REFS) :].split("/")
    if len(parts) != 2 or not ULID.fullmatch(parts[1]) or parts[0] != parts[1][-2:]:
        return None
    return parts[1]


def checkpoint_refs(repo: Path) -> tuple[list[tuple[str, PurePosixPath]], int]:
    """The per-checkpoint refs of ``repo``, each with the folder its checkpoint is read into
    (``<shard>/<id>``, a checkpoint's depth as on the branch), and how many other refs under
    :data:`CHECKPOINT_REFS` were passed over."""
    done = _git(repo, "for-each-ref", "--format=%(refname)", CHECKPOINT_REFS)
    if done is None or done.returncode != 0:
        return [], 0
    found: list[tuple[str, PurePosixPath]] = []
    other = 0
    for ref in done.stdout.decode("utf-8", "surrogateescape").split():
        checkpoint = per_checkpoint_id(ref)
        if checkpoint is None:
            other += 1
        else:
            found.append((ref, PurePosixPath(checkpoint[-2:], checkpoint)))
    return found, other


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def read_branch(repo: Path, ref: str, into: Path) -> int:
    """The checkpoint files of ``ref``'s tree written under ``into`` at their paths in the
    tree (:func:`read_trees`). Returns how many files were written."""
    return read_trees(repo, [(ref, PurePosixPath())], into)


def read_trees(repo: Path, trees: list[tuple[str, PurePosixPath]], into: Path) -> int:
    """The checkpoint files of each ref's tree written under ``into`` at the ref's folder joined
    with their paths in the tree, read with git's plumbing (``ls-tree`` of each ref, then one
    ``cat-file --batch`` for all), nothing checked out: each checkpoint's and session's
    ``metadata.json`` and each session's transcript (:data:`READ_FROM_BRANCH`). Returns how
    many files were written.

    Only regular files at a checkpoint's depth are taken (``<id[:2]>/<id[2:]>/metadata.json``,
    ``<id[:2]>/<id[2:]>/<n>/<file>``, the ref's folder counted); a path with ``..`` or a link
    is not."""
    wanted: list[tuple[PurePosixPath, str]] = []
    for ref, folder in trees:
        wanted += _checkpoint_files(repo, ref, folder)
    if not wanted:
        return 0
    try:
        proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return 0
    assert proc.stdin is not None and proc.stdout is not None
    written = 0
    try:
        for path, sha in wanted:  # one object at a time: the pipes never fill
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            body = _batch_object(proc.stdout)
            if body is None:
                continue
            target = into.joinpath(*path.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            written += 1
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait(timeout=60)
    return written


def _checkpoint_files(
    repo: Path, ref: str, folder: PurePosixPath
) -> list[tuple[PurePosixPath, str]]:
    """The files of ``ref``'s tree to read (:func:`read_trees`), each at ``folder`` joined with
    its path in the tree, with its blob's id."""
    listing = _git(repo, "ls-tree", "-r", "-z", "--full-tree", ref)
    if listing is None or listing.returncode != 0:
        return []
    wanted: list[tuple[PurePosixPath, str]] = []
    for entry in listing.stdout.split(b"\0"):
        head, _, name = entry.partition(b"\t")
        fields = head.split()
        if len(fields) != 3 or fields[0] not in (b"100644", b"100755"):
            continue
        path = folder / PurePosixPath(name.decode("utf-8", "surrogateescape"))
        if path.name in READ_FROM_BRANCH and len(path.parts) in (3, 4) and ".." not in path.parts:
            wanted.append((path, fields[2].decode()))
    return wanted


def _batch_object(out: IO[bytes]) -> bytes | None:
    """One answer of ``git cat-file --batch``: ``<sha> blob <size>``, the bytes and a newline
    (None for ``<sha> missing`` or another kind)."""
    header = out.readline().split()
    if len(header) != 3:
        return None
    body = out.read(int(header[2]))
    out.read(1)
    return body if header[1] == b"blob" else None
