"""The documentation: a short README, links that lead somewhere, a settings page that is current.

The settings page is generated (``make docs``, ``docs/gen_settings.py``); these tests fail when
a setting changes without the page being regenerated, when the page names an environment
variable the settings do not read, when the README outgrows five minutes' reading
(10 KB, issue 18), or when a relative link or ``#anchor`` points at nothing.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine.settings.config import Settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_settings", DOCS / "gen_settings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_page_is_what_the_generator_writes() -> None:
    """docs/settings.md is exactly ``render()``'s output: run ``make docs`` after changing
    engine/settings/config.py."""
    generated = load_generator().render()
    assert (DOCS / "settings.md").read_text(encoding="utf-8") == generated


ROW = re.compile(r"^\| `([^`]+)` \| (.+?) \| (.+?) \| `(CTXSCOPE_[A-Z0-9_<>]+)` \| (.+) \|$")


def settings_rows() -> list[tuple[str, ...]]:
    """(key, type, default, environment variable, meaning) of every table row."""
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    return [m.groups() for line in text.splitlines() if (m := ROW.match(line))]


def test_settings_page_lists_every_setting() -> None:
    """Every field of ``Settings`` has its row, with its own docstring; the seven the old
    README table left out (issue 18: it listed 31 of 38) among them."""
    top_level = {key for key, _, _, env, _ in settings_rows() if env.count("__") == 0}
    assert top_level == set(Settings.model_fields)
    for once_missing in (
        "input_chars_per_token",
        "strategies",
        "read_max_line_chars",
        "generic_max_chars",
        "bash_output_cap",
        "prices",
        "validate_requests",
    ):
        assert once_missing in top_level
    assert all(meaning.strip() for *_, meaning in settings_rows())


def numeric_rows() -> list[tuple[str, str, Any]]:
    """(environment variable, new value, the value Settings must then hold) for every
    number with a default, picked inside the setting's range: an int one more, a float half."""
    cases = []
    for _key, kind, default, env, _ in settings_rows():
        if "<" in env or not re.fullmatch(r"`[0-9.]+`", default):
            continue
        value = default.strip("`")
        if kind.startswith("int"):
            cases.append((env, str(int(value) + 1), int(value) + 1))
        elif kind.startswith("float"):
            cases.append((env, str(float(value) / 2), float(value) / 2))
    return cases


@pytest.mark.parametrize(("env", "raw", "expected"), numeric_rows())
def test_settings_page_names_the_variables_pydantic_reads(
    env: str, raw: str, expected: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Setting the variable a row names changes that setting (nested ones through ``__``)."""
    monkeypatch.chdir(tmp_path)  # no ctxscope.toml
    monkeypatch.setenv(env, raw)
    value: Any = Settings()
    for part in env.removeprefix("CTXSCOPE_").lower().split("__"):
        value = getattr(value, part)
    assert value == expected


def test_settings_page_checks_cover_nested_sections() -> None:
    """The parametrised check above reaches into the strategy sections, not only the top."""
    envs = [env for env, _, _ in numeric_rows()]
    assert "CTXSCOPE_CONTEXT_WINDOW" in envs
    assert "CTXSCOPE_STRATEGIES__RESET_HINT__CONTEXT_LIMIT" in envs
    assert "CTXSCOPE_STRATEGIES__MASKING__KEEP_LAST_OBSERVATIONS" in envs


def test_readme_is_a_five_minute_read() -> None:
    """Issue 18: README ≤ 10 KB, with the two commands .ci/run and newcomers rely on."""
    data = README.read_bytes()
    assert len(data) <= 10_240
    text = data.decode("utf-8")
    assert "make run" in text
    assert "make test" in text


FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose_lines(path: Path) -> list[str]:
    """The page's lines outside fenced code blocks, inline code removed."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, ``-1``… for
    repeats."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def test_anchor_ids_follow_github() -> None:
    """The slug rule on headings worked out by hand from GitHub's behaviour."""
    assert "json-shapes---json" in anchors(DOCS / "cli.md")  # "## JSON shapes (`--json`)"
    assert "one-writer-per-session" in anchors(DOCS / "storage.md")
    assert "what-history-keeps-seed-a3-c1" in anchors(DOCS / "tools.md")  # "(seed A3, C1)"


def test_relative_links_lead_to_files_and_headings() -> None:
    broken = []
    for page in PAGES:
        for line in prose_lines(page):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file, _, anchor = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                if not dest.exists():
                    broken.append(f"{page.name}: {target} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_every_docs_page_is_linked_from_the_readme() -> None:
    """A page nobody links to is a page nobody finds."""
    linked = {
        (README.parent / t.partition("#")[0]).resolve()
        for line in prose_lines(README)
        for t in LINK.findall(line)
    }
    unlinked = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert unlinked == []
