"""A run's process: its command line from a template, started under the guard in a process group of its own,
waited for, and killed as a whole group (the command and everything it started).

The task reaches the command on stdin, from `task` in the run's folder (0600), and never through argv unless the
template asks for it: argv is readable by every local user (`ps`, `/proc/*/cmdline`), a file of ours and a pipe are
not. A file rather than a pipe we write to, because a command that never reads its stdin would block that write,
and because `{task_file}` can name the same file to CLIs that take a prompt file. A template that puts `{task}` in
argv (a CLI that takes the prompt only there) gets it as one argument that can never become an option: see `fill`.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

import anyio
from anyio.abc import Process

GUARD = Path(__file__).with_name("guard.py")
KILL_GRACE_S = 2.0
TASK_FILE = "task"
END_OF_OPTIONS = "--"
_FIELD = re.compile(r"\{(task|task_file|model|label)\}")


class OptionLike(ValueError):
    """A value from the model would start an argument with `-`, where the command would read it as an option."""


def parse_template(template: str) -> tuple[str, ...]:
    """A command template as argv, split like a shell would split it (it comes from the operator, not the model)."""
    argv = tuple(shlex.split(template))
    if not argv:
        raise ValueError("an empty command template")
    return argv


def fill(template: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Put `{task}`, `{task_file}`, `{model}` and `{label}` into the arguments that name them, in one pass, never
    through a shell: a task full of spaces, quotes, `;` or `$(...)` stays exactly one argument, and braces in it stay
    as they are.

    Those values come from the model, so none may turn into an option of the command: an argument that begins with a
    field and would begin with `-` raises OptionLike, unless the template marks the end of its options with a `--`
    argument before it (`claude -p -- {task}`), after which the command reads every argument as an operand."""
    filled: list[str] = []
    for part in template:
        value = _FIELD.sub(lambda match: values.get(match.group(1), ""), part)
        starts_with = _FIELD.match(part)
        if starts_with and value.startswith("-") and END_OF_OPTIONS not in template[: len(filled)]:
            raise OptionLike(
                f"{{{starts_with.group(1)}}} would start an argument with '-', which the command would take as an "
                f"option; rephrase it so it does not begin with '-' (or the operator can put {END_OF_OPTIONS} before "
                "it in the template)"
            )
        filled.append(value)
    return filled


def write_task(run_dir: Path, task: str) -> Path:
    """`task` in the run's folder, readable by this user only."""
    path = run_dir / TASK_FILE
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as handle:
        handle.write(task)
    return path


class Child:
    """One started run: its guard process (the group leader) and the files it writes to."""

    def __init__(self, process: Process, run_dir: Path) -> None:
        self.process = process
        self.run_dir = run_dir
        self.stopped_because: str | None = None

    @property
    def pgid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(cls, argv: Sequence[str], run_dir: Path, task: str, env: Mapping[str, str] | None = None) -> Child:
        """Start `argv` under the guard with `task` on its stdin; stdout goes to `output`, stderr to `log` in
        `run_dir`."""
        run_dir.mkdir(parents=True, exist_ok=True)
        task_file = write_task(run_dir, task)
        with (run_dir / "output").open("wb") as output, (run_dir / "log").open("ab") as log:
            process = await anyio.open_process(
                [sys.executable, "-I", "-S", str(GUARD), str(run_dir / "exit_code"), str(task_file), "--", *argv],
                stdin=subprocess.PIPE,
                stdout=output,
                stderr=log,
                cwd=run_dir,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        return cls(process, run_dir)

    async def wait(self, timeout_s: float) -> int | None:
        """The command's exit code; None when it was stopped (timed out here, or killed through `stop`)."""
        with anyio.move_on_after(timeout_s):
            await self.process.wait()
        if self.process.returncode is None:
            await self.stop("timed_out")
        return self.exit_code() if self.stopped_because is None else None

    async def stop(self, because: str) -> None:
        """SIGTERM to the whole group, then SIGKILL to whatever is left after `KILL_GRACE_S`."""
        if self.stopped_because is None:
            self.stopped_because = because
        self._signal(signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE_S):
            await self.process.wait()
            while self._group_alive():
                await anyio.sleep(0.05)
        self._signal(signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await self.process.wait()

    async def close(self) -> None:
        """Kill whatever is left of the group (the server shutting down, or a guard killed from outside), and let go
        of the lifeline."""
        if self.process.returncode is None or self._group_alive():
            self._signal(signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            if self.process.stdin is not None:
                await self.process.stdin.aclose()
            await self.process.wait()

    def exit_code(self) -> int | None:
        try:
            return int((self.run_dir / "exit_code").read_text())
        except (OSError, ValueError):
            return None  # the guard itself was killed from outside

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _signal(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signum)
