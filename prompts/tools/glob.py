"""The Glob tool as the model reads it."""

DESCRIPTION = """\
Find files by path pattern, newest first (sorted by modification time).

- `pattern`: a glob matched against paths relative to `path`. `*` and `?` stay within one \
directory, `**` spans any number of directories, `{a,b}` gives alternatives. \
Examples: "**/*.py", "src/**/test_*.ts", "*.{md,txt}" (top level only).
- `path`: directory to search in, relative to the workspace root (default ".").
- Results are file paths relative to the workspace root, ready for Read.
- Files ignored by .gitignore and the .git directory are skipped; symlinks are not followed.
- Long result lists are cut; the result says how many matches there were in total.
"""
