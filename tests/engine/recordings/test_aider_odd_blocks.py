"""aider histories as real ones are: blocks that open with an answer, counts with thousands
separators, answers cut off by ^C inside a code fence, a block that cannot be read.

The histories are written here the way aider's ``InputOutput`` writes them (Aider-AI/aider,
``aider/io.py``): ``user_input`` as ``"\\n#### " + "  \\n#### ".join(lines)`` plus a two-space
line break; ``tool_output`` / ``tool_error`` / ``confirm_ask`` as ``> `` lines ending in two
spaces; ``ai_output`` as ``"\\n" + answer.strip() + "\\n\\n"``; a ``# aider chat started at``
heading each start. The lint shape (``Attempt to fix lint errors? (Y)es/(N)o [Yes]: y`` after
the linter's ``> `` lines) and the cut answer (an ``html`` fence left open, then the next
input) are copied from real public histories.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings import aider
from engine.store import Store
from tests.engine.recordings.helpers import import_all


def heading(stamp: str) -> str:
    return f"\n# aider chat started at {stamp}\n\n"


def said(text: str) -> str:
    """``user_input``."""
    return "\n#### " + "  \n#### ".join(text.splitlines() or ["<blank>"]) + "  \n"


def told(*lines: str) -> str:
    """``tool_output`` / ``confirm_ask``: one ``> `` line each."""
    return "".join(("> " + line.strip()).rstrip() + "  \n" for line in lines)


def answered(text: str) -> str:
    """``ai_output``."""
    return "\n" + text.strip() + "\n\n"


STARTUP = told(
    "Aider v0.50.1",
    "Model: gpt-4o with diff edit format",
    "Git repo: .git with 3 files",
    "Repo-map: using 1024 tokens",
)
LINT = told(
    "# Fix any errors below, if possible.",
    "",
    "## See relevant line below marked with █.",
    "app.py:",
    "1█import os",
    "Attempt to fix lint errors? (Y)es/(N)o [Yes]: y",
)
LINT_FIX = """The import is unused; I removed it.

app.py
```python
<<<<<<< SEARCH
import os
=======
>>>>>>> REPLACE
```"""

ODD = (
    heading("2024-06-01 10:00:00")
    + STARTUP
    + said("add a --verbose flag")
    + answered("Done: `--verbose` prints each step.")
    + told("Tokens: 8,985 sent, 883 received. Cost: $0.03 message, $0.03 session.")
    + heading("2024-06-0? 11:00:00")  # a heading whose time is not a time
    + STARTUP
    + said("this block cannot be read")
    + heading("2024-06-02 09:30:00")
    + STARTUP
    + LINT
    + answered(LINT_FIX)
    + told(
        "Tokens: 12k sent, 1.2k received. Cost: $0.04 message, $0.07 session.",
        "Applied edit to app.py",
    )
    + said("now run the tests")
    + answered("Run `pytest -q`.")
    + told("Tokens: 9,120 sent, 12 received. Cost: $0.03 message, $0.10 session.")
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_block_that_opens_with_an_answer_is_a_session_without_a_recorded_input(
    store: Store, tmp_path: Path
) -> None:
    """Three headings: the first a plain session, the second's time unreadable (left out,
    counted, named), the third opens with the lint fix's answer: its first round's user message
    is the placeholder, flagged in ``recorded``; the edit it applied is its result."""
    path = write(tmp_path, ODD)
    first, second = import_all(store, path)
    assert [m.content for m in first.role("user")] == ["add a --verbose flag"]
    assert first.report.skipped == {"startup_line": 4, "usage_line": 1, "unreadable_session": 1}
    bad_line = ODD.splitlines().index("# aider chat started at 2024-06-0? 11:00:00") + 1
    assert len(first.report.warnings) == 1
    assert first.report.warnings[0].startswith(
        f"line {bad_line}: a session that cannot be read, left out"
    )

    assert [m.content for m in second.role("user")] == [aider.NO_INPUT, "now run the tests"]
    assert second.report.rounds == 2
    assert second.report.recorded["first_input"] == "not recorded"
    assert aider.parse_all(ODD, "h.md")[1].agent_version == "0.50.1"  # "> Aider v0.50.1"
    assert second.report.session.title == "import: now run the tests"
    # Before the first answer: the four start-up lines and the lint report's five lines that
    # are not empty (its empty ">" line is not counted).
    assert second.report.skipped == {"startup_line": 9, "usage_line": 2}
    answer_line = ODD.splitlines().index("The import is unused; I removed it.") + 1
    assert second.report.warnings == [
        f"line {answer_line}: the session opens with an answer (aider did not write the "
        "message it sent); its first round has no recorded input"
    ]
    sid = second.report.session.id
    assert sid is not None
    assert [o.text for o in store.observations(sid)] == ["Applied edit to app.py"]
    assert [(u.usage.input_tokens, u.usage.output_tokens) for u in second.usages] == [
        (12_000, 1_200),
        (9_120, 12),
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # aider 0.4x printed counts with thousands separators.
        (
            "Tokens: 8,985 sent, 883 received. Cost: $0.03 message, $0.03 session.",
            (8985, 0, 0, 883),
        ),
        (
            "Tokens: 1,106 sent, 999 received. Cost: $0.00077 request, $0.00077 session.",
            (1106, 0, 0, 999),
        ),
        # format_tokens (aider/utils.py): raw below 1000, one decimal below 10 000, else rounded.
        ("Tokens: 2.3k sent, 1.1k cache write, 56 received.", (1200, 1100, 0, 56)),
        ("Tokens: 15k sent, 12k cache hit, 1.5k received.", (3000, 0, 12_000, 1500)),
        ("Tokens: 1,234,567 sent, 2,048 received.", (1_234_567, 0, 0, 2048)),
    ],
)
def test_token_lines_in_every_form_aider_prints(
    line: str, expected: tuple[int, int, int, int]
) -> None:
    """``sent`` includes the cache write and the cache hit (base_coder.py adds them), so the
    uncached input is what is left."""
    (parsed,) = aider.parse_all(
        heading("2024-06-01 10:00:00") + said("hi") + answered("hello") + told(line), "h.md"
    )
    (step,) = [i for i in parsed.items if i.kind == "assistant"]
    assert step.usage is not None
    got = (
        step.usage.input_tokens,
        step.usage.cache_creation_input_tokens,
        step.usage.cache_read_input_tokens,
        step.usage.output_tokens,
    )
    assert got == expected


CUT = """Here are the complete contents of the updated files:

**popup.html** (new file)
```html
<!DOCTYPE html>
<html lang="en">
<head>
    <meta charset="UTF-8">"""

README_EDIT = """README.md
```markdown
<<<<<<< SEARCH
## Usage
=======
## Usage

#### Install
> pip install greet
>>>>>>> REPLACE
```"""


def test_an_answer_cut_inside_a_fence_ends_at_the_next_input(tmp_path: Path) -> None:
    """The cut answer's ``html`` fence is never closed; the next input (two lines) and the one
    after it are inputs. A closed fence's ``#### Install`` and ``> pip …`` lines (a README
    edit) stay the answer's: an answer's heading does not end in aider's two spaces."""
    text = (
        heading("2024-08-04 23:10:26")
        + said("make the popup")
        + answered(CUT)
        + said('Two errors show up on chrome: "background": {\n    "service_worker": "b.js"')
        + answered(README_EDIT)
        + told("Applied edit to README.md")
        + said("thanks")
        + answered("You're welcome.")
    )
    (parsed,) = aider.parse_all(text, "h.md")
    assert [i.text for i in parsed.items if i.kind == "user"] == [
        "make the popup",
        'Two errors show up on chrome: "background": {\n    "service_worker": "b.js"',
        "thanks",
    ]
    answers = [i.text for i in parsed.items if i.kind == "assistant"]
    assert answers == [CUT, README_EDIT, "You're welcome."]
    cut_at = text.splitlines().index('#### Two errors show up on chrome: "background": {  ') + 1
    assert parsed.warnings == [
        f"1 answers cut off inside a code fence (the input at line {cut_at} ends it)"
    ]


def test_a_file_whose_blocks_all_fail_is_refused_in_one_line(tmp_path: Path) -> None:
    """No block readable: one refusal naming the block, not a silent empty import."""
    text = heading("not a time") + said("hi") + answered("hello")
    with pytest.raises(aider.ImportError_) as caught:
        aider.parse_all(text, "h.md")
    assert caught.value.problems[0].startswith("line 2: a session that cannot be read")


def test_a_file_that_begins_inside_a_session_begins_with_that_session() -> None:
    """A history whose head was cut (a real public one begins with aider's start-up lines and
    inputs, its first heading further down): the inputs before the first heading are a
    session of their own, dated by that heading, and said to be so."""
    text = (
        STARTUP
        + said("/add manifest.json")
        + told("Added manifest.json to the chat")
        + said("make the popup")
        + answered("Here it is.")
        + heading("2024-08-04 23:10:26")
        + STARTUP
        + said("next session")
        + answered("ok")
    )
    cut, whole = aider.parse_all(text, "h.md")
    assert [i.text for i in cut.items if i.kind == "user"] == [
        "/add manifest.json",
        "make the popup",
    ]
    assert cut.recorded["started_at"] == "not recorded"
    assert cut.items[0].created_at == whole.items[0].created_at
    heading_line = text.splitlines().index("# aider chat started at 2024-08-04 23:10:26") + 1
    assert cut.warnings[0].startswith(
        f"lines 1-{heading_line - 1}: the file begins inside a session"
    )
    assert "text_before_first_session" not in cut.skipped
    assert [i.text for i in whole.items if i.kind == "user"] == ["next session"]
