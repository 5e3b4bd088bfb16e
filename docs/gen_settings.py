"""Write docs/settings.md from the ``Settings`` model (engine/settings/config.py): ``make docs``.

Every field is listed with its type and range, its default, its ``CTXSCOPE_…`` environment
variable and its key in ``ctxscope.toml``; the text is the field's attribute docstring (the
string literal right under the field), read from the source with :mod:`ast` so the engine
needs nothing for the docs. Fields are grouped under the ``# --- title ---`` comments of the
model. The nested sections (``[strategies.<name>]``) get a table each; the default price list
gets its own.

    python docs/gen_settings.py           # rewrite docs/settings.md
    python docs/gen_settings.py --check   # exit 1 if docs/settings.md is out of date

``tests/test_docs.py`` runs the check, so a setting added without regenerating fails the tests.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.settings.config import ENV_PREFIX, TOML_NAME, ModelPrice, Settings  # noqa: E402
from engine.settings.strategies import StrategySettings  # noqa: E402

PAGE = ROOT / "docs" / "settings.md"
GROUP = re.compile(r"^\s*# --- (.+?) ---\s*$")


def attribute_docs(cls: type) -> dict[str, tuple[str, str | None]]:
    """``{field: (docstring, group)}`` from the class source: the string literal right after
    each annotated assignment, and the last ``# --- group ---`` comment above it."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    found: dict[str, tuple[str, str | None]] = {}
    for node, after in zip(body.body, [*body.body[1:], None], strict=True):
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        doc = ""
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            doc = inspect.cleandoc(after.value.value)
        group = None
        for line in reversed(lines[: node.lineno - 1]):
            match = GROUP.match(line)
            if match:
                group = match.group(1)
                break
        found[node.target.id] = (doc, group)
    return found


def type_name(annotation: Any) -> str:
    """A reader's name for a field type: ``int``, ``path``, ``"ask" | "allow"``…"""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f'`"{v}"`' for v in typing.get_args(annotation))
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " \\| ".join(type_name(a) for a in args) + " (optional)"
    if origin is list:
        return f"list of {type_name(typing.get_args(annotation)[0])} (JSON in the environment)"
    if origin is dict:
        key, value = typing.get_args(annotation)
        return f"table {type_name(key)} → {type_name(value)}"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.__name__
    return getattr(annotation, "__name__", str(annotation))


def bounds(field: FieldInfo) -> str:
    """The field's range from its constraints: ``> 0``, ``≥ 0, ≤ 1``…"""
    parts = []
    for meta in field.metadata:
        if isinstance(meta, annotated_types.Gt):
            parts.append(f"> {meta.gt}")
        elif isinstance(meta, annotated_types.Ge):
            parts.append(f"≥ {meta.ge}")
        elif isinstance(meta, annotated_types.Lt):
            parts.append(f"< {meta.lt}")
        elif isinstance(meta, annotated_types.Le):
            parts.append(f"≤ {meta.le}")
    return ", ".join(parts)


def default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, list):
        return ", ".join(f"`{v}`" for v in value) or "`[]`"
    if isinstance(value, StrategySettings):
        return "[below](#strategies)"
    if isinstance(value, dict):
        return "[below](#prices)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def one_line(text: str) -> str:
    """A docstring as one Markdown table cell (reST ``code`` becomes Markdown `code`)."""
    return " ".join(text.split()).replace("``", "`").replace("|", "\\|")


def field_rows(
    model: type[BaseModel], env_path: list[str], toml_prefix: str
) -> dict[str | None, list[str]]:
    """Table rows of ``model``'s fields, by group."""
    docs = attribute_docs(model)
    rows: dict[str | None, list[str]] = {}
    for name, field in model.model_fields.items():
        doc, group = docs.get(name, ("", None))
        if not doc:
            raise SystemExit(f"{model.__name__}.{name} has no docstring: every setting needs one")
        env = ENV_PREFIX + "__".join([*env_path, name]).upper()
        kind = type_name(field.annotation)
        limits = bounds(field)
        if limits:
            kind = f"{kind}, {limits}"
        key = f"{toml_prefix}{field.alias or name}"
        rows.setdefault(group, []).append(
            f"| `{key}` | {kind} | {default_text(field)} | `{env}` | {one_line(doc)} |"
        )
    return rows


HEADER = "| setting | type | default | environment | meaning |\n|---|---|---|---|---|"


def render() -> str:
    """The whole page."""
    total = len(Settings.model_fields)
    out = [
        "# Settings",
        "",
        "<!-- Generated by docs/gen_settings.py from engine/settings/config.py (`make docs`); "
        "do not edit by hand. -->",
        "",
        f"One pydantic model (`engine/settings/config.py`, `Settings`) holds every number, "
        f"with the seeds' defaults: {total} settings, each with its own docstring, which is "
        f"what this page shows. Set them with `{ENV_PREFIX}<NAME>` environment variables, in your "
        "own settings file (`$XDG_CONFIG_HOME/ctxscope/ctxscope.toml`, by default "
        "`~/.config/ctxscope/ctxscope.toml`) or in "
        f"`{TOML_NAME}` (`name = value` at the top level, each strategy's numbers in its own "
        "`[strategies.<name>]` section; another file with `--config FILE`). The environment "
        "wins over the files, the workspace's file over your own, command-line options "
        "(`--model`, `--strategy`, `--db`, `--allow-bash`, `--allow-edits`) over all; the "
        "workspace's file may only tighten the safety settings "
        "([security.md](security.md#settings-the-agent-cannot-write)).",
        "",
        "A bad value stops start-up with a message naming the setting and where it came from, "
        "e.g. `ctxscope: invalid settings: setting threshold_ratio "
        "(CTXSCOPE_THRESHOLD_RATIO='1.5'): Input should be less than or equal to 1`; an "
        "unknown key in the file is refused the same way, naming the keys known there: "
        "`ctxscope: ctxscope.toml: unknown setting 'strategies.masking.keep_last' (known here: "
        "keep_last_observations)`. Lists and tables given in the environment are JSON "
        "(`CTXSCOPE_SECRET_ENV_PATTERNS='[\"*_KEY\"]'`).",
        "",
    ]
    for group, rows in field_rows(Settings, [], "").items():
        title = group or "Other"
        out += [f"## {title[0].upper()}{title[1:]}", "", HEADER, *rows, ""]
    sections = attribute_docs(StrategySettings)
    out += [
        "## Strategies",
        "",
        "Each strategy's own numbers (see [strategies.md](strategies.md)), in its section of "
        f"`{TOML_NAME}` or in `{ENV_PREFIX}STRATEGIES__<SECTION>__<KEY>` (the section with `_` "
        "for `-`).",
        "",
    ]
    for name, field in StrategySettings.model_fields.items():
        section = field.alias or name
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        intro = inspect.cleandoc(model.__doc__ or "") or sections.get(name, ("", None))[0]
        out += [f"### `[strategies.{section}]`", "", one_line(intro), "", HEADER]
        for rows in field_rows(model, ["strategies", name], "").values():
            out += rows
        out.append("")
    out += [
        "## Prices",
        "",
        one_line(inspect.cleandoc(ModelPrice.__doc__ or "")),
        "",
        "Each `[prices.<model>]` table of the file (or `CTXSCOPE_PRICES` as JSON) has these "
        "keys. None is set by default: list prices come from the installed genai-prices "
        "package's data, offline, and a model it does not know, with no table here, gets no "
        "cost ([where prices come from](replay.md#cost)).",
        "",
        HEADER,
    ]
    for rows in field_rows(ModelPrice, ["prices", "<model>"], "").values():
        out += rows
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(Settings.model_fields)} settings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
