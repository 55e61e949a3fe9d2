"""Background sessions: the table of commands still running (or recently finished) and what `process` reports.

A command enters the table when it is started with `background=true` or outlives its `yield_ms`; the model then
polls, reads, writes to or kills it by session id. Finished sessions are kept (up to a limit) so their output
can still be read.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .output import clean, render
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
    """Background jobs by session id."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.live: set[Job] = set()  # every started job, foreground or not, until it ends

    def add(self, job: Job) -> None:
        self.jobs[job.id] = job
        finished = [j for j in self.jobs.values() if j.done.is_set()]
        for old in finished[: max(0, len(finished) - _KEEP_FINISHED)]:
            del self.jobs[old.id]

    def track(self, job: Job) -> None:
        self.live.add(job)

    def running(self) -> int:
        self.live = {job for job in self.live if not job.done.is_set()}
        return len(self.live)

    def get(self, session_id: str | None) -> Job | None:
        return self.jobs.get(session_id or "")

    def kill_all(self) -> None:
        for job in self.jobs.values():
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
                for j in self.jobs.values()
            ]
        )


def result(job: Job, *, sandboxed: bool, background: bool, note: str | None = None) -> ExecResult:
    """The whole output so far (head and tail when long)."""
    out, err = render(job.stdout, RESULT_CHARS), render(job.stderr, RESULT_CHARS)
    streams = {"stdout": (out.text, out.cut_bytes), "stderr": (err.text, err.cut_bytes)}
    return _exec_result(job, streams, job.id if background else None, sandboxed, note)


def poll(job: Job, *, sandboxed: bool) -> ExecResult:
    """Output written since the previous poll, and the current status."""
    streams: dict[str, tuple[str, int]] = {}
    for name, buffer in (("stdout", job.stdout), ("stderr", job.stderr)):
        data, cut = buffer.since(job.cursors[name])
        job.cursors[name] = buffer.total
        if len(data) > RESULT_CHARS:
            cut += len(data) - RESULT_CHARS
            data = data[-RESULT_CHARS:]
        streams[name] = (clean(data), cut)
    note = None if job.done.is_set() else "Still running; poll again later, or kill it."
    return _exec_result(job, streams, job.id, sandboxed, note)


def _exec_result(
    job: Job, streams: dict[str, tuple[str, int]], session_id: str | None, sandboxed: bool, note: str | None
) -> ExecResult:
    return ExecResult(
        status=job.status,
        exit_code=job.exit_code,
        stdout=streams["stdout"][0],
        stderr=streams["stderr"][0],
        stdout_cut_bytes=streams["stdout"][1],
        stderr_cut_bytes=streams["stderr"][1],
        duration_s=job.duration_s,
        session_id=session_id,
        sandboxed=sandboxed,
        note=note,
    )


def log(job: Job, offset: int, limit: int) -> LogSlice:
    """Lines [offset, offset+limit) of each stream, from what is kept."""
    slices: dict[str, tuple[str, int]] = {}
    cut_note: list[str] = []
    for name, buffer in (("stdout", job.stdout), ("stderr", job.stderr)):
        head, cut, tail = buffer.snapshot()
        text = clean(head) + (f"\n[... {cut} bytes cut ...]\n" if cut else "") + clean(tail)
        lines = text.split("\n")
        if cut:
            cut_note.append(f"{cut} bytes were cut from the middle of {name}")
        slices[name] = ("\n".join(lines[offset : offset + limit]), len(lines))
    return LogSlice(
        session_id=job.id,
        status=job.status,
        stdout=slices["stdout"][0],
        stderr=slices["stderr"][0],
        stdout_lines=slices["stdout"][1],
        stderr_lines=slices["stderr"][1],
        note="; ".join(cut_note) or None,
    )
