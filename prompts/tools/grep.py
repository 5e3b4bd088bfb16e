"""The Grep tool as the model reads it."""

DESCRIPTION = """\
Search file contents with a regular expression (ripgrep syntax; Python-compatible subset).

- `pattern`: the regex, matched line by line. Escape regex characters for a literal search \
(e.g. "foo\\\\(" for "foo(").
- `path`: file or directory to search, relative to the workspace root (default ".").
- `glob`: only search files matching this glob, e.g. "*.py" (any depth) or "src/**/*.ts".
- `case_insensitive`: ignore case.
- `output_mode`: "content" (default) gives file:line:text for each matching line; \
"files_with_matches" gives only the file paths; "count" gives matching lines per file.
- Results are sorted by file path, then line. Binary files, files ignored by .gitignore and \
the .git directory are skipped; symlinks are not followed.
- Long results are cut; the result gives the totals. Narrow with `path` or `glob` if needed.
- Use Grep instead of running grep or rg through Bash.
"""
