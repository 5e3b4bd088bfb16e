"""The parser made for one command line (``build_parser(argv)``, issue 44) answers exactly as
the whole parser does: the same namespace, the same ``--help`` and the same error, word for
word, for every subcommand's example, help and a few mistakes."""

from __future__ import annotations

import contextlib
import io
import shlex

import pytest

from cli.main import COMMANDS, EXAMPLES, build_parser


def answer(parser_argv: list[str] | None, argv: list[str]) -> tuple[object, str, str]:
    """What the parser built for ``parser_argv`` (None: the whole parser) does with ``argv``:
    (the namespace's values or the exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: object = vars(build_parser(parser_argv).parse_args(argv))
        except SystemExit as done:
            result = ("exit", done.code)
    return result, out.getvalue(), err.getvalue()


def example_argv(name: str) -> list[str]:
    example = EXAMPLES[name].split("   (")[0].split(" > ")[0]
    return shlex.split(example)[1:]


CASES = [
    *(example_argv(name) for name in EXAMPLES),
    *([name, "--help"] for name in COMMANDS),
    ["context", "abc"],  # not a session id
    ["context"],  # the id missing
    ["show", "1", "--no-such-option"],
    ["sessions", "--json", "--db", "x.db", "--project", "app"],
    ["replay", "1", "--window", "0"],
    ["statusline"],
    ["context", "1", "--input", "sessions"],  # a command's name as a value
]


@pytest.mark.parametrize("argv", CASES, ids=lambda argv: " ".join(argv))
def test_the_parser_for_one_command_answers_as_the_whole_parser(argv: list[str]) -> None:
    whole = answer(None, argv)
    assert answer(argv, argv) == whole
    # and it did answer: a namespace naming the command, or help / an error printed
    values, out, err = whole
    assert (isinstance(values, dict) and values["command"] == argv[0]) or out or err


def test_only_the_commands_own_parser_is_made() -> None:
    """The saving itself: the parser made for ``context 1`` knows no other subcommand (one
    subparser, not twenty), while ``--help`` and a line that does not start with a command
    still get them all."""
    values, _, err = answer(["context", "1"], ["show", "1"])
    assert values == ("exit", 2)
    assert "invalid choice: 'show' (choose from 'context')" in err
    for first in ([], ["--help"], ["--db", "x.db", "context", "1"], ["contxt", "1"]):
        values, _, _ = answer(first, ["show", "1"])
        assert isinstance(values, dict) and values["command"] == "show"
