"""Bash: run ``bash -c`` in the workspace, in its own process group, with a timeout.

- stdin is ``/dev/null``; the process starts a new session, so the whole group can be
  signalled: on timeout or when ``ctx.cancel`` is set it gets SIGTERM, then SIGKILL;
- when the command ends, anything it left in the background is killed too (a background
  child that keeps the pipes open would otherwise hold the call forever) — every descendant,
  not only the process group: each process of the call carries a ``CTXSCOPE_BASH_CALL`` tag in
  its environment, so one that left the group (``setsid``) is found and ended as well;
- every process of the call dies with ctxscope, even a SIGKILLed one (Linux): bash runs under
  a small guard (``tools/bash_guard.py``) that gets SIGTERM when ctxscope dies
  (``PR_SET_PDEATHSIG``) and, being a child subreaper, ends every descendant of the command;
  ``ask`` turns SIGINT/SIGTERM into a cancel, which ends the command as above;
- where the machine allows it, bash runs in a sandbox (``tools.sandbox``: bubblewrap or
  ``unshare``): its own PID namespace and ``/proc``, the file system read-only but the
  workspace and a private ``/tmp``, no capability and a seccomp filter so the mounts cannot
  be undone, the network as ``bash_network`` says; ``data.sandbox`` names it (``bwrap``,
  ``unshare`` or ``none``);
- every call runs under limits (``bash_max_processes``, ``bash_max_memory_mb``,
  ``bash_max_file_mb``, ``bash_max_cpu_seconds``, ``bash_tmp_mb``: ``tools.sandbox.Limits``);
- the environment is ctxscope's without credentials (``secret_env_patterns``: names like
  ``*KEY*``, ``*TOKEN*``, ``*_PAT``, and any URL with a password), see ``tools.secrets``;
- stdout and stderr are read by two threads, each capped at ``bash_output_cap`` characters
  keeping the head and the tail around a ``[... N chars dropped ...]`` marker.

``data``: ``{command, exit_code, stdout, stderr, timed_out, interrupted, timeout,
stdout_chars, stderr_chars, stdout_lines, stderr_lines, stdout_truncated,
stderr_truncated, sandbox}`` (``*_chars`` and ``*_lines`` count the whole stream, before the cap). A
non-zero exit is an error result (``nonzero_exit``) that still carries this data; so are
``timeout`` and ``interrupted``.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from prompts.tools.bash import DESCRIPTION
from tools.base import ToolContext, ToolError, ToolResult
from tools.bash_guard import below, children_by_parent
from tools.cgroup import CallGroup
from tools.common import BaseTool, ToolFailure, ToolInput
from tools.paths import workspace_root
from tools.permissions import require_permission
from tools.sandbox import Limits, Sandbox, choose, seccomp_pipe, wrap
from tools.sandbox_init import SECCOMP_SUPPORTED
from tools.secrets import EnvironmentPolicy

POLL_SECONDS = 0.05
"""How often the wait loop looks at the clock and at ``ctx.cancel``."""
TERM_GRACE_SECONDS = 1.0
"""After SIGTERM, how long the command may take to exit before the group gets SIGKILL."""
PIPE_LINGER_SECONDS = 0.5
"""After the command exits, how long its output pipes may stay open (a background child
still writing) before the leftover processes are killed."""
READ_CHUNK = 65536


class BashInput(ToolInput):
    command: str = Field(min_length=1, description="The command line to run with bash -c.")
    timeout: float | None = Field(None, gt=0, description="Seconds before the command is killed.")
    description: str | None = Field(None, description="A few words on what the command does.")


class StreamCapture:
    """Reads one pipe to its end, keeping at most ``cap`` characters: head and tail."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = ""
        self.tail = ""
        self.chars = 0
        self.newlines = 0
        self.last_char = ""
        self.thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            try:
                chunk = os.read(self.fd, READ_CHUNK)
            except OSError:
                chunk = b""
            text = decoder.decode(chunk, final=not chunk)
            if text:
                self._add(text)
            if not chunk:
                break
        os.close(self.fd)

    def _add(self, text: str) -> None:
        self.chars += len(text)
        self.newlines += text.count("\n")
        self.last_char = text[-1]
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail += text
            if len(self.tail) > 2 * self.tail_cap:
                self.tail = self.tail[-self.tail_cap :]

    @property
    def dropped(self) -> int:
        return max(0, self.chars - len(self.head) - min(len(self.tail), self.tail_cap))

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.chars and self.last_char != "\n" else 0)

    def text(self) -> str:
        """What was kept: everything, or head + marker + tail."""
        if not self.dropped:
            return self.head + self.tail
        return f"{self.head}\n[... {self.dropped} chars dropped ...]\n{self.tail[-self.tail_cap :]}"


CALL_TAG = "CTXSCOPE_BASH_CALL"
"""Environment variable marking every process one Bash call started."""
PR_SET_PDEATHSIG = 1
GUARD = Path(__file__).with_name("bash_guard.py")


def _command_line(argv: list[str]) -> list[str]:
    """``argv`` under its guard where the guard can work (Linux), else alone."""
    if _prctl is None or not sys.executable:
        return argv
    return [sys.executable, "-I", "-S", str(GUARD), *argv]


def _guard_dies_with_parent(parent: int) -> Callable[[], None]:
    """In the child before exec: get SIGTERM when ctxscope dies (the guard's cue to end the
    command), or exit at once if ctxscope already died before the signal was armed."""

    def arm() -> None:
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)

    return arm


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()  # looked up once, before any fork


def _tagged_processes(tag: str) -> set[int]:
    """Live processes of one call: those carrying ``tag``, and their descendants.

    (Not "descendants of bash": bash is reaped by now, and its pid may already be reused.)
    """
    marker = f"{CALL_TAG}={tag}".encode()
    try:
        children = children_by_parent()
    except OSError:
        return set()
    tagged: set[int] = set()
    for pid in (pid for pids in children.values() for pid in pids):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    tagged.add(pid)
        except OSError:
            continue
    found = tagged | below(tagged, children)
    found.discard(os.getpid())
    return found


def _kill_call(tag: str) -> None:
    """SIGKILL every process of one call, until none is left (they may still be forking)."""
    for _ in range(5):
        pids = _tagged_processes(tag)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole group, wait a moment, then SIGKILL whatever is left of it."""
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=TERM_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc.pid, signal.SIGKILL)
    proc.wait()


class BashTool(BaseTool):
    name: ClassVar[str] = "Bash"
    description: ClassVar[str] = DESCRIPTION
    input_model = BashInput

    def execute(self, args: BashInput, ctx: ToolContext) -> ToolResult:
        """Ask, start the call, wait for it (or its timeout, or a cancel), end every process
        it left, and say what it did."""
        settings = ctx.settings
        timeout = min(args.timeout or settings.bash_timeout, settings.bash_max_timeout)
        require_permission(ctx, "bash", self.name, _summary(args), args.command)
        bash = shutil.which("bash")
        if bash is None:
            raise ToolFailure("bash_not_found", "bash is not installed on this machine.")
        tag = secrets.token_hex(8)
        sandbox = choose(settings.bash_sandbox)  # type: ignore[arg-type]
        proc, group, started = _start(bash, args.command, ctx, sandbox, tag)
        out, err = _captures(proc, settings.bash_output_cap)
        timed_out, interrupted = _wait(proc, ctx, started + timeout)
        _end_call(proc, (out, err), tag, group)
        duration = time.monotonic() - started
        data: dict[str, Any] = {
            "command": args.command,
            "exit_code": proc.returncode,
            "stdout": out.text(),
            "stderr": err.text(),
            "timed_out": timed_out,
            "interrupted": interrupted,
            "timeout": timeout,
            "stdout_chars": out.chars,
            "stderr_chars": err.chars,
            "stdout_lines": out.lines,
            "stderr_lines": err.lines,
            "stdout_truncated": out.dropped > 0,
            "stderr_truncated": err.dropped > 0,
            "sandbox": sandbox,
        }
        error = _error(proc.returncode, timed_out, interrupted, timeout, settings.bash_max_timeout)
        result = ToolResult(
            status="error" if error else "success",
            data=data,
            error=error,
            text=_text(data, error, duration),
        )
        result.stats["process_ms"] = round(duration * 1000, 1)
        return result


def _summary(args: BashInput) -> str:
    """What the permission question shows: the command's first line, and what it is for."""
    first_line = args.command.strip().splitlines()[0] if args.command.strip() else ""
    return f"{first_line} — {args.description}" if args.description else first_line


def _start(
    bash: str, command: str, ctx: ToolContext, sandbox: Sandbox, tag: str
) -> tuple[subprocess.Popen[bytes], CallGroup | None, float]:
    """Start ``bash -c command`` in the workspace: in the sandbox chosen, under the limits,
    with the environment's credentials left out and the call's tag; the process, its cgroup
    (where one was made) and when it started."""
    settings = ctx.settings
    # No credentials in the command's environment (names like *KEY*, *TOKEN*, *_PAT,
    # values like scheme://user:password@host): tools.secrets.
    env = EnvironmentPolicy.from_settings(settings).environment(os.environ)
    env |= {"PAGER": "cat", "GIT_PAGER": "cat", CALL_TAG: tag}
    unix_sockets = settings.bash_unix_sockets
    # The filter is written for x86_64 (tools.sandbox_init): elsewhere bwrap runs without.
    with_filter = sandbox == "bwrap" and SECCOMP_SUPPORTED
    seccomp_fd = seccomp_pipe(unix_sockets=unix_sockets) if with_filter else None
    argv = wrap(
        sandbox,
        workspace_root(ctx),
        [bash, "-c", command],
        network=settings.bash_network,
        limits=Limits.from_settings(settings),
        unix_sockets=unix_sockets,
        seccomp_fd=seccomp_fd,
    )
    # Processes bounded for root too (the kernel skips RLIMIT_NPROC for uid 0): a cgroup
    # of the call's own where one can be made (tools.cgroup).
    limits = Limits.from_settings(settings)
    group = None
    if sandbox != "none":
        group = CallGroup.make(limits.processes, limits.memory)
    if group is not None:
        argv = group.joined(argv, bash)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            _command_line(argv),
            cwd=workspace_root(ctx),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
            pass_fds=() if seccomp_fd is None else (seccomp_fd,),
            # only an async-signal-safe prctl and getppid run between fork and exec
            preexec_fn=_guard_dies_with_parent(os.getpid()),  # noqa: PLW1509
        )
    except OSError as exc:
        if group is not None:
            group.remove()
        raise ToolFailure("spawn_failed", f"Could not start bash: {exc}.") from None
    finally:
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    return proc, group, started


def _captures(proc: subprocess.Popen[bytes], cap: int) -> tuple[StreamCapture, StreamCapture]:
    """stdout and stderr, each read by a thread of its own (started), capped at ``cap``."""
    assert proc.stdout is not None and proc.stderr is not None
    out = StreamCapture(os.dup(proc.stdout.fileno()), cap)
    err = StreamCapture(os.dup(proc.stderr.fileno()), cap)
    proc.stdout.close()
    proc.stderr.close()
    out.thread.start()
    err.thread.start()
    return out, err


def _wait(proc: subprocess.Popen[bytes], ctx: ToolContext, deadline: float) -> tuple[bool, bool]:
    """Wait for the command to end, or stop it at ``deadline`` or on a cancel: whether it
    timed out, and whether it was interrupted."""
    timed_out = interrupted = False
    while True:
        try:
            proc.wait(timeout=POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            pass
        if ctx.cancel.is_set():
            interrupted = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
    if timed_out or interrupted:
        _stop(proc)
    return timed_out, interrupted


def _end_call(
    proc: subprocess.Popen[bytes],
    captures: tuple[StreamCapture, StreamCapture],
    tag: str,
    group: CallGroup | None,
) -> None:
    """The command has ended: end whatever it left behind and finish reading its output."""
    # Background children may still hold the pipes: give them a moment, then end them.
    linger_until = time.monotonic() + PIPE_LINGER_SECONDS
    for capture in captures:
        capture.thread.join(max(0.0, linger_until - time.monotonic()))
    _kill_group(proc.pid, signal.SIGKILL)
    _kill_call(tag)
    if group is not None:
        group.remove()
    for capture in captures:
        # A process that left the group (setsid) could hold a pipe forever; don't wait.
        capture.thread.join(TERM_GRACE_SECONDS)


def _error(
    exit_code: int, timed_out: bool, interrupted: bool, timeout: float, max_timeout: float
) -> ToolError | None:
    """The call's error, if it is one: a timeout, an interrupt, or a non-zero exit."""
    if timed_out:
        return ToolError(
            code="timeout",
            message=f"The command timed out after {timeout:g} s and was killed with every "
            f"process it started. Allow a longer timeout (at most "
            f"{max_timeout:g} s) or run something shorter.",
        )
    if interrupted:
        return ToolError(code="interrupted", message="The command was interrupted by the user.")
    if exit_code != 0:
        return ToolError(code="nonzero_exit", message=_exit_message(exit_code))
    return None


def _exit_message(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"The command was killed by {name}."
    return f"The command exited with code {code}."


def _text(data: dict[str, Any], error: ToolError | None, duration: float) -> str:
    parts: list[str] = []
    if data["stdout"]:
        parts.append(data["stdout"].rstrip("\n"))
    if data["stderr"]:
        parts.append("[stderr]\n" + data["stderr"].rstrip("\n"))
    if not parts:
        parts.append("(no output)")
    status = f"exit code {data['exit_code']}, {duration:.2f} s"
    if error is not None:
        status = f"{error.code}: {error.message} ({status})"
    parts.append(f"[{status}]")
    return "\n".join(parts)
