"""The artifact ledger: one test per item kind, Bash edits, errors past 2 000 characters,
requests without IDE markup, presence checks and per-compaction fidelity."""

from __future__ import annotations

import json

import pytest

from engine.compaction.bash_files import bash_files
from engine.compaction.ledger import (
    KINDS,
    error_line,
    extract_ledger,
    fidelity,
    ledger_recall,
    present,
    strip_markup,
)
from engine.models import Message, MessageMeta, Observation, ToolCall


def user(text: str, rnd: int = 1, mid: int | None = None) -> Message:
    return Message(id=mid, role="user", content=text, meta=MessageMeta(round=rnd))


def call(name: str, rnd: int = 1, step: int = 1, mid: int | None = None, **args: object) -> Message:
    return Message(
        id=mid,
        role="assistant",
        tool_calls=[ToolCall(id=f"t{rnd}_{step}_{name}", name=name, input=dict(args))],
        meta=MessageMeta(round=rnd, step=step),
    )


def result(name: str, body: dict, rnd: int = 1, step: int = 1, mid: int | None = None) -> Message:
    return Message(
        id=mid,
        role="tool",
        content=json.dumps(body),
        meta=MessageMeta(
            round=rnd,
            step=step,
            tool_name=name,
            tool_use_id=f"t{rnd}_{step}_{name}",
            is_error=body.get("status") == "error",
        ),
    )


def final(text: str, rnd: int = 1) -> Message:
    return Message(role="assistant", content=text, meta=MessageMeta(round=rnd, final=True))


def keys(messages: list[Message], kind: str, obs: list[Observation] = []) -> list[str]:  # noqa: B006
    return [i.key for i in extract_ledger(messages, obs).of(kind)]


# ---------------------------------------------------------------------- per kind
def test_files_read_by_read_and_by_bash() -> None:
    msgs = [
        user("look"),
        call("Read", file_path="src/a.py"),
        call("Read", step=2, file_path="src/a.py"),  # the same file once
        call("Bash", step=3, command="cat docs/b.md | head -5 && tail -n 20 log/c.txt"),
    ]
    assert keys(msgs, "file_read") == ["src/a.py", "docs/b.md", "log/c.txt"]


def test_files_changed_by_tools_with_how() -> None:
    msgs = [
        user("change"),
        call("Edit", file_path="src/a.py", old_string="x", new_string="y"),
        call("Write", step=2, file_path="src/new.py", content=""),
        call("MultiEdit", step=3, file_path="src/b.py", edits=[]),
    ]
    items = extract_ledger(msgs).of("file_changed")
    assert [(i.key, i.detail) for i in items] == [
        ("src/a.py", "edited"),
        ("src/new.py", "written"),
        ("src/b.py", "edited"),
    ]


@pytest.mark.parametrize(
    ("command", "changed", "read"),
    [
        ("sed -i 's/0.5/1.0/' src/client.py", ["src/client.py"], []),
        ("sed -i.bak -e 's/a/b/' -e 's/c/d/' a.py b.py", ["a.py", "b.py"], []),
        ("sed -n '1,5p' a.py", [], ["a.py"]),
        ("perl -pi -e 's/a/b/' z.c", ["z.c"], []),
        ("echo hi > out.txt", ["out.txt"], []),
        ("date >> log/run.log", ["log/run.log"], []),
        ("python x.py 2>&1 > /dev/null", [], []),
        ("make 2> err.log", ["err.log"], []),
        ("cat a.txt | tee -a copy.txt other.txt", ["copy.txt", "other.txt"], ["a.txt"]),
        ("git mv old/name.py new/name.py", ["old/name.py", "new/name.py"], []),
        ("mv -f a.py b.py && ls", ["a.py", "b.py"], []),
        ("cp -r src/tpl.py src/gen.py", ["src/gen.py"], ["src/tpl.py"]),
        ("rm -rf build dist; git rm -q stale.py", ["build", "dist", "stale.py"], []),
        ("FOO=1 sudo touch marker", ["marker"], []),
        ("cat > f.py <<'EOF'\nprint('it''s')\nEOF", ["f.py"], []),
        ("cat <<'EOF' > gen/conf.py\nx = \"a > b\"\nEOF", ["gen/conf.py"], []),
        ('echo "a > b" | grep -c x 2>/dev/null >&2', [], []),
        ("sed -i 's/a/b/' x.py\nrm y.txt", ["x.py", "y.txt"], []),
        ("python -c 'print(1)\nprint(2)' > out.log", ["out.log"], []),
        ("pytest -q", [], []),
    ],
)
def test_bash_files(command: str, changed: list[str], read: list[str]) -> None:
    got_changed, got_read = bash_files(command)
    assert [p for p, _ in got_changed] == changed
    assert got_read == read


def test_edit_through_bash_is_in_the_ledger_with_its_command() -> None:
    msgs = [user("fix"), call("Bash", command="sed -i 's/0.5/1.0/' src/client.py")]
    items = extract_ledger(msgs).items
    assert [(i.kind, i.key, i.detail) for i in items] == [
        ("request", "fix", ""),
        ("command", "sed -i 's/0.5/1.0/' src/client.py", ""),
        ("file_changed", "src/client.py", "Bash: sed -i"),
    ]


def test_commands_first_line_cut_at_80() -> None:
    long = "python -c " + "x" * 100
    msgs = [
        user("go"),
        call("Bash", command="  make   test\nsecond line"),
        call("Bash", step=2, command=long),
    ]
    assert keys(msgs, "command") == ["make test", long[:80]]


def test_requests_without_ide_markup() -> None:
    text = (
        "<ide_opened_file>The user opened the file /home/u/p/src/app.py in the IDE. "
        "This may or may not be related.</ide_opened_file>"
        "<system-reminder>\nThe user mentioned @src/app.py.\n</system-reminder>\n"
        "Make   the retry delay configurable"
    )
    cmd = (
        "<command-message>review is running…</command-message>\n"
        "<command-name>/review</command-name>\n<command-args>the auth module</command-args>"
    )
    msgs = [user(text), user(cmd, rnd=2), user("<system-reminder>only</system-reminder>", rnd=3)]
    assert keys(msgs, "request") == ["Make the retry delay configurable", "the auth module"]
    assert strip_markup("<ide_selection>x = 1</ide_selection>ok") == "ok"


def test_request_key_is_the_first_60_characters() -> None:
    words = "please refactor the configuration loader so that every setting has a docstring"
    assert keys([user(words)], "request") == [
        "please refactor the configuration loader so that every setti"
    ]


def test_errors_keep_the_exception_line_not_the_wrapper() -> None:
    imported = {
        "status": "error",
        "error": {
            "code": "tool_error",
            "message": "<returncode>1</returncode> <output> Traceback (most recent call last):\n"
            '  File "app.py", line 3, in <module>\n    main()\n'
            "KeyError: 'retry_delay'\n</output>",
        },
    }
    pytest_out = {
        "status": "error",
        "error": {"code": "tool_error", "message": "E   AssertionError: expected 0.5\n1 failed"},
    }
    not_found = {"status": "error", "error": {"code": "not_found", "message": "No file src/x.py."}}
    msgs = [
        user("run"),
        call("Bash", command="python app.py"),
        result("Bash", imported),
        call("Bash", step=2, command="pytest"),
        result("Bash", pytest_out, step=2),
        call("Read", step=3, file_path="src/x.py"),
        result("Read", not_found, step=3),
        call("Read", step=4, file_path="ok.py"),
        result("Read", {"status": "success", "data": {"content": "ValueError: in a file"}}, step=4),
    ]
    items = extract_ledger(msgs).of("error")
    assert [(i.key, i.detail) for i in items] == [
        ("KeyError: 'retry_delay'", "Bash"),
        ("AssertionError: expected 0.5", "Bash"),
        ("No file src/x.py.", "Read"),
    ]


def test_exception_line_past_2000_characters_comes_from_the_observation() -> None:
    noise = "\n".join(f"log line {n:04d} " + "." * 60 for n in range(40))  # ~3 000 chars
    stderr = (
        noise + '\nTraceback (most recent call last):\n  File "t.py", line 9\nOSError: disk full'
    )
    assert stderr.index("OSError") > 2000
    # history keeps a compressed form whose tail was cut: the exception is not in it
    compressed = {
        "status": "error",
        "data": {"command": "python t.py", "exit_code": 1, "stderr_tail": "log line 0039 …"},
        "error": {"code": "nonzero_exit", "message": "The command exited with code 1."},
    }
    msgs = [
        user("go"),
        call("Bash", mid=2, command="python t.py"),
        result("Bash", compressed, mid=3),
    ]
    without = extract_ledger(msgs).of("error")
    assert [i.key for i in without] == ["log line 0039 …"]  # the tail's last line: wrong
    obs = Observation(
        session_id=1,
        round_index=1,
        step=1,
        tool_use_id="t1_1_Bash",
        tool_name="Bash",
        result={"status": "error", "data": {"stdout": "", "stderr": stderr}},
        text=stderr + "\n[nonzero_exit: The command exited with code 1.]",
        message_id=3,
    )
    assert keys(msgs, "error", [obs]) == ["OSError: disk full"]


def test_error_line_rules() -> None:
    assert error_line("npm WARN x\nerror: cannot find module 'zod'\nmore") == (
        "error: cannot find module 'zod'"
    )
    assert error_line("compiling\nfailed badly\n[nonzero_exit: exited 2]") == "failed badly"
    ruff = "<output>src/a.py:3:1: F401 [*] `os` imported but unused\nFound 1 error.\n</output>"
    assert error_line(ruff) == "src/a.py:3:1: F401 [*] `os` imported but unused"
    assert error_line("a.ValueError: first\nrequests.exceptions.HTTPError: 404") == (
        "requests.exceptions.HTTPError: 404"
    )


def test_interrupted_results_are_not_errors() -> None:
    msg = result("Bash", {"status": "error", "error": {"code": "interrupted", "message": "x"}})
    msg.meta.interrupted = True
    assert keys([user("a"), call("Bash", command="sleep 9"), msg], "error") == []


def test_decisions_from_final_answers_only() -> None:
    msgs = [
        user("what now"),
        Message(role="assistant", content="I decided to look first.", meta=MessageMeta(step=1)),
        final("Tests pass. I decided to update that test instead of reverting.\nDone."),
    ]
    assert keys(msgs, "decision") == ["I decided to update that test instead of reverting."]


def test_items_carry_round_step_and_message_id() -> None:
    msgs = [user("a", rnd=4, mid=10), call("Read", rnd=4, step=2, mid=11, file_path="x.py")]
    items = extract_ledger(msgs).items
    assert [(i.kind, i.round, i.step, i.message_id) for i in items] == [
        ("request", 4, None, 10),
        ("file_read", 4, 2, 11),
    ]


# ---------------------------------------------------------------------- presence and fidelity
def test_presence_ignores_case_and_spacing() -> None:
    items = extract_ledger(
        [
            user("Run  the tests"),
            call("Read", file_path="src/a.py"),
            call("Read", step=2, file_path="b.py"),
        ]
    ).items
    assert present(items, "* **Original Goal**: run the\n tests; read `src/a.py`") == [
        True,
        True,
        False,
    ]


def test_a_request_wrapped_in_tags_as_sent_is_present() -> None:
    # mini-swe-agent sends the task inside <pr_description>; its key is the words alone
    (item,) = extract_ledger(
        [user("<pr_description>\nadd() returns the wrong result\n</pr_description>\nFix it.")]
    ).items
    assert item.key == "add() returns the wrong result Fix it."
    sent = "Please solve this issue: <pr_description>\nadd() returns the wrong result\n"
    assert present([item], sent + "</pr_description>\nFix it.") == [True]
    assert present([item], sent) == [False]


def test_ledger_recall_fractions_per_kind() -> None:
    items = extract_ledger(
        [
            user("one"),
            call("Read", file_path="a.py"),
            call("Read", step=2, file_path="b.py"),
            call("Edit", step=3, file_path="c.py"),
        ]
    ).items
    recall = ledger_recall(items, "one a.py c.py")
    assert recall["file_read"] == 0.5
    assert recall["file_changed"] == 1.0
    assert recall["request"] == 1.0
    assert recall["error"] is None and recall["command"] is None
    assert set(recall) == set(KINDS)


def test_fidelity_counts_kept_and_total() -> None:
    msgs = [
        user("Find the retry delay"),
        call("Bash", command="sed -i 's/1/2/' cfg.ini"),
        result("Bash", {"status": "error", "error": {"code": "x", "message": "ValueError: no"}}),
        final("I chose cfg.ini."),
    ]
    got = fidelity(msgs, [], "Find the retry delay; `cfg.ini` edited; ValueError: no")
    assert got == {
        "file_read": (0, 0),
        "file_changed": (1, 1),
        "command": (0, 1),
        "error": (1, 1),
        "request": (1, 1),
        "decision": (0, 1),
    }
