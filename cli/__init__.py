"""The ``ctxscope`` command line: headless subcommands, and the workbench when none is given.

Outside the engine: it parses arguments, asks the engine and prints. The workbench (``tui``)
starts from :mod:`cli.workbench` and imports nothing of this package.
"""
