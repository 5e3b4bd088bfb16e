"""The ctxscope context engine: everything that is not presentation.

The engine never imports Textual; the TUI, the CLI and the tests are observers of its events.
"""
