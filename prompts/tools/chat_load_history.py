"""The chat_load_history tool as the model reads it (seed 003, ``message-window`` only)."""

DESCRIPTION = """\
Load earlier conversation of this session (the user's requests and your final answers, \
including rounds that were compacted away) and inject it as ONE assistant message just before \
the current user message, for the rest of this run.

- `count`: how many chat messages to load, counting back from the newest (default 20).
- `offset`: skip this many of the newest messages first (default 0), to page further back.
- The same part of the chat is injected only once per run; the user's message is never changed.
- Use it when the compacted history lacks something the user said or you answered earlier.
"""
