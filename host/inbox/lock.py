"""One `hermitcrab run` per home: two hosts would run every server event and heartbeat twice and fight over
Discord's gateway session.

The lock is an flock on `state/run.lock`, which the kernel drops when the process dies however it dies (kill -9
included), so a crash never leaves a home locked. The holder's pid sits beside it in `state/run.pid` (not in the
lock file, which every contender opens), so the refused command can say which process holds the home.
`chat` and `ask` take no lock: they are meant to work beside `run`.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

from hermitcrab.util.files import atomic_write_text

from ..errors import HermitcrabError

LOCK_FILE = "run.lock"
PID_FILE = "run.pid"


class AlreadyRunning(HermitcrabError):
    """Another `hermitcrab run` holds this home."""


@contextmanager
def holding_home(home: Path, state: Path) -> Generator[None]:
    """Hold the home for this process until the block ends; AlreadyRunning, at once, when another process has it."""
    state.mkdir(parents=True, exist_ok=True)
    lock = FileLock(state / LOCK_FILE, thread_local=False)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        raise AlreadyRunning(f"hermitcrab run is already running for {home} (pid {holder(state)})") from None
    pid_file = state / PID_FILE
    try:
        atomic_write_text(pid_file, f"{os.getpid()}\n")
        yield
    finally:
        with suppress(FileNotFoundError):
            pid_file.unlink()
        lock.release()


def running(state: Path) -> str | None:
    """The pid of the `run` that holds this home now (or "unknown", see `holder`); None when none does."""
    if not (state / LOCK_FILE).exists():
        return None
    lock = FileLock(state / LOCK_FILE, thread_local=False)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return holder(state)
    lock.release()
    return None


def holder(state: Path) -> str:
    """The pid the lock's holder wrote, or "unknown" in the instant between its taking the lock and writing it."""
    try:
        text = (state / PID_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown"
    return text if text.isdigit() else "unknown"
