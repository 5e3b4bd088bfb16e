"""Inside the built-in Bash sandbox: set it up, lock it, then exec the command.

``python -I -S sandbox_init.py WORKSPACE TMP_BYTES UNIX_SOCKETS -- COMMAND...``, run by
``unshare --user --map-root-user --pid --fork --mount --mount-proc [--net]`` (see
``tools.sandbox``), so it is PID 1 of a new PID namespace, root of a new user namespace,
with its own ``/proc`` and mount table:

1. every mount but ``/proc`` is bind-remounted read-only, keeping the flags the kernel locked
   (``nosuid``, ``nodev``, ``noexec``, the atime flags), which a user namespace may not drop;
2. ``/tmp`` gets a private tmpfs of ``TMP_BYTES`` (0: no size limit), gone with the call;
3. the workspace — held open by descriptor from step 1, as ``/tmp`` may now hide it — is
   bound back on its own path and remounted read-write, but for its control files
   (:data:`CONTROL_FILES`: ``ctxscope.toml``, ``CODE_LAW.md``, git's config and hooks…),
   each that exists bound on itself read-only;
4. a second user namespace with a new mount namespace is entered, mapping the user's own id:
   the mounts made above are copied into a namespace owned by a less privileged user
   namespace, and the kernel *locks* them (they cannot be unmounted one by one to show what
   is below, their read-only flag cannot be cleared) — what bubblewrap relies on; ``/proc``
   is then made read-only too;
5. every capability is dropped (bounding set, ambient, inheritable, permitted, effective),
   ``no_new_privs`` is set and the seccomp filter of :func:`seccomp_program` loaded (with
   ``UNIX_SOCKETS`` ``1``, ``socket(AF_UNIX)`` allowed) — the same filter bubblewrap gets
   through ``--seccomp FD``;
6. the command is exec'd in the workspace.

The per-call limits (processes, memory, file size, CPU) are set by the command line
``tools.sandbox`` builds around the command, the same way for every sandbox. Only the
standard library: the init starts on every Bash call.
"""

from __future__ import annotations

import ctypes
import os
import struct
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

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = (
    CLONE_NEWNS
    | CLONE_NEWCGROUP
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET
)

CONTROL_FILES = ("ctxscope.toml", "CODE_LAW.md", ".git/config", ".git/hooks", ".envrc")
"""Workspace paths a sandboxed command may not change, made read-only where they exist: the
settings and law ctxscope reads there, and what the user's own tools run outside the sandbox
(git's hooks and ``core.*`` commands, direnv's ``.envrc``). The Write and Edit tools refuse
them too (``tools.paths.refuse_control_file``)."""

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
"""The device nodes a sandboxed command gets in its own ``/dev`` (what bubblewrap's ``--dev``
gives): no disk, no ``kvm``, ``kmsg``, ``userfaultfd`` or ``loop*``, and no terminal but its
own (``/dev/pts`` is a new devpts instance: the user's terminals are not there)."""
DEV_LINKS = {
    "ptmx": "pts/ptmx",
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
    "core": "/proc/kcore",
}
CREDENTIAL_FILES = (
    ".pgpass",
    ".netrc",
    ".git-credentials",
    ".my.cnf",
    ".aws/credentials",
    ".docker/config.json",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
)
"""Files in the home folder that hold credentials, hidden in the sandbox (an empty file bound
over each); ``.ssh`` and ``.gnupg`` are folders, hidden under an empty one."""
CREDENTIAL_FOLDERS = (".ssh", ".gnupg", ".aws/sso", ".kube", ".password-store")

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522

# ------------------------------------------------------------------------- seccomp (x86_64)
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
EPERM = 1
ENOSYS = 38

BLOCKED_SYSCALLS = {
    "ptrace": 101,
    "pivot_root": 155,
    "chroot": 161,
    "mount": 165,
    "umount2": 166,
    "init_module": 175,
    "delete_module": 176,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "open_tree_attr": 467,
}
"""Refused with EPERM (x86_64 numbers, ``asm/unistd_64.h``): the mount calls old and new,
namespaces, tracing other processes, the kernel keyring, modules, kexec, eBPF, perf, file
handles (which open by inode, past the mount table), ``userfaultfd`` and io_uring (both mostly
seen in kernel exploits; io_uring also runs operations seccomp never sees)."""
SYS_CLONE = 56
SYS_SOCKET = 41
AF_UNIX = 1
AF_VSOCK = 40
"""Sockets to the hypervisor and its other guests: refused whatever ``bash_unix_sockets``."""
SECCOMP_SUPPORTED = os.uname().machine == "x86_64"
"""The filter is written for x86_64; elsewhere the sandbox runs without it (docs/security.md)."""
SYS_CLONE3 = 435

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data


def seccomp_program(*, unix_sockets: bool = False) -> bytes:
    """The filter as the kernel takes it (``struct sock_filter[]``, 8 bytes each): a call of
    another architecture (i386 through ``int 0x80``) or the x32 ABI, a call in
    :data:`BLOCKED_SYSCALLS`, ``clone`` asking for a new namespace, ``socket(AF_VSOCK, …)``
    (the hypervisor), or — unless ``unix_sockets`` — ``socket(AF_UNIX, …)`` gets EPERM;
    ``clone3`` gets ENOSYS (its flags sit in memory a filter cannot read; the C library then
    falls back to ``clone``, which is checked); everything else is allowed.

    A Unix socket on a read-only mount can still be connected to, so without the socket rule
    a command could reach the user's D-Bus session (``systemd-run --user``), the Docker
    socket or an SSH agent outside the sandbox — Claude Code's sandbox refuses the same call.
    ``socketpair`` stays allowed: it connects nothing outside."""
    Instruction = tuple[int, int | str, int | str, int]
    # A str is a label: the next instruction's position. BPF jumps only forward.
    code: list[Instruction | str] = [
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_BPF_JEQ_K, 0, "deny", AUDIT_ARCH_X86_64),
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_NR),
        (_BPF_JGE_K, "deny", 0, X32_SYSCALL_BIT),
    ]
    code += [(_BPF_JEQ_K, "deny", 0, nr) for nr in sorted(BLOCKED_SYSCALLS.values())]
    code.append((_BPF_JEQ_K, "nosys", 0, SYS_CLONE3))
    code += [(_BPF_JEQ_K, "clone", 0, SYS_CLONE), (_BPF_JEQ_K, "socket", "allow", SYS_SOCKET)]
    code += [
        "clone",
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARG0),  # the low 32 bits of the flags: all CLONE_NEW*
        (_BPF_JSET_K, "deny", "allow", NAMESPACE_FLAGS),
        "socket",
        (_BPF_LD_W_ABS, 0, 0, _OFFSET_ARG0),  # the address family
    ]
    if unix_sockets:
        code.append((_BPF_JEQ_K, "deny", "allow", AF_VSOCK))
    else:
        code += [(_BPF_JEQ_K, "deny", 0, AF_VSOCK), (_BPF_JEQ_K, "deny", "allow", AF_UNIX)]
    code += [
        "allow",
        (_BPF_RET_K, 0, 0, _RET_ALLOW),
        "deny",
        (_BPF_RET_K, 0, 0, _RET_ERRNO | EPERM),
        "nosys",
        (_BPF_RET_K, 0, 0, _RET_ERRNO | ENOSYS),
    ]
    labels: dict[str, int] = {}
    instructions: list[Instruction] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(instructions):

        def hop(target: int | str, index: int = index) -> int:
            return target if isinstance(target, int) else labels[target] - index - 1

        out += struct.pack("<HBBI", op, hop(jt), hop(jf), k)
    return bytes(out)


# --------------------------------------------------------------------------------- mounts
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> bool:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    return bool(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data or None)) == 0)


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


def _fail(message: str) -> None:
    sys.stderr.write(f"ctxscope sandbox: {message}\n")
    os._exit(126)


def make_mounts(workspace: str, tmp_bytes: int) -> None:
    """Steps 1-3: everything read-only but the workspace, a private ``/tmp``."""
    held = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    for point, flags in mounts():
        if point == "/proc" or point.startswith("/proc/"):
            continue  # made read-only in the nested namespace, after its id maps are written
        # A mount we cannot change (hidden below another) stays as is; the nested namespace
        # still locks it.
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    hide_credentials(os.environ.get("HOME", ""))
    make_dev(tmp_bytes)
    if os.path.isdir("/tmp"):
        size = f"size={tmp_bytes},mode=1777" if tmp_bytes > 0 else "mode=1777"
        if not _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, size):
            _fail("cannot mount a private /tmp")
    os.makedirs(workspace, exist_ok=True)
    if not _mount(f"/proc/self/fd/{held}", workspace, None, MS_BIND | MS_REC):
        _fail(f"cannot bind the workspace {workspace}")
    if not _mount(None, workspace, None, MS_REMOUNT | MS_BIND):
        _fail(f"cannot make the workspace {workspace} writable")
    os.close(held)
    for path in existing_control_files(workspace):
        if not (
            _mount(path, path, None, MS_BIND)
            and _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        ):
            _fail(f"cannot make {path} read-only")


def make_dev(shm_bytes: int) -> None:
    """Step 2: a ``/dev`` of its own, as bubblewrap's ``--dev``: a small tmpfs holding the
    :data:`DEVICES` (the host's nodes bound on empty files), a new devpts instance on
    ``/dev/pts`` (a terminal opened outside is not in it), a bounded ``/dev/shm`` and the
    usual links; then read-only."""
    hosts = {}  # the host's nodes, held before the tmpfs hides them
    for name in DEVICES:
        try:
            hosts[name] = os.open(f"/dev/{name}", os.O_PATH)
        except OSError:
            pass  # the host has none (a container without /dev/tty)
    if not _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m"):
        _fail(f"cannot mount a private /dev ({os.strerror(ctypes.get_errno())})")
    for name, held in hosts.items():
        node = f"/dev/{name}"
        os.close(os.open(node, os.O_CREAT | os.O_WRONLY, 0o666))
        if not _mount(f"/proc/self/fd/{held}", node, None, MS_BIND):
            _fail(f"cannot bind {node}")
        os.close(held)
    os.mkdir("/dev/pts", 0o755)
    os.mkdir("/dev/shm", 0o1777)
    if not _mount(
        "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"
    ):
        _fail(f"cannot mount a private /dev/pts ({os.strerror(ctypes.get_errno())})")
    size = f"size={shm_bytes},mode=1777" if shm_bytes > 0 else "mode=1777"
    if not _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, size):
        _fail("cannot mount a private /dev/shm")
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"/dev/{name}")
    if not _mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC):
        _fail("cannot make /dev read-only")


def hide_credentials(home: str) -> None:
    """The :data:`CREDENTIAL_FILES` and :data:`CREDENTIAL_FOLDERS` under ``home`` hidden: an
    empty read-only file (``/dev/null``) or folder (a tiny read-only tmpfs) mounted over
    each that exists."""
    if not home or not os.path.isabs(home) or not os.path.isdir(home):
        return
    for name in CREDENTIAL_FILES:
        path = os.path.join(home, name)
        if os.path.isfile(path) and not os.path.islink(path):
            if not _mount("/dev/null", path, None, MS_BIND):
                _fail(f"cannot hide {path}")
    for name in CREDENTIAL_FOLDERS:
        path = os.path.join(home, name)
        if os.path.isdir(path) and not os.path.islink(path):
            if not _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k"):
                _fail(f"cannot hide {path}")


def existing_control_files(workspace: str) -> list[str]:
    """The :data:`CONTROL_FILES` present in ``workspace``, as absolute paths; a link is left
    out (binding follows it; what it points to is read-only already or the workspace's)."""
    found = []
    for name in CONTROL_FILES:
        path = os.path.join(workspace, name)
        if os.path.lexists(path) and not os.path.islink(path):
            if not os.path.islink(os.path.dirname(path)):
                found.append(path)
    return found


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_nested_namespace() -> None:
    """Step 5: a child user namespace and a mount namespace owned by it (the mounts lock)."""
    with open("/proc/self/uid_map") as handle:
        outer_uid = handle.read().split()[1]  # "0 <user's uid> 1": the user's own id
    with open("/proc/self/gid_map") as handle:
        outer_gid = handle.read().split()[1]
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        _fail(f"cannot enter a nested user namespace ({os.strerror(ctypes.get_errno())})")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{outer_uid} 0 1")
    _write("/proc/self/gid_map", f"{outer_gid} 0 1")
    for point, flags in mounts():
        if point == "/proc":
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


def drop_privileges(*, unix_sockets: bool) -> None:
    """Step 6: no capability of any kind, ``no_new_privs``, the seccomp filter."""
    prctl = _libc.prctl
    for cap in range(_last_capability() + 1):
        if prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            _fail(f"cannot drop capability {cap} from the bounding set")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("<Ii", LINUX_CAPABILITY_VERSION_3, 0)
    empty = bytes(24)  # two struct __user_cap_data_struct: effective, permitted, inheritable
    if _libc.capset(header, empty) != 0:
        _fail("cannot clear the capability sets")
    if prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("cannot set no_new_privs")
    if SECCOMP_SUPPORTED:
        load_seccomp(seccomp_program(unix_sockets=unix_sockets))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def load_seccomp(program: bytes) -> None:
    fprog = _SockFprog(len(program) // 8, program)
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        _fail(f"cannot load the seccomp filter ({os.strerror(ctypes.get_errno())})")


def main(argv: list[str]) -> None:
    workspace, tmp_bytes, unix_sockets, separator, *command = argv
    if separator != "--" or not command:
        _fail("usage: sandbox_init.py WORKSPACE TMP_BYTES UNIX_SOCKETS(0|1) -- COMMAND...")
    make_mounts(workspace, int(tmp_bytes))
    enter_nested_namespace()
    drop_privileges(unix_sockets=unix_sockets == "1")
    os.chdir(workspace)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
