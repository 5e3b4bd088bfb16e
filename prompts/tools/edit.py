"""The Edit tool as the model reads it."""

DESCRIPTION = """\
Replace an exact string in a file.

- `file_path`: relative to the workspace root. Read the file first in this session; an edit \
of a file not read, or changed on disk since, is refused.
- `old_string`: the exact text to replace, including indentation and line breaks, without \
the line-number prefix that Read shows. It must occur exactly once unless `replace_all` is \
true; add surrounding lines to make it unique.
- `new_string`: the replacement (must differ from `old_string`).
- `replace_all`: replace every occurrence (e.g. to rename a variable).
- The result shows the diff and the changed line ranges. The user may be asked to approve.
- For several changes to one file use MultiEdit; to create a file use Write.
"""
