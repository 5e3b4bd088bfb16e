"""Inside the Bash sandbox's namespaces: make the file system read-only but the workspace,
give ``/tmp`` a private tmpfs, then exec the command.

``python -I -S sandbox_init.py WORKSPACE BASH -c COMMAND``, run by ``unshare --user
--map-root-user --pid --fork --mount --mount-proc [--net]`` (see ``tools.sandbox``), so it is
PID 1 of a new PID namespace with its own ``/proc`` and its own mount table:

1. every mount is bind-remounted read-only, keeping the flags the kernel locked (``nosuid``,
   ``nodev``, ``noexec``, the atime flags), which a user namespace may not drop;
2. ``/tmp`` gets a private tmpfs (writable, gone with the call);
3. the workspace — held open by descriptor from step 0, as ``/tmp`` may now hide it — is bound
   back on its own path and remounted read-write;
4. bash is exec'd in the workspace as PID 1: when it exits the kernel ends every process left
   in the namespace (``setsid`` or not).

Only the standard library: the init starts on every sandboxed Bash call.
"""

from __future__ import annotations

import ctypes
import os
import sys

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000

_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> bool:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    return bool(_libc.mount(enc(source), enc(target), enc(fstype), flags, None) == 0)


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts() -> list[tuple[str, int]]:
    """``(mount point, per-mount flags)`` of this namespace, parents before children."""
    found: list[tuple[str, int]] = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            point = _unescape(fields[4])
            flags = 0
            for option in fields[5].split(","):
                flags |= _FLAGS.get(option, 0)
            found.append((point, flags))
    return found


def main(argv: list[str]) -> None:
    workspace, command = argv[0], argv[1:]
    held = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    failed = 0
    for point, flags in mounts():
        if not _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags):
            failed += 1  # a mount we cannot change (e.g. hidden below another): stays as is
    if os.path.isdir("/tmp"):
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV)
    os.makedirs(workspace, exist_ok=True)
    if not _mount(f"/proc/self/fd/{held}", workspace, None, MS_BIND | MS_REC):
        sys.stderr.write(f"ctxscope sandbox: cannot bind the workspace {workspace}\n")
        os._exit(126)
    if not _mount(None, workspace, None, MS_REMOUNT | MS_BIND):
        sys.stderr.write(f"ctxscope sandbox: cannot make the workspace {workspace} writable\n")
        os._exit(126)
    os.close(held)
    os.chdir(workspace)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
