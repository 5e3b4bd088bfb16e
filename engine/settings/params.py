"""The numbers a session plans with: its strategy's parameters, stored with the session.

A session keeps, from the moment it is created and with every recorded switch, the numbers
its strategy plans with (:class:`~engine.models.StrategyParams`), so a later command without
the ``--config`` it was started with plans with the same numbers. They are:

- the **context window** (``Settings.context_window``), for every strategy: each plans in it,
  and no request is sent larger than it;
- for ``layered`` (seed 000): :data:`LAYERED_NUMBERS`, the engine's own top-level settings
  ``threshold_ratio``, ``keep_rounds`` and ``min_messages``;
- for every other strategy: its whole ``[strategies.<name>]`` section (e.g. mock-user's
  ``profile``, ``context_window``, ``trigger_tokens``, ``keep_recent_steps``,
  ``long_result_chars``).

Everything else (the model, tool limits, timeouts, the summary timeout, the bash policy) stays
process configuration: ``--config`` and ``CTXSCOPE_*`` still change it for every command.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from engine.models import Session, StrategyParams
from engine.settings.config import Settings
from engine.settings.strategies import StrategySettings

LAYERED_NUMBERS = ("threshold_ratio", "keep_rounds", "min_messages")
"""Seed 000's own numbers besides the window: top-level settings, not a ``[strategies.*]``
section."""

WINDOW = "context_window"


class ParamsError(ValueError):
    """A strategy number that does not exist or has a value it cannot take; one line."""


def _section_field(strategy: str) -> str:
    """The attribute of :class:`StrategySettings` holding ``strategy``'s section."""
    for attr, info in StrategySettings.model_fields.items():
        if strategy in (attr, info.alias):
            return attr
    raise ParamsError(f"unknown strategy {strategy!r}")


def _section_type(strategy: str) -> type[BaseModel]:
    kind = StrategySettings.model_fields[_section_field(strategy)].annotation
    assert isinstance(kind, type) and issubclass(kind, BaseModel)
    return kind


def known_numbers(strategy: str) -> list[str]:
    """The names ``--set`` takes for ``strategy`` (the window is ``--window``; for layered,
    ``context_window`` is accepted too, being seed 000's own number)."""
    if strategy == "layered":
        return [WINDOW, *LAYERED_NUMBERS]
    return list(_section_type(strategy).model_fields)


def strategy_params(settings: Settings, strategy: str) -> StrategyParams:
    """The numbers ``settings`` give ``strategy``: what a new session stores."""
    if strategy == "layered":
        numbers = {name: getattr(settings, name) for name in LAYERED_NUMBERS}
    else:
        section = getattr(settings.strategies, _section_field(strategy))
        numbers = section.model_dump()
    return StrategyParams(context_window=settings.context_window, numbers=numbers)


def with_params(settings: Settings, strategy: str, params: StrategyParams) -> Settings:
    """``settings`` planning with ``params`` for ``strategy``: the window and the strategy's
    numbers replaced. A stored name this ctxscope no longer knows is skipped (it came from
    another version); a value it cannot take raises :class:`ParamsError`."""
    window = _top_level(WINDOW, params.context_window)
    if strategy == "layered":
        top = {
            name: _top_level(name, value)
            for name, value in params.numbers.items()
            if name in LAYERED_NUMBERS
        }
        return settings.model_copy(update={WINDOW: window, **top})
    attr = _section_field(strategy)
    kind = _section_type(strategy)
    current = getattr(settings.strategies, attr).model_dump()
    known = {k: v for k, v in params.numbers.items() if k in kind.model_fields}
    try:
        section = kind.model_validate({**current, **known})
    except ValidationError as exc:
        raise ParamsError(_one_line(strategy, exc)) from None
    strategies = settings.strategies.model_copy(update={attr: section})
    return settings.model_copy(update={WINDOW: window, "strategies": strategies})


def session_settings(settings: Settings, session: Session) -> Settings:
    """The settings an agent over ``session`` plans with: the process' settings with the
    session's stored numbers in place (unchanged when the session stores none)."""
    if session.params is None:
        return settings
    return with_params(settings, session.strategy or settings.strategy, session.params)


def in_window(settings: Settings, window: int) -> Settings:
    """``settings`` for a session planned in a ``window``-token context window (a replay's
    ``--window``, a recording's own agent's window): the session's window, and the
    strategies' own windows with it, as each strategy's section scales itself
    (:meth:`engine.settings.strategies.StrategySettings.in_window`: seed 001's
    ``context_limit``, seed 002's profile window with its trigger at the same share of it).
    Numbers set explicitly in a strategy's section are kept."""
    strategies = settings.strategies.in_window(window)
    return settings.model_copy(update={"context_window": window, "strategies": strategies})


def changed_params(
    params: StrategyParams,
    strategy: str,
    numbers: dict[str, Any],
    window: int | None = None,
) -> StrategyParams:
    """``params`` with ``numbers`` (``--set``) and ``window`` (``--window``) changed, every
    value checked as a settings file's would be: an unknown name or a bad value raises
    :class:`ParamsError` naming it."""
    numbers = dict(numbers)
    known = known_numbers(strategy)
    for name in numbers:
        if name not in known:
            raise ParamsError(
                f"{strategy} has no number {name!r}; it has {', '.join(known)}"
                + ("" if strategy == "layered" else " (the session's window: --window)")
            )
    if strategy == "layered" and WINDOW in numbers:
        window = numbers.pop(WINDOW)
    new_window = params.context_window if window is None else _top_level(WINDOW, window)
    if strategy == "layered":
        merged = {**params.numbers}
        merged.update({k: _top_level(k, v) for k, v in numbers.items()})
    else:
        kind = _section_type(strategy)
        stored = {k: v for k, v in params.numbers.items() if k in kind.model_fields}
        try:
            merged = kind.model_validate({**stored, **numbers}).model_dump()
        except ValidationError as exc:
            raise ParamsError(_one_line(strategy, exc)) from None
    return StrategyParams(context_window=new_window, numbers=merged)


def describe_params(params: StrategyParams | None) -> str:
    """One line: ``window 200,000 · threshold_ratio 0.8 · keep_rounds 10`` (unset numbers,
    which follow a profile or the window, are left out)."""
    if params is None:
        return "the process' settings (none stored)"
    parts = [f"window {params.context_window:,}"]
    for name, value in params.numbers.items():
        if value is None:
            continue
        shown = f"{value:,}" if isinstance(value, int) else str(value)
        parts.append(f"{name} {shown}")
    return " · ".join(parts)


@cache
def _checker(name: str) -> TypeAdapter[Any]:
    """The ``Settings`` field ``name``'s type with its bounds (built once: ~1 ms each)."""
    info = Settings.model_fields[name]
    field: Any = Annotated[info.annotation, info]
    return TypeAdapter(field)


def _top_level(name: str, value: Any) -> Any:
    """``value`` checked against the ``Settings`` field ``name`` (its type and its bounds)."""
    info = Settings.model_fields[name]
    if isinstance(value, bool) and bool not in (info.annotation, *get_args(info.annotation)):
        raise ParamsError(f"{name}={value!r}: expected a number, not a boolean")
    try:
        return _checker(name).validate_python(value)
    except ValidationError as exc:
        raise ParamsError(f"{name}={value!r}: {exc.errors()[0]['msg']}") from None


def _one_line(strategy: str, exc: ValidationError) -> str:
    err = exc.errors()[0]
    name = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"{strategy} has no number {name!r}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{strategy}.{name}={err.get('input')!r}: {msg}"
