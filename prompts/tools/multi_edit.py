"""The MultiEdit tool as the model reads it."""

DESCRIPTION = """\
Make several exact-string replacements in one file, all or nothing.

- `file_path`: relative to the workspace root; Read the file first in this session.
- `edits`: a list of {old_string, new_string, replace_all}, applied in order, each to the \
result of the previous ones (same rules as Edit for each).
- If any edit fails (string not found, not unique, no change) nothing is written and the \
result names the failing edit.
- The result shows the combined diff and changed line ranges. The user may be asked to \
approve.
"""
