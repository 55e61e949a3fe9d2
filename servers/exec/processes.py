"""Background sessions: the table of commands still running (or recently finished) and what `process` reports.

A command enters the table when it is started with `background=true` or outlives its `yield_ms`; the model then
polls, reads, writes to or kills it by session id. Finished sessions are kept (up to a limit) so their output
can still be read.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .output import OutputBuffer, clean, render
from .runner import Job, Status

RESULT_CHARS = 12_000  # per stream, in a tool result
_KEEP_FINISHED = 50
MAX_RUNNING = 32  # commands at once (foreground or background): each holds a process tree, pipes and threads


class ExecResult(BaseModel):
    """What `exec` and `process poll` return."""

    status: Status
    exit_code: int | None = Field(None, description="None while running; negative means killed by that signal.")
    stdout: str = ""
    stderr: str = ""
    stdout_cut_bytes: int = Field(0, description="Bytes left out of stdout above (the head and tail are kept).")
    stderr_cut_bytes: int = 0
    duration_s: float
    session_id: str | None = Field(None, description="Set when the command runs in the background.")
    sandboxed: bool = False
    changed: str | None = Field(default=None, description="The files the command changed in the root, once it ended.")
    change_id: str | None = Field(default=None, description="exec_undo with this call_id puts those files back.")
    note: str | None = None


class SessionInfo(BaseModel):
    session_id: str
    command: str
    workdir: str
    status: Status
    exit_code: int | None
    duration_s: float


class SessionList(BaseModel):
    sessions: list[SessionInfo]


class LogSlice(BaseModel):
    session_id: str
    status: Status
    stdout: str
    stderr: str
    stdout_lines: int = Field(description="Lines of stdout kept in total.")
    stderr_lines: int
    note: str | None = None


class ProcessTable:
    """Every started job by session id: running ones (foreground too) and background ones kept for `process`."""

    def __init__(self) -> None:
        self._jobs: dict[str, tuple[Job, bool]] = {}  # id -> (job, whether it is a background session)

    def track(self, job: Job) -> None:
        """Count a job that has just started (it is not a session until `add`)."""
        self._jobs[job.id] = (job, False)

    def add(self, job: Job) -> None:
        """Make `job` a background session; the oldest finished sessions beyond a limit are dropped."""
        self._jobs[job.id] = (job, True)
        finished = [j for j, background in self._jobs.values() if background and j.done.is_set()]
        for old in finished[: max(0, len(finished) - _KEEP_FINISHED)]:
            del self._jobs[old.id]

    def running(self) -> int:
        self._jobs = {k: (j, bg) for k, (j, bg) in self._jobs.items() if bg or not j.done.is_set()}
        return sum(not j.done.is_set() for j, _ in self._jobs.values())

    def commands_running(self) -> list[str]:
        """The command lines of every job still running (the policy asks whether one may create symlinks)."""
        return [job.command for job, _ in self._jobs.values() if not job.done.is_set()]

    def get(self, session_id: str | None) -> Job | None:
        job, background = self._jobs.get(session_id or "", (None, False))
        return job if background else None

    def sessions(self) -> list[Job]:
        return [job for job, background in self._jobs.values() if background]

    def kill_all(self) -> None:
        for job in self.sessions():
            job.kill()

    def listing(self) -> SessionList:
        return SessionList(
            sessions=[
                SessionInfo(
                    session_id=j.id,
                    command=j.command[:200],
                    workdir=j.workdir,
                    status=j.status,
                    exit_code=j.exit_code,
                    duration_s=j.duration_s,
                )
                for j in self.sessions()
            ]
        )


def result(job: Job, *, sandboxed: bool, background: bool, note: str | None = None) -> ExecResult:
    """The whole output so far (head and tail when long)."""
    out, err = render(job.stdout, RESULT_CHARS), render(job.stderr, RESULT_CHARS)
    return ExecResult(
        status=job.status,
        exit_code=job.exit_code,
        stdout=out.text,
        stderr=err.text,
        stdout_cut_bytes=out.cut_bytes,
        stderr_cut_bytes=err.cut_bytes,
        duration_s=job.duration_s,
        session_id=job.id if background else None,
        sandboxed=sandboxed,
        note=" ".join(n for n in (job.limit, note) if n) or None,  # the limit a command went over comes first
    )


def poll(job: Job, *, sandboxed: bool) -> ExecResult:
    """Output written since the previous poll, and the current status."""
    out, out_cut = _new_output(job, "stdout", job.stdout)
    err, err_cut = _new_output(job, "stderr", job.stderr)
    return ExecResult(
        status=job.status,
        exit_code=job.exit_code,
        stdout=out,
        stderr=err,
        stdout_cut_bytes=out_cut,
        stderr_cut_bytes=err_cut,
        duration_s=job.duration_s,
        session_id=job.id,
        sandboxed=sandboxed,
        note=job.limit if job.done.is_set() else "Still running; poll again later, or kill it.",
    )


def _new_output(job: Job, name: str, buffer: OutputBuffer) -> tuple[str, int]:
    """(text written to `buffer` since the last poll, bytes of it cut), moving the poll cursor on."""
    data, cut = buffer.since(job.cursors[name])
    job.cursors[name] = buffer.total
    if len(data) > RESULT_CHARS:
        cut += len(data) - RESULT_CHARS
        data = data[-RESULT_CHARS:]
    return clean(data), cut


def log(job: Job, offset: int, limit: int) -> LogSlice:
    """Lines [offset, offset+limit) of each stream, from what is kept."""
    out, out_lines, out_cut = _lines(job.stdout, offset, limit)
    err, err_lines, err_cut = _lines(job.stderr, offset, limit)
    cut_note = [
        f"{cut} bytes were cut from the middle of {name}"
        for name, cut in (("stdout", out_cut), ("stderr", err_cut))
        if cut
    ]
    return LogSlice(
        session_id=job.id,
        status=job.status,
        stdout=out,
        stderr=err,
        stdout_lines=out_lines,
        stderr_lines=err_lines,
        note="; ".join(cut_note) or None,
    )


def _lines(buffer: OutputBuffer, offset: int, limit: int) -> tuple[str, int, int]:
    """(lines [offset, offset+limit) of what `buffer` keeps, how many lines it keeps, bytes cut from its middle)."""
    head, cut, tail = buffer.snapshot()
    lines = (clean(head) + (f"\n[... {cut} bytes cut ...]\n" if cut else "") + clean(tail)).split("\n")
    return "\n".join(lines[offset : offset + limit]), len(lines), cut
