"""Issue 29: a recording that attacks the terminal, opened in the workbench.

Its title, messages, model, tool name and file name carry ESC, OSC 0/8/52, CSI, C1 and DEL, and
Textual markup (``[link=…]``, ``[@click=…]``). The workbench shows them escaped and as text:
the header, the app's title, the panes, the notifications.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recordings.importing import import_session
from engine.settings.config import Settings
from engine.store import Store
from tests.security.hostile_recording import ATTACKER_TITLE, MARKUP, write_hostile_recording
from tests.tui.conftest import AppFactory
from tests.tui.helpers import opened, screen_lines
from tui.widgets.session_header import SessionHeader

pytestmark = pytest.mark.anyio


def controls(text: str) -> list[str]:
    """Raw control characters in ``text`` (C0 but newline, DEL, C1)."""
    return [c for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) <= 0x9F]


@pytest.fixture
def hostile(tmp_path: Path, db_path: Path) -> int:
    store = Store.open(db_path)
    recording = write_hostile_recording(tmp_path / "bad.jsonl", cwd="/nowhere/\x1b]0;PWNED\x07")
    report = import_session(store, recording, str(tmp_path), settings=Settings())
    store.close()
    assert report.session.id is not None
    return report.session.id


async def test_header_title_and_panes_show_the_attack_escaped(
    make_app: AppFactory, hostile: int
) -> None:
    app = make_app(resume=hostile)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        header = screen.query_one(SessionHeader)
        drawn = header.render().plain
        assert controls(drawn) == [], repr(drawn)
        assert "\\x1b]0;PWNED-TITLE\\x07" in drawn  # the title, escaped (OSC 0)
        # Textual never gives the terminal the app's title; and it is not the recording's.
        assert app.title == "ctxscope" and ATTACKER_TITLE not in app.sub_title
        lines = screen_lines(app)
        assert [ln for ln in lines if controls(ln)] == []
        # The markup is text: the header shows it as typed, no link, no action.
        assert "\\x07[link=htt" in drawn  # (the header cuts the title at 40 characters)
        assert any("[@click=app.quit]y[/]" in ln for ln in lines)  # the chat's first message
        assert not any(span.style and "link" in str(span.style) for span in header.render().spans)


async def test_notifications_are_plain_text(make_app: AppFactory, hostile: int) -> None:
    """Every notification goes through the app's ``notify``: never read as markup
    (``[@click=…]`` stays text), its control characters shown escaped."""
    app = make_app(resume=hostile)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        app.notify(f"title {MARKUP}\x1b]52;c;eA==\x07", title="\x9b2J")
        await pilot.pause()
        shown = list(app._notifications)  # noqa: SLF001 - what was shown
        assert shown and all(not n.markup for n in shown)
        assert all(controls(n.message) == [] and controls(n.title) == [] for n in shown)
        assert any(MARKUP in n.message and "\\x1b]52;" in n.message for n in shown)
