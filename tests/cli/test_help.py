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


def test_a_folder_import_prints_one_summary_line(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: an aider history of 702 sessions printed 702 lines. A folder (or a file of
    several sessions) prints one line of sums; ``--verbose`` one line per session. Three
    corpus files here: the sums are those of ``--json``'s three objects."""
    import json
    import shutil
    from pathlib import Path

    from tests.engine.recordings.corpus import MAROT, MOREDIP, YOAVF

    root = Path(str(tmp_path))
    folder = root / "sessions"
    folder.mkdir()
    for f in (MAROT, MOREDIP, YOAVF):
        shutil.copy(f, folder / f.name)
    db = str(root / "a.db")
    assert main(["import", str(folder), "--db", db, "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert len(reports) == 3
    again = str(root / "b.db")
    assert main(["import", str(folder), "--db", again]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"imported {folder} (claude-code) as 3 sessions")
    rounds = sum(r["rounds"] for r in reports)
    messages = sum(r["messages"] for r in reports)
    assert f": {rounds} rounds, {messages} messages, " in out[0]
    assert out[0].endswith("(--verbose: one line per session)")
    assert main(["import", str(folder), "--db", str(root / "c.db"), "--verbose"]) == 0
    verbose = capsys.readouterr().out.splitlines()
    assert len([line for line in verbose if line.startswith("imported ")]) == 3


LISTED = (
    "sessions show steer-check context compact uncompact pin import report check export "
    "strategy strategies replay recall watch proxy run statusline ask"
).split()
"""The subcommands as ``ctxscope --help`` listed them before each command module made its own
parser (issue 43), copied from that output in its order."""


def test_each_command_module_makes_its_own_parser_in_the_old_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The parser is built from each command module's ``add_<name>_parser``; ``--help`` lists
    the same subcommands in the same order, and a few options keep their defaults and help."""
    import importlib
    import re

    from cli.main import COMMANDS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    listed = out.split("  COMMAND\n")[1].split("\n\noptions:")[0]
    assert re.findall(r"^    (\S+)", listed, re.M) == LISTED
    for name, module in COMMANDS.items():
        runs = importlib.import_module(f"cli.{module}")
        assert callable(getattr(runs, f"add_{name.replace('-', '_')}_parser"))
        assert callable(getattr(runs, f"cmd_{name.replace('-', '_')}"))
    parser = build_parser()
    assert parser.parse_args(["run", "--", "claude", "-p", "x"]).port == 0
    assert parser.parse_args(["proxy"]).port == 8787
    assert parser.parse_args(["steer-check", "3"]).rules == ("dups", "stale", "pins")
    assert parser.parse_args(["steer-check", "3"]).horizon == 0.25
    assert parser.parse_args(["replay", "3"]).replay_strategies == "all"
    assert parser.parse_args(["export", "3"]).format == "anthropic-jsonl"
    assert not hasattr(parser.parse_args(["export", "3"]), "json")  # export takes no --json
    with pytest.raises(SystemExit):
        main(["steer-check", "--help"])
    assert "a tool result older than N assistant turns is stale (default 10)" in " ".join(
        capsys.readouterr().out.split()
    )
