"""The Bash tool as the model reads it."""

DESCRIPTION = """\
Run a shell command with `bash -c` in the workspace root.

- `command`: the command line. Each call starts a fresh shell: `cd` and variables do not \
carry over, so chain steps with `&&`. There is no input: interactive commands get end-of-file.
- `timeout`: seconds before the command and every process it started are killed \
(the default and the upper bound come from the user's settings; the result says which \
timeout applied).
- `description`: a few words saying what the command does, shown to the user.
- The result holds the exit code, stdout and stderr separately; very long output keeps its \
head and tail with a marker for what was dropped. A non-zero exit code is reported as an \
error with the output attached.
- Processes left running in the background are stopped when the command ends.
- Prefer the dedicated tools: Read over cat/head/tail, Grep over grep/rg, Glob/LS over \
find/ls, Edit/Write over sed/echo redirections. The user may be asked to approve a command.
"""
