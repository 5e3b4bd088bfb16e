"""The Read tool as the model reads it."""

DESCRIPTION = """\
Read a text file of the workspace, with line numbers.

- `file_path`: relative to the workspace root.
- `offset`: first line to return, 1-based (default 1). `limit`: number of lines \
(default and maximum: a few hundred). The result says which lines it holds, the file's \
total, and the offset to continue from.
- Each line is shown as "<number><TAB><text>"; the number is not part of the file. Very \
long lines are cut with a marker.
- The result holds the file's mtime. If the file changed on disk since you last read it, the \
result says "Note: <file> was modified externally." — earlier knowledge of it is stale.
- You must Read a file before you Edit, MultiEdit or overwrite it with Write.
- Binary files are refused. Files that are not UTF-8 are decoded as Latin-1.
"""
