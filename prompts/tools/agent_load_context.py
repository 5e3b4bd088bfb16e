"""The agent_load_context tool as the model reads it (seed 003, ``message-window`` only)."""

DESCRIPTION = """\
Load this session's execution log (one entry per earlier run: the request, the tools called \
and whether one failed, the answer; older runs merged into a summary entry) and inject it as a \
system message for the rest of this run.

- `count`: how many log entries to load, counting back from the newest (default 20).
- `offset`: skip this many of the newest entries first (default 0), to page further back.
- The same entries are injected only once per run.
- Use it to recall what earlier runs did (files touched, commands run, failures) before \
repeating work.
"""
