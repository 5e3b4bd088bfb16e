"""One way to the terminal: text from a recording, a tool or an API made safe to print.

Anything that did not come from ctxscope itself (a recorded message, a title, a model or tool
name, a file name, an error that echoes a path) may hold control characters: ``ESC ] 52``
writes the clipboard, ``ESC ] 0`` the window title, ``ESC [ 2 J`` clears the screen, a C1 byte
starts a sequence on its own on some terminals. :func:`printable` shows every such character
as a visible escape instead (``\\x1b``, ``\\x9b``, ``\\x7f``), so the text reads as what it is
and nothing reaches the terminal as a command. Newline and tab are kept unless ``one_line``.

Every string printed by the command line or shown by the workbench that came from outside
passes through here. JSON output is already escaped by the encoder and does not.
"""

from __future__ import annotations

import re

# C0 controls except tab (\x09) and newline (\x0a), DEL, and the C1 block; also the Unicode
# bidirectional overrides and isolates, which reorder what a reader sees (CVE-2021-42574).
# And lone surrogates: a file name that is not UTF-8 reaches Python as U+DC80-U+DCFF
# (``surrogateescape``) and is written back to the terminal as the raw byte (0x9b is CSI).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # the byte a non-UTF-8 name held: shown as that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown escaped; with ``one_line``, newlines and
    tabs too (for titles, names, table cells)."""
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_shown, text)


def cut(text: str, width: int, *, one_line: bool = True, ellipsis: str = "…") -> str:
    """``text`` made printable, then cut to ``width`` characters with ``ellipsis``.

    The cut is made after escaping, so it can never fall inside an escape sequence: what is
    cut is the visible ``\\x1b`` form, not a live one."""
    safe = printable(text, one_line=one_line)
    if width <= 0:
        return ""
    if len(safe) <= width:
        return safe
    if width <= len(ellipsis):
        return safe[:width]
    return safe[: width - len(ellipsis)] + ellipsis


# What a JSON encoder writing with ``ensure_ascii=False`` leaves raw: it escapes C0 (JSON
# requires it) but not DEL, C1 or the bidi controls, which a terminal may still obey.
_JSON_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_printable(encoded: str) -> str:
    """JSON text (already encoded) with DEL, C1 and the bidi controls written as ``\\uXXXX``.

    The document means the same (JSON allows any character escaped, and these occur only
    inside strings), but nothing in it reaches a terminal as a command."""
    if _JSON_RAW.search(encoded) is None:
        return encoded
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """How a count reads on every surface: ``1 round``, ``2 rounds``, ``1,204 usage records``
    (``nouns`` when the plural is not ``noun + s``)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {nouns or noun + 's'}"
