"""The ``ctxscope`` console script: the headless CLI, or the workbench without a command."""

from __future__ import annotations

import argparse
import sys

from engine.cli import main as cli_main
from engine.config import Settings


def run_tui(args: argparse.Namespace, settings: Settings) -> int:
    from tui.app import run

    return run(args, settings)


def main() -> int:
    return cli_main(sys.argv[1:], run_tui=run_tui)


if __name__ == "__main__":
    sys.exit(main())
