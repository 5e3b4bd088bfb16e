"""Reading Claude Code files the way a browser reads HTML: what this version does not
understand is left out and named, the rest is read; a file is refused only when it holds no
conversation at all.

The base file is the corpus's moredip session (``P``, 12 lines, Claude Code 2.1.14). By hand
(``jq -c '[input_line_number, .type, .uuid[0:8], .parentUuid[0:8]]' P``): line 1
file-history-snapshot, 2 progress (the root), 3 the user's input, 4-5 one response (thinking,
then the ``Task`` call ``toolu_01KscA8iE8tUT2aCNEUXREzo``), 6-8 progress, 9 its tool_result,
10-11 one response (thinking, then the answer's text), 12 system/turn_duration. Its
conversation is four items: user, assistant (the call), result, assistant (the answer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.recordings import claude_code
from engine.recordings.base import ImportError_, Parsed
from engine.recordings.importing import parse_path, parse_sessions
from tests.cli_run import run_main as run
from tests.engine.recordings.corpus import MOREDIP

LINES = MOREDIP.read_text(encoding="utf-8").splitlines()
SESSION = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"  # P's sessionId (line 3)
KINDS = ["user", "assistant", "result", "assistant"]
CALL = "toolu_01KscA8iE8tUT2aCNEUXREzo"


def parse(raw: str) -> Parsed:
    return claude_code.parse(raw, "test.jsonl")


def record(kind: str, **fields: object) -> str:
    return json.dumps({"type": kind, "sessionId": SESSION, **fields})


NEWER = [
    record("ai-title", aiTitle="Thai curry colour survey"),
    record("last-prompt", lastPrompt="spawn a subagent", leafUuid="c8682b86"),
    record(
        "pr-link",
        prNumber=7,
        prUrl="https://github.com/moredip/session-share/pull/7",
        prRepository="moredip/session-share",
        timestamp="2026-01-21T20:55:00.000Z",
    ),
    record(
        "pr-link",  # written again on resume: the same link
        prNumber=7,
        prUrl="https://github.com/moredip/session-share/pull/7",
        prRepository="moredip/session-share",
        timestamp="2026-01-21T20:56:00.000Z",
    ),
    record("queue-operation", operation="dequeue", timestamp="2026-01-21T20:55:01.000Z"),
]


def test_newer_kinds_are_read_for_what_they_mean_and_unknown_ones_named() -> None:
    """2.1.8x's ``ai-title``, ``last-prompt``, ``pr-link`` (the shapes real viewers read:
    ``aiTitle``, ``lastPrompt`` / ``leafUuid``, ``prNumber`` / ``prUrl`` / ``prRepository``)
    and a kind nobody knows yet, put after line 3: the conversation is P's, the title is the
    ai-title, the link kept once, the unknown kind named with its lines and the version."""
    unknown = [record("fancy-new-kind", payload={"x": 1}), record("fancy-new-kind", n=2)]
    raw = "\n".join([*LINES[:3], *NEWER, *unknown, *LINES[3:]]) + "\n"
    parsed = parse(raw)
    assert [i.kind for i in parsed.items] == KINDS
    assert [c.id for i in parsed.items for c in i.calls] == [CALL]
    assert parsed.title == "Thai curry colour survey"
    assert parsed.recorded["pr_links"] == [
        {
            "number": 7,
            "url": "https://github.com/moredip/session-share/pull/7",
            "repository": "moredip/session-share",
        }
    ]
    assert parsed.recorded["last_prompt"] == "spawn a subagent"
    assert parsed.not_read.kinds == {"fancy-new-kind": [9, 10]}
    assert parsed.agent_version == "2.1.14"
    assert parsed.not_read_sentences() == [
        "2 records of kinds this version of ctxscope does not read: fancy-new-kind 2 "
        "(Claude Code 2.1.14)"
    ]
    # Counted for what they are, not dropped silently.
    assert parsed.skipped["last-prompt"] == 1
    assert parsed.skipped["pr-link"] == 2
    assert parsed.skipped["queue-operation"] == 1


def test_a_record_of_an_unknown_kind_inside_the_chain_does_not_cut_it() -> None:
    """P's chain is lines 2-3-4-5-9-10-11 (``parentUuid`` by hand): line 2, its root, and line
    6, a progress record off it, renamed to a kind this version does not know. The walk
    still runs through line 2 to the user's input, and both are named."""
    renamed = [
        line.replace('"type":"progress"', '"type":"attachment"', 1) if n in (2, 6) else line
        for n, line in enumerate(LINES, start=1)
    ]
    assert renamed[1] != LINES[1] and renamed[5] != LINES[5]
    parsed = parse("\n".join(renamed) + "\n")
    assert [i.kind for i in parsed.items] == KINDS
    assert parsed.not_read.kinds == {"attachment": [2, 6]}
    assert parsed.warnings == []


def test_comment_blank_bom_and_crlf_lines_are_read_around() -> None:
    """Two ``//`` lines a publisher put at the top, a BOM before them, CRLF line ends and a
    blank line in the middle: P's conversation; the comments named by line."""
    body = ["// exported by session-share", "// licence: MIT", *LINES[:6], "", *LINES[6:]]
    raw = "\ufeff" + "\r\n".join(body) + "\r\n"
    parsed = parse(raw)
    assert [i.kind for i in parsed.items] == KINDS
    assert parsed.not_read.lines == {"comment": [1, 2]}
    assert parsed.not_read.kinds == {}


def test_a_repeated_record_is_read_once_and_named() -> None:
    """Line 9 (the tool_result) written twice: byte for byte after itself (line 10), and
    re-serialised with other spacing at the end (line 14): one result, both named."""
    again = json.dumps(json.loads(LINES[8]), indent=None, separators=(", ", ": "))
    raw = "\n".join([*LINES[:9], LINES[8], *LINES[9:], again]) + "\n"
    parsed = parse(raw)
    assert [i.kind for i in parsed.items] == KINDS
    assert parsed.not_read.lines == {
        "repeats an earlier line": [10],
        "repeats an earlier record (uuid)": [14],
    }


def test_a_known_kind_in_an_unexpected_shape_is_left_out_not_the_file() -> None:
    """Line 11 (the answer's text record) with ``content: 42``, and an assistant record with
    an unknown block type beside its text: the record (or the block) is named, the rest
    read. Line 10 holds the same response's thinking, so the step is still there."""
    eleven = json.loads(LINES[10])
    eleven["message"]["content"] = 42
    parsed = parse("\n".join([*LINES[:10], json.dumps(eleven), LINES[11]]) + "\n")
    assert [i.kind for i in parsed.items] == KINDS
    assert parsed.items[-1].text == ""
    assert parsed.not_read.lines == {"unexpected shape: assistant": [11]}

    eleven["message"]["content"] = [
        {"type": "hologram", "data": "…"},
        {"type": "text", "text": "Yellow."},
    ]
    parsed = parse("\n".join([*LINES[:10], json.dumps(eleven), LINES[11]]) + "\n")
    assert parsed.items[-1].text == "Yellow."
    assert parsed.not_read.lines == {"content block of unknown type 'hologram'": [11]}


def test_a_damaged_line_in_the_chain_goes_on_from_the_record_before_it() -> None:
    """Line 9 (the tool_result, which the answer at 10 hangs under) damaged: the walk goes on
    from line 5, the last conversation record before it, with a warning; the call then has
    no recorded result (the writer pairs it with an error one)."""
    raw = "\n".join([*LINES[:8], LINES[8][:50], *LINES[9:]]) + "\n"
    parsed = parse(raw)
    assert [i.kind for i in parsed.items] == ["user", "assistant", "assistant"]
    assert parsed.not_read.lines == {"not JSON": [9]}
    (warning,) = parsed.warnings
    assert warning.startswith("line 10: the record's parentUuid 184a728a-")
    assert warning.endswith("goes on from line 5, the last conversation record before it")


def test_a_file_with_no_conversation_is_refused_in_one_line_saying_what_it_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The newer records and P's snapshot and progress lines, no user or assistant record."""
    path = tmp_path / "meta.jsonl"
    path.write_text("\n".join([LINES[0], LINES[1], *NEWER[:3], "garbage"]) + "\n")
    with pytest.raises(ImportError_) as caught:
        parse_sessions(path)
    assert str(caught.value) == (
        f"{path}: looks like claude-code but cannot be imported: meta.jsonl holds no "
        "conversation (no user or assistant record): 6 lines, 1 file-history-snapshot, "
        "1 progress, 1 ai-title, 1 last-prompt, 1 pr-link, 1 not JSON"
    )
    code, out, err = run(capsys, "import", str(path), "--db", str(tmp_path / "x.db"))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert not (tmp_path / "x.db").exists()


@pytest.mark.usefixtures("no_key")
def test_the_import_report_names_what_was_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text and ``--json``: the "not read" lines, with the agent's version from the file."""
    path = tmp_path / "newer.jsonl"
    unknown = [record("fancy-new-kind", n=n) for n in range(3)]
    path.write_text("\n".join([*LINES[:3], *unknown, "not json", *LINES[3:]]) + "\n")
    code, out, _ = run(capsys, "import", str(path), "--db", str(tmp_path / "a.db"))
    assert code == 0
    assert (
        "  not read: 3 records of kinds this version of ctxscope does not read: "
        "fancy-new-kind 3 (Claude Code 2.1.14)\n"
        "  not read: 1 line not read: not JSON (line 7)\n"
    ) in out
    code, out, _ = run(capsys, "import", str(path), "--db", str(tmp_path / "b.db"), "--json")
    data = json.loads(out)
    assert data["agent_version"] == "2.1.14"
    assert data["not_read"]["kinds"] == {"fancy-new-kind": {"count": 3, "lines": [4, 5, 6]}}
    assert data["not_read"]["lines"] == {"not JSON": {"count": 1, "lines": [7]}}
    assert data["not_read"]["summary"][0].startswith("3 records of kinds")
    assert data["messages"] == 4  # user, assistant, tool, assistant


def test_binary_files_fifos_and_missing_paths_are_named_for_what_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "ls.jsonl"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    code, _, err = run(capsys, "import", str(binary), "--db", str(tmp_path / "x.db"))
    assert code == 1 and "not a text session file" in err and "codec" not in err
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "import", str(fifo), "--db", str(tmp_path / "x.db"))
    assert code == 1 and "a FIFO (named pipe), not a session file; not opened" in err
    code, _, err = run(capsys, "import", str(tmp_path / "nope"), "--db", str(tmp_path / "x.db"))
    assert code == 1 and "no such file or directory" in err
    assert not (tmp_path / "x.db").exists()


def test_a_folder_imports_what_it_can_and_lists_the_rest_with_the_reason(
    tmp_path: Path,
) -> None:
    """A good session, one with no conversation, a binary ``.jsonl``, a FIFO and a symlink
    to a session outside the folder: one imported, the others each named."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.jsonl").write_text(MOREDIP.read_text(encoding="utf-8"))
    (folder / "b.jsonl").write_text(LINES[0] + "\n" + LINES[1] + "\n")
    (folder / "c.jsonl").write_bytes(b"\x00\x01binary")
    os.mkfifo(folder / "d.jsonl")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(MOREDIP.read_text(encoding="utf-8"))
    (folder / "e.jsonl").symlink_to(outside)
    parsed = parse_path(folder)
    assert [p.name for p, _ in parsed.files] == ["a.jsonl"]
    assert [(p.name, why.split(":")[0]) for p, why in parsed.refused] == [
        ("b.jsonl", "looks like claude-code but cannot be imported"),
        ("c.jsonl", "not a text session file (it holds NUL bytes"),
    ]
    assert parsed.notes == [
        f"{folder / 'd.jsonl'}: a FIFO (named pipe), not a session file; not opened",
        f"{folder / 'e.jsonl'}: a symlink leading out of the folder (to {outside}); skipped",
    ]


@pytest.mark.usefixtures("no_key")
def test_import_json_of_a_file_with_several_sessions_is_a_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An aider history with two ``# aider chat started at`` blocks, each with an input."""
    history = tmp_path / ".aider.chat.history.md"
    history.write_text(
        "# aider chat started at 2025-03-01 09:15:02\n\n#### first question  \n\nAn answer.\n\n"
        "# aider chat started at 2025-03-02 10:00:00\n\n#### second question  \n\nAnother.\n"
    )
    code, out, _ = run(capsys, "import", str(history), "--db", str(tmp_path / "a.db"), "--json")
    assert code == 0
    data = json.loads(out)
    assert isinstance(data, list) and [d["session_id"] for d in data] == [1, 2]


def test_a_line_over_the_cap_is_skipped_while_read_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap lowered to 10,000 characters (P's longest line is 9,644): a 50,000-character
    line after line 3 is never held whole (read in pieces, dropped) and named by its line;
    the conversation is P's."""
    from engine.recordings import base, files

    monkeypatch.setattr(files, "MAX_LINE_CHARS", 10_000)
    monkeypatch.setattr(base, "MAX_LINE_CHARS", 10_000)
    huge = record("user", message={"role": "user", "content": "x" * 50_000})
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join([*LINES[:3], huge, *LINES[3:]]) + "\n")
    (parsed,) = parse_sessions(path)
    assert [i.kind for i in parsed.items] == KINDS
    assert parsed.not_read.lines == {"line over 32 MB": [4]}


def test_a_huge_tool_result_is_cut_to_its_head_and_tail_with_a_note() -> None:
    """P's tool_result (line 9) with 5,000,000 characters of output: 4 MiB kept (head and
    tail), the cut said in the text and in a warning; the structured result is left out."""
    nine = json.loads(LINES[8])
    nine["message"]["content"][0]["content"] = "h" * 1_000_000 + "m" * 3_000_000 + "t" * 1_000_000
    parsed = parse("\n".join([*LINES[:8], json.dumps(nine), *LINES[9:]]) + "\n")
    (result,) = [i for i in parsed.items if i.kind == "result"]
    omitted = 5_000_000 - 4 * 1024 * 1024
    assert result.text.startswith("h" * 1_000_000 + "m") and result.text.endswith("t" * 1_000_000)
    assert f"[… {omitted} characters left out by ctxscope's reader" in result.text
    assert len(result.text) < 4 * 1024 * 1024 + 200
    assert result.recorded is None
    assert parsed.warnings == [
        f"line 9: the tool result for {CALL} is 5000000 characters; its head and tail are kept"
    ]


def test_a_codex_rollout_names_what_it_does_not_read_with_its_cli_version(
    tmp_path: Path,
) -> None:
    """The corpus rollout (``session_meta.payload.cli_version`` 0.47.0, corpus_facts §5) with
    a line type Codex writes later (``world_state``) after line 2 and a damaged line: the
    rollout's 18 calls are read, both are named, with the version."""
    from tests.engine.recordings.corpus import CORPUS

    rollout = CORPUS / "yoavf__ai-sessions__codex-pomodor-timer.jsonl"
    lines = rollout.read_text(encoding="utf-8").splitlines()
    newer = json.dumps({"timestamp": "2025-10-21T20:03:00Z", "type": "world_state", "payload": {}})
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join([*lines[:2], newer, "{damaged", *lines[2:]]) + "\n")
    (parsed,) = parse_sessions(path)
    assert sum(len(i.calls) for i in parsed.items) == 18
    assert parsed.not_read_sentences() == [
        "1 record of kinds this version of ctxscope does not read: world_state 1 (Codex 0.47.0)",
        "1 line not read: not JSON (line 4)",
    ]


def test_a_damaged_prompt_snapshot_keeps_what_it_can() -> None:
    """A ``prompt_snapshot`` whose blocks and tools are not all of the shape Claude Code
    2.1.284 writes (the corpus' line 30: strings, and objects with a ``schema``): the strings
    are the system prompt, a tool without a ``schema`` is taken whole, anything else is
    left out; the conversation reads as before. One whose ``systemPrompt`` is not a list is
    not a snapshot: named as an attachment not read."""
    snapshot = record(
        "attachment",
        attachment={
            "type": "prompt_snapshot",
            "systemPrompt": ["You are an agent.", 7, None, "Be brief."],
            "tools": ["Bash", {"name": "Read", "input_schema": {}}, {"schema": "x"}],
        },
    )
    broken = record("attachment", attachment={"type": "prompt_snapshot", "systemPrompt": "x"})
    parsed = parse("\n".join([*LINES, snapshot, broken]))
    assert [(e["role"], e.get("name"), e["line"]) for e in parsed.hidden] == [
        ("system", None, 13),
        ("system", None, 13),
        ("tool", "Read", 13),
        ("tool", "", 13),
    ]
    assert [e["text"] for e in parsed.hidden[:2]] == ["You are an agent.", "Be brief."]
    assert parsed.not_read.as_json()["kinds"] == {"attachment": {"count": 1, "lines": [14]}}
    assert [i.kind for i in parsed.items] == KINDS
