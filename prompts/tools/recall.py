"""The Recall tool as the model reads it."""

DESCRIPTION = """\
Search this session's archived raw messages: the rounds a compaction replaced by a summary \
(user requests, your thoughts and tool calls, and the full tool results).

- `query`: words to look for (all of them first, then any); exact names work best: a file \
path, a function, an error message.
- `limit`: how many passages to return, best first (default 5, at most 20).
- Each hit gives the archived segment, round and message id, and the passage with the \
matching words in [brackets].
- Use it when an archived summary lacks a detail you need; current history is not searched \
(it is already in front of you).
"""
