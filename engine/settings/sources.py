"""Where a setting's value comes from: keyword arguments, ``CTXSCOPE_*`` environment variables
and ``ctxscope.toml``, merged in that order of priority.

This is what ``pydantic-settings`` did for :class:`engine.settings.config.Settings`, for the
field types the settings use: text, numbers, booleans, literals and paths are passed to pydantic as
written; a field holding a model, a dict or a list is read from its variable as JSON, and
nested values can also be set one by one with ``__`` (``CTXSCOPE_STRATEGIES__RESET_HINT__
CONTEXT_LIMIT=5000``, ``CTXSCOPE_PRICES__MY_MODEL__INPUT=1``). Variable names and top-level keys
are matched without regard to case; the sources are deep-merged (a nested value from a higher
source replaces only that value). The package itself cost every command about 50 ms at start-up
(it imports ``dotenv``, ``email`` and a dozen cloud-secret providers), more than this module
does for the one settings model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

NESTED_DELIMITER = "__"


class SourceError(ValueError):
    """A variable's value cannot be read (a JSON value that is not JSON)."""


def merged_values(
    model: type[BaseModel],
    given: Mapping[str, Any],
    prefix: str,
    toml_file: Path | str | None,
    under: Path | None = None,
) -> dict[str, Any]:
    """The values to validate ``model`` with: ``given`` over the environment over the file
    over ``under`` (the user's own settings file); a file that is None or absent adds
    nothing."""
    state = _matched_to_fields(model, dict(given))
    env = environment_values(model, prefix, os.environ)
    state = deep_update(env, _spelled_as(model, state, env))
    for path in (toml_file, under):
        if path is not None:
            toml = toml_values(model, Path(path))
            state = deep_update(toml, _spelled_as(model, state, toml))
    return state


def deep_update(base: dict[str, Any], *updates: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each of ``updates`` laid over it; dicts on both sides are merged."""
    result = dict(base)
    for update in updates:
        for key, value in update.items():
            if key in result and isinstance(result[key], dict) and isinstance(value, dict):
                result[key] = deep_update(result[key], value)
            else:
                result[key] = value
    return result


def toml_values(model: type[BaseModel], path: Path) -> dict[str, Any]:
    """The file's values, or nothing when there is no file (``~`` expanded)."""
    path = path.expanduser()
    if not path.is_file():
        return {}
    import tomllib  # only with a file: most starts have none (issue 44)

    with path.open("rb") as handle:
        return _matched_to_fields(model, tomllib.load(handle))


def environment_values(
    model: type[BaseModel], prefix: str, environ: Mapping[str, str]
) -> dict[str, Any]:
    """The values ``environ`` sets for ``model``'s fields (``<prefix><FIELD>``, any case)."""
    env = {k.lower(): v for k, v in environ.items() if k.lower().startswith(prefix.lower())}
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        env_name = f"{prefix}{name}".lower()
        value: Any = env.get(env_name)
        if _is_complex(field.annotation):
            if value is not None:
                value = _decode(env_name, value)
            nested = _exploded(field, f"{env_name}{NESTED_DELIMITER}", env)
            if value is None and nested:
                value = nested
            elif isinstance(value, dict):
                value = deep_update(value, _spelled_as(field.annotation, nested, value))
            if isinstance(value, dict) and _is_model(field.annotation):
                value = _field_names_for(field.annotation, value)
        if value is not None:
            values[name] = value
    return values


def _exploded(field: FieldInfo, start: str, env: Mapping[str, str]) -> dict[str, Any]:
    """``START<key>__<key>…=value`` variables as nested dicts, leaf values decoded as their
    field needs (JSON for a model, dict or list; as written otherwise)."""
    is_dict = _is_dict(field.annotation)
    result: dict[str, Any] = {}
    for env_name, value in env.items():
        if not env_name.startswith(start):
            continue
        *keys, last = env_name[len(start) :].split(NESTED_DELIMITER)
        target: Any = field.annotation
        where = result
        for key in keys:
            target = _next_type(target, key)
            where = where.setdefault(key, {})
            if not isinstance(where, dict):
                break
        else:
            target = _next_type(target, last)
            decoded: Any = value
            if value and (is_dict if target is None else _is_complex(target)):
                # Not JSON: left as text, which pydantic then refuses naming the setting.
                try:
                    decoded = json.loads(value)
                except ValueError:
                    pass
            where[last] = decoded
    return result


def _next_type(annotation: Any, key: str) -> Any:
    """The type one nested key leads to: a dict's value type, a model field's type, or None."""
    if annotation is None:
        return None
    if _is_dict(annotation):
        args = get_args(annotation)
        return args[-1] if args else None
    for arg in get_args(annotation):
        found = _next_type(arg, key)
        if found is not None:
            return found
    if _is_model(annotation):
        field = _field_for(annotation, key)
        return None if field is None else annotation.model_fields[field].annotation
    return None


def _field_for(model: type[BaseModel], key: str) -> str | None:
    """The field of ``model`` that ``key`` names (its name or alias, any case)."""
    wanted = key.lower()
    for name, field in model.model_fields.items():
        if wanted in (name.lower(), (field.alias or name).lower()):
            return name
    return None


def _field_names_for(model: Any, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each key that names a field of ``model`` (by name or alias, in any case)
    spelled as that field's name, down through nested models."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = _field_for(model, key)
        if name is None:
            out[key] = value
            continue
        sub = model.model_fields[name].annotation
        if isinstance(value, dict) and _is_model(sub):
            value = _field_names_for(sub, value)
        out[name] = value
    return out


def _spelled_as(model: Any, update: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``update`` with each key that names the same field as a key of ``base`` spelled as
    ``base`` spells it, so the two merge (``[strategies.reset-hint]`` in the file and
    ``CTXSCOPE_STRATEGIES__RESET_HINT__…``: pydantic-settings passed both spellings on and the
    section refused the second as an unknown key)."""
    if not _is_model(model):
        return update
    spelling = {_field_for(model, key) or key: key for key in base}
    out: dict[str, Any] = {}
    for key, value in update.items():
        name = _field_for(model, key)
        target = spelling.get(name or key, key)
        if name is not None and isinstance(value, dict) and isinstance(base.get(target), dict):
            value = _spelled_as(model.model_fields[name].annotation, value, base[target])
        out[target] = value
    return out


def _matched_to_fields(model: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """Top-level keys spelled as the field they name in any case; others as they are."""
    fields = {name.lower(): name for name in model.model_fields}
    return {fields.get(key.lower(), key): value for key, value in values.items()}


def _decode(env_name: str, value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise SourceError(f"{env_name.upper()}={value!r} is not valid JSON ({exc})") from None


def _is_model(annotation: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_dict(annotation: Any) -> bool:
    origin = get_origin(annotation)
    return annotation is dict or (isinstance(origin, type) and issubclass(origin, dict))


def _is_complex(annotation: Any) -> bool:
    """A field read as JSON: a model, a dict, a list, a set or a tuple (or a union with one)."""
    if _is_model(annotation):
        return True
    origin = get_origin(annotation) or annotation
    if isinstance(origin, type) and issubclass(origin, (dict, list, set, frozenset, tuple)):
        return True
    return any(_is_complex(arg) for arg in get_args(annotation) if arg is not type(None))
