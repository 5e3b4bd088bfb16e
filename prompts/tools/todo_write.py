"""The TodoWrite tool as the model reads it."""

DESCRIPTION = """\
Replace the session's todo list, to plan and track multi-step work.

- `todos`: the complete list, each {content, status}; status is "pending", "in_progress" or \
"completed". Send the whole list every time; items left out are removed.
- Keep exactly one item "in_progress" while working; mark items "completed" as soon as they \
are done.
- Use it for tasks of three or more steps; skip it for a single quick action.
- A recap of the list is shown to you at the end of the context on every step.
"""
