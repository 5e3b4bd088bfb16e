"""A stored session's figures (:mod:`engine.figures`) with the rules of the agent that ran it.

The one door every surface goes through: ``session_figures(store, session, settings)``. A
recording is measured by its own agent's rules (the agents' registry:
:func:`engine.recordings.agents.context_rules_for_session`); ctxscope's own session by seed
000's (its ``context_window``, compacting at ``threshold_ratio`` of it).

The figures are made here (:func:`made_figures`) and stored (schema 21): a listing reads the
stored copy while it was made with what is in force now (:func:`figures_key`: the price data's
version, the ``[prices]`` sections, what the agents' rules read; and, per session,
:func:`project_part`: what the rules read of the project's own settings files), and makes and
keeps them again otherwise; every write that changes them clears them in its own transaction
(docs/storage.md). So ``sessions``, ``show`` and ``context`` need neither the usage rows nor
genai-prices for a session whose figures are stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.figures import Call, Rules, SessionFigures, WindowRules, figures_from_calls
from engine.models import Compaction, Outcome, Session, UsageRecord
from engine.settings.config import Settings
from engine.settings.params import session_settings
from engine.store import Store

if TYPE_CHECKING:  # pricing is imported when figures are made, not when they are read
    from engine.figures.spend import Spend
    from engine.store.history import UsageGroup
    from engine.store.usage import StoredFigures


def own_rules(settings: Settings) -> Rules:
    """ctxscope's own agent: its session's window, and seed 000's trigger in it."""
    return Rules(
        window=settings.context_window,
        auto_compact_at=settings.threshold_tokens,
        window_source="the session's context_window",
        trigger_source=f"seed 000: threshold_ratio {settings.threshold_ratio} × context_window",
    )


def rules_for(
    store: Store,
    session: Session,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    usages: Sequence[UsageRecord] | None = None,
    compactions: Sequence[Compaction] | None = None,
) -> WindowRules:
    """The rules a session is measured by: its own agent's for a recording, seed 000's for
    ctxscope's own (``usages``, ``compactions``: its usage records and compactions, when the
    caller has read them)."""
    if not session.recorded:
        return own_rules(session_settings(settings, session))
    from engine.recordings.agents import context_rules_for_session

    return context_rules_for_session(store, session, settings, env, usages, compactions)


def counted(compaction: Compaction) -> bool:
    """A compaction that holds: it succeeded (or fell back to a summary) and was not undone."""
    return (
        compaction.outcome in (Outcome.SUCCESS, Outcome.FALLBACK) and compaction.undone_at is None
    )


RULE_VARIABLES = (
    "HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "ANTHROPIC_BETAS",
    "CLAUDE_CODE_DISABLE_1M_CONTEXT",
    "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
    "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    "DISABLE_AUTO_COMPACT",
)
"""The environment variables the agents' rules read (``context_rules`` in
``engine/recordings/agents/``; tests/engine/test_stored_figures.py checks the list against
their modules): a change to one makes the stored figures be made again."""

RULE_SETTINGS = (
    "model",
    "context_window",
    "threshold_ratio",
    "watch_context_window",
    "watch_compact_reserve",
    "watch_codex_compact_ratio",
    "watch_codex_dir",
    "watch_claude_dir",
)
"""The settings the figures are made with besides ``[prices]`` (checked the same way)."""

KEY_FORM = 3
"""The key's own form, in its rules digest: 2 since a session's key names what its rules read
of the project's settings files (:func:`project_part`), 3 since the figures say whether the
recording has times of its own (``times_recorded``); figures kept before are made again
once."""

PROJECT = "; project "
"""Where a session's stored key goes on with its project part (:func:`project_part`)."""


def figures_key(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """What stored figures were made with, as one string: genai-prices' version, a digest of
    the ``[prices]`` sections, and a digest of what the agents' rules read outside the
    database (:data:`RULE_VARIABLES`, :data:`RULE_SETTINGS`, the user's Claude Code
    ``settings.json`` and Codex ``config.toml`` by size and time). Figures stored under
    another key are made again. What a session's rules read of its project's own settings
    (Claude Code's ``<cwd>/.claude/settings*.json``) follows it, per session
    (:func:`project_part`)."""
    environ = os.environ if env is None else env
    home = Path(environ.get("HOME") or Path.home())
    claude = (
        Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    )
    codex = (
        settings.watch_codex_dir.parent
        if settings.watch_codex_dir is not None
        else Path(environ["CODEX_HOME"])
        if environ.get("CODEX_HOME")
        else home / ".codex"
    )
    files = [_stat(claude / "settings.json"), _stat(codex / "config.toml")]
    prices = sorted((k, v.model_dump_json()) for k, v in settings.prices.items())
    rules = (
        KEY_FORM,
        [environ.get(n) for n in RULE_VARIABLES],
        [str(getattr(settings, n)) for n in RULE_SETTINGS],
        files,
    )
    return (
        f"genai-prices {_price_data_version()}"
        f"; prices {_digest(repr(prices))}; rules {_digest(repr(rules))}"
    )


def project_part(files: Sequence[str], fields: Sequence[str]) -> str:
    """A session's key beyond :func:`figures_key`: the project settings files its rules read,
    the fields they read there (dotted paths, ``*`` for every key) and a digest of those
    fields' values now (a file that is not there, or not a JSON object: none); ``""`` for
    rules that read no project file. Stored in the key, so a listing checks it again without
    asking the agent (:func:`_still_holds`)."""
    if not files:
        return ""
    read = [_fields_of(Path(f), fields) for f in files]
    values = _digest(json.dumps(read, sort_keys=True, default=str))
    return PROJECT + json.dumps({"files": list(files), "fields": list(fields), "read": values})


def _fields_of(path: Path, fields: Sequence[str]) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    return {f: _at(data, f.split(".")) for f in fields}


def _at(value: Any, path: list[str]) -> Any:
    """The value at a dotted path (``*``: each key's, those that have one); None: none."""
    if not path:
        return value
    if not isinstance(value, dict):
        return None
    head, rest = path[0], path[1:]
    if head == "*":
        found = {k: _at(v, rest) for k, v in value.items()}
        return {k: v for k, v in found.items() if v is not None} or None
    return _at(value.get(head), rest)


def _still_holds(priced_with: str, key: str, checked: dict[str, bool]) -> bool:
    """Figures stored under ``priced_with`` hold under ``key``: the same key, or the key and a
    project part that :func:`project_part` gives again from the files as they are now
    (``checked``: the parts seen in this listing, by their text)."""
    if priced_with == key:
        return True
    if not priced_with.startswith(key + PROJECT):
        return False
    part = priced_with[len(key) :]
    if part not in checked:
        try:
            spec = json.loads(part[len(PROJECT) :])
            checked[part] = project_part(spec["files"], spec["fields"]) == part
        except (ValueError, KeyError, TypeError):
            checked[part] = False
    return checked[part]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@cache
def _price_data_version() -> str:
    """The installed genai-prices' version (importing it costs 0.1 s): the name of its
    ``dist-info`` folder beside the package, which is where :mod:`importlib.metadata` finds it
    too, without importing that module and the e-mail parser it reads the metadata with (10–30
    ms of every looking command); from :mod:`importlib.metadata` where there is not exactly one
    such folder."""
    from importlib.util import find_spec

    spec = find_spec("genai_prices")
    if spec is not None and spec.origin is not None:
        found = list(Path(spec.origin).parent.parent.glob("genai_prices-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix("genai_prices-").removesuffix(".dist-info")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return "absent"


def session_figures(
    store: Store,
    session: Session,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    rules: WindowRules | None = None,
) -> SessionFigures:
    """The figures of a stored session, as every surface prints them: the stored ones while
    they hold (:func:`sessions_figures`), else made and kept; with ``rules`` (a caller's own),
    made and not kept."""
    assert session.id is not None
    if rules is not None:
        return made_figures(store, session, settings, env, rules)
    return sessions_figures(store, [session], settings, env)[session.id]


def recorded_window(
    store: Store, session: Session, settings: Settings, figures: SessionFigures | None = None
) -> int | None:
    """The window a recording is planned in
    (:func:`engine.recordings.own_agent.planning_settings`): its own agent's, as its figures
    print it (``figures``: the session's, when the caller has them). None for ctxscope's own
    session, which plans in the window it stores."""
    if not session.recorded or session.id is None:
        return None
    return (figures or session_figures(store, session, settings)).window


def sessions_figures(
    store: Store,
    sessions: Sequence[Session],
    settings: Settings,
    env: Mapping[str, str] | None = None,
    sums: Mapping[int, tuple[int, int]] | None = None,
    every: bool = False,
) -> dict[int, SessionFigures]:
    """The figures of ``sessions``, by id: each session's stored figures when they were made
    with what is in force now (:func:`figures_key`), else made (:func:`made_figures`) and
    kept. ``sums`` are each session's history tokens and counted compactions where the caller
    has them (:meth:`Store.list_sessions` sums both), else they are read; ``every``: the
    sessions are every session of the store (one query for their stored figures)."""
    key = figures_key(settings, env)
    ids = [s.id for s in sessions if s.id is not None]
    stored = store.stored_figures(None if every else ids)
    out: dict[int, SessionFigures] = {}
    to_make: list[Session] = []
    checked: dict[str, bool] = {}
    for session in sessions:
        assert session.id is not None
        sid = session.id
        read = stored.get(sid)
        if (
            read is not None
            and read.figures is not None
            and _still_holds(read.priced_with, key, checked)
        ):
            history, compactions = (
                sums[sid]
                if sums and sid in sums
                else _known(store, sid, read.generation) or history_sums(store, sid)
            )
            try:
                out[sid] = SessionFigures.from_stored(
                    read.figures, history_tokens=history, compactions=compactions
                )
                continue
            except (KeyError, TypeError):  # kept by another version: made again
                pass
        to_make.append(session)
    # Many to make (the first listing after an import of a whole history): every session's
    # usage sums in one query, not one each.
    groups: dict[int, list[UsageGroup]] | None = None
    if len(to_make) > 1:
        groups = {s.id: [] for s in to_make if s.id is not None}
        for group in store.usage_groups():
            if group.session_id in groups:
                groups[group.session_id].append(group)
    made: list[tuple[StoredFigures, str, dict[str, Any]]] = []
    for session in to_make:
        assert session.id is not None
        sid = session.id
        out[sid], rules = _made(
            store,
            session,
            settings,
            env,
            groups=None if groups is None else groups[sid],
            sums=sums.get(sid) if sums else None,
        )
        read = stored.get(sid)
        if read is not None:
            part = project_part(rules.project_files, rules.project_fields)
            made.append((read, key + part, out[sid].stored()))
    store.keep_figures(made)
    return out


_KNOWN: weakref.WeakKeyDictionary[Store, dict[int, tuple[int, tuple[int, int]]]] = (
    weakref.WeakKeyDictionary()
)
"""Per store, the history sums (:func:`history_sums`) a writer in this process kept with a
session's figures it made as it wrote the session (``watch``: :func:`keep_made`), by session:
the generation they were kept at, and the sums. Any later write of the session moves its
generation on, and they are read from the store again."""


def _known(store: Store, sid: int, generation: int) -> tuple[int, int] | None:
    known = _KNOWN.get(store, {}).get(sid)
    return known[1] if known is not None and known[0] == generation else None


def history_sums(
    store: Store, sid: int, compactions: Sequence[Compaction] | None = None
) -> tuple[int, int]:
    """A session's history tokens and counted compactions, as the store sums them
    (``compactions``: the session's, when the caller has read them)."""
    done = store.compactions(sid) if compactions is None else compactions
    return store.history_tokens(sid), sum(1 for c in done if counted(c))


def made_figures(
    store: Store,
    session: Session,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    rules: WindowRules | None = None,
) -> SessionFigures:
    """The figures of a stored session made from its calls, rules and prices (what the stored
    figures are a copy of)."""
    return _made(store, session, settings, env, rules)[0]


def _made(
    store: Store,
    session: Session,
    settings: Settings,
    env: Mapping[str, str] | None = None,
    rules: WindowRules | None = None,
    *,
    groups: Sequence[UsageGroup] | None = None,
    sums: tuple[int, int] | None = None,
) -> tuple[SessionFigures, WindowRules]:
    """:func:`made_figures`, and the rules they were made by; ``groups`` (its usage sums) and
    ``sums`` (its history tokens and counted compactions) where the caller has read them (a
    listing, for every session at once), else they are read here."""
    assert session.id is not None
    sid = session.id
    model = calls_model(session, settings)
    usages = store.usages(sid)
    calls = [call_of(u, model) for u in usages]
    history_tokens, compactions = history_sums(store, sid) if sums is None else sums
    spend, note = session_spend(store, sid, session.model, settings, groups)
    if rules is None:
        rules = rules_for(store, session, settings, env, usages)
    figures = figures_from_calls(
        calls,
        rules,
        spend,
        note,
        agent=agent_label(session),
        model=model,
        history_tokens=history_tokens,
        compactions=compactions,
    )
    return figures, rules


def calls_model(session: Session, settings: Settings) -> str:
    """The model a session's call is on when its usage record names none: the session's (for
    ctxscope's own session without one, the settings')."""
    return session.model or ("" if session.recorded else settings.model)


def call_of(usage: UsageRecord, model: str) -> Call:
    """A stored usage record as the call the figures count (``model``: :func:`calls_model`)."""
    return Call(
        usage=usage.usage,
        model=_normal(usage.model or model),
        created_at=usage.created_at,
        billed=usage.source != "local",
        input_estimate=usage.local_estimate,
    )


def keep_made(
    store: Store,
    session: Session,
    settings: Settings,
    figures: SessionFigures,
    rules: WindowRules,
    env: Mapping[str, str] | None = None,
    with_sums: bool = False,
) -> int | None:
    """Keep figures a caller made of ``session`` as it is stored now (``watch``, which brings
    them up to date by what it wrote: :mod:`engine.recordings.followed_figures`) as
    :func:`sessions_figures` keeps what it makes: under :func:`figures_key` and the rules'
    :func:`project_part`, at the generation read here. Call it in the transaction of the
    write they follow (a write after it moves the generation on: they are not kept then).
    The generation they were kept at (every later write of the session moves it on), or None
    when they were not kept. ``with_sums``: the figures' history tokens and compactions are
    the session's as stored (:func:`history_sums`): :func:`session_figures` in this process
    takes them too, while the session is not written again."""
    assert session.id is not None
    read = store.stored_figures([session.id]).get(session.id)
    if read is None:  # the database cannot be written: nothing is kept
        return None
    key = figures_key(settings, env) + project_part(rules.project_files, rules.project_fields)
    if not store.keep_figures([(read, key, figures.stored())]):
        return None
    sums = (figures.history_tokens, figures.compactions)
    known = _KNOWN.setdefault(store, {})
    if with_sums:
        known[session.id] = (read.generation, sums)
    else:
        known.pop(session.id, None)
    return read.generation


def session_spend(
    store: Store,
    sid: int,
    model: str,
    settings: Settings,
    groups: Sequence[UsageGroup] | None = None,
) -> tuple[Spend, str]:
    """What a session's billed calls cost, summed and priced as the report card does: each
    request at the model that answered it (one that names none: the session's ``model``);
    ``groups``: its usage sums (:meth:`Store.usage_groups`), when the caller has them."""
    from engine.figures.spend import Spend, priced, prices

    known = prices(settings)
    spend = Spend()
    used: dict[str, None] = {}
    for group in store.usage_groups(session=sid) if groups is None else groups:
        answered = group.model or model
        used[answered] = None
        spend.add(priced(group, known.rates_for(answered, group.day, group.long)))
    notes = "; ".join(known.of(m).note for m in used) if used else known.of(model).note
    return spend, notes


def agent_label(session: Session) -> str:
    """Who ran the session in words, as stored with it."""
    if not session.recorded:
        return "ctxscope"
    from engine.recordings.agents import agent_of, label_of

    return label_of(agent_of(session))


def _normal(model: str) -> str:
    """A model id as the price data names it: a provider prefix (``anthropic/``) dropped."""
    return model.rsplit("/", 1)[-1] if "/" in model else model
