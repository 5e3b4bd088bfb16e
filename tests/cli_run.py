"""Running ``ctxscope`` commands in-process in a test: exit code, stdout and stderr."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command; argparse's own exit included (its
    ``SystemExit`` becomes the code), and only what this command printed."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """:func:`cli.main.main`'s return code, with stdout and stderr captured since the last
    read (what the test printed before included); ``SystemExit`` is not caught."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_redirected(*argv: str) -> tuple[int, str, str]:
    """:func:`cli.main.main`'s return code, stdout and stderr, without ``capsys`` (for a
    module-scoped fixture)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
