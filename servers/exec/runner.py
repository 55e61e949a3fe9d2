"""Run one command through bash in its own process group, with limits, bounded output and a whole-tree kill.

Each command gets a new session (so its process group id is its pid), stdout and stderr read by two threads into
bounded buffers, and a waiter thread. When the shell exits, whatever it left running in its group is killed, and
a timeout kills the whole tree (the group plus every descendant found under /proc). Threads rather than tasks keep
a background command alive independently of the MCP request that started it.

Limits: CPU time, address space and file size are bash `ulimit`s (the kernel signals the process over them); the
number of processes is counted by a watchdog, because the kernel does not apply RLIMIT_NPROC to root, not even to
root in a user namespace, and counts it per user, not per command, for everyone else.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import anyio.to_thread

from .output import OutputBuffer
from .protected import STAND_INS, Protection
from .sandbox import Sandbox

Status = Literal["running", "exited", "timed_out", "killed"]
_DRAIN_S = 1.0  # how long to wait for output pipes held open by processes that escaped the kill
_WATCH_S = 0.05  # how often the watchdog counts processes: a loop of `cmd &` starts ~50 in that time
_SANDBOX_PROCESSES = 2  # bwrap and the init of its PID namespace, not counted against the command


@dataclass(frozen=True)
class Limits:
    """Per-command resource limits; 0 leaves a limit as the server has it."""

    memory_mb: int = 8192  # address space (RLIMIT_AS); 0 for none (Chromium reserves far more than it uses)
    processes: int = 64  # at once, the command's whole tree (the watchdog's count)
    file_size_mb: int = 1024  # largest file a command may write (RLIMIT_FSIZE)
    cpu_s: int | None = None  # CPU seconds per process (RLIMIT_CPU); None: the call's timeout + 5 s
    output_bytes: int = 200_000  # kept per stream: head and tail, the middle is counted and dropped

    def prelude(self, cpu_s: int) -> str:
        # Separate calls, so a limit the host already holds lower does not stop the others from applying. The
        # CPU limit's hard value is 2 s above the soft one, so going over it is SIGXCPU (reported), not SIGKILL.
        cpu = [("-t", cpu_s + 2), ("-S -t", cpu_s)] if cpu_s > 0 else []
        memory = [("-v", self.memory_mb * 1024), ("-f", self.file_size_mb * 1024)]
        return "".join(f"ulimit {flag} {value} 2>/dev/null; " for flag, value in [*cpu, *memory] if value > 0)

    def cpu_for(self, timeout_s: float) -> int:
        return int(timeout_s) + 5 if self.cpu_s is None else self.cpu_s

    def signalled(self, signum: int, cpu_s: int) -> str | None:
        """What a command killed by `signum` went over, if it was one of these limits."""
        if signum == signal.SIGXCPU:
            return f"killed: more than {cpu_s} s of CPU time (SIGXCPU)"
        if signum == signal.SIGXFSZ:
            return f"killed: wrote past the file size limit of {self.file_size_mb} MB (SIGXFSZ)"
        return None


@dataclass(frozen=True)
class Spec:
    """Everything needed to start a command (already approved by the policy)."""

    command: str
    workdir: Path
    env: Mapping[str, str]
    timeout_s: float
    limits: Limits
    sandbox: Sandbox | None
    roots: Sequence[Path]
    protected: Sequence[Protection] = ()  # bound read-only (or pinned) inside the roots; see protected.py
    writable: Sequence[Path] = ()  # extra read-write paths outside the roots, for a call approved to leave them
    network: bool | None = None  # None: the sandbox's own setting
    proxy: Path | None = None  # the call's network proxy socket (network.py), when the sandbox has no network


class Job:
    """A started command: its output buffers, status and the means to feed or stop it."""

    def __init__(self, spec: Spec) -> None:
        self.id = uuid.uuid4().hex[:8]
        self.command = spec.command
        self.workdir = str(spec.workdir)
        self.stdout = OutputBuffer(spec.limits.output_bytes)
        self.stderr = OutputBuffer(spec.limits.output_bytes)
        self.status: Status = "running"
        self.exit_code: int | None = None
        self.done = threading.Event()
        self.cursors = {"stdout": 0, "stderr": 0}  # what `process poll` has already shown
        self.started = time.monotonic()
        self.ended: float | None = None
        self.limit: str | None = None  # which limit stopped it, for the result's note
        self.max_processes = spec.limits.processes
        # bwrap, its PID namespace's init and, in front of a command without network, the bridge to its proxy
        bridge = spec.sandbox is not None and spec.sandbox.bridges(spec.network, spec.proxy)
        self.own_processes = _SANDBOX_PROCESSES + int(bridge) if spec.sandbox else 0
        self._spec = spec
        box = spec.sandbox
        self._stand_ins = STAND_INS.claim(box.guarded(spec.protected, spec.roots, spec.writable)) if box else []
        try:
            self._popen = subprocess.Popen(
                _argv(spec),
                cwd=spec.workdir,
                env=dict(spec.env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            STAND_INS.release(self._stand_ins)
            raise
        assert self._popen.stdin is not None
        os.set_blocking(self._popen.stdin.fileno(), False)
        self._readers = [
            _thread(_pump, self._popen.stdout, self.stdout),
            _thread(_pump, self._popen.stderr, self.stderr),
        ]
        self._timer = threading.Timer(spec.timeout_s, self._expire)
        self._timer.daemon = True
        self._timer.start()
        _thread(self._wait)
        if self.max_processes > 0:
            WATCHDOG.watch(self)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def duration_s(self) -> float:
        return round((self.ended or time.monotonic()) - self.started, 3)

    async def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the command to finish; True when it has."""
        if self.done.is_set() or seconds <= 0:
            return self.done.is_set()
        return await anyio.to_thread.run_sync(self.done.wait, seconds, abandon_on_cancel=True)

    def write(self, data: bytes, eof: bool = False) -> int:
        """Write to the command's stdin without blocking; returns the bytes accepted."""
        stdin = self._popen.stdin
        if stdin is None or stdin.closed:
            raise BrokenPipeError("stdin is closed")
        written = 0
        try:
            while written < len(data):
                written += os.write(stdin.fileno(), data[written:])
        except BlockingIOError:
            pass
        if eof:
            stdin.close()
        return written

    def kill(self) -> None:
        self.stop("killed")

    def stop(self, status: Status, limit: str | None = None) -> None:
        """Kill the whole tree, recording `status` and the `limit` it went over (the first reason wins)."""
        if not self.done.is_set() and self.status == "running":
            self.status, self.limit = status, limit
            kill_tree(self.pid)

    def _expire(self) -> None:
        self.stop("timed_out", f"killed: still running after {self._spec.timeout_s:g} s (timeout_s)")

    def _wait(self) -> None:
        code = self._popen.wait()
        STAND_INS.release(self._stand_ins)
        self._timer.cancel()
        _kill_group(self.pid)  # whatever the command left running in its group goes with it
        for reader in self._readers:
            reader.join(_DRAIN_S)
        if self._popen.stdin is not None and not self._popen.stdin.closed:
            with contextlib.suppress(OSError):  # the child is gone; nothing left to flush
                self._popen.stdin.close()
        self.exit_code = code
        if self.status == "running":
            signalled = -code if code < 0 else code - 128  # bash and bwrap exit 128+N for a child killed by N
            self.limit = self._spec.limits.signalled(signalled, self._spec.limits.cpu_for(self._spec.timeout_s))
            self.status = "killed" if self.limit else "exited"
        self.ended = time.monotonic()
        self.done.set()


def _argv(spec: Spec) -> list[str]:
    bash = shutil.which("bash", path=spec.env.get("PATH")) or "/bin/bash"
    prelude = spec.limits.prelude(spec.limits.cpu_for(spec.timeout_s))
    argv = [bash, "--noprofile", "--norc", "-c", prelude + "\n" + spec.command]
    if spec.sandbox is None:
        return argv
    return spec.sandbox.wrap(
        argv,
        roots=spec.roots,
        protected=spec.protected,
        workdir=spec.workdir,
        writable=spec.writable,
        network=spec.network,
        proxy=spec.proxy,
    )


def _thread(target: object, *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
    thread.start()
    return thread


def _pump(stream: IO[bytes], buffer: OutputBuffer) -> None:
    fd = stream.fileno()
    try:
        while chunk := os.read(fd, 65536):
            buffer.write(chunk)
    except OSError:
        pass  # the pipe was closed under us: the command is gone
    finally:
        stream.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group may already be empty
        os.killpg(pgid, signal.SIGKILL)


def kill_tree(pid: int) -> None:
    """SIGKILL the process group `pid` leads and every descendant of `pid`, including ones that left the group."""
    for _ in range(3):
        victims = descendants(pid)
        _kill_group(pid)
        for victim in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(victim, signal.SIGKILL)
        if not victims:
            return


def descendants(pid: int, children: Mapping[int, list[int]] | None = None) -> list[int]:
    """Every live descendant of `pid`, from the parent links in /proc (or `children`, read from there once)."""
    children = _children() if children is None else children
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _children() -> dict[int, list[int]]:
    """Each live process's children, by pid, from one pass over /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


class Watchdog:
    """One thread for every running command with a process cap: every `_WATCH_S` it counts each command's tree
    (one pass over /proc for all of them) and kills a tree over its cap. It runs only while there is one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: list[Job] = []
        self._running = False

    def watch(self, job: Job) -> None:
        with self._lock:
            self._jobs.append(job)
            if not self._running:
                self._running = True
                _thread(self._run)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._jobs = [job for job in self._jobs if not job.done.is_set()]
                if not self._jobs:
                    self._running = False
                    return
                jobs = list(self._jobs)
            children = _children()
            for job in jobs:
                count = len(descendants(job.pid, children)) + 1 - job.own_processes
                if count > job.max_processes:
                    job.stop("killed", f"killed: more than {job.max_processes} processes at once")
            time.sleep(_WATCH_S)


WATCHDOG = Watchdog()
