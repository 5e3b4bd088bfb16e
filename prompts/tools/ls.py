"""The LS tool as the model reads it."""

DESCRIPTION = """\
List the entries of one directory of the workspace (not recursive).

- `path`: directory relative to the workspace root (default "." = the root).
- Directories come first and end with "/"; files show their size; symlinks show "->" and are \
not followed.
- Very large directories are cut; the result says how many entries were not shown.
- To find files by name across the tree use Glob; to search contents use Grep.
"""
