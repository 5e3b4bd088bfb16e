"""The Bash sandbox's seccomp filter, run here on a small classic-BPF interpreter.

The filter is the bytes the kernel loads (``tools.sandbox_init.seccomp_program``); the
interpreter below implements the five instructions it uses, as ``filter.h`` and
Documentation/networking/filter.rst define them (``ld [k]`` a 32-bit word of
``struct seccomp_data``; ``jeq``, ``jge``, ``jset`` with a constant; ``ret k``), and refuses
anything else or a jump out of the program. The syscall numbers are x86_64's, copied from
``/usr/include/x86_64-linux-gnu/asm/unistd_64.h``; the return values from ``seccomp.h``
(``SECCOMP_RET_ALLOW`` 0x7fff0000, ``SECCOMP_RET_ERRNO`` 0x00050000 | errno). The tests in
``tests/security/test_bash_sandbox_escape.py`` load the same filter into a real kernel.
"""

from __future__ import annotations

import struct

import pytest

from tools.sandbox_init import seccomp_program

ALLOW = 0x7FFF0000
EPERM = 0x00050000 | 1
ENOSYS = 0x00050000 | 38
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIGCHLD = 17
AF_UNIX, AF_INET = 1, 2


def run_filter(program: bytes, nr: int, arch: int = AUDIT_ARCH_X86_64, arg0: int = 0) -> int:
    """What the filter returns for one call (``struct seccomp_data``: nr, arch, ip, args)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        assert 0 <= pc < len(code), "jumped out of the program"
        op, jt, jf, k = code[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            (accumulator,) = struct.unpack_from("<I", data, k)
            pc += 1
        elif op in (0x15, 0x35, 0x45):  # BPF_JMP | BPF_JEQ / BPF_JGE / BPF_JSET, BPF_K
            taken = {
                0x15: accumulator == k,
                0x35: accumulator >= k,
                0x45: bool(accumulator & k),
            }[op]
            pc += 1 + (jt if taken else jf)
        elif op == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"unexpected instruction {op:#x}")


REFUSED = {
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "unshare": 272,
    "setns": 308,
    "ptrace": 101,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "kexec_load": 246,
    "bpf": 321,
    "perf_event_open": 298,
    "open_by_handle_at": 304,
    "fsopen": 430,
    "fsmount": 432,
    "move_mount": 429,
    "open_tree": 428,
    "fsconfig": 431,
    "fspick": 433,
    "mount_setattr": 442,
}
"""The issue's list, by name (the brief for issue 29)."""

ALLOWED = {"read": 0, "write": 1, "openat": 257, "execve": 59, "wait4": 61, "socketpair": 53}


@pytest.mark.parametrize("unix_sockets", [False, True])
def test_the_filter_refuses_what_it_must_and_lets_the_rest_through(unix_sockets: bool) -> None:
    program = seccomp_program(unix_sockets=unix_sockets)
    assert {name: run_filter(program, nr) for name, nr in REFUSED.items()} == dict.fromkeys(
        REFUSED, EPERM
    )
    assert {name: run_filter(program, nr) for name, nr in ALLOWED.items()} == dict.fromkeys(
        ALLOWED, ALLOW
    )
    clone, clone3, socket = 56, 435, 41
    assert run_filter(program, clone, arg0=SIGCHLD) == ALLOW  # fork()
    assert run_filter(program, clone, arg0=SIGCHLD | CLONE_NEWUSER) == EPERM
    assert run_filter(program, clone, arg0=CLONE_NEWNET) == EPERM
    assert run_filter(program, clone3) == ENOSYS
    assert run_filter(program, socket, arg0=AF_INET) == ALLOW
    assert run_filter(program, socket, arg0=AF_UNIX) == (ALLOW if unix_sockets else EPERM)
    assert run_filter(program, 0, arch=AUDIT_ARCH_I386) == EPERM  # int 0x80
    assert run_filter(program, 0x40000000 | 0) == EPERM  # the x32 ABI's read
