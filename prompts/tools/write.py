"""The Write tool as the model reads it."""

DESCRIPTION = """\
Create a file or replace its whole content.

- `file_path`: relative to the workspace root; missing parent directories are created.
- `content`: the complete new content.
- Overwriting an existing file requires having Read it in this session (and it must not have \
changed since); prefer Edit or MultiEdit for changes to existing files.
- The write is atomic: on failure the old file is left intact. The user may be asked to \
approve.
"""
