"""Every subcommand's ``--help`` says what it does and gives an example that parses (issue 39:
a subcommand's help had no description and no example)."""

from __future__ import annotations

import shlex

import pytest

from cli.main import EXAMPLES, build_parser, main

SUBCOMMANDS = (
    "sessions show context compact uncompact pin import report export strategy strategies "
    "replay recall watch proxy run ask"
).split()


def test_every_subcommand_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(SUBCOMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_opens_with_what_it_does_and_ends_with_an_example(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    usage, _, rest = out.partition("\n\n")
    assert usage.startswith(f"usage: ctxscope {name}")
    description = rest.split("\n\n")[0]
    assert description and not description.startswith(("positional", "options"))
    assert out.rstrip().endswith(EXAMPLES[name])
    # the example is a command the parser takes (a note in brackets and a redirection aside)
    example = EXAMPLES[name].split("   (")[0].split(" > ")[0]
    argv = shlex.split(example)
    assert argv[0] == "ctxscope"
    assert build_parser().parse_args(argv[1:]).command == name
