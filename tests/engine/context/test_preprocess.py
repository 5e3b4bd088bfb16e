"""@file preprocessing (seed A7, C3, E4): what counts as a mention and the reminder text."""

from __future__ import annotations

import pytest

from engine.context.preprocess import InputPreprocessor, find_mentions, render_reminder
from engine.settings.config import Settings

TEMPLATE = (
    "<system-reminder>\n"
    "The user mentioned @src/utils/auth.ts.\n"
    "You MUST read this file with the Read tool before answering.\n"
    "</system-reminder>"
)


@pytest.fixture
def pre() -> InputPreprocessor:
    return InputPreprocessor(Settings(atfile_max=5))


def test_single_mention_gives_exactly_the_seed_template(pre: InputPreprocessor) -> None:
    out = pre.process("Why does login fail in @src/utils/auth.ts")
    assert out.text == "Why does login fail in @src/utils/auth.ts\n\n" + TEMPLATE
    assert out.reminder == TEMPLATE
    assert out.mentions == ["src/utils/auth.ts"]
    assert out.extra == 0
    assert out.original == "Why does login fail in @src/utils/auth.ts"


def test_no_mention_leaves_text_unchanged(pre: InputPreprocessor) -> None:
    out = pre.process("just a question  ")
    assert out.text == "just a question  "
    assert out.mentions == []
    assert out.reminder == ""


def test_emails_are_not_mentions(pre: InputPreprocessor) -> None:
    out = pre.process("mail me@example.com or first.last@corp.io or user1@host.org")
    assert out.mentions == []
    assert out.text == out.original


def test_email_next_to_a_real_mention(pre: InputPreprocessor) -> None:
    assert pre.process("ask me@example.com about @docs/api.md").mentions == ["docs/api.md"]


def test_mention_at_start_and_after_parenthesis(pre: InputPreprocessor) -> None:
    assert pre.process("@main.py explain (see @lib/util.py)").mentions == ["main.py", "lib/util.py"]


def test_order_of_appearance_and_deduplicated(pre: InputPreprocessor) -> None:
    out = pre.process("@b.py then @a.py then @b.py again and @a.py.")
    assert out.mentions == ["b.py", "a.py"]


def test_more_than_five_keeps_five_and_counts_the_rest(pre: InputPreprocessor) -> None:
    text = " ".join(f"@f{i}.py" for i in range(1, 8))
    out = pre.process(text)
    assert out.mentions == ["f1.py", "f2.py", "f3.py", "f4.py", "f5.py"]
    assert out.extra == 2
    assert "(and 2 more…)" in out.text
    assert "…" in out.text and "..." not in out.reminder  # the ellipsis character itself
    assert "@f6.py." not in out.reminder


def test_limit_comes_from_settings() -> None:
    out = InputPreprocessor(Settings(atfile_max=2)).process("@a @b @c")
    assert out.mentions == ["a", "b"]
    assert out.extra == 1


def test_multi_mention_form() -> None:
    out = InputPreprocessor(Settings(atfile_max=2)).process("compare @a.py, @b.py and @c.py")
    assert out.reminder == (
        "<system-reminder>\n"
        "The user mentioned @a.py.\n"
        "The user mentioned @b.py.\n"
        "(and 1 more…)\n"
        "You MUST read these files with the Read tool, in this order, before answering.\n"
        "</system-reminder>"
    )


def test_one_kept_with_extras_stays_singular() -> None:
    out = InputPreprocessor(Settings(atfile_max=1)).process("@a.py @b.py")
    assert out.reminder.splitlines()[1:4] == [
        "The user mentioned @a.py.",
        "(and 1 more…)",
        "You MUST read this file with the Read tool before answering.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("open @src/v1.2/file.tar.gz now", ["src/v1.2/file.tar.gz"]),
        ("check @.github/workflows/ci.yml", [".github/workflows/ci.yml"]),
        ("see @.env", [".env"]),
        ("read @README.md.", ["README.md"]),
        ("read @a.py, then @b.py; then @c.py: ok", ["a.py", "b.py", "c.py"]),
        ("is it @main.py?", ["main.py"]),
        ("wait for @notes...", ["notes"]),
        ("version @v1.2.", ["v1.2"]),
        ("dir @src/", ["src/"]),
        ("(@pkg/mod.py)", ["pkg/mod.py"]),
        ("请看@README.md", ["README.md"]),
    ],
)
def test_paths_with_dots_and_trailing_punctuation(text: str, expected: list[str]) -> None:
    assert find_mentions(text) == expected


@pytest.mark.parametrize("text", ["@", "a @ b", "@-", "@...", "@/", "x@y", "9@z.py"])
def test_not_mentions(text: str) -> None:
    assert find_mentions(text) == []


def test_trailing_dot_variants_are_one_mention() -> None:
    assert find_mentions("@a.py @a.py. @a.py...") == ["a.py"]


def test_reminder_is_appended_after_a_blank_line_with_trailing_space_dropped(
    pre: InputPreprocessor,
) -> None:
    out = pre.process("look at @x.py  \n")
    assert out.text == "look at @x.py\n\n" + render_reminder(["x.py"])
    assert out.original == "look at @x.py  \n"


def test_render_reminder_empty() -> None:
    assert render_reminder([]) == ""
